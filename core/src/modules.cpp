#include "attention_lab/modules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/ops.hpp"
#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"
#include "attention_passes.hpp"

namespace attention_lab {

namespace {
/// The checks of a forward of a share of the heads (ForwardOptions::share): AttentionError head_share.
/// One message built once (this code is in every binary, the page's first view included).
void check_share(const ForwardPlan& p, const HeadShare& s, const ForwardOptions& o, bool dropout_acts) {
  const char* slot = "share";
  const char* problem = nullptr;
  const char* hint = "Run the whole forward (module.forward).";
  if (p.layout == HeadsRule::Single) {
    problem = "this class has one head (of width d_out): there are no heads to share out";
  } else if (s.count < 1 || s.first < 0 || s.first + s.count > p.query_heads || s.first % p.group_size != 0 || s.count % p.group_size != 0) {
    problem = "not a run of whole key/value groups within the heads";
    hint = "Take the shares module.headShares(parts) gives.";
  } else if (o.trace != nullptr || o.attn_weights != nullptr || o.cache != nullptr) {
    problem = "a share of the heads runs untraced and without a KV cache";
    hint = "Trace, or cache, with the whole forward (module.forward).";
  } else if (dropout_acts) {
    slot = "dropout";
    problem = "dropout in training draws one stream over every head, in PyTorch's order, so a share cannot run on its own";
    hint = "Run in eval mode (training: false), or the whole forward.";
  }
  if (problem == nullptr) return;
  char text[256];
  std::snprintf(text, sizeof text, "heads [%lld, %lld) of %lld (%lld per key/value head): %s", static_cast<long long>(s.first), static_cast<long long>(s.first + s.count),
                static_cast<long long>(p.query_heads), static_cast<long long>(p.group_size), problem);
  throw AttentionError("head_share", slot, text, hint);
}

/// nn.Linear's kaiming_uniform_(a=sqrt(5)) bound, in double exactly as torch.nn.init computes it.
float kaiming_bound(int64_t fan_in) {
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double std_dev = gain / std::sqrt(static_cast<double>(fan_in));
  return static_cast<float>(std::sqrt(3.0) * std_dev);
}
float fan_in_bound(int64_t fan_in) { return fan_in > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in))) : 0.0f; }

/// torch.nn.init._calculate_fan_in_and_fan_out: (size(1) x receptive field, size(0) x receptive field).
std::pair<int64_t, int64_t> fans(const Shape& s) {
  if (s.size() < 2) return {s.empty() ? 0 : s[0], s.empty() ? 0 : s[0]};
  int64_t receptive = 1;
  for (size_t i = 2; i < s.size(); ++i) receptive *= s[i];
  return {s[1] * receptive, s[0] * receptive};
}

bool present(const ParamRecipe& p, const ModuleConfig& c) { return p.presence == Presence::Always || c.qkv_bias; }

Shape shape_of(const ParamRecipe& p, const ModuleConfig& c) {
  switch (p.layout) {
    case Layout::Vector:
      return {c.size(p.rows)};
    case Layout::Token:
      return {1, 1, c.size(p.rows)};
    default:
      return {c.size(p.rows), c.size(p.cols)};
  }
}

std::string head_prefix(const ModuleConfig& c, int64_t h) { return c.recipe().per_head_modules ? "heads." + std::to_string(h) + "." : ""; }
int64_t module_count(const ModuleConfig& c) { return c.recipe().per_head_modules ? c.num_heads : 1; }

/// The operator a parameter of role `r` makes up (the latent's up-projections are the keys and values).
int role_index(Role r) {
  switch (r) {
    case Role::Query:
      return kQueryOp;
    case Role::Key:
    case Role::KeyUp:
      return kKeyOp;
    case Role::Value:
    case Role::ValueUp:
      return kValueOp;
    case Role::Out:
      return kOutOp;
    case Role::Proj:
      return kProjOp;
    case Role::LatentDown:
      return kLatentDownOp;
    case Role::Gate:
      return kGateOp;
    default:
      return -1;
  }
}

}  // namespace

std::vector<ParameterSpec> parameter_specs(const ModuleConfig& c) {
  std::vector<ParameterSpec> specs;
  for (int64_t h = 0; h < module_count(c); ++h)
    for (const ParamRecipe& p : c.recipe().params)
      if (present(p, c)) specs.push_back({head_prefix(c, h) + p.name, shape_of(p, c), &p, c.recipe().per_head_modules ? h : -1});
  return specs;
}

