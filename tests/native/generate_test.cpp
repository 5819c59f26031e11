// GPT-2 generation (gpt2.hpp: Gpt2Generation, gpt2_pick_token) and torch.multinomial on the generator:
// the book's chapter 5 toy, the draws each call consumes, and a tiny GPT-2 whose cached, uncached,
// resident and re-read generations agree with each other and with the whole-model run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "attention_lab/gpt2.hpp"
#include "attention_lab/session.hpp"
#include "gpt2_layout.hpp"
#include "refusal.hpp"

using namespace attention_lab;

namespace {
/// The book's chapter 5 toy: softmax of its next-token logits over a 9-word vocabulary.
std::vector<float> toy_probs(float temperature = 1.0f) {
  std::vector<float> z = {4.51f, 0.89f, -1.90f, 6.75f, 1.63f, -1.62f, -1.89f, 6.28f, 1.79f};
  for (float& v : z) v = v / temperature;
  ops::softmax_rows(z.data(), 1, static_cast<int64_t>(z.size()));
  return z;
}

/// A GPT-2 file in the real layout, F32, every value seeded uniform (small, so the heads are not flat).
struct TinyGpt2 {
  std::vector<uint8_t> bytes;
  std::shared_ptr<SafetensorsHeader> header;
  Gpt2Config config;
};
TinyGpt2 tiny_gpt2(int64_t d = 8, int64_t layers = 2, int64_t n_ctx = 12, int64_t vocab = 40) {
  std::vector<std::pair<std::string, Shape>> keys = {{"wte.weight", {vocab, d}}, {"wpe.weight", {n_ctx, d}}};
  for (int64_t L = 0; L < layers; ++L) {
    const std::string p = "h." + std::to_string(L) + ".";
    for (const auto& [k, s] : gpt2_block_shapes(d)) keys.push_back({p + k, s});
  }
  keys.push_back({"ln_f.weight", {d}});
  keys.push_back({"ln_f.bias", {d}});
  TorchGenerator g(99);
  std::string json = "{";
  std::vector<float> data;
  for (const auto& [k, s] : keys) {
    int64_t n = 1;
    for (const int64_t x : s) n *= x;
    const size_t begin = data.size() * 4;
    const bool scale = k.find("ln_") != std::string::npos && k.find(".weight") != std::string::npos;
    for (int64_t i = 0; i < n; ++i) data.push_back((g.random_float() - 0.5f) * 1.5f + (scale ? 1.0f : 0.0f));
    json += (json.size() > 1 ? "," : "") + std::string("\"") + k + "\":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t i = 0; i < s.size(); ++i) json += (i ? "," : "") + std::to_string(s[i]);
    json += "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(data.size() * 4) + "]}";
  }
  json += ",\"__metadata__\":{\"n_head\":\"2\"}}";
  while (json.size() % 8) json += ' ';
  TinyGpt2 t;
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) t.bytes.push_back(static_cast<uint8_t>(n >> (8 * i)));
  t.bytes.insert(t.bytes.end(), json.begin(), json.end());
  const size_t at = t.bytes.size();
  t.bytes.resize(at + data.size() * 4);
  std::memcpy(t.bytes.data() + at, data.data(), data.size() * 4);
  t.header = std::make_shared<SafetensorsHeader>(parse_safetensors_header(t.bytes.data() + 8, json.size(), t.bytes.size()));
  t.config = gpt2_config(*t.header);
  return t;
}

/// The bytes of reads the session names (FileRead: absolute offsets), by name.
std::map<std::string, std::vector<uint8_t>> bytes_for(const TinyGpt2& t, const std::vector<FileRead>& reads) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const FileRead& r : reads) out[r.name] = std::vector<uint8_t>(t.bytes.begin() + static_cast<std::ptrdiff_t>(r.begin), t.bytes.begin() + static_cast<std::ptrdiff_t>(r.end));
  return out;
}

std::map<std::string, std::vector<uint8_t>> bytes_for(const TinyGpt2& t, const std::vector<ByteRead>& reads) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto& r : reads) {
    const size_t b = static_cast<size_t>(t.header->data_start() + r.entry.begin), e = static_cast<size_t>(t.header->data_start() + r.entry.end);
    out[r.name] = std::vector<uint8_t>(t.bytes.begin() + static_cast<std::ptrdiff_t>(b), t.bytes.begin() + static_cast<std::ptrdiff_t>(e));
  }
  return out;
}

