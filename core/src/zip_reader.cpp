// The zip container of torch.save files: see zip_reader.hpp. Every field is read from bytes the caller
// handed in, bounds first; nothing is allocated from a size the file claims before it is checked.
#include "zip_reader.hpp"

#include <set>

#include "attention_lab/tensor.hpp"

namespace attention_lab::zip {

namespace {

constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kLocalSignature = 0x04034b50;

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

const char* kResave = "Save it again with torch.save(model.state_dict(), \"model.pth\") (torch 1.6 or newer), or download it again.";

[[noreturn]] void bad_zip(const std::string& message) { throw AttentionError("checkpoint_zip", "", message, kResave); }

void check_directory(const Directory& d, uint64_t end_record, uint64_t file_size) {
  if (d.entries > kMaxEntries)
    throw AttentionError("checkpoint_limit", "", "the zip claims " + std::to_string(d.entries) + " entries; this reader takes at most " + std::to_string(kMaxEntries),
                         "A state dict has one entry per storage (GPT-2 XL: about 600): save only the model's state_dict.");
  if (d.size > kMaxCentralDirectory)
    throw AttentionError("checkpoint_limit", "",
                         "the zip's central directory claims " + std::to_string(d.size) + " bytes; this reader takes at most " + std::to_string(kMaxCentralDirectory),
                         "Save only the model's state_dict with torch.save.");
  if (d.offset > end_record || d.size > end_record - d.offset)
    bad_zip("the central directory (bytes " + std::to_string(d.offset) + " to " + std::to_string(d.offset + d.size) + ") does not end before its end record at byte " +
            std::to_string(end_record) + " of " + std::to_string(file_size));
}

/// Where the end record is in `tail`, backwards from the end: the one whose comment ends exactly at
/// the end of the file; `length` when there is none.
size_t find_end_record(const uint8_t* tail, size_t length) {
  for (size_t i = length >= 22 ? length - 22 + 1 : 0; i-- > 0;)
    if (le(tail + i, 4) == kEndSignature && i + 22 + le(tail + i + 20, 2) == length) return i;
  return length;
}

}  // namespace

bool has_end_record(const uint8_t* tail, size_t length) { return find_end_record(tail, length) != length; }

Directory read_end_record(const uint8_t* tail, size_t length, uint64_t file_size) {
  if (length > file_size) bad_zip("the tail read is longer than the file");
  const uint64_t tail_start = file_size - length;
  if (const size_t i = find_end_record(tail, length); i != length) {
    if (le(tail + i + 4, 2) != 0 || le(tail + i + 6, 2) != 0) bad_zip("the zip spans several disks; torch.save writes one file");
    Directory d;
    d.entries = le(tail + i + 10, 2);
    d.size = le(tail + i + 12, 4);
    d.offset = le(tail + i + 16, 4);
    const uint64_t end_record = tail_start + i;
    const bool zip64 = d.entries == 0xFFFF || d.size == 0xFFFFFFFFu || d.offset == 0xFFFFFFFFu;
    if (zip64) {
      if (i < 20 || le(tail + i - 20, 4) != kZip64LocatorSignature) bad_zip("the end record says zip64 but no zip64 locator precedes it");
      d.zip64_record = le(tail + i - 20 + 8, 8);
      if (d.zip64_record > end_record - 20 || end_record - 20 - d.zip64_record < 56)
        bad_zip("the zip64 locator points to byte " + std::to_string(d.zip64_record) + ", not before it");
      d.zip64_pending = true;
      if (d.zip64_record >= tail_start) read_zip64_record(d, tail + (d.zip64_record - tail_start), 56, file_size);
      return d;
    }
    check_directory(d, end_record, file_size);
    return d;
  }
  throw AttentionError("checkpoint_truncated", "",
                       "no zip end record in the last " + std::to_string(length) + " bytes of the file (" + std::to_string(file_size) + " bytes): it is cut off",
                       "The file starts like a torch.save zip but its end is missing: download or save it again.");
}

void read_zip64_record(Directory& d, const uint8_t* bytes, size_t length, uint64_t file_size) {
  if (length < 56 || le(bytes, 4) != kZip64EndSignature) bad_zip("no zip64 end record at byte " + std::to_string(d.zip64_record));
  if (le(bytes + 16, 4) != 0 || le(bytes + 20, 4) != 0) bad_zip("the zip spans several disks; torch.save writes one file");
  d.entries = le(bytes + 32, 8);
  d.size = le(bytes + 40, 8);
  d.offset = le(bytes + 48, 8);
  d.zip64_pending = false;
  check_directory(d, d.zip64_record, file_size);
}

namespace {
/// The zip64 extended information extra field's values for the fields saturated at 0xFFFFFFFF.
void read_zip64_extra(Entry& e, uint64_t& compressed, const uint8_t* extra, size_t length) {
  for (size_t at = 0; at + 4 <= length;) {
    const uint64_t id = le(extra + at, 2), size = le(extra + at + 2, 2);
    if (at + 4 + size > length) break;
    if (id == 0x0001) {
      const uint8_t* p = extra + at + 4;
      size_t left = size;
      auto take = [&](uint64_t& field) {
        if (field != 0xFFFFFFFFu) return;
        if (left < 8) bad_zip("entry '" + e.name + "': its zip64 extra field is too short");
        field = le(p, 8);
        p += 8;
        left -= 8;
      };
      take(e.size);
      take(compressed);
      take(e.local_header);
      return;
    }
    at += 4 + size;
  }
}

/// One central directory record at bytes[at..]: the entry, and the record's length.
Entry read_central_entry(const uint8_t* bytes, size_t length, size_t& at, uint64_t directory_offset) {
  if (length - at < 46 || le(bytes + at, 4) != kCentralSignature) bad_zip("central directory record at byte " + std::to_string(directory_offset + at) + " is not one");
  const uint8_t* r = bytes + at;
  const uint64_t flags = le(r + 8, 2), method = le(r + 10, 2), name_len = le(r + 28, 2), extra_len = le(r + 30, 2), comment_len = le(r + 32, 2);
  if (length - at - 46 < name_len + extra_len + comment_len) bad_zip("central directory record at byte " + std::to_string(directory_offset + at) + " runs past the directory");
  Entry e;
  e.name.assign(reinterpret_cast<const char*>(r + 46), name_len);
  uint64_t compressed = le(r + 20, 4);
  e.size = le(r + 24, 4);
  e.local_header = le(r + 42, 4);
  read_zip64_extra(e, compressed, r + 46 + name_len, extra_len);
  if ((flags & 1) != 0) throw AttentionError("checkpoint_zip_compressed", e.name, "entry '" + e.name + "' is encrypted", kResave);
  if (method != 0 || compressed != e.size)
    throw AttentionError("checkpoint_zip_compressed", e.name,
                         "entry '" + e.name + "' is compressed (method " + std::to_string(method) + "); torch.save stores its entries uncompressed",
                         "Do not zip or recompress the file: save it again with torch.save(model.state_dict(), \"model.pth\").");
  if (e.local_header > directory_offset || directory_offset - e.local_header < 30 + name_len || directory_offset - e.local_header - 30 - name_len < e.size)
    bad_zip("entry '" + e.name + "' claims " + std::to_string(e.size) + " bytes from byte " + std::to_string(e.local_header) + ", past the central directory at byte " +
            std::to_string(directory_offset));
  at += 46 + name_len + extra_len + comment_len;
  return e;
}
}  // namespace

std::vector<Entry> read_central_directory(const Directory& d, const uint8_t* bytes, size_t length) {
  if (length != d.size) bad_zip("read " + std::to_string(length) + " bytes of the central directory, expected " + std::to_string(d.size));
  std::vector<Entry> out;
  std::set<std::string> names;
  size_t at = 0;
  for (uint64_t i = 0; i < d.entries; ++i) {
    out.push_back(read_central_entry(bytes, length, at, d.offset));
    if (!names.insert(out.back().name).second) bad_zip("entry '" + out.back().name + "' is named twice");
  }
  if (at != length) bad_zip("the central directory holds more than the " + std::to_string(d.entries) + " entries its end record counts");
  return out;
}

uint64_t data_start(const Entry& e, const uint8_t* bytes, size_t length, uint64_t directory_offset) {
  if (length != local_header_length(e) || le(bytes, 4) != kLocalSignature) bad_zip("entry '" + e.name + "': no local header at byte " + std::to_string(e.local_header));
  const uint64_t flags = le(bytes + 6, 2), method = le(bytes + 8, 2), compressed = le(bytes + 18, 4), size = le(bytes + 22, 4);
  const uint64_t name_len = le(bytes + 26, 2), extra_len = le(bytes + 28, 2);
  if (method != 0)
    throw AttentionError("checkpoint_zip_compressed", e.name, "entry '" + e.name + "' is compressed (method " + std::to_string(method) + ") in its local header", kResave);
  if (name_len != e.name.size() || std::string(reinterpret_cast<const char*>(bytes + 30), name_len) != e.name)
    bad_zip("entry '" + e.name + "': its local header names another entry");
  // Sizes saturated (zip64) or deferred to a data descriptor (flag bit 3) are the central directory's.
  const bool deferred = (flags & 8) != 0 && compressed == 0 && size == 0;
  if (!deferred && size != 0xFFFFFFFFu && (size != e.size || compressed != e.size))
    bad_zip("entry '" + e.name + "': its local header says " + std::to_string(size) + " bytes, the central directory " + std::to_string(e.size));
  const uint64_t start = e.local_header + 30 + name_len + extra_len;
  if (start > directory_offset || directory_offset - start < e.size)
    bad_zip("entry '" + e.name + "': its " + std::to_string(e.size) + " bytes from byte " + std::to_string(start) + " run past the central directory at byte " +
            std::to_string(directory_offset));
  return start;
}

}  // namespace attention_lab::zip