int64_t parameter_count(const ModuleConfig& config) {
  int64_t n = 0;
  for (const auto& s : parameter_specs(config)) n += numel_of(s.shape);
  return n;
}

/// What a module holds behind its interface (kept out of the installed header): the plan, each
/// parameter's name and shape, where each lives among the operators the forward reads, and those
/// operators, each prepared once (and again after set_parameter): queries, keys, values, out_proj, a
/// second projection and the down-projection to a latent as right-hand matrices (k, n) with their
/// biases (keys and values read the latent when there is one), and appended key/value tokens.
struct AttentionModule::Impl {
  explicit Impl(const ModuleConfig& config);

  static constexpr int kRoles = kOperators;  // one slot per Operator
  struct Prepared {
    ops::PackedMatrix weight[kRoles];
    std::vector<float> bias[kRoles];  // (n); empty when the operator has no bias
    std::vector<float> token[2];      // bias_k, bias_v: (kv_heads * head_dim); empty when none
    std::vector<float> rope[2];       // RoPE's cos, sin buffers: (context_length, head_dim); empty when none
  };
  /// Rows [row, row + rows) of a parameter hold outputs [offset, offset + rows) of operator `role`.
  struct Piece {
    int role;
    int64_t row, rows, offset;
  };
  /// Where parameter i lives: the pieces of the operators it makes up.
  struct Home {
    Layout layout = Layout::OutIn;
    std::vector<Piece> pieces;
  };

  const ModuleConfig& config() const { return plan_.config; }
  bool caches_keys() const { return plan_.caches_keys(); }
  /// Parameter i's values; `unpacked` caches each prepared matrix unpacked (one call's scratch).
  Tensor value(size_t i, std::vector<float> (&unpacked)[kRoles]) const;
  void store(const std::vector<std::pair<size_t, const Tensor*>>& values);
  const float* bias(int role) const;
  Tensor forward_pass(const Tensor& x, const ForwardOptions& options) const;
  /// Pass 8 on heads_concat (b, T, proj_width): out_proj (b, T, d_out) and proj, those the plan has.
  void project(const Tensor& concat, int64_t b, int64_t T, ThreadPool* pool, Tensor& out_proj, Tensor& projected) const;
  Diagnostic non_finite_warning(const Tensor& x, const ForwardOptions& options, const std::optional<TorchGenerator>& start) const;

  ForwardPlan plan_;
  std::vector<NamedTensor> params_;  // names and shapes (values live in prepared_)
  std::vector<Home> home_;
  bool in_out_[kRoles] = {};  // the operator's weights are stored (in, out): x @ W
  Prepared prepared_;
};

namespace {

/// A module's config, refused as validated_config refuses its slots (the same codes, slots and
/// messages; no memory budget: a module that does not fit fails to allocate with too_large): a
/// ModuleConfig filled in by hand could hold a head count of 0, or one that does not divide d_out.
const ModuleConfig& checked(const ModuleConfig& config) {
  if (config.spec == nullptr) throw AttentionError("unknown_class", "class", "this ModuleConfig names no class", "Make it with validated_config(...) or ModuleConfig::of(name).");
  // slots() reads a size of 0 or less in these two as None
  for (const auto& [slot, value] : {std::pair<const char*, int64_t>{"sliding_window_size", config.sliding_window_size}, {"latent_dim", config.latent_dim}})
    if (value < 0) throw AttentionError("non_positive", slot, std::string(slot) + " = " + std::to_string(value) + " is negative", "Give a positive size, or 0 for None.");
  CheckOptions options;
  options.memory_budget_bytes = std::numeric_limits<double>::infinity();
  validated_config(config.class_name(), config.slots(), options);
  return config;
}

/// A moved-from module holds no Impl: a call on it is refused, never a null dereference.
template <class Impl>
Impl& live(const std::unique_ptr<Impl>& impl) {
  if (!impl)
    throw AttentionError("disposed", "module", "this AttentionModule was moved from: it holds no parameters", "Use the module it was moved to, or assign a module to this one.");
  return *impl;
}

}  // namespace