struct Generated {
  std::vector<int64_t> ids;
  std::vector<Gpt2Step> steps;
  int64_t reads = 0;  // how many byte ranges were read
  bool eos = false;
};
Generated generate(const TinyGpt2& t, std::vector<int64_t> prompt, const Gpt2GenerateOptions& o, TorchGenerator* g = nullptr) {
  Gpt2Generation gen(*t.header, t.config, std::move(prompt), o);
  Generated out;
  while (!gen.finished()) {
    const auto reads = gen.reads();
    out.reads += static_cast<int64_t>(reads.size());
    if (auto s = gen.step(bytes_for(t, reads), g)) out.steps.push_back(*s);
  }
  out.ids = gen.token_ids();
  out.eos = gen.stopped_by_eos();
  return out;
}

std::vector<float> run_logits(const TinyGpt2& t, const std::vector<int64_t>& ids) {
  Gpt2Run run(*t.header, t.config, ids);
  while (!run.finished()) run.step(bytes_for(t, run.reads()));
  return run.last_logits();
}

/// The uncached traced forward's attn_weights of every layer on `ids`: (1, n_head, T, T) each.
std::vector<Tensor> run_attention(const TinyGpt2& t, const std::vector<int64_t>& ids) {
  Gpt2Run run(*t.header, t.config, ids);
  std::vector<Tensor> out;
  while (!run.finished())
    if (Gpt2Run::Step s = run.step(bytes_for(t, run.reads())); s.block) out.push_back(std::move(s.block->attn_weights));
  return out;
}

}  // namespace

TEST_CASE("torch.multinomial(probs, 1) on the book's toy: torch.manual_seed(123), 1,000 draws at temperature 1 give the book's counts") {
  TorchGenerator g(123);
  const std::vector<float> p = toy_probs();
  std::vector<int> counts(9, 0);
  for (int i = 0; i < 1000; ++i) ++counts[static_cast<size_t>(g.multinomial_one(p.data(), 9))];
  CHECK(counts == std::vector<int>{73, 0, 0, 582, 2, 0, 0, 343, 0});  // ch05: print_sampled_tokens(probas), PyTorch 1.13 too
}

TEST_CASE("multinomial consumes two 32-bit draws per probability, zeros included (torch.get_rng_state's position moves by 2 n)") {
  TorchGenerator g(5), h(5);
  std::vector<float> p = toy_probs(0.1f);
  p[1] = 0.0f;
  g.multinomial_one(p.data(), 9);
  for (int i = 0; i < 18; ++i) h.random();
  CHECK(g.state() == h.state());
  CHECK(g.state().back() == 18);  // PyTorch 1.13 after torch.manual_seed(5) and one multinomial over 9: next = 18 (measured)
  // a probability of 0 is never picked
  TorchGenerator z(1);
  std::vector<float> one = {0.0f, 1.0f, 0.0f};
  for (int i = 0; i < 200; ++i) CHECK(z.multinomial_one(one.data(), 3) == 1);
}

TEST_CASE("gpt2_pick_token: greedy takes the first maximum and draws nothing; top-k keeps ties with the k-th; sampling draws 2 x vocab") {
  TorchGenerator g(7);
  const auto before = g.state();
  const Gpt2Step s = gpt2_pick_token({1.0f, 3.0f, 3.0f, -2.0f}, 0.0, std::nullopt, &g);
  CHECK(s.token == 1);
  CHECK(g.state() == before);
  CHECK(s.top.size() == 4);
  CHECK(s.top[0].first == 1);
  CHECK(s.top[1].first == 2);
  // top_k 2 over {5, 4, 4, 1}: the k-th largest is 4, both 4s stay, 1 becomes -inf (probability 0)
  const Gpt2Step k = gpt2_pick_token({5.0f, 4.0f, 4.0f, 1.0f}, 1.0, 2, &g);
  CHECK(k.top[3].first == 3);
  CHECK(k.top[3].second == 0.0);
  CHECK(k.top[1].second > 0.0);
  CHECK(k.top[2].second > 0.0);
  TorchGenerator h(7);
  for (int i = 0; i < 8; ++i) h.random();
  CHECK(g.state() == h.state());
}

