// The KV cache (modules.hpp KvCache; the book's ch04/03_kv-cache and ch04/06_swa): a cached forward of
// any chunking equals the uncached forward within 1e-6, for every class with a causal mask.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "attention_lab/modules.hpp"
#include "attention_lab/validator.hpp"
#include "refusal.hpp"

using namespace attention_lab;

namespace {
/// Every class that takes a cache, with small slots: d_in = d_out = 4, 2 heads, context_length 8.
std::vector<ModuleConfig> cached_classes() {
  std::vector<ModuleConfig> out;
  const SlotMap small = {
      {"d_in", SlotValue::integer(4)},      {"d_out", SlotValue::integer(4)},         {"context_length", SlotValue::integer(8)},     {"dropout", SlotValue::floating(0.0)},
      {"num_heads", SlotValue::integer(2)}, {"num_kv_groups", SlotValue::integer(1)}, {"sliding_window_size", SlotValue::integer(3)}};
  for (const ClassSpec& spec : class_specs()) {
    SlotMap config;
    for (const SlotSpec& slot : spec.slots)
      if (small.count(slot.name)) config[slot.name] = small.at(slot.name);
    if (has_error(check_config(spec.name, config))) continue;
    const ModuleConfig c = validated_config(spec.name, config);
    if (AttentionModule(c).caches_keys()) out.push_back(c);
  }
  return out;
}
Tensor rows(const Tensor& x, int64_t first, int64_t count) {  // x (b, T, d) -> (b, count, d) from row `first`
  const int64_t b = x.shape[0], T = x.shape[1], d = x.shape[2];
  Tensor out({b, count, d});
  for (int64_t i = 0; i < b; ++i) std::copy_n(x.data.data() + (i * T + first) * d, count * d, out.data.data() + i * count * d);
  return out;
}
double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape == b.shape);
  double m = 0;
  for (size_t i = 0; i < a.data.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
  return m;
}
/// MultiHeadAttention(d, d, 8, 0.0, num_heads)
ModuleConfig mha(int64_t d, int64_t num_heads) {
  return validated_config("MultiHeadAttention", {{"d_in", SlotValue::integer(d)},
                                                 {"d_out", SlotValue::integer(d)},
                                                 {"context_length", SlotValue::integer(8)},
                                                 {"dropout", SlotValue::floating(0.0)},
                                                 {"num_heads", SlotValue::integer(num_heads)}});
}
/// MultiHeadAttention(4, 4, 8, 0.0, 2)
ModuleConfig small_mha() { return mha(4, 2); }
ForwardOptions eval_with(KvCache* cache, std::vector<Stage>* trace = nullptr) {
  ForwardOptions o;
  o.training = false;
  o.cache = cache;
  o.trace = trace;
  return o;
}
}  // namespace

