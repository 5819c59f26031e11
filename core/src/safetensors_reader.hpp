// What the safetensors header's two files share: the reader of its JSON (safetensors_reader.cpp, the
// SAX events straight into the entries) hands the header's checks (safetensors_header.cpp) every
// top-level item with what, if anything, the format refuses in it; both refuse with bad_header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attention_lab/checkpoint.hpp"

namespace attention_lab::safetensors {

/// Refuses the file as not a readable safetensors file (checkpoint_bad_header), saying why.
[[noreturn]] void bad_header(const std::string& message);
/// Refuses the header at byte `at` (0-based within the header; the file byte is 8 + at), showing it.
[[noreturn]] void bad_header_at(size_t at, const uint8_t* header, size_t length, const std::string& message);

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

/// The header's JSON as read (read_header_json): every top-level key in header order (__metadata__
/// and refused ones too), which of them are tensors that passed every check, the items in key order,
/// the metadata, and the refused item whose key sorts first.
struct HeaderItems {
  std::vector<SafetensorsEntry> items;
  std::vector<uint8_t> accepted;  // per item: 1 when it is a tensor that passed every check
  std::vector<size_t> order;      // the items in key order (byte order)
  std::map<std::string, std::string> metadata;
  Refusal refusal;
};

/// Reads the `length` bytes of JSON at `header` (a data section of `data_size` bytes behind it):
/// throws on a syntax error (checkpoint_bad_header, naming the byte), a key given twice at any level
/// (checkpoint_duplicate_key, the first repeat in the header) and a root that is not an object; what
/// else the format refuses is returned in `refusal`, for the caller to throw.
HeaderItems read_header_json(const uint8_t* header, size_t length, uint64_t data_size);

}  // namespace attention_lab::safetensors
