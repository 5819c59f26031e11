// The torch.save reader (core/src/torch_save.cpp, zip_reader.cpp, pickle_*.cpp) on the files of
// tests/fixtures/generate_torch_save.py (torch 1.13): opened by slices through the step protocol, its
// tensors decode to the same floats as the safetensors file of the same weights (float16 and bfloat16
// widened, tied and strided tensors included), and every refused file gets its code, naming what it refuses.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "../fuzz/fuzz_entries.hpp"
#include "attention_lab/checkpoint.hpp"
#include "refusal.hpp"
#include "test_paths.hpp"

using namespace attention_lab;

namespace {

std::vector<uint8_t> fixture(const std::string& name) {
  std::ifstream in(std::string(test_paths::fixtures) + "/torch_save/" + name, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), name);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  REQUIRE_MESSAGE(bytes.size() >= 64, name);
  return bytes;
}

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(test_paths::fixtures) + "/torch_save/expected.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

/// How an opening went: the steps (rounds of reads) and the names of the ranges read.
struct Opening {
  int steps = 0;
  std::set<std::string> names;
};

/// Opens `file` through the step protocol, as the facade does: the first 8 bytes given as "file start"
/// (read to tell the format), then read what torch_save_reads names, again, then open.
SafetensorsHeader open_pth(const std::vector<uint8_t>& file, Opening* how = nullptr) {
  REQUIRE(checkpoint_format(file.data(), file.size()) != CheckpointFormat::Safetensors);
  std::map<std::string, std::vector<uint8_t>> read{{"file start", std::vector<uint8_t>(file.begin(), file.begin() + std::min<std::ptrdiff_t>(8, file.size()))}};
  Opening o;
  for (std::vector<TorchSaveRead> next; !(next = torch_save_reads(read, file.size())).empty();) {
    REQUIRE(++o.steps <= 6);
    for (const TorchSaveRead& r : next) {
      REQUIRE(r.begin <= r.end);
      REQUIRE(r.end <= file.size());
      read[r.name].assign(file.begin() + static_cast<std::ptrdiff_t>(r.begin), file.begin() + static_cast<std::ptrdiff_t>(r.end));
      o.names.insert(r.name);
    }
  }
  if (how != nullptr) *how = o;
  return open_torch_save(read, file.size());
}

std::vector<float> values(const SafetensorsHeader& h, const std::vector<uint8_t>& file, const std::string& key) {
  const SafetensorsEntry* e = h.find(key);
  REQUIRE_MESSAGE(e != nullptr, key);
  const uint64_t at = h.data_start() + e->begin;
  return decode_tensor(*e, file.data() + at, static_cast<size_t>(e->end - e->begin));
}

}  // namespace

