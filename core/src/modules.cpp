#include "attention_lab/modules.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/ops.hpp"
#include "attention_lab/text.hpp"
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
    case ClassKind::MultiHeadAttentionWithSWA:
      add_qkv(specs, "", c, c.d_out);
      add_linear(specs, "out_proj", c.d_out, c.d_out, true);
      break;
    case ClassKind::GroupedQueryAttention: {
      // Registered (so drawn under torch.manual_seed) in the book's order: key, value, query, out_proj.
      const int64_t kv_width = c.num_kv_groups * c.head_dim();
      add_linear(specs, "W_key", c.d_in, kv_width, c.qkv_bias);
      add_linear(specs, "W_value", c.d_in, kv_width, c.qkv_bias);
      add_linear(specs, "W_query", c.d_in, c.d_out, c.qkv_bias);
      add_linear(specs, "out_proj", c.d_out, c.d_out, false);
      break;
    }
  }
  return specs;
}

int64_t parameter_count(const ModuleConfig& config) {
  int64_t n = 0;
  for (const auto& s : parameter_specs(config)) n += numel_of(s.shape);
  return n;
}

namespace {
constexpr const char* kProjectionNames[4] = {"W_query", "W_key", "W_value", "out_proj"};
}  // namespace

AttentionModule::AttentionModule(const ModuleConfig& config) : plan_(plan_forward(config)) {
  const ForwardPlan& p = plan_;
  try {
    // Every weight lives once, prepared for the forward: q/k/v as one (d_in, num_heads * head_dim)
    // right-hand matrix each (the wrapper's heads side by side), out_proj as its (d_out, d_out)^T.
    for (int which = 0; which < 4; ++which) {
      if (which == 3 && !p.out_proj) continue;
      const int64_t k = which == 3 ? config.d_out : config.d_in;
      const int64_t n = which == 3 ? config.d_out : which == 0 ? p.proj_width : p.kv_heads * p.head_dim;                           // keys and values: kv_heads heads
      prepared_.weight[which] = ops::PackedMatrix{k, n, std::vector<float>(static_cast<size_t>(ops::packed_floats(k, n)), 0.0f)};  // zeros in any layout
      if (p.layout == HeadsIn::Modules && config.qkv_bias && which < 3) prepared_.bias[which].assign(static_cast<size_t>(n), 0.0f);
    }
    for (auto& spec : parameter_specs(config)) {
      Home home;
      for (int which = 0; which < 4; ++which)
        if (spec.name.find(kProjectionNames[which]) != std::string::npos) home.which = which;
      home.bias = spec.name.size() > 5 && spec.name.compare(spec.name.size() - 5, 5, ".bias") == 0;
      if (p.layout == HeadsIn::Modules) home.head = std::stoll(spec.name.substr(6));  // "heads.<h>."
      // Biases stay as they are, except the wrapper's, which sit side by side like its weights.
      if (home.bias && p.layout != HeadsIn::Modules) home.which = -1;
      if (home.bias && home.which < 0)
        for (int which = 0; which < 4; ++which)
          if (spec.name.find(kProjectionNames[which]) != std::string::npos) prepared_.bias_param[which] = static_cast<int>(params_.size());
      params_.push_back({spec.name, home.which < 0 ? Tensor(spec.shape) : Tensor()});
      params_.back().tensor.shape = spec.shape;
      home_.push_back(home);
    }
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", "d_out", "not enough memory for the parameters of " + config.python_call(), "Use smaller sizes.");
  }
}

AttentionModule::AttentionModule(const ModuleConfig& config, TorchGenerator& generator) : AttentionModule(config) {
  const auto specs = parameter_specs(config);
  std::vector<NamedTensor> values;
  for (const auto& spec : specs) {
    Tensor t(spec.shape);
    if (spec.init == ParameterSpec::Init::Rand) {
      for (float& v : t.data) v = generator.random_float();
    } else {
      generator.uniform(t.data.data(), t.numel(), -spec.bound, spec.bound);
    }
    values.push_back({spec.name, std::move(t)});
  }
  set_parameters(values);
}

