#include <doctest/doctest.h>

#include "attention_lab/validator.hpp"
#include "attention_lab/weight_transfer.hpp"

using namespace attention_lab;

namespace {
AttentionModule make(const char* cls, int64_t d_in, int64_t d_out, uint64_t seed) {
  TorchGenerator g(seed);
  return AttentionModule(validated_config(cls, {{"d_in", SlotValue::integer(static_cast<double>(d_in))}, {"d_out", SlotValue::integer(static_cast<double>(d_out))}}), g);
}
CopyPlan all(bool transpose) {
  return {{"W_query", {true, transpose}}, {"W_key", {true, transpose}}, {"W_value", {true, transpose}}};
}
}  // namespace

TEST_SUITE("weight_transfer") {
  TEST_CASE("exercise 3.1: v2 -> v1 with all three transposes makes the outputs agree") {
    const AttentionModule v2 = make("SelfAttention_v2", 3, 2, 789);
    AttentionModule v1 = make("SelfAttention_v1", 3, 2, 123);
    const CopyReport r = copy_weights(v2, v1, all(true));
    REQUIRE(r.matrices.size() == 3);
    for (const auto& m : r.matrices) {
      CHECK(m.action == "transposed");
      CHECK(m.from_shape == Shape{2, 3});
      CHECK(m.to_shape == Shape{3, 2});
    }
    REQUIRE(r.max_abs_diff.has_value());
    CHECK(*r.max_abs_diff <= 1e-6);
    CHECK(r.agree);
    CHECK(r.tokens.shape == Shape{6, 3});  // the book's tokens, since d_in is 3
  }

  TEST_CASE("d_in == d_out with the key transpose skipped: the copy succeeds but the outputs differ") {
    const AttentionModule v2 = make("SelfAttention_v2", 3, 3, 789);
    AttentionModule v1 = make("SelfAttention_v1", 3, 3, 123);
    CopyPlan plan = all(true);
    plan["W_key"].transpose = false;
    const CopyReport r = copy_weights(v2, v1, plan);
    CHECK(r.matrices[1].name == "W_key");
    CHECK(r.matrices[1].action == "copied");
    CHECK(r.matrices[1].hint.find("lands transposed") != std::string::npos);
    REQUIRE(r.max_abs_diff.has_value());
    CHECK(*r.max_abs_diff > 1e-3);
    CHECK_FALSE(r.agree);
    REQUIRE_FALSE(r.notes.empty());
    CHECK(r.notes.back().find("W_key") != std::string::npos);
  }

  TEST_CASE("without the transpose a non-square matrix is a shape mismatch that looks transposed") {
    const AttentionModule v2 = make("SelfAttention_v2", 3, 2, 789);
    AttentionModule v1 = make("SelfAttention_v1", 3, 2, 123);
    const CopyReport r = copy_weights(v2, v1, {{"W_query", {true, false}}});
    CHECK(r.matrices[0].action == "shape_mismatch");
    CHECK(r.matrices[0].hint.find("looks transposed") != std::string::npos);
    CHECK(r.matrices[1].action == "not_copied");
    CHECK(r.matrices[2].action == "not_copied");
    CHECK_FALSE(r.agree);
  }

  TEST_CASE("v1 -> v2 works the same way, and other classes are refused") {
    const AttentionModule v1 = make("SelfAttention_v1", 4, 2, 1);
    AttentionModule v2 = make("SelfAttention_v2", 4, 2, 2);
    const CopyReport r = copy_weights(v1, v2, all(true));
    CHECK(r.agree);
    CHECK(r.tokens.shape == Shape{6, 4});  // seeded tokens when d_in != 3
    TorchGenerator g(1);
    AttentionModule causal(validated_config("CausalAttention", {{"d_in", SlotValue::integer(4)}, {"d_out", SlotValue::integer(2)}, {"context_length", SlotValue::integer(6)}, {"dropout", SlotValue::floating(0.0)}}), g);
    CHECK_THROWS_AS(copy_weights(v1, causal, all(true)), AttentionError);
    CHECK_THROWS_AS(copy_weights(v1, v2, {{"W_quer", {true, true}}}), AttentionError);
  }
}