TEST_SUITE("torch.save files") {
  TEST_CASE("a file is told apart by its bytes: a zip and the legacy pickles are torch.save's") {
    const auto pth = fixture("pytorch_model.bin");
    const auto st = fixture("model.safetensors");
    CHECK(checkpoint_format(pth.data(), 8) == CheckpointFormat::TorchZip);
    CHECK(checkpoint_format(st.data(), 8) == CheckpointFormat::Safetensors);
    const auto legacy = fixture("legacy.pth");
    CHECK(checkpoint_format(legacy.data(), 8) == CheckpointFormat::TorchLegacy);
    // the step protocol asks for the first 8 bytes itself when not given them
    CHECK(torch_save_reads({}, legacy.size()).front().name == "file start");
    CHECK(torch_save_reads({}, legacy.size()).front().end == 8);
  }

  TEST_CASE("the legacy format (torch < 1.6) holds pytorch_model.bin's tensors bit for bit, found from its pickles alone") {
    const auto file = fixture("legacy.pth");
    const auto zip = fixture("pytorch_model.bin");
    Opening how;
    const SafetensorsHeader h = open_pth(file, &how);
    const SafetensorsHeader z = open_pth(zip);
    CHECK(h.torch_save);
    CHECK(how.steps == 1);  // the file is smaller than the first 64 KB slice
    CHECK(how.names == std::set<std::string>{"legacy pickles"});
    REQUIRE(h.entries.size() == expected()["files"]["legacy.pth"]["keys"].get<size_t>());
    REQUIRE(h.entries.size() == z.entries.size());
    for (const SafetensorsEntry& e : z.entries) {
      INFO(e.key);
      REQUIRE(h.find(e.key) != nullptr);
      CHECK(h.find(e.key)->dtype == e.dtype);
      CHECK(h.find(e.key)->shape == e.shape);
      const SafetensorsEntry& l = *h.find(e.key);
      CHECK(l.strides.empty());
      CHECK(std::vector<uint8_t>(file.begin() + static_cast<std::ptrdiff_t>(l.begin), file.begin() + static_cast<std::ptrdiff_t>(l.end)) ==
            std::vector<uint8_t>(zip.begin() + static_cast<std::ptrdiff_t>(e.begin), zip.begin() + static_cast<std::ptrdiff_t>(e.end)));
    }
    // the last storage ends at the end of the file; each storage follows its 8-byte element count
    uint64_t last = 0;
    for (const SafetensorsEntry& e : h.entries) last = std::max(last, e.end);
    CHECK(last == file.size());
    const SafetensorsEntry* wte = h.find("wte.weight");
    uint64_t count = 0;
    std::memcpy(&count, file.data() + wte->begin - 8, 8);
    CHECK(count == 64 * 8);
  }

  TEST_CASE("a legacy file cut off inside its pickles or storages is refused as truncated, naming where") {
    auto file = fixture("legacy.pth");
    file.resize(file.size() - 100);
    const Refused storage = refused([&] { open_pth(file); });
    CHECK(storage.code == "checkpoint_truncated");
    CHECK(storage.message.find("runs past the end of the file (" + std::to_string(file.size()) + " bytes)") != std::string::npos);
    file.resize(300);
    const Refused pickles = refused([&] { open_pth(file); });
    CHECK(pickles.code == "checkpoint_truncated");
    CHECK(pickles.message.find("the file ends inside its pickles (after 300 bytes)") != std::string::npos);
    auto longer = fixture("legacy.pth");
    longer.resize(longer.size() + 4, 0);  // bytes after the last storage: its sizes disagree with the file
    const Refused extra = refused([&] { open_pth(longer); });
    CHECK(extra.code == "checkpoint_storage");
    CHECK(extra.message.find("4 bytes follow the last storage") != std::string::npos);
  }

  TEST_CASE("a legacy file saved big-endian is refused with checkpoint_legacy_format and a hint to save it again") {
    const Refused r = refused([&] { open_pth(fixture("legacy_big_endian.pth")); });
    CHECK(r.code == "checkpoint_legacy_format");
    CHECK(r.message.find("big-endian") != std::string::npos);
    CHECK(r.hint.find("torch.save(torch.load(") != std::string::npos);
  }

  TEST_CASE("pytorch_model.bin in each dtype holds the safetensors file's tensors, value for value (F16, BF16 widened)") {
    for (const char* name : {"pytorch_model.bin", "pytorch_model_f16.bin", "pytorch_model_bf16.bin"}) {
      INFO(name);
      const auto file = fixture(name);
      Opening how;
      const SafetensorsHeader h = open_pth(file, &how);
      CHECK(h.torch_save);
      CHECK(h.data_start() == 0);
      CHECK(h.entries.size() == expected()["files"][name]["keys"].get<size_t>());
      CHECK(how.steps == 4);  // tail, central directory, local headers, data.pkl
      // the end record, the directory, each entry's local header and data.pkl: no storage's bytes
      CHECK(how.names.count("zip tail") == 1);
      CHECK(how.names.count("zip central directory") == 1);
      const std::string archive = std::string(name).substr(0, std::string(name).size() - 4) + "/";  // torch names it after the file's stem
      CHECK(how.names.count("local header " + archive + "data/0") == 1);
      CHECK(how.names.count(archive + "data.pkl") == 1);
      CHECK(how.names.count(archive + "data/0") == 0);
      const std::string dtype = expected()["files"][name]["dtype"];
      CHECK(h.find("wte.weight")->dtype == dtype);
      CHECK(h.find("h.0.attn.bias")->dtype == "BOOL");
      CHECK(h.find("h.1.attn.c_attn.weight")->shape == Shape{8, 24});
      // the safetensors file of the same dtype: every tensor's values identical
      const auto st = fixture("model.safetensors");
      if (dtype != "F32") continue;
      const SafetensorsHeader sh = parse_safetensors_header(st.data() + 8, static_cast<size_t>(safetensors_header_length(st.data(), 8, st.size())), st.size());
      for (const SafetensorsEntry& e : sh.entries) CHECK_MESSAGE(values(h, file, e.key) == values(sh, st, e.key), e.key);
    }
  }

  TEST_CASE("float16 and bfloat16 storages decode to the float32 file's values within their rounding") {
    const auto f32 = fixture("pytorch_model.bin");
    const SafetensorsHeader h32 = open_pth(f32);
    for (const auto& [name, tol] : std::vector<std::pair<std::string, float>>{{"pytorch_model_f16.bin", 1e-3f}, {"pytorch_model_bf16.bin", 8e-3f}}) {
      const auto file = fixture(name);
      const SafetensorsHeader h = open_pth(file);
      const auto a = values(h, file, "h.0.attn.c_attn.weight"), b = values(h32, f32, "h.0.attn.c_attn.weight");
      REQUIRE(a.size() == b.size());
      float worst = 0;
      for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
      CHECK_MESSAGE(worst <= tol, name);
      CHECK(worst > 0);
    }
  }

  TEST_CASE("a tied lm_head shares wte's storage: both entries cover the same bytes") {
    const auto file = fixture("lm_head_tied.bin");
    const SafetensorsHeader h = open_pth(file);
    const SafetensorsEntry* wte = h.find("transformer.wte.weight");
    const SafetensorsEntry* head = h.find("lm_head.weight");
    REQUIRE(wte != nullptr);
    REQUIRE(head != nullptr);
    CHECK(wte->begin == head->begin);
    CHECK(wte->end == head->end);
    CHECK(values(h, file, "lm_head.weight") == values(open_pth(fixture("pytorch_model.bin")), fixture("pytorch_model.bin"), "wte.weight"));
  }

  TEST_CASE("non-contiguous tensors (saved .t() views, a storage offset) keep their strides and decode row-major") {
    const auto file = fixture("noncontiguous.bin");
    const auto plain = fixture("pytorch_model.bin");
    const SafetensorsHeader h = open_pth(file), p = open_pth(plain);
    CHECK(h.find("h.0.attn.c_attn.weight")->strides == std::vector<int64_t>{1, 8});
    CHECK(h.find("wte.weight")->strides == std::vector<int64_t>{1, 64});
    CHECK(h.find("h.0.attn.c_proj.bias")->strides.empty());
    for (const SafetensorsEntry& e : p.entries) {
      if (e.dtype == "BOOL") continue;
      CHECK_MESSAGE(values(h, file, e.key) == values(p, plain, e.key), e.key);
    }
    // rows of a strided tensor (the embedding's token rows): the same rows as the contiguous file's
    const SafetensorsEntry rows = rows_of(*h.find("wte.weight"), 5, 7), plain_rows = rows_of(*p.find("wte.weight"), 5, 7);
    CHECK(decode_tensor(rows, file.data() + rows.begin, rows.end - rows.begin) == decode_tensor(plain_rows, plain.data() + plain_rows.begin, plain_rows.end - plain_rows.begin));
  }

  TEST_CASE("a nested dict (model_state_dict) gives keys joined with '.', string leaves go to metadata, other values are skipped") {
    const SafetensorsHeader h = open_pth(fixture("nested.pth"));
    CHECK(h.find("model_state_dict.wte.weight") != nullptr);
    CHECK(h.find("epoch") == nullptr);
    CHECK(h.metadata == std::map<std::string, std::string>{{"note", "nested"}});
    CHECK(h.entries.size() == expected()["files"]["nested.pth"]["keys"].get<size_t>());
  }

  TEST_CASE("the book's model_and_optimizer.pth: both state dicts under their keys, AdamW's moments and 0-d step tensors too") {
    const auto& want = expected()["files"]["model_and_optimizer.pth"];
    const SafetensorsHeader h = open_pth(fixture("model_and_optimizer.pth"));
    size_t model = 0, optimizer = 0;
    for (const SafetensorsEntry& e : h.entries) (e.key.rfind("model_state_dict.", 0) == 0 ? model : optimizer) += 1;
    CHECK(model == want["model_keys"].get<size_t>());
    CHECK(optimizer == want["optimizer_tensors"].get<size_t>());
    CHECK(h.find("model_state_dict.tok_emb.weight")->shape == Shape{64, 8});
    CHECK(h.find("model_state_dict.trf_blocks.0.att.W_query.weight")->shape == Shape{8, 8});
    CHECK(h.find("optimizer_state_dict.state.0.exp_avg")->shape == Shape{64, 8});
    CHECK(h.find("optimizer_state_dict.state.0.step")->shape.empty());
  }

  TEST_CASE("every refused fixture gets its code, naming the global, the entry or the object; nothing is run") {
    for (const auto& [name, want] : expected()["refused"].items()) {
      INFO(name);
      const auto file = fixture(name);
      const Refused r = refused([&] {
        if (checkpoint_format(file.data(), file.size()) != CheckpointFormat::Safetensors) open_pth(file);
      });
      CHECK(r.code == want["code"].get<std::string>());
      if (want.contains("names")) CHECK_MESSAGE(r.message.find(want["names"].get<std::string>()) != std::string::npos, r.message);
      CHECK(!r.hint.empty());
    }
    const Refused module = refused([] { open_pth(fixture("whole_module.pth")); });
    CHECK(module.hint.find("torch.save(model.state_dict()") != std::string::npos);
  }
}
