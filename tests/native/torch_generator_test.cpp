#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "attention_lab/torch_generator.hpp"
#include "fixtures.hpp"

using namespace attention_lab;

namespace {
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}
}  // namespace

TEST_SUITE("torch_generator") {
  TEST_CASE("torch.rand after manual_seed is bit-identical to PyTorch") {
    int checked = 0;
    for (const auto& e : fixtures::all().at("rng")) {
      if (e.at("op") != "rand") continue;
      TorchGenerator g(e.at("seed").get<uint64_t>());
      const Tensor expected = fixtures::tensor(e);
      CAPTURE(e.at("seed").get<uint64_t>());
      CHECK(same_bits(g.rand(expected.shape), expected));
      ++checked;
    }
    CHECK(checked >= 6);
  }

  TEST_CASE("dropout in training mode reproduces PyTorch's CPU mask bit for bit") {
    int checked = 0;
    for (const auto& e : fixtures::all().at("rng")) {
      if (e.at("op") != "dropout") continue;
      TorchGenerator g(e.at("seed").get<uint64_t>());
      const Tensor out = g.dropout(fixtures::tensor(e.at("input")), e.at("p").get<double>());
      CAPTURE(e.at("p").get<double>());
      CHECK(same_bits(out, fixtures::tensor(e.at("output"))));
      ++checked;
    }
    CHECK(checked >= 4);
  }

  TEST_CASE("B5: survivors of dropout are scaled by 1/(1-p), not 1/p") {
    for (const double p : {0.1, 0.2, 0.5}) {
      TorchGenerator g(123);
      const Tensor out = g.dropout(Tensor({6, 6}, std::vector<float>(36, 1.0f)), p);
      const double expected = 1.0 / (1.0 - p);  // 1.1111, 1.25, 2.0
      int kept = 0;
      for (float v : out.data) {
        if (v != 0.0f) {
          CHECK(v == doctest::Approx(expected).epsilon(1e-6));
          ++kept;
        }
      }
      CHECK(kept > 0);
      CHECK(kept < 36);
    }
  }

  TEST_CASE("B13: after dropout a softmax row no longer sums to 1") {
    // Row [0.4, 0.6, 0] at p = 0.2: survivors become 0.4 / 0.8 = 0.5 and 0.6 / 0.8 = 0.75.
    TorchGenerator g(123);
    const Tensor out = g.dropout(Tensor({1, 3}, {0.4f, 0.6f, 0.0f}), 0.2);
    for (size_t i = 0; i < 2; ++i) {
      const float in = i == 0 ? 0.4f : 0.6f;
      if (out.data[i] != 0.0f) CHECK(out.data[i] == doctest::Approx(in / 0.8).epsilon(1e-6));
    }
    CHECK(out.data[2] == 0.0f);
    const Tensor expected = fixtures::tensor(fixtures::all().at("rng").back().at("output"));
    CHECK(same_bits(out, expected));
    CHECK(out.data[0] + out.data[1] + out.data[2] != doctest::Approx(1.0));
  }

  TEST_CASE("only the low 32 bits of the seed count") {
    TorchGenerator a((uint64_t{1} << 32) + 5), b(5);
    CHECK(same_bits(a.rand({4}), b.rand({4})));
  }

  TEST_CASE("Mt19937 draws exactly what std::mt19937 draws, across several twists") {
    for (const uint32_t seed : {0u, 5489u, 123u, 4294967295u}) {
      Mt19937 ours(seed);
      std::mt19937 reference(seed);
      bool same = true;
      for (int i = 0; i < 5000; ++i) same = same && ours() == reference();
      CAPTURE(seed);
      CHECK(same);
    }
  }

  TEST_CASE("the generator state round-trips as 625 words") {
    TorchGenerator a(7);
    a.rand({10});
    TorchGenerator b(0);
    b.set_state(a.state());
    CHECK(same_bits(a.rand({700}), b.rand({700})));
    CHECK_THROWS_AS(b.set_state({1, 2, 3}), AttentionError);
    std::vector<uint32_t> bad = a.state();
    bad.back() = 625;
    CHECK_THROWS_AS(b.set_state(bad), AttentionError);
  }

  TEST_CASE("dropout refuses p below 0 or from 1 up") {
    TorchGenerator g(1);
    CHECK_THROWS_AS(g.dropout(Tensor({2}), 1.0), AttentionError);
    CHECK_THROWS_AS(g.dropout(Tensor({2}), -0.1), AttentionError);
  }
}
