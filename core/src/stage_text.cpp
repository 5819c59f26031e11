// The trace's texts of a stage (stage_text): its title and formula, the variant of the stage's texts
// (stage_texts.hpp) that fits the plan with its `{name}` fields filled in, and the names of its axes,
// read off its row of the one stage table (stage_table.cpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "attention_lab/plan.hpp"
#include "attention_lab/text.hpp"
#include "stage_texts.hpp"

namespace attention_lab {

namespace {

using namespace stage_texts;

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
      if (!r.attention_text.empty()) return r.attention_text.c_str();
      return p.kv_projection_width_differs() ? "grouped" : p.layout == HeadsRule::Fused ? "fused" : p.batched ? "batched" : "unbatched";
    case StageId::Mask:
      if (p.mask == MaskKind::Inverted) return "inverted";
      if (!r.mask_text.empty()) return r.mask_text.c_str();
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
  switch (axes_kind(id)) {
    case Axes::Input:
      return p.batched ? std::vector<std::string>{"b", "num_tokens", "d_in"} : std::vector<std::string>{"num_tokens", "d_in"};
    case Axes::Keys:
    case Axes::CacheKeys:
      // a cached latent class re-projects every cached row: its keys and values span the keys too
      axes = head_axes(p, p.extra_kv || axes_kind(id) == Axes::CacheKeys || (cached >= 0 && p.latent_dim > 0) ? "key" : "num_tokens", p.head_dim_name);
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

StageText stage_text(const ForwardPlan& p, StageId id, int64_t num_tokens, bool training, int64_t cached, int64_t position) {
  const Fields fields = fields_of(p, id, num_tokens, cached, position >= 0 ? position : std::max<int64_t>(cached, 0));
  const std::string variant = variant_of(p, id, training, cached >= 0);
  StageText out;
  const Texts texts = texts_of(id);
  for (size_t i = 0; i < texts.count; ++i) {
    if (variant != texts.rows[i].variant) continue;
    out.title = fill(texts.rows[i].title, fields);
    out.formula = fill(texts.rows[i].formula, fields);
  }
  out.axes = axes_of(p, id, cached);
  return out;
}

}  // namespace attention_lab
