// The safetensors header: its 8-byte length, then its JSON (read by safetensors_reader.cpp) checked as
// strictly as the format: what the reader refused, then the tensors' byte ranges. Apart from
// checkpoint.cpp because a header can hold a million keys: the WASM build compiles this file and the
// reader for speed while the rest of the once-per-call code is built for size (CMakeLists.txt).
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "attention_lab/checkpoint.hpp"
#include "attention_lab/text.hpp"
#include "safetensors_reader.hpp"

namespace attention_lab {

size_t safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {{"F64", 8}, {"F32", 4},  {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},     {"I16", 2},    {"I8", 1},
                                                      {"U8", 1},  {"BOOL", 1}, {"U16", 2}, {"U32", 4},  {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

namespace safetensors {

[[noreturn]] void bad_header(const std::string& message) {
  throw AttentionError("checkpoint_bad_header", "", "this is not a readable safetensors file: " + message,
                       "Choose a .safetensors file (for GPT-2: model.safetensors from the Hugging Face gpt2 repository).");
}

[[noreturn]] void bad_header_at(size_t at, const uint8_t* header, size_t length, const std::string& message) {
  std::string shown = "end of the header";
  if (at < length) {
    const uint8_t c = header[at];
    static const char* hex = "0123456789abcdef";
    shown = std::string("0x") + hex[c >> 4] + hex[c & 15] + (c >= 0x20 && c < 0x7f ? std::string(" '") + static_cast<char>(c) + "'" : "");
  }
  bad_header(message + " (header byte " + std::to_string(at) + ", file byte " + std::to_string(8 + at) + ": " + shown + ")");
}

}  // namespace safetensors

namespace {

using namespace safetensors;

/// Throws what a reader walking the keys in order would refuse first (see HeaderReader in
/// safetensors_reader.cpp).
[[noreturn]] void throw_refusal(const Refusal& r, uint64_t data_size) {
  const SafetensorsEntry& e = r.entry;
  const std::string& key = e.key;
  switch (r.problem) {
    case Problem::MetadataNotObject:
      bad_header("__metadata__ is not an object");
    case Problem::MetadataValue:
      bad_header("__metadata__ maps '" + r.metadata_key + "' to " + r.metadata_type + "; the format maps strings to strings");
    case Problem::Lacks:
      bad_header("entry '" + key + "' lacks dtype, shape or data_offsets");
    case Problem::MalformedFields:
      bad_header("entry '" + key + "' has malformed fields");
    case Problem::UnknownDtype:
      bad_header("entry '" + key + "' has unknown dtype '" + e.dtype + "'");
    case Problem::MalformedShape:
      bad_header("entry '" + key + "' has a malformed shape");
    case Problem::MalformedOffsets:
      bad_header("entry '" + key + "' has malformed data_offsets");
    case Problem::Offsets:
    case Problem::PastEnd:
    case Problem::None:
      break;
  }
  const std::string where = "'" + key + "' claims bytes " + std::to_string(e.begin) + " to " + std::to_string(e.end);
  if (r.problem == Problem::PastEnd) {
    // A self-consistent header whose data runs past the end: the file was cut off.
    throw AttentionError("checkpoint_truncated", "", where + " but the file's data section ends at byte " + std::to_string(data_size),
                         "The file is cut off (an interrupted download?); download it again.");
  }
  const std::string need = format_g(r.elements * static_cast<double>(safetensors_dtype_size(e.dtype)), 20);
  throw AttentionError("checkpoint_bad_offsets", "", where + ", which does not fit " + e.dtype + " " + shape_string(e.shape) + " (" + need + " bytes)",
                       "The header lies about where the tensors are: the file is damaged.");
}

/// The tensors (indices into `items`) sorted by (begin, end); ties in key order (`order`), so that an
/// overlap names the same two keys whatever the header's order.
std::vector<size_t> tensors_by_offset(const std::vector<SafetensorsEntry>& items, const std::vector<uint8_t>& accepted, const std::vector<size_t>& order) {
  std::vector<size_t> by_offset;  // the tensors (indices into items) sorted by (begin, end)
  by_offset.reserve(items.size());
  bool increasing = true;  // in header order already, every (begin, end) after the one before
  for (size_t i = 0; i < items.size(); ++i) {
    if (!accepted[i]) continue;
    if (!by_offset.empty()) {
      const SafetensorsEntry& p = items[by_offset.back()];
      increasing = increasing && (p.begin != items[i].begin ? p.begin < items[i].begin : p.end < items[i].end);
    }
    by_offset.push_back(i);
  }
  if (!increasing) {
    // Ties possible: sorted as before, from the key order, so that an overlap names the same two keys.
    struct Span {
      uint64_t begin, end;
      size_t item;
    };
    std::vector<Span> spans;
    spans.reserve(by_offset.size());
    for (size_t i : order)
      if (accepted[i]) spans.push_back({items[i].begin, items[i].end, i});
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    for (size_t i = 0; i < spans.size(); ++i) by_offset[i] = spans[i].item;
  }
  return by_offset;
}

/// Tensors lie back to back: sorted by offset (`by_offset`), each starts where the one before ends, and
/// the last ends where the data section does. An overlap or a hole (bytes no tensor owns, which could
/// hide a second payload) is refused (checkpoint_bad_offsets), as the reference loader does.
void check_back_to_back(const SafetensorsHeader& h, const std::vector<SafetensorsEntry>& items, const std::vector<size_t>& by_offset, uint64_t data_size) {
  uint64_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (size_t i : by_offset) {
    const SafetensorsEntry* e = &items[i];
    if (e->begin < covered) {
      throw AttentionError(
          "checkpoint_bad_offsets", "",
          "'" + e->key + "' overlaps '" + previous->key + "' in the data section (bytes " + std::to_string(e->begin) + " to " + std::to_string(std::min(covered, e->end)) + ")",
          "The header lies about where the tensors are: the file is damaged.");
    }
    if (e->begin > covered) {
      throw AttentionError("checkpoint_bad_offsets", "",
                           "bytes " + std::to_string(covered) + " to " + std::to_string(e->begin) + " of the data section (file bytes " + std::to_string(h.data_start() + covered) +
                               " to " + std::to_string(h.data_start() + e->begin) + ") belong to no tensor (before '" + e->key + "')",
                           "The tensors of a safetensors file lie back to back with no gap: the file is damaged or carries hidden data.");
    }
    covered = e->end;
    previous = e;
  }
  if (covered != data_size) {
    throw AttentionError("checkpoint_bad_offsets", "",
                         "bytes " + std::to_string(covered) + " to " + std::to_string(data_size) + " of the data section (file bytes " + std::to_string(h.data_start() + covered) +
                             " to " + std::to_string(h.file_size) + ") belong to no tensor" + (previous ? " (after '" + previous->key + "')" : ""),
                         "The tensors of a safetensors file cover the data section to its end: the file is damaged or carries hidden data.");
  }
}

}  // namespace

const SafetensorsEntry* SafetensorsHeader::find(const std::string& key) const {
  // entries are in key order (parse_safetensors_header), so a binary search finds a key.
  const auto it = std::lower_bound(entries.begin(), entries.end(), key, [](const SafetensorsEntry& e, const std::string& k) { return e.key < k; });
  return it != entries.end() && it->key == key ? &*it : nullptr;
}

uint64_t safetensors_header_length(const uint8_t* first8, size_t available, uint64_t file_size) {
  if (available < 8 || file_size < 8) {
    throw AttentionError("checkpoint_truncated", "", "the file is " + std::to_string(file_size) + " bytes: too short to be a safetensors file",
                         "The file may be cut off; download it again.");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | first8[i];
  if (n == 0 || n > kMaxSafetensorsHeader) bad_header("its header claims " + std::to_string(n) + " bytes");
  if (8 + n > file_size) {
    throw AttentionError("checkpoint_truncated", "", "the header claims " + std::to_string(n) + " bytes but the file has only " + std::to_string(file_size) + " bytes",
                         "The file is cut off or not a safetensors file; download it again.");
  }
  return n;
}

SafetensorsHeader parse_safetensors_header(const uint8_t* header, size_t length, uint64_t file_size) {
  SafetensorsHeader h;
  h.header_length = length;
  h.file_size = file_size;
  if (8 + static_cast<uint64_t>(length) > file_size) {
    throw AttentionError("checkpoint_truncated", "", "the header runs past the end of the file", "The file is cut off; download it again.");
  }
  // The format: JSON that starts with '{', padded at the end with whitespace (space; the reference
  // loader also takes tab, CR and LF) and nothing else. nlohmann's lexer stops at a NUL byte as at the
  // end of input, so a NUL (and whatever follows it) is refused here, before the JSON parser sees it.
  if (length == 0 || header[0] != '{') bad_header_at(0, header, length, "the header must start with '{'");
  if (const void* nul = std::memchr(header, 0, length); nul != nullptr)
    bad_header_at(static_cast<size_t>(static_cast<const uint8_t*>(nul) - header), header, length, "the header holds a NUL byte; the format pads it with spaces only");
  const uint64_t data_size = file_size - 8 - length;
  HeaderItems parsed = read_header_json(header, length, data_size);
  if (parsed.refusal.problem != Problem::None) throw_refusal(parsed.refusal, data_size);
  std::vector<SafetensorsEntry>& items = parsed.items;
  const std::vector<size_t>& order = parsed.order;
  const std::vector<uint8_t>& accepted = parsed.accepted;
  const std::vector<size_t> by_offset = tensors_by_offset(items, accepted, order);
  check_back_to_back(h, items, by_offset, data_size);
  // The tensors in key order, without __metadata__ (moved, not copied).
  h.entries.reserve(by_offset.size());
  for (size_t i : order)
    if (accepted[i]) h.entries.push_back(std::move(items[i]));
  std::vector<SafetensorsEntry>().swap(items);
  h.metadata = std::move(parsed.metadata);
  return h;
}

}  // namespace attention_lab
