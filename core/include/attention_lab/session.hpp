// The core as a caller across a language boundary sees it (the WASM bindings, web/wasm/bindings.cpp):
// plain values in, plain structs out, and the objects that live between calls (modules, generators,
// parsed checkpoint headers, GPT-2 files) kept here under numeric handles. Every rule a call applies
// (which numbers are whole, the size limits, all-or-nothing loads, the absolute file offsets of a
// read) lives here or below, so the bindings only declare types. Errors are AttentionError, as
// everywhere in the core; the bindings turn them into data.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention_lab/call_parser.hpp"
#include "attention_lab/check_module.hpp"
#include "attention_lab/checkpoint.hpp"
#include "attention_lab/gpt2.hpp"
#include "attention_lab/gpt2_sizes.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/setup.hpp"
#include "attention_lab/stage_table.hpp"  // stage_display: the display kind the bindings give each stage
#include "attention_lab/torch_generator.hpp"
#include "attention_lab/weight_transfer.hpp"

namespace attention_lab {

/// A tensor as a caller gives it: sizes as numbers (checked here: whole, 0 or more, below 2**31, at
/// most kMaxTensorAxes) and the values row-major.
struct TensorInput {
  std::vector<double> shape;
  std::vector<float> data;
};
/// The tensor, or AttentionError tensor_shape / tensor_size naming `what`.
Tensor tensor_from_input(TensorInput t, const std::string& what);

/// A number given as a value (not as text) in a slot: an int when it is finite and whole (768), else a
/// float (0.1, nan), as Python would read the number written out.
SlotValue slot_value_of_number(double v);
/// A string given in a slot (a form field, a URL parameter): read as Python reads a literal in a call.
SlotValue slot_value_of_text(const std::string& text);

/// A parameter as a caller gives it (lab.fromParameters).
struct ParameterInput {
  std::string name;
  TensorInput tensor;
};

/// The seeds a caller gives as a number (manual_seed, run_module, seeded_tokens, sentence_tokens): the
/// whole numbers a double holds exactly, -(2**53 - 1) to 2**53 - 1 (2**53 + 1 would read as 2**53).
/// torch.manual_seed takes any int in [-2**63, 2**64); a negative seed wraps as 64-bit two's complement,
/// as there. The one home of the range: the facade hands it out as lab.seedRange, the page checks by it.
inline constexpr double kLowestSeed = -9007199254740991.0;
inline constexpr double kHighestSeed = 9007199254740991.0;

/// An optional option as a caller gives it, in the facts the core reads: whether it was given at all
/// (absent, null or undefined, takes the option's default), and whether it is a number (`value` holds
/// it) or true/false (`value` 1 or 0). Given as neither, it is text, refused by the option's rule.
struct NumberOption {
  bool given = false;
  bool number = false;
  bool boolean = false;
  double value = 0;