Tensor AttentionModule::value(size_t i, std::vector<float> (&unpacked)[4]) const {
  const Home& home = home_[i];
  const Shape& shape = params_[i].tensor.shape;
  if (home.which < 0) return params_[i].tensor;
  if (home.bias) {  // the wrapper's head biases
    const std::vector<float>& all = prepared_.bias[home.which];
    const int64_t n = shape[0];
    return Tensor(shape, std::vector<float>(all.begin() + home.head * n, all.begin() + (home.head + 1) * n));
  }
  const ops::PackedMatrix& packed = prepared_.weight[home.which];
  std::vector<float>& all = unpacked[home.which];  // B as stored: (k, n) for v1, else Linear weights (n, k)
  if (all.empty()) {
    all.resize(static_cast<size_t>(packed.k * packed.n));
    ops::unpack_b(packed, all.data(), !plan_.matmul_projection);
  }
  if (home.head < 0) return Tensor(shape, all);
  const int64_t size = shape[0] * shape[1];  // wrapper head h: rows h*d_out .. (h+1)*d_out-1
  return Tensor(shape, std::vector<float>(all.begin() + home.head * size, all.begin() + (home.head + 1) * size));
}

void AttentionModule::store(const std::vector<std::pair<size_t, const Tensor*>>& values) {
  for (int which = 0; which < 4; ++which) {
    // The weights of this prepared matrix among the values: packed once, whatever their number.
    std::vector<std::pair<size_t, const Tensor*>> weights;
    for (const auto& [i, v] : values)
      if (home_[i].which == which && !home_[i].bias) weights.push_back({i, v});
    if (weights.empty()) continue;
    ops::PackedMatrix& packed = prepared_.weight[which];
    const int64_t k = packed.k, n = packed.n;
    if (plan_.matmul_projection) {
      packed = ops::pack_b(weights.back().second->data.data(), k, n, false);
    } else if (home_[weights.back().first].head < 0) {
      packed = ops::pack_b(weights.back().second->data.data(), k, n, true);
    } else {
      std::vector<float> all(static_cast<size_t>(k * n));  // (num_heads * d_out, d_in)
      std::vector<bool> given(static_cast<size_t>(plan_.query_heads), false);
      for (const auto& [i, v] : weights) given[static_cast<size_t>(home_[i].head)] = true;
      // Heads not among the values keep what they had.
      if (std::find(given.begin(), given.end(), false) != given.end()) ops::unpack_b(packed, all.data(), true);
      for (const auto& [i, v] : weights) std::copy(v->data.begin(), v->data.end(), all.begin() + home_[i].head * v->numel());
      packed = ops::PackedMatrix();  // free before packing again: one copy at a time
      packed = ops::pack_b(all.data(), k, n, true);
    }
  }
  for (const auto& [i, v] : values) {
    const Home& home = home_[i];
    if (home.which < 0)
      params_[i].tensor.data = v->data;
    else if (home.bias)
      std::copy(v->data.begin(), v->data.end(), prepared_.bias[home.which].begin() + home.head * v->numel());
  }
}

const float* AttentionModule::bias(int which) const {
  if (!prepared_.bias[which].empty()) return prepared_.bias[which].data();
  const int i = prepared_.bias_param[which];
  return i < 0 ? nullptr : params_[static_cast<size_t>(i)].tensor.data.data();
}

std::vector<NamedTensor> AttentionModule::parameters() const {
  std::vector<float> unpacked[4];  // each prepared matrix unpacked once, whatever the number of heads
  std::vector<NamedTensor> out;
  for (size_t i = 0; i < params_.size(); ++i) out.push_back({params_[i].name, value(i, unpacked)});
  return out;
}

std::optional<Tensor> AttentionModule::parameter(const std::string& name) const {
  std::vector<float> unpacked[4];
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name) return value(i, unpacked);
  return std::nullopt;
}

void AttentionModule::set_parameter(const std::string& name, const Tensor& value) { set_parameters({{name, value}}); }

