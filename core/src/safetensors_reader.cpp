// The safetensors header's JSON read by nlohmann's SAX parser straight into the entries (no JSON
// document), each checked as strictly as the format when its object closes. The WASM build compiles
// this file for speed (a header can hold a million keys), as it does safetensors_header.cpp.
#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <unordered_set>

#include "attention_lab/checkpoint.hpp"
#include "safetensors_reader.hpp"

namespace attention_lab::safetensors {

namespace {

using nlohmann::json;

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

}  // namespace

HeaderItems read_header_json(const uint8_t* header, size_t length, uint64_t data_size) {
  HeaderReader reader(header, length, data_size);
  json::sax_parse(header, header + length, &reader);  // throws on a syntax error or a key given twice
  if (!reader.root_is_object) bad_header("its header is not a JSON object");
  HeaderItems out;
  out.order = reader.key_order();  // refuses a top-level key given twice
  out.items = std::move(reader.items);
  out.accepted = std::move(reader.accepted);
  out.metadata = std::move(reader.metadata);
  out.refusal = std::move(reader.refusal);
  return out;
}

}  // namespace attention_lab::safetensors
