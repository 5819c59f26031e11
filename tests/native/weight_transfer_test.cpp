#include <doctest/doctest.h>

#include "attention_lab/validator.hpp"
#include "attention_lab/weight_transfer.hpp"

#include <map>

#include "fixtures.hpp"
#include "refusal.hpp"

using namespace attention_lab;

namespace {
AttentionModule make(const char* cls, int64_t d_in, int64_t d_out, uint64_t seed) {
  TorchGenerator g(seed);
  return AttentionModule(validated_config(cls, {{"d_in", SlotValue::integer(static_cast<double>(d_in))}, {"d_out", SlotValue::integer(static_cast<double>(d_out))}}), g);
}
CopyPlan all(bool transpose) { return {{"W_query", {true, transpose}}, {"W_key", {true, transpose}}, {"W_value", {true, transpose}}}; }
/// Exercise 3.1 with W_key's transpose skipped: v2 -> v1 with d_in == d_out == 3, so the copy succeeds.
CopyReport copy_skipping_key_transpose() {
  const AttentionModule v2 = make("SelfAttention_v2", 3, 3, 789);
  AttentionModule v1 = make("SelfAttention_v1", 3, 3, 123);
  CopyPlan plan = all(true);
  plan["W_key"].transpose = false;
  return copy_weights(v2, v1, plan);
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
    const CopyReport r = copy_skipping_key_transpose();
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
    AttentionModule causal(
        validated_config("CausalAttention",
                         {{"d_in", SlotValue::integer(4)}, {"d_out", SlotValue::integer(2)}, {"context_length", SlotValue::integer(6)}, {"dropout", SlotValue::floating(0.0)}}),
        g);
    CHECK_THROWS_AS(copy_weights(v1, causal, all(true)), AttentionError);
    CHECK_THROWS_AS(copy_weights(v1, v2, {{"W_quer", {true, true}}}), AttentionError);
  }
}

namespace {
SlotMap multi(int64_t d_in, int64_t d_out, int64_t heads, bool bias = false) {
  return {{"d_in", SlotValue::integer(static_cast<double>(d_in))},
          {"d_out", SlotValue::integer(static_cast<double>(d_out))},
          {"context_length", SlotValue::integer(6)},
          {"dropout", SlotValue::floating(0.0)},
          {"num_heads", SlotValue::integer(static_cast<double>(heads))},
          {"qkv_bias", SlotValue::boolean_value(bias)}};
}
Tensor two_book_copies() {
  const Tensor x = book_tokens();
  Tensor out({2, 6, 3});
  std::copy(x.data.begin(), x.data.end(), out.data.begin());
  std::copy(x.data.begin(), x.data.end(), out.data.begin() + 18);
  return out;
}
}  // namespace

