// A module's parameters: each one's name and shape from the class's recipe, where it lives among the
// operators the forward reads (prepared once, packed for the product kernel), reading and writing
// them by name, and a module from a PyTorch state_dict.
#include <algorithm>
#include <limits>
#include <new>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"
#include "attention_passes.hpp"
#include "module_impl.hpp"

namespace attention_lab {

namespace {

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
