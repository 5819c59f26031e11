// An attention module of any class of the recipe list (class_specs(): the book's chapter 3 classes,
// its bonus rewrites, its chapter 4 bonus classes), built seeded or from given weights, and its forward
// with a stage-by-stage trace.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/plan.hpp"
#include "attention_lab/schema.hpp"
#include "attention_lab/tensor.hpp"
#include "attention_lab/thread_pool.hpp"
#include "attention_lab/torch_generator.hpp"
#include "attention_lab/validator.hpp"

namespace attention_lab {

/// Where a stage's values are. A resident trace (ForwardOptions::stage_views) keeps the masked scores
/// and, when no dropout acted, the dropout stage as views of other (b, H, T, Tk) stages, read when
/// asked (stage_rows): 96 MB fewer at GPT-2 small's 1,024 tokens.
enum class StageView {
  Own,            // in the stage's tensor
  Same,           // those of stage `source` (attn_weights_dropout when no dropout acted: the weights themselves)
  MaskedFill,     // stage `source` with -inf where the trace's mask stage holds 1: attn_scores.masked_fill(mask.bool(), -torch.inf), ch03
  MaskedFillMin,  // the same with torch.finfo(float32).min in place of -inf (a recipe's mask_fill_min)
};

/// One stage of a forward pass. `axes` names each axis of `shape`
/// (e.g. {"b", "num_heads", "num_tokens", "head_dim"}).
struct Stage {
  std::string id;       // input, queries, keys, values, attn_scores, mask, attn_scores_masked, attn_weights,
                        // attn_weights_dropout, context_vec, heads_concat, out_proj, output
  std::string display;  // how a page shows it (stage_display: "vectors", "scores", "weights", "mask")
  std::string title;
  std::string formula;
  std::vector<std::string> axes;
  Tensor tensor;                               // its values (Own); empty for a view: stage_rows and stage_tensor read them
  TensorSummary summary;                       // of the whole tensor, computed where it is made (pages need not scan 10^7 values)
  std::vector<TensorSummary> slice_summaries;  // of each slice over the last two axes (each (b, head))
  StageView view = StageView::Own;
  std::string source;  // a view's source stage id (a stage with its own values, earlier in the trace)
  Shape view_shape;    // a view's shape (its source's); unused by a stage with its own values

