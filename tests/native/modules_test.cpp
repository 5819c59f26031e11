#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"
#include "fixtures.hpp"
#include "random_values.hpp"
#include "refusal.hpp"

using namespace attention_lab;

namespace {

ModuleConfig config_of(const nlohmann::json& c) { return validated_config(c.at("class").get<std::string>(), fixtures::config(c.at("config"))); }

/// Max |a - b| where -inf must meet -inf and NaN must meet NaN exactly (PyTorch's NaN rows, as in the
/// inverted-mask class); a NaN on one side only counts as a mismatch (returns inf).
double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape) return INFINITY;
  double m = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    if (std::isnan(a.data[i]) || std::isnan(b.data[i])) {
      if (std::isnan(a.data[i]) != std::isnan(b.data[i])) return INFINITY;
      continue;
    }
    if (std::isinf(a.data[i]) || std::isinf(b.data[i])) {
      if (a.data[i] != b.data[i]) return INFINITY;
      continue;
    }
    const double d = std::fabs(static_cast<double>(a.data[i]) - b.data[i]);
    if (!(d == d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}

Tensor stack_two(const Tensor& x) {
  Tensor out({2, x.shape[0], x.shape[1]});
  std::copy(x.data.begin(), x.data.end(), out.data.begin());
  std::copy(x.data.begin(), x.data.end(), out.data.begin() + static_cast<std::ptrdiff_t>(x.data.size()));
  return out;
}

}  // namespace