  static NumberOption of(double x) { return {true, true, false, x}; }
  static NumberOption of_bool(bool b) { return {true, false, true, b ? 1.0 : 0.0}; }
  static NumberOption text() { return {true, false, false, 0}; }
};

/// One entry of a copy plan ({W_query: {copy, transpose}}); `object` false when the entry was not one.
struct PlanEntryInput {
  std::string name;
  bool copy = false;
  bool transpose = false;
  bool object = true;
};

/// loadCheckpoint's options: {layer, num_heads, context_length, into: {className, config}}.
struct CheckpointOptionsInput {
  NumberOption layer, num_heads, context_length;
  std::string into_class;  // "" when there is no `into`
  SlotMap into_config;
};

/// A module just made and kept, with the facts the caller shows at once.
struct ModuleInfo {
  uint32_t handle = 0;  // 0 when a load replaced an existing module
  ModuleConfig config;
  std::vector<std::string> notes;          // fromParameters
  std::string code;                        // convert: the PyTorch lines
  std::optional<CheckpointReport> report;  // loadCheckpoint
  int64_t parameter_count = 0;
};

/// A KV cache as the caller sees it after each forward.
struct CacheState {
  uint32_t handle = 0;
  uint32_t module = 0;   // the module that made it (the only one it serves)
  double window = 0;     // 0: it grows; else the most entries it keeps
  double position = 0;   // tokens seen so far (the next token's position)
  double tokens = 0;     // entries held: keys (and values) per key/value head, or latent rows c_kv
  double bytes = 0;      // float32 keys and values held (a latent class: its latent c_kv alone)
  double bytes_mha = 0;  // what MultiHeadAttention of the same width would hold for as many tokens and batch rows
};

struct ForwardResult {
  Tensor output;
  std::optional<std::vector<Stage>> trace;
  std::vector<Diagnostic> warnings;
  std::optional<CacheState> cache;  // a cached forward: the cache after the chunk
};

/// One stage of a resident trace as the caller sees it at once: every fact of the stage but its
/// values, which stay in WASM memory (Session::trace_heatmap, trace_slice, trace_data read them).
struct TraceStage {
  std::string id, display, title, formula;
  std::vector<std::string> axes;
  Shape shape;
  TensorSummary summary;                       // of the whole tensor
  std::vector<TensorSummary> slice_summaries;  // of each slice over the last two axes, in row-major order of the leading axes
  double first = 0;                            // the value at index 0 (NaN when the tensor is empty): the mask's note reads it
};

/// A traced forward's stages kept in WASM memory under `handle` (the lazy trace), released with
/// Session::release(handle): what the caller draws is asked of it.
struct ResidentTrace {
  uint32_t handle = 0;
  std::vector<TraceStage> stages;
  double bytes = 0;  // the float32 values it holds: 4 x the stages' numel
};

/// A resident-trace run (Session::run_resident): run_module's result, its trace kept in WASM memory.
struct ResidentRun {
  ModuleConfig config;
  Tensor output;
  ResidentTrace trace;
  std::vector<Diagnostic> warnings;
};

/// A resident-trace forward (Session::forward_resident).
struct ResidentForward {
  Tensor output;
  ResidentTrace trace;
  std::vector<Diagnostic> warnings;
  std::optional<CacheState> cache;
};

/// One heatmap of a resident stage: its (rows, cols) slice max-pooled to (height, width) cells
/// (max_pool's rule: masked cells stay -inf).
struct TraceHeatmap {
  double rows = 0, cols = 0;     // the slice's size
  double height = 0, width = 0;  // the cells given
  std::vector<float> values;     // (height, width) row-major
};

/// A window of a resident stage (a table's visible part) and the sum of each of its rows over the
/// whole last axis.
struct TraceWindow {
  Tensor window;                 // (sizes...) row-major
  std::vector<double> row_sums;  // one per row of the window (each index of its leading axes)
};

/// A byte range of the file (absolute offsets) that the next step needs, by the name the step reads it by.
struct FileRead {
  std::string name;
  double begin = 0, end = 0;
};

struct CheckpointPlanResult {
  std::vector<FileRead> needed;  // name = the checkpoint key
  SlotMap config;
  CheckpointReport report;
};

struct OpenedFile {
  uint32_t handle = 0;
  double keys = 0;        // tensors in the header
  double data_start = 0;  // 8 + N
};

struct OpenedModel {
  uint32_t handle = 0;
  Gpt2Config config;
};

struct NextToken {
  double id = 0;
  double prob = 0;
};

/// The end of a whole-model run: the logits at the last position and the 5 most likely next tokens.
struct Gpt2Result {
  std::vector<float> last_logits;
  std::vector<NextToken> next_tokens;
};

/// What a step of model.run gave (Gpt2Run::Step): the piece it finished, as model.run's onProgress
/// reports it ({step, layer, done, total}), and what that piece gives the caller.
struct RunStepResult {
  std::string step;             // "embedding", "block", "input", "logits"; "" for a step not reported (ln_f, a logits chunk before the last)
  std::optional<double> layer;  // "block" and "input": the block
  double done = 0, total = 0;   // pieces reported so far, of the embedding + the blocks + the end
  std::optional<Gpt2Run::Layer> block;
  std::optional<Tensor> input;       // "input": ln_1 of the stream entering block `layer`, (1, num_tokens, n_embd)
  std::optional<Gpt2Result> logits;  // "logits"
  bool finished = false;             // the run ended with this step ("input" or "logits")
};

/// model.generate's options as a caller gives them (each as a NumberOption: given, number or true/false).
struct GenerateOptionsInput {
  NumberOption max_new_tokens, temperature, top_k, eos_id, cache, resident, window, attention;
};

/// A generation just started: whether the weights stay resident, and the estimate it was checked by.
struct GenerateStart {
  bool resident = false;
  double estimate_bytes = 0;
};

/// One generated token, as the caller reads it.
struct GeneratedToken {
  double token = 0, prob = 0;
  std::vector<NextToken> top;  // the 5 most likely of the distribution it was picked from
  double cache_tokens = 0, cache_bytes = 0;
  std::optional<Tensor> attention;  // with {attention: true}: (n_layer, n_head, keys) the token's attn_weights rows (Gpt2Step::attention)
};

/// What a generation step gave: a token when one is out; finished (maxNewTokens reached, or eosId
/// picked: eos, not appended).
struct GenerateStepResult {
  bool finished = false, eos = false;
  std::optional<GeneratedToken> token;
};

/// The objects that live between calls, by handle (0 is never a handle), and every call on them.
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // ---- facts and configs (no handles) ----
  std::vector<ClassSpec> classes() const;
  std::vector<Gpt2Size> gpt2_sizes() const;
  /// {kLowestSeed, kHighestSeed}: the seeds the calls taking one accept (lab.seedRange).
  std::vector<double> seed_range() const;
  /// Whether this build's products are relaxed-SIMD multiply-adds (ops::kernel_fuses_multiply_add:
  /// true only in attention_core_fma.wasm); the facade's lab.kernel.
  bool kernel_fuses_multiply_add() const;
  /// Runs every later forward's products (modules, GPT-2 runs and generations started after it) on a
  /// pool of `threads` threads (1: none), replacing the earlier pool; returns the pool's real size
  /// (fewer when the system starts fewer threads: an Emscripten build whose Web Worker pool is smaller).
  /// The results have the same bits at any size. Throws AttentionError bad_threads unless threads is
  /// a whole number from 1 to ThreadPool::kMaxThreads.
  double set_threads(double threads);
  /// The pool's size: the threads a forward runs on (1 without a pool); the facade's lab.threads.
  double threads() const;
  ParsedCall parse_call(const std::string& text) const;
  std::vector<Diagnostic> check(const std::string& class_name, const SlotMap& config, const std::optional<std::vector<double>>& input_shape,
                                const std::optional<bool>& training) const;
  Setup setup(const std::string& class_name, const SlotMap& config, const std::optional<std::vector<double>>& input_shape, const std::optional<bool>& training, bool trace) const;
  Setup describe(const std::string& class_name, const SlotMap& config) const;
  RunResult run_module(const std::string& class_name, const SlotMap& config, TensorInput x, double seed, bool training, bool trace) const;
  MemoryEstimate estimate_bytes(const std::string& class_name, const SlotMap& config, const std::optional<std::vector<double>>& input_shape, bool trace) const;
  /// run_module with the trace kept in WASM memory (ResidentTrace), checked against the same budget.
  ResidentRun run_resident(const std::string& class_name, const SlotMap& config, TensorInput x, double seed, bool training);
  /// The estimate of a resident-trace run (plan_resident_bytes): the trace stays in the heap and only
  /// the output and the stages' facts are copied out.
  MemoryEstimate estimate_resident_bytes(const std::string& class_name, const SlotMap& config, const std::optional<std::vector<double>>& input_shape) const;
  /// Takes from the heap now what a run of this setup will need (estimate_resident_bytes when
  /// `resident`, else estimate_bytes with `trace`), writes one byte of every 4 KiB page of it and gives
  /// it back: the heap has grown and its pages are in memory, so the run does not pay for that (GPT-2
  /// small's traced run on 1024 tokens: ~0.15 s of page faults on its first run). Returns the estimate
  /// taken. Throws AttentionError: the config's or the shape's errors (as the estimates), too_large
  /// (over the budget), out_of_memory (the heap cannot grow that far).
  MemoryEstimate reserve_memory(const std::string& class_name, const SlotMap& config, const std::optional<std::vector<double>>& input_shape, bool resident, bool trace);

