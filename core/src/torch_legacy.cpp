// torch.save's legacy format: see torch_legacy.hpp. The pickles run in the same interpreter as a zip's
// data.pkl (the same globals, bounds and refusals; nothing is run), each from where the last one stopped.
#include "torch_legacy.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "pickle_machine.hpp"

namespace attention_lab::legacy {

namespace {

// pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2): PROTO 2, LONG1 of 10 bytes, STOP
constexpr uint8_t kMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};
constexpr const char* kDamaged = "The file is damaged: download it or save it again.";
constexpr const char* kResave = "Save it again with a newer torch: torch.save(torch.load(\"model.pth\"), \"model.pth\") writes the zip format.";

struct Pickles {
  pickle::StateDict dict;
  std::vector<std::string> keys;  // the storages in file order
  uint64_t end = 0;               // the byte after the last pickle: the first storage's count
};

[[noreturn]] void malformed(const char* what, const std::string& why) { throw AttentionError("checkpoint_pickle", what, std::string(what) + ": " + why, kDamaged); }

/// sys_info: {'protocol_version': 1001, 'little_endian': True, 'type_sizes': {...}}; a big-endian file is refused.
void check_sys_info(pickle::Machine& m) {
  const char* what = "the legacy sys_info pickle";
  const pickle::Obj& info = m.value(m.run_value());
  if (info.kind != pickle::Kind::Dict) malformed(what, "it is not a dict");
  for (size_t k = 0; k + 1 < info.items.size(); k += 2) {
    const pickle::Obj& key = m.value(info.items[k]);
    if (key.kind != pickle::Kind::Str || key.text != "little_endian") continue;
    const pickle::Obj& v = m.value(info.items[k + 1]);
    if (v.kind != pickle::Kind::Bool) malformed(what, "little_endian is not a bool");
    if (v.number == 0)
      throw AttentionError("checkpoint_legacy_format", "little_endian",
                           "the file was saved on a big-endian machine (sys_info little_endian=False); this reader reads little-endian storages only", kResave);
    return;
  }
  malformed(what, "it has no little_endian");
}

/// The five pickles from the start of the file (`n` bytes of it). Throws pickle::CutOff when they run past `n`.
Pickles parse(const uint8_t* p, size_t n) {
  if (n < sizeof kMagic) throw pickle::CutOff{};
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0) malformed("the legacy magic number pickle", "it is not torch's magic number 0x1950a86a20f9469cfc6c");
  size_t at = sizeof kMagic;
  {
    pickle::Machine m(p + at, n - at, "the legacy protocol version pickle", true);
    const pickle::Obj& v = m.value(m.run_value());
    if (v.kind != pickle::Kind::Int || v.number != 1001) malformed("the legacy protocol version pickle", "it is not 1001 (what torch writes)");
    at += m.end();
  }
  {
    pickle::Machine m(p + at, n - at, "the legacy sys_info pickle", true);
    check_sys_info(m);
    at += m.end();
  }
  Pickles out;
  {
    pickle::Machine m(p + at, n - at, "the legacy state dict pickle", true);
    out.dict = m.run();
    at += m.end();
  }
  pickle::Machine m(p + at, n - at, "the legacy storage keys pickle", true);
  const pickle::Obj& list = m.value(m.run_value());
  if (list.kind != pickle::Kind::List) malformed("the legacy storage keys pickle", "it is not a list");
  for (uint32_t i : list.items) {
    if (m.value(i).kind != pickle::Kind::Str) malformed("the legacy storage keys pickle", "it holds a key that is not a string");
    out.keys.push_back(m.value(i).text);
  }
  out.end = at + m.end();
  return out;
}

/// Parses what was read; false when the pickles run past it and more of the file can be read.
bool parsed(const std::vector<uint8_t>& bytes, uint64_t file_size, Pickles& out) {
  try {
    out = parse(bytes.data(), bytes.size());
    return true;
  } catch (const pickle::CutOff&) {
    if (bytes.size() >= file_size)
      throw AttentionError("checkpoint_truncated", kPickles, "the file ends inside its pickles (after " + std::to_string(file_size) + " bytes)",
                           "The file is cut off: download it again.");
    if (bytes.size() >= pickle::kMaxPickleBytes)
      throw AttentionError("checkpoint_limit", kPickles, "the file's pickles run past " + std::to_string(pickle::kMaxPickleBytes) + " bytes, the most this reader takes",
                           "A state dict's pickle is small (GPT-2's: ~30 KB): save only the model's state_dict.");
    return false;
  }
}

}  // namespace

bool is_legacy(const uint8_t* first, size_t available) { return available >= 6 && std::memcmp(first, kMagic, 6) == 0; }

std::vector<TorchSaveRead> legacy_reads(const std::vector<uint8_t>* pickles, uint64_t file_size) {
  if (pickles == nullptr) return {{kPickles, 0, std::min(file_size, kFirstSlice)}};
  Pickles p;
  if (parsed(*pickles, file_size, p)) return {};
  const uint64_t more = std::max<uint64_t>(kFirstSlice, uint64_t{pickles->size()} * 8);
  return {{kPickles, 0, std::min({file_size, pickle::kMaxPickleBytes, more})}};
}

LegacyFile read_legacy(const std::vector<uint8_t>& pickles, uint64_t file_size) {
  Pickles p;
  if (!parsed(pickles, file_size, p))
    throw AttentionError("checkpoint_truncated", kPickles, "the pickles were not read to their end yet", "Read every range torch_save_reads names first.");
  LegacyFile out;
  out.dict = std::move(p.dict);
  const std::vector<pickle::Storage>& storages = out.dict.storages;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < storages.size(); ++i) index.emplace(storages[i].key, i);
  out.storages.resize(storages.size());
  std::vector<bool> placed(storages.size(), false);
  uint64_t at = p.end;
  for (const std::string& key : p.keys) {
    const auto it = index.find(key);
    if (it == index.end() || placed[it->second])
      throw AttentionError("checkpoint_storage", key,
                           "the storage keys list names '" + key + "' " + (it == index.end() ? "which no tensor uses" : "twice") + ", so the storages after it cannot be found",
                           kDamaged);
    placed[it->second] = true;
    const pickle::Storage& s = storages[it->second];
    const double bytes = static_cast<double>(s.numel) * static_cast<double>(safetensors_dtype_size(s.dtype));
    if (static_cast<double>(at) + 8 + bytes > static_cast<double>(file_size))
      throw AttentionError("checkpoint_truncated", key,
                           "storage '" + key + "' (" + std::to_string(s.numel) + " " + s.dtype + " values from byte " + std::to_string(at + 8) +
                               ") runs past the end of the file (" + std::to_string(file_size) + " bytes)",
                           "The file is cut off: download it again.");
    out.storages[it->second] = {at + 8, static_cast<uint64_t>(bytes)};
    at += 8 + static_cast<uint64_t>(bytes);
  }
  for (size_t i = 0; i < storages.size(); ++i)
    if (!placed[i])
      throw AttentionError("checkpoint_storage", storages[i].key, "storage '" + storages[i].key + "' is used by a tensor but missing from the storage keys list", kDamaged);
  if (at != file_size)
    throw AttentionError("checkpoint_storage", "", std::to_string(file_size - at) + " bytes follow the last storage: the storages' sizes disagree with the file", kDamaged);
  return out;
}

}  // namespace attention_lab::legacy