TEST_CASE("a temperature so near 0 that logits / temperature overflow float32 is named as typed (1e-40, not 0.000000)") {
  TorchGenerator g(7);
  const Refused overflow = refused([&] { gpt2_pick_token({1.0f, 3.0f, 2.0f}, 1e-40, std::nullopt, &g); });
  CHECK(overflow.said() == "non_finite_probabilities [temperature] the probabilities are not finite at temperature 1e-40: logits / temperature overflow float32 (past ~3.4e38)");
  CHECK(gpt2_pick_token({1.0f, 3.0f, 2.0f}, 1e-3, std::nullopt, &g).token == 1);  // small but finite: the largest logit, nearly surely
}

TEST_CASE("a GPT-2 model's counts are whole numbers, refused by name with the value as typed: estimate's num_tokens, generate's options") {
  const TinyGpt2 t = tiny_gpt2();
  Session s;
  const OpenedFile f = s.checkpoint_open(std::vector<uint8_t>(t.bytes.begin() + 8, t.bytes.begin() + static_cast<std::ptrdiff_t>(t.header->data_start())), t.bytes.size());
  const OpenedModel m = s.gpt2_open(f.handle, {});
  const std::string n_ctx = std::to_string(m.config.n_ctx);
  CHECK(refused([&] { s.gpt2_estimate(m.handle, NAN, "full"); }).said() == "run_option [num_tokens] num_tokens must be a whole number from 1 to " + n_ctx + ", got NaN");
  CHECK(refused([&] { s.gpt2_estimate(m.handle, 1.5, "full"); }).said() == "run_option [num_tokens] num_tokens must be a whole number from 1 to " + n_ctx + ", got 1.5");
  CHECK(refused([&] { s.gpt2_estimate(m.handle, m.config.n_ctx + 1, "full"); }).said().rfind("run_option [num_tokens]", 0) == 0);
  CHECK(s.gpt2_estimate(m.handle, 3, "full") > 0);
  const GenerateOptionsInput half{NumberOption::of(2.5), {}, {}, {}, {}, {}, {}, {}};
  CHECK(refused([&] { s.gpt2_generate(m.handle, {1}, half, 0); }).said() == "generate_option [maxNewTokens] maxNewTokens must be a whole number from 1, got 2.5");
  const GenerateOptionsInput text{NumberOption::text(), {}, {}, {}, {}, {}, {}, {}};
  CHECK(refused([&] { s.gpt2_generate(m.handle, {1}, text, 0); }).said() == "generate_option [maxNewTokens] maxNewTokens must be a whole number from 1, got a string");
  const GenerateOptionsInput yes{NumberOption::of_bool(true), {}, {}, {}, {}, {}, {}, {}};
  CHECK(refused([&] { s.gpt2_generate(m.handle, {1}, yes, 0); }).said() == "generate_option [maxNewTokens] maxNewTokens must be a whole number from 1, got a boolean");
  const GenerateOptionsInput numeric_cache{NumberOption::of(2), {}, {}, {}, NumberOption::of(1), {}, {}, {}};
  CHECK(refused([&] { s.gpt2_generate(m.handle, {1}, numeric_cache, 0); }).said() == "generate_option [cache] cache must be true or false, got a number");
  const GenerateOptionsInput boolean_temperature{NumberOption::of(2), NumberOption::of_bool(false), {}, {}, {}, {}, {}, {}};
  CHECK(refused([&] { s.gpt2_generate(m.handle, {1}, boolean_temperature, 0); }).said() == "generate_option [temperature] temperature must be a number, got a boolean");
  // each refusal says what to pass instead
  CHECK(refused([&] { s.gpt2_generate(m.handle, {1}, half, 0); }).hint == "Pass a whole number, for example {maxNewTokens: 20}.");
  CHECK(refused([&] { s.gpt2_generate(m.handle, {1}, text, 0); }).hint == "Pass a whole number, for example {maxNewTokens: 20}.");
  CHECK(refused([&] { s.gpt2_generate(m.handle, {1}, numeric_cache, 0); }).hint == "Pass {cache: true} or {cache: false}, or leave cache out.");
  const GenerateOptionsInput zero_top_k{NumberOption::of(2), {}, NumberOption::of(0), {}, {}, {}, {}, {}};
  CHECK(refused([&] { s.gpt2_generate(m.handle, {1}, zero_top_k, 0); }).hint == "Pass a whole number, for example {topK: 50}.");
}

