// checkModule against readers' modules written in PyTorch with each catalogue mistake
// (tests/fixtures/generate_check_fixtures.py): the one mistake named, the first divergent stage.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "check_cases.hpp"
#include "refusal.hpp"

using namespace attention_lab;
using check_cases::cause_ids;
using check_cases::check;
using check_cases::Checked;
using check_cases::config_of;
using check_cases::named;

namespace {
const nlohmann::json& check_cases_all() { return check_cases::all(); }
const nlohmann::json& case_named(const std::string& name) { return check_cases::named_case(name); }
}  // namespace

TEST_SUITE("check_module") {
  TEST_CASE("each catalogue mistake is the one cause that explains the reader's output, at the first divergent stage") {
    int mistakes = 0;
    for (const auto& c : check_cases_all()) {
      const auto& expect = c.at("expect");
      const std::string call = c.at("call");
      const bool chapter3 = call.rfind("MultiHeadAttention(", 0) == 0 || call.rfind("CausalAttention(", 0) == 0;  // the other classes: check_classes_test.cpp
      if (expect.at("explains").is_null() || !chapter3) continue;
      CAPTURE(c.at("name").get<std::string>());
      const Checked got = check(c);
      CHECK_FALSE(got.report.agree);
      CHECK(got.report.max_abs_diff > kCheckTolerance);
      CHECK(got.report.first_stage.value_or("") == expect.at("first_stage").get<std::string>());
      CHECK(got.explaining == std::vector<std::string>{expect.at("explains").get<std::string>()});
      ++mistakes;
    }
    // 11 mistakes of MultiHeadAttention and 6 of CausalAttention, then the 2 dropout mistakes of each
    // (seeded: training mode from torch.manual_seed(123)), two configurations each
    CHECK(mistakes == 42);
  }

  TEST_CASE("a correct module agrees and no cause explains it") {
    for (const char* name :
         {"MultiHeadAttention correct qkv_bias=False with stages", "MultiHeadAttention correct qkv_bias=True", "CausalAttention correct qkv_bias=False with stages",
          "MultiHeadAttention correct seed=123 qkv_bias=False with stages", "CausalAttention correct seed=123 qkv_bias=True"}) {
      CAPTURE(name);
      const Checked got = check(case_named(name));
      CHECK(got.report.agree);
      CHECK(got.report.max_abs_diff <= 1e-6);
      CHECK_FALSE(got.report.first_stage.has_value());
      CHECK(got.explaining.empty());
    }
  }

  TEST_CASE("a mistake outside the catalogue disagrees with no cause claimed") {
    const Checked offset = check(case_named("MultiHeadAttention mask_offset qkv_bias=False with stages"));
    CHECK_FALSE(offset.report.agree);
    CHECK(offset.report.first_stage.value_or("") == "attn_weights");
    CHECK(offset.explaining.empty());
    CHECK(offset.report.notes.size() == 1);  // the mask buffer torch.triu(..., diagonal=2) is named
    CHECK(offset.report.notes[0].rfind("mask[0, 1] is 0", 0) == 0);
    const Checked twice = check(case_named("MultiHeadAttention bias_twice qkv_bias=True"));
    CHECK_FALSE(twice.report.agree);
    CHECK(twice.report.first_stage.value_or("") == "output");
    CHECK(twice.explaining.empty());
    for (const char* name : {"MultiHeadAttention dropout_twice seed=123 qkv_bias=False with stages", "CausalAttention dropout_twice seed=123 qkv_bias=False with stages"}) {
      CAPTURE(name);
      const Checked dropped = check(case_named(name));  // dropout applied twice: the seeded entries are tried, none reproduces it
      CHECK_FALSE(dropped.report.agree);
      CHECK(dropped.report.first_stage.value_or("") == "attn_weights");
      CHECK(dropped.explaining.empty());
      CHECK(cause_ids(dropped.report).back() == "dropout_on_scores");
    }
  }

  TEST_CASE("a seed reproduces the dropout stream: training mode, as torch.manual_seed(seed) right before the forward") {
    // dropout 0 with a seed: training with p = 0 is eval; the dropout entries do not apply
    const Checked zero = check(case_named("MultiHeadAttention correct qkv_bias=False with stages"), 123);
    CHECK(zero.report.agree);
    CHECK(cause_ids(zero.report).size() == 11);
    // the seeded correct module read in eval mode (no seed): dropout acted, so it disagrees, and a note says why
    nlohmann::json unseeded = case_named("MultiHeadAttention correct seed=123 qkv_bias=False with stages");
    unseeded.erase("seed");
    CHECK_FALSE(check(unseeded).report.agree);
    // another seed is another stream
    CHECK_FALSE(check(unseeded, 124).report.agree);
    CHECK(check(unseeded, 123).report.agree);
  }

  TEST_CASE("a module left in training mode without a seed: no cause claimed, a note on how to check it with the seed") {
    const Checked forgotten = check(case_named("MultiHeadAttention eval_forgotten qkv_bias=False with stages"));
    CHECK_FALSE(forgotten.report.agree);
    CHECK(forgotten.report.first_stage.value_or("") == "attn_weights");
    CHECK(forgotten.explaining.empty());
    CHECK(cause_ids(forgotten.report).size() == 11);  // no dropout entry without the seed
    REQUIRE(forgotten.report.notes.size() == 1);
    const std::string& note = forgotten.report.notes[0];
    CHECK(note.rfind("dropout = 0.1 may be acting", 0) == 0);
    CHECK(note.find("torch.manual_seed(123) right before mha(batch)") != std::string::npos);
    CHECK(note.find("\"seed\": 123") != std::string::npos);
    // a correct module in eval mode gets no such note; nor does one with dropout 0
    CHECK(check(case_named("MultiHeadAttention correct qkv_bias=True")).report.notes.empty());
    CHECK(check(case_named("MultiHeadAttention no_scale qkv_bias=True")).report.notes.empty());
  }

  TEST_CASE("the catalogue's entries apply only where the class has that step") {
    const auto mha = cause_ids(check(case_named("MultiHeadAttention correct qkv_bias=False with stages")).report);
    CHECK(mha == check_cases::named_case("MultiHeadAttention correct qkv_bias=False with stages").at("expect").at("causes").get<std::vector<std::string>>());
    CHECK(mha.size() == mistake_catalogue().size() - 3);  // every entry but mask_not_passed (a mask passed to PyTorch's attention call) and the seeded dropout ones
    const auto seeded = cause_ids(check(case_named("MultiHeadAttention correct seed=123 qkv_bias=False with stages")).report);
    CHECK(seeded.size() == mistake_catalogue().size() - 1);
    CHECK(std::vector<std::string>(seeded.end() - 2, seeded.end()) == std::vector<std::string>{"dropout_missing", "dropout_on_scores"});
    // CausalAttention(4, 3, ...): one head (no split, merge or scale by d_out), no out_proj, not square
    const auto causal = cause_ids(check(case_named("CausalAttention correct qkv_bias=False with stages")).report);
    CHECK(causal == std::vector<std::string>{"no_scale", "scale_after_softmax", "mask_diagonal", "mask_discarded", "softmax_dim", "query_from_key"});
  }

  TEST_CASE("the wrapper has no head split, merge view or out_proj to get wrong; SelfAttention_v1 no nn.Linear") {
    // Causes depend on the class's steps alone: a module's own output (which agrees) lists them.
    const auto causes_of = [](const std::string& call, const Tensor& x) {
      const ModuleConfig c = config_of(call);
      TorchGenerator g(123);
      const AttentionModule m(c, g);
      ForwardOptions eval;
      eval.training = false;
      const CheckReport r = check_module(c, m.parameters(), x, m.forward(x, eval), {});
      CHECK(r.agree);
      return cause_ids(r);
    };
    Tensor batch({2, 6, 3});
    const Tensor book = book_tokens();
    std::copy(book.data.begin(), book.data.end(), batch.data.begin());
    std::copy(book.data.begin(), book.data.end(), batch.data.begin() + 18);
    CHECK(causes_of("MultiHeadAttentionWrapper(3, 3, 6, 0.0, 2)", batch) ==
          std::vector<std::string>{"no_scale", "scale_after_softmax", "mask_diagonal", "mask_discarded", "softmax_dim", "query_from_key", "linear_no_transpose"});
    CHECK(causes_of("SelfAttention_v1(3, 2)", book) == std::vector<std::string>{"no_scale", "scale_after_softmax", "softmax_dim", "query_from_key"});
  }

  TEST_CASE("with a seed the dropout entries apply where the class writes self.dropout(attn_weights) with p > 0") {
    // A module's own training forward from TorchGenerator(123) is what the reader's torch.manual_seed(123) gives: it agrees.
    const auto causes_of = [](const std::string& call, const Tensor& x) {
      const ModuleConfig c = config_of(call);
      TorchGenerator init(7);
      const AttentionModule m(c, init);
      TorchGenerator stream(123);
      ForwardOptions training;
      training.generator = &stream;
      const CheckReport r = check_module(c, m.parameters(), x, m.forward(x, training), {}, kDefaultMemoryBudgetBytes, nullptr, 123);
      CHECK(r.agree);
      std::vector<std::string> explaining;
      for (const CheckCause& cause : r.causes)
        if (cause.explains) explaining.push_back(cause.id);
      CHECK(explaining.empty());
      return cause_ids(r);
    };
    TorchGenerator g(5);
    const Tensor batch = g.rand({2, 5, 4});
    const auto wrapper = causes_of("MultiHeadAttentionWrapper(4, 2, 6, 0.1, 2)", batch);  // head after head, as the wrapper's CausalAttention modules draw
    CHECK(std::vector<std::string>(wrapper.end() - 2, wrapper.end()) == std::vector<std::string>{"dropout_missing", "dropout_on_scores"});
    // dropout inside scaled_dot_product_attention: no self.dropout line to get wrong
    const auto sdpa = causes_of("MHAPyTorchScaledDotProduct(4, 4, 2, 6, 0.1)", batch);
    CHECK(std::find(sdpa.begin(), sdpa.end(), "dropout_missing") == sdpa.end());
  }

  TEST_CASE("a state dict that does not fit is named with the copy rule that fixes it") {
    const nlohmann::json& c = case_named("MultiHeadAttention correct qkv_bias=False with stages");
    const ModuleConfig config = config_of(c.at("call"));
    const std::vector<NamedTensor> sd = named(c.at("state_dict"));
    const Tensor x = fixtures::tensor(c.at("x")), out = fixtures::tensor(c.at("output"));
    std::vector<NamedTensor> missing;
    for (const NamedTensor& t : sd)
      if (t.name != "W_query.weight" && t.name != "mask") missing.push_back(t);  // a mask buffer may be left out: the book's is used
    const Refused m = refused([&] { check_module(config, missing, x, out, {}); });
    CHECK(m.code == "missing_parameter");
    CHECK(m.slot == "W_query.weight");
    CHECK(m.message.find("W_query.weight (4, 4) is not in the state dict") != std::string::npos);

    std::vector<NamedTensor> extra = sd;
    extra.push_back({"W_qeury.weight", Tensor({4, 4})});
    const Refused e = refused([&] { check_module(config, extra, x, out, {}); });
    CHECK(e.code == "unknown_parameter");
    CHECK(e.slot == "W_qeury.weight");
    CHECK(e.hint == "Did you mean W_query.weight?");
  }

  TEST_CASE("a transposed weight and SelfAttention_v1's matrix are named with their .T") {
    const ModuleConfig v2 = config_of("SelfAttention_v2(3, 2)");
    const Tensor x = book_tokens(), out({6, 2});
    std::vector<NamedTensor> sd = {{"W_query.weight", Tensor({3, 2})}, {"W_key.weight", Tensor({2, 3})}, {"W_value", Tensor({3, 2})}};
    const Refused r = refused([&] { check_module(v2, sd, x, out, {}); });
    CHECK(r.code == "parameter_shape");
    CHECK(r.slot == "W_query.weight");
    CHECK(r.message.find("W_query.weight has shape (3, 2); W_query.weight of this call has (2, 3): transposed") != std::string::npos);
    CHECK(r.message.find("W_value is not a parameter or buffer of this class (SelfAttention_v1's (d_in, d_out) matrix") != std::string::npos);
    CHECK(r.hint == "Copy it transposed: state_dict[\"W_query.weight\"] = state_dict[\"W_query.weight\"].T");
    sd[0].tensor = Tensor({2, 3});
    const Refused v1 = refused([&] { check_module(v2, sd, x, out, {}); });
    CHECK(v1.code == "unknown_parameter");
    CHECK(v1.hint == "Copy it transposed: state_dict[\"W_value.weight\"] = state_dict.pop(\"W_value\").T");
  }

  TEST_CASE("an output or stage of another shape is refused naming the shape and its axes") {
    const nlohmann::json& c = case_named("MultiHeadAttention correct qkv_bias=False with stages");
    const ModuleConfig config = config_of(c.at("call"));
    const std::vector<NamedTensor> sd = named(c.at("state_dict"));
    const Tensor x = fixtures::tensor(c.at("x")), out = fixtures::tensor(c.at("output"));
    const Refused s = refused([&] { check_module(config, sd, x, out, {{"context_vec", Tensor({2, 2, 5, 2})}}); });
    CHECK(s.code == "check_tensor");
    CHECK(s.slot == "context_vec");
    CHECK(s.message.find("gives (2, 5, 4) (b, num_tokens, num_heads * head_dim)") != std::string::npos);
    const Refused o = refused([&] { check_module(config, sd, x, Tensor({2, 5, 3}), {}); });
    CHECK(o.code == "check_tensor");
    CHECK(o.slot == "output");
    const Refused u = refused([&] { check_module(config, sd, x, out, {{"attn_scores_masked", Tensor({2, 2, 5, 5})}}); });
    CHECK(u.code == "check_tensor");
    CHECK(u.slot == "attn_scores_masked");
  }

  TEST_CASE("a check over the memory budget is refused before it allocates") {
    const nlohmann::json& c = case_named("MultiHeadAttention correct qkv_bias=True");
    const Refused r = refused([&] { check_module(config_of(c.at("call")), named(c.at("state_dict")), fixtures::tensor(c.at("x")), fixtures::tensor(c.at("output")), {}, 1000.0); });
    CHECK(r.code == "too_large");
    CHECK(r.slot == "x");
  }

  TEST_CASE("the first differing value is shown with the book's beside it, in the row around it") {
    // The correct module's output is the book's (within 1e-6); two values changed by hand: the first in
    // row-major order is the one shown, with the 8 values of its row around it.
    const nlohmann::json& c = case_named("MultiHeadAttention correct qkv_bias=False with stages");
    const Tensor book = fixtures::tensor(c.at("output"));  // (2, 5, 4)
    Tensor yours = book;
    yours.data[1 * 20 + 3 * 4 + 2] += 0.5f;  // [1, 3, 2]
    yours.data[1 * 20 + 4 * 4 + 0] = std::nanf("");
    const CheckReport r = check_module(config_of(c.at("call")), named(c.at("state_dict")), fixtures::tensor(c.at("x")), yours, {});
    REQUIRE(r.difference.has_value());
    const CheckDifference& d = *r.difference;
    CHECK(d.stage == "output");
    CHECK(d.axes == std::vector<std::string>{"b", "num_tokens", "output_width"});
    CHECK(d.shape == Shape{2, 5, 4});
    CHECK(d.index == Shape{1, 3, 2});
    CHECK(d.from == 0);  // a row of 4: all of it
    REQUIRE(d.yours.size() == 4);
    REQUIRE(d.book.size() == 4);
    for (int k = 0; k < 4; ++k) {
      CHECK(d.yours[k] == yours.data[32 + k]);
      CHECK(std::fabs(d.book[k] - book.data[32 + k]) <= 1e-6);
    }
    CHECK_FALSE(check_values_agree(d.yours[2], d.book[2]));

    // A stage: the first of the given ones that leaves the book's, in a row longer than the window.
    const nlohmann::json& m = case_named("MultiHeadAttention softmax_dim qkv_bias=False with stages");
    std::vector<NamedTensor> stages;
    for (const auto& [id, t] : m.at("stages").items()) stages.push_back({id, fixtures::tensor(t)});
    const CheckReport s = check_module(config_of(m.at("call")), named(m.at("state_dict")), fixtures::tensor(m.at("x")), fixtures::tensor(m.at("output")), stages);
    REQUIRE(s.difference.has_value());
    CHECK(s.difference->stage == "attn_weights");
    CHECK(s.difference->axes == std::vector<std::string>{"b", "num_heads", "num_tokens", "num_keys"});
    CHECK(s.difference->index == Shape{0, 0, 0, 0});  // softmax over the queries: the first row is already off
    const Tensor weights = fixtures::tensor(m.at("stages").at("attn_weights"));
    REQUIRE(s.difference->yours.size() == 5);
    for (size_t k = 0; k < 5; ++k) CHECK(s.difference->yours[k] == weights.data[k]);
    CHECK(s.difference->book[0] == 1.0f);  // the book's first row sees only itself
    CHECK(s.difference->book[1] == 0.0f);
    CHECK_FALSE(check_module(config_of(c.at("call")), named(c.at("state_dict")), fixtures::tensor(c.at("x")), book, {}).difference.has_value());
  }

  TEST_CASE("a window of 8 values centres on the differing one where the row allows") {
    const ModuleConfig c = config_of("MultiHeadAttention(4, 16, 6, 0.0, 2)");
    TorchGenerator g(123);
    const AttentionModule m(c, g);
    ForwardOptions eval;
    eval.training = false;
    Tensor x({1, 3, 4});
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = 0.1f * static_cast<float>(i % 7) - 0.2f;
    const Tensor book = m.forward(x, eval);  // (1, 3, 16)
    for (const auto& [at, from] : std::vector<std::pair<int64_t, int64_t>>{{2, 0}, {7, 4}, {13, 8}, {15, 8}}) {
      CAPTURE(at);
      Tensor yours = book;
      yours.data[static_cast<size_t>(16 + at)] -= 1.0f;  // [0, 1, at]
      const CheckReport r = check_module(c, m.parameters(), x, yours, {});
      REQUIRE(r.difference.has_value());
      CHECK(r.difference->index == Shape{0, 1, at});
      CHECK(r.difference->from == from);
      REQUIRE(r.difference->yours.size() == 8);
      CHECK(r.difference->yours[static_cast<size_t>(at - from)] == yours.data[static_cast<size_t>(16 + at)]);
      CHECK(r.difference->book[static_cast<size_t>(at - from)] == book.data[static_cast<size_t>(16 + at)]);
    }
  }

  TEST_CASE("attn_scores given after the mask (masked_fill_ works in place) are compared with the book's masked scores, with a note") {
    const nlohmann::json& c = case_named("MultiHeadAttention correct qkv_bias=False with stages");
    std::vector<NamedTensor> stages;
    for (const auto& [id, t] : c.at("stages").items()) stages.push_back({id, fixtures::tensor(t)});
    for (NamedTensor& s : stages) {
      if (s.name != "attn_scores") continue;
      const int64_t T = s.tensor.shape.back();  // (b, num_heads, T, T): hide the keys after each query
      for (size_t k = 0; k < s.tensor.data.size(); ++k)
        if (static_cast<int64_t>(k) % T > static_cast<int64_t>(k) / T % T) s.tensor.data[k] = -std::numeric_limits<float>::infinity();
    }
    const CheckReport r = check_module(config_of(c.at("call")), named(c.at("state_dict")), fixtures::tensor(c.at("x")), fixtures::tensor(c.at("output")), stages);
    CHECK(r.agree);
    CHECK_FALSE(r.first_stage.has_value());
    REQUIRE(r.notes.size() == 1);
    CHECK(r.notes[0].rfind("Your attn_scores are the scores after the mask (masked_fill_ works in place)", 0) == 0);
    // the scores before the mask, as the snippet asks: no note
    std::vector<NamedTensor> before;
    for (const auto& [id, t] : c.at("stages").items()) before.push_back({id, fixtures::tensor(t)});
    CHECK(check_module(config_of(c.at("call")), named(c.at("state_dict")), fixtures::tensor(c.at("x")), fixtures::tensor(c.at("output")), before).notes.empty());
  }

  TEST_CASE("a call that does not fit x says the call checked is the reader's to fix") {
    const nlohmann::json& c = case_named("MultiHeadAttention correct qkv_bias=True");
    const Refused r = refused([&] {
      check_module(config_of("MultiHeadAttention(768, 768, 1024, 0.0, 12)"), named(c.at("state_dict")), fixtures::tensor(c.at("x")), fixtures::tensor(c.at("output")), {});
    });
    CHECK(r.slot == "d_in");
    CHECK(r.message.find("(the call checked is MultiHeadAttention(768, 768, 1024, 0.0, 12), as the check gives it)") != std::string::npos);
    CHECK(r.hint.find("the call must be your module's own, with the numbers it was built with.") != std::string::npos);
  }

  TEST_CASE("a seeded check that no cause explains says the seed must be set right before the forward") {
    const nlohmann::json& c = case_named("MultiHeadAttention correct seed=123 qkv_bias=True");
    const auto run_with = [&](uint64_t seed) {
      return check_module(config_of(c.at("call")), named(c.at("state_dict")), fixtures::tensor(c.at("x")), fixtures::tensor(c.at("output")), {}, kDefaultMemoryBudgetBytes, nullptr,
                          seed);
    };
    const CheckReport other = run_with(124);  // as if the notebook's generator had moved on before the forward
    CHECK_FALSE(other.agree);
    REQUIRE(other.notes.size() == 1);
    CHECK(other.notes[0].rfind("The check drew dropout from torch.manual_seed(124) right before the forward.", 0) == 0);
    CHECK(run_with(123).notes.empty());
  }
}
