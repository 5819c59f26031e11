// What a forward pass does, computed once from a config: one plan drives the one forward path of
// every class (project -> scores -> mask -> softmax -> dropout -> context -> merge -> out_proj), the
// trace's titles and formulas (the one stage table, core/src/stage_table.cpp), and the memory estimate.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "attention_lab/schema.hpp"
#include "attention_lab/tensor.hpp"

namespace attention_lab {

enum class MaskKind { None, Causal, Inverted };

/// How the attend pass turns a slab of (masked) scores into weights: the book's
/// softmax(scores / sqrt(d_k), dim=-1), or one of the two variants checkModule's catalogue tries
/// (core/src/check_catalogue.cpp): softmax(scores, dim=-1) / sqrt(d_k), softmax(scores / sqrt(d_k), dim=-2).
enum class SoftmaxStep { Book, ScaleAfter, OverQueries };

/// Where dropout acts in training (a class with dropout on the weights): on the attention weights after
/// the softmax (the book's), or one of the two variants checkModule's catalogue tries: on the masked
/// scores before the softmax (a masked -inf that is dropped becomes NaN, -inf * 0, as in PyTorch), or
/// nowhere (self.dropout never applied).
enum class DropoutAt { Weights, Scores, Nowhere };

struct ForwardPlan {
  ModuleConfig config;
  bool batched = false;        // input (b, num_tokens, d_in); else (num_tokens, d_in)
  bool per_head_axes = false;  // stages carry a num_heads axis
  int64_t query_heads = 1;     // H
  int64_t kv_heads = 1;        // key/value heads (= query_heads, except GroupedQueryAttention's num_kv_groups)
  int64_t group_size = 1;      // query heads per key/value head: query head h reads key/value head h / group_size
  int64_t head_dim = 0;        // d_k: width of one head's q/k/v
  std::string head_dim_name;   // "head_dim" (split heads) or "d_out"
  int64_t proj_width = 0;      // query_heads * head_dim: width of the q/k/v projections
  int64_t output_width = 0;
  float scale_div = 1.0f;  // keys.shape[-1]**0.5, cast to float by the division
  MaskKind mask = MaskKind::None;
  int64_t window = 0;         // sliding window (0: none): key j is hidden from query i when i - j >= window
  int64_t mask_diagonal = 1;  // a causal mask hides key j from query i when j - i >= this: torch.triu's diagonal (the book's 1)
  SoftmaxStep softmax = SoftmaxStep::Book;
  bool split_transpose = true;  // heads split as view(b, T, H, hd).transpose(1, 2); false: view(b, H, T, hd) (a catalogue variant)
  bool merge_transpose = true;  // heads merged as transpose(1, 2).contiguous().view(b, T, d_out); false: the view alone (a catalogue variant)
  bool mask_buffer = false;     // the mask is the top-left of a context_length buffer (else built for the tokens given)
  bool dropout_stage = false;   // the class has dropout on the weights
  double dropout = 0.0;
  bool dropout_heads_outer = false;           // PyTorch's draw order: head after head (wrapper) or (b, H, T, T)
  DropoutAt dropout_at = DropoutAt::Weights;  // the tensor dropout draws over (in the same order): the weights, or a catalogue variant's
  bool matmul_projection = false;             // q/k/v weights stored (in, out), used as x @ W (SelfAttention_v1, MHAEinsum)
  HeadsRule layout = HeadsRule::Single;
  bool out_proj = false;       // an output projection after the merge (role Out)
  bool out_proj_bias = false;  // GroupedQueryAttention's out_proj has none; nn.MultiheadAttention's only with qkv_bias
  bool proj = false;           // a second projection after out_proj (role Proj: MHAPyTorchClass's proj)
  int64_t extra_kv = 0;        // key/value tokens appended after the projections (nn.MultiheadAttention's bias_k/bias_v)
  int64_t latent_dim = 0;      // keys and values re-projected from a latent c_kv = x @ W_DKV.T of this width (0: from x);
                               // then a KV cache holds c_kv alone (ClassSpec::latent()), keys and values re-projected from all of it
  double rope_theta = 0.0;     // RoPE on queries and keys after the head split, cos/sin of context_length rows (0: none)
  bool rope() const { return rope_theta > 0.0; }
  /// What masked scores are set to: -inf, or torch.finfo(float32).min (ClassSpec::mask_fill_min).
  float mask_fill = -std::numeric_limits<float>::infinity();
  /// An output gate: the merged heads times sigmoid(x @ W_gate.T + b) before out_proj (role Gate).
  bool gate = false;
  bool kv_projection_width_differs() const { return kv_heads != query_heads; }
  /// Keys for `num_tokens` queries: the tokens plus the appended ones.
  int64_t num_keys(int64_t num_tokens) const { return num_tokens + extra_kv; }
  /// The causal fast path (only the lower triangle of each (T, T) score slab) applies.
  bool lower_triangle() const { return mask == MaskKind::Causal && extra_kv == 0 && mask_diagonal == 1 && softmax == SoftmaxStep::Book && dropout_at != DropoutAt::Scores; }
  /// A KV cache applies: a causal mask over the class's own keys (no appended key tokens).
  bool caches_keys() const { return mask == MaskKind::Causal && extra_kv == 0; }
};

/// The plan of a validated config (validated_config / to_module_config).
ForwardPlan plan_forward(const ModuleConfig& config);

/// A share of a forward's query heads, [first, first + count): what one plain Web Worker computes when a
/// forward is split across Workers (a page that is not cross-origin isolated has no threads: issue 21.2).
/// Each share's forward gives its columns of heads_concat; AttentionModule::project_heads finishes.
struct HeadShare {
  int64_t first = 0;
  int64_t count = 0;
};

/// The shares a forward of `plan` splits into over at most `parts` Workers: whole key/value groups
/// (GroupedQueryAttention's query heads of one key/value head stay together), as even as the groups
/// allow, in head order. One share of every head when the forward cannot split: a single-head class
/// (one head of d_out), fewer than two key/value heads, parts < 2, or `training` with dropout > 0
/// (the dropout draws are one stream in PyTorch's order over every head).
std::vector<HeadShare> head_shares(const ForwardPlan& plan, int64_t parts, bool training);

/// Stage ids in trace order; a forward emits those its plan has (stage_present). The stage table
/// (core/src/stage_table.cpp) has one row per id, in this order (checked at compile time).
enum class StageId {
  Input,
  Queries,
  Latent,
  CacheLatent,
  Keys,
  Values,
  Cos,
  Sin,
  QueriesRope,
  KeysRope,
  CacheK,
  CacheV,
  AttnScores,
  Mask,
  AttnScoresMasked,
  AttnWeights,
  AttnWeightsDropout,
  ContextVec,
  HeadsConcat,
  Gate,
  OutProj,
  Proj,
  Output
};

/// "attn_weights", ...: the stable id the trace carries.
const char* stage_id_name(StageId id);
/// Whether a forward of `plan` emits stage `id`; `cached`: a forward with a KV cache (its cache_k and
/// cache_v stages, or cache_c_kv for a latent class: what its cache holds).
bool stage_present(const ForwardPlan& plan, StageId id, bool cached = false);

/// Title and formula of a stage, from the stage table's text variants. `num_tokens`, whether
/// dropout really acted (`training`) and the keys a KV cache held before the chunk (`cached`; -1: a
/// forward without a cache) fill in the numbers.
struct StageText {
  std::string title;
  std::string formula;
  std::vector<std::string> axes;
};
/// `position`: the first token's absolute position (RoPE's table rows; -1: `cached`, or 0).
StageText stage_text(const ForwardPlan& plan, StageId id, int64_t num_tokens, bool training, int64_t cached = -1, int64_t position = -1);

/// Upper bound of the bytes the core allocates for the module (parameters and their prepared copies)
/// plus one forward on `input_shape` (with the trace when `trace`): the same sizes the forward path
/// allocates. No input shape: the module alone.
double plan_heap_bytes(const ForwardPlan& plan, const std::optional<Shape>& input_shape, bool trace = true);

/// Bytes of what a forward on `input_shape` hands back (the output, and with `trace` every traced
/// stage's tensor, summaries and texts), as the caller's copy of it: the JS facade copies every result
/// out of the WebAssembly heap while the core's are alive, and the heap never shrinks, so a run holds
/// both. No input shape: 0 (a module alone hands nothing back).
double plan_result_bytes(const ForwardPlan& plan, const std::optional<Shape>& input_shape, bool trace = true);

/// The memory estimate every budget check reads (the validator's too_large, forward, the Setup's
/// memory.bytes): plan_heap_bytes + plan_result_bytes, so it bounds the real peak of a run, its JS
/// results included. An untraced run of the inverted mask (whose output always has a NaN row) counts
/// the traced rerun that names the non-finite stage.
double plan_bytes(const ForwardPlan& plan, const std::optional<Shape>& input_shape, bool trace = true);

/// The estimate of a forward whose trace stays in WASM memory (a resident, or lazy, trace): the heap
/// of a traced forward (plan_heap_bytes: the trace is what stays) less the two (b, H, T, Tk) stages it
/// keeps as views (StageView: the masked scores; the dropout stage when p = 0), the output's copy, the stages'
/// facts copied out, and one query's copy of at most a whole stage (an export). No JS copy of the
/// trace. It bounds the heap's growth over the run and its queries while the trace lives.
double plan_resident_bytes(const ForwardPlan& plan, const std::optional<Shape>& input_shape);

}  // namespace attention_lab