AttentionModule::Impl::Impl(const ModuleConfig& config) : plan_(plan_forward(checked(config))) {
  const ForwardPlan& p = plan_;
  try {
    // Each operator lives once, prepared for the forward: q/k/v as (d_in, heads * head_dim) right-hand
    // matrices (the wrapper's heads side by side, packed rows split apart), out_proj and proj (d_out, d_out);
    // with a latent: W_DKV (d_in, latent_dim), and the keys and values read the latent (latent_dim, d_out).
    const int64_t kv_in = p.latent_dim > 0 ? p.latent_dim : config.d_in;
    const int64_t k_of[kRoles] = {config.d_in, kv_in, kv_in, config.d_out, config.d_out, config.d_in, config.d_in};
    const int64_t n_of[kRoles] = {p.proj_width, p.kv_heads * p.head_dim, p.kv_heads * p.head_dim, config.d_out, config.d_out, p.latent_dim, p.proj_width};
    bool used[kRoles] = {}, biased[kRoles] = {};
    for (const auto& spec : parameter_specs(config)) {
      const ParamRecipe& r = *spec.recipe;
      Home home;
      home.layout = r.layout;
      const int64_t rows = spec.shape[0];
      const int64_t offset = spec.head >= 0 ? spec.head * rows : 0;  // the wrapper's head h: outputs h*d_out ..
      if (r.role == Role::Qkv) {
        const int64_t third = (r.layout == Layout::Vector ? spec.shape[0] : rows) / 3;
        for (int m = kQueryOp; m <= kValueOp; ++m) home.pieces.push_back({m, m * third, third, 0});
      } else if (r.role == Role::BiasK || r.role == Role::BiasV) {
        home.pieces.push_back({r.role == Role::BiasK ? 0 : 1, 0, spec.shape.back(), 0});
      } else if (r.layout == Layout::InOut) {
        home.pieces.push_back({role_index(r.role), 0, spec.shape[1], 0});  // (in, out): columns are the outputs
      } else {
        home.pieces.push_back({role_index(r.role), 0, rows, offset});
      }
      for (const Piece& piece : home.pieces) {
        if (r.layout == Layout::Token) continue;
        (r.layout == Layout::Vector ? biased : used)[piece.role] = true;
        if (r.layout == Layout::InOut) in_out_[piece.role] = true;
      }
      params_.push_back({spec.name, Tensor()});
      params_.back().tensor.shape = spec.shape;
      home_.push_back(home);
    }
    for (int role = 0; role < kRoles; ++role) {
      if (!used[role]) continue;
      prepared_.weight[role] =
          ops::PackedMatrix{k_of[role], n_of[role], std::vector<float>(static_cast<size_t>(ops::packed_floats(k_of[role], n_of[role])), 0.0f)};  // zeros in any layout
      if (biased[role]) prepared_.bias[role].assign(static_cast<size_t>(n_of[role]), 0.0f);
    }
    if (p.extra_kv)
      for (auto& t : prepared_.token) t.assign(static_cast<size_t>(p.kv_heads * p.head_dim), 0.0f);
    if (p.rope()) rope_tables(p, prepared_.rope);
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", "d_out", "not enough memory for the parameters of " + config.python_call(), "Use smaller sizes.");
  }
}

AttentionModule::AttentionModule(const ModuleConfig& config) : impl_(std::make_unique<Impl>(config)) {}
AttentionModule::AttentionModule(const AttentionModule& other) : impl_(std::make_unique<Impl>(live(other.impl_))) {}
AttentionModule::AttentionModule(AttentionModule&&) noexcept = default;
AttentionModule& AttentionModule::operator=(const AttentionModule& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(live(other.impl_));
  return *this;
}
AttentionModule& AttentionModule::operator=(AttentionModule&&) noexcept = default;
AttentionModule::~AttentionModule() = default;

const ModuleConfig& AttentionModule::config() const { return live(impl_).config(); }
const ForwardPlan& AttentionModule::plan() const { return live(impl_).plan_; }
bool AttentionModule::caches_keys() const { return live(impl_).caches_keys(); }