TEST_SUITE("modules") {
  TEST_CASE("every fixture: initial parameters bit-identical to PyTorch, every stage within 1e-6") {
    const auto& cases = fixtures::all().at("cases");
    CHECK(cases.size() >= 35);
    std::set<std::string> classes;
    for (const auto& c : cases) classes.insert(c.at("class").get<std::string>());
    CHECK(classes.size() == class_specs().size());  // every class has fixtures
    for (const auto& c : cases) {
      const std::string name = c.at("name");
      CAPTURE(name);
      TorchGenerator gen(c.at("seed").get<uint64_t>());
      const AttentionModule m(config_of(c), gen);
      const auto& expected_params = c.at("parameters");
      REQUIRE(m.parameters().size() == expected_params.size());
      for (size_t i = 0; i < expected_params.size(); ++i) {
        const Tensor expected = fixtures::tensor(expected_params[i]);
        CHECK(m.parameters()[i].name == expected_params[i].at("name").get<std::string>());
        CHECK(m.parameters()[i].tensor.shape == expected.shape);
        // normal_ on 16 or more values (nn.MultiheadAttention's bias_k/bias_v when d_out >= 16) runs
        // PyTorch's vectorised Box-Muller, whose log/sin/cos differ by CPU kernel (AVX2 vs default:
        // up to 2.2e-7 measured): those values within 3e-7, everything else bit for bit.
        const bool platform_normal = expected.shape.size() == 3 && expected.numel() >= 16;
        if (platform_normal)
          CHECK(max_abs_diff(m.parameters()[i].tensor, expected) <= 3e-7);
        else
          CHECK(std::memcmp(m.parameters()[i].tensor.data.data(), expected.data.data(), expected.data.size() * sizeof(float)) == 0);
      }
      std::vector<Stage> trace;
      ForwardOptions opts;
      opts.training = c.at("training").get<bool>();
      opts.generator = &gen;
      opts.trace = &trace;
      const Tensor out = m.forward(fixtures::tensor(c.at("input")), opts);
      const auto& stages = c.at("stages");
      REQUIRE(trace.size() == stages.size());
      for (size_t i = 0; i < stages.size(); ++i) {
        CAPTURE(trace[i].id);
        CHECK(trace[i].id == stages[i].at("id").get<std::string>());
        CHECK(trace[i].axes.size() == trace[i].tensor.shape.size());
        CHECK(max_abs_diff(trace[i].tensor, fixtures::tensor(stages[i])) <= 1e-6);  // float32, book sizes: 1e-6 absolute
      }
      CHECK(max_abs_diff(out, fixtures::tensor(c.at("output"))) <= 1e-6);
      // The stream where the forward leaves it (dropout draws in PyTorch's order and number): the
      // next torch.rand(4) is bit-identical.
      const Tensor after = gen.rand({4});
      CHECK(std::memcmp(after.data.data(), fixtures::tensor(c.at("rand_after")).data.data(), 4 * sizeof(float)) == 0);
    }
  }

  TEST_CASE("torch.manual_seed(123), then SelfAttention_v1(3, 2) on the book's six tokens gives the book's numbers") {
    TorchGenerator gen(123);
    const AttentionModule m(validated_config("SelfAttention_v1", {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}}), gen);
    const Tensor out = m.forward(book_tokens());
    const float expected[6][2] = {{0.2996f, 0.8053f}, {0.3061f, 0.8210f}, {0.3058f, 0.8203f}, {0.2948f, 0.7939f}, {0.2927f, 0.7891f}, {0.2990f, 0.8040f}};
    REQUIRE(out.shape == Shape{6, 2});
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 2; ++j) CHECK(std::round(out.data[static_cast<size_t>(i * 2 + j)] * 1e4) / 1e4 == doctest::Approx(expected[i][j]));  // to 4 decimals, as printed
  }

  TEST_CASE("torch.manual_seed(123), then MultiHeadAttention(3, 2, 6, 0.0, 2) on two stacked copies of the book's tokens gives the book's numbers") {
    TorchGenerator gen(123);
    const AttentionModule m(validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(3)},
                                                                    {"d_out", SlotValue::integer(2)},
                                                                    {"context_length", SlotValue::integer(6)},
                                                                    {"dropout", SlotValue::floating(0.0)},
                                                                    {"num_heads", SlotValue::integer(2)}}),
                            gen);
    ForwardOptions opts;
    opts.generator = &gen;
    const Tensor out = m.forward(stack_two(book_tokens()), opts);
    REQUIRE(out.shape == Shape{2, 6, 2});
    CHECK(std::round(out.data[0] * 1e4) / 1e4 == doctest::Approx(0.3190).epsilon(1e-9));
    CHECK(std::round(out.data[1] * 1e4) / 1e4 == doctest::Approx(0.4858).epsilon(1e-9));
    CHECK(std::round(out.data[22] * 1e4) / 1e4 == doctest::Approx(0.2575).epsilon(1e-9));
    CHECK(std::round(out.data[23] * 1e4) / 1e4 == doctest::Approx(0.4028).epsilon(1e-9));
  }

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

  TEST_CASE("hand-worked 2-token example: softmax of [0, 1] weights the second value by e/(1+e)") {
    // SelfAttention_v1(1, 1) with every W = [[1]] on x = [[0], [1]]: queries = keys = values = x.
    // scores = q k^T = [[0, 0], [0, 1]]; d_k = 1 so no scaling.
    // row 0: softmax([0, 0]) = [0.5, 0.5]                 -> context 0.5 * 0 + 0.5 * 1 = 0.5
    // row 1: softmax([0, 1]) = [1/(1+e), e/(1+e)] = [0.268941, 0.731059] -> context 0.731059
    AttentionModule m(validated_config("SelfAttention_v1", {{"d_in", SlotValue::integer(1)}, {"d_out", SlotValue::integer(1)}}));
    for (const char* w : {"W_query", "W_key", "W_value"}) m.set_parameter(w, Tensor({1, 1}, {1.0f}));
    std::vector<Stage> trace;
    ForwardOptions opts;
    opts.trace = &trace;
    const Tensor out = m.forward(Tensor({2, 1}, {0.0f, 1.0f}), opts);
    CHECK(out.data[0] == doctest::Approx(0.5).epsilon(1e-7));
    CHECK(out.data[1] == doctest::Approx(0.7310586).epsilon(1e-6));
    const auto& weights = trace[5];
    CHECK(weights.id == "attn_weights");
    CHECK(weights.tensor.data[2] == doctest::Approx(0.2689414).epsilon(1e-6));
  }

  TEST_CASE("tracing never changes the output bits") {
    for (const auto& c : fixtures::all().at("cases")) {
      CAPTURE(c.at("name").get<std::string>());
      const ModuleConfig config = config_of(c);
      TorchGenerator g1(c.at("seed").get<uint64_t>()), g2(c.at("seed").get<uint64_t>());
      const AttentionModule m1(config, g1), m2(config, g2);
      std::vector<Stage> trace;
      ForwardOptions with, without;
      with.training = without.training = c.at("training").get<bool>();
      with.generator = &g1;
      without.generator = &g2;
      with.trace = &trace;
      const Tensor x = fixtures::tensor(c.at("input"));
      const Tensor a = m1.forward(x, with), b = m2.forward(x, without);
      CHECK(std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0);
    }
  }

  TEST_CASE("masked weights are exactly zero and unmasked rows sum to 1") {
    const auto& c = fixtures::named_case("book_causal_seed123_eval");
    TorchGenerator gen(123);
    const AttentionModule m(config_of(c), gen);
    std::vector<Stage> trace;
    ForwardOptions opts;
    opts.training = false;
    opts.trace = &trace;
    m.forward(fixtures::tensor(c.at("input")), opts);
    const Stage* w = nullptr;
    for (const auto& s : trace)
      if (s.id == "attn_weights") w = &s;
    REQUIRE(w != nullptr);
    for (int64_t bi = 0; bi < 2; ++bi)
      for (int64_t i = 0; i < 6; ++i) {
        double sum = 0;
        for (int64_t j = 0; j < 6; ++j) {
          const float v = w->tensor.data[static_cast<size_t>((bi * 6 + i) * 6 + j)];
          if (j > i) CHECK(v == 0.0f);
          sum += v;
        }
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
      }
  }

  // pitfalls.md B2
  TEST_CASE("the wrapper's width is num_heads x d_out, MHA's is d_out") {
    const SlotMap base = {{"d_in", SlotValue::integer(3)},
                          {"d_out", SlotValue::integer(2)},
                          {"context_length", SlotValue::integer(6)},
                          {"dropout", SlotValue::floating(0.0)},
                          {"num_heads", SlotValue::integer(2)}};
    TorchGenerator g(123);
    const AttentionModule wrapper(validated_config("MultiHeadAttentionWrapper", base), g);
    const AttentionModule mha(validated_config("MultiHeadAttention", base), g);
    const Tensor x = stack_two(book_tokens());
    CHECK(wrapper.forward(x).shape == Shape{2, 6, 4});
    CHECK(mha.forward(x).shape == Shape{2, 6, 2});
    CHECK(mha.config().head_dim() == 1);
    CHECK(wrapper.config().head_dim() == 2);
  }

  TEST_CASE("output width rules and parameter counts") {
    const ModuleConfig ex32 = validated_config("MultiHeadAttentionWrapper", {{"d_in", SlotValue::integer(3)},
                                                                             {"d_out", SlotValue::integer(1)},
                                                                             {"context_length", SlotValue::integer(6)},
                                                                             {"dropout", SlotValue::floating(0.0)},
                                                                             {"num_heads", SlotValue::integer(2)}});
    CHECK(ex32.output_width() == 2);
    CHECK(ex32.output_width_rule() == "num_heads x d_out = 2 x 1 = 2");
    const ModuleConfig gpt2 = validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(768)},
                                                                      {"d_out", SlotValue::integer(768)},
                                                                      {"context_length", SlotValue::integer(1024)},
                                                                      {"dropout", SlotValue::floating(0.0)},
                                                                      {"num_heads", SlotValue::integer(12)}});
    CHECK(gpt2.head_dim() == 64);
    CHECK(gpt2.output_width() == 768);
    CHECK(parameter_count(gpt2) == 2360064);
    CHECK(gpt2.python_call() == "MultiHeadAttention(768, 768, 1024, 0.0, 12)");
    CHECK(gpt2.output_width_rule() == "d_out = 768, shared by 12 heads of 64");
  }

  // pitfalls.md B4
  TEST_CASE("out_proj maps d_out to d_out even when d_in differs") {
    const ModuleConfig c = validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(3)},
                                                                   {"d_out", SlotValue::integer(2)},
                                                                   {"context_length", SlotValue::integer(6)},
                                                                   {"dropout", SlotValue::floating(0.0)},
                                                                   {"num_heads", SlotValue::integer(2)}});
    const auto specs = parameter_specs(c);
    REQUIRE(specs.size() == 5);
    CHECK(specs[0].name == "W_query.weight");
    CHECK(specs[0].shape == Shape{2, 3});
    CHECK(specs[3].name == "out_proj.weight");
    CHECK(specs[3].shape == Shape{2, 2});
    CHECK(specs[4].name == "out_proj.bias");
    CHECK(specs[4].shape == Shape{2});
    CHECK(parameter_count(c) == 3 * 6 + 4 + 2);
  }

  // pitfalls.md B25
  TEST_CASE("7 tokens into CausalAttention(3, 2, 6, 0.0) is refused with both numbers") {
    TorchGenerator g(123);
    const AttentionModule m(
        validated_config("CausalAttention",
                         {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}, {"context_length", SlotValue::integer(6)}, {"dropout", SlotValue::floating(0.0)}}),
        g);
    const Refused too_long = refused([&] { m.forward(Tensor({1, 7, 3})); });
    CHECK(too_long.code == "context_too_short");
    CHECK(too_long.slot == "context_length");
    CHECK(too_long.message.find("num_tokens 7 > context_length 6") != std::string::npos);
    // 4 tokens use the top-left 4 x 4 block of the mask.
    std::vector<Stage> trace;
    ForwardOptions opts;
    opts.trace = &trace;
    m.forward(Tensor({1, 4, 3}), opts);
    for (const auto& s : trace)
      if (s.id == "mask") CHECK(s.tensor.shape == Shape{4, 4});
  }

  TEST_CASE("bad tensors given to forward are typed errors") {
    TorchGenerator g(1);
    const AttentionModule v1(validated_config("SelfAttention_v1", {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}}), g);
    const auto code_of = [&](const Tensor& x) { return refused([&] { v1.forward(x); }).code; };
    CHECK(code_of(Tensor({1, 6, 3})) == "input_rank");
    CHECK(code_of(Tensor({6, 2})) == "input_width");
    CHECK(code_of(Tensor({0, 3})) == "input_empty");
    Tensor nan_x({2, 3});
    nan_x.data[4] = NAN;
    CHECK(code_of(nan_x) == "non_finite_input");
    AttentionModule copy = v1;
    const Refused misspelt = refused([&] { copy.set_parameter("W_qeury", Tensor({3, 2})); });
    CHECK(misspelt.code == "unknown_parameter");
    CHECK(misspelt.hint.find("Did you mean W_query?") != std::string::npos);
    const Refused transposed = refused([&] { copy.set_parameter("W_query", Tensor({2, 3})); });
    CHECK(transposed.code == "parameter_shape");
    CHECK(transposed.hint.find("transposed") != std::string::npos);
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
}