void AttentionModule::set_parameters(const std::vector<NamedTensor>& values) {
  std::vector<std::pair<size_t, const Tensor*>> found;
  for (const auto& [name, value] : values) {
    size_t i = 0;
    while (i < params_.size() && params_[i].name != name) ++i;
    if (i == params_.size()) {
      std::vector<std::string> names;
      for (const auto& p : params_) names.push_back(p.name);
      const std::string guess = did_you_mean(name, names);
      std::string hint = guess.empty() ? "" : "Did you mean " + guess + "? ";
      hint += config().class_name() + "'s parameters: ";
      for (size_t n = 0; n < names.size() && n < 8; ++n) hint += (n ? ", " : "") + names[n];
      if (names.size() > 8) hint += ", ...";
      throw AttentionError("unknown_parameter", name, config().class_name() + " has no parameter named '" + name + "'", hint);
    }
    const Shape& shape = params_[i].tensor.shape;
    if (shape != value.shape) {
      std::string hint = "Give a tensor of shape " + shape_string(shape) + ".";
      if (value.shape.size() == 2 && shape.size() == 2 && value.shape[0] == shape[1] && value.shape[1] == shape[0] && value.shape[0] != value.shape[1])
        hint = "The shape is exactly reversed: it looks transposed. Use .T on it.";
      throw AttentionError("parameter_shape", name, name + " has shape " + shape_string(shape) + ", got " + shape_string(value.shape), hint);
    }
    if (static_cast<int64_t>(value.data.size()) != numel_of(value.shape)) {
      throw AttentionError("tensor_size", name, "the data does not fit shape " + shape_string(value.shape), "");
    }
    if (const std::string where = first_non_finite(value.data.data(), value.data.size(), value.shape); !where.empty()) {
      throw AttentionError("non_finite_parameter", name, name + where + ": parameters must be finite numbers",
                           "A NaN or infinity in a weight makes every output NaN; check where the values came from (an overflow when saving in float16?).");
    }
    found.push_back({i, &value});
  }
  try {
    store(found);  // all checks passed: all or nothing
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", values.empty() ? "" : values.front().name, "not enough memory to prepare the parameters", "Use smaller sizes.");
  }
}

namespace {

std::string fmt(double v, int precision = 4) { return format_g(v, precision); }

}  // namespace

void check_input(const ModuleConfig& c, const Tensor& x, const std::string& what, double memory_budget_bytes, bool trace) {
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
  const double bytes = plan_bytes(plan_forward(c), x.shape, trace);
  if (bytes > memory_budget_bytes) {
    if (!trace)
      throw AttentionError("too_large", what,
                           "a forward pass of " + c.python_call() + " on " + shape_string(x.shape) + " needs about " + fmt(bytes / (1024.0 * 1024.0), 6) + " MiB, over the " +
                               fmt(memory_budget_bytes / (1024.0 * 1024.0), 6) + " MiB budget",
                           "Use fewer tokens or a smaller batch.");
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
                           "token " + std::to_string((static_cast<int64_t>(i) / width) % x.shape[x.shape.size() - 2]) + " has a non-finite value (" + fmt(x.data[i]) +
                               ") at position " + std::to_string(static_cast<int64_t>(i) % width),
                           "Every embedding value must be a finite number; NaN or inf would spread through every stage.");
    }
  }
}

Tensor AttentionModule::forward(const Tensor& x, const ForwardOptions& options) const {
  std::optional<TorchGenerator> start;  // the generator before the run, to rerun it traced
  if (options.warnings != nullptr && options.generator != nullptr) start = *options.generator;
  Tensor y = forward_pass(x, options);
  if (options.warnings != nullptr && !first_non_finite(y.data.data(), y.data.size(), y.shape).empty()) options.warnings->push_back(non_finite_warning(x, options, start));
  return y;
}

