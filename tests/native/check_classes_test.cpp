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

  TEST_CASE("the wrapper's state dict is checked under its own names (heads.<h>.), each problem with its copy rule") {
    const nlohmann::json& c = check_cases::named_case("MultiHeadAttentionWrapper correct qkv_bias=True");
    const ModuleConfig config = check_cases::config_of(c.at("call"));
    const Tensor x = fixtures::tensor(c.at("x")), out = fixtures::tensor(c.at("output"));
    const auto edited = [&](const std::function<void(std::vector<NamedTensor>&)>& edit) {
      std::vector<NamedTensor> sd = check_cases::named(c.at("state_dict"));
      edit(sd);
      return refused([&] { check_module(config, sd, x, out, {}); });
    };
    const auto rename = [](const std::string& from, const std::string& to) {
      return [=](std::vector<NamedTensor>& sd) {
        for (NamedTensor& t : sd)
          if (t.name == from) t.name = to;
      };
    };
    const Refused missing = edited([](auto& sd) { sd.erase(std::find_if(sd.begin(), sd.end(), [](const NamedTensor& t) { return t.name == "heads.1.W_key.weight"; })); });
    CHECK(missing.said() ==
          "missing_parameter [heads.1.W_key.weight] the state dict does not fit MultiHeadAttentionWrapper(4, 4, 6, 0.0, 2, qkv_bias=True): "
          "heads.1.W_key.weight (4, 4) is not in the state dict");
    const Refused typo = edited(rename("heads.1.W_key.weight", "heads.1.W_kye.weight"));
    CHECK(typo.said().rfind("unknown_parameter [heads.1.W_kye.weight]", 0) == 0);
    CHECK(typo.hint == "Did you mean heads.1.W_key.weight?");
    const Refused matrix = edited(rename("heads.0.W_value.weight", "heads.0.W_value"));
    CHECK(matrix.slot == "heads.0.W_value");
    CHECK(matrix.hint == "Copy it transposed: state_dict[\"heads.0.W_value.weight\"] = state_dict.pop(\"heads.0.W_value\").T");
    const Refused fused = edited(rename("heads.0.W_query.weight", "W_query.weight"));
    CHECK(fused.slot == "W_query.weight");
    CHECK(fused.message.find("W_query.weight is not a parameter or buffer of this class (it keeps each head's under heads.<h>.: heads.0.W_query.weight, ...") != std::string::npos);
    CHECK(fused.hint == "Save the state dict of a module built with this call, or check it with the call of the class that saved it.");
    const Refused mask = edited([](auto& sd) { sd.push_back({"heads.1.mask", Tensor({4, 4})}); });
    CHECK(mask.said().rfind("mask_buffer [heads.1.mask] the state dict does not fit MultiHeadAttentionWrapper(4, 4, 6, 0.0, 2, qkv_bias=True): heads.1.mask has shape (4, 4); "
                            "context_length = 6 gives (6, 6)",
                            0) == 0);
    // A per-head name given to the fused class, and a transposed head weight of a wrapper whose heads are not square
    const nlohmann::json& m = check_cases::named_case("MultiHeadAttention correct qkv_bias=True");
    std::vector<NamedTensor> sd = check_cases::named(m.at("state_dict"));
    for (NamedTensor& t : sd)
      if (t.name == "W_query.weight") t.name = "heads.0.W_query.weight";
    const Refused per_head = refused([&] { check_module(check_cases::config_of(m.at("call")), sd, fixtures::tensor(m.at("x")), fixtures::tensor(m.at("output")), {}); });
    CHECK(per_head.slot == "heads.0.W_query.weight");
    CHECK(per_head.message.find("(a per-head module's name, as MultiHeadAttentionWrapper's; this class holds every head's rows in one W_query.weight)") != std::string::npos);
    const ModuleConfig narrow = check_cases::config_of("MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)");
    TorchGenerator g(123);
    std::vector<NamedTensor> params = AttentionModule(narrow, g).parameters();
    for (NamedTensor& t : params)
      if (t.name == "heads.1.W_value.weight") t.tensor.shape = {3, 2};
    Tensor batch({1, 6, 3});
    batch.data = book_tokens().data;
    const Refused transposed = refused([&] { check_module(narrow, params, batch, Tensor({1, 6, 4}), {}); });
    CHECK(transposed.slot == "heads.1.W_value.weight");
    CHECK(transposed.message.find("heads.1.W_value.weight has shape (3, 2); heads.1.W_value.weight of this call has (2, 3): transposed") != std::string::npos);
    CHECK(transposed.hint == "Copy it transposed: state_dict[\"heads.1.W_value.weight\"] = state_dict[\"heads.1.W_value.weight\"].T");
  }
}