TEST_CASE("a cached forward of any chunking equals the uncached forward within 1e-6, for every class with a causal mask") {
  const std::vector<ModuleConfig> classes = cached_classes();
  std::vector<std::string> names;
  for (const auto& c : classes) names.push_back(c.class_name());
  // the chapter's causal classes and the bonus ones that mask causally over their own keys
  for (const char* name : {"CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention", "GroupedQueryAttention", "MultiHeadAttentionWithSWA",
                           "MultiHeadAttentionCombinedQKV", "MHAEinsum", "MultiHeadLatentAttention", "GatedMultiHeadAttention"})
    CHECK_MESSAGE(std::count(names.begin(), names.end(), name) == 1, name);
  const Tensor x = seeded_tokens(2 * 8, 4, 7);
  const Tensor batch({2, 8, 4}, x.data);
  for (const ModuleConfig& c : classes) {
    CAPTURE(c.python_call());
    TorchGenerator g(123);
    const AttentionModule m(c, g);
    const Tensor whole = m.forward(batch, eval_with(nullptr));
    for (const std::vector<int64_t>& chunks : std::vector<std::vector<int64_t>>{{8}, {1, 1, 1, 1, 1, 1, 1, 1}, {3, 5}, {2, 3, 3}}) {
      KvCache cache;
      int64_t at = 0;
      for (int64_t n : chunks) {
        const Tensor y = m.forward(rows(batch, at, n), eval_with(&cache));
        CHECK(max_diff(y, rows(whole, at, n)) <= 1e-6);
        at += n;
        CHECK(cache.position == at);
      }
      // the sliding window keeps its last sliding_window_size entries (the book's SWA test: 4 of them there)
      CHECK(cache.entries() == (m.plan().window > 0 ? std::min<int64_t>(8, m.plan().window) : 8));
      if (m.plan().latent_dim > 0) {  // the latent c_kv alone: latent_dim floats per token and batch row
        CHECK(cache.latent.shape == Shape{2, cache.entries(), m.plan().latent_dim});
        CHECK(cache.keys.data.empty());
        CHECK(cache.bytes() == 2.0 * static_cast<double>(cache.entries()) * m.plan().latent_dim * 4);
      } else {
        // (b, kv_heads, capacity, head_dim): entries() rows of each (b, head) from row `first`, the rest room
        CHECK(cache.keys.shape == Shape{2, m.plan().kv_heads, cache.capacity(), m.plan().head_dim});
        CHECK(cache.held == cache.entries());
        CHECK(cache.first + cache.held <= cache.capacity());
        CHECK(cache.bytes() == 2.0 * static_cast<double>(cache.entries()) * 2 * m.plan().kv_heads * m.plan().head_dim * 4);
      }
    }
  }
}

TEST_CASE("a cached step's trace: scores (T_new, T_past + T_new), the mask rows of its positions, cache_k and cache_v beside the chunk's keys") {
  const ModuleConfig c = validated_config("GroupedQueryAttention", {{"d_in", SlotValue::integer(4)},
                                                                    {"d_out", SlotValue::integer(4)},
                                                                    {"dropout", SlotValue::floating(0.0)},
                                                                    {"num_heads", SlotValue::integer(2)},
                                                                    {"num_kv_groups", SlotValue::integer(1)}});
  TorchGenerator g(123);
  const AttentionModule m(c, g);
  const Tensor x({1, 5, 4}, seeded_tokens(5, 4, 3).data);
  KvCache cache;
  m.forward(rows(x, 0, 3), eval_with(&cache));
  std::vector<Stage> trace;
  const Tensor y = m.forward(rows(x, 3, 2), eval_with(&cache, &trace));
  const auto stage = [&](const std::string& id) -> const Stage& {
    const auto it = std::find_if(trace.begin(), trace.end(), [&](const Stage& s) { return s.id == id; });
    REQUIRE(it != trace.end());
    return *it;
  };
  CHECK(stage("attn_scores").tensor.shape == Shape{1, 2, 2, 5});
  CHECK(stage("keys").tensor.shape == Shape{1, 1, 2, 2});     // the chunk's own, one key/value head
  CHECK(stage("cache_k").tensor.shape == Shape{1, 1, 5, 2});  // cached before repeat_interleave
  CHECK(stage("cache_v").tensor.shape == Shape{1, 1, 5, 2});
  CHECK(stage("cache_k").title.find("the 3 held before this chunk, then its 2") != std::string::npos);
  // the chunk's keys are the cache's last rows
  CHECK(std::equal(stage("keys").tensor.data.begin(), stage("keys").tensor.data.end(), stage("cache_k").tensor.data.begin() + 3 * 2));
  // mask rows 3 and 4: position 3 sees keys 0..3, position 4 sees all five
  CHECK(stage("mask").tensor.data == std::vector<float>{0, 0, 0, 0, 1, 0, 0, 0, 0, 0});
  std::vector<std::string> ids;
  for (const Stage& s : trace) ids.push_back(s.id);
  CHECK(std::find(ids.begin(), ids.end(), "cache_k") - ids.begin() == std::find(ids.begin(), ids.end(), "values") - ids.begin() + 1);
  // an uncached forward has no cache stages
  std::vector<Stage> plain;
  m.forward(x, eval_with(nullptr, &plain));
  CHECK(std::none_of(plain.begin(), plain.end(), [](const Stage& s) { return s.id == "cache_k"; }));
}

