// The torch.save reader on hand-built pickles and zips (tests/fuzz/fuzz_entries.hpp's stored_zip): the
// bounds (a million-entry dict, nesting, a list that holds itself, the memo), opcodes and globals outside
// the subset, storages that lie, the zip64 records; and a short seeded mutation run over the fixtures,
// the fuzzer's entry in the native suite (nothing but AttentionError may escape).
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <random>

#include "../fuzz/fuzz_entries.hpp"
#include "attention_lab/checkpoint.hpp"
#include "refusal.hpp"
#include "test_paths.hpp"

using namespace attention_lab;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

/// A little-endian uint32's 4 bytes.
std::string u32(uint32_t v) { return std::string{char(v & 255), char((v >> 8) & 255), char((v >> 16) & 255), char(v >> 24)}; }

/// A pickled str (BINUNICODE).
std::string str(const std::string& s) { return "X" + u32(static_cast<uint32_t>(s.size())) + s; }

/// _rebuild_tensor_v2(storage `key` of `type`, offset, size, stride, False, OrderedDict()) as torch.save pickles it.
std::string tensor(const std::string& type, const std::string& key, int numel, int offset, const std::string& size, const std::string& stride) {
  const std::string pid = "(" + str("storage") + "ctorch\n" + type + "\n" + str(key) + str("cpu") + "K" + char(numel) + "tQ";
  return "ctorch._utils\n_rebuild_tensor_v2\n(" + pid + "K" + char(offset) + size + stride +
         "\x89"
         "ccollections\nOrderedDict\n)RtR";
}

/// {name: tensor(...)} in an OrderedDict, protocol 2.
std::string tensor_dict(const std::string& type, const std::string& key, int numel, int offset, const std::string& size, const std::string& stride, const std::string& name = "w") {
  return "\x80\x02"
         "ccollections\nOrderedDict\n)R" +
         str(name) + tensor(type, key, numel, offset, size, stride) + "s.";
}

/// data.pkl in a zip with storages archive/data/0 (64 bytes: values 0, 1, 2, ... as float32 from 0 to 15) and archive/data/1 (7 bytes).
Bytes zip_of(const std::string& pkl) {
  Bytes storage(64);
  for (int i = 0; i < 16; ++i) {
    const float f = static_cast<float>(i);
    std::memcpy(storage.data() + 4 * i, &f, 4);
  }
  return fuzz::stored_zip({{"archive/data.pkl", text(pkl)}, {"archive/data/0", storage}, {"archive/data/1", Bytes(7, 1)}, {"archive/version", text("3\n")}});
}

SafetensorsHeader open_bytes(const Bytes& file) {
  std::map<std::string, Bytes> read;
  for (std::vector<TorchSaveRead> next; !(next = torch_save_reads(read, file.size())).empty();)
    for (const auto& r : next) read[r.name].assign(file.begin() + static_cast<std::ptrdiff_t>(r.begin), file.begin() + static_cast<std::ptrdiff_t>(r.end));
  return open_torch_save(read, file.size());
}

Refused refuse_pickle(const std::string& pkl) {
  return refused([&] { open_bytes(zip_of(pkl)); });
}

}  // namespace