AttentionModule::AttentionModule(const ModuleConfig& config, TorchGenerator& generator) : AttentionModule(config) {
  // Draws in the recipe's init order (module by module for the wrapper's heads); a step may fill a
  // parameter a later step overwrites (MHAEinsum's randn, then kaiming_uniform_): its draws still count.
  const auto specs = parameter_specs(config);
  std::vector<NamedTensor> values;
  for (const auto& spec : specs) values.push_back({spec.name, Tensor(spec.shape)});
  const auto find = [&](const std::string& name) -> NamedTensor* {
    for (auto& v : values)
      if (v.name == name) return &v;
    return nullptr;
  };
  for (int64_t h = 0; h < module_count(config); ++h) {
    for (const InitStep& step : config.recipe().init) {
      NamedTensor* v = find(head_prefix(config, h) + step.param);
      if (v == nullptr) continue;  // a bias the setup does not have
      Tensor& t = v->tensor;
      switch (step.init) {
        case Init::Rand:
          for (float& x : t.data) x = generator.random_float();
          break;
        case Init::Randn:
          generator.normal(t.data.data(), t.numel(), 0.0, 1.0);
          break;
        case Init::KaimingUniform: {
          const float bound = kaiming_bound(fans(t.shape).first);
          generator.uniform(t.data.data(), t.numel(), -bound, bound);
          break;
        }
        case Init::FanInUniform: {
          const NamedTensor* of = find(head_prefix(config, h) + step.fan_of);
          const float bound = fan_in_bound(of ? fans(of->tensor.shape).first : 0);
          generator.uniform(t.data.data(), t.numel(), -bound, bound);
          break;
        }
        case Init::XavierUniform: {
          const auto [fan_in, fan_out] = fans(t.shape);
          const float a = static_cast<float>(std::sqrt(3.0) * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
          generator.uniform(t.data.data(), t.numel(), -a, a);
          break;
        }
        case Init::XavierNormal: {
          const auto [fan_in, fan_out] = fans(t.shape);
          generator.normal(t.data.data(), t.numel(), 0.0, std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
          break;
        }
        case Init::Zeros:
          std::fill(t.data.begin(), t.data.end(), 0.0f);
          break;
      }
    }
  }
  set_parameters(values);
}

Tensor AttentionModule::Impl::value(size_t i, std::vector<float> (&unpacked)[kRoles]) const {
  const Home& home = home_[i];
  const Shape& shape = params_[i].tensor.shape;
  Tensor out(shape);
  if (home.layout == Layout::Token) {
    out.data = prepared_.token[home.pieces[0].role];
    return out;
  }
  const int64_t cols = home.layout == Layout::Vector ? 1 : shape[1];
  for (const Piece& piece : home.pieces) {
    if (home.layout == Layout::Vector) {
      const std::vector<float>& b = prepared_.bias[piece.role];
      std::copy_n(b.begin() + piece.offset, piece.rows, out.data.begin() + piece.row);
      continue;
    }
    const ops::PackedMatrix& packed = prepared_.weight[piece.role];
    std::vector<float>& all = unpacked[piece.role];  // as stored: (k, n) for (in, out) weights, else (n, k)
    if (all.empty()) {
      all.resize(static_cast<size_t>(packed.k * packed.n));
      ops::unpack_b(packed, all.data(), !in_out_[piece.role]);
    }
    if (home.layout == Layout::InOut) return Tensor(shape, all);
    std::copy_n(all.begin() + piece.offset * cols, piece.rows * cols, out.data.begin() + piece.row * cols);
  }
  return out;
}

void AttentionModule::Impl::store(const std::vector<std::pair<size_t, const Tensor*>>& values) {
  for (int role = 0; role < kRoles; ++role) {
    // The weights of this operator among the values: packed once, whatever their number.
    std::vector<std::pair<const Piece*, const Tensor*>> pieces;
    bool in_out = false;
    for (const auto& [i, v] : values) {
      const Home& home = home_[i];
      if (home.layout != Layout::OutIn && home.layout != Layout::InOut) continue;
      for (const Piece& piece : home.pieces)
        if (piece.role == role) {
          pieces.push_back({&piece, v});
          in_out = home.layout == Layout::InOut;
        }
    }
    if (pieces.empty()) continue;
    ops::PackedMatrix& packed = prepared_.weight[role];
    const int64_t k = packed.k, n = packed.n;
    std::vector<bool> given(static_cast<size_t>(n), false);  // outputs among the values (a name may come twice)
    for (const auto& [piece, v] : pieces) std::fill_n(given.begin() + piece->offset, piece->rows, true);
    const bool covered = std::find(given.begin(), given.end(), false) == given.end();
    if (in_out) {
      packed = ops::pack_b(pieces.back().second->data.data(), k, n, false);
      continue;
    }
    std::vector<float> all(static_cast<size_t>(k * n));  // (n, k): nn.Linear's layout
    // Outputs not among the values keep what they had.
    if (!covered) ops::unpack_b(packed, all.data(), true);
    for (const auto& [piece, v] : pieces) std::copy_n(v->data.begin() + piece->row * k, piece->rows * k, all.begin() + piece->offset * k);
    packed = ops::PackedMatrix();  // free before packing again: one copy at a time
    packed = ops::pack_b(all.data(), k, n, true);
  }
  for (const auto& [i, v] : values) {
    const Home& home = home_[i];
    if (home.layout == Layout::Token) prepared_.token[home.pieces[0].role] = v->data;
    if (home.layout != Layout::Vector) continue;
    for (const Piece& piece : home.pieces) std::copy_n(v->data.begin() + piece.row, piece.rows, prepared_.bias[piece.role].begin() + piece.offset);
  }
}

const float* AttentionModule::Impl::bias(int role) const { return prepared_.bias[role].empty() ? nullptr : prepared_.bias[role].data(); }

std::vector<NamedTensor> AttentionModule::parameters() const {
  std::vector<float> unpacked[Impl::kRoles];  // each prepared matrix unpacked once, whatever the number of heads
  std::vector<NamedTensor> out;
  const Impl& m = live(impl_);
  for (size_t i = 0; i < m.params_.size(); ++i) out.push_back({m.params_[i].name, m.value(i, unpacked)});
  return out;
}

std::optional<Tensor> AttentionModule::parameter(const std::string& name) const {
  std::vector<float> unpacked[Impl::kRoles];
  const Impl& m = live(impl_);
  for (size_t i = 0; i < m.params_.size(); ++i)
    if (m.params_[i].name == name) return m.value(i, unpacked);
  return std::nullopt;
}

void AttentionModule::set_parameter(const std::string& name, const Tensor& value) { set_parameters({{name, value}}); }

void AttentionModule::set_parameters(const std::vector<NamedTensor>& values) {
  const std::vector<NamedTensor>& params_ = live(impl_).params_;
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
    live(impl_).store(found);  // all checks passed: all or nothing
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", values.empty() ? "" : values.front().name, "not enough memory to prepare the parameters", "Use smaller sizes.");
  }
}

namespace {

std::string fmt(double v, int precision = 4) { return format_g(v, precision); }

}  // namespace

void check_input(const ModuleConfig& c, const Tensor& x, const std::string& what, double memory_budget_bytes, bool trace) {
  check_input(plan_forward(c), x, what, memory_budget_bytes, trace);
}

void check_input(const ForwardPlan& plan, const Tensor& x, const std::string& what, double memory_budget_bytes, bool trace) {
  const ModuleConfig& c = plan.config;
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
  const double bytes = plan_bytes(plan, x.shape, trace);
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
  Tensor y = live(impl_).forward_pass(x, options);
  if (options.warnings != nullptr && !first_non_finite(y.data.data(), y.data.size(), y.shape).empty())
    options.warnings->push_back(live(impl_).non_finite_warning(x, options, start));
  return y;
}

Diagnostic AttentionModule::Impl::non_finite_warning(const Tensor& x, const ForwardOptions& options, const std::optional<TorchGenerator>& start) const {
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
    // A view's values are its source's (an earlier stage) or -inf: its source turned non-finite first.
    if (s.view != StageView::Own) continue;
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
    // NaN weights whose row of masked scores is all -inf: the mask hid every key of that query
    // (softmax of a row of -inf is 0/0), not an overflow.
    if (s.id == "attn_weights") {
      for (const Stage& m : *trace) {
        if (m.id != "attn_scores_masked" || m.shape() != s.shape()) continue;
        const size_t cols = static_cast<size_t>(s.shape().back());
        std::vector<float> scratch;
        const float* row = stage_rows(*trace, m, static_cast<int64_t>(i / cols), 1, scratch);
        if (std::all_of(row, row + cols, [](float x) { return x == -std::numeric_limits<float>::infinity(); })) {
          d.message += ": the mask hides every key of this query, and softmax of a row of -inf is NaN";
          d.hint =
              "A mask must leave each query at least one key. A boolean mask passed where True means \"attend\" (scaled_dot_product_attention) hides the "
              "diagonal: pass ~mask, or is_causal=True.";
        }
      }
    }
    return d;
  }
  d.message = "the output holds NaN or infinity although every input value is finite";
  return d;
}

