// torch.save files (a zip holding <archive>/data.pkl and one <archive>/data/<key> entry per storage, or
// the legacy format of torch_legacy.hpp) opened by slices, step by step: torch_save_reads names the byte
// ranges the next step needs from what was read so far (the first 8 bytes, telling the formats apart;
// for a zip the last KB, or 64 KB when a zip comment pushes the end record further back, a zip64
// record, the central directory, the local headers, data.pkl), and open_torch_save turns them into a
// SafetensorsHeader whose entries hold absolute file offsets, so every reader of safetensors entries
// reads a .pth's tensors unchanged.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "attention_lab/checkpoint.hpp"
#include "pickle_reader.hpp"
#include "torch_legacy.hpp"
#include "zip_reader.hpp"

namespace attention_lab {

namespace {

using Bytes = std::map<std::string, std::vector<uint8_t>>;

constexpr const char* kStart = "file start";
constexpr const char* kTail = "zip tail";
constexpr const char* kLongTail = "zip tail with its comment";
constexpr const char* kZip64 = "zip64 end record";
constexpr const char* kDirectory = "zip central directory";

std::string local_name(const zip::Entry& e) { return "local header " + e.name; }

/// What the reads so far tell: the next reads (when any), else every entry with its data start.
struct Progress {
  std::vector<TorchSaveRead> next;
  zip::Directory dir;
  std::vector<zip::Entry> entries;
  std::vector<uint64_t> starts;  // per entry, once the local headers are read
  size_t pickle = 0;             // the entry of <archive>/data.pkl
  std::string archive;           // "archive/", "model/", ...
};

const std::vector<uint8_t>* find(const Bytes& read, const std::string& name) {
  const auto it = read.find(name);
  return it == read.end() ? nullptr : &it->second;
}

/// The entry <archive>/data.pkl: exactly one, one folder deep.
size_t pickle_entry(const std::vector<zip::Entry>& entries, std::string& archive) {
  size_t found = entries.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& n = entries[i].name;
    const size_t slash = n.find('/');
    if (slash == std::string::npos || n.compare(slash, std::string::npos, "/data.pkl") != 0) continue;
    if (found != entries.size())
      throw AttentionError("checkpoint_zip", n, "the zip holds two pickles ('" + entries[found].name + "' and '" + n + "'); torch.save writes one",
                           "Open the .pth file torch.save wrote, not a zip of several.");
    found = i;
    archive = n.substr(0, slash + 1);
  }
  if (found == entries.size())
    throw AttentionError("checkpoint_zip", "",
                         "the zip holds no <archive>/data.pkl: it is not a file torch.save wrote (a TorchScript file from torch.jit.save is not a state dict either)",
                         "Save the weights with torch.save(model.state_dict(), \"model.pth\").");
  return found;
}

Progress advance(const Bytes& read, uint64_t file_size) {
  Progress p;
  const std::vector<uint8_t>* tail = find(read, kTail);
  if (tail == nullptr) {
    p.next.push_back({kTail, file_size - std::min(file_size, zip::kShortTailBytes), file_size});
    return p;
  }
  if (!zip::has_end_record(tail->data(), tail->size()) && tail->size() < std::min(file_size, zip::kTailBytes)) {
    // a zip comment (torch writes none): the longest one's tail
    tail = find(read, kLongTail);
    if (tail == nullptr) {
      p.next.push_back({kLongTail, file_size - std::min(file_size, zip::kTailBytes), file_size});
      return p;
    }
  }
  p.dir = zip::read_end_record(tail->data(), tail->size(), file_size);
  if (p.dir.zip64_pending) {
    const std::vector<uint8_t>* record = find(read, kZip64);
    if (record == nullptr) {
      p.next.push_back({kZip64, p.dir.zip64_record, p.dir.zip64_record + 56});
      return p;
    }
    zip::read_zip64_record(p.dir, record->data(), record->size(), file_size);
  }
  const std::vector<uint8_t>* directory = find(read, kDirectory);
  if (directory == nullptr) {
    p.next.push_back({kDirectory, p.dir.offset, p.dir.offset + p.dir.size});
    return p;
  }
  p.entries = zip::read_central_directory(p.dir, directory->data(), directory->size());
  p.pickle = pickle_entry(p.entries, p.archive);
  for (const zip::Entry& e : p.entries) {
    if (find(read, local_name(e)) == nullptr) p.next.push_back({local_name(e), e.local_header, e.local_header + zip::local_header_length(e)});
  }
  if (!p.next.empty()) return p;
  for (const zip::Entry& e : p.entries) {
    const std::vector<uint8_t>& b = *find(read, local_name(e));
    p.starts.push_back(zip::data_start(e, b.data(), b.size(), p.dir.offset));
  }
  const zip::Entry& pkl = p.entries[p.pickle];
  if (pkl.size > pickle::kMaxPickleBytes)
    throw AttentionError("checkpoint_limit", pkl.name,
                         "'" + pkl.name + "' is " + std::to_string(pkl.size) + " bytes; this reader takes at most " + std::to_string(pickle::kMaxPickleBytes),
                         "A state dict's pickle is small (GPT-2's: ~30 KB): save only the model's state_dict.");
  if (find(read, pkl.name) == nullptr) p.next.push_back({pkl.name, p.starts[p.pickle], p.starts[p.pickle] + pkl.size});
  return p;
}

/// The strides of a contiguous (row-major) tensor of `shape` match `stride` (axes of size 1 aside).
bool contiguous(const Shape& shape, const std::vector<int64_t>& stride) {
  int64_t expected = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1 && stride[k] != expected) return false;
    expected *= shape[k];
  }
  return true;
}

