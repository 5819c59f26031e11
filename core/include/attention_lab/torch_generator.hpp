// A random stream equal to PyTorch's CPU default generator (torch.manual_seed semantics).
// Recipes and their verification: ../shared/torch-rng.md (bit-exact against PyTorch 1.13 generic kernels).
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "attention_lab/tensor.hpp"

namespace attention_lab {

/// Mirrors `torch.manual_seed(seed)` followed by CPU draws: std::mt19937 seeded with the low 32 bits.
/// Draw order is PyTorch's: one 32-bit draw per float32 `rand`/`uniform_` element, one 53-bit draw
/// (two 32-bit draws) per `bernoulli_` element, row-major.
class TorchGenerator {
 public:
  /// `torch.manual_seed(seed)`: only the low 32 bits count (seed 2**32 + 5 == seed 5).
  explicit TorchGenerator(uint64_t seed = 67280421310721ULL);

  void manual_seed(uint64_t seed);

  /// One 32-bit draw.
  uint32_t random() { return engine_(); }
  /// One 53-bit draw in [0, 1) as a double (PyTorch's `uniform_real_distribution<double>`).
  double random_double();
  /// One float32 in [0, 1) as `torch.rand` makes it: 24 bits of one 32-bit draw.
  float random_float();

  /// `torch.rand(*shape)`: (shape) row-major float32 in [0, 1).
  Tensor rand(const Shape& shape);
  /// `t.uniform_(from, to)` on n floats; bounds are cast to float first (one rounding, FMA-free form).
  void uniform(float* data, int64_t n, float from, float to);
  /// `nn.Dropout(p)` in training mode, in place on n floats: keep iff u < 1 - p (u a 53-bit draw),
  /// survivors times 1/(1-p) in float32. p == 0 draws nothing. Requires 0 <= p < 1.
  void dropout(float* data, int64_t n, double p);
  /// Same as the in-place form, on a copy.
  Tensor dropout(const Tensor& x, double p);

  /// The whole engine state as text (std::mt19937's standard text form); round-trips exactly.
  std::string state() const;
  /// Restores a state from `state()`. Throws AttentionError("generator_state") on malformed text.
  void set_state(const std::string& text);

 private:
  std::mt19937 engine_;
};

}  // namespace attention_lab