void AttentionModule::Impl::project(const Tensor& concat, int64_t b, int64_t T, ThreadPool* pool, Tensor& out_proj, Tensor& projected) const {
  const ForwardPlan& p = plan_;
  const int64_t d_out = p.config.d_out;
  if (p.out_proj) {
    out_proj = Tensor({b, T, d_out});  // (b, num_tokens, d_out)
    ops::gemm(pool, concat.data.data(), b * T, d_out, prepared_.weight[kOutOp], bias(kOutOp), out_proj.data.data());
  }
  if (p.proj) {
    projected = Tensor({b, T, d_out});  // (b, num_tokens, d_out)
    ops::gemm(pool, out_proj.data.data(), b * T, d_out, prepared_.weight[kProjOp], bias(kProjOp), projected.data.data());
  }
}

Tensor AttentionModule::project_heads(const Tensor& x, const Tensor& concat, const ForwardOptions& options) const {
  const ForwardPlan& p = live(impl_).plan_;
  if (p.layout == HeadsRule::Single)
    throw AttentionError("head_share", "share", p.config.class_name() + " has one head (of width d_out): there are no heads to join", "Run the whole forward (module.forward).");
  check_input(p, x, "x", options.memory_budget_bytes, false);
  const int64_t b = x.shape[0], T = x.shape[1];
  const Shape want{b, T, p.proj_width};
  if (concat.shape != want || concat.data.size() != static_cast<size_t>(numel_of(want)))
    throw AttentionError("head_share", "heads_concat",
                         "heads_concat has shape " + shape_string(concat.shape) + " (" + std::to_string(concat.data.size()) + " values); the heads of x " + shape_string(x.shape) +
                             " make " + shape_string(want),
                         "Join every share of module.headShares(parts), in order, along the last axis.");
  std::optional<TorchGenerator> start;
  if (options.warnings != nullptr && options.generator != nullptr) start = *options.generator;
  try {
    Tensor out_proj, projected;
    const Impl& m = live(impl_);
    const Tensor gate = p.gate ? gated(p, {m.prepared_.weight, m.prepared_.bias, m.prepared_.token}, options.pool, x, concat) : Tensor();
    m.project(p.gate ? gate : concat, b, T, options.pool, out_proj, projected);
    Tensor y = p.proj ? std::move(projected) : p.out_proj ? std::move(out_proj) : concat;
    if (options.warnings != nullptr && !first_non_finite(y.data.data(), y.data.size(), y.shape).empty()) {
      ForwardOptions whole = options;
      whole.share = nullptr;
      options.warnings->push_back(live(impl_).non_finite_warning(x, whole, start));
    }
    return y;
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", "x", "not enough memory to join the heads of " + p.config.python_call() + " on " + shape_string(x.shape),
                         "Use fewer tokens or a smaller batch.");
  }
}

