// checkModule on readers' modules of the lab's other classes (tests/fixtures/check_readers.py): for
// each class, the causes are exactly the catalogue entries that apply to it, the one written into the
// module explains and no other, at the first divergent stage; the correct module agrees; a mistake
// outside the catalogue disagrees with no cause claimed.
#include <doctest/doctest.h>

#include "check_cases.hpp"
#include "refusal.hpp"

using namespace attention_lab;
using check_cases::Checked;

namespace {

/// Every case of `class_name`'s reader modules checked against its expectations; their number.
int check_class(const std::string& class_name) {
  int cases = 0, explained = 0, outside = 0, agreeing = 0;
  for (const auto& c : check_cases::all()) {
    const std::string call = c.at("call");
    if (call.rfind(class_name + "(", 0) != 0) continue;
    CAPTURE(c.at("name").get<std::string>());
    const auto& expect = c.at("expect");
    const Checked got = check_cases::check(c);
    CHECK(check_cases::cause_ids(got.report) == expect.at("causes").get<std::vector<std::string>>());
    CHECK(got.report.agree == expect.at("agree").get<bool>());
    CHECK(got.report.first_stage.value_or("") == (expect.at("first_stage").is_null() ? "" : expect.at("first_stage").get<std::string>()));
    if (expect.at("explains").is_string()) {
      CHECK(got.explaining == std::vector<std::string>{expect.at("explains").get<std::string>()});
      CHECK(got.report.max_abs_diff > kCheckTolerance);
      ++explained;
    } else {
      CHECK(got.explaining.empty());
      if (expect.at("agree").get<bool>()) {
        CHECK(got.report.max_abs_diff <= 1e-5);
        ++agreeing;
      } else {
        ++outside;
      }
    }
    ++cases;
  }
  CHECK(agreeing == 2);  // the correct module, in both configurations
  CHECK(outside == 2);   // one mistake outside the catalogue, in both
  CHECK(explained ==
        2 * static_cast<int>(check_cases::named_case(class_name + " correct" + (class_name == "SelfAttention_v1" ? "" : " qkv_bias=True")).at("expect").at("causes").size()));
  return cases;
}

}  // namespace

TEST_SUITE("check_module classes") {
  TEST_CASE("SelfAttention_v1: matrices used as x @ W, no batch axis: the scale, the softmax, W_key for the queries") { CHECK(check_class("SelfAttention_v1") == 12); }
  TEST_CASE("SelfAttention_v2: nn.Linear, no batch axis: and x @ W.weight (square)") { CHECK(check_class("SelfAttention_v2") == 14); }
  TEST_CASE("MultiHeadAttentionWrapper: per-head CausalAttention modules, each with the mistake") { CHECK(check_class("MultiHeadAttentionWrapper") == 18); }
  TEST_CASE("MultiHeadAttentionCombinedQKV: a packed qkv has no W_key, no separate views; its proj is the out_proj") { CHECK(check_class("MultiHeadAttentionCombinedQKV") == 20); }
  TEST_CASE("MHAEinsum: (d_in, d_out) Parameters through einsum, W_key for the queries too") { CHECK(check_class("MHAEinsum") == 24); }
  TEST_CASE("GroupedQueryAttention: key/value heads shared, split by view; no W_key of W_query's shape") { CHECK(check_class("GroupedQueryAttention") == 22); }
  TEST_CASE("MHAPyTorchScaledDotProduct: scale, mask and softmax inside PyTorch's call, but is_causal left out") { CHECK(check_class("MHAPyTorchScaledDotProduct") == 10); }
}

TEST_SUITE("check_module classes") {
  TEST_CASE("the classes without reader fixtures list the entries their recipes give them") {
    // Causes depend on the class's steps alone: a module's own output (which agrees) lists them.
    const auto causes_of = [](const std::string& call) {
      const ModuleConfig c = check_cases::config_of(call);
      TorchGenerator g(123);
      const AttentionModule m(c, g);
      Tensor x({1, 3, c.d_in});
      for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<float>(i % 7) / 7.0f - 0.4f;
      ForwardOptions eval;
      eval.training = false;
      const Tensor out = m.forward(x, eval);
      const CheckReport r = check_module(c, m.parameters(), x, out, {});
      CHECK(r.agree);  // the inverted mask's NaN row too: NaN where the book has NaN
      return check_cases::cause_ids(r);
    };
    using Ids = std::vector<std::string>;
    const Ids torch_call = {"merge_view_no_transpose", "missing_out_proj", "mask_not_passed"};  // the merge and proj around PyTorch's call
    CHECK(causes_of("MHAPyTorchSDPAWithoutFlash(4, 4, 2, 6)") == torch_call);
    CHECK(causes_of("MHAPyTorchFlexAttention(4, 4, 2, 6)") == torch_call);
    CHECK(causes_of("PyTorchMultiHeadAttention(4, 4, 2)") == torch_call);
    // nn.MultiheadAttention splits, merges and projects inside; the reader writes the mask buffer and proj
    CHECK(causes_of("MHAPyTorchClass(4, 4, 2, 6)") == Ids{"mask_diagonal", "mask_not_passed"});
    const Ids book = {"scale_d_out",    "no_scale",         "scale_after_softmax",     "mask_diagonal",
                      "mask_discarded", "softmax_dim",      "heads_view_no_transpose", "merge_view_no_transpose",
                      "query_from_key", "missing_out_proj", "linear_no_transpose"};
    CHECK(causes_of("MultiHeadAttentionWithSWA(4, 4, 0.0, 2, sliding_window_size=2)") == book);
    CHECK(causes_of("MultiHeadAttention@ch05/07_gpt_to_llama(4, 4, 6, 2)") == book);
    // keys and values re-projected from a latent: no W_key of W_query's shape, no view of their own projections
    CHECK(causes_of("MultiHeadLatentAttention(4, 4, 0.0, 2, latent_dim=2)") ==
          Ids{"scale_d_out", "no_scale", "scale_after_softmax", "mask_diagonal", "mask_discarded", "softmax_dim", "merge_view_no_transpose", "missing_out_proj"});
    // a gate before out_proj: leaving out out_proj is not the catalogue's one-line mistake
    CHECK(causes_of("GatedMultiHeadAttention(4, 4, 6, 0.0, 2)") == Ids{"scale_d_out", "no_scale", "scale_after_softmax", "mask_diagonal", "mask_discarded", "softmax_dim",
                                                                       "heads_view_no_transpose", "merge_view_no_transpose", "query_from_key", "linear_no_transpose"});
  }
}
