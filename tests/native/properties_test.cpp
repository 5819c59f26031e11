// Properties that hold for every configuration, each checked over 64 random small setups drawn with a
// fixed-seed std::mt19937 (so a failure names a reproducible draw): trace invariance, batch
// independence, causality, eval determinism, softmax rows, exact masking.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"

using namespace attention_lab;

namespace {

constexpr int kDraws = 64;

enum class Only { Any, Batched, Causal };

struct Setup {
  ModuleConfig config;
  Shape input_shape;  // (num_tokens, d_in) or (b, num_tokens, d_in)
  uint64_t seed = 0;
};

/// A random small valid configuration and an input shape that fits it.
Setup draw(std::mt19937& rng, Only only = Only::Any, int64_t min_tokens = 1, int64_t min_batch = 1) {
  const auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  static const char* const all[] = {"SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention"};
  const int first = only == Only::Any ? 0 : 2;  // the batched classes are the causal ones
  Setup s;
  ModuleConfig& c = s.config;
  c = ModuleConfig::of(all[pick(first, 4)]);
  c.d_in = pick(1, 6);
  c.qkv_bias = pick(0, 1) == 1;
  if (c.recipe().heads == HeadsRule::Fused) {
    c.num_heads = pick(1, 3);
    c.d_out = c.num_heads * pick(1, 3);  // head_dim 1..3
  } else if (c.recipe().heads == HeadsRule::Modules) {
    c.num_heads = pick(1, 3);
    c.d_out = pick(1, 4);
  } else {
    c.d_out = pick(1, 5);
  }
  const int64_t tokens = pick(min_tokens, 6);
  if (c.batched()) {
    c.context_length = tokens + pick(0, 3);
    const double rates[] = {0.0, 0.1, 0.5};
    c.dropout = rates[pick(0, 2)];
    s.input_shape = {pick(min_batch, 3), tokens, c.d_in};
  } else {
    s.input_shape = {tokens, c.d_in};
  }
  s.seed = static_cast<uint64_t>(pick(0, 1 << 30));
  // Through the validator, as a user's slots would go: every drawn setup is valid.
  c = validated_config(c.class_name(), c.slots(), CheckOptions{s.input_shape, std::nullopt});
  return s;
}

Tensor random_input(std::mt19937& rng, const Shape& shape) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  Tensor x(shape);
  for (float& v : x.data) v = u(rng);
  return x;
}

/// The module of a drawn setup, its parameters seeded with the setup's seed.
AttentionModule module_of(const Setup& s) {
  TorchGenerator init(s.seed);
  return AttentionModule(s.config, init);
}

std::string describe(const Setup& s) { return s.config.python_call() + " on " + shape_string(s.input_shape) + ", seed " + std::to_string(s.seed); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

const Stage& stage(const std::vector<Stage>& trace, const std::string& id) {
  for (const auto& s : trace)
    if (s.id == id) return s;
  FAIL("no stage " << id);
  throw std::logic_error("unreachable");
}

/// Rows of `t`'s last two axes as (slab, query, key) triples: every tensor here is (..., query, key).
template <typename F>
void for_each_entry(const Tensor& t, F&& f) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t slabs = t.numel() / (rows * cols);
  for (int64_t s = 0; s < slabs; ++s)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) f(s, i, j, t.data[static_cast<size_t>((s * rows + i) * cols + j)]);
}

}  // namespace