/// The safetensors-like entry of one tensor: its bytes' absolute offsets in the file.
SafetensorsEntry entry_of(const std::string& key, const pickle::TensorView& t, const pickle::Storage& s, const zip::Entry& z, uint64_t start) {
  SafetensorsEntry e;
  e.key = key;
  e.dtype = s.dtype;
  e.shape = t.shape;
  const uint64_t item = safetensors_dtype_size(s.dtype);
  const std::string storage = "storage '" + z.name + "'";
  if (static_cast<double>(s.numel) * static_cast<double>(item) > static_cast<double>(z.size))
    throw AttentionError("checkpoint_storage", key, storage + " holds " + std::to_string(z.size) + " bytes, less than its " + std::to_string(s.numel) + " " + s.dtype + " values",
                         "The file is damaged: download it or save it again.");
  double numel = 1, reach = static_cast<double>(t.offset);
  for (size_t k = 0; k < t.shape.size(); ++k) {
    numel *= static_cast<double>(t.shape[k]);
    if (t.shape[k] > 0) reach += static_cast<double>(t.shape[k] - 1) * static_cast<double>(t.stride[k]);
  }
  if (numel > 0 && reach >= static_cast<double>(s.numel))
    throw AttentionError("checkpoint_storage", key,
                         "tensor '" + key + "' " + shape_string(t.shape) + " at storage offset " + std::to_string(t.offset) + " reaches value " +
                             std::to_string(static_cast<uint64_t>(reach)) + " of " + storage + ", which holds " + std::to_string(s.numel),
                         "The file is damaged (a storage shorter than its tensor): download it or save it again.");
  if (numel == 0 && static_cast<uint64_t>(t.offset) > s.numel)
    throw AttentionError("checkpoint_storage", key,
                         "tensor '" + key + "' starts at value " + std::to_string(t.offset) + " of " + storage + ", which holds " + std::to_string(s.numel),
                         "The file is damaged: download it or save it again.");
  e.begin = start + static_cast<uint64_t>(t.offset) * item;
  if (numel == 0) {
    e.end = e.begin;
  } else if (contiguous(t.shape, t.stride)) {
    e.end = e.begin + static_cast<uint64_t>(numel) * item;
  } else {
    e.strides = t.stride;
    e.end = start + (static_cast<uint64_t>(reach) + 1) * item;
  }
  return e;
}

}  // namespace

