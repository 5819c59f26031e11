#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "attention_lab/modules.hpp"
#include "attention_lab/torch_generator.hpp"
#include "attention_lab/validator.hpp"
#include "fixtures.hpp"

using namespace attention_lab;

namespace {
bool same_bits(const Tensor& a, const Tensor& b) { return a.shape == b.shape && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0; }
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

  TEST_CASE("dropout p = 1 is accepted as PyTorch accepts it: input x 0, and no random number drawn") {
    // PyTorch 1.13 (checked with torch.get_rng_state before and after): nn.Dropout(1.0) in training
    // mode returns input * 0 and leaves the generator where it was.
    TorchGenerator g(123), fresh(123);
    const Tensor x({2, 3}, {0.5f, -0.25f, 1.0f, 0.0f, 3.0f, -2.0f});
    const Tensor y = g.dropout(x, 1.0);
    for (size_t i = 0; i < y.data.size(); ++i) {
      CHECK(y.data[i] == 0.0f);
      CHECK(std::signbit(y.data[i]) == std::signbit(x.data[i]));  // x * 0: -0.0 for a negative x
    }
    CHECK(g.state() == fresh.state());
    CHECK_THROWS(g.dropout(x, 1.0000001));

    // The validator accepts dropout = 1.0 with a dropout_all warning (an error for 1.5).
    const auto diagnostics = check_config("MultiHeadAttention", {{"d_in", SlotValue::integer(3)},
                                                                 {"d_out", SlotValue::integer(2)},
                                                                 {"context_length", SlotValue::integer(6)},
                                                                 {"dropout", SlotValue::floating(1.0)},
                                                                 {"num_heads", SlotValue::integer(2)}});
    REQUIRE(diagnostics.size() == 1);
    CHECK(diagnostics[0].code == "dropout_all");
    CHECK(diagnostics[0].severity == Severity::Warning);

    // MultiHeadAttention in training mode: every weight dropped, so the output is out_proj.bias on
    // every row, and the generator is where create left it.
    TorchGenerator init(123);
    const AttentionModule m(validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(3)},
                                                                    {"d_out", SlotValue::integer(2)},
                                                                    {"context_length", SlotValue::integer(6)},
                                                                    {"dropout", SlotValue::floating(1.0)},
                                                                    {"num_heads", SlotValue::integer(2)}}),
                            init);
    const std::vector<uint32_t> after_init = init.state();
    Tensor tokens({1, 6, 3});
    for (size_t i = 0; i < tokens.data.size(); ++i) tokens.data[i] = 0.1f * static_cast<float>(i);
    std::vector<Stage> trace;
    ForwardOptions opts;
    opts.generator = &init;
    opts.trace = &trace;
    const Tensor out = m.forward(tokens, opts);
    CHECK(init.state() == after_init);
    const Tensor bias = *m.parameter("out_proj.bias");
    for (int64_t t = 0; t < 6; ++t)
      for (int64_t c = 0; c < 2; ++c) CHECK(out.data[static_cast<size_t>(t * 2 + c)] == bias.data[static_cast<size_t>(c)]);
    bool seen = false;
    for (const Stage& s : trace) {
      if (s.id != "attn_weights_dropout") continue;
      seen = true;
      CHECK(std::all_of(s.tensor.data.begin(), s.tensor.data.end(), [](float v) { return v == 0.0f; }));
      CHECK(s.title.find("p = 1") != std::string::npos);
    }
    CHECK(seen);
  }

  // pitfalls.md B5
  TEST_CASE("survivors of dropout are scaled by 1/(1-p), not 1/p") {
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

  // pitfalls.md B13
  TEST_CASE("after dropout a softmax row no longer sums to 1") {
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

  TEST_CASE("dropout refuses p below 0 or above 1 (1 itself is PyTorch's: everything dropped)") {
    TorchGenerator g(1);
    CHECK_THROWS_AS(g.dropout(Tensor({2}), 1.5), AttentionError);
    CHECK_THROWS_AS(g.dropout(Tensor({2}), -0.1), AttentionError);
  }
}
