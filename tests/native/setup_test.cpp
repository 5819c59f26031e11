#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "attention_lab/setup.hpp"
#include "refusal.hpp"

using namespace attention_lab;

namespace {
SlotMap mha(double d_in, double d_out, double ctx, double dropout, double heads) {
  return {{"d_in", SlotValue::integer(d_in)},
          {"d_out", SlotValue::integer(d_out)},
          {"context_length", SlotValue::integer(ctx)},
          {"dropout", SlotValue::floating(dropout)},
          {"num_heads", SlotValue::integer(heads)}};
}
bool has_code(const std::vector<Diagnostic>& ds, const std::string& code) {
  return std::any_of(ds.begin(), ds.end(), [&](const Diagnostic& d) { return d.code == code; });
}
bool same_codes(const std::vector<Diagnostic>& a, const std::vector<Diagnostic>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Diagnostic& x, const Diagnostic& y) { return x.code == y.code && x.message == y.message; });
}
Tensor stacked_book(int64_t b) {
  const Tensor x = book_tokens();
  Tensor out({b, x.shape[0], x.shape[1]});
  for (int64_t i = 0; i < b; ++i) std::copy(x.data.begin(), x.data.end(), out.data.begin() + i * static_cast<int64_t>(x.data.size()));
  return out;
}
}  // namespace

TEST_SUITE("setup") {
  TEST_CASE("the book's MultiHeadAttention(3, 2, 6, 0.0, 2): one setup holds check's diagnostics, the description and the estimate") {
    SetupOptions o;
    o.input_shape = Shape{2, 6, 3};
    o.training = true;
    const Setup s = make_setup("MultiHeadAttention", mha(3, 2, 6, 0.0, 2), o);
    CHECK(s.valid);
    CHECK(same_codes(s.config_diagnostics, check_config("MultiHeadAttention", mha(3, 2, 6, 0.0, 2))));
    CheckOptions co;
    co.input_shape = o.input_shape;
    co.training = true;
    CHECK(same_codes(s.diagnostics, check_config("MultiHeadAttention", mha(3, 2, 6, 0.0, 2), co)));
    REQUIRE(s.description);
    const Description& d = *s.description;
    CHECK(d.head_dim == 1);
    CHECK(d.output_width == 2);
    CHECK(d.python_call == "MultiHeadAttention(3, 2, 6, 0.0, 2)");
    CHECK(d.parameter_count == parameter_count(d.config));
    CHECK(d.parameters.size() == parameter_specs(d.config).size());
    CHECK(d.mask_bytes == d.config.mask_buffer_bytes());
    REQUIRE(s.memory);
    CHECK(s.memory->bytes == estimate_bytes(d.config, o.input_shape, true));
    CHECK(s.memory->budget == kDefaultMemoryBudgetBytes);
  }

  TEST_CASE("the input's problems are in diagnostics, not in config_diagnostics; the estimate without a trace is smaller") {
    SetupOptions o;
    o.input_shape = Shape{2, 7, 3};
    o.training = false;
    o.trace = false;
    const Setup s = make_setup("MultiHeadAttention", mha(3, 2, 6, 0.5, 2), o);
    CHECK(s.valid);
    CHECK(has_code(s.diagnostics, "context_too_short"));
    CHECK(has_code(s.diagnostics, "dropout_eval"));
    CHECK_FALSE(has_code(s.config_diagnostics, "context_too_short"));
    CHECK_FALSE(has_code(s.config_diagnostics, "dropout_eval"));
    REQUIRE(s.memory);
    CHECK(s.memory->bytes == estimate_bytes(s.description->config, o.input_shape, false));
    CHECK(s.memory->bytes < estimate_bytes(s.description->config, o.input_shape, true));
  }

  TEST_CASE("only the dropout slot wrong: described with dropout 0, not valid, no estimate; other errors: no description") {
    const Setup bad_dropout = make_setup("MultiHeadAttention", mha(768, 768, 1024, 1.5, 12));
    CHECK_FALSE(bad_dropout.valid);
    REQUIRE(bad_dropout.description);
    CHECK(bad_dropout.description->parameter_count == 2360064);
    CHECK_FALSE(bad_dropout.memory);
    const Setup bad_heads = make_setup("MultiHeadAttention", mha(3, 3, 6, 0.0, 2));
    CHECK_FALSE(bad_heads.valid);
    CHECK(has_code(bad_heads.diagnostics, "heads_divisibility"));
    CHECK_FALSE(bad_heads.description);
    CHECK_FALSE(bad_heads.memory);
    const Setup unknown = make_setup("MultiheadAttention", {});
    CHECK(has_code(unknown.diagnostics, "unknown_class"));
  }

  TEST_CASE("run_module is manual_seed, the constructor and a traced forward: the same bits as doing them one by one") {
    for (const bool training : {false, true}) {
      const SlotMap config = mha(3, 2, 6, 0.5, 2);
      const Tensor x = stacked_book(2);
      RunOptions ro;
      ro.seed = 789;
      ro.training = training;
      const RunResult r = run_module("MultiHeadAttention", config, x, ro);
      TorchGenerator g(789);
      const AttentionModule m(validated_config("MultiHeadAttention", config), g);
      std::vector<Stage> trace;
      ForwardOptions fo;
      fo.training = training;
      fo.generator = &g;
      fo.trace = &trace;
      const Tensor y = m.forward(x, fo);
      CHECK(r.output.shape == y.shape);
      CHECK(std::memcmp(r.output.data.data(), y.data.data(), y.data.size() * sizeof(float)) == 0);
      REQUIRE(r.trace.size() == trace.size());
      for (size_t i = 0; i < trace.size(); ++i) {
        CHECK(r.trace[i].id == trace[i].id);
        CHECK(r.trace[i].tensor.data == trace[i].tensor.data);
      }
      CHECK(r.config.python_call() == "MultiHeadAttention(3, 2, 6, 0.5, 2)");
    }
  }

  TEST_CASE("run_module throws the config's first error, then the input's") {
    CHECK_THROWS_AS(run_module("MultiHeadAttention", mha(3, 3, 6, 0.0, 2), stacked_book(1)), AttentionError);
    CHECK(refused([&] { run_module("MultiHeadAttention", mha(3, 2, 4, 0.0, 2), stacked_book(1)); }).code == "context_too_short");
    RunOptions untraced;
    untraced.trace = false;
    CHECK(run_module("MultiHeadAttention", mha(3, 2, 6, 0.0, 2), stacked_book(1), untraced).trace.empty());
  }
}
