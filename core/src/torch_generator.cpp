#include "attention_lab/torch_generator.hpp"

#include <cmath>

#include "attention_lab/text.hpp"

namespace attention_lab {

void Mt19937::seed_with(uint32_t seed) {
  state_[0] = seed;
  for (size_t i = 1; i < kStateWords; ++i) state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  index_ = kStateWords;
}

void Mt19937::twist() {
  constexpr uint32_t kUpper = 0x80000000u, kLower = 0x7fffffffu, kMatrix = 0x9908b0dfu;
  for (size_t i = 0; i < kStateWords; ++i) {
    const uint32_t y = (state_[i] & kUpper) | (state_[(i + 1) % kStateWords] & kLower);
    state_[i] = state_[(i + 397) % kStateWords] ^ (y >> 1) ^ ((y & 1u) ? kMatrix : 0u);
  }
  index_ = 0;
}

uint32_t Mt19937::operator()() {
  if (index_ >= kStateWords) twist();
  uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

std::vector<uint32_t> Mt19937::words() const {
  std::vector<uint32_t> out(state_.begin(), state_.end());
  out.push_back(static_cast<uint32_t>(index_));
  return out;
}

void Mt19937::set_words(const std::vector<uint32_t>& words) {
  if (words.size() != kStateWords + 1 || words.back() > kStateWords) {
    throw AttentionError("generator_state", "", "a generator state is 625 words (624 + position), got " + std::to_string(words.size()), "Pass a state returned by state().");
  }
  std::copy(words.begin(), words.end() - 1, state_.begin());
  index_ = words.back();
}

TorchGenerator::TorchGenerator(uint64_t seed) { manual_seed(seed); }

void TorchGenerator::manual_seed(uint64_t seed) {
  engine_.seed_with(static_cast<uint32_t>(seed & 0xFFFFFFFFULL));
  has_normal_cache_ = false;
}

double TorchGenerator::normal_double() {
  if (has_normal_cache_) {
    has_normal_cache_ = false;
    return normal_cache_;
  }
  const double u1 = random_double();
  const double u2 = random_double();
  const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
  const double theta = 2.0 * M_PI * u1;
  normal_cache_ = r * std::sin(theta);
  has_normal_cache_ = true;
  return r * std::cos(theta);
}

void TorchGenerator::normal(float* data, int64_t n, double mean, double std) {
  if (n < 16) {
    for (int64_t i = 0; i < n; ++i) data[i] = static_cast<float>(normal_double() * std + mean);
    return;
  }
  // normal_fill: uniform floats, then each block of 16 (j, j + 8) turned into a Box-Muller pair.
  const auto fill16 = [&](float* d) {
    for (int j = 0; j < 8; ++j) {
      const float u1 = 1.0f - d[j];
      const float u2 = d[j + 8];
      const float radius = std::sqrt(-2.0f * std::log(u1));
      const float theta = 2.0f * static_cast<float>(M_PI) * u2;
      d[j] = radius * std::cos(theta) * static_cast<float>(std) + static_cast<float>(mean);
      d[j + 8] = radius * std::sin(theta) * static_cast<float>(std) + static_cast<float>(mean);
    }
  };
  for (int64_t i = 0; i < n; ++i) data[i] = random_float();
  for (int64_t i = 0; i + 16 <= n; i += 16) fill16(data + i);
  if (n % 16 != 0) {
    float* last = data + n - 16;
    for (int j = 0; j < 16; ++j) last[j] = random_float();
    fill16(last);
  }
}

double TorchGenerator::random_double() {
  // PyTorch's random64(): the first draw is the high word.
  const uint64_t a = engine_();
  const uint64_t b = engine_();
  const uint64_t u = ((a << 32) | b) & ((uint64_t{1} << 53) - 1);
  return static_cast<double>(u) * (1.0 / static_cast<double>(uint64_t{1} << 53));
}

int64_t TorchGenerator::multinomial_one(const float* probs, int64_t n) {
  int64_t best = 0;
  float best_q = 0.0f;
  bool found_nan = false;
  for (int64_t i = 0; i < n; ++i) {
    const float e = static_cast<float>(-std::log(1.0 - random_double()));  // exponential_(1) in double, stored as float32
    const float q = probs[i] / e;
    if (found_nan) continue;  // every draw is consumed, whatever wins
    if (std::isnan(q)) {
      best = i;
      found_nan = true;
    } else if (i == 0 || q > best_q) {
      best = i;
      best_q = q;
    }
  }
  return best;
}

float TorchGenerator::random_float() {
  const uint32_t r = engine_();
  return static_cast<float>(r & 0xFFFFFFu) * (1.0f / static_cast<float>(1u << 24));
}

Tensor TorchGenerator::rand(const Shape& shape) {
  Tensor t(shape);
  for (float& v : t.data) v = random_float();
  return t;
}

void TorchGenerator::uniform(float* data, int64_t n, float from, float to) {
  const double span = static_cast<double>(to - from);
  for (int64_t i = 0; i < n; ++i) {
    // fmaf(u, to - from, from) with one rounding; for symmetric bounds this double form is exact
    // and needs no FMA instruction, so native and WebAssembly builds agree (docs/torch-rng.md).
    const double u = static_cast<double>(random_float());
    data[i] = static_cast<float>(u * span + static_cast<double>(from));
  }
}

void TorchGenerator::dropout(float* data, int64_t n, double p) {
  if (p == 0.0) return;  // PyTorch draws nothing for p == 0
  if (p == 1.0) {        // nor for p == 1: input * 0 (so -0.0 stays -0.0, as in PyTorch's multiply)
    for (int64_t i = 0; i < n; ++i) data[i] = data[i] * 0.0f;
    return;
  }
  const double keep = 1.0 - p;
  // noise.div_(1 - p) in float32; dividing x by (1 - p) directly is not bit-exact.
  const float scale = 1.0f / static_cast<float>(keep);
  for (int64_t i = 0; i < n; ++i) {
    const bool kept = random_double() < keep;  // dropped elements consume their draw too
    data[i] = data[i] * (kept ? scale : 0.0f);
  }
}

Tensor TorchGenerator::dropout(const Tensor& x, double p) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw AttentionError("dropout_range", "p", "dropout probability must be in [0, 1], got " + format_number(p), "Use a value such as 0.1 or 0.5.");
  }
  Tensor y = x;
  dropout(y.data.data(), y.numel(), p);
  return y;
}

}  // namespace attention_lab