TEST_CASE("a window cache keeps its last entries: each query sees the window's keys, as gpt_with_kv_cache_optimized.py") {
  const ModuleConfig c = small_mha();
  TorchGenerator g(123);
  const AttentionModule m(c, g);
  const int64_t n = 12, w = 3;
  const Tensor x({1, n, 4}, seeded_tokens(n, 4, 5).data);
  KvCache cache;
  cache.window = w;
  for (int64_t t = 0; t < n; ++t) {  // past context_length: the window shifts the oldest out
    const Tensor y = m.forward(rows(x, t, 1), eval_with(&cache));
    // token t sees positions max(0, t - w + 1) .. t: the last row of an uncached run on those tokens
    const int64_t first = std::max<int64_t>(0, t - w + 1);
    const Tensor ref = m.forward(rows(x, first, t - first + 1), eval_with(nullptr));
    CHECK(max_diff(y, rows(ref, t - first, 1)) <= 1e-6);
    CHECK(cache.entries() == std::min<int64_t>(t + 1, w));
  }
  CHECK(cache.position == n);
  CHECK(refusal([&] { m.forward(rows(x, 0, 4), eval_with(&cache)); }).first == "cache_window");
}

/// The rows a cache holds of `storage` (its keys or values, (b, KV, capacity, hd)): (b, KV, entries, hd).
Tensor held_rows(const KvCache& cache, const Tensor& storage) {
  const int64_t b = storage.shape[0], KV = storage.shape[1], cap = storage.shape[2], hd = storage.shape[3];
  Tensor out({b, KV, cache.held, hd});
  for (int64_t s = 0; s < b * KV; ++s) std::copy_n(storage.data.data() + (s * cap + cache.first) * hd, cache.held * hd, out.data.data() + s * cache.held * hd);
  return out;
}

TEST_CASE("a cache grows in place: a step writes its keys after the held ones, the storage doubles when full, a window's rows move back once") {
  const ModuleConfig c = small_mha();  // context_length 8: a storage never needs more rows
  TorchGenerator g(123);
  const AttentionModule m(c, g);
  const int64_t n = 8;
  const Tensor x({1, n, 4}, seeded_tokens(n, 4, 5).data);
  std::vector<Stage> whole;
  m.forward(x, eval_with(nullptr, &whole));
  const auto stage = [&](const std::string& id) { return std::find_if(whole.begin(), whole.end(), [&](const Stage& s) { return s.id == id; })->tensor; };
  const Tensor keys = stage("keys"), values = stage("values");  // (1, 2, 8, 2): the uncached run's
  const auto first_rows = [](const Tensor& t, int64_t count) {  // (1, 2, count, 2) of (1, 2, 8, 2)
    Tensor out({1, 2, count, 2});
    for (int64_t h = 0; h < 2; ++h) std::copy_n(t.data.data() + h * 8 * 2, count * 2, out.data.data() + h * count * 2);
    return out;
  };
  // token by token: twice the rows needed when full (2, 6, then context_length 8), the same storage between
  KvCache cache;
  std::vector<int64_t> capacities;
  const float* storage = nullptr;
  for (int64_t t = 0; t < n; ++t) {
    m.forward(rows(x, t, 1), eval_with(&cache));
    const bool moved = cache.keys.data.data() != storage;
    CHECK_MESSAGE(moved == (t == 0 || t == 2 || t == 6), "step " << t);
    storage = cache.keys.data.data();
    capacities.push_back(cache.capacity());
    CHECK(cache.first == 0);
    CHECK(held_rows(cache, cache.keys).data == first_rows(keys, t + 1).data);  // bit for bit: the same projection
    CHECK(held_rows(cache, cache.values).data == first_rows(values, t + 1).data);
    CHECK(cache.bytes() == 2.0 * 2 * 2 * static_cast<double>(t + 1) * 4);  // what is held, as PyTorch's cache
    CHECK(cache.allocated_bytes() == 2.0 * 2 * 2 * static_cast<double>(cache.capacity()) * 4);
  }
  CHECK(capacities == std::vector<int64_t>{2, 2, 6, 6, 6, 6, 8, 8});
  // reserved room: the forwards write in place, and the cache never moves
  KvCache reserved;
  reserved.reserve(1, 2, 2, n);
  CHECK(reserved.entries() == 0);
  CHECK(reserved.bytes() == 0);
  CHECK(reserved.allocated_bytes() == 2.0 * 2 * 2 * static_cast<double>(n) * 4);
  storage = reserved.keys.data.data();
  m.forward(rows(x, 0, 3), eval_with(&reserved));
  for (int64_t t = 3; t < n; ++t) m.forward(rows(x, t, 1), eval_with(&reserved));
  CHECK(reserved.keys.data.data() == storage);
  CHECK(reserved.capacity() == n);
  CHECK(held_rows(reserved, reserved.keys).data == keys.data);
  // a window of 3 over 20 tokens: at most twice the window, the last 3 keys held; the held rows move
  // back to row 0 when 3 unused rows lie before them
  const int64_t w = 3, long_n = 20;
  const Tensor xs({1, long_n, 4}, seeded_tokens(long_n, 4, 9).data);
  KvCache window;
  window.window = w;
  for (int64_t t = 0; t < long_n; ++t) {
    m.forward(rows(xs, t, 1), eval_with(&window));
    CHECK(window.capacity() <= 2 * w);
    CHECK(window.first < std::max<int64_t>(window.held, 1));
    Tensor want({1, 2, window.held, 2});  // the keys of tokens t - held + 1 .. t, each its own projection
    for (int64_t i = 0; i < window.held; ++i) {
      std::vector<Stage> one;
      m.forward(rows(xs, t - window.held + 1 + i, 1), eval_with(nullptr, &one));
      const Tensor& k = std::find_if(one.begin(), one.end(), [](const Stage& s) { return s.id == "keys"; })->tensor;  // (1, 2, 1, 2)
      for (int64_t h = 0; h < 2; ++h) std::copy_n(k.data.data() + h * 2, 2, want.data.data() + (h * window.held + i) * 2);
    }
    CHECK(held_rows(window, window.keys).data == want.data);
  }
  CHECK(window.held == w);
}