Diagnostic AttentionModule::non_finite_warning(const Tensor& x, const ForwardOptions& options, const std::optional<TorchGenerator>& start) const {
  Diagnostic d;
  d.severity = Severity::Warning;
  d.code = "non_finite_stage";
  d.hint = "Finite inputs overflowed float32 (about 3.4e38) on the way: scale the tokens or the weights down.";
  std::vector<Stage> local;
  const std::vector<Stage>* trace = options.trace;
  if (trace == nullptr) {
    ForwardOptions again = options;
    std::optional<TorchGenerator> generator = start;
    again.generator = generator ? &*generator : nullptr;
    again.trace = &local;
    again.warnings = nullptr;
    try {
      forward_pass(x, again);
      trace = &local;
    } catch (const AttentionError&) {
      d.message = "the output holds NaN or infinity although every input value is finite (tracing this run to find where is over the memory budget)";
      return d;
    }
  }
  for (const Stage& s : *trace) {
    // The masked scores hold -inf where keys are hidden: only NaN and +inf count there.
    const bool masked = s.id == "attn_scores_masked";
    const std::vector<float>& v = s.tensor.data;
    size_t i = 0;
    while (i < v.size() && (std::isfinite(v[i]) || (masked && v[i] == -std::numeric_limits<float>::infinity()))) ++i;
    if (i == v.size()) continue;
    std::string where;
    size_t rest = i;
    std::vector<int64_t> index(s.tensor.shape.size());
    for (size_t a = index.size(); a-- > 0;) {
      const size_t size = static_cast<size_t>(std::max<int64_t>(s.tensor.shape[a], 1));
      index[a] = static_cast<int64_t>(rest % size);
      rest /= size;
    }
    // every axis but the last names the place: b, head, row
    for (size_t a = 0; a + 1 < index.size(); ++a)
      where += (where.empty() ? "" : ", ") + (a < s.axes.size() ? s.axes[a] : "axis " + std::to_string(a)) + " " + std::to_string(index[a]);
    d.slots = {s.id};
    d.message = s.id + " is the first stage to turn non-finite from finite inputs: " +
                (std::isnan(v[i]) ? "nan"
                 : v[i] > 0       ? "inf"
                                  : "-inf") +
                " at " + where + " (column " + std::to_string(index.empty() ? 0 : index.back()) + ")";
    return d;
  }
  d.message = "the output holds NaN or infinity although every input value is finite";
  return d;
}

