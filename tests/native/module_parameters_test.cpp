// A module's parameters beyond its forward: a config filled in by hand is refused as validated_config
// refuses it, a moved-from module refuses every call, copies are deep, and a whole state_dict loads
// with its mask buffers checked.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"
#include "refusal.hpp"

using namespace attention_lab;

TEST_SUITE("module parameters") {
  TEST_CASE("a ModuleConfig filled in by hand is refused with validated_config's code and slot, before anything is built") {
    using Refusal = std::pair<std::string, std::string>;
    const auto by_hand = [](const char* name, int64_t d_out, int64_t num_heads, int64_t num_kv_groups = 0) {
      ModuleConfig c = ModuleConfig::of(name);
      c.d_in = 8;
      c.d_out = d_out;
      c.context_length = 8;
      c.num_heads = num_heads;
      c.num_kv_groups = num_kv_groups;
      return c;
    };
    const std::vector<std::pair<ModuleConfig, Refusal>> cases = {
        {by_hand("MultiHeadAttention", 8, 0), {"non_positive", "num_heads"}},    // a division by zero heads
        {by_hand("MultiHeadAttention", 8, 3), {"heads_divisibility", "d_out"}},  // head_dim 8 / 3
        {by_hand("MultiHeadAttention", 0, 2), {"non_positive", "d_out"}},        // empty weights
        {by_hand("GroupedQueryAttention", 8, 4, 3), {"kv_groups_divisibility", "num_heads"}},
        {by_hand("MultiHeadAttentionWrapper", 8, -2), {"non_positive", "num_heads"}},
    };
    for (const auto& [c, expected] : cases) {
      CAPTURE(c.python_call());
      CHECK(refusal([&] { AttentionModule m(c); }) == expected);
      TorchGenerator g(123);
      CHECK(refusal([&] { AttentionModule m(c, g); }) == expected);
      // the same refusal as the slots themselves get
      CHECK(refusal([&] { validated_config(c.class_name(), c.slots()); }) == expected);
    }
    ModuleConfig window = by_hand("MultiHeadAttentionWithSWA", 8, 2);
    window.sliding_window_size = -1;
    CHECK(refusal([&] { AttentionModule m(window); }) == Refusal{"non_positive", "sliding_window_size"});
    ModuleConfig nameless = by_hand("MultiHeadAttention", 8, 2);
    nameless.spec = nullptr;
    CHECK(refusal([&] { AttentionModule m(nameless); }) == Refusal{"unknown_class", "class"});
    // a valid one filled in by hand builds, and as its validated twin does
    const ModuleConfig fine = by_hand("MultiHeadAttention", 8, 2);
    TorchGenerator g1(7), g2(7);
    CHECK(AttentionModule(fine, g1).parameters()[0].tensor.data == AttentionModule(validated_config("MultiHeadAttention", fine.slots()), g2).parameters()[0].tensor.data);
  }

  TEST_CASE("a moved-from module refuses every call with disposed; assigned a module, it works again") {
    const ModuleConfig c = validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(3)},
                                                                   {"d_out", SlotValue::integer(2)},
                                                                   {"context_length", SlotValue::integer(6)},
                                                                   {"dropout", SlotValue::floating(0.0)},
                                                                   {"num_heads", SlotValue::integer(2)}});
    TorchGenerator g(123);
    AttentionModule a(c, g);
    const AttentionModule b(std::move(a));
    const std::pair<std::string, std::string> disposed{"disposed", "module"};
    const Tensor x({1, 6, 3}, book_tokens().data);
    CHECK(refusal([&] { a.forward(x); }) == disposed);
    CHECK(refusal([&] { a.parameters(); }) == disposed);
    CHECK(refusal([&] { a.parameter("W_query.weight"); }) == disposed);
    CHECK(refusal([&] { a.set_parameter("out_proj.bias", Tensor({2})); }) == disposed);
    CHECK(refusal([&] { a.config(); }) == disposed);
    CHECK(refusal([&] { a.plan(); }) == disposed);
    CHECK(refusal([&] { a.caches_keys(); }) == disposed);
    CHECK(refusal([&] { a.project_heads(x, Tensor({1, 6, 2})); }) == disposed);
    CHECK(refusal([&] { AttentionModule copy(a); }) == disposed);
    CHECK(b.forward(x).shape == Shape{1, 6, 2});
    a = b;
    CHECK(a.forward(x).data == b.forward(x).data);
  }

  TEST_CASE("a copy of a module is deep: a parameter set on the copy leaves the original as it was") {
    TorchGenerator gen(123);
    const AttentionModule original(validated_config("SelfAttention_v2", {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}}), gen);
    const Tensor before = *original.parameter("W_query.weight");
    AttentionModule copy = original;
    copy.set_parameter("W_query.weight", Tensor({2, 3}));
    CHECK(copy.parameter("W_query.weight")->data == std::vector<float>(6, 0.0f));
    CHECK(original.parameter("W_query.weight")->data == before.data);
    AttentionModule assigned(original.config());
    assigned = copy;
    CHECK(assigned.parameter("W_query.weight")->data == std::vector<float>(6, 0.0f));
    AttentionModule moved = std::move(assigned);
    CHECK(moved.config().python_call() == "SelfAttention_v2(3, 2)");
    CHECK(moved.forward(book_tokens()).shape == Shape{6, 2});
  }

  TEST_CASE("a whole state_dict with its causal mask buffers loads, but another mask, or a non-finite parameter, is refused by name") {
    const auto triu = [](int64_t n) {
      Tensor t({n, n});
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) t.data[static_cast<size_t>(i * n + j)] = j > i ? 1.0f : 0.0f;
      return t;
    };
    TorchGenerator gen(123);
    const ModuleConfig wrapper = validated_config("MultiHeadAttentionWrapper", {{"d_in", SlotValue::integer(3)},
                                                                                {"d_out", SlotValue::integer(2)},
                                                                                {"context_length", SlotValue::integer(6)},
                                                                                {"dropout", SlotValue::floating(0.0)},
                                                                                {"num_heads", SlotValue::integer(2)}});
    const AttentionModule source(wrapper, gen);
    std::vector<NamedTensor> state = source.parameters();
    state.push_back({"heads.0.mask", triu(6)});
    state.push_back({"heads.1.mask", triu(6)});
    std::vector<std::string> notes;
    const AttentionModule loaded = module_from_state_dict(wrapper, state, &notes);
    CHECK(notes.size() == 2);
    for (const auto& p : source.parameters()) CHECK(loaded.parameter(p.name)->data == p.tensor.data);
    // a mask with one entry changed
    std::vector<NamedTensor> wrong = state;
    wrong.back().tensor.data[1 * 6 + 3] = 0.0f;
    const std::string wrong_mask = refusal_text([&] { module_from_state_dict(wrapper, wrong); });
    CHECK(wrong_mask.rfind("mask_buffer [heads.1.mask] ", 0) == 0);
    CHECK(wrong_mask.find("heads.1.mask[1, 3] is 0") != std::string::npos);
    // a parameter holding NaN: named with its first index, and the module is left as it was
    AttentionModule target(source);
    Tensor w = *source.parameter("heads.0.W_query.weight");
    w.data[4] = std::nanf("");
    const std::string nan = refusal_text([&] { target.set_parameter("heads.0.W_query.weight", w); });
    CHECK(nan.rfind("non_finite_parameter [heads.0.W_query.weight] ", 0) == 0);
    CHECK(nan.find("heads.0.W_query.weight[1, 1] is nan") != std::string::npos);
    CHECK(target.parameter("heads.0.W_query.weight")->data == source.parameter("heads.0.W_query.weight")->data);
  }
}
