// GPT-2 checkpoints in the safetensors format, mapped into the book's MultiHeadAttention.
// The header is parsed from its bytes alone; the caller then reads only the byte ranges the mapping
// needs (the page reads them with File.slice), so a 500 MB checkpoint is never loaded whole.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"

namespace attention_lab {

struct CheckpointLayout;  // checkpoint_layout.hpp
struct LayoutTensor;

/// One tensor of a safetensors file. `begin`/`end` are byte offsets into the data section
/// (which starts at 8 + header_length in the file).
struct SafetensorsEntry {
  std::string key;
  std::string dtype;  // F32, F16, BF16, F64, I64, ...
  Shape shape;
  uint64_t begin = 0;
  uint64_t end = 0;
  /// A torch.save tensor that is not contiguous (a saved `.t()` view): its strides in elements, one per
  /// axis, and [begin, end) the bytes from its first value to its last; empty for a row-major tensor.
  std::vector<int64_t> strides;
};

struct SafetensorsHeader {
  uint64_t header_length = 0;  // N: the JSON header occupies bytes [8, 8 + N)
  uint64_t file_size = 0;
  /// The tensors sorted by key (byte order), each key once: the order a JSON object reader walks them
  /// in, not the header's own order. `find` relies on it.
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
  /// A torch.save file's top-level numbers (ints and floats, as doubles: a check file's "seed"); none in a safetensors file.
  std::map<std::string, double> numbers;
  /// The entry of `key` (a binary search over `entries`), nullptr when the file has no such tensor.
  const SafetensorsEntry* find(const std::string& key) const;
  /// A torch.save file (open_torch_save): its entries' offsets are the file's own and may overlap (a
  /// storage shared by tied weights); there is no header in front of them.
  bool torch_save = false;
  uint64_t data_start() const { return torch_save ? 0 : 8 + header_length; }
};

/// Bytes per element of a safetensors dtype (F32 -> 4, BF16 -> 2, BOOL -> 1, ...); 0 for a dtype the format does not name.
size_t safetensors_dtype_size(const std::string& dtype);

/// Largest header accepted (the format's own reference limit is 100 MB).
constexpr uint64_t kMaxSafetensorsHeader = 100ull * 1000 * 1000;

/// Reads N from the first 8 bytes (little-endian). Throws AttentionError "checkpoint_truncated" when
/// fewer than 8 bytes exist or 8 + N exceeds file_size, "checkpoint_bad_header" when N is 0 or over the limit.
uint64_t safetensors_header_length(const uint8_t* first8, size_t available, uint64_t file_size);

/// Parses the JSON header (`header` holds exactly N bytes) as strictly as the safetensors format:
/// JSON starting with '{', padded at the end only with space, tab, CR or LF; unique keys at every
/// level; `__metadata__` (optional) maps strings to strings; tensors lie back to back and cover the data
/// section exactly. When a header breaks several rules, the one refused is the first a reader meets:
/// a syntax error or a repeated key where it is read, else the first offending key in key order,
/// else the first overlap or hole by offset. Throws AttentionError:
/// "checkpoint_bad_header" (not JSON, a NUL byte or other padding, wrong fields, unknown dtype; the
/// message names the byte position), "checkpoint_duplicate_key" (a key given twice; names it),
/// "checkpoint_bad_offsets" (offsets that disagree with dtype x shape, overlap, or leave bytes of the
/// data section to no tensor; names the keys and byte range), "checkpoint_truncated" (data past the end
/// of the file).
SafetensorsHeader parse_safetensors_header(const uint8_t* header, size_t length, uint64_t file_size);

/// What a checkpoint file is, told from its first bytes (not its name).
enum class CheckpointFormat { Safetensors, TorchZip, TorchLegacy };

/// "PK\x03\x04" (a zip: torch.save since torch 1.6), a pickle of torch's magic number first (TorchLegacy:
/// torch.save before 1.6, or with _use_new_zipfile_serialization=False), or anything else (safetensors: 8
/// bytes of header length, checked by safetensors_header_length).
CheckpointFormat checkpoint_format(const uint8_t* first, size_t available);

/// A byte range [begin, end) of the file (absolute offsets) that opening a torch.save file needs next.
struct TorchSaveRead {
  std::string name;  // "file start", "zip tail", "zip central directory", "local header archive/data/0", "archive/data.pkl", "legacy pickles", ...
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// Opening a torch.save file by slices, one step at a time: given the ranges read so far (by name),
/// the ranges the next step needs; empty when open_torch_save has all it needs. The steps: the first 8
/// bytes ("file start", telling a zip from the legacy format; a caller that read them may pass them
/// under that name), then for a zip the last 1 KB (the zip's end record; the last 64 KB when a comment
/// pushes it further), a zip64 record when there is one, the central directory, every entry's local
/// header, then data.pkl; for the legacy format the first 64 KB ("legacy pickles"), read again 8 times
/// longer (up to 64 MB) while its five pickles run past it. Never a storage's bytes (nor, in the legacy
/// format, the element count torch writes before each storage: it is not checked). Throws what
/// open_torch_save throws for the parts read so far.
std::vector<TorchSaveRead> torch_save_reads(const std::map<std::string, std::vector<uint8_t>>& read, uint64_t file_size);

/// The tensors of a torch.save state dict as safetensors entries with absolute file offsets
/// (data_start() 0): a tensor's bytes start at its storage's data + storage_offset x itemsize;
/// tensors sharing a storage overlap; a non-contiguous one keeps its strides (decode_tensor gathers).
/// Nested dicts ({"model_state_dict": {...}}) give keys joined with '.'. The pickle's string leaves
/// (a check file's "call"; bounded: pickle::kMaxStringLeaves of kMaxStringLeafBytes) go to `metadata`
/// under keys joined the same way, as a safetensors file's __metadata__; the top-level dict's ints and
/// floats (a check file's "seed") to `numbers`. Throws AttentionError:
/// checkpoint_truncated (a zip cut off, no end record; a legacy file ending inside its pickles or
/// storages), checkpoint_zip (records that are not torch's or offsets and sizes that disagree; names
/// the entry), checkpoint_zip_compressed, checkpoint_limit, checkpoint_pickle, checkpoint_pickle_global
/// (names the global; nothing is run), checkpoint_pickled_module (a whole pickled object:
/// torch.save(model)), checkpoint_storage (a tensor past its storage, a storage shorter than it claims
/// or missing; a legacy keys list that disagrees with the tensors, or bytes after the last storage),
/// checkpoint_duplicate_key, checkpoint_legacy_format (a legacy file saved big-endian, or holding a
/// storage view of torch < 0.4; the hint says to save it again with a newer torch).
SafetensorsHeader open_torch_save(const std::map<std::string, std::vector<uint8_t>>& read, uint64_t file_size);

struct CheckpointOptions {
  int64_t layer = 0;
  std::optional<int64_t> num_heads;
  std::optional<int64_t> context_length;
  /// Load into a module of this configuration instead of building one (must be MultiHeadAttention).
  std::optional<ModuleConfig> into;
  /// Bytes the loaded module and the loading may take (the raw bytes read, their float32 values and
  /// the module at once); a larger layer is refused before any tensor is read.
  double memory_budget_bytes = kDefaultMemoryBudgetBytes;
};

struct IgnoredKey {
  std::string key;
  std::string reason;
};

/// How many ignored keys a report lists with their reasons; the rest are only counted (a valid header
/// can hold a million keys, and a report of all of them took seconds to build and hand to JS).
constexpr int64_t kCheckpointIgnoredListed = 200;

struct CheckpointReport {
  std::vector<std::string> used;
  /// The first kCheckpointIgnoredListed keys not used, in the header's order, each with why.
  std::vector<IgnoredKey> ignored;
  /// How many keys were not used, listed or not.
  int64_t ignored_count = 0;
  /// The highest layer number with attention weights (h.{layer}.attn.c_attn.weight); -1 for none.
  int64_t max_layer = -1;
  std::vector<std::string> missing;
  std::vector<std::string> transposed;
  /// Where each derived setting came from: keys "num_heads", "context_length", "prefix", "d", and what
  /// the file holds: "layers" (e.g. "layers 0 to 11 (12 layers)"), "vocab" (when wte.weight is there).
  std::map<std::string, std::string> sources;
  /// The file's wte.weight has GPT-2's kGpt2Vocab rows: GPT-2's BPE tokenizer gives its token ids.
  bool gpt2_vocab = false;
  /// The layout the keys follow ("huggingface", "book"; CheckpointLayout::id) and its name ("Hugging Face
  /// GPT-2", "the book's GPTModel"), and how each tensor read maps into the book's MultiHeadAttention, one
  /// line each (layout_mapping_line).
  std::string layout, layout_name;
  std::vector<std::string> mapping;
};

/// What to read and how the module will be built; made from the header alone.
struct CheckpointPlan {
  ModuleConfig config;
  std::string prefix;                            // "" or "transformer." (Hugging Face's), any for the book's
  const CheckpointLayout* layout = nullptr;      // the layout the keys follow
  std::vector<SafetensorsEntry> needed;          // c_attn.weight, c_attn.bias (when present), c_proj.weight, c_proj.bias; the book's W_query ... out_proj
  std::vector<const LayoutTensor*> needed_rows;  // needed[i]'s layout row
  CheckpointReport report;
};

/// GPT-2 head count of a width (n_embd -> n_head, from kGpt2Sizes in gpt2_sizes.hpp); 0 when no GPT-2 is that wide.
int64_t gpt2_preset_heads(int64_t width);

/// Where a GPT-2 file's head count comes from, one rule for loadCheckpoint and the whole model: the
/// option when given, else the header's `__metadata__` "n_head" (a whole number written by the saver),
/// else GPT-2's own head count for width `d` (kGpt2Sizes). `source` says which, for the report.
struct HeadCount {
  int64_t n_head = 0;
  std::string source;
};
/// Throws AttentionError checkpoint_num_heads: no head count known for width d (not GPT-2's and the file
/// does not say it), a __metadata__ n_head that is not a whole number, or one that does not divide d.
HeadCount gpt2_head_count(const SafetensorsHeader& header, int64_t d, std::optional<int64_t> option);

/// The dtypes GPT-2's weights may have here (F32, F16, BF16): the whole model, its layer inputs and
/// generation read only these. Throws AttentionError checkpoint_dtype naming the key otherwise.
void require_gpt2_dtype(const SafetensorsEntry& entry);

/// Plans loading layer `options.layer`'s attention as MultiHeadAttention(d, d, n_ctx, 0.0, n_head,
/// qkv_bias=True). Throws AttentionError: checkpoint_missing_key, checkpoint_layer (no such layer),
/// checkpoint_shape (c_attn not (d, 3d) ...), checkpoint_num_heads (needed, or does not divide d),
/// checkpoint_context_length (cannot be found), too_large (loading over the memory budget) or any code of
/// check_config for the module the file gives (e.g. too_large for context_length 2**40 from wpe.weight's
/// rows: the same rule as create), checkpoint_config_mismatch (`into` disagrees: width, head
/// count, or qkv_bias=False while the file has q/k/v biases; the message names the keys).
CheckpointPlan plan_gpt2_attention(const SafetensorsHeader& header, const CheckpointOptions& options);

/// Float32 values of one entry from its raw little-endian bytes (F32, F16, BF16, F64 accepted), in
/// row-major order: an entry with strides is gathered from its bytes.
/// Throws AttentionError "checkpoint_dtype" for other dtypes, "checkpoint_truncated" on a short buffer.
std::vector<float> decode_tensor(const SafetensorsEntry& entry, const uint8_t* bytes, size_t length);

/// decode_tensor, then refuses NaN and infinity (they would spread through every later layer):
/// AttentionError non_finite_parameter naming "the file's <name>", the first index and the dtype.
std::vector<float> decode_weight(const SafetensorsEntry& entry, const std::string& name, const uint8_t* bytes, size_t length);

/// Throws AttentionError non_finite_stage when `values` (n floats, rows of `width`, one per token; the
/// logits: width 1, one per token id) hold NaN or infinity although every weight read was finite
/// (decode_weight refuses the rest): float32 overflowed at this stage of GPT-2. `block` is h.L's L, or -1
/// for the embedding and the head; `stage` (the error's slot) is the stage's id, `formula` what it computes.
void check_gpt2_stage(const float* values, size_t n, int64_t width, int64_t block, const std::string& stage, const std::string& formula);

/// Builds the module from the plan and the bytes of each needed entry (by key), each copied by its
/// layout row's rule: c_attn's last axis split into q, k, v (in that order), each transposed into
/// W_*.weight; the bias split likewise; c_proj.weight transposed into out_proj.weight; the book's
/// W_query ... out_proj as they are. Throws like decode_tensor.
AttentionModule load_gpt2_attention(const CheckpointPlan& plan, const std::map<std::string, std::vector<uint8_t>>& bytes);

/// A byte range of the file to read (absolute offsets) and what it holds.
struct ByteRead {
  std::string name;        // "wte.weight[50256]", "wpe.weight[0:5]", "h.0.ln_1.weight", ...
  SafetensorsEntry entry;  // the entry, with shape and begin/end narrowed to the rows read (relative to the data section)
};

/// The entry narrowed to rows [first, last) of its leading axis (byte range and shape).
SafetensorsEntry rows_of(const SafetensorsEntry& e, int64_t first, int64_t last);

}  // namespace attention_lab