Tensor AttentionModule::forward_pass(const Tensor& x, const ForwardOptions& options) const {
  const ForwardPlan& p = plan_;
  const ModuleConfig& c = p.config;
  check_input(c, x, "x", options.memory_budget_bytes, options.trace != nullptr);
  const bool apply_dropout = p.dropout_stage && options.training && p.dropout > 0.0;
  if (apply_dropout && options.generator == nullptr) {
    throw AttentionError("generator_missing", "dropout", "dropout in training mode needs a random generator", "Pass a generator, or run in eval mode.");
  }

  const int64_t b = p.batched ? x.shape[0] : 1;
  const int64_t T = x.shape[x.shape.size() - 2];
  const int64_t H = p.query_heads;
  const int64_t hd = p.head_dim;
  const int64_t proj_width = p.proj_width;
  const bool tracing = options.trace != nullptr;
  const auto head_shape = [&](int64_t rows, int64_t cols) {
    if (!p.batched) return Shape{rows, cols};
    if (!p.per_head_axes) return Shape{b, rows, cols};
    return Shape{b, H, rows, cols};
  };
  // Stages join the trace at the end, in order, moved rather than copied where the forward is done
  // with them (the trace of a long input is mostly its four (b, H, T, T) stages).
  const auto emit = [&](StageId id, Tensor t) {
    if (!tracing || !stage_present(p, id)) return;
    StageText text = stage_text(p, id, T, options.training);
    TensorSummary whole;
    std::vector<TensorSummary> slices = summarize_slices(t, whole);
    options.trace->push_back({stage_id_name(id), std::move(text.title), std::move(text.formula), std::move(text.axes), std::move(t), whole, std::move(slices)});
  };

  try {
    // Pass 1, project: x (b*T, d_in) @ W (d_in, H*hd) + bias -> (b, T, H*hd), then split the heads
    // into (b, H, T, hd) row-major: the fused view(b, T, H, hd).transpose(1, 2), or the wrapper's
    // head h taking columns h*d_out .. (h+1)*d_out-1 (the same index map).
    // Keys and values have KV heads (GroupedQueryAttention's num_kv_groups; else KV = H): query head
    // h reads key/value head h / group_size, which is what repeat_interleave(group_size, dim=1) does.
    const int64_t KV = p.kv_heads;
    const int64_t group = p.group_size;
    Shape kv_shape = head_shape(T, hd);
    if (p.per_head_axes) kv_shape[1] = KV;
    Tensor qkv[3] = {Tensor(head_shape(T, hd)), Tensor(kv_shape), Tensor(kv_shape)};  // (b, H, T, hd), (b, KV, T, hd) x 2
    {
      std::vector<float> proj(static_cast<size_t>(b * T * proj_width));  // (b*T, H*hd), freed after the projections
      for (int m = 0; m < 3; ++m) {
        const int64_t heads = m == 0 ? H : KV, width = heads * hd;
        ops::gemm(x.data.data(), b * T, c.d_in, prepared_.weight[m], bias(m), proj.data());  // (b*T, heads*hd)
        float* dst = qkv[m].data.data();
        for (int64_t bi = 0; bi < b; ++bi)
          for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < heads; ++h) std::copy_n(proj.data() + (bi * T + t) * width + h * hd, hd, dst + ((bi * heads + h) * T + t) * hd);
      }
    }

    // Passes 2-6 per (batch item, head) slab: scores, mask, softmax, dropout, context. Dropout draws
    // in PyTorch's order: the wrapper runs head after head (each a CausalAttention over the whole
    // batch); the others draw over (b, [H,] T, T) row-major.
    const bool causal = p.mask == MaskKind::Causal;
    // The four (b, H, T, T) stages, kept only for the trace. Slabs arrive in storage order except in
    // the wrapper with b > 1, so each is appended to reserved memory (no 4 x zero-fill of the largest
    // tensors of the run) and only an out-of-order slab makes its stage fill in zeros first.
    const Shape stage_shape = head_shape(T, T);
    const size_t stage_size = tracing ? static_cast<size_t>(numel_of(stage_shape)) : 0;
    Tensor scores, masked, weights, dropped;
    for (Tensor* t : {&scores, &masked, &weights, &dropped}) {
      t->shape = stage_shape;
      t->data.reserve(stage_size);
    }
    if (options.attn_weights != nullptr) *options.attn_weights = Tensor(stage_shape);
    Tensor context(head_shape(T, hd));                    // (b, H, T, hd)
    std::vector<float> slab(static_cast<size_t>(T * T));  // (T, T)
    ops::PackedMatrix keys_t, values;
    const auto keep = [&](Tensor& stage, size_t offset, const float* s) {
      if (!tracing) return;
      std::vector<float>& d = stage.data;
      if (d.size() == offset) {
        d.insert(d.end(), s, s + T * T);
      } else {
        d.resize(stage_size);
        std::copy(s, s + T * T, d.begin() + static_cast<std::ptrdiff_t>(offset));
      }
    };
    // A sliding window hides key j from query i when i - j >= window (and j > i, as any causal mask).
    const int64_t window = p.window;
    const auto hidden = [&](int64_t i, int64_t j) { return j > i || (window > 0 && i - j >= window); };
    const auto attend = [&](int64_t bi, int64_t h) {
      const size_t slab_index = static_cast<size_t>(bi * H + h);
      const size_t kv_index = static_cast<size_t>(bi * KV + h / group);
      const float* q = qkv[0].data.data() + slab_index * static_cast<size_t>(T * hd);  // (T, hd)
      const float* k = qkv[1].data.data() + kv_index * static_cast<size_t>(T * hd);    // (T, hd)
      const float* v = qkv[2].data.data() + kv_index * static_cast<size_t>(T * hd);    // (T, hd)
      const size_t offset = slab_index * static_cast<size_t>(T * T);
      float* s = slab.data();
      // scores = q @ k^T (T, T); with a causal mask and no trace only the lower triangle is needed.
      ops::pack_b_into(keys_t, k, hd, T, true);  // reuses the buffer of the previous head
      ops::gemm(q, T, hd, keys_t, nullptr, s, causal && !tracing ? ops::Triangle::OutputLower : ops::Triangle::None);
      keep(scores, offset, s);
      if (causal && tracing) {  // the masked scores as the book writes them; the softmax below needs no -inf past the diagonal
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = i + 1; j < T; ++j) s[i * T + j] = -std::numeric_limits<float>::infinity();
      }
      if (window > 0) {  // keys before the window: -inf inside each row's causal prefix, so the softmax gives them weight 0
        for (int64_t i = window; i < T; ++i)
          for (int64_t j = 0; j <= i - window; ++j) s[i * T + j] = -std::numeric_limits<float>::infinity();
      }
      if (causal && tracing) keep(masked, offset, s);
      ops::scaled_softmax_rows(s, T, T, p.scale_div, causal);  // softmax(scores / d_k**0.5); masked keys get weight 0
      keep(weights, offset, s);
      if (options.attn_weights != nullptr) std::copy(s, s + T * T, options.attn_weights->data.begin() + static_cast<std::ptrdiff_t>(offset));
      if (apply_dropout) options.generator->dropout(s, T * T, p.dropout);
      if (p.dropout_stage) keep(dropped, offset, s);
      // context = weights @ v (T, hd); a causal row i has zero weight past key i.
      ops::pack_b_into(values, v, T, hd, false);
      ops::gemm(s, T, T, values, nullptr, context.data.data() + slab_index * static_cast<size_t>(T * hd), causal ? ops::Triangle::ALower : ops::Triangle::None);
    };
    if (p.dropout_heads_outer) {
      for (int64_t h = 0; h < H; ++h)
        for (int64_t bi = 0; bi < b; ++bi) attend(bi, h);
    } else {
      for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t h = 0; h < H; ++h) attend(bi, h);
    }
    const auto emit_attention = [&]() {
      emit(StageId::Input, x);
      emit(StageId::Queries, std::move(qkv[0]));
      emit(StageId::Keys, std::move(qkv[1]));
      emit(StageId::Values, std::move(qkv[2]));
      emit(StageId::AttnScores, std::move(scores));
      if (causal && tracing) {
        Tensor mask({T, T});  // (num_tokens, num_tokens), 1 where a key is masked
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = 0; j < T; ++j)
            if (hidden(i, j)) mask.data[static_cast<size_t>(i * T + j)] = 1.0f;
        emit(StageId::Mask, std::move(mask));
      }
      emit(StageId::AttnScoresMasked, std::move(masked));
      emit(StageId::AttnWeights, std::move(weights));
      emit(StageId::AttnWeightsDropout, std::move(dropped));
    };

    // Pass 7, merge: (b, H, T, hd) -> (b, T, H*hd), column h*hd + j (the wrapper's torch.cat, the
    // fused transpose(1, 2).contiguous().view). Single-head classes: the context is the output.
    if (p.layout == HeadsIn::Single) {
      context.shape = p.batched ? Shape{b, T, hd} : Shape{T, hd};
      if (tracing) {
        emit_attention();
        context.shape = head_shape(T, hd);
        emit(StageId::ContextVec, context);
        context.shape = p.batched ? Shape{b, T, hd} : Shape{T, hd};
        emit(StageId::Output, context);
      }
      return context;
    }
    Tensor concat({b, T, proj_width});  // (b, num_tokens, num_heads * hd)
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t) std::copy_n(context.data.data() + ((bi * H + h) * T + t) * hd, hd, concat.data.data() + (bi * T + t) * proj_width + h * hd);
    if (!p.out_proj) {
      if (tracing) {
        emit_attention();
        emit(StageId::ContextVec, std::move(context));
        emit(StageId::HeadsConcat, concat);
        emit(StageId::Output, concat);
      }
      return concat;
    }

    // Pass 8, out_proj: (b*T, d_out) @ out_proj.weight^T + out_proj.bias.
    Tensor output({b, T, c.d_out});  // (b, num_tokens, d_out)
    ops::gemm(concat.data.data(), b * T, c.d_out, prepared_.weight[3], bias(3), output.data.data());
    if (tracing) {
      emit_attention();
      emit(StageId::ContextVec, std::move(context));
      emit(StageId::HeadsConcat, std::move(concat));
      emit(StageId::OutProj, output);
      emit(StageId::Output, output);
    }
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
  Tensor x({static_cast<int64_t>(words.size()), d_in});                                // (num_tokens, d_in)
  for (size_t t = 0; t < words.size(); ++t) std::copy_n(table.data.begin() + index[t] * d_in, d_in, x.data.begin() + static_cast<std::ptrdiff_t>(t) * d_in);
  return x;
}

