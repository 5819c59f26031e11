// The safetensors header reader: its 8-byte length, then its JSON read by nlohmann's SAX parser
// straight into the entries (no JSON document), checked as strictly as the format. Apart from
// checkpoint.cpp because a header can hold a million keys: the WASM build compiles this file for
// speed while the rest of the once-per-call code is built for size (CMakeLists.txt).
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <unordered_set>

#include "attention_lab/checkpoint.hpp"
#include "attention_lab/text.hpp"

namespace attention_lab {

size_t safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {{"F64", 8}, {"F32", 4},  {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},     {"I16", 2},    {"I8", 1},
                                                      {"U8", 1},  {"BOOL", 1}, {"U16", 2}, {"U32", 4},  {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

namespace {

using nlohmann::json;

[[noreturn]] void bad_header(const std::string& message) {
  throw AttentionError("checkpoint_bad_header", "", "this is not a readable safetensors file: " + message,
                       "Choose a .safetensors file (for GPT-2: model.safetensors from the Hugging Face gpt2 repository).");
}

/// Refuses the header at byte `at` (0-based within the header; the file byte is 8 + at), showing it.
[[noreturn]] void bad_header_at(size_t at, const uint8_t* header, size_t length, const std::string& message) {
  std::string shown = "end of the header";
  if (at < length) {
    const uint8_t c = header[at];
    static const char* hex = "0123456789abcdef";
    shown = std::string("0x") + hex[c >> 4] + hex[c & 15] + (c >= 0x20 && c < 0x7f ? std::string(" '") + static_cast<char>(c) + "'" : "");
  }
  bad_header(message + " (header byte " + std::to_string(at) + ", file byte " + std::to_string(8 + at) + ": " + shown + ")");
}

[[noreturn]] void duplicate_key(const std::string& name, bool nested) {
  throw AttentionError("checkpoint_duplicate_key", "", "the header lists '" + name + "' twice" + (nested ? " inside one entry" : "") + "; a reader would keep only the last",
                       "Keys are unique in a safetensors file: the file is damaged or was edited by hand; save the checkpoint again.");
}

/// The keys of one open object below the top level (an entry's fields, __metadata__, anything nested):
/// a short list scanned in place (an entry has three fields), a hash set once it holds many.
class KeySet {
 public:
  void clear() {
    few_.clear();
    many_.reset();
  }
  bool insert(const std::string& key) {
    if (!many_) {
      for (const std::string& k : few_)
        if (k == key) return false;
      if (few_.size() < 16) {
        few_.push_back(key);
        return true;
      }
      many_ = std::make_unique<std::unordered_set<std::string>>(few_.begin(), few_.end());
      few_.clear();
    }
    return many_->insert(key).second;
  }

 private:
  std::vector<std::string> few_;
  std::unique_ptr<std::unordered_set<std::string>> many_;
};

/// What is wrong with a top-level item, in the order the checks are made (the first that applies).
enum class Problem : uint8_t { None, MetadataNotObject, MetadataValue, Lacks, MalformedFields, UnknownDtype, MalformedShape, MalformedOffsets, Offsets, PastEnd };

/// The refused item whose key sorts first: the one a reader walking the keys in order meets first.
struct Refusal {
  Problem problem = Problem::None;
  SafetensorsEntry entry;     // the item (its key; for Offsets and PastEnd its dtype, shape, begin, end)
  double elements = 0;        // Offsets: the element count, as a double
  std::string metadata_key;   // MetadataValue: the first key (in order) whose value is not a string
  std::string metadata_type;  // and that value's JSON type
};

/// nlohmann's SAX events straight into the header's entries, without a JSON document: one
/// SafetensorsEntry per top-level key, in header order, each checked when its object closes. What is
/// refused is remembered, not thrown, so that the file is refused for what a reader walking the
/// parsed object in key order would meet first (the rule of the DOM parser this replaces); only
/// syntax errors and repeated keys stop the parse, where they are found. Repeated keys inside an
/// object below the top level are caught at once (per open object); at the top level, the keys
/// are sorted anyway (SafetensorsHeader::entries is in key order), so a repeat is found then, or at
/// the first syntax error, among the keys read so far: either way the one reported is the first
/// key of the header that repeats an earlier one, as when every key was checked as it was read.
class HeaderReader {
 public:
  HeaderReader(const uint8_t* header, size_t length, uint64_t data_size) : header_(header), length_(length), data_size_(data_size) {}

  std::vector<SafetensorsEntry> items;  // every top-level key in header order (__metadata__ and refused ones too)
  std::vector<uint8_t> accepted;        // per item: 1 when it is a tensor that passed every check
  std::map<std::string, std::string> metadata;
  Refusal refusal;
  bool root_is_object = false;

  bool null() { return value(Kind::Null); }
  bool boolean(bool) { return value(Kind::Boolean); }
  bool number_integer(json::number_integer_t) { return value(Kind::Number); }
  bool number_unsigned(json::number_unsigned_t v) { return value(Kind::Unsigned, v); }
  bool number_float(json::number_float_t, const std::string&) { return value(Kind::Number); }
  bool string(std::string& v) { return value(Kind::String, 0, &v); }
  bool binary(json::binary_t&) { return value(Kind::Binary); }

  bool start_object(std::size_t) {
    push(container(Kind::Object), true);
    return true;
  }
  bool start_array(std::size_t) {
    push(container(Kind::Array), false);
    return true;
  }
  bool end_object() {
    pop();
    return true;
  }
  bool end_array() {
    pop();
    return true;
  }

  bool key(std::string& name) {
    const Role role = roles_.back();
    if (role == Role::Top) {
      // Copied, not moved: the lexer's buffer has grown for longer tokens ("data_offsets" is past
      // libc++'s 10 bytes in place), and an entry holding it would keep that heap block (+28 MiB
      // for the million-key header in WASM); a key short enough stays in place.
      items.emplace_back();
      items.back().key = name;
      accepted.push_back(0);
      return true;
    }
    if (!key_sets_[objects_ - 1].insert(name)) {
      throw_top_level_duplicate();  // one read before this one comes first
      duplicate_key(name, true);
    }
    if (role == Role::Entry) {
      field_ = name == "dtype" ? Field::Dtype : name == "shape" ? Field::Shape : name == "data_offsets" ? Field::Offsets : Field::Other;
      if (field_ == Field::Dtype) has_dtype_ = true;
      if (field_ == Field::Shape) has_shape_ = true;
      if (field_ == Field::Offsets) has_offsets_ = true;
    } else if (role == Role::Metadata) {
      metadata_key_ = name;
    }
    return true;
  }

  template <class Exception>
  bool parse_error(std::size_t position, const std::string&, const Exception& error) {
    throw_top_level_duplicate();  // read before the error
    if (error.id / 100 == 4) {
      // e.g. 3e333: valid JSON syntax, but no double holds it (found by fuzz_checkpoint_header)
      bad_header("its header holds a number too large for any size or offset");
    }
    // The position counts from 1 and points just past the offending character.
    bad_header_at(position > 0 ? position - 1 : 0, header_, length_, "its header is not valid JSON");
  }

  /// The items in key order (byte order); refuses a key given twice, naming the first repeat.
  std::vector<size_t> key_order() const {
    std::vector<size_t> order(items.size());
    std::iota(order.begin(), order.end(), size_t{0});
    bool strictly_increasing = true;
    for (size_t i = 1; i < items.size() && strictly_increasing; ++i) strictly_increasing = items[i - 1].key < items[i].key;
    if (strictly_increasing) return order;  // already in order (and so no key twice)
    // Sorted by (key, index), comparing the first 8 bytes of each key as one big-endian number
    // before the keys themselves: the same order, with far fewer visits to the strings.
    struct Sortable {
      uint64_t prefix;
      size_t index;
    };
    std::vector<Sortable> keys(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string& k = items[i].key;
      uint64_t prefix = 0;
      for (size_t b = 0; b < 8; ++b) prefix = (prefix << 8) | (b < k.size() ? static_cast<uint8_t>(k[b]) : 0u);
      keys[i] = {prefix, i};
    }
    // (A merge sort: std::sort fell back to its heap sort on the x0, x1, ... keys of the million-key test file.)
    std::stable_sort(keys.begin(), keys.end(), [&](const Sortable& a, const Sortable& b) {
      if (a.prefix != b.prefix) return a.prefix < b.prefix;
      const int c = items[a.index].key.compare(items[b.index].key);
      return c < 0 || (c == 0 && a.index < b.index);
    });
    for (size_t i = 0; i < keys.size(); ++i) order[i] = keys[i].index;
    // Equal keys now sit together in header order; the first repeat is the smallest index after a group's first.
    size_t repeat = items.size();
    for (size_t i = 1; i < order.size(); ++i)
      if (keys[i].prefix == keys[i - 1].prefix && items[order[i]].key == items[order[i - 1]].key) repeat = std::min(repeat, order[i]);
    if (repeat < items.size()) duplicate_key(items[repeat].key, false);
    return order;
  }

 private:
  enum class Role : uint8_t { Top, Metadata, Entry, Shape, Offsets, Other };
  enum class Field : uint8_t { Dtype, Shape, Offsets, Other };
  enum class Kind : uint8_t { Null, Boolean, Number, Unsigned, String, Binary, Object, Array };

  static const char* type_name(Kind kind) {
    switch (kind) {
      case Kind::Null:
        return "null";
      case Kind::Boolean:
        return "boolean";
      case Kind::Number:
      case Kind::Unsigned:
        return "number";
      case Kind::String:
        return "string";
      case Kind::Binary:
        return "binary";
      case Kind::Object:
        return "object";
      case Kind::Array:
        return "array";
    }
    return "value";
  }

  bool value(Kind kind, uint64_t number = 0, std::string* text = nullptr) {
    place(kind, number, text);
    return true;
  }

  Role container(Kind kind) { return roles_.empty() ? (kind == Kind::Object ? (root_is_object = true, Role::Top) : Role::Other) : place(kind, 0, nullptr); }

  /// A value (a container's start for Object and Array) inside the innermost open container: what it
  /// means there, and the role of the container it opens.
  Role place(Kind kind, uint64_t number, std::string* text) {
    switch (roles_.back()) {
      case Role::Top: {
        SafetensorsEntry& item = items.back();
        if (item.key == "__metadata__") {
          if (kind == Kind::Object) return Role::Metadata;
          refuse(Problem::MetadataNotObject, item);
          return Role::Other;
        }
        if (kind == Kind::Object) {
          has_dtype_ = has_shape_ = has_offsets_ = false;
          dtype_string_ = shape_array_ = offsets_array_ = false;
          shape_ok_ = true;
          elements_ = 1;
          offsets_count_ = 0;
          offset_unsigned_[0] = offset_unsigned_[1] = false;
          return Role::Entry;
        }
        refuse(Problem::Lacks, item);
        return Role::Other;
      }
      case Role::Entry: {
        SafetensorsEntry& e = items.back();
        switch (field_) {
          case Field::Dtype:
            dtype_string_ = kind == Kind::String;
            if (dtype_string_) e.dtype = *text;  // copied, as keys are
            break;
          case Field::Shape:
            shape_array_ = kind == Kind::Array;
            if (shape_array_) return Role::Shape;
            break;
          case Field::Offsets:
            offsets_array_ = kind == Kind::Array;
            if (offsets_array_) return Role::Offsets;
            break;
          case Field::Other:
            break;
        }
        return Role::Other;
      }
      case Role::Shape:
        if (shape_ok_ && kind == Kind::Unsigned && number <= (uint64_t{1} << 40)) {
          items.back().shape.push_back(static_cast<int64_t>(number));
          elements_ *= static_cast<double>(number);
        } else {
          shape_ok_ = false;
        }
        return Role::Other;
      case Role::Offsets:
        if (offsets_count_ < 2) {
          offset_unsigned_[offsets_count_] = kind == Kind::Unsigned;
          (offsets_count_ == 0 ? items.back().begin : items.back().end) = number;
        }
        ++offsets_count_;
        return Role::Other;
      case Role::Metadata:
        if (kind == Kind::String) {
          metadata[metadata_key_] = std::move(*text);
        } else if (!metadata_bad_ || metadata_key_ < metadata_bad_key_) {
          metadata_bad_ = true;
          metadata_bad_key_ = metadata_key_;
          metadata_bad_type_ = type_name(kind);
        }
        return Role::Other;
      case Role::Other:
        return Role::Other;
    }
    return Role::Other;
  }

  void push(Role role, bool is_object) {
    if (role == Role::Metadata) metadata_bad_ = false;
    roles_.push_back(role);
    if (is_object && role != Role::Top) {
      if (objects_ == key_sets_.size()) key_sets_.emplace_back();
      key_sets_[objects_].clear();
      ++objects_;
    }
    object_.push_back(is_object);
  }

  void pop() {
    const Role role = roles_.back();
    if (object_.back() && role != Role::Top) --objects_;
    roles_.pop_back();
    object_.pop_back();
    if (role == Role::Entry) finish_entry();
    if (role == Role::Metadata && metadata_bad_ && refuse(Problem::MetadataValue, items.back())) {
      refusal.metadata_key = metadata_bad_key_;
      refusal.metadata_type = metadata_bad_type_;
    }
  }

  /// An entry's object has closed: the checks of the format, in order; the first that fails refuses it.
  void finish_entry() {
    SafetensorsEntry& e = items.back();
    Problem problem = Problem::None;
    if (!has_dtype_ || !has_shape_ || !has_offsets_) {
      problem = Problem::Lacks;
    } else if (!dtype_string_ || !shape_array_ || !offsets_array_ || offsets_count_ != 2) {
      problem = Problem::MalformedFields;
    } else if (safetensors_dtype_size(e.dtype) == 0) {
      problem = Problem::UnknownDtype;
    } else if (!shape_ok_) {
      problem = Problem::MalformedShape;
    } else if (!offset_unsigned_[0] || !offset_unsigned_[1]) {
      problem = Problem::MalformedOffsets;
    } else if (e.begin > e.end || static_cast<double>(e.end - e.begin) != elements_ * static_cast<double>(safetensors_dtype_size(e.dtype))) {
      // The byte count as a double: a shape such as (2**40, 2**40) needs more than 2**64 bytes.
      problem = Problem::Offsets;
    } else if (e.end > data_size_) {
      problem = Problem::PastEnd;
    }
    if (problem == Problem::None) {
      accepted.back() = 1;
    } else if (refuse(problem, e)) {
      refusal.elements = elements_;
    }
  }

  /// Keeps the refusal whose key sorts first (a repeated key is refused before any of them is thrown).
  bool refuse(Problem problem, const SafetensorsEntry& item) {
    if (refusal.problem != Problem::None && !(item.key < refusal.entry.key)) return false;
    refusal.problem = problem;
    refusal.entry = item;
    return true;
  }

  void throw_top_level_duplicate() const { static_cast<void>(key_order()); }

  const uint8_t* header_;
  size_t length_;
  uint64_t data_size_;
  std::vector<Role> roles_;       // one per open container
  std::vector<bool> object_;      // and whether it is an object
  std::vector<KeySet> key_sets_;  // one per open object below the top level (reused)
  size_t objects_ = 0;
  // The entry being read (entries do not nest).
  Field field_ = Field::Other;
  bool has_dtype_ = false, has_shape_ = false, has_offsets_ = false;
  bool dtype_string_ = false, shape_array_ = false, offsets_array_ = false, shape_ok_ = true;
  bool offset_unsigned_[2] = {false, false};
  size_t offsets_count_ = 0;
  double elements_ = 1;
  // __metadata__ being read.
  std::string metadata_key_;
  bool metadata_bad_ = false;
  std::string metadata_bad_key_, metadata_bad_type_;
};

/// Throws what a reader walking the keys in order would refuse first (see HeaderReader).
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
  HeaderReader reader(header, length, data_size);
  json::sax_parse(header, header + length, &reader);  // throws on a syntax error or a key given twice
  if (!reader.root_is_object) bad_header("its header is not a JSON object");
  std::vector<size_t> order = reader.key_order();  // refuses a top-level key given twice
  if (reader.refusal.problem != Problem::None) throw_refusal(reader.refusal, data_size);
  std::vector<SafetensorsEntry>& items = reader.items;
  std::vector<uint8_t>& accepted = reader.accepted;
  // Tensors lie back to back: sorted by offset, each starts where the one before ends, and the last
  // ends where the data section does. An overlap or a hole (bytes no tensor owns, which could hide a
  // second payload) is refused, as the reference loader does.
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
                             " to " + std::to_string(file_size) + ") belong to no tensor" + (previous ? " (after '" + previous->key + "')" : ""),
                         "The tensors of a safetensors file cover the data section to its end: the file is damaged or carries hidden data.");
  }
  // The tensors in key order, without __metadata__ (moved, not copied).
  h.entries.reserve(by_offset.size());
  for (size_t i : order)
    if (accepted[i]) h.entries.push_back(std::move(items[i]));
  std::vector<SafetensorsEntry>().swap(items);
  h.metadata = std::move(reader.metadata);
  return h;
}

}  // namespace attention_lab