TEST_SUITE("tokens") {
  TEST_CASE("sentence tokens: a repeated word gets the same seeded row, in first-occurrence order") {
    const Tensor x = sentence_tokens({"the", "cat", "saw", "the", "dog"}, 4, 123);
    const Tensor table = seeded_tokens(4, 4, 123);  // vocab: the, cat, saw, dog
    REQUIRE(x.shape == Shape{5, 4});
    const auto row = [](const Tensor& t, int r) { return std::vector<float>(t.data.begin() + r * 4, t.data.begin() + (r + 1) * 4); };
    CHECK(row(x, 0) == row(table, 0));
    CHECK(row(x, 3) == row(table, 0));
    CHECK(row(x, 4) == row(table, 3));
    CHECK(row(x, 1) != row(x, 2));
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

  TEST_CASE("the inverted mask's NaN row: the warning names attn_weights and the mask that hid every key, not an overflow") {
    TorchGenerator g(123);
    const AttentionModule m(
        validated_config("MHAPyTorchSDPAWithoutFlash",
                         {{"d_in", SlotValue::integer(4)}, {"d_out", SlotValue::integer(4)}, {"num_heads", SlotValue::integer(2)}, {"context_length", SlotValue::integer(6)}}),
        g);
    std::vector<Diagnostic> warnings;
    ForwardOptions eval;
    eval.training = false;
    eval.warnings = &warnings;
    Tensor x = seeded_tokens(6, 4, 1);
    x.shape = {1, 6, 4};  // (b, num_tokens, d_in)
    const Tensor y = m.forward(x, eval);
    for (int64_t t = 0; t < 6; ++t) CHECK(std::isnan(y.data[static_cast<size_t>(t * 4)]) == (t == 5));  // only the last token sees no key
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].code == "non_finite_stage");
    CHECK(warnings[0].slots == std::vector<std::string>{"attn_weights"});
    CHECK(warnings[0].message.find("the mask hides every key of this query") != std::string::npos);
    CHECK(warnings[0].hint.find("is_causal=True") != std::string::npos);
  }

  TEST_CASE("MultiHeadLatentAttention equals a MultiHeadAttention whose key and value weights are W_UK @ W_DKV and W_UV @ W_DKV (within 1e-5)") {
    // K = W_UK(W_DKV x + b_DKV) + b_UK = (W_UK @ W_DKV) x + (W_UK @ b_DKV + b_UK), and the same for V:
    // the latent is a low-rank factorisation of MultiHeadAttention's key and value weights.
    for (const bool bias : {false, true}) {
      CAPTURE(bias);
      const int64_t d_in = 5, d_out = 8, latent = 3, T = 6;
      TorchGenerator g(31);
      const AttentionModule mla(validated_config("MultiHeadLatentAttention", {{"d_in", SlotValue::integer(d_in)},
                                                                              {"d_out", SlotValue::integer(d_out)},
                                                                              {"dropout", SlotValue::floating(0.0)},
                                                                              {"num_heads", SlotValue::integer(2)},
                                                                              {"qkv_bias", SlotValue::boolean_value(bias)},
                                                                              {"latent_dim", SlotValue::integer(latent)}}),
                                g);
      AttentionModule mha(validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(d_in)},
                                                                  {"d_out", SlotValue::integer(d_out)},
                                                                  {"context_length", SlotValue::integer(T)},
                                                                  {"dropout", SlotValue::floating(0.0)},
                                                                  {"num_heads", SlotValue::integer(2)},
                                                                  {"qkv_bias", SlotValue::boolean_value(bias)}}));
      const Tensor down = *mla.parameter("W_DKV.weight");  // (latent, d_in)
      std::vector<NamedTensor> values = {
          {"W_query.weight", *mla.parameter("W_query.weight")}, {"out_proj.weight", *mla.parameter("out_proj.weight")}, {"out_proj.bias", *mla.parameter("out_proj.bias")}};
      if (bias) values.push_back({"W_query.bias", *mla.parameter("W_query.bias")});
      for (const auto& [up, key] : {std::pair<std::string, std::string>{"W_UK", "W_key"}, {"W_UV", "W_value"}}) {
        const Tensor u = *mla.parameter(up + ".weight");  // (d_out, latent)
        Tensor w({d_out, d_in});                          // u @ down, in double
        Tensor b({d_out});                                // u @ b_DKV + b_up
        for (int64_t i = 0; i < d_out; ++i) {
          for (int64_t j = 0; j < d_in; ++j) {
            double sum = 0.0;
            for (int64_t l = 0; l < latent; ++l) sum += static_cast<double>(u.data[static_cast<size_t>(i * latent + l)]) * down.data[static_cast<size_t>(l * d_in + j)];
            w.data[static_cast<size_t>(i * d_in + j)] = static_cast<float>(sum);
          }
          if (!bias) continue;
          const Tensor b_down = *mla.parameter("W_DKV.bias"), b_up = *mla.parameter(up + ".bias");
          double sum = b_up.data[static_cast<size_t>(i)];
          for (int64_t l = 0; l < latent; ++l) sum += static_cast<double>(u.data[static_cast<size_t>(i * latent + l)]) * b_down.data[static_cast<size_t>(l)];
          b.data[static_cast<size_t>(i)] = static_cast<float>(sum);
        }
        values.push_back({key + ".weight", w});
        if (bias) values.push_back({key + ".bias", b});
      }
      mha.set_parameters(values);
      Tensor x = seeded_tokens(2 * T, d_in, 8);
      x.shape = {2, T, d_in};  // (b, num_tokens, d_in)
      ForwardOptions eval;
      eval.training = false;
      CHECK(max_abs_diff(mla.forward(x, eval), mha.forward(x, eval)) <= 1e-5);
    }
  }

  TEST_CASE("MultiHeadLatentAttention: latent_dim=None is max(16, d_out // 8); its trace has c_kv (b, num_tokens, latent_dim) and keys re-projected from it") {
    const auto mla = [](double d, double heads, SlotValue latent) {
      return validated_config("MultiHeadLatentAttention", {{"d_in", SlotValue::integer(d)},
                                                           {"d_out", SlotValue::integer(d)},
                                                           {"dropout", SlotValue::floating(0.0)},
                                                           {"num_heads", SlotValue::integer(heads)},
                                                           {"latent_dim", latent}});
    };
    CHECK(mla(768, 12, SlotValue::none()).latent_width() == 96);
    CHECK(mla(64, 4, SlotValue::none()).latent_width() == 16);  // max(16, 8)
    CHECK(mla(768, 12, SlotValue::integer(32)).latent_width() == 32);
    CHECK(mla(768, 12, SlotValue::none()).python_call() == "MultiHeadLatentAttention(768, 768, 0.0, 12)");
    CHECK(mla(768, 12, SlotValue::integer(96)).python_call() == "MultiHeadLatentAttention(768, 768, 0.0, 12, latent_dim=96)");
    std::vector<std::string> names;
    std::vector<Shape> shapes;
    for (const auto& p : parameter_specs(mla(768, 12, SlotValue::none()))) {
      names.push_back(p.name);
      shapes.push_back(p.shape);
    }
    CHECK(names == std::vector<std::string>{"W_query.weight", "W_DKV.weight", "W_UK.weight", "W_UV.weight", "out_proj.weight", "out_proj.bias"});
    CHECK(shapes == std::vector<Shape>{{768, 768}, {96, 768}, {768, 96}, {768, 96}, {768, 768}, {768}});
    CHECK(mla(768, 12, SlotValue::none()).kv_cache_bytes_per_token() == 96 * 4);  // the latent alone, float32

    TorchGenerator g(123);
    const AttentionModule m(mla(4, 2, SlotValue::integer(3)), g);
    std::vector<Stage> trace;
    ForwardOptions o;
    o.trace = &trace;
    Tensor x = seeded_tokens(5, 4, 2);
    x.shape = {1, 5, 4};
    const Tensor y = m.forward(x, o);
    REQUIRE(trace.size() >= 5);
    CHECK(trace[2].id == "c_kv");
    CHECK(trace[2].tensor.shape == Shape{1, 5, 3});
    CHECK(trace[2].axes == std::vector<std::string>{"b", "num_tokens", "latent_dim"});
    CHECK(trace[2].title.find("3 numbers per token") != std::string::npos);
    CHECK(trace[2].formula == "c_kv = W_DKV(x)  (x @ weight.T; weight is (3, d_in))");
    CHECK(trace[3].id == "keys");
    CHECK(trace[3].formula == "keys = W_UK(c_kv).view(b, num_tokens, num_heads, head_dim).transpose(1, 2)  (c_kv @ weight.T; weight is (d_out, 3))");
    CHECK(trace[4].formula.rfind("values = W_UV(c_kv)", 0) == 0);
  }
}