Tensor seeded_tokens(int64_t num_tokens, int64_t d_in, uint64_t seed) {
  TorchGenerator g(seed);
  return g.rand({num_tokens, d_in});
}

AttentionModule module_from_state_dict(const ModuleConfig& c, const std::vector<NamedTensor>& given, std::vector<std::string>* notes) {
  // The buffers: which names the class registers a mask under.
  std::vector<std::string> mask_names;
  if (c.kind == ClassKind::CausalAttention || c.kind == ClassKind::MultiHeadAttention) mask_names.push_back("mask");
  if (c.kind == ClassKind::MultiHeadAttentionWrapper)
    for (int64_t h = 0; h < c.num_heads; ++h) mask_names.push_back("heads." + std::to_string(h) + ".mask");
  std::vector<NamedTensor> parameters;
  const int64_t n = c.context_length;
  for (const NamedTensor& p : given) {
    if (std::find(mask_names.begin(), mask_names.end(), p.name) == mask_names.end()) {
      parameters.push_back(p);
      continue;
    }
    const std::string expected = "torch.triu(torch.ones(" + std::to_string(n) + ", " + std::to_string(n) + "), diagonal=1)";
    if (p.tensor.shape != Shape{n, n} || static_cast<int64_t>(p.tensor.data.size()) != n * n) {
      throw AttentionError("mask_buffer", p.name,
                           "the buffer " + p.name + " has shape " + shape_string(p.tensor.shape) + "; context_length = " + std::to_string(n) + " gives " + shape_string({n, n}),
                           "Build the module with the context_length the state_dict was saved with.");
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float want = j > i ? 1.0f : 0.0f;
        const float got = p.tensor.data[static_cast<size_t>(i * n + j)];
        if (got != want) {
          throw AttentionError("mask_buffer", p.name,
                               p.name + "[" + std::to_string(i) + ", " + std::to_string(j) + "] is " + format_g(got, 6) + ", but the causal mask " + expected + " has " +
                                   format_g(want, 1) + " there",
                               "This module hides other keys than the book's causal mask; attention-lab rebuilds the mask from context_length and cannot take another one.");
        }
      }
    }
    if (notes)
      notes->push_back(p.name + ": the causal mask buffer " + shape_string({n, n}) + ", checked equal to " + expected +
                       " (a buffer, not a parameter; rebuilt from context_length)");
  }
  std::string missing;
  for (const auto& spec : parameter_specs(c)) {
    const bool found = std::any_of(parameters.begin(), parameters.end(), [&](const NamedTensor& p) { return p.name == spec.name; });
    if (!found) missing += (missing.empty() ? "" : ", ") + spec.name;
  }
  if (!missing.empty())
    throw AttentionError("missing_parameter", missing.substr(0, missing.find(',')), "no values given for " + missing,
                         "Pass every entry of module.parameters() (or the whole state_dict).");
  AttentionModule m(c);
  m.set_parameters(parameters);
  return m;
}

}  // namespace attention_lab