TEST_CASE("cache refusals name the numbers, and leave the cache as it was") {
  const ModuleConfig c = small_mha();
  TorchGenerator g(123);
  const AttentionModule m(c, g);
  const Tensor x({1, 8, 4}, seeded_tokens(8, 4, 5).data);
  KvCache cache;
  m.forward(x, eval_with(&cache));
  const std::vector<float> held = cache.keys.data;
  try {
    m.forward(rows(x, 0, 1), eval_with(&cache));
    FAIL("a ninth position was accepted");
  } catch (const AttentionError& e) {
    CHECK(e.code() == "cache_full");
    CHECK(e.slot() == "context_length");
    CHECK(std::string(e.what()).find("9 positions, past context_length = 8") != std::string::npos);
  }
  CHECK(cache.position == 8);
  CHECK(cache.keys.data == held);
  const Tensor two({2, 1, 4}, std::vector<float>(8, 0.5f));
  KvCache other;
  m.forward(rows(x, 0, 2), eval_with(&other));
  CHECK(refusal([&] { m.forward(two, eval_with(&other)); }).first == "cache_batch");
  CHECK(other.position == 2);
  // a class without a causal mask over its own keys takes no cache
  TorchGenerator g2(123);
  const AttentionModule v2(validated_config("SelfAttention_v2", {{"d_in", SlotValue::integer(4)}, {"d_out", SlotValue::integer(4)}}), g2);
  CHECK_FALSE(v2.caches_keys());
  KvCache none;
  CHECK(refusal([&] { v2.forward(Tensor({3, 4}), eval_with(&none)); }).first == "cache_unsupported");
}