  // ---- resident traces (lazy traces); stage: its id; leading: one index per axis before the last two ----
  /// The (b, head) slice of `stage` max-pooled to at most (height, width) cells (each a whole number
  /// from 1 to 4096; larger than the slice: the slice's own size). AttentionError disposed (a released
  /// trace), trace_stage (no stage of that id), trace_range (an index out of its axis, a bad size).
  TraceHeatmap trace_heatmap(uint32_t trace, const std::string& stage, const std::vector<double>& leading, double height, double width) const;
  /// The window of `stage` at `offsets` of `sizes` (one of each per axis). Errors as trace_heatmap.
  TraceWindow trace_window(uint32_t trace, const std::string& stage, const std::vector<double>& offsets, const std::vector<double>& sizes) const;
  /// A copy of the whole stage (an export). Errors as trace_heatmap.
  Tensor trace_data(uint32_t trace, const std::string& stage) const;
  /// Bytes the resident traces hold now (their float32 values).
  double trace_bytes_in_use() const;
  ModuleConfig equivalent_config(const std::string& class_name, const SlotMap& config) const;
  std::string copy_code(const std::string& from_class, const std::string& to_class, const std::vector<PlanEntryInput>& plan) const;
  Tensor book_tokens() const;
  Tensor seeded_tokens(double num_tokens, double d_in, double seed) const;
  Tensor sentence_tokens(const std::vector<std::string>& words, double d_in, double seed) const;

