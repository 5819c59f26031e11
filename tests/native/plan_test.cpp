// The forward plan: one path for every class, its stage texts from one table, and a memory estimate
// that bounds what the module and a forward really allocate plus the caller's copy of the results.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>

#include "attention_lab/modules.hpp"
#include "attention_lab/plan.hpp"
#include "attention_lab/session.hpp"
#include "attention_lab/validator.hpp"
#include "refusal.hpp"

using namespace attention_lab;

// Counts the bytes live through operator new in this test binary, and their peak.
namespace {
std::atomic<long long> g_live{0}, g_peak{0};
std::atomic<bool> g_counting{false};
}  // namespace

void* operator new(std::size_t n) {
  void* p = std::malloc(n + 16);
  if (p == nullptr) throw std::bad_alloc();
  *static_cast<std::size_t*>(p) = n;
  if (g_counting) {
    const long long live = g_live += static_cast<long long>(n);
    long long peak = g_peak;
    while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {}
  }
  return static_cast<char*>(p) + 16;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  char* base = static_cast<char*>(p) - 16;
  if (g_counting) g_live -= static_cast<long long>(*reinterpret_cast<std::size_t*>(base));
  std::free(base);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
// The nothrow forms too (std::stable_sort's buffer comes from them): libstdc++'s own route to the
// operator new above, but under AddressSanitizer its interceptor's would be freed by the delete above.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { operator delete(p); }

namespace {

ModuleConfig config_of(const std::string& cls, const SlotMap& slots) { return validated_config(cls, slots); }

SlotMap mha(int64_t d_in, int64_t d_out, int64_t ctx, double p, int64_t h, bool bias = false) {
  return {{"d_in", SlotValue::integer(static_cast<double>(d_in))},          {"d_out", SlotValue::integer(static_cast<double>(d_out))},
          {"context_length", SlotValue::integer(static_cast<double>(ctx))}, {"dropout", SlotValue::floating(p)},
          {"num_heads", SlotValue::integer(static_cast<double>(h))},        {"qkv_bias", SlotValue::boolean_value(bias)}};
}

/// Checks that plan_heap_bytes bounds the peak of what constructing a module of `c` (seeded with
/// `seed`) and a forward on x of `shape` (every value 0.25) allocate, untraced and traced.
void check_peak_within_estimate(const ModuleConfig& c, const Shape& shape, uint64_t seed) {
  const Tensor x(shape, std::vector<float>(static_cast<size_t>(numel_of(shape)), 0.25f));
  for (const bool trace : {false, true}) {
    TorchGenerator g(seed);
    g_live = 0;
    g_peak = 0;
    g_counting = true;
    {
      const Tensor input = x;  // the bindings' copy of the input
      const AttentionModule m(c, g);
      std::vector<Stage> stages;
      ForwardOptions o;
      o.generator = &g;
      o.trace = trace ? &stages : nullptr;
      const Tensor y = m.forward(input, o);
    }
    g_counting = false;
    const double estimate = plan_heap_bytes(plan_forward(c), shape, trace);  // what the core allocates (the results' copy apart)
    // + names, shapes and stage texts, and the module's own object (AttentionModule::Impl, about 0.7 KB)
    CHECK_MESSAGE(static_cast<double>(g_peak.load()) <= estimate + 9216,
                  c.python_call() << " on " << shape_string(shape) << (trace ? " traced" : "") << ": peak " << g_peak.load() << " > estimate " << estimate);
  }
}

}  // namespace

TEST_SUITE("plan") {
  TEST_CASE("one plan per class: heads, head_dim, mask, dropout order and out_proj") {
    const ForwardPlan v1 = plan_forward(config_of("SelfAttention_v1", {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}}));
    CHECK(v1.matmul_projection);
    CHECK(v1.mask == MaskKind::None);
    CHECK_FALSE(v1.dropout_stage);
    CHECK(v1.query_heads == 1);

    const ForwardPlan wrapper = plan_forward(config_of("MultiHeadAttentionWrapper", mha(3, 2, 6, 0.5, 3)));
    CHECK(wrapper.layout == HeadsRule::Modules);
    CHECK(wrapper.query_heads == 3);
    CHECK(wrapper.kv_heads == 3);
    CHECK(wrapper.head_dim == 2);        // d_out is per head
    CHECK(wrapper.proj_width == 6);      // heads side by side
    CHECK(wrapper.output_width == 6);    // num_heads x d_out
    CHECK(wrapper.dropout_heads_outer);  // each head a CausalAttention over the whole batch
    CHECK_FALSE(wrapper.out_proj);

    const ForwardPlan fused = plan_forward(config_of("MultiHeadAttention", mha(768, 768, 1024, 0.0, 12)));
    CHECK(fused.layout == HeadsRule::Fused);
    CHECK(fused.head_dim == 64);
    CHECK(fused.proj_width == 768);
    CHECK(fused.output_width == 768);
    CHECK(fused.scale_div == 8.0f);
    CHECK(fused.mask == MaskKind::Causal);
    CHECK(fused.out_proj);
    CHECK_FALSE(fused.dropout_heads_outer);
  }

  TEST_CASE("stage titles and formulas come from the table with the plan's numbers") {
    const ForwardPlan p = plan_forward(config_of("MultiHeadAttention", mha(3, 2, 6, 0.5, 2)));
    CHECK(std::string(stage_id_name(StageId::AttnWeightsDropout)) == "attn_weights_dropout");
    const StageText weights = stage_text(p, StageId::AttnWeights, 6, true);
    CHECK(weights.title == "Attention weights per head (each row sums to 1)");
    CHECK(weights.formula == "torch.softmax(attn_scores / d_k**0.5, dim=-1), d_k = 1: scores divided by 1");
    CHECK(weights.axes == std::vector<std::string>{"b", "num_heads", "query", "key"});
    CHECK(stage_text(p, StageId::Mask, 4, true).title == "Causal mask (top-left 4 x 4 of the 6 x 6 buffer)");
    CHECK(stage_text(p, StageId::AttnWeightsDropout, 6, true).formula ==
          "dropout(attn_weights): each weight zeroed with probability 0.5, survivors x 1/(1-p) = 2; rows no longer sum to 1");
    CHECK(stage_text(p, StageId::AttnWeightsDropout, 6, false).title == "Attention weights after dropout (eval: dropout skipped)");
    CHECK(stage_text(p, StageId::Queries, 6, true).formula == "queries = (W_query(x)).view(b, num_tokens, num_heads, head_dim).transpose(1, 2)  (x @ weight.T)");
    // queries, keys and values share one row per variant, with their own names filled in
    const ForwardPlan v1 = plan_forward(config_of("SelfAttention_v1", {{"d_in", SlotValue::integer(3)}, {"d_out", SlotValue::integer(2)}}));
    CHECK(stage_text(v1, StageId::Keys, 6, true).formula == "keys = x @ W_key");
    CHECK(stage_text(v1, StageId::Keys, 6, true).title == "Keys");
    const ForwardPlan wrapper = plan_forward(config_of("MultiHeadAttentionWrapper", mha(3, 2, 6, 0.0, 2, true)));
    CHECK(stage_text(wrapper, StageId::Values, 6, true).title == "Values per head");
    CHECK(stage_text(wrapper, StageId::Values, 6, true).formula == "values[:, h] = heads[h].W_value(x)  (x @ weight.T + bias)");
  }

  TEST_CASE("setting some of the wrapper's heads keeps the others, even when one name comes twice") {
    TorchGenerator g(5);
    AttentionModule m(config_of("MultiHeadAttentionWrapper", mha(3, 2, 6, 0.0, 3, true)), g);
    const std::vector<NamedTensor> before = m.parameters();
    const Tensor ones({2, 3}, std::vector<float>(6, 1.0f)), twos({2, 3}, std::vector<float>(6, 2.0f));
    // Three values for three heads' W_query, but head 1 twice and head 2 never: head 2 must keep its values.
    m.set_parameters({{"heads.0.W_query.weight", ones}, {"heads.1.W_query.weight", ones}, {"heads.1.W_query.weight", twos}});
    CHECK(m.parameter("heads.0.W_query.weight")->data == ones.data);
    CHECK(m.parameter("heads.1.W_query.weight")->data == twos.data);  // the last value given wins
    CHECK(m.parameter("heads.2.W_query.weight")->data == before[12].tensor.data);
    CHECK(before[12].name == "heads.2.W_query.weight");
    m.set_parameter("heads.2.W_value.bias", Tensor({2}, {7.0f, 8.0f}));
    CHECK(m.parameter("heads.2.W_value.bias")->data == std::vector<float>{7.0f, 8.0f});
    CHECK(m.parameter("heads.1.W_value.bias")->data == before[11].tensor.data);
  }

  TEST_CASE("a traced forward emits exactly the stages its plan has, in table order") {
    TorchGenerator g(123);
    for (const char* cls : {"CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention"}) {
      SlotMap slots = mha(3, 2, 6, 0.0, 2);
      if (std::string(cls) == "CausalAttention") slots.erase("num_heads");
      const AttentionModule m(config_of(cls, slots), g);
      std::vector<Stage> trace;
      ForwardOptions o;
      o.trace = &trace;
      m.forward(Tensor({1, 6, 3}, std::vector<float>(18, 0.5f)), o);
      std::vector<std::string> want;
      for (int id = 0; id <= static_cast<int>(StageId::Output); ++id)
        if (stage_present(m.plan(), static_cast<StageId>(id))) want.push_back(stage_id_name(static_cast<StageId>(id)));
      std::vector<std::string> got;
      for (const auto& s : trace) got.push_back(s.id);
      CHECK_MESSAGE(got == want, cls);
    }
  }

  TEST_CASE("a module holds each parameter once: its allocations are its parameter bytes") {
    // The config first: the class table it reads is built once, on first use, and is not the module's.
    const ModuleConfig config = config_of("MultiHeadAttention", mha(96, 96, 64, 0.0, 4, true));
    g_live = 0;
    g_counting = true;
    {
      TorchGenerator g(123);
      const AttentionModule m(config, g);
      const double params = static_cast<double>(parameter_count(m.config())) * 4;
      CHECK(static_cast<double>(g_live.load()) >= params);
      CHECK(static_cast<double>(g_live.load()) <= params * 1.05 + 4096);  // names, shapes and panel padding
    }
    g_counting = false;
  }

  TEST_CASE("the memory estimate bounds the peak of construction plus a forward, traced or not, over random setups") {
    std::mt19937 rng(7);
    const char* classes[] = {"SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention"};
    for (int trial = 0; trial < 40; ++trial) {
      const std::string cls = classes[trial % 5];
      const int64_t heads = 1 + static_cast<int64_t>(rng() % 4);
      const int64_t d_out = heads * (1 + static_cast<int64_t>(rng() % 24));
      const int64_t d_in = 1 + static_cast<int64_t>(rng() % 40);
      const int64_t T = 1 + static_cast<int64_t>(rng() % 90);
      const int64_t b = 1 + static_cast<int64_t>(rng() % 3);
      SlotMap slots = mha(d_in, d_out, T + static_cast<int64_t>(rng() % 5), trial % 3 == 0 ? 0.25 : 0.0, heads, trial % 2 == 0);
      if (cls == "SelfAttention_v1") slots = {{"d_in", slots["d_in"]}, {"d_out", slots["d_out"]}};
      if (cls == "SelfAttention_v2") slots = {{"d_in", slots["d_in"]}, {"d_out", slots["d_out"]}, {"qkv_bias", slots["qkv_bias"]}};
      if (cls == "CausalAttention") slots.erase("num_heads");
      const ModuleConfig c = config_of(cls, slots);
      check_peak_within_estimate(c, c.batched() ? Shape{b, T, d_in} : Shape{T, d_in}, static_cast<uint64_t>(trial));
    }
  }

  TEST_CASE("the memory estimate bounds the peak for MultiHeadLatentAttention (its latent and the projections from it), traced or not") {
    std::mt19937 rng(11);
    for (int trial = 0; trial < 12; ++trial) {
      const int64_t heads = 1 + static_cast<int64_t>(rng() % 4);
      const int64_t d_out = heads * (1 + static_cast<int64_t>(rng() % 24));
      const int64_t d_in = 1 + static_cast<int64_t>(rng() % 40);
      // At least 16 tokens: on tiny inputs the peak is construction's (the seeded values beside their
      // packed copies), which plan_heap_bytes does not count for any class (MultiHeadAttention(14, 38,
      // 4, 0.0, 2, qkv_bias=True) on (2, 2, 14) peaks at 35,008 bytes against 18,704 estimated).
      const int64_t T = 16 + static_cast<int64_t>(rng() % 75);
      const int64_t b = 1 + static_cast<int64_t>(rng() % 3);
      const SlotMap slots = {{"d_in", SlotValue::integer(static_cast<double>(d_in))},
                             {"d_out", SlotValue::integer(static_cast<double>(d_out))},
                             {"dropout", SlotValue::floating(trial % 3 == 0 ? 0.25 : 0.0)},
                             {"num_heads", SlotValue::integer(static_cast<double>(heads))},
                             {"qkv_bias", SlotValue::boolean_value(trial % 2 == 0)},
                             {"latent_dim", trial % 4 == 0 ? SlotValue::none() : SlotValue::integer(static_cast<double>(1 + rng() % 40))}};
      const ModuleConfig c = config_of("MultiHeadLatentAttention", slots);
      check_peak_within_estimate(c, {b, T, d_in}, static_cast<uint64_t>(trial));
    }
  }

  TEST_CASE("the memory estimate bounds the peak for GatedMultiHeadAttention (its W_gate and the gate stage), traced or not") {
    std::mt19937 rng(13);
    for (int trial = 0; trial < 12; ++trial) {
      const int64_t heads = 1 + static_cast<int64_t>(rng() % 4);
      const int64_t d_out = heads * (1 + static_cast<int64_t>(rng() % 24));
      const int64_t d_in = 1 + static_cast<int64_t>(rng() % 40);
      const int64_t T = 16 + static_cast<int64_t>(rng() % 75);  // at least 16 tokens, as for MultiHeadLatentAttention above
      const int64_t b = 1 + static_cast<int64_t>(rng() % 3);
      const ModuleConfig c = config_of("GatedMultiHeadAttention", mha(d_in, d_out, T + static_cast<int64_t>(rng() % 5), trial % 3 == 0 ? 0.25 : 0.0, heads, trial % 2 == 0));
      check_peak_within_estimate(c, {b, T, d_in}, static_cast<uint64_t>(trial));
    }
  }

  TEST_CASE("the estimate counts the caller's copy of what a forward hands back: the output and every traced stage, for every class") {
    for (const ClassSpec& spec : class_specs()) {
      const int64_t T = 7, b = 2, d = 6;
      SlotMap slots;
      for (const SlotSpec& s : spec.slots) {
        if (s.name == "d_in" || s.name == "d_out") slots[s.name] = SlotValue::integer(static_cast<double>(d));
        if (s.name == "context_length") slots[s.name] = SlotValue::integer(static_cast<double>(T + 2));
        if (s.name == "dropout") slots[s.name] = SlotValue::floating(0.25);
        if (s.name == "num_heads") slots[s.name] = SlotValue::integer(spec.rope_theta > 0 ? 3 : 2);  // RoPE: an even head_dim (6 / 3)
        if (s.name == "num_kv_groups") slots[s.name] = SlotValue::integer(1);
        if (s.name == "qkv_bias") slots[s.name] = SlotValue::boolean_value(true);
      }
      const ModuleConfig c = config_of(spec.name, slots);
      const ForwardPlan p = plan_forward(c);
      const Shape shape = c.batched() ? Shape{b, T, d} : Shape{T, d};
      const Tensor x(shape, std::vector<float>(static_cast<size_t>(numel_of(shape)), 0.5f));
      TorchGenerator g(5);
      const AttentionModule m(c, g);
      for (const bool trace : {false, true}) {
        std::vector<Stage> stages;
        ForwardOptions o;
        o.generator = &g;
        o.trace = trace ? &stages : nullptr;
        const Tensor y = m.forward(x, o);
        double floats = static_cast<double>(y.data.size());
        for (const Stage& st : stages) floats += static_cast<double>(st.tensor.data.size());
        const double results = plan_result_bytes(p, shape, trace);
        INFO(c.python_call(), (trace ? " traced" : ""), ": results ", results, " for ", 4.0 * floats, " bytes of tensors in ", stages.size(), " stages");
        // every tensor handed back, plus at most its stage's JS objects (summaries, texts): 1 KiB a stage and 256 bytes a summary
        CHECK(results >= 4.0 * floats);
        CHECK(results <= 4.0 * floats + static_cast<double>(stages.size()) * (1024.0 + 256.0 * static_cast<double>(b * p.query_heads + 1)));
        // the inverted mask's untraced run is held to its traced rerun (its output always has a NaN row)
        const double heap =
            !trace && p.mask == MaskKind::Inverted ? std::max(plan_heap_bytes(p, shape, false), plan_heap_bytes(p, shape, true) + results) : plan_heap_bytes(p, shape, trace);
        CHECK(plan_bytes(p, shape, trace) == heap + results);
      }
      CHECK(plan_result_bytes(p, std::nullopt, true) == 0.0);  // a module alone hands nothing back
    }
  }

  TEST_CASE("an untraced forward is held to the untraced estimate: what only the trace would need does not refuse it") {
    TorchGenerator g(1);
    const AttentionModule m(config_of("MultiHeadAttention", mha(8, 8, 600, 0.0, 2)), g);
    const Shape shape{1, 500, 8};
    const Tensor x(shape, std::vector<float>(4000, 0.1f));
    const ForwardPlan& p = m.plan();
    // a budget between the two estimates: 4 x (1, 2, 500, 500) traced stages make the difference
    ForwardOptions o;
    o.memory_budget_bytes = (plan_bytes(p, shape, false) + plan_bytes(p, shape, true)) / 2;
    CHECK(plan_bytes(p, shape, true) - plan_bytes(p, shape, false) >= 4.0 * 2 * 500 * 500 * 4);
    CHECK(m.forward(x, o).shape == Shape{1, 500, 8});
    std::vector<Stage> trace;
    o.trace = &trace;
    const Refused traced = refused([&] { m.forward(x, o); });  // the traced forward should be refused
    CHECK(traced.code == "too_large");
    CHECK(trace.empty());
    o.trace = nullptr;
    o.memory_budget_bytes = plan_bytes(p, shape, false) - 1;
    const Refused untraced = refused([&] { m.forward(x, o); });  // the untraced forward should be refused one byte under its estimate
    CHECK(untraced.code == "too_large");
    CHECK(untraced.slot == "x");
    CHECK(untraced.message.find("MiB, over the") != std::string::npos);
  }

  TEST_CASE("a resident trace's estimate bounds the peak of the run and its largest query, and the trace is released with its handle") {
    // GPT-2's head layout at a small size: 4 heads, 96 tokens, so the four (b, H, T, T) stages dominate
    const SlotMap slots = mha(32, 32, 128, 0.0, 4);
    for (const int64_t b : {1, 2}) {
      const Shape shape{b, 96, 32};
      TensorInput x{{static_cast<double>(b), 96, 32}, std::vector<float>(static_cast<size_t>(b * 96 * 32), 0.25f)};
      const double estimate = plan_resident_bytes(plan_forward(config_of("MultiHeadAttention", slots)), shape);
      g_live = 0;
      g_peak = 0;
      g_counting = true;
      {
        Session s;
        const ResidentRun r = s.run_resident("MultiHeadAttention", slots, std::move(x), 123, false);
        CHECK(r.trace.bytes == s.trace_bytes_in_use());
        // the masked scores and the dropout stage are views, with no copy: two of the four stages
        // the rest: scores and weights, the (96, 96) mask, and eight (b, 96, 32)-sized stages (input, q, k, v, context, concat, out_proj, output)
        CHECK(r.trace.bytes == 4.0 * (2 * b * 4 * 96 * 96 + 96 * 96 + 8 * b * 96 * 32));
        const Tensor weights = s.trace_data(r.trace.handle, "attn_weights");  // an export: the largest stage, copied
        CHECK(weights.shape == Shape{b, 4, 96, 96});
        CHECK(s.trace_data(r.trace.handle, "attn_scores_masked").shape == Shape{b, 4, 96, 96});  // a view's export: made from the scores and the mask
        (void)s.trace_heatmap(r.trace.handle, "attn_weights", {0, 3}, 512, 512);
        (void)s.trace_heatmap(r.trace.handle, "attn_scores_masked", {static_cast<double>(b - 1), 3}, 512, 512);
        (void)s.trace_window(r.trace.handle, "attn_weights", {0, 0, 0, 0}, {1, 1, 12, 12});
        (void)s.trace_window(r.trace.handle, "attn_weights_dropout", {0, 0, 0, 0}, {1, 1, 12, 12});
        s.release(r.trace.handle);
        CHECK(s.trace_bytes_in_use() == 0);
      }
      g_counting = false;
      // (the estimate also counts the caller's JS copy of that export, which native code does not make)
      CHECK_MESSAGE(static_cast<double>(g_peak.load()) <= estimate + 9216, "b=" << b << ": peak " << g_peak.load() << " > resident estimate " << estimate);
      CHECK(g_live.load() <= 4096);  // nothing of the trace outlives its release (scratch kept from before may be freed: below 0)
      // and it is well under the estimate of a trace copied out whole (the eager trace's JS copies)
      CHECK(estimate < plan_bytes(plan_forward(config_of("MultiHeadAttention", slots)), shape, true));
    }
  }
}