Tensor AttentionModule::Impl::forward_pass(const Tensor& x, const ForwardOptions& options) const {
  const ForwardPlan& p = plan_;
  check_input(p, x, "x", options.memory_budget_bytes, options.trace != nullptr);
  const bool apply_dropout = p.dropout_stage && options.training && p.dropout > 0.0;
  if (options.share != nullptr) check_share(p, *options.share, options, apply_dropout);
  if (apply_dropout && options.generator == nullptr) {
    throw AttentionError("generator_missing", "dropout", "dropout in training mode needs a random generator", "Pass a generator, or run in eval mode.");
  }
  PassContext ctx{p, {prepared_.weight, prepared_.bias, prepared_.token, prepared_.rope}, options, chunk_of(p, x, options), {0, p.query_heads}, options.cache, apply_dropout};
  if (options.share != nullptr) ctx.heads = {options.share->first, options.share->first + options.share->count};
  try {
    Activations a;
    Recorder none;
    std::optional<TraceRecorder> tracer;
    if (options.trace != nullptr) tracer.emplace(ctx);
    Recorder& recorder = tracer ? static_cast<Recorder&>(*tracer) : none;
    project_latent(ctx, x, a);
    project_qkv(ctx, x, a);
    apply_rope(ctx, a, recorder.observing());
    attend(ctx, a, recorder);
    if (options.share != nullptr) return share_columns(ctx, a);
    merge_heads(ctx, a);
    gate_heads(ctx, x, a);
    // out_proj, then a second projection when the class has one (MHAPyTorchClass's proj)
    project(p.gate ? a.gate : a.heads_concat, ctx.chunk.b, ctx.chunk.T, options.pool, a.out_proj, a.proj);
    Tensor output = take_output(ctx, a, recorder.observing());
    KvCache next;  // the cache after this chunk, kept when the forward returns
    if (options.cache != nullptr) next = next_cache(ctx, a, recorder.observing());
    recorder.finish(a, x, output);
    if (options.cache != nullptr) *options.cache = std::move(next);
    return output;
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", "x", "not enough memory for a forward pass of " + p.config.python_call() + " on " + shape_string(x.shape),
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
  if (c.recipe().mask_buffer_bytes > 0)
    for (int64_t h = 0; h < module_count(c); ++h) mask_names.push_back(head_prefix(c, h) + "mask");
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