  // ---- generators ----
  uint32_t manual_seed(double seed);
  std::vector<uint32_t> generator_state(uint32_t generator) const;
  Tensor rand(uint32_t generator, const std::vector<double>& shape);
  Tensor dropout(uint32_t generator, TensorInput x, double p);

  // ---- modules ----
  /// The module, its parameters drawn from `generator` as the constructor does after
  /// torch.manual_seed; its training forwards then draw their dropout masks on that same generator
  /// when given none (use_generator).
  ModuleInfo create(const std::string& class_name, const SlotMap& config, uint32_t generator);
  /// Makes `generator` the one `module`'s training forwards draw their dropout masks on when forward
  /// is given none (0), as PyTorch's default generator. The module shares it: releasing the
  /// generator's handle later leaves the stream to the module, whose forwards go on drawing from it.
  /// AttentionError disposed (either handle released).
  bool use_generator(uint32_t module, uint32_t generator);
  ModuleInfo from_parameters(const std::string& class_name, const SlotMap& config, std::vector<ParameterInput> parameters);
  std::vector<NamedTensor> parameters(uint32_t module) const;
  bool set_parameter(uint32_t module, const std::string& name, TensorInput t);
  /// `generator`: 0 for the module's own (use_generator; none: dropout in training is refused with
  /// generator_missing). `cache`: 0, or a cache of new_cache for this module (a cached forward of the next chunk).
  ForwardResult forward(uint32_t module, TensorInput x, bool training, uint32_t generator, bool trace, uint32_t cache);
  /// forward with the trace kept in WASM memory (a ResidentTrace: stage facts at once, values on
  /// request). The output bits are forward's, traced or not.
  ResidentForward forward_resident(uint32_t module, TensorInput x, bool training, uint32_t generator, uint32_t cache);
  /// The shares of module's heads a forward splits into over at most `parts` plain Workers (head_shares
  /// of its plan: whole key/value groups; one share of every head where it cannot split). AttentionError
  /// disposed, bad_options (parts not a whole number from 1 to 64).
  std::vector<HeadShare> head_shares(uint32_t module, double parts, bool training) const;
  /// An eval-or-dropout-free forward of one share of the heads (ForwardOptions::share): its columns of
  /// heads_concat, (b, num_tokens, count * head_dim). On one thread (what a plain Worker has). Errors of
  /// forward, and head_share.
  /// The share is query heads [first, first + count).
  Tensor forward_share(uint32_t module, TensorInput x, double first, double count, bool training) const;
  /// The output of the shares joined (AttentionModule::project_heads): forward's output and warnings,
  /// bit for bit. `parts`: every share's forward_share output, in head order, joined here along the last
  /// axis into heads_concat (b, num_tokens, num_heads * head_dim). AttentionError head_share (slot
  /// heads_concat) when a part's leading axes differ from x's or the widths do not add up.
  ForwardResult project_heads(uint32_t module, TensorInput x, std::vector<TensorInput> parts, bool training) const;
  /// A number that changes whenever the module's parameters may have changed (set_parameter,
  /// copy_weights into it, load_checkpoint into it): a Worker holding a copy of them copies again.
  double module_revision(uint32_t module) const;
  /// An empty KV cache for `module` (AttentionError cache_unsupported for a class without a causal
  /// mask over its own keys); `window`: absent for a cache that grows, else the most entries it keeps
  /// (a whole number from 1: cache_window).
  CacheState new_cache(uint32_t module, const NumberOption& window);
  /// Empties the cache (the book's reset_cache): the next chunk is at position 0.
  CacheState reset_cache(uint32_t cache);
  ModuleInfo convert(uint32_t module, const std::string& layout);
  std::vector<StageDiff> compare(uint32_t a, uint32_t b, TensorInput x) const;
  /// lab.checkModule: a reader's module (its constructor `call` as written, its state dict, x, its
  /// output and any of its stages) against the book's forward and the catalogue (check_module.hpp).
  /// `seed`: null for eval mode, else the torch.manual_seed(seed) called right before the forward
  /// (training mode), refused outside [kLowestSeed, kHighestSeed] with AttentionError seed (slot "seed").
  /// The call's first error diagnostic is thrown as AttentionError (its code and slot), then
  /// check_module's (tensor_shape / tensor_size of a tensor given, naming it).
  CheckReport check_module(const std::string& call, std::vector<ParameterInput> state_dict, TensorInput x, TensorInput output, std::vector<ParameterInput> stages,
                           std::optional<double> seed) const;
  /// All or nothing: `to` changes only when the copy succeeded.
  CopyReport copy_weights(uint32_t from, uint32_t to, const std::vector<PlanEntryInput>& plan, std::optional<TensorInput> tokens);

