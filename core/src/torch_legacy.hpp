// torch.save's legacy format (torch < 1.6, or _use_new_zipfile_serialization=False): five pickles back
// to back (the magic number, the protocol version 1001, sys_info, the object, the storages' keys), then
// each storage in the keys' order as an 8-byte element count and its raw bytes. The pickles alone tell
// every storage's file offset, so only the start of the file is read (in growing slices), never a storage.
#pragma once

#include <cstdint>
#include <vector>

#include "attention_lab/checkpoint.hpp"
#include "pickle_reader.hpp"

namespace attention_lab::legacy {

/// The name of the read holding the start of the file (the pickles), and the first slice read.
constexpr const char* kPickles = "legacy pickles";
constexpr uint64_t kFirstSlice = 64 * 1024;

/// Whether the file starts with the legacy magic number's pickle (protocol 2, LONG1 0x1950a86a20f9469cfc6c).
bool is_legacy(const uint8_t* first, size_t available);

/// A storage's raw bytes in the file: [start, start + bytes).
struct StorageBytes {
  uint64_t start = 0;
  uint64_t bytes = 0;
};

/// The state dict and, per StateDict::storages index, where its bytes lie.
struct LegacyFile {
  pickle::StateDict dict;
  std::vector<StorageBytes> storages;
};

/// The reads the next step needs: the first kFirstSlice bytes, then 8 times more (at most
/// pickle::kMaxPickleBytes) while the pickles run past what was read; empty once they end inside it.
std::vector<TorchSaveRead> legacy_reads(const std::vector<uint8_t>* pickles, uint64_t file_size);

/// Interprets the pickles (`pickles`: the start of the file) and lays the storages out after them.
/// Throws AttentionError: checkpoint_truncated (the file ends inside the pickles or its storages),
/// checkpoint_limit (pickles past kMaxPickleBytes), checkpoint_legacy_format (a big-endian file, a
/// storage view of torch < 0.4), checkpoint_storage (keys list and tensors disagree, bytes after the
/// last storage), and what pickle::read_state_dict throws.
LegacyFile read_legacy(const std::vector<uint8_t>& pickles, uint64_t file_size);

}  // namespace attention_lab::legacy
