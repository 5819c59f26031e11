#include "attention_lab/modules.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <sstream>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/ops.hpp"
#include "attention_lab/validator.hpp"

namespace attention_lab {

namespace {

/// nn.Linear's kaiming_uniform_(a=sqrt(5)) bound, in double exactly as torch.nn.init computes it.
float linear_weight_bound(int64_t fan_in) {
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double std_dev = gain / std::sqrt(static_cast<double>(fan_in));
  return static_cast<float>(std::sqrt(3.0) * std_dev);
}
float linear_bias_bound(int64_t fan_in) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in))); }

void add_linear(std::vector<ParameterSpec>& specs, const std::string& prefix, int64_t in, int64_t out, bool bias) {
  specs.push_back({prefix + ".weight", {out, in}, ParameterSpec::Init::Uniform, linear_weight_bound(in)});
  if (bias) specs.push_back({prefix + ".bias", {out}, ParameterSpec::Init::Uniform, linear_bias_bound(in)});
}

void add_qkv(std::vector<ParameterSpec>& specs, const std::string& prefix, const ModuleConfig& c, int64_t out) {
  for (const char* name : {"W_query", "W_key", "W_value"}) add_linear(specs, prefix + name, c.d_in, out, c.qkv_bias);
}

}  // namespace

std::vector<ParameterSpec> parameter_specs(const ModuleConfig& c) {
  std::vector<ParameterSpec> specs;
  switch (c.kind) {
    case ClassKind::SelfAttentionV1:
      for (const char* name : {"W_query", "W_key", "W_value"}) specs.push_back({name, {c.d_in, c.d_out}, ParameterSpec::Init::Rand, 0.0f});
      break;
    case ClassKind::SelfAttentionV2:
    case ClassKind::CausalAttention:
      add_qkv(specs, "", c, c.d_out);
      break;
    case ClassKind::MultiHeadAttentionWrapper:
      for (int64_t h = 0; h < c.num_heads; ++h) add_qkv(specs, "heads." + std::to_string(h) + ".", c, c.d_out);
      break;
    case ClassKind::MultiHeadAttention:
      add_qkv(specs, "", c, c.d_out);
      add_linear(specs, "out_proj", c.d_out, c.d_out, true);
      break;
  }
  return specs;
}

int64_t parameter_count(const ModuleConfig& config) {
  int64_t n = 0;
  for (const auto& s : parameter_specs(config)) n += numel_of(s.shape);
  return n;
}

AttentionModule::AttentionModule(const ModuleConfig& config) : config_(config) {
  try {
    for (auto& spec : parameter_specs(config)) params_.push_back({spec.name, Tensor(spec.shape)});
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", "d_out", "not enough memory for the parameters of " + config.python_call(), "Use smaller sizes.");
  }
}

AttentionModule::AttentionModule(const ModuleConfig& config, TorchGenerator& generator) : AttentionModule(config) {
  const auto specs = parameter_specs(config);
  for (size_t i = 0; i < specs.size(); ++i) {
    Tensor& t = params_[i].tensor;
    if (specs[i].init == ParameterSpec::Init::Rand) {
      for (float& v : t.data) v = generator.random_float();
    } else {
      generator.uniform(t.data.data(), t.numel(), -specs[i].bound, specs[i].bound);
    }
  }
}

const Tensor* AttentionModule::parameter(const std::string& name) const {
  for (const auto& p : params_)
    if (p.name == name) return &p.tensor;
  return nullptr;
}

void AttentionModule::set_parameter(const std::string& name, const Tensor& value) {
  for (auto& p : params_) {
    if (p.name != name) continue;
    if (p.tensor.shape != value.shape) {
      std::string hint = "Give a tensor of shape " + shape_string(p.tensor.shape) + ".";
      if (value.shape.size() == 2 && p.tensor.shape.size() == 2 && value.shape[0] == p.tensor.shape[1] && value.shape[1] == p.tensor.shape[0] &&
          value.shape[0] != value.shape[1])
        hint = "The shape is exactly reversed: it looks transposed. Use .T on it.";
      throw AttentionError("parameter_shape", name, name + " has shape " + shape_string(p.tensor.shape) + ", got " + shape_string(value.shape), hint);
    }
    if (static_cast<int64_t>(value.data.size()) != numel_of(value.shape)) {
      throw AttentionError("tensor_size", name, "the data does not fit shape " + shape_string(value.shape), "");
    }
    p.tensor.data = value.data;
    return;
  }
  std::vector<std::string> names;
  for (const auto& p : params_) names.push_back(p.name);
  const std::string guess = did_you_mean(name, names);
  std::string hint = guess.empty() ? "" : "Did you mean " + guess + "? ";
  hint += config_.class_name() + "'s parameters: ";
  for (size_t i = 0; i < names.size() && i < 8; ++i) hint += (i ? ", " : "") + names[i];
  if (names.size() > 8) hint += ", ...";
  throw AttentionError("unknown_parameter", name, config_.class_name() + " has no parameter named '" + name + "'", hint);
}

