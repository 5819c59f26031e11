// Every class's forward: initial parameters and every stage against the PyTorch fixtures, the book's
// numbers, the trace, the output-width rules and the checks on the input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"
#include "fixtures.hpp"
#include "random_values.hpp"
#include "refusal.hpp"
#include "tensor_compare.hpp"

using namespace attention_lab;

namespace {

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
      const AttentionModule m(fixtures::module_config(c), gen);
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
      const ModuleConfig config = fixtures::module_config(c);
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
    const AttentionModule m(fixtures::module_config(c), gen);
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
}