TEST_SUITE("properties (64 random setups each, std::mt19937 seeded)") {
  TEST_CASE("tracing on or off gives the same output bits and the same generator state") {
    std::mt19937 rng(20240601);
    for (int n = 0; n < kDraws; ++n) {
      const Setup s = draw(rng);
      INFO(describe(s));
      const AttentionModule m = module_of(s);
      const Tensor x = random_input(rng, s.input_shape);
      const bool training = n % 2 == 0;  // half of them with dropout acting
      TorchGenerator g1(s.seed + 1), g2(s.seed + 1);
      std::vector<Stage> trace;
      ForwardOptions plain{training, &g1, nullptr};
      ForwardOptions traced{training, &g2, &trace};
      const Tensor a = m.forward(x, plain);
      const Tensor b = m.forward(x, traced);
      CHECK(a.shape == b.shape);
      CHECK(same_bits(a.data, b.data));
      CHECK(g1.state() == g2.state());
      CHECK(same_bits(stage(trace, "output").tensor.data, b.data));
    }
  }

  TEST_CASE("permuting the batch permutes the output (batched classes, eval)") {
    std::mt19937 rng(7);
    double max_seen = 0;
    for (int n = 0; n < kDraws; ++n) {
      const Setup s = draw(rng, Only::Batched, 1, 2);
      INFO(describe(s));
      const AttentionModule m = module_of(s);
      const Tensor x = random_input(rng, s.input_shape);
      const int64_t b = s.input_shape[0];
      std::vector<int64_t> perm(static_cast<size_t>(b));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      const int64_t item = x.numel() / b;
      Tensor xp(x.shape);
      for (int64_t i = 0; i < b; ++i) std::copy_n(x.data.begin() + perm[static_cast<size_t>(i)] * item, item, xp.data.begin() + i * item);
      ForwardOptions eval;
      eval.training = false;
      const Tensor y = m.forward(x, eval);
      const Tensor yp = m.forward(xp, eval);
      // Equal within float32 rounding, not bit for bit: the q/k/v projections run as one (b*T, d_in)
      // product, and Eigen's GEMM sums a row in a slightly different order depending on which register
      // block the row lands in. Every other stage works per batch item.
      const int64_t out_item = y.numel() / b;
      double worst = 0;
      for (int64_t i = 0; i < b; ++i)
        for (int64_t k = 0; k < out_item; ++k) {
          const float want = y.data[static_cast<size_t>(perm[static_cast<size_t>(i)] * out_item + k)];
          const float got = yp.data[static_cast<size_t>(i * out_item + k)];
          worst = std::max(worst, std::fabs(static_cast<double>(got) - want) / (1.0 + std::fabs(want)));
        }
      CHECK(worst <= 1e-6);
      max_seen = std::max(max_seen, worst);
    }
    MESSAGE("largest relative difference after a batch permutation: " << max_seen);
  }

  TEST_CASE("changing a later token never changes an earlier token's output (CausalAttention, wrapper, MHA)") {
    std::mt19937 rng(1234);
    for (int n = 0; n < kDraws; ++n) {
      const Setup s = draw(rng, Only::Causal, 2);
      INFO(describe(s));
      const AttentionModule m = module_of(s);
      const Tensor x = random_input(rng, s.input_shape);
      const int64_t T = s.input_shape[1], d_in = s.input_shape[2], b = s.input_shape[0];
      const int64_t later = std::uniform_int_distribution<int64_t>(1, T - 1)(rng);
      Tensor changed = x;
      std::uniform_real_distribution<float> u(-50.0f, 50.0f);
      for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t t = later; t < T; ++t)
          for (int64_t j = 0; j < d_in; ++j) changed.data[static_cast<size_t>((bi * T + t) * d_in + j)] = u(rng);
      // In training too: the dropout draws do not depend on the values, so the same seed gives the same masks.
      const bool training = n % 2 == 1;
      TorchGenerator g1(s.seed + 9), g2(s.seed + 9);
      const Tensor y = m.forward(x, ForwardOptions{training, &g1, nullptr});
      const Tensor yc = m.forward(changed, ForwardOptions{training, &g2, nullptr});
      const int64_t width = y.size(-1);
      INFO("tokens from " << later << " changed");
      for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t t = 0; t < later; ++t)
          for (int64_t j = 0; j < width; ++j) {
            const size_t k = static_cast<size_t>((bi * T + t) * width + j);
            CHECK(y.data[k] == yc.data[k]);  // == : a +0 / -0 difference from a 0-weighted term is no leak
          }
    }
  }

  // pitfalls.md B7
  TEST_CASE("eval mode is deterministic and bitwise equal to the same module with dropout 0") {
    std::mt19937 rng(99);
    for (int n = 0; n < kDraws; ++n) {
      Setup s = draw(rng, Only::Batched);
      s.config.dropout = n % 2 == 0 ? 0.1 : 0.5;
      INFO(describe(s));
      ModuleConfig off = s.config;
      off.dropout = 0.0;
      TorchGenerator init_a(s.seed), init_b(s.seed);
      const AttentionModule with_dropout(s.config, init_a);
      const AttentionModule without(off, init_b);
      for (size_t p = 0; p < with_dropout.parameters().size(); ++p) CHECK(same_bits(with_dropout.parameters()[p].tensor.data, without.parameters()[p].tensor.data));
      const Tensor x = random_input(rng, s.input_shape);
      TorchGenerator g(s.seed + 3);
      const std::vector<uint32_t> state = g.state();
      const Tensor e1 = with_dropout.forward(x, ForwardOptions{false, &g, nullptr});
      const Tensor e2 = with_dropout.forward(x, ForwardOptions{false, &g, nullptr});
      CHECK(g.state() == state);  // eval draws nothing
      CHECK(same_bits(e1.data, e2.data));
      CHECK(same_bits(e1.data, without.forward(x, ForwardOptions{false, nullptr, nullptr}).data));
      CHECK(same_bits(e1.data, without.forward(x, ForwardOptions{true, &g, nullptr}).data));  // p = 0 in training: nothing dropped
      CHECK(g.state() == state);
    }
  }

  TEST_CASE("every attn_weights row sums to 1 within 1e-6") {
    std::mt19937 rng(31337);
    for (int n = 0; n < kDraws; ++n) {
      const Setup s = draw(rng);
      INFO(describe(s));
      const AttentionModule m = module_of(s);
      std::vector<Stage> trace;
      m.forward(random_input(rng, s.input_shape), ForwardOptions{false, nullptr, &trace});
      const Tensor& w = stage(trace, "attn_weights").tensor;
      const int64_t cols = w.size(-1);
      for (int64_t r = 0; r < w.numel() / cols; ++r) {
        double sum = 0;
        for (int64_t j = 0; j < cols; ++j) sum += w.data[static_cast<size_t>(r * cols + j)];
        CHECK(std::fabs(sum - 1.0) <= 1e-6);
      }
    }
  }

  TEST_CASE("masked weights are exactly 0 and masked scores exactly -inf, the rest untouched") {
    std::mt19937 rng(4242);
    const float minus_inf = -std::numeric_limits<float>::infinity();
    for (int n = 0; n < kDraws; ++n) {
      const Setup s = draw(rng, Only::Causal);
      INFO(describe(s));
      const AttentionModule m = module_of(s);
      std::vector<Stage> trace;
      TorchGenerator g(s.seed + 5);
      m.forward(random_input(rng, s.input_shape), ForwardOptions{n % 2 == 0, &g, &trace});
      const Tensor& scores = stage(trace, "attn_scores").tensor;
      const Tensor& masked = stage(trace, "attn_scores_masked").tensor;
      const Tensor& dropped = stage(trace, "attn_weights_dropout").tensor;
      for_each_entry(masked, [&](int64_t slab, int64_t i, int64_t j, float v) {
        const size_t k = static_cast<size_t>((slab * masked.size(-2) + i) * masked.size(-1) + j);
        if (j > i) {
          CHECK(v == minus_inf);
        } else {
          CHECK(same_bits({v}, {scores.data[k]}));
        }
      });
      for_each_entry(stage(trace, "attn_weights").tensor, [&](int64_t, int64_t i, int64_t j, float v) {
        if (j > i)
          CHECK(same_bits({v}, {0.0f}));  // +0 exactly, not a tiny epsilon (B11)
        else
          CHECK(std::isfinite(v));
      });
      for_each_entry(dropped, [&](int64_t, int64_t i, int64_t j, float v) {
        if (j > i) CHECK(v == 0.0f);
      });
      const Tensor& mask = stage(trace, "mask").tensor;
      for_each_entry(mask, [&](int64_t, int64_t i, int64_t j, float v) { CHECK(v == (j > i ? 1.0f : 0.0f)); });
    }
  }
}