TEST_CASE("a tiny GPT-2 generates greedily: cached = uncached = resident = re-read, and the first token is the whole-model run's argmax") {
  const TinyGpt2 t = tiny_gpt2();
  const std::vector<int64_t> prompt = {3, 17, 5, 9};
  Gpt2GenerateOptions o;
  o.max_new_tokens = 6;
  const Generated cached = generate(t, prompt, o);
  o.cache = false;
  const Generated uncached = generate(t, prompt, o);
  o.resident = false;
  const Generated reread = generate(t, prompt, o);
  o.cache = true;
  const Generated cached_reread = generate(t, prompt, o);
  REQUIRE(cached.ids.size() == 10);
  CHECK(cached.ids == uncached.ids);
  CHECK(cached.ids == reread.ids);
  CHECK(cached.ids == cached_reread.ids);
  CHECK(cached.reads < cached_reread.reads);  // resident: the blocks and wte were read once
  CHECK(cached.steps[2].cache_tokens == 6);   // 4 prompt positions + 2 fed back
  CHECK(cached.steps[2].cache_bytes == 2.0 * 4 * 2 * 6 * 8);
  CHECK(uncached.steps[2].cache_tokens == 0);
  // every step's token is the argmax of the whole model run on the ids so far
  for (size_t i = 0; i < cached.steps.size(); ++i) {
    const std::vector<int64_t> so_far(cached.ids.begin(), cached.ids.begin() + static_cast<std::ptrdiff_t>(prompt.size() + i));
    const std::vector<float> z = run_logits(t, so_far);
    CHECK(cached.steps[i].token == std::max_element(z.begin(), z.end()) - z.begin());
  }
}

TEST_CASE("without the cache the context is cropped to n_ctx as the book's generate does; with it, past n_ctx is refused naming both") {
  const TinyGpt2 t = tiny_gpt2();  // n_ctx 12
  Gpt2GenerateOptions o;
  o.max_new_tokens = 10;
  o.cache = false;
  const Generated g = generate(t, {1, 2, 3, 4, 5, 6, 7, 8}, o);  // 17 > 12 positions: cropped
  CHECK(g.ids.size() == 18);
  const std::vector<int64_t> last(g.ids.end() - 13, g.ids.end() - 1);  // the step that made the last token saw its last 12 ids
  const std::vector<float> z = run_logits(t, last);
  CHECK(g.ids.back() == std::max_element(z.begin(), z.end()) - z.begin());
  o.cache = true;
  CHECK(refusal([&] { Gpt2Generation(*t.header, t.config, {1, 2, 3, 4, 5, 6, 7, 8}, o); }) == std::pair<std::string, std::string>{"cache_context", "maxNewTokens"});
  o.max_new_tokens = 5;  // 8 + 5 - 1 = 12 positions: fits
  CHECK(generate(t, {1, 2, 3, 4, 5, 6, 7, 8}, o).ids.size() == 13);
}

TEST_CASE("sampling: the same seed gives the same tokens cached or not, eos stops before appending, and the generator moves 2 x vocab per token") {
  const TinyGpt2 t = tiny_gpt2();
  Gpt2GenerateOptions o;
  o.max_new_tokens = 8;
  o.temperature = 1.5;
  o.top_k = 20;
  TorchGenerator a(123), b(123);
  const Generated x = generate(t, {3, 17}, o, &a);
  o.cache = false;
  const Generated y = generate(t, {3, 17}, o, &b);
  CHECK(x.ids == y.ids);
  CHECK(a.state() == b.state());
  TorchGenerator c(123);
  for (int i = 0; i < 8 * 2 * 40; ++i) c.random();
  CHECK(a.state() == c.state());
  // eos: the first sampled token that is eos stops the generation; it is not appended, its draws are spent
  o.cache = true;
  o.eos_id = x.ids[4];
  TorchGenerator e(123);
  const Generated z = generate(t, {3, 17}, o, &e);
  CHECK(z.eos);
  const auto first = std::find(x.ids.begin() + 2, x.ids.end(), *o.eos_id) - x.ids.begin();
  CHECK(z.ids == std::vector<int64_t>(x.ids.begin(), x.ids.begin() + first));
  TorchGenerator f(123);
  for (int64_t i = 0; i < (first - 1) * 2 * 40; ++i) f.random();
  CHECK(e.state() == f.state());
  // a temperature above 0 needs a generator
  CHECK(refusal([&] { generate(t, {3}, o, nullptr); }).first == "generator");
}