  /// The stage's shape: its tensor's, or a view's own (view_shape).
  const Shape& shape() const { return view == StageView::Own ? tensor.shape : view_shape; }
  /// Its own values (empty for a view).
  const std::vector<float>& data() const { return tensor.data; }
};

/// Rows [row, row + count) of stage `s` of `trace` (row = index over every axis but the last, so row
/// r starts at flat offset r * shape.back()), row-major: a pointer into its own values, or for a view
/// the rows made in `scratch` from its source (and the trace's mask). Valid while `trace` and
/// `scratch` are. Throws std::invalid_argument when a view's source (or the mask) is missing.
const float* stage_rows(const std::vector<Stage>& trace, const Stage& s, int64_t row, int64_t count, std::vector<float>& scratch);
/// Stage `s`'s whole tensor (a copy; a view's made from its source).
Tensor stage_tensor(const std::vector<Stage>& trace, const Stage& s);

/// One parameter of a configuration: its PyTorch name and shape, and the recipe entry it comes from.
struct ParameterSpec {
  std::string name;  // PyTorch name: "W_query" (v1), "W_query.weight", "heads.0.W_key.bias", "qkv.weight"
  Shape shape;
  const ParamRecipe* recipe = nullptr;
  int64_t head = -1;  // the wrapper's head h ("heads.{h}."), else -1
};

/// Every parameter of a configuration in PyTorch's registration order (= named_parameters() order),
/// read off the class's recipe.
std::vector<ParameterSpec> parameter_specs(const ModuleConfig& config);
int64_t parameter_count(const ModuleConfig& config);

/// The keys and values a module has seen (the book's cache_k / cache_v, ch04/03_kv-cache): a forward
/// with a cache attends over what it holds plus the chunk's own, then keeps them. Key/value heads are
/// cached before any repeat (GroupedQueryAttention's num_kv_groups). A class with a sliding window keeps
/// its last sliding_window_size entries (ch04/06_swa); a cache with a `window` keeps at most that many,
/// the oldest shifted out before the chunk is attended (gpt_with_kv_cache_optimized.py). A class whose
/// recipe re-projects keys and values from a latent (ClassSpec::latent(): MultiHeadLatentAttention,
/// ch04/05_mla) caches the latent c_kv alone, and every step re-projects keys and values from all of it
/// (the book's cache_c_kv: latent_total = torch.cat([cache_c_kv, latent_new], dim=1)).
///
/// Keys and values are kept with room to grow, as a std::vector keeps its capacity: a forward writes
/// its chunk's rows after the held ones and attends to them where they lie, so a decode step copies no
/// held key. When the rows run past the capacity they move to a new storage of twice the rows needed
/// (at most context_length for a class with a mask buffer or RoPE, twice the window for a window cache); a
/// window's oldest rows shift out by moving `first`, and the held rows move back to row 0 once as many
/// rows lie unused before them as they are (amortised: a row is moved about once per row shifted out).
struct KvCache {
  int64_t window = 0;    // 0: grows by concatenation (gpt_with_kv_cache.py)
  int64_t position = 0;  // absolute position of the next token: every token seen so far
  int64_t start = 0;     // absolute position of the first entry held
  int64_t batch = 0;     // b of the chunks (0: nothing seen yet)
  /// Keys and values (b, kv_heads, capacity, head_dim) row-major: in each (b, head) `held` rows from
  /// row `first` (RoPE classes: the rotated keys); the other rows are room. Empty for a latent class.
  Tensor keys, values;
  int64_t first = 0;  // the row of keys and values where each (b, head)'s held entries begin
  int64_t held = 0;   // the entries keys and values hold
  Tensor latent;      // (b, entries, latent_dim) row-major: c_kv of a latent class; else empty
  /// Room for `rows` entries of a batch of b, kv_heads key/value heads of head_dim, allocated now in a
  /// cache that holds nothing yet (else nothing changes), as std::vector::reserve: a caller that knows
  /// how many positions it will cache (GPT-2's generation) allocates them once, before the forwards'
  /// temporaries, and the cache never moves. A module of other sizes refuses it (cache_module).
  /// Throws std::invalid_argument when a size is below 1.
  void reserve(int64_t b, int64_t kv_heads, int64_t head_dim, int64_t rows);
  int64_t entries() const { return latent.shape.size() == 3 ? latent.shape[1] : held; }
  /// Rows per (b, head) that keys and values have room for (a latent class: its entries).
  int64_t capacity() const { return keys.shape.size() == 4 ? keys.shape[2] : entries(); }
  /// Bytes of what the cache holds (float32 keys and values, or the latent), what PyTorch's would hold:
  /// a latent class b x entries x latent_dim x 4, the others b x 2 x kv_heads x entries x head_dim x 4.
  double bytes() const {
    const double rows = keys.shape.size() == 4 ? static_cast<double>(keys.shape[0] * keys.shape[1] * keys.shape[3]) : 0.0;
    return 4.0 * (2.0 * rows * static_cast<double>(held) + static_cast<double>(latent.data.size()));
  }
  /// Bytes the cache has allocated: bytes() and the room (capacity - entries rows of each (b, head)).
  double allocated_bytes() const { return 4.0 * static_cast<double>(keys.data.size() + values.data.size() + latent.data.size()); }
};

struct ForwardOptions {
  /// A fresh PyTorch module is in training mode; dropout acts only when training and dropout > 0.
  bool training = true;
  /// Where dropout draws come from (required when training with dropout > 0).
  TorchGenerator* generator = nullptr;
  /// When non-null, receives every stage. Tracing never changes the output bits.
  std::vector<Stage>* trace = nullptr;
  /// When non-null, receives only the attention weights, shape (b, H, T, T) (or the class's own
  /// attn_weights shape), after softmax and before dropout: what a model run shows per layer without
  /// the memory of a whole trace. Never changes the output bits.
  Tensor* attn_weights = nullptr;
  /// Bytes a traced forward may use (estimate_bytes); a larger run is refused before allocating.
  double memory_budget_bytes = kDefaultMemoryBudgetBytes;
  /// When non-null, receives warnings about the run: "non_finite_stage" when finite inputs gave an
  /// output with NaN or infinity, naming the first stage that turned non-finite and where in it
  /// (its axes: b, head, row). Finding that stage reruns the forward traced (same generator state),
  /// only when the output is non-finite and the traced run fits the memory budget.
  std::vector<Diagnostic>* warnings = nullptr;
  /// When non-null, a cached forward: x is the next chunk (b, num_tokens, d_in) after what the cache
  /// holds; its output is the chunk's. Refused (AttentionError): cache_unsupported (a class without a
  /// causal mask, or with appended keys), cache_batch (b differs from the earlier chunks'), cache_full
  /// (past context_length for a class with a mask buffer, without a window), cache_window (a chunk
  /// longer than the window). The cache changes only when the forward succeeds (what it holds: a failed
  /// forward may have written rows of its room, past the held ones).
  KvCache* cache = nullptr;
  /// When non-null, the products run on this pool (ops::gemm's tasks); the output has the same bits
  /// at any pool size, and with none.
  ThreadPool* pool = nullptr;
  /// When non-null, only these query heads (a share of head_shares: a plain Worker's part of a forward
  /// split across Workers): forward returns their columns of heads_concat, (b, num_tokens, count *
  /// head_dim) row-major, each value with the bits the whole forward gives it; project_heads joins the
  /// shares. Refused (AttentionError head_share) for a single-head class, heads that are not whole
  /// key/value groups, with a trace, attn_weights or a cache, and when dropout acts (training, p > 0).
  const HeadShare* share = nullptr;
  /// Traced, keep the masked scores and, when no dropout acts, the dropout stage as views
  /// (StageView) rather than copies: for a trace that stays in memory and is read by stage_rows
  /// (Session's resident traces). The summaries and every value read are the same.
  bool stage_views = false;
  /// When non-null, the forward runs this plan in place of the module's own: the module's plan with
  /// one pass altered (a checkModule catalogue variant, check_module.hpp). Same parameters, same checks.
  const ForwardPlan* variant = nullptr;
};

/// The checks forward makes on x before any work, in this order: tensor_size (data vs shape),
/// input_rank, input_empty, input_width, context_too_short, too_large (the module plus a forward,
/// traced when `trace`, over `memory_budget_bytes`: plan_bytes), non_finite_input. Throws
/// AttentionError whose slot is `what` (input_width: "d_in", context_too_short: "context_length").
void check_input(const ModuleConfig& config, const Tensor& x, const std::string& what = "x", double memory_budget_bytes = kDefaultMemoryBudgetBytes, bool trace = true);
/// The same with the config's plan already made (a module's own: no second plan_forward).
void check_input(const ForwardPlan& plan, const Tensor& x, const std::string& what, double memory_budget_bytes, bool trace);

class AttentionModule {
 public:
  /// Seeded construction: draws from `generator` exactly as the PyTorch constructor does after
  /// torch.manual_seed. Throws AttentionError("too_large") when allocation fails.
  AttentionModule(const ModuleConfig& config, TorchGenerator& generator);
  /// Zero-initialised parameters (for loading values with set_parameter).
  explicit AttentionModule(const ModuleConfig& config);