TEST_SUITE("torch.save pickles and zips") {
  TEST_CASE("a hand-built state dict: a transposed view gathers its values, a storage offset starts later") {
    const Bytes file = zip_of(tensor_dict("FloatStorage", "0", 16, 0, "(K\x02K\x03t", "(K\x01K\x02t"));
    const SafetensorsHeader h = open_bytes(file);
    REQUIRE(h.entries.size() == 1);
    const SafetensorsEntry& e = h.entries[0];
    CHECK(e.shape == Shape{2, 3});
    CHECK(e.strides == std::vector<int64_t>{1, 2});
    // values at offsets i * 1 + j * 2: row 0 = 0, 2, 4; row 1 = 1, 3, 5
    CHECK(decode_tensor(e, file.data() + e.begin, e.end - e.begin) == std::vector<float>{0, 2, 4, 1, 3, 5});
    const Bytes offset = zip_of(tensor_dict("FloatStorage", "0", 16, 10, "(K\x03t", "(K\x01t"));
    const SafetensorsHeader o = open_bytes(offset);
    CHECK(o.entries[0].strides.empty());
    CHECK(decode_tensor(o.entries[0], offset.data() + o.entries[0].begin, 12) == std::vector<float>{10, 11, 12});
  }

  TEST_CASE("storages that lie: a tensor past its storage's values, a storage past its entry's bytes, a storage the zip lacks") {
    const Refused past = refuse_pickle(tensor_dict("FloatStorage", "0", 16, 14, "(K\x03t", "(K\x01t"));
    CHECK(past.code == "checkpoint_storage");
    CHECK(past.slot == "w");
    CHECK(past.message.find("reaches value 16 of storage 'archive/data/0', which holds 16") != std::string::npos);
    const Refused short_entry = refuse_pickle(tensor_dict("FloatStorage", "1", 4, 0, "(K\x04t", "(K\x01t"));
    CHECK(short_entry.code == "checkpoint_storage");
    CHECK(short_entry.message.find("'archive/data/1' holds 7 bytes, less than its 4 F32 values") != std::string::npos);
    CHECK(refuse_pickle(tensor_dict("FloatStorage", "9", 4, 0, "(K\x04t", "(K\x01t")).message.find("'archive/data/9', which the zip does not hold") != std::string::npos);
  }

  TEST_CASE("globals outside the list are refused by name where the pickle names them; a class of the saver's code says to save its state_dict") {
    for (const auto& [global, code] : std::vector<std::pair<std::string, std::string>>{{"os\nsystem", "checkpoint_pickle_global"},
                                                                                       {"builtins\neval", "checkpoint_pickle_global"},
                                                                                       {"subprocess\nPopen", "checkpoint_pickle_global"},
                                                                                       {"torch\nload", "checkpoint_pickle_global"},
                                                                                       {"__main__\nGPTModel", "checkpoint_pickled_module"},
                                                                                       {"previous_chapters\nGPTModel", "checkpoint_pickled_module"},
                                                                                       {"torch.nn.modules.linear\nLinear", "checkpoint_pickled_module"}}) {
      const Refused r = refuse_pickle(
          "\x80\x02"
          "c" +
          global + "\n" + str("echo hi") + "\x85R.");
      std::string dotted = global;
      dotted[dotted.find('\n')] = '.';
      CHECK_MESSAGE(r.code == code, global);
      CHECK(r.slot == dotted);
      CHECK(r.message.find(dotted) != std::string::npos);
    }
    CHECK(refuse_pickle("\x80\x02"
                        "c__main__\nGPTModel\n).")
              .hint.find("torch.save(model.state_dict(), \"model.pth\")") != std::string::npos);
  }

  TEST_CASE("the bounds: a million-entry dict, deep nesting, a list that holds itself, unknown opcodes and memo slots") {
    std::string million = "\x80\x02}(";
    for (int i = 0; i < 1000000; ++i) million += "J" + u32(static_cast<uint32_t>(i)) + "N";
    million += "u.";
    const auto start = std::chrono::steady_clock::now();
    const Refused big = refuse_pickle(million);
    CHECK(big.code == "checkpoint_limit");
    CHECK(big.message.find("500000") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    // dicts 40 deep around a tensor: {"k": {"k": ... {"w": tensor}}}
    std::string deep = "\x80\x02";
    for (int i = 0; i < 40; ++i) deep += "}" + str("k");
    deep += "}" + str("w") + tensor("FloatStorage", "0", 16, 0, "(K\x01t", "(K\x01t") + "s" + std::string(40, 's') + ".";
    const Refused nested = refuse_pickle(deep);
    CHECK(nested.code == "checkpoint_limit");
    CHECK(nested.message.find("nested deeper than 32") != std::string::npos);
    // a list appended to itself (memo 1 pushed back with BINGET): refused by the same bound, no endless walk
    CHECK(refuse_pickle("\x80\x02}" + str("a") +
                        "]q\x01h\x01"
                        "as.")
              .code == "checkpoint_limit");
    CHECK(refuse_pickle("\x80\x02}h\x05.").message.find("memo 5 was never stored") != std::string::npos);
    CHECK(refuse_pickle("\x80\x02}(" + str("a") + "i.").message.find("opcode 0x69") != std::string::npos);  // INST
    CHECK(refuse_pickle("\x80\x02]"
                        ".")
              .message.find("no dict of tensors") != std::string::npos);
    CHECK(refuse_pickle("\x80\x02}" + str("a")).message.find("past the end of data.pkl") != std::string::npos);
  }

  TEST_CASE("zip64 records (an end record of 0xFFFFFFFF fields, its locator and the zip64 end record) lead to the same entries") {
    const Bytes plain = zip_of(tensor_dict("FloatStorage", "0", 16, 0, "(K\x04t", "(K\x01t"));
    // the zip64 form of the same directory: zip64 end record + locator before an end record that saturates its fields
    const size_t end = plain.size() - 22;
    uint64_t entries = plain[end + 10] | (plain[end + 11] << 8), size = 0, offset = 0;
    for (int i = 0; i < 4; ++i) size |= uint64_t{plain[end + 12 + i]} << (8 * i), offset |= uint64_t{plain[end + 16 + i]} << (8 * i);
    Bytes z(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(end));
    auto put = [&](uint64_t v, int n) {
      for (int i = 0; i < n; ++i) z.push_back(static_cast<uint8_t>(v >> (8 * i)));
    };
    const uint64_t record = z.size();
    put(0x06064b50, 4), put(44, 8), put(45, 2), put(45, 2), put(0, 4), put(0, 4), put(entries, 8), put(entries, 8), put(size, 8), put(offset, 8);
    put(0x07064b50, 4), put(0, 4), put(record, 8), put(1, 4);
    put(0x06054b50, 4), put(0, 4), put(0xFFFF, 2), put(0xFFFF, 2), put(0xFFFFFFFF, 4), put(0xFFFFFFFF, 4), put(0, 2);
    const SafetensorsHeader a = open_bytes(plain), b = open_bytes(z);
    REQUIRE(b.entries.size() == 1);
    CHECK(b.entries[0].begin == a.entries[0].begin);
    CHECK(b.entries[0].end == a.entries[0].end);
    z[record] = 'X';  // no zip64 end record where the locator points
    CHECK(refused([&] { open_bytes(z); }).message.find("no zip64 end record at byte " + std::to_string(record)) != std::string::npos);
  }

  TEST_CASE("a zip comment longer than the first 1 KB read: a second read of the last 64 KB finds the end record") {
    Bytes z = zip_of(tensor_dict("FloatStorage", "0", 16, 0, "(K\x04t", "(K\x01t"));
    const SafetensorsHeader plain = open_bytes(z);
    z[z.size() - 2] = 3000 & 255, z[z.size() - 1] = 3000 >> 8;  // the end record's comment length
    z.resize(z.size() + 3000, 'c');
    std::map<std::string, Bytes> read;
    std::vector<std::string> steps;
    for (std::vector<TorchSaveRead> next; !(next = torch_save_reads(read, z.size())).empty();) {
      steps.push_back(next.front().name);
      for (const auto& r : next) read[r.name].assign(z.begin() + static_cast<std::ptrdiff_t>(r.begin), z.begin() + static_cast<std::ptrdiff_t>(r.end));
    }
    CHECK(steps == std::vector<std::string>{"file start", "zip tail", "zip tail with its comment", "zip central directory", "local header archive/data.pkl", "archive/data.pkl"});
    CHECK(open_torch_save(read, z.size()).entries[0].begin == plain.entries[0].begin);
    z.resize(z.size() - 100);  // cut off: no end record whose comment ends at the end of the file
    CHECK(refused([&] { open_bytes(z); }).code == "checkpoint_truncated");
  }

  TEST_CASE("fuzz_torch_save in the native suite: seeded mutations of the fixtures open or are refused, nothing else escapes") {
    std::mt19937 rng(42);
    int refused_count = 0, opened = 0;
    for (const char* name : {"pytorch_model.bin", "noncontiguous.bin", "lm_head_tied.bin"}) {
      std::ifstream in(std::string(test_paths::fixtures) + "/torch_save/" + name, std::ios::binary);
      const Bytes file((std::istreambuf_iterator<char>(in)), {});
      REQUIRE(file.size() > 1000);
      for (int round = 0; round < 400; ++round) {
        Bytes m = file;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < edits; ++k) {
          // most edits hit the structure (the directory and data.pkl lie in the last 4 KB and at the start)
          const size_t at = rng() % 2 == 0 ? m.size() - 1 - rng() % std::min<size_t>(m.size(), 4096) : rng() % m.size();
          m[at] = static_cast<uint8_t>(rng() % 4 == 0 ? 0xFF : rng());
        }
        if (rng() % 8 == 0) m.resize(rng() % m.size());
        try {
          m.insert(m.begin(), 0);  // fuzz::torch_save's first byte: even, the rest is a whole file
          fuzz::torch_save(m.data(), m.size());
          ++opened;
        } catch (const AttentionError&) {
          ++refused_count;
        } catch (const std::exception& e) {
          FAIL(name << " round " << round << ": " << e.what());
        }
      }
    }
    CHECK(opened > 0);
    CHECK(refused_count > 0);
  }
}

