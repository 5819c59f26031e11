// The attention forward as a sequence of small passes over one record of named tensors (llm.c's
// ActivationTensors): project (the latent, then queries, keys and values split into heads), extend
// the cache (the chunk's keys and values after its held ones), attend each (batch item, head) slab a
// block of rows at a time (scores, mask, softmax, dropout, context), merge the heads, project out, keep
// the cache. A Recorder observes the passes
// (the trace's copies, summaries and views); an untraced forward passes one that does nothing.
// Internal to the core (not installed): AttentionModule::Impl::forward_pass runs them.
#pragma once

#include <cstddef>
#include <cstdint>

#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/ops.hpp"
#include "attention_lab/plan.hpp"

namespace attention_lab {

/// The operators a module prepares, one slot each (AttentionModule::Impl::Prepared): the queries, keys
/// and values (also the packed qkv's thirds, in that order), out_proj, a second projection, the
/// down-projection to a latent, and an output gate.
enum Operator : int { kQueryOp, kKeyOp, kValueOp, kOutOp, kProjOp, kLatentDownOp, kGateOp, kOperators };
static_assert(kQueryOp == 0 && kKeyOp == 1 && kValueOp == 2, "the packed qkv's thirds and the forward's q, k, v loop count from the queries");

/// A module's prepared operators as the passes read them (AttentionModule's, or any caller's that
/// holds them in the same layout): right-hand matrices (k, n) with their biases, one per Operator, and
/// the appended key/value tokens.
struct Operators {
  const ops::PackedMatrix* weight = nullptr;  // [kOperators]
  const std::vector<float>* bias = nullptr;   // [kOperators]; empty: the operator has no bias
  const std::vector<float>* token = nullptr;  // bias_k, bias_v: (kv_heads * head_dim); empty when none
  const std::vector<float>* rope = nullptr;   // the RoPE tables cos, sin: (context_length, head_dim) each; null or empty when none
  const float* bias_of(int op) const { return bias[op].empty() ? nullptr : bias[op].data(); }
};

/// The tensors of one forward, one per stage id, in stage order: each pass fills its own; a stage the
/// plan does not have stays empty. The four (b, H, T, keys) stages are filled by the trace recorder.
struct Activations {
  Tensor input;             // (b, num_tokens, d_in): the trace's copy of x
  Tensor queries;           // (b, H, T, head_dim)
  Tensor latent;            // (b, T, latent_dim): c_kv of the chunk
  Tensor cache_latent;      // (b, past + T, latent_dim): every c_kv row attended (a latent class's cache)
  Tensor keys, values;      // (b, KV, kv_rows, head_dim): the tokens' (a latent cache's: every one attended), appended tokens last
  Tensor cos, sin;          // (T, head_dim): the RoPE tables' rows at the chunk's positions (the trace's copies)
  Tensor queries_rope;      // (b, H, T, head_dim): the queries RoPE rotated, what the scores read
  Tensor keys_rope;         // (b, KV, kv_rows, head_dim): the keys RoPE rotated (a cache's already are)
  Tensor cache_k, cache_v;  // (b, KV, keys, head_dim): the trace's copy of every key and value a cached chunk attended
  Tensor attn_scores, mask, attn_scores_masked, attn_weights, attn_weights_dropout;
  Tensor context_vec;     // (b, H, T, head_dim)
  Tensor heads_concat;    // (b, T, H * head_dim)
  Tensor gate;            // (b, T, H * head_dim): heads_concat * sigmoid(x @ W_gate.T + b)
  Tensor out_proj, proj;  // (b, T, d_out)
  Tensor output;          // the trace's copy of the output
  /// The tensor of stage `id`.
  Tensor& operator[](StageId id);
};

/// A chunk's geometry: b batch items of T tokens, attending Tk keys: `past` cached keys (after a
/// window shifted `drop` of the held ones out), the chunk's own, then any appended key tokens.
struct Chunk {
  int64_t b = 1, T = 0, past = 0, drop = 0, Tk = 0;
  int64_t position = 0;  // the absolute position of the chunk's first token (a cache's position; RoPE's table row)
  int64_t kv_rows = 0;   // rows per (b, kv head) of the record's keys and values: Tk, or T with a cache of keys and values
  // With a cache of keys and values: the keys attended lie in its storage of `capacity` rows per (b, kv
  // head) from row `row` (the held ones kept, then the chunk's); `grow`: in a new storage (CacheRoom).
  int64_t capacity = 0, row = 0;
  bool grow = false;
};

/// Where the attend pass reads each (b, kv head)'s Tk keys and values (row-major, head_dim floats a
/// row): `stride` floats apart, in the record or in a cache's storage.
struct KeyValueRows {
  const float* keys = nullptr;
  const float* values = nullptr;
  size_t stride = 0;
};

/// A cached forward's own part of its cache: the new storage when the cache grows, and the cache after
/// the chunk (next_cache), which keep_cache makes the cache's once the forward has succeeded.
struct CacheRoom {
  Tensor keys, values;  // (b, KV, capacity, head_dim) when Chunk::grow
  Tensor latent;        // a latent class's next c_kv (b, entries, latent_dim)
  int64_t first = 0, held = 0, position = 0;
};

/// The query heads a forward computes, [begin, end): all of them, or a share (a Worker's part of a
/// split forward); their key/value heads are [begin / group_size, end / group_size).
struct HeadRange {
  int64_t begin = 0, end = 0;
};

/// What every pass reads: the module's plan and prepared operators, the run's options, the chunk, its
/// heads and the cache as it was before the chunk (null: no cache).
struct PassContext {
  const ForwardPlan& plan_;
  Operators operators;
  const ForwardOptions& options;
  Chunk chunk;
  HeadRange heads;
  const KvCache* cache = nullptr;
  bool apply_dropout = false;   // dropout acts on the attention weights (training, p > 0)
  CacheRoom* room = nullptr;    // with a cache: its new storage and next state
  bool dropout_scores = false;  // dropout acts on the masked scores before the softmax instead (DropoutAt::Scores, a catalogue variant)
  const ForwardPlan& plan() const { return plan_; }
  /// The shape of a per-head stage of `rows` x `cols`: (rows, cols), (b, rows, cols) or (b, H, rows, cols).
  Shape head_shape(int64_t rows, int64_t cols) const;
};

/// Observes the passes. The base class observes nothing (an untraced forward).
class Recorder {
 public:
  virtual ~Recorder() = default;
  /// Whether stages are observed: then every score the book's code computes is computed (no causal
  /// shortcut), a block of rows at a time so each copy reads them from cache.
  virtual bool observing() const { return false; }
  /// `n` values of stage `id` (one of the four (b, H, T, keys) stages) of slab `slab` (b * H + h),
  /// starting at element `offset` of the stage.
  virtual void rows(StageId /*id*/, size_t /*slab*/, size_t /*offset*/, const float* /*values*/, int64_t /*n*/) {}
  /// Every row of slab `slab` was given.
  virtual void slab_done(size_t /*slab*/) {}
  /// The forward is done with the record: its stages, in order, from `a` (moved), with x and the output.
  virtual void finish(Activations& /*a*/, const Tensor& /*x*/, const Tensor& /*output*/) {}
};

/// The geometry of a chunk of x against `cache` (null: none), refused as the cache requires
/// (cache_unsupported, cache_module, cache_batch, cache_window, cache_full, too_large).
Chunk chunk_of(const ForwardPlan& p, const Tensor& x, const ForwardOptions& options);

/// Row i of a chunk's scores masked in place (runs of the plan's mask_fill: -inf, or
/// torch.finfo(float32).min): keys past the query, those before its window, or the inverted mask's
/// keys up to the query. Appended keys are never hidden.
void mask_row(const ForwardPlan& p, const Chunk& c, float* row, int64_t i);

/// Pass 1a: the latent c_kv = x @ W_DKV.T + b (b, T, latent_dim), and with a cache every c_kv row
/// attended (cache_latent: the cache's rows, then the chunk's). Classes without a latent: nothing.
void project_latent(const PassContext& ctx, const Tensor& x, Activations& a);
/// Pass 1b: queries (b, H, T, hd), keys and values (b, KV, kv_rows, hd) split into heads (the fused
/// view(b, T, H, hd).transpose(1, 2), or the wrapper's head h taking columns h*hd ..), appended
/// key/value tokens last; a latent cache's keys and values are re-projected from every row it attends.
void project_qkv(const PassContext& ctx, const Tensor& x, Activations& a);
/// The RoPE tables cos and sin (context_length, head_dim) of a plan with RoPE, as the book's
/// precompute_rope_params makes them (a module computes them once).
void rope_tables(const ForwardPlan& p, std::vector<float> (&tables)[2]);
/// Pass 1c, RoPE (rotate-half) on the queries and the chunk's keys at positions position ..
/// position + T - 1: queries_rope and keys_rope (a cache's keys were rotated when they came). With
/// `observing`, the tables' rows for the trace (cos, sin). Classes without RoPE: nothing.
void apply_rope(const PassContext& ctx, Activations& a, bool observing);
/// The queries and keys the scores read: the rotated ones with RoPE, else the projections.
const Tensor& scored_queries(const ForwardPlan& p, const Activations& a);
Tensor& scored_keys(const ForwardPlan& p, Activations& a);
/// Pass 1d, a cached forward with keys and values: the chunk's keys (rotated, with RoPE) and values
/// written after the cache's held ones, in its storage or a new one (Chunk::grow) with the kept rows
/// copied in. Without a cache, or a latent class's: nothing.
void extend_cache(const PassContext& ctx, Activations& a);
/// Where the attend pass reads the keys and values: the cache's storage (extend_cache) or the record's.
KeyValueRows attended_rows(const PassContext& ctx, Activations& a);
/// Passes 2-6 for every slab of the heads: scores, mask, softmax, dropout (in PyTorch's draw order),
/// context_vec (b, H, T, hd).
void attend(const PassContext& ctx, Activations& a, Recorder& recorder);
/// A share's columns of heads_concat (b, T, count * hd).
Tensor share_columns(const PassContext& ctx, const Activations& a);
/// Pass 7: heads_concat (b, T, H * hd), column h * hd + j. Single-head classes: nothing.
void merge_heads(const PassContext& ctx, Activations& a);
/// Pass 7b, classes with an output gate: gate = heads_concat * sigmoid(x @ W_gate.T + b) (b, T, H * hd),
/// what out_proj reads. Others: nothing.
void gate_heads(const PassContext& ctx, const Tensor& x, Activations& a);
/// The gate on merged heads `concat` (b, T, width) of `x` (b, T, d_in), from the prepared operators:
/// gate_heads' math, also for heads joined from shares (AttentionModule::project_heads).
Tensor gated(const ForwardPlan& p, const Operators& operators, ThreadPool* pool, const Tensor& x, const Tensor& concat);
/// The last pass's tensor (proj, out_proj, heads_concat or context_vec): moved out, or copied when
/// the recorder keeps it.
Tensor take_output(const PassContext& ctx, Activations& a, bool keep);
/// The cache after this chunk, into ctx.room: the last keys and values attended (a window keeps the last
/// ones), or a latent class's last c_kv rows. With `observing`, cache_k / cache_v: every key and
/// value attended (keys and values are the chunk's own).
void next_cache(const PassContext& ctx, Activations& a, bool observing);
/// Makes ctx.room's next state the cache's (no allocation, no throw: run once the forward has
/// succeeded), moving the held rows back to row 0 when as many unused rows lie before them.
void keep_cache(const PassContext& ctx, KvCache& cache);
/// A cached forward's next cache state, not yet kept: what keep_pending makes the cache's. A forward
/// that is rerun traced (to name a non-finite stage) must see the cache as it was before the chunk.
struct PendingCache {
  Chunk chunk;
  CacheRoom room;
  bool latent = false;
};
void keep_pending(PendingCache& pending, KvCache& cache);

/// A recorder that makes the trace (ForwardOptions::trace): each stage's copy, its summaries made while
/// its rows are in cache, and views instead of copies with ForwardOptions::stage_views.
class TraceRecorder : public Recorder {
 public:
  TraceRecorder(const PassContext& ctx);
  bool observing() const override { return true; }
  void rows(StageId id, size_t slab, size_t offset, const float* values, int64_t n) override;
  void slab_done(size_t slab) override;
  void finish(Activations& a, const Tensor& x, const Tensor& output) override;

 private:
  void keep(Tensor& stage, size_t offset, const float* values, int64_t n);
  Stage named_stage(StageId id) const;
  void emit(StageId id, Tensor t, const std::vector<ops::ValueSummary>* values);
  void emit_view(StageId id, StageView view, StageId source, const std::vector<ops::ValueSummary>& values);

  const PassContext& ctx_;
  Shape stage_shape_;
  size_t stage_size_ = 0;
  bool masked_view_ = false, dropped_view_ = false;
  Tensor kept_[4];                                 // scores, masked scores, weights, dropped weights
  ops::SummaryStream streams_[4];                  // the current slab's summaries of those
  std::vector<ops::ValueSummary> slab_values_[4];  // each slab's, by slab index
};

}  // namespace attention_lab