  /// Copies are deep (parameters included); a moved-from module may only be assigned to or destroyed.
  AttentionModule(const AttentionModule& other);
  AttentionModule(AttentionModule&& other) noexcept;
  AttentionModule& operator=(const AttentionModule& other);
  AttentionModule& operator=(AttentionModule&& other) noexcept;
  ~AttentionModule();

  const ModuleConfig& config() const;
  const ForwardPlan& plan() const;
  /// Whether a forward may take a KvCache: a causal mask over the module's own keys (no appended ones).
  bool caches_keys() const;
  /// Every parameter by its PyTorch name, in named_parameters() order (copies: the module keeps its
  /// weights prepared for the forward, written once).
  std::vector<NamedTensor> parameters() const;
  /// Throws AttentionError "unknown_parameter" (with a did-you-mean hint) or "parameter_shape".
  void set_parameter(const std::string& name, const Tensor& value);
  /// Several at once (each checked first, then all stored: all or nothing), packing each prepared
  /// matrix once: what fromParameters and checkpoint loads use.
  void set_parameters(const std::vector<NamedTensor>& values);
  /// nullopt when there is no such parameter.
  std::optional<Tensor> parameter(const std::string& name) const;

  /// Input (num_tokens, d_in) for SelfAttention_v1/v2, (b, num_tokens, d_in) otherwise.
  /// Output (num_tokens, d_out), (b, num_tokens, d_out), or (b, num_tokens, num_heads * d_out) for
  /// the wrapper. One path for every class, driven by plan(): project -> scores -> mask -> softmax
  /// -> dropout -> context -> merge -> out_proj. Throws AttentionError (see check_input):
  /// tensor_size, input_rank, input_empty, input_width, context_too_short, too_large,
  /// non_finite_input; then generator_missing.
  Tensor forward(const Tensor& x, const ForwardOptions& options = {}) const;
  /// The output of a forward split into shares of the heads (ForwardOptions::share): heads_concat
  /// (b, num_tokens, num_heads * head_dim), every share's columns in head order, through out_proj (and
  /// proj) as forward runs them, or heads_concat itself for MultiHeadAttentionWrapper. The bits of
  /// forward(x). `x` (b, num_tokens, d_in) is the input the shares ran on (checked as forward checks it;
  /// a non-finite output's warning reruns it whole, traced). AttentionError head_share (a single-head
  /// class; heads_concat of another shape, slot "heads_concat"), too_large.
  Tensor project_heads(const Tensor& x, const Tensor& concat, const ForwardOptions& options = {}) const;