TEST_CASE("generate's options are checked by name through the session") {
  const TinyGpt2 t = tiny_gpt2();
  Session s;
  const OpenedFile f = s.checkpoint_open(std::vector<uint8_t>(t.bytes.begin() + 8, t.bytes.begin() + static_cast<std::ptrdiff_t>(t.header->data_start())), t.bytes.size());
  const OpenedModel m = s.gpt2_open(f.handle, {});
  const auto opts = [](NumberOption max_new, NumberOption temp = {}, NumberOption k = {}, NumberOption eos = {}, NumberOption cache = {}) {
    return GenerateOptionsInput{max_new, temp, k, eos, cache, {}, {}, {}};
  };
  CHECK(refusal([&] { s.gpt2_generate(m.handle, {1}, opts({}), 0); }) == std::pair<std::string, std::string>{"generate_option", "maxNewTokens"});
  CHECK(refusal([&] { s.gpt2_generate(m.handle, {1}, opts(NumberOption::of(0)), 0); }) == std::pair<std::string, std::string>{"generate_option", "maxNewTokens"});
  CHECK(refusal([&] { s.gpt2_generate(m.handle, {1}, opts(NumberOption::of(2), NumberOption::of(-1)), 0); }) ==
        std::pair<std::string, std::string>{"generate_option", "temperature"});
  CHECK(refusal([&] { s.gpt2_generate(m.handle, {1}, opts(NumberOption::of(2), NumberOption::text()), 0); }) ==
        std::pair<std::string, std::string>{"generate_option", "temperature"});
  CHECK(refusal([&] { s.gpt2_generate(m.handle, {1}, opts(NumberOption::of(2), {}, NumberOption::of(41)), 0); }) == std::pair<std::string, std::string>{"generate_option", "topK"});
  CHECK(refusal([&] { s.gpt2_generate(m.handle, {1}, opts(NumberOption::of(2), {}, {}, NumberOption::of(1.5)), 0); }) ==
        std::pair<std::string, std::string>{"generate_option", "eosId"});
  CHECK(refusal([&] { s.gpt2_generate(m.handle, {1}, opts(NumberOption::of(2), {}, {}, {}, NumberOption::of(1)), 0); }) ==
        std::pair<std::string, std::string>{"generate_option", "cache"});
  CHECK(refusal([&] { s.gpt2_generate(m.handle, {40}, opts(NumberOption::of(2)), 0); }) == std::pair<std::string, std::string>{"checkpoint_token", "tokens"});
  CHECK(refusal([&] { s.gpt2_generate(m.handle, {1}, opts(NumberOption::of(2)), 1000); }).first == "too_large");
  const GenerateStart g = s.gpt2_generate(m.handle, {1, 2}, opts(NumberOption::of(2)), 0);
  CHECK(g.resident);
  int tokens = 0;
  for (bool done = false; !done;) {
    std::map<std::string, std::vector<uint8_t>> buffers;
    for (const FileRead& r : s.gpt2_reads(m.handle))
      buffers[r.name] = std::vector<uint8_t>(t.bytes.begin() + static_cast<std::ptrdiff_t>(r.begin), t.bytes.begin() + static_cast<std::ptrdiff_t>(r.end));
    const GenerateStepResult r = s.gpt2_generate_step(m.handle, 0, buffers);
    tokens += r.token ? 1 : 0;
    done = r.finished;
  }
  CHECK(tokens == 2);
  CHECK(refusal([&] { s.gpt2_reads(m.handle); }).first == "not_in_progress");  // finished: ended
}