TEST_CASE("a cache filled by another module (another width, head count or kind) is refused, not read past its end") {
  // MultiHeadAttention(4, 4, 8, 0.0, 2) fills a cache with keys (1, 2, 3, 2) and values alike
  const ModuleConfig mla = validated_config("MultiHeadLatentAttention", {{"d_in", SlotValue::integer(4)},
                                                                         {"d_out", SlotValue::integer(4)},
                                                                         {"dropout", SlotValue::floating(0.0)},
                                                                         {"num_heads", SlotValue::integer(2)},
                                                                         {"latent_dim", SlotValue::integer(3)}});
  TorchGenerator g(123);
  const AttentionModule small(mha(4, 2), g), wide(mha(8, 2), g), one_head(mha(4, 1), g), latent(mla, g);
  const Tensor x({1, 3, 4}, seeded_tokens(3, 4, 5).data);
  KvCache cache, latent_cache;
  small.forward(x, eval_with(&cache));
  latent.forward(x, eval_with(&latent_cache));
  REQUIRE(cache.keys.shape == Shape{1, 2, cache.capacity(), 2});
  REQUIRE(cache.entries() == 3);
  REQUIRE(latent_cache.latent.shape == Shape{1, 3, 3});
  const KvCache before = cache;
  const Tensor x8({1, 1, 8}, std::vector<float>(8, 0.25f));
  const Tensor x4({1, 1, 4}, std::vector<float>(4, 0.25f));
  CHECK(refusal([&] { wide.forward(x8, eval_with(&cache)); }) == std::pair<std::string, std::string>{"cache_module", "cache"});
  CHECK(refusal([&] { one_head.forward(x4, eval_with(&cache)); }) == std::pair<std::string, std::string>{"cache_module", "cache"});
  CHECK(refusal([&] { latent.forward(x4, eval_with(&cache)); }) == std::pair<std::string, std::string>{"cache_module", "cache"});
  CHECK(refusal([&] { small.forward(x4, eval_with(&latent_cache)); }) == std::pair<std::string, std::string>{"cache_module", "cache"});
  try {
    one_head.forward(x4, eval_with(&cache));
  } catch (const AttentionError& e) {
    CHECK(std::string(e.what()) ==
          "this cache holds keys of shape (1, 2, 3, 2), and MultiHeadAttention(4, 4, 8, 0.0, 1) reads keys (b, kv_heads = 1, entries, head_dim = 4): it was "
          "filled by another module");
  }
  // a cache whose values were cut short is not this module's either
  KvCache cut = cache;
  cut.values.data.pop_back();
  CHECK(refusal([&] { small.forward(x4, eval_with(&cut)); }).first == "cache_module");
  // refused caches are left as they were, and their own module goes on with them
  CHECK(cache.position == before.position);
  CHECK(cache.keys.data == before.keys.data);
  CHECK(small.forward(x4, eval_with(&cache)).shape == Shape{1, 1, 4});
  CHECK(cache.position == 4);
}