  // ---- checkpoint files ----
  double checkpoint_header_length(const std::vector<uint8_t>& first8, double file_size) const;
  OpenedFile checkpoint_open(const std::vector<uint8_t>& header, double file_size);
  /// "safetensors" or "torch" (a zip: torch.save since 1.6, or torch.save's legacy pre-1.6 format), from
  /// the file's first bytes, not its name (checkpoint_format).
  std::string checkpoint_format(const std::vector<uint8_t>& first, double file_size) const;
  /// Opening a torch.save file step by step: the ranges to read next given those read so far (by name;
  /// empty: torch_save_open can run). Errors of torch_save_reads.
  std::vector<FileRead> torch_save_reads(const std::map<std::string, std::vector<uint8_t>>& read, double file_size) const;
  /// The torch.save file's tensors as a parsed header under a handle, as checkpoint_open's (open_torch_save).
  OpenedFile torch_save_open(const std::map<std::string, std::vector<uint8_t>>& read, double file_size);
  /// lab.checkModule(file): the byte ranges of a check file's tensors (name = key), once its keys, its
  /// call, its seed (the seed rule, as check_module's) and the memory estimate passed (plan_check_file,
  /// checked_call, check_file_fits).
  std::vector<FileRead> check_file_reads(uint32_t file) const;
  /// The check of a check file, given the bytes of check_file_reads: check_module's report and errors.
  CheckReport check_file(uint32_t file, const std::map<std::string, std::vector<uint8_t>>& buffers) const;
  CheckpointPlanResult plan_checkpoint(uint32_t file, const CheckpointOptionsInput& options) const;
  /// Into a new module (into = 0) or, when every check passed, replacing module `into`.
  ModuleInfo load_checkpoint(uint32_t file, const CheckpointOptionsInput& options, const std::map<std::string, std::vector<uint8_t>>& buffers, uint32_t into);
  std::vector<FileRead> plan_block_input(uint32_t file, const std::vector<double>& ids, const NumberOption& layer) const;
  Tensor block_input(uint32_t file, const std::vector<double>& ids, const NumberOption& layer, const std::map<std::string, std::vector<uint8_t>>& buffers) const;