namespace {

std::string fmt(double v, int precision = 4) {
  std::ostringstream os;
  os.precision(precision);
  os << v;
  return os.str();
}

struct Tracer {
  std::vector<Stage>* out;
  void add(const char* id, std::string title, std::string formula, std::vector<std::string> axes, Tensor t) const {
    if (out != nullptr) out->push_back({id, std::move(title), std::move(formula), std::move(axes), std::move(t)});
  }
  bool on() const { return out != nullptr; }
};

}  // namespace

void check_input(const ModuleConfig& c, const Tensor& x, const std::string& what, double memory_budget_bytes) {
  // The data must fit the shape before the shape means anything (a shape whose product overflows
  // 64 bits fits no data).
  for (int64_t d : x.shape) {
    if (d < 0) throw AttentionError("tensor_shape", what, what + " has shape " + shape_string(x.shape) + " with a negative size", "Every size must be 0 or more.");
  }
  int64_t numel = 0;
  if (!checked_numel(x.shape, numel) || static_cast<int64_t>(x.data.size()) != numel) {
    throw AttentionError("tensor_size", what, what + " has shape " + shape_string(x.shape) + " but " + std::to_string(x.data.size()) + " values",
                         "Give exactly as many values as the product of the shape, row-major.");
  }
  std::vector<Diagnostic> input_problems;
  check_input_shape(c, x.shape, input_problems);
  for (const auto& d : input_problems) {
    if (d.severity == Severity::Error) throw AttentionError(d.code, d.slots.empty() ? what : d.slots.front(), d.message, d.hint);
  }
  if (estimate_bytes(c, x.shape) > memory_budget_bytes) {
    CheckOptions budget;
    budget.input_shape = x.shape;
    budget.memory_budget_bytes = memory_budget_bytes;
    for (const auto& d : check_config(c.class_name(), c.slots(), budget))
      if (d.code == "too_large") throw AttentionError(d.code, d.slots.empty() ? what : d.slots.front(), d.message, d.hint);
    throw AttentionError("too_large", what, "a forward pass of " + c.python_call() + " on " + shape_string(x.shape) + " is over the memory budget", "Use fewer tokens.");
  }
  for (size_t i = 0; i < x.data.size(); ++i) {
    if (!std::isfinite(x.data[i])) {
      const int64_t width = x.shape.back();
      throw AttentionError("non_finite_input", what,
                           "token " + std::to_string((static_cast<int64_t>(i) / width) % x.shape[x.shape.size() - 2]) + " has a non-finite value (" +
                               fmt(x.data[i]) + ") at position " + std::to_string(static_cast<int64_t>(i) % width),
                           "Every embedding value must be a finite number; NaN or inf would spread through every stage.");
    }
  }
}