namespace {

/// A legacy-format file (torch < 1.6) by hand: the magic number, 1001 and sys_info pickles, a state dict
/// {"note": `note`, "w": a (4,) view of storage "0"} whose persistent id ends in `view_metadata`, the
/// keys list `keys`, then storage "0": its count 16 and the float32 values 0 to 15.
Bytes legacy_file(const std::string& note, const std::string& view_metadata = "N", const std::string& keys = "(" + str("0") + "e") {
  std::string pid_tensor = tensor("FloatStorage", "0", 16, 0, "(K\x04t", "(K\x01t");
  pid_tensor.insert(pid_tensor.find("tQ"), view_metadata);
  std::string f = std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 15) + "\x80\x02M\xe9\x03." + "\x80\x02}(" + str("little_endian") + "\x88u." +
                  "\x80\x02" + "ccollections\nOrderedDict\n)R" + str("note") + str(note) + "s" + str("w") + pid_tensor + "s." + "\x80\x02]" + keys + "." +
                  std::string("\x10\0\0\0\0\0\0\0", 8);
  for (int i = 0; i < 16; ++i) {
    const float v = static_cast<float>(i);
    f.append(reinterpret_cast<const char*>(&v), 4);
  }
  return text(f);
}

}  // namespace

TEST_SUITE("torch.save legacy format, hand-built") {
  TEST_CASE("pickles longer than the first 64 KB slice are read again 8 times longer; the storage's bytes follow them") {
    const Bytes file = legacy_file(std::string(200000, 'n'));
    REQUIRE(checkpoint_format(file.data(), file.size()) == CheckpointFormat::TorchLegacy);
    std::map<std::string, Bytes> read;
    std::vector<uint64_t> ends;
    for (std::vector<TorchSaveRead> next; !(next = torch_save_reads(read, file.size())).empty();) {
      REQUIRE(next.size() == 1);
      ends.push_back(next[0].end);
      read[next[0].name].assign(file.begin() + static_cast<std::ptrdiff_t>(next[0].begin), file.begin() + static_cast<std::ptrdiff_t>(next[0].end));
    }
    CHECK(ends == std::vector<uint64_t>{8, 65536, file.size()});  // 8 x 64 KB is past the file's end
    const SafetensorsHeader h = open_torch_save(read, file.size());
    REQUIRE(h.entries.size() == 1);
    const SafetensorsEntry& w = h.entries[0];
    CHECK(w.key == "w");
    CHECK(w.begin == file.size() - 64);
    CHECK(decode_tensor(w, file.data() + w.begin, static_cast<size_t>(w.end - w.begin)) == std::vector<float>{0, 1, 2, 3});
  }

  TEST_CASE("a storage view (torch < 0.4), a keys list naming an unknown storage or none, a wrong magic number are refused") {
    const Refused view = refused([] { open_bytes(legacy_file("", "(" + str("0") + std::string("K\x00K\x40t", 5))); });
    CHECK(view.code == "checkpoint_legacy_format");
    CHECK(view.message.find("storage view") != std::string::npos);
    const Refused unknown = refused([] { open_bytes(legacy_file("", "N", "(" + str("1") + "e")); });
    CHECK(unknown.code == "checkpoint_storage");
    CHECK(unknown.message.find("names '1' which no tensor uses") != std::string::npos);
    const Refused missing = refused([] { open_bytes(legacy_file("", "N", "")); });
    CHECK(missing.code == "checkpoint_storage");
    CHECK(missing.message.find("storage '0' is used by a tensor but missing from the storage keys list") != std::string::npos);
    Bytes magic = legacy_file("");
    magic[10] ^= 1;  // past the 6 bytes that tell the format
    const Refused wrong = refused([&] { open_bytes(magic); });
    CHECK(wrong.code == "checkpoint_pickle");
    CHECK(wrong.message.find("magic number") != std::string::npos);
  }
}