TEST_CASE("with attention on, each step's rows are the last row of the uncached traced forward's attn_weights, per layer and head, cached or not") {
  const TinyGpt2 t = tiny_gpt2();  // 2 layers x 2 heads, n_ctx 12
  const std::vector<int64_t> prompt = {3, 17, 5, 9};
  Gpt2GenerateOptions o;
  o.max_new_tokens = 5;
  CHECK(generate(t, prompt, o).steps[0].attention.empty());  // off by default: nothing kept or copied
  const double without = gpt2_generation_bytes(t.config, 4, o, true);
  o.attention = true;
  // counted: the kept rows (capacity 8 keys per layer and head) and the caller's rows (4 + 5 + 6 + 7 + 8
  // keys), plus one step's copy (8 keys) where picking a token is the peak
  const double more = gpt2_generation_bytes(t.config, 4, o, true) - without;
  CHECK(more >= 4.0 * 2 * 2 * (8 + 30));
  CHECK(more <= 4.0 * 2 * 2 * (8 + 30 + 8));
  for (const bool cache : {true, false}) {
    o.cache = cache;
    const Generated g = generate(t, prompt, o);
    REQUIRE(g.steps.size() == 5);
    double worst = 0;
    for (size_t i = 0; i < g.steps.size(); ++i) {
      const int64_t T = static_cast<int64_t>(prompt.size() + i);  // the token was read at position T - 1
      const Gpt2Step& s = g.steps[i];
      REQUIRE(s.attention_keys == T);
      REQUIRE(s.attention.size() == static_cast<size_t>(2 * 2 * T));
      const std::vector<Tensor> ref = run_attention(t, std::vector<int64_t>(g.ids.begin(), g.ids.begin() + T));
      for (int64_t L = 0; L < 2; ++L)
        for (int64_t hh = 0; hh < 2; ++hh) {
          double sum = 0;
          for (int64_t j = 0; j < T; ++j) {
            const float got = s.attention[static_cast<size_t>((L * 2 + hh) * T + j)];
            const float want = ref[static_cast<size_t>(L)].data[static_cast<size_t>((hh * T + (T - 1)) * T + j)];  // (1, H, T, T)[0, hh, T - 1, j]
            worst = std::max(worst, static_cast<double>(std::fabs(got - want)));
            sum += got;
          }
          CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));  // a softmax row
        }
    }
    // float32, the same math through another kernel (packed gemm vs the module's forward): within 1e-6 absolute
    CHECK(worst <= 1e-6);
  }
  // cropped without the cache: the row covers the n_ctx positions the forward saw
  o.cache = false;
  o.max_new_tokens = 10;
  const Generated c = generate(t, {1, 2, 3, 4, 5, 6, 7, 8}, o);
  CHECK(c.steps.back().attention_keys == 12);
  CHECK(c.steps.back().attention.size() == static_cast<size_t>(2 * 2 * 12));
}

TEST_CASE("a window cache (gpt_with_kv_cache_optimized.py's kv_window_size) holds at most `window` positions; one holding them all changes nothing") {
  const TinyGpt2 t = tiny_gpt2();  // n_ctx 12
  const std::vector<int64_t> prompt = {3, 17, 5};
  Gpt2GenerateOptions o;
  o.max_new_tokens = 9;  // 3 + 9 - 1 = 11 positions
  const Generated plain = generate(t, prompt, o);
  o.window = 11;  // every position fits: the same tokens
  const Generated all = generate(t, prompt, o);
  CHECK(all.ids == plain.ids);
  o.window = 4;
  const Generated w = generate(t, prompt, o);
  REQUIRE(w.steps.size() == 9);
  for (size_t i = 0; i < w.steps.size(); ++i) {
    CHECK(w.steps[i].cache_tokens == std::min<int64_t>(4, 3 + static_cast<int64_t>(i)));  // the prefill's 3, then one more per token up to the window
    CHECK(w.steps[i].cache_bytes == 2.0 * 4 * 2 * static_cast<double>(w.steps[i].cache_tokens) * 8);
  }
  // up to the token whose forward first shifts an entry out, the window sees what the full cache sees
  CHECK(std::equal(w.ids.begin(), w.ids.begin() + 5, plain.ids.begin()));
  // with the attention rows: each covers the keys the window held, and is a softmax row
  o.attention = true;
  const Generated rows = generate(t, prompt, o);
  CHECK(rows.ids == w.ids);
  for (const Gpt2Step& s : rows.steps) {
    REQUIRE(s.attention_keys == s.cache_tokens);
    REQUIRE(s.attention.size() == static_cast<size_t>(2 * 2 * s.cache_tokens));
    for (int64_t r = 0; r < 4; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < s.attention_keys; ++j) sum += s.attention[static_cast<size_t>(r * s.attention_keys + j)];
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
    }
  }
  o.attention = false;
  // resident or re-read, the window gives the same tokens
  o.resident = false;
  CHECK(generate(t, prompt, o).ids == w.ids);
  // the estimate counts the window's entries (at most min(window, positions)): 2 x n_layer x window x n_embd floats and more
  Gpt2GenerateOptions small = o, big = o;
  small.window = 4;
  big.window = 12;
  CHECK(gpt2_generation_bytes(t.config, 3, big, false) - gpt2_generation_bytes(t.config, 3, small, false) >= 4.0 * 2 * 2 * (12 - 4) * 8);
}