  // ---- GPT-2, the whole model: a run or a generation, one step per call ----
  OpenedModel gpt2_open(uint32_t file, const NumberOption& num_heads);
  /// `attention`: "full" or "thumbnails" (gpt2_attention_of; run_option otherwise).
  double gpt2_estimate(uint32_t model, double num_tokens, const std::string& attention) const;
  /// Starts model.run (ends any run or generation in progress) on `ids`, checked against `budget` (0:
  /// the default). `input_of` given: the run ends at the input of that block's attention
  /// (model.attentionInput) instead of the logits. Errors of Gpt2Run's constructor.
  bool gpt2_run(uint32_t model, const std::vector<double>& ids, const std::string& attention, const NumberOption& input_of, double budget);
  /// Runs the run's next step on the bytes of gpt2_reads; ends the run when it is finished.
  RunStepResult gpt2_run_step(uint32_t model, const std::map<std::string, std::vector<uint8_t>>& buffers);
  /// Starts model.generate (ends any run or generation in progress): the rules of every option, the
  /// estimate against `budget` (0: the default), and whether the weights stay resident.
  GenerateStart gpt2_generate(uint32_t model, const std::vector<double>& ids, const GenerateOptionsInput& options, double budget);
  /// The byte ranges the next step of the run or generation in progress needs (none when a
  /// generation has it resident). AttentionError not_in_progress when neither is.
  std::vector<FileRead> gpt2_reads(uint32_t model) const;
  /// Runs the generation until a token is out or more bytes are needed; `generator` (0: none) draws
  /// when the temperature is above 0. Ends the generation when it is finished.
  GenerateStepResult gpt2_generate_step(uint32_t model, uint32_t generator, const std::map<std::string, std::vector<uint8_t>>& buffers);
  /// Ends the run or generation in progress, if any (a disposed model: nothing to end).
  bool gpt2_stop(uint32_t model);

  // ---- lifetimes ----
  bool release(uint32_t handle);  // any kind; unknown handles are ignored
  double handles_in_use() const;

 private:
  struct Gpt2File;
  struct Objects;
  std::unique_ptr<Objects> objects_;
  // run_module and forward, with `views`: the trace's stage views for a resident trace (ForwardOptions::stage_views).
  RunResult run_with(const std::string& class_name, const SlotMap& config, TensorInput x, double seed, bool training, bool trace, bool views) const;
  ForwardResult forward_with(uint32_t module, TensorInput x, bool training, uint32_t generator, bool trace, uint32_t cache, bool views);
};

}  // namespace attention_lab
