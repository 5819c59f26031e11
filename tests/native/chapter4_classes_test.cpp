// The chapter 4 bonus classes whose math is their own: MultiHeadLatentAttention (ch04/05_mla: a
// latent c_kv, keys and values re-projected from it) and GatedMultiHeadAttention (ch04/08_deltanet: an
// output gate, masked scores at torch.finfo(float32).min).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"
#include "fixtures.hpp"
#include "random_values.hpp"
#include "tensor_compare.hpp"

using namespace attention_lab;

TEST_SUITE("chapter 4 bonus classes") {
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

  TEST_CASE("GatedMultiHeadAttention: masked scores hold torch.finfo(float32).min with weights exactly 0 there, and gate = heads_concat * sigmoid(W_gate(x))") {
    const auto& c = fixtures::named_case("gated_book_3to2_2heads");
    TorchGenerator gen(123);
    const AttentionModule m(fixtures::module_config(c), gen);
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