TEST_SUITE("weight_transfer") {
  TEST_CASE("copy reports compare every stage and give the PyTorch lines") {
    const CopyReport r = copy_skipping_key_transpose();
    CHECK(r.code ==
          "sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight.T)\nsa_v1.W_key = torch.nn.Parameter(sa_v2.W_key.weight)\n"
          "sa_v1.W_value = torch.nn.Parameter(sa_v2.W_value.weight.T)\n");
    std::map<std::string, double> by_id;
    for (const auto& s : r.stages) by_id[s.id] = s.max_abs_diff;
    CHECK(by_id.at("queries") == 0.0);  // W_query went over right
    CHECK(by_id.at("values") == 0.0);
    CHECK(by_id.at("keys") > 1e-3);  // the missing transpose shows up first here
    CHECK(by_id.at("attn_scores") > 1e-3);
  }

  TEST_CASE("wrapper -> equivalent fused MHA with identity out_proj: every stage agrees (exercise 3.2 sizes)") {
    TorchGenerator g(123);
    const AttentionModule wrapper(validated_config("MultiHeadAttentionWrapper", multi(3, 1, 2)), g);
    const AttentionModule fused = fused_from_wrapper(wrapper);
    CHECK(fused.config().python_call() == "MultiHeadAttention(3, 2, 6, 0.0, 2)");
    const auto stages = compare_stages(wrapper, fused, two_book_copies());
    std::vector<std::string> ids;
    for (const auto& s : stages) {
      ids.push_back(s.id);
      CAPTURE(s.id);
      CHECK(s.max_abs_diff <= 1e-6);
    }
    CHECK(ids == std::vector<std::string>{"input", "queries", "keys", "values", "attn_scores", "mask", "attn_scores_masked", "attn_weights", "attn_weights_dropout", "context_vec",
                                          "heads_concat", "output"});
  }

  TEST_CASE("with biases and three heads too, and back again: fused -> wrapper") {
    TorchGenerator g(5);
    const AttentionModule wrapper(validated_config("MultiHeadAttentionWrapper", multi(3, 2, 3, true)), g);
    const AttentionModule fused = fused_from_wrapper(wrapper);
    for (const auto& s : compare_stages(wrapper, fused, two_book_copies())) CHECK(s.max_abs_diff <= 1e-6);
    const AttentionModule back = wrapper_from_fused(fused);
    for (size_t i = 0; i < back.parameters().size(); ++i) CHECK(back.parameters()[i].tensor.data == wrapper.parameters()[i].tensor.data);
  }

  TEST_CASE("a head-merge-order mistake (interleaved rows) shows up as a difference") {
    TorchGenerator g(123);
    const AttentionModule wrapper(validated_config("MultiHeadAttentionWrapper", multi(3, 2, 2)), g);
    const AttentionModule wrong = fused_from_wrapper(wrapper, HeadLayout::Interleaved);
    double output_diff = 0, query_diff = 0;
    for (const auto& s : compare_stages(wrapper, wrong, two_book_copies())) {
      if (s.id == "output") output_diff = s.max_abs_diff;
      if (s.id == "queries") query_diff = s.max_abs_diff;
    }
    CHECK(query_diff > 1e-3);
    CHECK(output_diff > 1e-3);
  }

  TEST_CASE("a seeded MHA's own out_proj makes the sliced wrapper differ only after the merge") {
    TorchGenerator g(123);
    const AttentionModule mha(validated_config("MultiHeadAttention", multi(3, 4, 2)), g);
    const AttentionModule wrapper = wrapper_from_fused(mha);
    CHECK(wrapper.config().python_call() == "MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)");
    std::map<std::string, double> by_id;
    for (const auto& s : compare_stages(mha, wrapper, two_book_copies())) by_id[s.id] = s.max_abs_diff;
    CHECK(by_id.at("context_vec") <= 1e-6);
    CHECK(by_id.at("heads_concat") <= 1e-6);
    CHECK(by_id.at("output") > 1e-3);
    CHECK(conversion_code(mha).find("mha.W_query.weight[rows]") != std::string::npos);
    CHECK(conversion_code(wrapper).find("torch.cat([h.W_query.weight for h in wrapper.heads], dim=0)") != std::string::npos);
  }

  // pitfalls.md B3
  TEST_CASE("equivalent configs: wrapper d_out per head <-> fused d_out total") {
    const ModuleConfig w = validated_config("MultiHeadAttentionWrapper", multi(768, 64, 12));
    CHECK(equivalent_config(w).python_call() == "MultiHeadAttention(768, 768, 6, 0.0, 12)");
    const ModuleConfig m = validated_config("MultiHeadAttention", multi(768, 768, 12));
    CHECK(equivalent_config(m).python_call() == "MultiHeadAttentionWrapper(768, 64, 6, 0.0, 12)");
    CHECK_THROWS_AS(equivalent_config(validated_config("SelfAttention_v1", {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}})), AttentionError);
  }

  TEST_CASE("converting a wrapper whose fused equivalent is over the memory budget is refused before allocating") {
    // wrapper(1, 4096, 8, 0.0, 8): 98,304 parameters; its fused equivalent has d_out = 32768 and an
    // out_proj of 32768^2 floats (4.3 GB)
    const SlotMap slots = {{"d_in", SlotValue::integer(1)},
                           {"d_out", SlotValue::integer(4096)},
                           {"context_length", SlotValue::integer(8)},
                           {"dropout", SlotValue::floating(0.0)},
                           {"num_heads", SlotValue::integer(8)}};
    const AttentionModule wrapper(validated_config("MultiHeadAttentionWrapper", slots));
    CHECK(refused([&] { fused_from_wrapper(wrapper, HeadLayout::Stacked); }).code == "too_large");
  }

  TEST_CASE("the book's map from MultiHeadAttention into each chapter 3 bonus class: every target parameter with its sources and action, agreeing as in PyTorch") {
    const auto& copies = fixtures::all().at("copies");
    REQUIRE(copies.size() == 16);  // seven bonus classes, then GatedMultiHeadAttention, each without and with qkv_bias
    for (const auto& c : copies) {
      const std::string target = c.at("target");
      const bool bias = c.at("qkv_bias");
      CAPTURE(target);
      CAPTURE(bias);
      const ModuleConfig tc = validated_config(target, fixtures::config(c.at("target_config")));
      const int64_t d = tc.d_in;
      TorchGenerator g(123), h(456);
      const AttentionModule mha(validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(static_cast<double>(d))},
                                                                        {"d_out", SlotValue::integer(static_cast<double>(d))},
                                                                        {"context_length", SlotValue::integer(6)},
                                                                        {"dropout", SlotValue::floating(0.0)},
                                                                        {"num_heads", SlotValue::integer(2)},
                                                                        {"qkv_bias", SlotValue::boolean_value(bias)}}),
                                g);
      AttentionModule to(tc, h);
      const CopyReport r = copy_weights(mha, to, {});
      const auto& map = c.at("map");
      REQUIRE(r.matrices.size() == map.size());
      for (size_t i = 0; i < map.size(); ++i) {
        CHECK(r.matrices[i].name == map[i].at("target_param").get<std::string>());
        const std::string want = map[i].at("action");
        CHECK(r.matrices[i].action == want);
        if (want != "identity" && want != "kept") CHECK(r.matrices[i].sources == map[i].at("source").get<std::vector<std::string>>());
      }
      CHECK(r.agree == c.at("agree").get<bool>());
      REQUIRE(r.max_abs_diff);
      if (c.at("agree").get<bool>()) CHECK(*r.max_abs_diff <= 1e-6);
      if (c.at("nan").get<bool>()) CHECK(std::isinf(*r.max_abs_diff));
      if (!r.agree) CHECK(r.notes.back().rfind("The first stage that disagrees: ", 0) == 0);
    }
  }

  TEST_CASE("a plan that skips MHAEinsum's key transpose copies it as x @ W.T's matrix: the keys are the first stage to disagree") {
    TorchGenerator g(123), h(456);
    const SlotMap slots = {{"d_in", SlotValue::integer(4)},
                           {"d_out", SlotValue::integer(4)},
                           {"context_length", SlotValue::integer(6)},
                           {"dropout", SlotValue::floating(0.0)},
                           {"num_heads", SlotValue::integer(2)}};
    const AttentionModule mha(validated_config("MultiHeadAttention", slots), g);
    AttentionModule einsum(validated_config("MHAEinsum", slots), h);
    const CopyReport r = copy_weights(mha, einsum, {{"W_key", {true, false}}});
    CHECK(r.matrices[1].name == "W_key");
    CHECK(r.matrices[1].action == "untransposed");
    CHECK_FALSE(r.agree);
    std::string first;
    for (const auto& s : r.stages)
      if (first.empty() && s.max_abs_diff > 1e-6) first = s.id;
    CHECK(first == "keys");
    CHECK(r.code.find("mha_einsum.W_key = torch.nn.Parameter(mha.W_key.weight)\n") != std::string::npos);
    CHECK(r.code.find("mha_einsum.W_query = torch.nn.Parameter(mha.W_query.weight.T)\n") != std::string::npos);
    // skipping a whole block keeps the target's own values
    AttentionModule again(validated_config("MHAEinsum", slots), h);
    const CopyReport skip = copy_weights(mha, again, {{"out_proj.weight", {false, false}}});
    CHECK(skip.matrices[3].action == "not_copied");
    for (const auto& s : skip.stages)
      if (s.id == "heads_concat")
        CHECK(s.max_abs_diff <= 1e-6);
      else if (s.id == "out_proj")
        CHECK(s.max_abs_diff > 1e-6);
    CHECK(refused([&] { copy_weights(mha, again, {{"W_nope", {true, true}}}); }).code == "copy_plan");
  }

  TEST_CASE("MultiHeadAttention into GatedMultiHeadAttention: W_gate has no source, so the report and the code say it is kept, and out_proj is where the two part") {
    const SlotMap slots = {{"d_in", SlotValue::integer(4)},       {"d_out", SlotValue::integer(4)},     {"context_length", SlotValue::integer(6)},
                           {"dropout", SlotValue::floating(0.0)}, {"num_heads", SlotValue::integer(2)}, {"qkv_bias", SlotValue::boolean_value(true)}};
    TorchGenerator g(123), h(456);
    const AttentionModule mha(validated_config("MultiHeadAttention", slots), g);
    AttentionModule gated(validated_config("GatedMultiHeadAttention", slots), h);
    const Tensor w_gate = *gated.parameter("W_gate.weight");
    const CopyReport r = copy_weights(mha, gated, {});
    REQUIRE(r.matrices.size() == 10);
    CHECK(r.matrices[2].name == "W_gate.weight");
    CHECK(r.matrices[2].action == "kept");
    CHECK(r.matrices[2].sources.empty());
    CHECK(r.matrices[2].hint == "W_gate.weight has no counterpart in MultiHeadAttention: it keeps its own values.");
    CHECK(r.matrices[3].name == "W_gate.bias");
    CHECK(r.matrices[3].action == "kept");
    CHECK(gated.parameter("W_gate.weight")->data == w_gate.data);  // untouched
    CHECK(r.code.find("# gated_mha.W_gate.weight has no counterpart: kept as built\n") != std::string::npos);
    CHECK(r.code.find("gated_mha.W_key.weight = torch.nn.Parameter(mha.W_key.weight)\n") != std::string::npos);
    CHECK_FALSE(r.agree);
    CHECK(r.notes.front().find("W_gate has no counterpart and keeps its own values") != std::string::npos);
    // the masked scores differ only where both are masked (-inf against torch.finfo(float32).min), with the
    // same weights; the copied q, k, v give the same attention, and W_gate, kept, sets out_proj apart
    CHECK(r.notes.back() == "The first stage that disagrees: attn_scores_masked (max abs difference inf).");
    std::vector<std::string> apart;
    for (const StageDiff& d : r.stages)
      if (!(d.max_abs_diff <= 1e-6)) apart.push_back(d.id);
    CHECK(apart == std::vector<std::string>{"attn_scores_masked", "out_proj", "output"});
  }
}
