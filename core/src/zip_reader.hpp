// The zip container torch.save writes (torch >= 1.6), read strictly and by slices: the end of central
// directory record (and its zip64 records) from the file's tail, the central directory, then one local
// header per entry for where its bytes start. Stored entries only: torch never compresses them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attention_lab::zip {

/// How many bytes of the tail are read first for the end of central directory record: torch writes no
/// comment, so the record (22), the zip64 locator (20) and record (56) before it lie in them.
constexpr uint64_t kShortTailBytes = 1024;
/// How many when the record is not in those: the record, the longest comment (65535) and the locator.
constexpr uint64_t kTailBytes = 22 + 65535 + 20;
/// Most entries a torch.save zip may hold (a state dict's storages: GPT-2 XL has ~600; optimizer state
/// a few thousand); more are refused with checkpoint_limit before any is read.
constexpr uint64_t kMaxEntries = 100000;
/// Largest central directory read (100,000 entries of 46 bytes + names fit easily).
constexpr uint64_t kMaxCentralDirectory = 32ull * 1024 * 1024;

/// Where the central directory is; `zip64_record` > 0 when the record holding it is a zip64 one not
/// yet read (its 56 bytes at that offset).
struct Directory {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t entries = 0;
  uint64_t zip64_record = 0;
  bool zip64_pending = false;
};

/// One entry of the central directory: its name, its size (stored: the same compressed and not) and
/// where its local header starts.
struct Entry {
  std::string name;
  uint64_t size = 0;
  uint64_t local_header = 0;
};

/// Whether `tail` (the last `length` bytes of the file) holds an end of central directory record.
bool has_end_record(const uint8_t* tail, size_t length);

/// Reads the end of central directory record from `tail` (the last `length` bytes of a `file_size`
/// byte file). Throws AttentionError checkpoint_truncated when there is none (a zip cut off),
/// checkpoint_zip for a multi-disk archive or a directory outside the file, checkpoint_limit for
/// too many entries. A zip64 record inside the tail is read at once.
Directory read_end_record(const uint8_t* tail, size_t length, uint64_t file_size);

/// Reads a zip64 end of central directory record (56 bytes at dir.zip64_record) into `dir`.
void read_zip64_record(Directory& dir, const uint8_t* bytes, size_t length, uint64_t file_size);

/// Reads the central directory (`length` == dir.size bytes): every entry stored (checkpoint_zip_compressed
/// otherwise, naming it), named once, its bytes before the central directory (checkpoint_zip naming it).
std::vector<Entry> read_central_directory(const Directory& dir, const uint8_t* bytes, size_t length);

/// Bytes of an entry's local header to read: the fixed 30 and its name.
inline uint64_t local_header_length(const Entry& e) { return 30 + e.name.size(); }

/// Where the entry's bytes start, from its local header (local_header_length bytes): the header must
/// be a local header of the same name, stored, with the central directory's sizes, and its bytes must
/// end before the central directory at `directory_offset` (checkpoint_zip naming the entry otherwise).
uint64_t data_start(const Entry& e, const uint8_t* bytes, size_t length, uint64_t directory_offset);

}  // namespace attention_lab::zip
