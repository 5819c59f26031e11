// A forward split into shares of the heads (ForwardOptions::share, AttentionModule::project_heads).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"
#include "random_values.hpp"
#include "refusal.hpp"

using namespace attention_lab;

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
}
