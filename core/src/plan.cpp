#include "attention_lab/plan.hpp"

#include "attention_lab/ops.hpp"
#include "attention_lab/text.hpp"

#include <algorithm>
#include <cmath>

namespace attention_lab {

namespace {
/// The PyTorch name of the module a role's weight belongs to ("out_proj", "proj", "multihead_attn.out_proj").
std::string module_of(const ClassSpec& r, Role role) {
  for (const auto& p : r.params) {
    if (p.role != role || p.layout != Layout::OutIn) continue;
    const size_t dot = p.name.rfind(".weight");
    return dot == std::string::npos ? p.name : p.name.substr(0, dot);
  }
  return "";
}
bool has_param(const ModuleConfig& c, Role role, Layout layout) {
  for (const auto& p : c.recipe().params)
    if (p.role == role && p.layout == layout && (p.presence == Presence::Always || c.qkv_bias)) return true;
  return false;
}
}  // namespace

ForwardPlan plan_forward(const ModuleConfig& c) {
  const ClassSpec& r = c.recipe();
  ForwardPlan p;
  p.config = c;
  p.batched = r.batched;
  p.layout = r.heads;
  p.query_heads = p.layout == HeadsRule::Single ? 1 : c.num_heads;
  p.kv_heads = p.layout == HeadsRule::Single ? 1 : c.kv_heads();
  p.group_size = p.kv_heads > 0 ? p.query_heads / p.kv_heads : 1;
  p.per_head_axes = p.layout != HeadsRule::Single;
  p.head_dim = c.head_dim();
  p.head_dim_name = p.layout == HeadsRule::Fused ? "head_dim" : "d_out";
  p.proj_width = p.query_heads * p.head_dim;
  p.output_width = c.output_width();
  p.scale_div = static_cast<float>(std::sqrt(static_cast<double>(p.head_dim)));
  p.mask = r.mask == MaskRule::None ? MaskKind::None : r.mask == MaskRule::InvertedBuffer ? MaskKind::Inverted : MaskKind::Causal;
  p.window = c.sliding_window_size;
  p.mask_buffer = r.mask == MaskRule::CausalBuffer || r.mask == MaskRule::InvertedBuffer;
  p.dropout_stage = r.dropout == DropoutRule::Weights;
  p.dropout = c.dropout;
  p.dropout_heads_outer = p.layout == HeadsRule::Modules;
  p.matmul_projection = r.queries_in_out();
  p.out_proj = has_param(c, Role::Out, Layout::OutIn);
  p.out_proj_bias = has_param(c, Role::Out, Layout::Vector);
  p.proj = has_param(c, Role::Proj, Layout::OutIn);
  p.extra_kv = c.extra_kv_tokens();
  p.latent_dim = has_param(c, Role::LatentDown, Layout::OutIn) ? c.latent_width() : 0;
  return p;
}

namespace {

struct StageRow {
  StageId id;
  const char* name;
};

// Trace order.
constexpr StageRow kStageNames[] = {
    {StageId::Input, "input"},
    {StageId::Queries, "queries"},
    {StageId::Latent, "c_kv"},
    {StageId::CacheLatent, "cache_c_kv"},
    {StageId::Keys, "keys"},
    {StageId::Values, "values"},
    {StageId::CacheK, "cache_k"},
    {StageId::CacheV, "cache_v"},
    {StageId::AttnScores, "attn_scores"},
    {StageId::Mask, "mask"},
    {StageId::AttnScoresMasked, "attn_scores_masked"},
    {StageId::AttnWeights, "attn_weights"},
    {StageId::AttnWeightsDropout, "attn_weights_dropout"},
    {StageId::ContextVec, "context_vec"},
    {StageId::HeadsConcat, "heads_concat"},
    {StageId::OutProj, "out_proj"},
    {StageId::Proj, "proj"},
    {StageId::Output, "output"},
};

/// The one table of stage texts: (id, variant) -> title and formula templates. `{name}` fields are
/// filled from the plan (see fields() below); a variant picks among texts of one stage.
struct TextRow {
  StageId id;
  const char* variant;  // "" when the stage has one text
  const char* title;
  const char* formula;
};

constexpr TextRow kStageTexts[] = {
    {StageId::Input, "", "Input tokens", "x"},
    // queries, keys and values share their texts: {Stage} "Queries", {stage} "queries", {W} "W_query".
    {StageId::Queries, "matmul", "{Stage}{per_head}", "{stage} = x @ {W}"},
    {StageId::Queries, "single", "{Stage}{per_head}", "{stage} = {W}(x)  (x @ weight.T{bias})"},
    {StageId::Queries, "modules", "{Stage}{per_head}", "{stage}[:, h] = heads[h].{W}(x)  (x @ weight.T{bias})"},
    {StageId::Queries, "fused", "{Stage}{per_head}", "{stage} = ({W}(x)).view(b, num_tokens, num_heads, head_dim).transpose(1, 2)  (x @ weight.T{bias})"},
    {StageId::Queries, "grouped", "{Stage} per key/value head ({kv_heads}, each shared by {group_size} query heads)",
     "{stage} = ({W}(x)).view(b, num_tokens, num_kv_groups, head_dim).transpose(1, 2)  (x @ weight.T{bias}; weight is ({kv_width}, d_in))"},
    {StageId::Queries, "packed", "{Stage}{per_head}",
     "{stage} = qkv(x).view(b, num_tokens, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4)[{index}]  (rows {rows} of qkv.weight{bias}){extra}"},
    {StageId::Queries, "in_proj", "{Stage}{per_head}",
     "{stage} = in_proj(x) split into 3, viewed as (b, num_heads, num_tokens, head_dim)  (rows {rows} of multihead_attn.in_proj_weight{bias}){extra}"},
    {StageId::Queries, "einsum", "{Stage}{per_head}",
     "{stage} = torch.einsum(\"bnd,do->bno\", x, {W}){einsum_bias}.view(b, num_tokens, num_heads, head_dim).transpose(1, 2)  (x @ {W}, no transpose)"},
    {StageId::Queries, "latent", "{Stage} per head, re-projected from the latent c_kv",
     "{stage} = {Wup}(c_kv).view(b, num_tokens, num_heads, head_dim).transpose(1, 2)  (c_kv @ weight.T{bias}; weight is (d_out, {latent_dim}))"},
    {StageId::Latent, "", "Latent c_kv: {latent_dim} numbers per token, all a KV cache of this module stores (keys and values are re-projected from it)",
     "c_kv = {Wdown}(x)  (x @ weight.T{bias}; weight is ({latent_dim}, d_in))"},
    {StageId::Queries, "latent_cached", "{Stage} per head, re-projected from every cached latent row ({cached} held, then the chunk's {num_tokens})",
     "{stage} = {Wup}(cache_c_kv).view(b, keys, num_heads, head_dim).transpose(1, 2)  (cache_c_kv @ weight.T{bias}; weight is (d_out, {latent_dim}))"},
    {StageId::CacheLatent, "", "Cached latent c_kv: the {cached} rows held before this chunk, then its {num_tokens}: all the KV cache holds ({latent_dim} floats per token)",
     "cache_c_kv = torch.cat([cache_c_kv, c_kv], dim=1): keys and values are re-projected from all of it at every step"},
    {StageId::CacheK, "", "Cached keys: the {cached} held before this chunk, then its {num_tokens}",
     "cache_k = torch.cat([cache_k, keys_new], dim=-2): every key the chunk's queries read"},
    {StageId::CacheV, "", "Cached values: the {cached} held before this chunk, then its {num_tokens}", "cache_v = torch.cat([cache_v, values_new], dim=-2)"},
    {StageId::AttnScores, "unbatched", "Attention scores{per_head}", "queries @ keys.T"},
    {StageId::AttnScores, "batched", "Attention scores{per_head}", "queries @ keys.transpose(1, 2)"},
    {StageId::AttnScores, "fused", "Attention scores{per_head}", "queries @ keys.transpose(2, 3)"},
    {StageId::AttnScores, "grouped", "Attention scores per query head (query head h uses key head h // {group_size})",
     "queries @ keys.repeat_interleave({group_size}, dim=1).transpose(2, 3)"},
    {StageId::AttnScores, "sdpa", "Attention scores{per_head}",
     "queries @ keys.transpose(-2, -1), inside scaled_dot_product_attention (shown before its 1/sqrt(head_dim) scaling)"},
    {StageId::AttnScores, "flex", "Attention scores{per_head}", "queries @ keys.transpose(-2, -1), inside flex_attention (shown before its 1/sqrt(head_dim) scaling)"},
    {StageId::AttnScores, "nn_mha", "Attention scores{per_head}",
     "queries @ keys.transpose(-2, -1), inside nn.MultiheadAttention (shown before its 1/sqrt(head_dim) scaling){extra_key}"},
    {StageId::Mask, "inverted", "Inverted mask: the buffer triu(ones, diagonal=1).bool() passed to scaled_dot_product_attention, where True means \"attend\"",
     "attn_mask = self.mask[:num_tokens, :num_tokens]: True above the diagonal takes part, so 1 here marks every key at or before the query (hidden)"},
    {StageId::Mask, "is_causal", "Causal mask for the {num_tokens} tokens given (is_causal=True: built by scaled_dot_product_attention; context_length is not read)",
     "attn_mask = torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril()  (True = takes part)"},
    {StageId::Mask, "flex",
     "Causal block mask for the {num_tokens} tokens given (create_block_mask(causal, ..., num_tokens, num_tokens) in each forward; context_length is not read)",
     "causal(b, h, q_idx, kv_idx) = q_idx >= kv_idx"},
    {StageId::Mask, "bool_buffer", "Causal mask (top-left {num_tokens} x {num_tokens} of the {context_length} x {context_length} bool buffer){extra_mask}",
     "attn_mask = self.mask[:num_tokens, :num_tokens]  (True = masked in nn.MultiheadAttention)"},
    {StageId::Mask, "buffer", "Causal mask (top-left {num_tokens} x {num_tokens} of the {context_length} x {context_length} buffer)",
     "mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)[:num_tokens, :num_tokens]"},
    {StageId::Mask, "tokens", "Causal mask for the {num_tokens} tokens given (no context_length: built each forward)",
     "mask = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0), positions = torch.arange(num_tokens)"},
    {StageId::Mask, "window", "Sliding-window causal mask: each query sees itself and at most {window_before} before it (sliding_window_size = {window})",
     "mask = (diff < 0) | (diff >= {window}), diff = q_positions.unsqueeze(-1) - k_positions.unsqueeze(0)"},
    {StageId::AttnScoresMasked, "", "Masked scores (future keys set to -inf)", "attn_scores.masked_fill_(mask.bool(), -torch.inf)"},
    {StageId::AttnScoresMasked, "window", "Masked scores (future keys and keys {window} or more tokens back set to -inf)", "attn_scores.masked_fill_(mask, -torch.inf)"},
    {StageId::AttnScoresMasked, "inverted", "Masked scores (the inverted mask: keys at or before each query set to -inf)",
     "attn_scores + attn_mask, where the mask adds -inf wherever it is False (on and below the diagonal)"},
    {StageId::AttnWeights, "sdpa", "Attention weights{per_head} (each row sums to 1; a row with every key hidden is NaN)",
     "softmax((queries / {scale}) @ keys.T + mask, dim=-1): PyTorch scales the queries by 1/sqrt(head_dim), head_dim = {head_dim}"},
    {StageId::AttnWeights, "", "Attention weights{per_head} (each row sums to 1)", "torch.softmax(attn_scores / d_k**0.5, dim=-1), d_k = {head_dim}: scores divided by {scale}"},
    {StageId::AttnWeightsDropout, "train", "Attention weights after dropout (p = {p})",
     "dropout(attn_weights): each weight zeroed with probability {p}, survivors x 1/(1-p) = {kept}; rows no longer sum to 1"},
    {StageId::AttnWeightsDropout, "all", "Attention weights after dropout (p = 1: every weight dropped)",
     "dropout(attn_weights) with p = 1: attn_weights x 0, every weight zero (PyTorch draws no random numbers for p = 1)"},
    {StageId::AttnWeightsDropout, "eval", "Attention weights after dropout (eval: dropout skipped)", "dropout(attn_weights) = attn_weights in eval mode"},
    {StageId::AttnWeightsDropout, "p0", "Attention weights after dropout (dropout = 0.0: nothing dropped)", "dropout(attn_weights) = attn_weights when p = 0"},
    {StageId::ContextVec, "", "Context vectors{per_head}", "context_vec = attn_weights @ values"},
    {StageId::ContextVec, "grouped", "Context vectors per query head", "context_vec = attn_weights @ values.repeat_interleave({group_size}, dim=1)"},
    {StageId::HeadsConcat, "modules", "Heads concatenated: width num_heads x d_out = {num_heads} x {head_dim} = {width}",
     "torch.cat([head(x) for head in heads], dim=-1): head h fills columns h*d_out to (h+1)*d_out-1"},
    {StageId::HeadsConcat, "fused", "Heads merged back to tokens: width d_out = {d_out}",
     "context_vec.transpose(1, 2).contiguous().view(b, num_tokens, d_out): (t, h, j) -> column h*head_dim + j"},
    {StageId::OutProj, "", "Output projection{out_named}", "{out}(context_vec) = context_vec @ {out}.weight.T + {out}.bias"},
    {StageId::OutProj, "nobias", "Output projection ({out_comma}no bias)", "{out}(context_vec) = context_vec @ {out}.weight.T"},
    {StageId::Proj, "", "The class's own projection after nn.MultiheadAttention (proj)", "proj(attn_output) = attn_output @ proj.weight.T + proj.bias"},
    {StageId::Output, "", "Output: width {width} = {rule}", "output"},
};

std::string fmt(double v, int precision = 4) { return format_g(v, precision); }

std::string fill(const std::string& text, const std::vector<std::pair<std::string, std::string>>& fields) {
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

}  // namespace

const char* stage_id_name(StageId id) {
  for (const auto& row : kStageNames)
    if (row.id == id) return row.name;
  return "";
}

std::vector<HeadShare> head_shares(const ForwardPlan& p, int64_t parts, bool training) {
  const bool dropout_acts = p.dropout_stage && training && p.dropout > 0.0;
  const int64_t units = p.kv_heads;  // key/value heads, each with its group of query heads
  const int64_t n = p.layout == HeadsRule::Single || dropout_acts ? 1 : std::max<int64_t>(1, std::min(parts, units));
  if (n == 1) return {{0, p.query_heads}};
  std::vector<HeadShare> shares;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t begin = i * units / n, end = (i + 1) * units / n;
    shares.push_back({begin * p.group_size, (end - begin) * p.group_size});
  }
  return shares;
}

bool stage_present(const ForwardPlan& p, StageId id, bool cached) {
  switch (id) {
    case StageId::CacheK:
    case StageId::CacheV:
      return cached && p.latent_dim == 0;
    case StageId::CacheLatent:
      return cached && p.latent_dim > 0;
    case StageId::Mask:
    case StageId::AttnScoresMasked:
      return p.mask != MaskKind::None;
    case StageId::AttnWeightsDropout:
      return p.dropout_stage;
    case StageId::HeadsConcat:
      return p.layout != HeadsRule::Single;
    case StageId::OutProj:
      return p.out_proj;
    case StageId::Proj:
      return p.proj;
    case StageId::Latent:
      return p.latent_dim > 0;
    default:
      return true;
  }
}

StageText stage_text(const ForwardPlan& p, StageId id, int64_t num_tokens, bool training, int64_t cached) {
  const ModuleConfig& c = p.config;
  std::vector<std::pair<std::string, std::string>> fields = {
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
      {"out", module_of(c.recipe(), Role::Out)},
      {"out_named", module_of(c.recipe(), Role::Out) == "out_proj" ? "" : " (" + module_of(c.recipe(), Role::Out) + ")"},
      {"out_comma", module_of(c.recipe(), Role::Out) == "out_proj" ? "" : module_of(c.recipe(), Role::Out) + ", "},
      {"extra_key", p.extra_kv ? "; the last key is multihead_attn.bias_k, which every query sees" : ""},
      {"extra_mask", p.extra_kv ? ", padded with one column every query sees (bias_k's key)" : ""},
      {"latent_dim", std::to_string(p.latent_dim)},
      {"Wdown", module_of(c.recipe(), Role::LatentDown)},
  };
  const bool projection = id == StageId::Queries || id == StageId::Keys || id == StageId::Values;
  if (projection) {
    const int m = id == StageId::Queries ? 0 : id == StageId::Keys ? 1 : 2;
    fields.push_back({"Stage", m == 0 ? "Queries" : m == 1 ? "Keys" : "Values"});
    fields.push_back({"stage", stage_id_name(id)});
    fields.push_back({"W", m == 0 ? "W_query" : m == 1 ? "W_key" : "W_value"});
    fields.push_back({"index", std::to_string(m)});
    fields.push_back({"einsum_bias", c.qkv_bias ? std::string(" + bias_") + "qkv"[m] : ""});
    fields.push_back({"rows", std::to_string(m * c.d_out) + ":" + std::to_string((m + 1) * c.d_out)});
    fields.push_back({"Wup", m == 1 ? module_of(c.recipe(), Role::KeyUp) : m == 2 ? module_of(c.recipe(), Role::ValueUp) : ""});
    fields.push_back({"extra", p.extra_kv && m > 0 ? std::string(", then multihead_attn.bias_") + (m == 1 ? "k" : "v") + " appended as one more token" : ""});
  }
  const StageId row_id = projection ? StageId::Queries : id;
  const std::string variant = variant_of(p, id, training, cached >= 0);
  StageText out;
  for (const auto& row : kStageTexts) {
    if (row.id != row_id || variant != row.variant) continue;
    out.title = fill(row.title, fields);
    out.formula = fill(row.formula, fields);
  }
  switch (id) {
    case StageId::Input:
      out.axes = p.batched ? std::vector<std::string>{"b", "num_tokens", "d_in"} : std::vector<std::string>{"num_tokens", "d_in"};
      break;
    case StageId::Keys:
    case StageId::Values:
    case StageId::CacheK:
    case StageId::CacheV:
      // a cached latent class re-projects every cached row: its keys and values span the keys too
      out.axes = head_axes(p, p.extra_kv || id == StageId::CacheK || id == StageId::CacheV || (cached >= 0 && p.latent_dim > 0) ? "key" : "num_tokens", p.head_dim_name);
      if (p.kv_projection_width_differs()) out.axes[1] = "num_kv_groups";
      break;
    case StageId::Queries:
    case StageId::ContextVec:
      out.axes = head_axes(p, "num_tokens", p.head_dim_name);
      break;
    case StageId::Latent:
      out.axes = {"b", "num_tokens", "latent_dim"};
      break;
    case StageId::CacheLatent:
      out.axes = {"b", "key", "latent_dim"};
      break;
    case StageId::Mask:
      out.axes = {"query", "key"};
      break;
    case StageId::HeadsConcat:
    case StageId::OutProj:
    case StageId::Proj:
    case StageId::Output:
      out.axes = {"b", "num_tokens", p.layout == HeadsRule::Modules ? "num_heads*d_out" : "d_out"};
      if (!p.batched) out.axes.erase(out.axes.begin());
      break;
    default:
      out.axes = head_axes(p, "query", "key");
  }
  return out;
}

double plan_heap_bytes(const ForwardPlan& p, const std::optional<Shape>& input_shape, bool trace) {
  // The inverted mask's output always holds NaN (its last query sees no key), so a forward asked for
  // warnings reruns itself traced to name the first non-finite stage: count the trace.
  if (p.mask == MaskKind::Inverted) trace = true;
  const ModuleConfig& c = p.config;
  const double d_in = static_cast<double>(c.d_in), d_out = static_cast<double>(c.d_out);
  const double heads = static_cast<double>(p.query_heads), proj = static_cast<double>(p.proj_width);
  // The module: each weight once, prepared (packed) for the forward, and the biases.
  // ops::packed_floats in double: the estimate is asked about sizes whose product overflows int64
  // (it is what refuses them; found by fuzz_validator).
  const double panel = static_cast<double>(ops::packed_floats(1, 1));
  const auto packed = [panel](double k, double n) { return std::ceil(n / panel) * k * panel; };
  const double kv_width = static_cast<double>(p.kv_heads * p.head_dim), kv_heads = static_cast<double>(p.kv_heads);
  // Keys and values read x (d_in wide) or the latent (latent_dim wide, after its own projection).
  const double latent = static_cast<double>(p.latent_dim), kv_in = p.latent_dim > 0 ? latent : d_in;
  double floats = packed(d_in, proj) + 2 * packed(kv_in, kv_width) + (c.qkv_bias ? proj + 2 * kv_width : 0);
  if (p.latent_dim > 0) floats += packed(d_in, latent) + (c.qkv_bias ? latent : 0);
  if (p.out_proj) floats += packed(d_out, d_out) + (p.out_proj_bias ? d_out : 0);
  if (p.proj) floats += packed(d_out, d_out) + d_out;
  floats += 2.0 * static_cast<double>(p.extra_kv) * kv_width;  // bias_k, bias_v
  if (input_shape && !input_shape->empty()) {
    const Shape& s = *input_shape;
    const double b = s.size() == 3 ? static_cast<double>(s[0]) : 1.0;
    const double t = static_cast<double>(s.size() >= 2 ? s[s.size() - 2] : 1);
    const double tk = t + static_cast<double>(p.extra_kv);  // keys: the tokens and any appended ones
    const double width = static_cast<double>(p.output_width);
    const double hd = static_cast<double>(p.head_dim);
    // What the forward allocates: the input copy, q/k/v per head and the projection scratch, one
    // (T, Tk) slab with the packed keys and values of one head, the context per head, the merged
    // heads and the output (and the second projection's output).
    floats += b * t * d_in + b * heads * t * hd + 2 * b * kv_heads * tk * hd + b * t * proj + t * tk + packed(hd, tk) + packed(tk, hd) + b * heads * t * hd + b * t * proj +
              b * t * width * (p.proj ? 2 : 1) + b * t * latent;  // and the latent c_kv (b, T, latent_dim)
    if (trace) {
      // What only the trace keeps (the rest is moved into it): the four (b, H, T, Tk) stages, the
      // (T, Tk) mask, and copies of the input, out_proj, proj and the output.
      floats += 4 * b * heads * t * tk + t * tk + b * t * d_in + (p.proj ? 3 : 2) * b * t * width;
      // and each of its stages' summaries: at most one per (b, head) slice, 16 floats' worth each
      // (TensorSummary: 3 doubles and 5 int64), and its texts (title, formula, axes and the fields that
      // fill them: about 256 bytes a stage) and its Stage record (its shape, a view's source; the
      // trace's vector of them doubles as it grows: 128 bytes a stage)
      const double stages = p.latent_dim > 0 ? 15 : 14;  // c_kv only with a latent
      floats += stages * b * heads * 16 + stages * 96;
    }
  }
  return floats * 4.0;
}

double plan_result_bytes(const ForwardPlan& p, const std::optional<Shape>& input_shape, bool trace) {
  if (!input_shape || input_shape->empty()) return 0.0;
  const ModuleConfig& c = p.config;
  const Shape& s = *input_shape;
  const double b = s.size() == 3 ? static_cast<double>(s[0]) : 1.0;
  const double t = static_cast<double>(s.size() >= 2 ? s[s.size() - 2] : 1);
  const double tk = t + static_cast<double>(p.extra_kv);
  const double heads = static_cast<double>(p.query_heads), kv_heads = static_cast<double>(p.kv_heads), hd = static_cast<double>(p.head_dim);
  const double out = b * t * static_cast<double>(p.output_width);  // (b, num_tokens, width)
  double floats = out;
  if (trace) {
    // Each stage the forward emits (stage_present), at its size: the input, q/k/v, the (b, H, T, Tk)
    // scores and weights (masked and dropped when the plan has them), the (T, Tk) mask, the context,
    // the merged heads, out_proj, proj and the output.
    const double slab = b * heads * t * tk;
    int stages = 0;
    for (int id = 0; id <= static_cast<int>(StageId::Output); ++id) {
      const StageId stage = static_cast<StageId>(id);
      if (!stage_present(p, stage)) continue;
      ++stages;
      switch (stage) {
        case StageId::Input:
          floats += b * t * static_cast<double>(c.d_in);
          break;
        case StageId::Queries:
        case StageId::ContextVec:
          floats += b * heads * t * hd;
          break;
        case StageId::Keys:
        case StageId::Values:
          floats += b * kv_heads * tk * hd;
          break;
        case StageId::Mask:
          floats += t * tk;
          break;
        case StageId::Latent:
          floats += b * t * static_cast<double>(p.latent_dim);
          break;
        case StageId::HeadsConcat:
          floats += b * t * static_cast<double>(p.proj_width);
          break;
        case StageId::OutProj:
        case StageId::Proj:
          floats += b * t * static_cast<double>(c.d_out);
          break;
        case StageId::Output:
          floats += out;
          break;
        default:
          floats += slab;  // attn_scores, attn_scores_masked, attn_weights, attn_weights_dropout
      }
    }
    // and each stage's JS objects: its summaries (one per (b, head) slice at most, plus the whole: an
    // object of six numbers, 256 bytes' worth each) and its texts, shape and typed-array headers (1 KiB)
    floats += static_cast<double>(stages) * ((b * heads + 1) * 64 + 256);
  }
  return floats * 4.0;
}

double plan_resident_bytes(const ForwardPlan& p, const std::optional<Shape>& input_shape) {
  double bytes = plan_heap_bytes(p, input_shape, true) + plan_result_bytes(p, input_shape, false);
  if (!input_shape || input_shape->empty()) return bytes;
  const Shape& s = *input_shape;
  const double b = s.size() == 3 ? static_cast<double>(s[0]) : 1.0;
  const double t = static_cast<double>(s.size() >= 2 ? s[s.size() - 2] : 1);
  const double tk = t + static_cast<double>(p.extra_kv);
  const double heads = static_cast<double>(p.query_heads);
  const double stages = p.latent_dim > 0 ? 15 : 14;
  // Less the stages it keeps as views (ForwardOptions::stage_views), which plan_heap_bytes counts as
  // copies: the masked scores, and the dropout stage when dropout never acts (p = 0; with p > 0 a
  // training run keeps its own).
  const double slab = b * heads * t * tk;
  const int views = (stage_present(p, StageId::AttnScoresMasked) ? 1 : 0) + (stage_present(p, StageId::AttnWeightsDropout) && !(p.dropout > 0.0) ? 1 : 0);
  bytes -= 4.0 * views * slab;
  // The stages' facts copied out (Session::run_resident's TraceStage list, then its JS objects): the
  // summaries twice over (16 floats each, then a JS object of 256 bytes' worth) and the texts.
  double floats = stages * (b * heads + 1) * (16 + 64) + stages * 256;
  // and what one query copies out while it runs: at most a whole stage (trace_data, an export), once
  // in the heap and once into JS: the largest is a (b, H, T, Tk) slab or a (b, num_tokens, width) activation.
  const double widest = static_cast<double>(std::max({p.config.d_in, p.proj_width, p.output_width, p.config.d_out, p.latent_dim}));
  floats += 2 * std::max({b * heads * t * tk, b * t * widest, b * heads * tk * static_cast<double>(p.head_dim)});
  return bytes + floats * 4.0;
}

double plan_bytes(const ForwardPlan& p, const std::optional<Shape>& input_shape, bool trace) {
  double heap = plan_heap_bytes(p, input_shape, trace);
  // An output that is certainly non-finite (the inverted mask's NaN row) makes an untraced forward run
  // again traced, to name the stage that turned non-finite (forward's non_finite_stage warning): its
  // peak is that traced run's, beside the output it keeps.
  if (!trace && p.mask == MaskKind::Inverted && input_shape) heap = std::max(heap, plan_heap_bytes(p, input_shape, true) + plan_result_bytes(p, input_shape, false));
  return heap + plan_result_bytes(p, input_shape, trace);
}

}  // namespace attention_lab