CheckpointFormat checkpoint_format(const uint8_t* first, size_t available) {
  if (available >= 4 && std::memcmp(first, "PK\x03\x04", 4) == 0) return CheckpointFormat::TorchZip;
  // torch < 1.6 (or _use_new_zipfile_serialization=False): pickle protocol 2 whose first value is LONG1 0x1950a86a20f9469cfc6c
  if (legacy::is_legacy(first, available)) return CheckpointFormat::TorchLegacy;
  return CheckpointFormat::Safetensors;
}

std::vector<TorchSaveRead> torch_save_reads(const Bytes& read, uint64_t file_size) {
  const std::vector<uint8_t>* start = find(read, kStart);
  if (start == nullptr) return {{kStart, 0, std::min<uint64_t>(file_size, 8)}};
  if (legacy::is_legacy(start->data(), start->size())) return legacy::legacy_reads(find(read, legacy::kPickles), file_size);
  return advance(read, file_size).next;
}

namespace {

/// The header of a state dict's tensors, given each storage's bytes as a zip entry and its data start.
template <typename StorageAt>
SafetensorsHeader header_of(const pickle::StateDict& dict, uint64_t file_size, StorageAt storage_at) {
  SafetensorsHeader h;
  h.file_size = file_size;
  h.torch_save = true;
  for (const auto& [key, view] : dict.tensors) {
    const auto [z, start] = storage_at(key, dict.storages[view.storage], view.storage);
    h.entries.push_back(entry_of(key, view, dict.storages[view.storage], z, start));
  }
  std::sort(h.entries.begin(), h.entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.key < b.key; });
  for (const auto& [key, text] : dict.strings) h.metadata.emplace(key, text);
  for (const auto& [key, value] : dict.numbers) h.numbers.emplace(key, value);
  return h;
}

SafetensorsHeader open_legacy(const Bytes& read, uint64_t file_size) {
  const std::vector<uint8_t>* pickles = find(read, legacy::kPickles);
  if (pickles == nullptr)
    throw AttentionError("checkpoint_truncated", legacy::kPickles, std::string("'") + legacy::kPickles + "' was not read yet", "Read every range torch_save_reads names first.");
  const legacy::LegacyFile f = legacy::read_legacy(*pickles, file_size);
  return header_of(f.dict, file_size, [&](const std::string&, const pickle::Storage& s, size_t i) {
    return std::pair<zip::Entry, uint64_t>{zip::Entry{s.key, f.storages[i].bytes, 0}, f.storages[i].start};
  });
}

}  // namespace

SafetensorsHeader open_torch_save(const Bytes& read, uint64_t file_size) {
  const std::vector<uint8_t>* start = find(read, kStart);
  if (start == nullptr) throw AttentionError("checkpoint_truncated", kStart, "'file start' was not read yet", "Read every range torch_save_reads names first.");
  if (legacy::is_legacy(start->data(), start->size())) return open_legacy(read, file_size);
  const Progress p = advance(read, file_size);
  if (!p.next.empty())
    throw AttentionError("checkpoint_truncated", p.next.front().name, "'" + p.next.front().name + "' was not read yet", "Read every range torch_save_reads names first.");
  const std::vector<uint8_t>& pkl = *find(read, p.entries[p.pickle].name);
  if (pkl.size() != p.entries[p.pickle].size)
    throw AttentionError("checkpoint_truncated", "data.pkl", "read " + std::to_string(pkl.size()) + " bytes of data.pkl, expected " + std::to_string(p.entries[p.pickle].size),
                         "The file is cut off: download it again.");
  const pickle::StateDict dict = pickle::read_state_dict(pkl.data(), pkl.size());
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < p.entries.size(); ++i) by_name.emplace(p.entries[i].name, i);
  return header_of(dict, file_size, [&](const std::string& key, const pickle::Storage& s, size_t) {
    const auto it = by_name.find(p.archive + "data/" + s.key);
    if (it == by_name.end())
      throw AttentionError("checkpoint_storage", key, "tensor '" + key + "' uses storage '" + p.archive + "data/" + s.key + "', which the zip does not hold",
                           "The file is damaged: download it or save it again.");
    return std::pair<zip::Entry, uint64_t>{p.entries[it->second], p.starts[it->second]};
  });
}

}  // namespace attention_lab
