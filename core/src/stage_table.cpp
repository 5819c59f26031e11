// The one stage table: each trace stage's id, name, title and formula variants, when a forward emits it,
// its axes, size, buffers and how the page shows it, one row per StageId in trace order (checked at
// compile time). The trace's texts (stage_text), the memory estimates (plan.cpp's sums over it) and the
// .d.ts StageId union (scripts/stage-ids.mjs reads the kStages rows below: keep one row a line) come from here.
#include "attention_lab/stage_table.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "attention_lab/text.hpp"
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

/// The names of a stage's axes (stage_text's axes).
enum class Axes { Input, Tokens, Keys, CacheKeys, Latent, LatentCache, Mask, Slab, Merged, Rope };

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

struct Texts {
  const TextVariant* rows;
  size_t count;
};
template <size_t N>
constexpr Texts texts(const TextVariant (&rows)[N]) {
  return {rows, N};
}

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

/// The PyTorch name of the module a role's weight belongs to ("out_proj", "proj", "multihead_attn.out_proj").
std::string module_of(const ClassSpec& r, Role role) {
  for (const auto& p : r.params) {
    if (p.role != role || p.layout != Layout::OutIn) continue;
    const size_t dot = p.name.rfind(".weight");
    return dot == std::string::npos ? p.name : p.name.substr(0, dot);
  }
  return "";
}

std::string fmt(double v, int precision = 4) { return format_g(v, precision); }

using Fields = std::vector<std::pair<std::string, std::string>>;

std::string fill(const std::string& text, const Fields& fields) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '{') {
      const size_t end = text.find('}', i);
      const std::string key = text.substr(i + 1, end - i - 1);
      for (const auto& [k, v] : fields)
        if (k == key) out += v;
      i = end + 1;
    } else {
      out += text[i++];
    }
  }
  return out;
}

const char* variant_of(const ForwardPlan& p, StageId id, bool training, bool cached) {
  const ClassSpec& r = p.config.recipe();
  switch (id) {
    case StageId::Keys:
    case StageId::Values:
      if (p.latent_dim > 0) return cached ? "latent_cached" : "latent";
      if (p.kv_projection_width_differs()) return "grouped";
      [[fallthrough]];
    case StageId::Queries:
      if (!r.qkv_text.empty()) return r.qkv_text.c_str();
      return p.matmul_projection ? "matmul" : p.layout == HeadsRule::Modules ? "modules" : p.layout == HeadsRule::Fused ? "fused" : "single";
    case StageId::AttnScores:
      if (!r.attention_text.empty()) return r.attention_text == "sdpa" ? "sdpa" : r.attention_text == "flex" ? "flex" : "nn_mha";
      return p.kv_projection_width_differs() ? "grouped" : p.layout == HeadsRule::Fused ? "fused" : p.batched ? "batched" : "unbatched";
    case StageId::Mask:
      if (p.mask == MaskKind::Inverted) return "inverted";
      if (r.attention_text == "flex") return "flex";
      if (r.mask_buffer_bytes == 1) return "bool_buffer";
      if (r.attention_text == "sdpa") return "is_causal";
      return p.window > 0 ? "window" : p.mask_buffer ? "buffer" : "tokens";
    case StageId::AttnScoresMasked:
      if (p.mask == MaskKind::Inverted) return "inverted";
      return p.window > 0 ? "window" : "";
    case StageId::AttnWeights:
      return r.scale_queries ? "sdpa" : "";
    case StageId::ContextVec:
      return p.kv_projection_width_differs() ? "grouped" : "";
    case StageId::OutProj:
      return p.out_proj_bias ? "" : "nobias";
    case StageId::AttnWeightsDropout:
      return training && p.dropout >= 1.0 ? "all" : training && p.dropout > 0.0 ? "train" : !training ? "eval" : "p0";
    case StageId::HeadsConcat:
      return p.layout == HeadsRule::Modules ? "modules" : "fused";
    default:
      return "";
  }
}

std::vector<std::string> head_axes(const ForwardPlan& p, const std::string& a, const std::string& last) {
  if (!p.batched) return {a, last};
  if (!p.per_head_axes) return {"b", a, last};
  return {"b", "num_heads", a, last};
}

