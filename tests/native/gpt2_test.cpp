// The whole-model run's results (gpt2.hpp): attention_thumbnail, attention_first_tokens, the
// `attention` option's names, and gpt2_run_bytes counting what the caller holds of each kind.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "attention_lab/gpt2.hpp"
#include "attention_lab/gpt2_sizes.hpp"
#include "attention_lab/validator.hpp"
#include "refusal.hpp"

using namespace attention_lab;

namespace {
/// (1, H, T, T) causal weights with distinct values: row i of head h holds (h + 1) * (i + 1) * 100 + j
/// at keys j <= i and 0 after.
Tensor causal_weights(int64_t H, int64_t T) {
  Tensor w({1, H, T, T});
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j <= i; ++j) w.data[static_cast<size_t>((h * T + i) * T + j)] = static_cast<float>((h + 1) * (i + 1) * 100 + j);
  return w;
}
float at(const Tensor& t, int64_t h, int64_t i, int64_t j) { return t.data[static_cast<size_t>((h * t.shape[2] + i) * t.shape[3] + j)]; }
}  // namespace

TEST_SUITE("gpt2") {
  TEST_CASE("attention_thumbnail averages each block of queries x keys; cells above the diagonal are all masked") {
    const Tensor w = causal_weights(2, 4);
    const Tensor t = attention_thumbnail(w, 2);  // 2 x 2 blocks of 2 x 2
    CHECK(t.shape == Shape{1, 2, 2, 2});
    // head 0, cell (0, 0): queries 0-1, keys 0-1: (100 + 0 + 200 + 201) / 4
    CHECK(at(t, 0, 0, 0) == doctest::Approx((100.0 + 0.0 + 200.0 + 201.0) / 4).epsilon(1e-7));
    CHECK(at(t, 0, 0, 1) == 0.0f);
    // head 1, cell (1, 0): queries 2-3 (x2: 600, 800), keys 0-1
    CHECK(at(t, 1, 1, 0) == doctest::Approx((600.0 + 601.0 + 800.0 + 801.0) / 4).epsilon(1e-7));
    CHECK(at(t, 1, 1, 1) == doctest::Approx((602.0 + 0.0 + 802.0 + 803.0) / 4).epsilon(1e-7));
    // uneven blocks: T = 5 into 2 cells is rows/keys 0-1 and 2-4
    const Tensor u = attention_thumbnail(causal_weights(1, 5), 2);
    CHECK(at(u, 0, 1, 0) == doctest::Approx((300.0 + 301.0 + 400.0 + 401.0 + 500.0 + 501.0) / 6).epsilon(1e-7));
    CHECK(at(u, 0, 0, 1) == 0.0f);
    // no more cells than tokens: S = T is the weights themselves, bit for bit
    const Tensor same = attention_thumbnail(w, 64);
    CHECK(same.shape == w.shape);
    CHECK(same.data == w.data);
  }

  TEST_CASE("attention_first_tokens keeps the first F queries against the first F keys, exactly") {
    const Tensor w = causal_weights(3, 7);
    const Tensor f = attention_first_tokens(w, 4);
    CHECK(f.shape == Shape{1, 3, 4, 4});
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) CHECK(at(f, h, i, j) == at(w, h, i, j));
    CHECK(attention_first_tokens(w, 48).data == w.data);
  }

  TEST_CASE("the attention option's names; anything else is run_option on the attention slot") {
    CHECK(gpt2_attention_of("full") == Gpt2Attention::Full);
    CHECK(gpt2_attention_of("thumbnails") == Gpt2Attention::Thumbnails);
    for (const char* bad : {"", "Full", "weights", "<number>"}) {
      CAPTURE(bad);
      CHECK(refusal([&] { gpt2_attention_of(bad); }) == std::pair<std::string, std::string>{"run_option", "attention"});
    }
  }

  TEST_CASE("gpt2_run_bytes counts every layer's results as the caller holds them, of the kind asked for") {
    Gpt2Config c;
    c.n_embd = 1600;
    c.n_head = 25;
    c.n_layer = 48;
    c.n_ctx = 1024;
    c.vocab_size = 50257;
    c.dtype = "F32";
    const double full = gpt2_run_bytes(c, 1024, Gpt2Attention::Full), thumbnails = gpt2_run_bytes(c, 1024, Gpt2Attention::Thumbnails);
    // per layer: the input (T x d) and the weights (H x T x T), against H x (64^2 + 48^2) cells
    CHECK(full - thumbnails == doctest::Approx(48.0 * 4.0 * (1024.0 * 1600 + 25.0 * 1024 * 1024) - 48.0 * 4.0 * 25 * (64 * 64 + 48 * 48)));
    CHECK(full > kDefaultMemoryBudgetBytes);
    CHECK(thumbnails < kDefaultMemoryBudgetBytes);
    // few tokens: the thumbnails are the tokens themselves (S = F = T)
    CHECK(gpt2_run_bytes(c, 6, Gpt2Attention::Full) - gpt2_run_bytes(c, 6, Gpt2Attention::Thumbnails) ==
          doctest::Approx(48.0 * 4.0 * (6.0 * 1600 + 25.0 * 36) - 48.0 * 4.0 * 25 * (36 + 36)));
  }
}