TEST_CASE("a window bounds the keys held, not the positions: past n_ctx is refused naming both; the prompt must fit the window") {
  const TinyGpt2 t = tiny_gpt2();  // n_ctx 12
  Gpt2GenerateOptions o;
  o.max_new_tokens = 10;
  o.window = 4;
  const Refused past_n_ctx = refused([&] { Gpt2Generation(*t.header, t.config, {1, 2, 3, 4}, o); });  // 4 + 10 - 1 = 13 positions, wpe has 12 rows
  CHECK(past_n_ctx.code == "cache_context");
  CHECK(past_n_ctx.slot == "maxNewTokens");
  CHECK(past_n_ctx.message.find("13 positions") != std::string::npos);
  CHECK(past_n_ctx.message.find("n_ctx is 12") != std::string::npos);
  CHECK(past_n_ctx.message.find("a window bounds the keys held, not the positions") != std::string::npos);
  o.max_new_tokens = 9;  // 12 positions: fits
  CHECK(generate(t, {1, 2, 3, 4}, o).ids.size() == 13);
  const Refused long_prompt = refused([&] { Gpt2Generation(*t.header, t.config, {1, 2, 3, 4, 5}, o); });
  CHECK(long_prompt.code == "cache_window");
  CHECK(long_prompt.slot == "window");
  CHECK(long_prompt.message.find("5 tokens") != std::string::npos);
  CHECK(long_prompt.message.find("window of 4") != std::string::npos);
  o.window = 13;
  CHECK(refusal([&] { Gpt2Generation(*t.header, t.config, {1}, o); }) == std::pair<std::string, std::string>{"generate_option", "window"});
  o.window = 4;
  o.cache = false;
  CHECK(refusal([&] { Gpt2Generation(*t.header, t.config, {1}, o); }) == std::pair<std::string, std::string>{"generate_option", "window"});
  // through the session: window is read by name
  Session s;
  const OpenedFile f = s.checkpoint_open(std::vector<uint8_t>(t.bytes.begin() + 8, t.bytes.begin() + static_cast<std::ptrdiff_t>(t.header->data_start())), t.bytes.size());
  const OpenedModel m = s.gpt2_open(f.handle, {});
  CHECK(refusal([&] {
          s.gpt2_generate(m.handle, {1}, GenerateOptionsInput{NumberOption::of(2), {}, {}, {}, {}, {}, NumberOption::of(0), {}}, 0);
        }) == std::pair<std::string, std::string>{"generate_option", "window"});
  CHECK(s.gpt2_generate(m.handle, {1, 2}, GenerateOptionsInput{NumberOption::of(2), {}, {}, {}, {}, {}, NumberOption::of(2), {}}, 0).resident);
}