Tensor AttentionModule::forward(const Tensor& x, const ForwardOptions& options) const {
  const ModuleConfig& c = config_;
  check_input(c, x, "x", options.memory_budget_bytes);
  const bool apply_dropout = c.has_dropout() && options.training && c.dropout > 0.0;
  if (apply_dropout && options.generator == nullptr) {
    throw AttentionError("generator_missing", "dropout", "dropout in training mode needs a random generator", "Pass a generator, or run in eval mode.");
  }

  const bool batched = c.batched();
  const int64_t b = batched ? x.shape[0] : 1;
  const int64_t T = x.shape[x.shape.size() - 2];
  const int64_t d_in = c.d_in;
  const int64_t H = (c.kind == ClassKind::MultiHeadAttentionWrapper || c.kind == ClassKind::MultiHeadAttention) ? c.num_heads : 1;
  const bool per_head = H > 1 || c.kind == ClassKind::MultiHeadAttentionWrapper || c.kind == ClassKind::MultiHeadAttention;
  const int64_t hd = c.head_dim();  // width of one head's q/k/v: d_out, or d_out / num_heads for MHA
  const int64_t width = c.output_width();
  const std::string hd_name = c.kind == ClassKind::MultiHeadAttention ? "head_dim" : "d_out";
  const Tracer trace{options.trace};

  // Axis names of a per-head tensor with last axis `last`.
  const auto head_axes = [&](const std::string& a, const std::string& last) {
    if (!batched) return std::vector<std::string>{a, last};
    if (!per_head) return std::vector<std::string>{"b", a, last};
    return std::vector<std::string>{"b", "num_heads", a, last};
  };
  const auto head_shape = [&](int64_t rows, int64_t cols) {
    if (!batched) return Shape{rows, cols};
    if (!per_head) return Shape{b, rows, cols};
    return Shape{b, H, rows, cols};
  };

  try {
    trace.add("input", "Input tokens", "x", batched ? std::vector<std::string>{"b", "num_tokens", "d_in"} : std::vector<std::string>{"num_tokens", "d_in"}, x);

    // Projections into (b, H, T, hd) row-major: head-major slabs of (T, hd).
    Tensor qkv[3] = {Tensor(head_shape(T, hd)), Tensor(head_shape(T, hd)), Tensor(head_shape(T, hd))};  // (b, H, T, hd)
    const char* names[3] = {"W_query", "W_key", "W_value"};
    std::vector<float> proj(static_cast<size_t>(b * T * (c.kind == ClassKind::MultiHeadAttention ? c.d_out : hd)));  // (b*T, d_out)
    const auto param_data = [&](const std::string& name) -> const float* {
      const Tensor* t = parameter(name);
      return t ? t->data.data() : nullptr;
    };
    for (int64_t h = 0; h < (c.kind == ClassKind::MultiHeadAttentionWrapper ? H : 1); ++h) {
      const std::string prefix = c.kind == ClassKind::MultiHeadAttentionWrapper ? "heads." + std::to_string(h) + "." : "";
      for (int m = 0; m < 3; ++m) {
        const std::string base = prefix + names[m];
        const int64_t out_width = c.kind == ClassKind::MultiHeadAttention ? c.d_out : hd;
        if (c.kind == ClassKind::SelfAttentionV1) {
          ops::matmul(x.data.data(), param_data(base), b * T, d_in, out_width, false, proj.data());  // (T, d_out)
        } else {
          ops::linear(x.data.data(), b * T, d_in, param_data(base + ".weight"), param_data(base + ".bias"), out_width, proj.data());  // (b*T, out)
        }
        float* dst = qkv[m].data.data();
        if (c.kind == ClassKind::MultiHeadAttention) {
          // view(b, T, H, hd).transpose(1, 2): (b, T, H, hd) -> (b, H, T, hd)
          for (int64_t bi = 0; bi < b; ++bi)
            for (int64_t t = 0; t < T; ++t)
              for (int64_t hh = 0; hh < H; ++hh)
                for (int64_t j = 0; j < hd; ++j) dst[((bi * H + hh) * T + t) * hd + j] = proj[static_cast<size_t>((bi * T + t) * c.d_out + hh * hd + j)];
        } else {
          // Wrapper head h (or the single head): (b, T, hd) into slot h of (b, H, T, hd)
          for (int64_t bi = 0; bi < b; ++bi)
            for (int64_t t = 0; t < T; ++t)
              for (int64_t j = 0; j < hd; ++j) dst[((bi * H + h) * T + t) * hd + j] = proj[static_cast<size_t>((bi * T + t) * hd + j)];
        }
      }
    }
    const std::string proj_formula_tail = c.kind == ClassKind::MultiHeadAttention ? ".view(b, num_tokens, num_heads, head_dim).transpose(1, 2)" : "";
    const char* lower[3] = {"queries", "keys", "values"};
    for (int m = 0; m < 3; ++m) {
      std::string f;
      if (c.kind == ClassKind::SelfAttentionV1) f = std::string(lower[m]) + " = x @ " + names[m];
      else if (c.kind == ClassKind::MultiHeadAttentionWrapper) f = std::string(lower[m]) + "[:, h] = heads[h]." + names[m] + "(x)  (x @ weight.T" + (c.qkv_bias ? " + bias" : "") + ")";
      else f = std::string(lower[m]) + " = " + (proj_formula_tail.empty() ? "" : "(") + names[m] + "(x)" + (proj_formula_tail.empty() ? "" : ")") + proj_formula_tail + "  (x @ weight.T" + (c.qkv_bias ? " + bias" : "") + ")";
      const std::string title = std::string(m == 0 ? "Queries" : m == 1 ? "Keys" : "Values") + (per_head ? " per head" : "");
      trace.add(lower[m], title, f, head_axes("num_tokens", hd_name), qkv[m]);
    }

    // Attention per (batch item, head) slab, in PyTorch's dropout draw order: the wrapper runs head
    // after head (each a CausalAttention over the whole batch); MHA and CausalAttention draw over
    // (b, [H,] T, T) row-major.
    const bool causal = c.causal();
    const float scale_div = static_cast<float>(std::sqrt(static_cast<double>(hd)));  // keys.shape[-1]**0.5, cast to float by the division
    // The four (b, H, T, T) stages are kept only for the trace; without it one (T, T) slab is reused.
    const Shape stage_shape = trace.on() ? head_shape(T, T) : Shape{0};
    Tensor scores(stage_shape), masked(stage_shape), weights(stage_shape), dropped(stage_shape);  // (b, H, T, T) when tracing
    Tensor context(head_shape(T, hd));  // (b, H, T, hd)
    const bool keep_all = trace.on();
    std::vector<float> slab(static_cast<size_t>(T * T));
    const auto attend = [&](int64_t bi, int64_t h) {
      const size_t slab_index = static_cast<size_t>(bi * H + h);
      const float* q = qkv[0].data.data() + slab_index * static_cast<size_t>(T * hd);
      const float* k = qkv[1].data.data() + slab_index * static_cast<size_t>(T * hd);
      const float* v = qkv[2].data.data() + slab_index * static_cast<size_t>(T * hd);
      float* s = slab.data();
      ops::matmul(q, k, T, hd, T, true, s);  // (T, T) = q @ k^T
      const size_t off = slab_index * static_cast<size_t>(T * T);
      if (keep_all) std::copy(s, s + T * T, scores.data.begin() + static_cast<std::ptrdiff_t>(off));
      if (causal) {
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = i + 1; j < T; ++j) s[i * T + j] = -std::numeric_limits<float>::infinity();
      }
      if (keep_all) std::copy(s, s + T * T, masked.data.begin() + static_cast<std::ptrdiff_t>(off));
      for (int64_t i = 0; i < T * T; ++i) s[i] = s[i] / scale_div;
      ops::softmax_rows(s, T, T);
      if (keep_all) std::copy(s, s + T * T, weights.data.begin() + static_cast<std::ptrdiff_t>(off));
      if (apply_dropout) options.generator->dropout(s, T * T, c.dropout);
      if (keep_all) std::copy(s, s + T * T, dropped.data.begin() + static_cast<std::ptrdiff_t>(off));
      ops::matmul(s, v, T, T, hd, false, context.data.data() + slab_index * static_cast<size_t>(T * hd));  // (T, hd)
    };
    if (c.kind == ClassKind::MultiHeadAttentionWrapper) {
      for (int64_t h = 0; h < H; ++h)
        for (int64_t bi = 0; bi < b; ++bi) attend(bi, h);
    } else {
      for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t h = 0; h < H; ++h) attend(bi, h);
    }

    const std::string scores_formula = c.kind == ClassKind::MultiHeadAttention ? "queries @ keys.transpose(2, 3)"
                                       : batched                               ? "queries @ keys.transpose(1, 2)"
                                                                               : "queries @ keys.T";
    trace.add("attn_scores", std::string("Attention scores") + (per_head ? " per head" : ""), scores_formula, head_axes("query", "key"), scores);
    if (causal) {
      Tensor mask({T, T});  // (num_tokens, num_tokens), 1 where a key is masked
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = i + 1; j < T; ++j) mask.data[static_cast<size_t>(i * T + j)] = 1.0f;
      trace.add("mask", "Causal mask (top-left " + std::to_string(T) + " x " + std::to_string(T) + " of the " + std::to_string(c.context_length) + " x " +
                            std::to_string(c.context_length) + " buffer)",
                "mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)[:num_tokens, :num_tokens]", {"query", "key"}, mask);
      trace.add("attn_scores_masked", "Masked scores (future keys set to -inf)", "attn_scores.masked_fill_(mask.bool(), -torch.inf)", head_axes("query", "key"), masked);
    }
    trace.add("attn_weights", std::string("Attention weights") + (per_head ? " per head" : "") + " (each row sums to 1)",
              "torch.softmax(attn_scores / d_k**0.5, dim=-1), d_k = " + std::to_string(hd) + ": scores divided by " + fmt(scale_div, 6),
              head_axes("query", "key"), weights);
    if (c.has_dropout()) {
      std::string title, formula;
      if (apply_dropout) {
        const float kept = 1.0f / static_cast<float>(1.0 - c.dropout);
        title = "Attention weights after dropout (p = " + fmt(c.dropout) + ")";
        formula = "dropout(attn_weights): each weight zeroed with probability " + fmt(c.dropout) + ", survivors x 1/(1-p) = " + fmt(kept, 6) +
                  "; rows no longer sum to 1";
      } else if (!options.training) {
        title = "Attention weights after dropout (eval: dropout skipped)";
        formula = "dropout(attn_weights) = attn_weights in eval mode";
      } else {
        title = "Attention weights after dropout (dropout = 0.0: nothing dropped)";
        formula = "dropout(attn_weights) = attn_weights when p = 0";
      }
      trace.add("attn_weights_dropout", title, formula, head_axes("query", "key"), dropped);
    }
    trace.add("context_vec", std::string("Context vectors") + (per_head ? " per head" : ""), "context_vec = attn_weights @ values", head_axes("num_tokens", hd_name), context);

    Tensor output;
    if (c.kind == ClassKind::MultiHeadAttentionWrapper || c.kind == ClassKind::MultiHeadAttention) {
      Tensor concat({b, T, width});  // (b, num_tokens, num_heads * hd)
      for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t j = 0; j < hd; ++j)
              concat.data[static_cast<size_t>((bi * T + t) * width + h * hd + j)] = context.data[static_cast<size_t>(((bi * H + h) * T + t) * hd + j)];
      if (c.kind == ClassKind::MultiHeadAttentionWrapper) {
        trace.add("heads_concat", "Heads concatenated: width num_heads x d_out = " + std::to_string(H) + " x " + std::to_string(hd) + " = " + std::to_string(width),
                  "torch.cat([head(x) for head in heads], dim=-1): head h fills columns h*d_out to (h+1)*d_out-1", {"b", "num_tokens", "num_heads*d_out"}, concat);
        output = std::move(concat);
      } else {
        trace.add("heads_concat", "Heads merged back to tokens: width d_out = " + std::to_string(c.d_out),
                  "context_vec.transpose(1, 2).contiguous().view(b, num_tokens, d_out): (t, h, j) -> column h*head_dim + j", {"b", "num_tokens", "d_out"}, concat);
        output = Tensor({b, T, c.d_out});  // (b, num_tokens, d_out)
        ops::linear(concat.data.data(), b * T, c.d_out, param_data("out_proj.weight"), param_data("out_proj.bias"), c.d_out, output.data.data());
        trace.add("out_proj", "Output projection", "out_proj(context_vec) = context_vec @ out_proj.weight.T + out_proj.bias", {"b", "num_tokens", "d_out"}, output);
      }
    } else {
      output = std::move(context);
      output.shape = batched ? Shape{b, T, hd} : Shape{T, hd};
    }
    trace.add("output", "Output: width " + std::to_string(width) + " = " + c.output_width_rule(), "output",
              batched ? std::vector<std::string>{"b", "num_tokens", c.kind == ClassKind::MultiHeadAttentionWrapper ? "num_heads*d_out" : "d_out"}
                      : std::vector<std::string>{"num_tokens", "d_out"},
              output);
    return output;
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", "x", "not enough memory for a forward pass of " + c.python_call() + " on " + shape_string(x.shape),
                         "Use fewer tokens, a smaller batch, or turn the trace off.");
  }
}