/// The `{name}` fields of stage `id`'s texts (TextVariant).
Fields fields_of(const ForwardPlan& p, StageId id, int64_t num_tokens, int64_t cached, int64_t position) {
  const ModuleConfig& c = p.config;
  const std::string out = module_of(c.recipe(), Role::Out);
  Fields fields = {
      {"per_head", p.per_head_axes ? " per head" : ""},
      {"bias", c.qkv_bias ? " + bias" : ""},
      {"num_tokens", std::to_string(num_tokens)},
      {"cached", std::to_string(std::max<int64_t>(cached, 0))},
      {"context_length", std::to_string(c.context_length)},
      {"head_dim", std::to_string(p.head_dim)},
      {"num_heads", std::to_string(p.query_heads)},
      {"d_out", std::to_string(c.d_out)},
      {"width", std::to_string(p.output_width)},
      {"rule", c.output_width_rule()},
      {"scale", fmt(p.scale_div, 6)},
      {"p", fmt(p.dropout)},
      {"kept", p.dropout < 1.0 ? fmt(1.0f / static_cast<float>(1.0 - p.dropout), 6) : std::string("inf")},
      {"kv_heads", std::to_string(p.kv_heads)},
      {"group_size", std::to_string(p.group_size)},
      {"kv_width", std::to_string(p.kv_heads * p.head_dim)},
      {"window", std::to_string(p.window)},
      {"window_before", std::to_string(p.window > 0 ? p.window - 1 : 0) + (p.window == 2 ? " key" : " keys")},
      {"out", out},
      {"out_named", out == "out_proj" ? "" : " (" + out + ")"},
      {"out_comma", out == "out_proj" ? "" : out + ", "},
      {"extra_key", p.extra_kv ? "; the last key is multihead_attn.bias_k, which every query sees" : ""},
      {"extra_mask", p.extra_kv ? ", padded with one column every query sees (bias_k's key)" : ""},
      {"latent_dim", std::to_string(p.latent_dim)},
      {"Wdown", module_of(c.recipe(), Role::LatentDown)},
      {"position", std::to_string(position)},
      {"last", std::to_string(position + num_tokens - 1)},
      {"theta", fmt(p.rope_theta, 8)},
      {"Wgate", module_of(c.recipe(), Role::Gate)},
      {"fill", std::isinf(p.mask_fill) ? "-inf" : "torch.finfo(float32).min = " + fmt(p.mask_fill, 5) + ", not -inf"},
      {"fill_code", std::isinf(p.mask_fill) ? "-torch.inf" : "torch.finfo(attn_scores.dtype).min"},
      {"fill_note", std::isinf(p.mask_fill) ? "" : ": their weights are still exactly 0 (exp underflows) unless a query's every key is masked"},
  };
  if (id == StageId::Queries || id == StageId::Keys || id == StageId::Values || id == StageId::QueriesRope || id == StageId::KeysRope) {  // kProjectionTexts, kRopeTexts
    const int m = id == StageId::Queries || id == StageId::QueriesRope ? 0 : id == StageId::Keys || id == StageId::KeysRope ? 1 : 2;
    fields.push_back({"Stage", m == 0 ? "Queries" : m == 1 ? "Keys" : "Values"});
    fields.push_back({"stage", m == 0 ? "queries" : m == 1 ? "keys" : "values"});
    fields.push_back({"W", m == 0 ? "W_query" : m == 1 ? "W_key" : "W_value"});
    fields.push_back({"index", std::to_string(m)});
    fields.push_back({"einsum_bias", c.qkv_bias ? std::string(" + bias_") + "qkv"[m] : ""});
    fields.push_back({"rows", std::to_string(m * c.d_out) + ":" + std::to_string((m + 1) * c.d_out)});
    fields.push_back({"Wup", m == 1 ? module_of(c.recipe(), Role::KeyUp) : m == 2 ? module_of(c.recipe(), Role::ValueUp) : ""});
    fields.push_back({"extra", p.extra_kv && m > 0 ? std::string(", then multihead_attn.bias_") + (m == 1 ? "k" : "v") + " appended as one more token" : ""});
  }
  return fields;
}

/// The names of stage `id`'s axes (kStages' Axes).
std::vector<std::string> axes_of(const ForwardPlan& p, StageId id, int64_t cached) {
  std::vector<std::string> axes;
  switch (row_of(id).axes) {
    case Axes::Input:
      return p.batched ? std::vector<std::string>{"b", "num_tokens", "d_in"} : std::vector<std::string>{"num_tokens", "d_in"};
    case Axes::Keys:
    case Axes::CacheKeys:
      // a cached latent class re-projects every cached row: its keys and values span the keys too
      axes = head_axes(p, p.extra_kv || row_of(id).axes == Axes::CacheKeys || (cached >= 0 && p.latent_dim > 0) ? "key" : "num_tokens", p.head_dim_name);
      if (p.kv_projection_width_differs()) axes[1] = "num_kv_groups";
      return axes;
    case Axes::Tokens:
      return head_axes(p, "num_tokens", p.head_dim_name);
    case Axes::Latent:
      return {"b", "num_tokens", "latent_dim"};
    case Axes::LatentCache:
      return {"b", "key", "latent_dim"};
    case Axes::Mask:
      return {"query", "key"};
    case Axes::Merged:
      axes = {"b", "num_tokens", p.layout == HeadsRule::Modules ? "num_heads*d_out" : "d_out"};
      if (!p.batched) axes.erase(axes.begin());
      return axes;
    case Axes::Rope:
      return {"position", p.head_dim_name};
    case Axes::Slab:
      break;
  }
  return head_axes(p, "query", "key");
}

}  // namespace

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

StageText stage_text(const ForwardPlan& p, StageId id, int64_t num_tokens, bool training, int64_t cached, int64_t position) {
  const Fields fields = fields_of(p, id, num_tokens, cached, position >= 0 ? position : std::max<int64_t>(cached, 0));
  const std::string variant = variant_of(p, id, training, cached >= 0);
  StageText out;
  const Texts& texts = row_of(id).texts;
  for (size_t i = 0; i < texts.count; ++i) {
    if (variant != texts.rows[i].variant) continue;
    out.title = fill(texts.rows[i].title, fields);
    out.formula = fill(texts.rows[i].formula, fields);
  }
  out.axes = axes_of(p, id, cached);
  return out;
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