// A forward split into shares of the heads (ForwardOptions::share, project_heads): what plain Web
// Workers run on a page that is not cross-origin isolated (issue 21.2). The join must be the whole
// forward's output bit for bit, for every class with heads.
TEST_SUITE("head shares") {
  const auto i = [](double v) { return SlotValue::integer(v); };
  const auto f = [](double v) { return SlotValue::floating(v); };
  const auto bits = [](const Tensor& a, const Tensor& b) {
    return a.shape == b.shape && a.data.size() == b.data.size() && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
  };
  /// The shares' outputs joined along the last axis (heads_concat), then project_heads.
  const auto joined = [](const AttentionModule& m, const Tensor& x, const std::vector<HeadShare>& shares, bool training = false) {
    const int64_t b = x.shape[0], T = x.shape[1], width = m.plan().proj_width;
    Tensor concat({b, T, width});
    int64_t column = 0;
    for (const HeadShare& s : shares) {
      ForwardOptions o;
      o.training = training;
      o.share = &s;
      const Tensor part = m.forward(x, o);
      const int64_t w = part.shape[2];
      CHECK(part.shape == Shape{b, T, s.count * m.plan().head_dim});
      for (int64_t r = 0; r < b * T; ++r) std::copy_n(part.data.data() + r * w, w, concat.data.data() + r * width + column);
      column += w;
    }
    CHECK(column == width);
    ForwardOptions o;
    o.training = training;
    return m.project_heads(x, concat, o);
  };

  TEST_CASE("head_shares: whole key/value groups, as even as they allow, in order; one share where the heads cannot split") {
    const ForwardPlan mha =
        plan_forward(validated_config("MultiHeadAttention", {{"d_in", i(768)}, {"d_out", i(768)}, {"context_length", i(1024)}, {"dropout", f(0.1)}, {"num_heads", i(12)}}));
    const auto ranges = [](const std::vector<HeadShare>& s) {
      std::vector<std::pair<int64_t, int64_t>> r;
      for (const HeadShare& h : s) r.emplace_back(h.first, h.count);
      return r;
    };
    using R = std::vector<std::pair<int64_t, int64_t>>;
    CHECK(ranges(head_shares(mha, 2, false)) == R{{0, 6}, {6, 6}});
    CHECK(ranges(head_shares(mha, 5, false)) == R{{0, 2}, {2, 2}, {4, 3}, {7, 2}, {9, 3}});
    CHECK(ranges(head_shares(mha, 40, false)).size() == 12);  // at most one per head
    CHECK(ranges(head_shares(mha, 1, false)) == R{{0, 12}});
    CHECK(ranges(head_shares(mha, 2, true)) == R{{0, 12}});  // training with dropout 0.1: one stream of draws
    const ForwardPlan gqa =
        plan_forward(validated_config("GroupedQueryAttention", {{"d_in", i(16)}, {"d_out", i(16)}, {"dropout", f(0.0)}, {"num_heads", i(8)}, {"num_kv_groups", i(2)}}));
    CHECK(ranges(head_shares(gqa, 3, true)) == R{{0, 4}, {4, 4}});  // two key/value heads of 4 query heads; dropout 0 splits in training too
    const ForwardPlan ca = plan_forward(validated_config("CausalAttention", {{"d_in", i(3)}, {"d_out", i(2)}, {"context_length", i(6)}, {"dropout", f(0.0)}}));
    CHECK(ranges(head_shares(ca, 2, false)) == R{{0, 1}});
  }

  TEST_CASE("the shares joined by project_heads give forward's output bit for bit, for every class with heads") {
    const std::vector<std::pair<std::string, SlotMap>> setups = {
        {"MultiHeadAttention", {{"d_in", i(768)}, {"d_out", i(768)}, {"context_length", i(1024)}, {"dropout", f(0.0)}, {"num_heads", i(12)}}},
        {"MultiHeadAttentionWrapper",
         {{"d_in", i(6)}, {"d_out", i(4)}, {"context_length", i(40)}, {"dropout", f(0.0)}, {"num_heads", i(3)}, {"qkv_bias", SlotValue::boolean_value(true)}}},
        {"GroupedQueryAttention", {{"d_in", i(24)}, {"d_out", i(32)}, {"dropout", f(0.0)}, {"num_heads", i(8)}, {"num_kv_groups", i(4)}}},
        {"MultiHeadAttentionWithSWA", {{"d_in", i(24)}, {"d_out", i(24)}, {"dropout", f(0.0)}, {"num_heads", i(3)}, {"sliding_window_size", i(5)}}},
        {"MultiHeadLatentAttention", {{"d_in", i(24)}, {"d_out", i(24)}, {"dropout", f(0.0)}, {"num_heads", i(4)}, {"latent_dim", i(6)}}},
        {"MHAPyTorchClass", {{"d_in", i(24)}, {"d_out", i(24)}, {"num_heads", i(4)}, {"context_length", i(40)}, {"dropout", f(0.0)}, {"qkv_bias", SlotValue::boolean_value(true)}}},
        {"MHAEinsum", {{"d_in", i(12)}, {"d_out", i(12)}, {"context_length", i(40)}, {"dropout", f(0.0)}, {"num_heads", i(3)}, {"qkv_bias", SlotValue::boolean_value(true)}}},
        {"GatedMultiHeadAttention",
         {{"d_in", i(12)}, {"d_out", i(12)}, {"context_length", i(40)}, {"dropout", f(0.0)}, {"num_heads", i(3)}, {"qkv_bias", SlotValue::boolean_value(true)}}},
    };
    for (const auto& [cls, slots] : setups) {
      CAPTURE(cls);
      TorchGenerator g(7);
      const AttentionModule m(validated_config(cls, slots), g);
      const int64_t d_in = m.config().d_in, T = cls == "MultiHeadAttention" ? 70 : 33;
      Tensor x({2, T, d_in});
      x.data = random_values(2 * T * d_in, 11);
      ForwardOptions eval;
      eval.training = false;
      const Tensor whole = m.forward(x, eval);
      for (const int64_t parts : {2, 3, 12}) {
        CAPTURE(parts);
        const std::vector<HeadShare> shares = head_shares(m.plan(), parts, false);
        CHECK(shares.size() == static_cast<size_t>(std::min<int64_t>(parts, m.plan().kv_heads)));
        CHECK(bits(joined(m, x, shares), whole));
      }
    }
  }

  TEST_CASE("a share is refused where it cannot give forward's bits: no heads, a broken group, a trace, a cache, dropout acting; a wrong join") {
    TorchGenerator g(1);
    const AttentionModule gqa(validated_config("GroupedQueryAttention", {{"d_in", i(8)}, {"d_out", i(8)}, {"dropout", f(0.5)}, {"num_heads", i(4)}, {"num_kv_groups", i(2)}}), g);
    Tensor x({1, 5, 8});
    x.data = random_values(40, 3);
    const auto share = [&](HeadShare s, const std::function<void(ForwardOptions&)>& tweak) {
      return refusal([&] {
        ForwardOptions o;
        o.training = false;
        o.share = &s;
        tweak(o);
        gqa.forward(x, o);
      });
    };
    const auto none = [](ForwardOptions&) {};
    const std::pair<std::string, std::string> bad{"head_share", "share"};
    CHECK(share({0, 2}, none) == std::pair<std::string, std::string>{"", ""});
    CHECK(share({1, 2}, none) == bad);  // key/value head 0's group is heads 0 and 1
    CHECK(share({0, 3}, none) == bad);
    CHECK(share({2, 4}, none) == bad);  // past the 4 heads
    CHECK(share({0, 0}, none) == bad);
    std::vector<Stage> stages;
    CHECK(share({0, 2}, [&](ForwardOptions& o) { o.trace = &stages; }) == bad);
    KvCache cache;
    CHECK(share({0, 2}, [&](ForwardOptions& o) { o.cache = &cache; }) == bad);
    TorchGenerator drops(2);
    CHECK(share({0, 2}, [&](ForwardOptions& o) {
            o.training = true;
            o.generator = &drops;
          }) == std::pair<std::string, std::string>{"head_share", "dropout"});
    CHECK(refusal([&] { gqa.project_heads(x, Tensor({1, 5, 6})); }) == std::pair<std::string, std::string>{"head_share", "heads_concat"});
    CHECK(refusal([&] { gqa.project_heads(Tensor({1, 5, 7}), Tensor({1, 5, 8})); }) == std::pair<std::string, std::string>{"input_width", "d_in"});
    const AttentionModule ca(validated_config("CausalAttention", {{"d_in", i(8)}, {"d_out", i(4)}, {"context_length", i(6)}, {"dropout", f(0.0)}}), g);
    HeadShare all{0, 1};
    ForwardOptions o;
    o.share = &all;
    CHECK(refusal([&] { ca.forward(x, o); }) == bad);
    CHECK(refusal([&] { ca.project_heads(x, Tensor({1, 5, 4})); }) == bad);
  }

  TEST_CASE("GatedMultiHeadAttention: masked scores hold torch.finfo(float32).min with weights exactly 0 there, and gate = heads_concat * sigmoid(W_gate(x))") {
    const auto& c = fixtures::named_case("gated_book_3to2_2heads");
    TorchGenerator gen(123);
    const AttentionModule m(config_of(c), gen);
    CHECK(m.plan().gate);
    CHECK(m.plan().mask_fill == std::numeric_limits<float>::lowest());
    const Tensor x = fixtures::tensor(c.at("input"));  // (2, 6, 3)
    std::vector<Stage> trace, views;
    ForwardOptions opts;
    opts.training = false;
    opts.trace = &trace;
    const Tensor y = m.forward(x, opts);
    const auto stage = [&](const std::string& id) -> const Stage& {
      for (const auto& s : trace)
        if (s.id == id) return s;
      FAIL("no stage " << id);
      return trace.front();
    };
    const Stage& masked = stage("attn_scores_masked");
    CHECK(masked.title.find("torch.finfo(float32).min = -3.4028e+38, not -inf") != std::string::npos);
    CHECK(masked.title.find("still exactly 0") != std::string::npos);
    CHECK(masked.formula == "attn_scores.masked_fill_(mask.bool(), torch.finfo(attn_scores.dtype).min)");
    const Stage& weights = stage("attn_weights");
    for (int64_t s = 0; s < 4; ++s)  // (b, num_heads) slices of (6, 6)
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = i + 1; j < 6; ++j) {
          const size_t at = static_cast<size_t>((s * 6 + i) * 6 + j);
          CHECK(masked.tensor.data[at] == std::numeric_limits<float>::lowest());
          CHECK(weights.tensor.data[at] == 0.0f);
        }
    CHECK(stage("mask").tensor.data[1] == 1.0f);  // query 0 hides key 1: the mask stage is 0/1 whatever the fill
    // the gate stage, by hand: heads_concat (2, 6, 2) times sigmoid(x @ W_gate.T), what out_proj reads
    const Tensor& concat = stage("heads_concat").tensor;
    const Tensor& gated = stage("gate").tensor;
    const Tensor w_gate = *m.parameter("W_gate.weight");  // (2, 3)
    REQUIRE(gated.shape == Shape{2, 6, 2});
    CHECK(stage("gate").axes == std::vector<std::string>{"b", "num_tokens", "d_out"});
    for (int64_t r = 0; r < 12; ++r)
      for (int64_t o = 0; o < 2; ++o) {
        double g = 0.0;
        for (int64_t k = 0; k < 3; ++k) g += static_cast<double>(x.data[static_cast<size_t>(r * 3 + k)]) * w_gate.data[static_cast<size_t>(o * 3 + k)];
        const double want = concat.data[static_cast<size_t>(r * 2 + o)] / (1.0 + std::exp(-g));
        CHECK(std::fabs(gated.data[static_cast<size_t>(r * 2 + o)] - want) <= 1e-6);
      }
    std::vector<std::string> order;
    for (const auto& s : trace) order.push_back(s.id);
    CHECK(std::find(order.begin(), order.end(), "gate") == std::find(order.begin(), order.end(), "heads_concat") + 1);
    CHECK(std::find(order.begin(), order.end(), "out_proj") == std::find(order.begin(), order.end(), "gate") + 1);
    // a resident trace keeps the masked scores as a view that fills the same minimum
    opts.trace = &views;
    opts.stage_views = true;
    CHECK(std::memcmp(m.forward(x, opts).data.data(), y.data.data(), y.data.size() * sizeof(float)) == 0);
    for (const auto& s : views)
      if (s.id == "attn_scores_masked") {
        CHECK(s.view == StageView::MaskedFillMin);
        const Tensor v = stage_tensor(views, s);
        CHECK(std::memcmp(v.data.data(), masked.tensor.data.data(), v.data.size() * sizeof(float)) == 0);
      }
  }

  TEST_CASE("GatedMultiHeadAttention token by token through a KV cache equals its uncached forward within 1e-6 (a cached step masks with torch.finfo(float32).min)") {
    const SlotMap slots = {{"d_in", SlotValue::integer(6)},       {"d_out", SlotValue::integer(4)},     {"context_length", SlotValue::integer(6)},
                           {"dropout", SlotValue::floating(0.0)}, {"num_heads", SlotValue::integer(2)}, {"qkv_bias", SlotValue::boolean_value(true)}};
    TorchGenerator g(5);
    const AttentionModule m(validated_config("GatedMultiHeadAttention", slots), g);
    Tensor x({1, 6, 6});
    x.data = random_values(36, 3);
    ForwardOptions eval;
    eval.training = false;
    const Tensor whole = m.forward(x, eval);
    KvCache cache;
    ForwardOptions step = eval;
    step.cache = &cache;
    for (int64_t t = 0; t < 6; ++t) {
      Tensor row({1, 1, 6});
      std::copy_n(x.data.begin() + t * 6, 6, row.data.begin());
      const Tensor y = m.forward(row, step);
      for (int64_t o = 0; o < 4; ++o) CHECK(std::fabs(y.data[static_cast<size_t>(o)] - whole.data[static_cast<size_t>(t * 4 + o)]) <= 1e-6);
    }
  }
}