TEST_CASE("MultiHeadLatentAttention caches the latent c_kv, not keys and values: every step re-projects them from all of it (ch04/05_mla)") {
  // MultiHeadLatentAttention(4, 8, 0.0, 2, latent_dim=3): 3 floats per token against MHA's 2 x 8
  const ModuleConfig c = validated_config("MultiHeadLatentAttention", {{"d_in", SlotValue::integer(4)},
                                                                       {"d_out", SlotValue::integer(8)},
                                                                       {"dropout", SlotValue::floating(0.0)},
                                                                       {"num_heads", SlotValue::integer(2)},
                                                                       {"latent_dim", SlotValue::integer(3)}});
  TorchGenerator g(123);
  const AttentionModule m(c, g);
  const Tensor x({1, 5, 4}, seeded_tokens(5, 4, 3).data);
  std::vector<Stage> whole;
  const Tensor y = m.forward(x, eval_with(nullptr, &whole));
  const auto find = [](const std::vector<Stage>& trace, const std::string& id) -> const Stage& {
    const auto it = std::find_if(trace.begin(), trace.end(), [&](const Stage& s) { return s.id == id; });
    REQUIRE(it != trace.end());
    return *it;
  };
  for (const std::vector<int64_t>& chunks : std::vector<std::vector<int64_t>>{{5}, {1, 1, 1, 1, 1}, {2, 3}, {3, 1, 1}}) {
    KvCache cache;
    int64_t at = 0;
    for (int64_t n : chunks) {
      std::vector<Stage> trace;
      const Tensor part = m.forward(rows(x, at, n), eval_with(&cache, &trace));
      CHECK(max_diff(part, rows(y, at, n)) <= 1e-6);
      at += n;
      // the cache holds c_kv of every token so far, the uncached run's c_kv rows, and nothing else
      CHECK(cache.latent.shape == Shape{1, at, 3});
      CHECK(max_diff(cache.latent, rows(find(whole, "c_kv").tensor, 0, at)) <= 1e-6);
      CHECK(cache.keys.data.empty());
      CHECK(cache.values.data.empty());
      CHECK(cache.bytes() == 3.0 * 4 * static_cast<double>(at));  // latent_dim x 4 bytes per token
      // the trace: the chunk's c_kv, the cached latent as the cache stage, keys re-projected from all of it
      CHECK(find(trace, "c_kv").tensor.shape == Shape{1, n, 3});
      const Stage& held = find(trace, "cache_c_kv");
      CHECK(held.tensor.shape == Shape{1, at, 3});
      CHECK(held.axes == std::vector<std::string>{"b", "key", "latent_dim"});
      CHECK(held.title.find("the " + std::to_string(at - n) + " rows held before this chunk, then its " + std::to_string(n)) != std::string::npos);
      CHECK(find(trace, "keys").tensor.shape == Shape{1, 2, at, 4});
      CHECK(find(trace, "keys").formula.rfind("keys = W_UK(cache_c_kv)", 0) == 0);
      // re-projected keys and values: the uncached run's first `at` rows of each head
      for (const char* id : {"keys", "values"}) {
        const Tensor& all = find(whole, id).tensor;  // (1, 2, 5, 4)
        Tensor first({1, 2, at, 4});
        for (int64_t h = 0; h < 2; ++h) std::copy_n(all.data.data() + h * 5 * 4, at * 4, first.data.data() + h * at * 4);
        CHECK(max_diff(find(trace, id).tensor, first) <= 1e-6);
      }
      CHECK(find(trace, "attn_scores").tensor.shape == Shape{1, 2, n, at});
      CHECK(std::none_of(trace.begin(), trace.end(), [](const Stage& s) { return s.id == "cache_k" || s.id == "cache_v"; }));
    }
  }
  // a window keeps the last latent rows: 2 of them, 2 x 3 floats
  KvCache window;
  window.window = 2;
  for (int64_t t = 0; t < 5; ++t) m.forward(rows(x, t, 1), eval_with(&window));
  CHECK(window.latent.shape == Shape{1, 2, 3});
  CHECK(max_diff(window.latent, rows(find(whole, "c_kv").tensor, 3, 2)) <= 1e-6);
  CHECK(window.bytes() == 2.0 * 3 * 4);
  // an uncached trace has c_kv and no cache stage
  CHECK(std::none_of(whole.begin(), whole.end(), [](const Stage& s) { return s.id == "cache_c_kv"; }));
}

TEST_CASE("a cached forward that overflows warns once and keeps its chunk once: the traced rerun sees the cache as it was") {
  TorchGenerator g(123);
  const AttentionModule m(small_mha(), g);
  Tensor x({1, 3, 4}, seeded_tokens(3, 4, 5).data);
  for (float& v : x.data) v *= 1e20f;  // finite tokens whose scores overflow float32
  for (const bool grown : {false, true}) {
    KvCache cache;
    if (!grown) cache.reserve(1, 2, 2, 8);  // the chunk's rows go into room the cache already has
    std::vector<Diagnostic> warnings;
    ForwardOptions o = eval_with(&cache);
    o.warnings = &warnings;
    m.forward(rows(x, 0, 2), o);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].code == "non_finite_stage");
    CHECK(cache.position == 2);  // the rerun appended nothing
    CHECK(cache.entries() == 2);
    // the next chunk follows them: three rows held, the third at position 2
    warnings.clear();
    m.forward(rows(x, 2, 1), o);
    CHECK(cache.position == 3);
    CHECK(cache.entries() == 3);
  }
}
