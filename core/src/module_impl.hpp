// AttentionModule::Impl, shared by the files that make up a module: module_parameters.cpp (its
// parameters and their homes among the prepared operators), module_init.cpp (seeded construction)
// and modules.cpp (the forward).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/ops.hpp"
#include "attention_passes.hpp"

namespace attention_lab {

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
  /// With `pending` (and a cache), the cache's next state is left there instead of kept.
  Tensor forward_pass(const Tensor& x, const ForwardOptions& options, PendingCache* pending = nullptr) const;
  /// Pass 8 on heads_concat (b, T, proj_width): out_proj (b, T, d_out) and proj, those plan `p` has.
  void project(const ForwardPlan& p, const Tensor& concat, int64_t b, int64_t T, ThreadPool* pool, Tensor& out_proj, Tensor& projected) const;
  Diagnostic non_finite_warning(const Tensor& x, const ForwardOptions& options, const std::optional<TorchGenerator>& start) const;

  ForwardPlan plan_;
  std::vector<NamedTensor> params_;  // names and shapes (values live in prepared_)
  std::vector<Home> home_;
  bool in_out_[kRoles] = {};  // the operator's weights are stored (in, out): x @ W
  Prepared prepared_;
};

/// A moved-from module holds no Impl: a call on it is refused, never a null dereference.
template <class Impl>
inline Impl& live(const std::unique_ptr<Impl>& impl) {
  if (!impl)
    throw AttentionError("disposed", "module", "this AttentionModule was moved from: it holds no parameters", "Use the module it was moved to, or assign a module to this one.");
  return *impl;
}

/// The wrapper's head h's name prefix ("heads.{h}."), "" for a class of one module.
inline std::string head_prefix(const ModuleConfig& c, int64_t h) { return c.recipe().per_head_modules ? "heads." + std::to_string(h) + "." : ""; }
inline int64_t module_count(const ModuleConfig& c) { return c.recipe().per_head_modules ? c.num_heads : 1; }

}  // namespace attention_lab
