// The pickle of a torch.save file (data.pkl), read by a small interpreter that knows only what a saved
// state dict needs: dicts and collections.OrderedDict, lists, tuples, strings, numbers, bools, None,
// torch._utils._rebuild_tensor_v2 / _rebuild_parameter and the typed storages by persistent id. Every
// other global is refused where the pickle names it, before anything could be called: nothing is run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attention_lab/tensor.hpp"

namespace attention_lab::pickle {

/// Largest data.pkl read (GPT-2's state dict pickles to ~30 KB).
constexpr uint64_t kMaxPickleBytes = 64ull * 1024 * 1024;
/// Most values one pickle may make (each int, string, container ...): a million-entry dict (two
/// million values) is refused with checkpoint_limit, and the interpreter never holds more than this.
constexpr size_t kMaxObjects = 500000;
/// Deepest nesting of dicts, lists and tuples around a tensor (a self-containing list is refused here).
constexpr int kMaxDepth = 32;

/// A storage as its persistent id names it: ('storage', torch.FloatStorage, '0', 'cpu', numel).
struct Storage {
  std::string key;    // the entry data/<key> of the zip
  std::string dtype;  // F32, F16, BF16, ... (safetensors' names)
  uint64_t numel = 0;
};

/// A tensor as _rebuild_tensor_v2 makes it: a view of `storage` (an index into StateDict::storages).
struct TensorView {
  size_t storage = 0;
  int64_t offset = 0;  // storage_offset, in elements
  Shape shape;
  std::vector<int64_t> stride;  // in elements, one per axis
};

/// Most string leaves kept (StateDict::strings), and the longest one kept, in bytes: a check file's
/// "call" is one short line; more or longer strings are skipped, as other values that are not tensors.
constexpr size_t kMaxStringLeaves = 64;
constexpr size_t kMaxStringLeafBytes = 4096;

/// The tensors of a state dict, their keys the dicts' keys joined with '.' (nested dicts such as
/// {"model_state_dict": {...}} flattened), in pickle order; the string leaves (the first
/// kMaxStringLeaves of at most kMaxStringLeafBytes each: a check file's "call") under keys joined the
/// same way; the top-level dict's numbers (ints and floats, as doubles: a check file's "seed"; the
/// first kMaxStringLeaves); other values are skipped.
struct StateDict {
  std::vector<Storage> storages;
  std::vector<std::pair<std::string, TensorView>> tensors;
  std::vector<std::pair<std::string, std::string>> strings;
  std::vector<std::pair<std::string, double>> numbers;
};

/// Bytes per element of a typed storage's name ("FloatStorage" -> 4), 0 for one not known; `dtype`
/// gets its safetensors name.
size_t storage_dtype(const std::string& name, std::string& dtype);

/// Interprets `length` bytes of data.pkl. Throws AttentionError: checkpoint_pickle (an opcode outside
/// the subset, a malformed or cut-off argument, a value of the wrong kind; names the opcode and byte),
/// checkpoint_pickle_global (a global not on the list, e.g. os.system; names it), checkpoint_pickled_module
/// (a whole pickled object such as __main__.GPTModel; the hint says to save its state_dict),
/// checkpoint_limit (past kMaxObjects, kMaxDepth), checkpoint_duplicate_key (two tensors, or two strings, under one key).
StateDict read_state_dict(const uint8_t* bytes, size_t length);

}  // namespace attention_lab::pickle
