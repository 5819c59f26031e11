// A random stream equal to PyTorch's CPU default generator (torch.manual_seed semantics).
// Recipes and their verification: docs/torch-rng.md (bit-exact against PyTorch 1.13 generic kernels).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "attention_lab/tensor.hpp"

namespace attention_lab {

/// The 32-bit Mersenne Twister (MT19937), as std::mt19937 and PyTorch's CPU generator, with its state
/// open so that it can cross the WebAssembly boundary as 625 words (std::mt19937 only offers text).
/// Checked against std::mt19937 draw for draw in tests/native/torch_generator_test.cpp.
class Mt19937 {
 public:
  static constexpr size_t kStateWords = 624;
  explicit Mt19937(uint32_t seed = 5489u) { seed_with(seed); }
  /// init_genrand of the reference implementation (= std::mt19937::seed).
  void seed_with(uint32_t seed);
  uint32_t operator()();
  /// 624 state words, then the position in them.
  std::vector<uint32_t> words() const;
  /// Throws AttentionError("generator_state") unless given 625 words with a position <= 624.
  void set_words(const std::vector<uint32_t>& words);

 private:
  void twist();
  std::array<uint32_t, kStateWords> state_{};
  size_t index_ = kStateWords;
};

/// Mirrors `torch.manual_seed(seed)` followed by CPU draws: MT19937 seeded with the low 32 bits.
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
  /// `t.normal_(mean, std)` (and `torch.randn`, xavier_normal_) on n floats, consuming draws as
  /// PyTorch's CPU kernel does: n < 16, one double Box-Muller pair per two values with the second
  /// cached for the next normal draw (manual_seed clears the cache); n >= 16, n rand floats turned in
  /// blocks of 16 by float Box-Muller, and 16 fresh floats for the last block when n % 16 != 0.
  /// Values are bit-exact for n < 16; for n >= 16 PyTorch's AVX2 kernels use their own log/sin/cos,
  /// so only the draws consumed are exact there (what construction needs when a later init overwrites).
  void normal(float* data, int64_t n, double mean, double std);
  /// `nn.Dropout(p)` in training mode, in place on n floats: keep iff u < 1 - p (u a 53-bit draw),
  /// survivors times 1/(1-p) in float32. p == 0 draws nothing. Requires 0 <= p < 1.
  void dropout(float* data, int64_t n, double p);
  /// Same as the in-place form, on a copy.
  Tensor dropout(const Tensor& x, double p);
  /// `torch.multinomial(probs, 1)` on a 1-d float32 tensor of n probabilities, as PyTorch 1.13's CPU
  /// kernel draws it: q = probs / exponential_(1) over all n entries, then argmax(q) (the first maximum;
  /// a NaN wins, as in torch.argmax). Each exponential is -log(1 - u) of one 53-bit draw u (two 32-bit
  /// draws), computed in double and rounded to float32, so every call consumes exactly 2 n draws,
  /// zero probabilities included. The caller checks the probabilities (finite, >= 0, sum > 0).
  int64_t multinomial_one(const float* probs, int64_t n);

  /// The whole engine state (625 words); round-trips exactly through set_state.
  std::vector<uint32_t> state() const { return engine_.words(); }
  /// Restores a state from `state()`. Throws AttentionError("generator_state") on a malformed state.
  void set_state(const std::vector<uint32_t>& words) { engine_.set_words(words); }

 private:
  double normal_double();
  Mt19937 engine_;
  bool has_normal_cache_ = false;  // the second value of the last double Box-Muller pair
  double normal_cache_ = 0.0;
};

}  // namespace attention_lab