TEST_CASE("a step of a GPT-2 run or generation with none in progress is not_in_progress, saying what to start") {
  const TinyGpt2 t = tiny_gpt2();
  Session s;
  const OpenedFile f = s.checkpoint_open(std::vector<uint8_t>(t.bytes.begin() + 8, t.bytes.begin() + static_cast<std::ptrdiff_t>(t.header->data_start())), t.bytes.size());
  const OpenedModel m = s.gpt2_open(f.handle, {});
  CHECK(refusal_text([&] { s.gpt2_run_step(m.handle, {}); }) == "not_in_progress [] no run of this model is in progress | Start one with model.run.");
  CHECK(refusal_text([&] { s.gpt2_reads(m.handle); }) == "not_in_progress [] no run or generation of this model is in progress | Start one with model.run or model.generate.");
  CHECK(refusal_text([&] { s.gpt2_generate_step(m.handle, 0, {}); }) == "not_in_progress [] no generation is in progress | Start one with model.generate.");
  // a run started and stepped to its end is ended by its last step; a generation started ends the run in progress
  s.gpt2_run(m.handle, {3, 17}, "full", {}, 0);
  while (!s.gpt2_run_step(m.handle, bytes_for(t, s.gpt2_reads(m.handle))).finished) {}
  CHECK(refusal_text([&] { s.gpt2_run_step(m.handle, {}); }) == "not_in_progress [] no run of this model is in progress | Start one with model.run.");
  s.gpt2_run(m.handle, {3, 17}, "full", {}, 0);
  s.gpt2_generate(m.handle, {3}, GenerateOptionsInput{NumberOption::of(1), {}, {}, {}, {}, {}, {}, {}}, 0);
  CHECK(refusal_text([&] { s.gpt2_run_step(m.handle, {}); }) == "not_in_progress [] no run of this model is in progress | Start one with model.run.");
  Gpt2Run run(*t.header, t.config, {3, 17});
  while (!run.finished()) run.step(bytes_for(t, run.reads()));
  CHECK(refusal_text([&] { run.step({}); }) == "not_in_progress [] the run is finished | Start another with model.run.");
  CHECK(run.reads().empty());
  Gpt2GenerateOptions o;
  o.max_new_tokens = 1;
  Gpt2Generation gen(*t.header, t.config, {3, 17}, o);
  while (!gen.finished()) gen.step(bytes_for(t, gen.reads()), nullptr);
  CHECK(refusal_text([&] { gen.step(bytes_for(t, gen.reads()), nullptr); }) == "not_in_progress [] the generation is finished | Start another with model.generate.");
}

TEST_CASE("a run through the session reads wte in chunks of 4,096 rows: a 5,000-token vocabulary is rows 0 and 4096, equal to the run's logits") {
  const TinyGpt2 t = tiny_gpt2(8, 1, 12, kGpt2LogitsChunkRows + 904);
  Session s;
  const OpenedFile f = s.checkpoint_open(std::vector<uint8_t>(t.bytes.begin() + 8, t.bytes.begin() + static_cast<std::ptrdiff_t>(t.header->data_start())), t.bytes.size());
  const OpenedModel m = s.gpt2_open(f.handle, {});
  const std::vector<int64_t> ids = {3, 4097, 5};
  CHECK(s.gpt2_run(m.handle, {3, 4097, 5}, "full", {}, 0));
  std::vector<std::vector<FileRead>> reads;
  std::vector<std::string> steps;
  RunStepResult last;
  do {
    reads.push_back(s.gpt2_reads(m.handle));
    last = s.gpt2_run_step(m.handle, bytes_for(t, reads.back()));
    steps.push_back(last.step + (last.layer ? std::to_string(static_cast<int>(*last.layer)) : "") + " " + std::to_string(static_cast<int>(last.done)) + "/" +
                    std::to_string(static_cast<int>(last.total)));
  } while (!last.finished);
  // the embedding, block 0, ln_f and two chunks of wte; onProgress hears of three
  CHECK(steps == std::vector<std::string>{"embedding 1/3", "block0 2/3", " 2/3", " 2/3", "logits 3/3"});
  REQUIRE(reads.size() == 5);
  REQUIRE(reads[3].size() == 1);
  CHECK(reads[3][0].name == "wte.weight[0:4096]");
  REQUIRE(reads[4].size() == 1);
  CHECK(reads[4][0].name == "wte.weight[4096:5000]");
  CHECK(reads[4][0].end - reads[4][0].begin == 904.0 * 8 * 4);
  REQUIRE(last.logits);
  CHECK(last.logits->last_logits == run_logits(t, ids));
  REQUIRE(last.logits->next_tokens.size() == 5);
  CHECK(last.logits->next_tokens[0].prob >= last.logits->next_tokens[4].prob);
}