 private:
  struct Impl;  // the plan, the parameters' homes and the prepared operators (core/src/module_impl.hpp)
  std::unique_ptr<Impl> impl_;
};

/// The book's six 3-d embeddings of "Your journey starts with one step": (6, 3).
Tensor book_tokens();
/// torch.rand(num_tokens, d_in, generator=torch.Generator().manual_seed(seed)): (num_tokens, d_in).
Tensor seeded_tokens(int64_t num_tokens, int64_t d_in, uint64_t seed);

/// Word tokens with seeded embeddings, the same word always getting the same row:
///   vocab = list(dict.fromkeys(words))
///   table = torch.rand(len(vocab), d_in, generator=torch.Generator().manual_seed(seed))
///   x = table[[vocab.index(w) for w in words]]                      # (num_tokens, d_in)
Tensor sentence_tokens(const std::vector<std::string>& words, int64_t d_in, uint64_t seed);

/// A module from a PyTorch `state_dict()` or `parameters()`: every parameter by name (missing_parameter,
/// unknown_parameter, parameter_shape, non_finite_parameter), plus the causal mask buffers the book's
/// classes register ("mask" of CausalAttention and MultiHeadAttention, "heads.{h}.mask" of the
/// wrapper), each checked against torch.triu(torch.ones(context_length, context_length), diagonal=1):
/// one that differs (or has another shape) throws "mask_buffer" naming the first differing entry.
/// `notes` (when given) receives a sentence per buffer checked.
AttentionModule module_from_state_dict(const ModuleConfig& config, const std::vector<NamedTensor>& given, std::vector<std::string>* notes = nullptr);

}  // namespace attention_lab
