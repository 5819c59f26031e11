// fuzz_torch_save's entry (included by fuzz_entries.hpp, whose run/require it uses): the bytes as a
// torch.save file, or as the data.pkl of a well-formed one.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attention_lab/checkpoint.hpp"

namespace attention_lab::fuzz {

/// A zip of stored entries laid out as torch.save's (local headers, the bytes, the central directory,
/// the end record): what the torch.save reader's tests and fuzzer wrap a pickle in.
inline std::vector<uint8_t> stored_zip(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& entries) {
  std::vector<uint8_t> out, directory;
  auto put = [](std::vector<uint8_t>& v, uint64_t x, int n) {
    for (int i = 0; i < n; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
  };
  for (const auto& [name, bytes] : entries) {
    const uint64_t at = out.size();
    for (std::vector<uint8_t>* v : {&out, &directory}) {
      const bool central = v == &directory;
      put(*v, central ? 0x02014b50 : 0x04034b50, 4);
      if (central) put(*v, 20, 2);
      put(*v, 20, 2), put(*v, 0, 2), put(*v, 0, 2), put(*v, 0, 4), put(*v, 0, 4);  // version, flags, method, time/date, crc
      put(*v, bytes.size(), 4), put(*v, bytes.size(), 4), put(*v, name.size(), 2), put(*v, 0, 2);
      if (central) put(*v, 0, 2), put(*v, 0, 2), put(*v, 0, 2), put(*v, 0, 4), put(*v, at, 4);
      v->insert(v->end(), name.begin(), name.end());
    }
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  const uint64_t directory_at = out.size();
  out.insert(out.end(), directory.begin(), directory.end());
  put(out, 0x06054b50, 4), put(out, 0, 4), put(out, entries.size(), 2), put(out, entries.size(), 2);
  put(out, directory.size(), 4), put(out, directory_at, 4), put(out, 0, 2);
  return out;
}

/// Opens `file` through the step protocol (at most 8 rounds) and decodes every small tensor.
inline void open_torch_file(const std::vector<uint8_t>& file) {
  std::map<std::string, std::vector<uint8_t>> read;
  int rounds = 0;
  for (std::vector<TorchSaveRead> next; !(next = torch_save_reads(read, file.size())).empty();) {
    require(++rounds <= 8, "torch_save_reads asks for more than 8 rounds");
    for (const TorchSaveRead& r : next) {
      require(r.begin <= r.end && r.end <= file.size(), "a read outside the file: " + r.name);
      read[r.name].assign(file.begin() + static_cast<std::ptrdiff_t>(r.begin), file.begin() + static_cast<std::ptrdiff_t>(r.end));
    }
  }
  const SafetensorsHeader h = open_torch_save(read, file.size());
  std::set<std::string> keys;
  for (const auto& e : h.entries) {
    require(e.begin <= e.end && e.end <= file.size(), "an entry outside the file: " + e.key);
    require(keys.insert(e.key).second, "a duplicate key: " + e.key);
    if (e.end - e.begin > (1u << 20)) continue;
    try {
      const std::vector<float> v = decode_tensor(e, file.data() + e.begin, static_cast<size_t>(e.end - e.begin));
      require(static_cast<int64_t>(v.size()) == numel_of(e.shape), "decoded values disagree with the shape: " + e.key);
      if (!e.shape.empty() && e.shape[0] > 1)
        decode_tensor(rows_of(e, 1, e.shape[0]), file.data() + rows_of(e, 1, e.shape[0]).begin,
                      static_cast<size_t>(rows_of(e, 1, e.shape[0]).end - rows_of(e, 1, e.shape[0]).begin));
    } catch (const AttentionError&) {}
  }
}

/// First byte even: the rest is a whole file (a zip or the legacy format). Odd: the rest is data.pkl, in a zip with storages
/// archive/data/0 (64 bytes) and archive/data/1 (7 bytes), so the fuzzer explores the pickle.
inline void torch_save(const uint8_t* data, size_t size) {
  if (size == 0) return;
  std::vector<uint8_t> rest(data + 1, data + size);
  if (data[0] % 2 == 0) {
    if (checkpoint_format(rest.data(), rest.size()) == CheckpointFormat::Safetensors) return;
    open_torch_file(rest);
    return;
  }
  std::vector<uint8_t> storage(64);
  for (size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<uint8_t>(i * 37);
  open_torch_file(stored_zip({{"archive/data.pkl", rest}, {"archive/data/0", storage}, {"archive/data/1", std::vector<uint8_t>(7, 1)}, {"archive/version", {'3', '\n'}}}));
}

}  // namespace attention_lab::fuzz