Tensor book_tokens() {
  // "Your journey starts with one step" (section 3.3.1)
  return Tensor({6, 3}, {0.43f, 0.15f, 0.89f, 0.55f, 0.87f, 0.66f, 0.57f, 0.85f, 0.64f, 0.22f, 0.58f, 0.33f, 0.77f, 0.25f, 0.10f, 0.05f, 0.80f, 0.55f});
}

Tensor sentence_tokens(const std::vector<std::string>& words, int64_t d_in, uint64_t seed) {
  std::vector<std::string> vocab;  // first-occurrence order
  std::vector<int64_t> index;
  for (const auto& w : words) {
    const auto it = std::find(vocab.begin(), vocab.end(), w);
    index.push_back(it - vocab.begin());
    if (it == vocab.end()) vocab.push_back(w);
  }
  const Tensor table = seeded_tokens(static_cast<int64_t>(vocab.size()), d_in, seed);  // (len(vocab), d_in)
  Tensor x({static_cast<int64_t>(words.size()), d_in});                              // (num_tokens, d_in)
  for (size_t t = 0; t < words.size(); ++t)
    std::copy_n(table.data.begin() + index[t] * d_in, d_in, x.data.begin() + static_cast<std::ptrdiff_t>(t) * d_in);
  return x;
}

Tensor seeded_tokens(int64_t num_tokens, int64_t d_in, uint64_t seed) {
  TorchGenerator g(seed);
  return g.rand({num_tokens, d_in});
}

}  // namespace attention_lab
