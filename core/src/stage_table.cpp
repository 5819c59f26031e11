// The one stage table: each trace stage's id, name, title and formula variants, when a forward emits it,
// its axes, size, buffers and how the page shows it, one row per StageId in trace order (checked at
// compile time). The trace's texts (stage_text, in stage_text.cpp), the memory estimates (plan.cpp's
// sums over it) and the .d.ts StageId union (scripts/stage-ids.mjs reads the kStages rows below: keep
// one row a line) come from here.
#include "attention_lab/stage_table.hpp"

#include <algorithm>

#include "stage_texts.hpp"

namespace attention_lab {

namespace {

using namespace stage_texts;

/// When a forward emits a stage (stage_present). Each comment is the stage's note in the StageId union.
enum class When {
  Always,        // every forward
  Latent,        // a forward of a latent class (MultiHeadLatentAttention): its latent, (b, num_tokens, latent_dim)
  CachedLatent,  // a cached step of a latent class: every latent row its cache holds, (b, keys, latent_dim)
  Cached,        // a cached step of the other classes: every key (value) the chunk's queries read
  Masked,        // a forward of a class with a causal mask
  Dropout,       // a forward of a class with dropout on the attention weights
  Heads,         // a forward of a class with heads to merge
  OutProj,       // a forward of a class with an output projection
  Proj,          // a forward of a class with a second projection after out_proj (MHAPyTorchClass)
  Rope,          // a forward of a class with rotary position embeddings (RoPE) on queries and keys
  Gate,          // a forward of a class with an output gate: the merged heads times sigmoid(gate), (b, num_tokens, d_out)
};

/// The size of a stage's tensor (stage_floats).
enum class Size {
  Input,       // (b, num_tokens, d_in)
  QueryHeads,  // (b, num_heads, num_tokens, head_dim)
  KeyHeads,    // (b, key/value heads, keys, head_dim)
  Latent,      // (b, num_tokens, latent_dim)
  Slab,        // (b, num_heads, num_tokens, keys)
  Mask,        // (num_tokens, keys)
  Merged,      // (b, num_tokens, num_heads * head_dim)
  DOut,        // (b, num_tokens, d_out)
  Output,      // (b, num_tokens, output width)
  Rope,        // (num_tokens, head_dim): the rows of a RoPE table at the chunk's positions
};

/// When a resident trace keeps the stage as a view of an earlier one rather than a copy
/// (ForwardOptions::stage_views): the masked scores always (of the scores and the mask), the dropout
/// stage when dropout never acts (the weights themselves).
enum class View { None, Always, NoDropout };

/// How the page shows a stage (stage_display), each with its meaning: the StageDisplay union of the .d.ts.
struct DisplayKind {
  const char* name;
  const char* meaning;
};
constexpr DisplayKind kDisplays[] = {
    {"vectors", "a table of numbers, a row per token (per head and batch item when it has those axes)"},
    {"scores", "a heatmap on the stage's own scale (its finite min to max) beside its table"},
    {"weights", "a heatmap from 0 to at least 1 beside its table: each row's sum is shown, and an exact 0 is a masked or dropped weight"},
    {"mask", "a heatmap of 0 and 1 beside its table (1: the key is hidden from the query)"},
};

struct StageRow {
  StageId id;
  const char* name;     // the stable id the trace carries
  When when;            // stage_present
  Axes axes;            // stage_text's axes
  Size size;            // stage_floats
  int forward_buffers;  // tensors of its size an untraced forward allocates (the slabs: one (T, keys) slab at a time, not counted here; cos and sin: rows a trace copies, counted
                        // here)
  int trace_copies;     // tensors of its size only a traced forward allocates (output: the forward's copy of the last pass and the trace's)
  View view;            // plan_resident_bytes
  const char* display;  // how the page shows it (stage_display)
  Texts texts;
};

// Trace order: one row per StageId, in the enum's order (checked below).
constexpr StageRow kStages[] = {
    {StageId::Input, "input", When::Always, Axes::Input, Size::Input, 1, 1, View::None, "vectors", texts(kInputTexts)},
    {StageId::Queries, "queries", When::Always, Axes::Tokens, Size::QueryHeads, 1, 0, View::None, "vectors", texts(kProjectionTexts)},
    {StageId::Latent, "c_kv", When::Latent, Axes::Latent, Size::Latent, 1, 0, View::None, "vectors", texts(kLatentTexts)},
    {StageId::CacheLatent, "cache_c_kv", When::CachedLatent, Axes::LatentCache, Size::Latent, 1, 0, View::None, "vectors", texts(kCacheLatentTexts)},
    {StageId::Keys, "keys", When::Always, Axes::Keys, Size::KeyHeads, 1, 0, View::None, "vectors", texts(kProjectionTexts)},
    {StageId::Values, "values", When::Always, Axes::Keys, Size::KeyHeads, 1, 0, View::None, "vectors", texts(kProjectionTexts)},
    {StageId::Cos, "cos", When::Rope, Axes::Rope, Size::Rope, 1, 0, View::None, "vectors", texts(kCosTexts)},
    {StageId::Sin, "sin", When::Rope, Axes::Rope, Size::Rope, 1, 0, View::None, "vectors", texts(kSinTexts)},
    {StageId::QueriesRope, "queries_rope", When::Rope, Axes::Tokens, Size::QueryHeads, 1, 0, View::None, "vectors", texts(kRopeTexts)},
    {StageId::KeysRope, "keys_rope", When::Rope, Axes::Keys, Size::KeyHeads, 1, 0, View::None, "vectors", texts(kRopeTexts)},
    {StageId::CacheK, "cache_k", When::Cached, Axes::CacheKeys, Size::KeyHeads, 1, 0, View::None, "vectors", texts(kCacheKTexts)},
    {StageId::CacheV, "cache_v", When::Cached, Axes::CacheKeys, Size::KeyHeads, 1, 0, View::None, "vectors", texts(kCacheVTexts)},
    {StageId::AttnScores, "attn_scores", When::Always, Axes::Slab, Size::Slab, 0, 1, View::None, "scores", texts(kAttnScoresTexts)},
    {StageId::Mask, "mask", When::Masked, Axes::Mask, Size::Mask, 0, 1, View::None, "mask", texts(kMaskTexts)},
    {StageId::AttnScoresMasked, "attn_scores_masked", When::Masked, Axes::Slab, Size::Slab, 0, 1, View::Always, "scores", texts(kAttnScoresMaskedTexts)},
    {StageId::AttnWeights, "attn_weights", When::Always, Axes::Slab, Size::Slab, 0, 1, View::None, "weights", texts(kAttnWeightsTexts)},
    {StageId::AttnWeightsDropout, "attn_weights_dropout", When::Dropout, Axes::Slab, Size::Slab, 0, 1, View::NoDropout, "weights", texts(kAttnWeightsDropoutTexts)},
    {StageId::ContextVec, "context_vec", When::Always, Axes::Tokens, Size::QueryHeads, 1, 0, View::None, "vectors", texts(kContextVecTexts)},
    {StageId::HeadsConcat, "heads_concat", When::Heads, Axes::Merged, Size::Merged, 1, 0, View::None, "vectors", texts(kHeadsConcatTexts)},
    {StageId::Gate, "gate", When::Gate, Axes::Merged, Size::Merged, 1, 0, View::None, "vectors", texts(kGateTexts)},
    {StageId::OutProj, "out_proj", When::OutProj, Axes::Merged, Size::DOut, 1, 0, View::None, "vectors", texts(kOutProjTexts)},
    {StageId::Proj, "proj", When::Proj, Axes::Merged, Size::DOut, 1, 0, View::None, "vectors", texts(kProjTexts)},
    {StageId::Output, "output", When::Always, Axes::Merged, Size::Output, 0, 2, View::None, "vectors", texts(kOutputTexts)},
};

constexpr bool same(const char* a, const char* b) {
  while (*a != 0 && *a == *b) ++a, ++b;
  return *a == *b;
}
constexpr bool known_display(const char* name) {
  for (const DisplayKind& d : kDisplays)
    if (same(d.name, name)) return true;
  return false;
}
constexpr bool rows_follow_the_enum() {
  for (size_t i = 0; i < sizeof(kStages) / sizeof(kStages[0]); ++i)
    if (static_cast<size_t>(kStages[i].id) != i || kStages[i].texts.count == 0 || !known_display(kStages[i].display)) return false;
  return true;
}
static_assert(sizeof(kStages) / sizeof(kStages[0]) == static_cast<size_t>(StageId::Output) + 1, "one row of kStages per StageId (Output last)");
static_assert(rows_follow_the_enum(), "kStages rows in StageId order, each with a text and a display of kDisplays");

const StageRow& row_of(StageId id) { return kStages[static_cast<size_t>(id)]; }

}  // namespace

Texts stage_texts::texts_of(StageId id) { return row_of(id).texts; }
Axes stage_texts::axes_kind(StageId id) { return row_of(id).axes; }

const char* stage_id_name(StageId id) { return row_of(id).name; }

bool stage_present(const ForwardPlan& p, StageId id, bool cached) {
  switch (row_of(id).when) {
    case When::Always:
      return true;
    case When::Latent:
      return p.latent_dim > 0;
    case When::CachedLatent:
      return cached && p.latent_dim > 0;
    case When::Cached:
      return cached && p.latent_dim == 0;
    case When::Masked:
      return p.mask != MaskKind::None;
    case When::Dropout:
      return p.dropout_stage;
    case When::Heads:
      return p.layout != HeadsRule::Single;
    case When::OutProj:
      return p.out_proj;
    case When::Proj:
      return p.proj;
    case When::Rope:
      return p.rope();
    case When::Gate:
      return p.gate;
  }
  return false;
}

StageSizes stage_sizes(const ForwardPlan& p, const Shape& s) {
  StageSizes sizes;
  sizes.b = s.size() == 3 ? static_cast<double>(s[0]) : 1.0;
  sizes.t = static_cast<double>(s.size() >= 2 ? s[s.size() - 2] : 1);
  sizes.tk = sizes.t + static_cast<double>(p.extra_kv);  // keys: the tokens and any appended ones
  return sizes;
}

double stage_floats(const ForwardPlan& p, StageId id, const StageSizes& s) {
  const double heads = static_cast<double>(p.query_heads), hd = static_cast<double>(p.head_dim);
  switch (row_of(id).size) {
    case Size::Input:
      return s.b * s.t * static_cast<double>(p.config.d_in);
    case Size::QueryHeads:
      return s.b * heads * s.t * hd;
    case Size::KeyHeads:
      return s.b * static_cast<double>(p.kv_heads) * s.tk * hd;
    case Size::Latent:
      return s.b * s.t * static_cast<double>(p.latent_dim);
    case Size::Slab:
      return s.b * heads * s.t * s.tk;
    case Size::Mask:
      return s.t * s.tk;
    case Size::Merged:
      return s.b * s.t * static_cast<double>(p.proj_width);
    case Size::DOut:
      return s.b * s.t * static_cast<double>(p.config.d_out);
    case Size::Output:
      return s.b * s.t * static_cast<double>(p.output_width);
    case Size::Rope:
      return s.t * hd;
  }
  return 0.0;
}

double sum_stage_floats(const ForwardPlan& p, const StageSizes& sizes, StageCount what) {
  double floats = 0.0;
  for (const StageRow& row : kStages) {
    if (!stage_present(p, row.id)) continue;
    double count = 1.0;
    if (what == StageCount::ForwardBuffers) count = row.forward_buffers;
    if (what == StageCount::TraceCopies) count = row.trace_copies;
    if (what == StageCount::ResidentViews) count = row.view == View::Always || (row.view == View::NoDropout && !(p.dropout > 0.0)) ? 1.0 : 0.0;
    floats += count * stage_floats(p, row.id, sizes);
  }
  return floats;
}

double largest_stage_floats(const ForwardPlan& p, const StageSizes& sizes) {
  double largest = 0.0;
  for (const StageRow& row : kStages)
    if (stage_present(p, row.id, true)) largest = std::max(largest, stage_floats(p, row.id, sizes));
  return largest;
}

int stage_count(const ForwardPlan& p, bool cached) {
  int n = 0;
  for (const StageRow& row : kStages) n += stage_present(p, row.id, cached) ? 1 : 0;
  return n;
}

const char* stage_display(const std::string& id) {
  for (const StageRow& row : kStages)
    if (id == row.name) return row.display;
  return "";
}

}  // namespace attention_lab
