// The whole GPT-2 run's edges (gpt2.hpp: gpt2_config, gpt2_run_bytes, Gpt2Run): the block structure a
// file must have, the head count's one rule, finite weights that overflow float32, and the estimate with
// mixed dtypes and a huge vocabulary. Files are built here: seeded values, F32 unless a test says so.
// Then the run's results: attention_thumbnail, attention_first_tokens, the `attention` option's names,
// and gpt2_run_bytes counting what the caller holds of each kind.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "attention_lab/gpt2.hpp"
#include "attention_lab/gpt2_sizes.hpp"
#include "attention_lab/validator.hpp"
#include "gpt2_layout.hpp"
#include "refusal.hpp"

using namespace attention_lab;

namespace {

using Tensors = std::vector<std::tuple<std::string, std::string, Shape>>;  // key, dtype, shape

/// A block's 12 tensors after "<prefix>h.L." for width d, F32.
void add_block(Tensors& t, const std::string& prefix, int64_t L, int64_t d) {
  const std::string p = prefix + "h." + std::to_string(L) + ".";
  for (const auto& [k, s] : gpt2_block_shapes(d)) t.emplace_back(p + k, "F32", s);
}

/// wte (vocab, d), wpe (n_ctx, d), blocks 0 .. layers-1, ln_f: GPT-2's layout.
Tensors gpt2_tensors(int64_t d = 8, int64_t layers = 2, int64_t vocab = 40, int64_t n_ctx = 12, const std::string& prefix = "") {
  Tensors t = {{prefix + "wte.weight", "F32", {vocab, d}}, {prefix + "wpe.weight", "F32", {n_ctx, d}}};
  for (int64_t L = 0; L < layers; ++L) add_block(t, prefix, L, d);
  t.emplace_back(prefix + "ln_f.weight", "F32", Shape{d});
  t.emplace_back(prefix + "ln_f.bias", "F32", Shape{d});
  return t;
}

size_t dtype_size(const std::string& dtype) { return dtype == "F32" ? 4 : dtype == "F64" ? 8 : 2; }

/// A whole file: the header (with `metadata`), then each tensor's values, seeded uniform in
/// [-0.75, 0.75) (+1 for the LayerNorm weights), as F32 or F64; `fill` may overwrite a tensor's values
/// before they are written.
struct File {
  std::vector<uint8_t> bytes;
  SafetensorsHeader header;
  std::map<std::string, std::vector<uint8_t>> of(const std::vector<ByteRead>& reads) const {
    std::map<std::string, std::vector<uint8_t>> out;
    for (const auto& r : reads) {
      const auto b = bytes.begin() + static_cast<std::ptrdiff_t>(header.data_start() + r.entry.begin);
      out[r.name] = std::vector<uint8_t>(b, b + static_cast<std::ptrdiff_t>(r.entry.end - r.entry.begin));
    }
    return out;
  }
};
File build(const Tensors& tensors, const std::function<void(const std::string&, std::vector<float>&)>& fill = {},
           const std::map<std::string, std::string>& metadata = {{"n_head", "2"}}) {
  nlohmann::json h = nlohmann::json::object();
  std::vector<uint8_t> data;
  TorchGenerator g(7);
  for (const auto& [key, dtype, shape] : tensors) {
    int64_t n = 1;
    for (const int64_t x : shape) n *= x;
    std::vector<float> v(static_cast<size_t>(n));
    const bool scale = key.find("ln_") != std::string::npos && key.find(".weight") != std::string::npos;
    for (float& x : v) x = (g.random_float() - 0.5f) * 1.5f + (scale ? 1.0f : 0.0f);
    if (fill) fill(key, v);
    const size_t begin = data.size();
    for (const float x : v) {
      if (dtype == "F32") {
        uint8_t b[4];
        std::memcpy(b, &x, 4);
        data.insert(data.end(), b, b + 4);
      } else {  // F64
        const double y = x;
        uint8_t b[8];
        std::memcpy(b, &y, 8);
        data.insert(data.end(), b, b + 8);
      }
    }
    h[key] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, data.size()}}};
  }
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::string json = h.dump();
  while (json.size() % 8) json += ' ';
  File f;
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) f.bytes.push_back(static_cast<uint8_t>(n >> (8 * i)));
  f.bytes.insert(f.bytes.end(), json.begin(), json.end());
  f.bytes.insert(f.bytes.end(), data.begin(), data.end());
  f.header = parse_safetensors_header(f.bytes.data() + 8, json.size(), f.bytes.size());
  return f;
}

/// The header alone (a file of that size need not exist: gpt2_config reads only the header).
SafetensorsHeader header_only(const Tensors& tensors, const std::map<std::string, std::string>& metadata = {}) {
  nlohmann::json h = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [key, dtype, shape] : tensors) {
    uint64_t bytes = dtype_size(dtype);
    for (const int64_t x : shape) bytes *= static_cast<uint64_t>(x);
    h[key] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty()) h["__metadata__"] = metadata;
  const std::string text = h.dump();
  return parse_safetensors_header(reinterpret_cast<const uint8_t*>(text.data()), text.size(), 8 + text.size() + offset);
}

/// Runs the whole model on `ids`, every step reading its bytes from the file; returns the top 5.
std::vector<std::pair<int64_t, double>> run_all(const File& f, const std::vector<int64_t>& ids) {
  const Gpt2Config c = gpt2_config(f.header);
  Gpt2Run run(f.header, c, ids);
  while (!run.finished()) run.step(f.of(run.reads()));
  return run.top_tokens(5);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("gpt2") {
  TEST_CASE("a file runs as the whole model only with blocks h.0 .. h.{n-1}, each complete: a gap or a partial block is refused, naming the missing keys") {
    CHECK(gpt2_config(header_only(gpt2_tensors(8, 3)), 2).n_layer == 3);
    // h.0 and h.7: not a 1-block model
    Tensors gap = gpt2_tensors(8, 1);
    add_block(gap, "", 7, 8);
    const Refused g = refused([&] { gpt2_config(header_only(gap), 2); });
    CHECK(g.code == "checkpoint_missing_key");
    CHECK(g.slot == "layer");
    CHECK(contains(g.message, "blocks 0, 7 but not 1, 2, 3, 4, 5, 6"));
    CHECK(contains(g.message, "h.1.ln_1.weight"));
    CHECK(contains(g.message, "(72 keys in all)"));  // blocks 1 .. 6, 12 keys each
    // a partial block: h.1 has its attention but no LayerNorms or MLP
    Tensors partial = gpt2_tensors(8, 1);
    for (const char* k : {"attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias"})
      partial.emplace_back(std::string("h.1.") + k, "F32",
                           k == std::string("attn.c_attn.weight")   ? Shape{8, 24}
                           : k == std::string("attn.c_attn.bias")   ? Shape{24}
                           : k == std::string("attn.c_proj.weight") ? Shape{8, 8}
                                                                    : Shape{8});
    const Refused p = refused([&] { gpt2_config(header_only(partial), 2); });
    CHECK(p.code == "checkpoint_missing_key");
    CHECK(contains(
        p.message,
        "no h.1.ln_1.weight, which the whole model needs, nor h.1.ln_1.bias, h.1.ln_2.weight, h.1.ln_2.bias, h.1.mlp.c_fc.weight, h.1.mlp.c_fc.bias, ... (8 keys in all)"));
    // a deeper transformer.h.* set beside h.*: two models' keys, not the shorter one run
    Tensors both = gpt2_tensors(8, 1);
    for (int64_t L = 0; L < 4; ++L) add_block(both, "transformer.", L, 8);
    const Refused b = refused([&] { gpt2_config(header_only(both), 2); });
    CHECK(b.code == "checkpoint_bad_header");
    CHECK(contains(b.message, "transformer.h.0, 1, 2, 3 beside h.0 (the blocks of wte.weight's model)"));
    // the mask buffers of the Hub's files are not blocks of their own, and count for nothing missing
    Tensors masks = gpt2_tensors(8, 2);
    masks.emplace_back("h.0.attn.bias", "F32", Shape{1, 1, 12, 12});
    masks.emplace_back("h.1.attn.bias", "F32", Shape{1, 1, 12, 12});
    CHECK(gpt2_config(header_only(masks), 2).n_layer == 2);
  }

  TEST_CASE("the head count: the option, else __metadata__ n_head, else GPT-2's own, one rule with loadCheckpoint's plan") {
    const Tensors t = gpt2_tensors(8, 1);
    CHECK(gpt2_config(header_only(t, {{"n_head", "4"}})).n_head == 4);
    CHECK(gpt2_config(header_only(t, {{"n_head", "4"}}), 2).n_head == 2);
    CHECK(refusal([&] { gpt2_config(header_only(t)); }) == std::pair<std::string, std::string>{"checkpoint_num_heads", "num_heads"});
    CHECK(refusal([&] { gpt2_config(header_only(t, {{"n_head", "3"}})); }).first == "checkpoint_num_heads");
    CHECK(contains(refused([&] { gpt2_config(header_only(t, {{"n_head", "two"}})); }).message, "__metadata__ n_head is \"two\", not a whole number"));
    CheckpointOptions o;
    const CheckpointPlan plan = plan_gpt2_attention(header_only(t, {{"n_head", "4"}}), o);
    CHECK(plan.config.num_heads == 4);
    CHECK(contains(plan.report.sources.at("num_heads"), "__metadata__ n_head (4)"));
    CHECK(gpt2_head_count(header_only(t, {{"n_head", "4"}}), 8, std::nullopt).n_head == plan.config.num_heads);
  }

  TEST_CASE("finite weights that overflow float32 are refused naming the first block and stage, never NaN probabilities") {
    // the tiny file runs (the control), its top token with a finite probability
    const auto top = run_all(build(gpt2_tensors()), {3, 1, 4});
    CHECK(top.size() == 5);
    CHECK(std::isfinite(top[0].second));
    // wte at +-3e38 (finite): the LayerNorms bring the stream back to size, the tied head does not:
    // the logits overflow (the old run resolved with them, and NaN probabilities)
    const auto huge_wte = [](const std::string& key, std::vector<float>& v) {
      if (key == "wte.weight")
        for (size_t i = 0; i < v.size(); ++i) v[i] = i % 2 ? -3e38f : 3e38f;
    };
    const Refused w = refused([&] { run_all(build(gpt2_tensors(8, 1), huge_wte), {3, 1, 4}); });
    CHECK(w.code == "non_finite_stage");
    CHECK(w.slot == "logits");
    CHECK(contains(w.message, "logits = ln_f(x)[-1] @ wte^T is the first stage to turn non-finite although every weight is finite"));
    CHECK(contains(w.message, "at token id 0"));
    // block 0's MLP out-projection at 3e38: its output overflows there (the old run blamed block 1's input as token 0's)
    const auto huge_proj = [](const std::string& key, std::vector<float>& v) {
      if (key == "h.0.mlp.c_proj.weight")
        for (float& x : v) x = 3e38f;
    };
    const Refused m = refused([&] { run_all(build(gpt2_tensors(8, 2), huge_proj), {3, 1, 4}); });
    CHECK(m.code == "non_finite_stage");
    CHECK(m.slot == "mlp_c_proj");
    CHECK(contains(m.message, "block 0 (h.0): mlp_c_proj"));
    CHECK(contains(m.message, "at token 0, column 0"));
    // ln_f's weight at 3e38: the head's norm itself overflows (no block named: it is after them)
    const auto huge_ln_f = [](const std::string& key, std::vector<float>& v) {
      if (key == "ln_f.weight")
        for (float& x : v) x = 3e38f;
    };
    const Refused l = refused([&] { run_all(build(gpt2_tensors(8, 1), huge_ln_f), {3, 1, 4}); });
    CHECK(l.code == "non_finite_stage");
    CHECK(l.slot == "ln_f");
    CHECK(contains(l.message, "ln_f = ln_f(x)[-1] is the first stage"));
    CHECK(!contains(l.message, "block"));
  }

  TEST_CASE("generation runs the run's block: the same overflow is refused with the same stage, cached or not, never a token from NaN logits") {
    const auto huge_proj = [](const std::string& key, std::vector<float>& v) {
      if (key == "h.0.mlp.c_proj.weight")
        for (float& x : v) x = 3e38f;
    };
    const File f = build(gpt2_tensors(8, 2), huge_proj);
    const Gpt2Config c = gpt2_config(f.header);
    for (const bool cache : {true, false}) {
      Gpt2GenerateOptions o;
      o.max_new_tokens = 2;
      o.cache = cache;
      Gpt2Generation g(f.header, c, {3, 1, 4}, o);
      const Refused t = refused([&] {
        while (!g.finished()) g.step(f.of(g.reads()), nullptr);
      });
      CHECK(t.code == "non_finite_stage");
      CHECK(t.slot == "mlp_c_proj");
      CHECK(contains(t.message, "block 0 (h.0): mlp_c_proj"));
    }
  }

  TEST_CASE("the estimate reads every block at its own dtype (F16 wte, F32 blocks) and counts the top tokens' index, 8 bytes per vocabulary row") {
    Tensors mixed = gpt2_tensors(768, 2, 50257, 1024);
    std::get<1>(mixed[0]) = "F16";
    Tensors all16 = mixed;
    for (auto& t : all16) std::get<1>(t) = "F16";
    const Gpt2Config m = gpt2_config(header_only(mixed)), h = gpt2_config(header_only(all16));
    CHECK(m.dtype == "F16");  // what the file says of wte
    CHECK(m.value_bytes == 4);
    CHECK(h.value_bytes == 2);
    // a block's raw bytes at 4 per value, not 2: 12 d^2 + 13 d values of the block, read before it runs
    const double d = 768;
    CHECK(gpt2_run_bytes(m, 64) - gpt2_run_bytes(h, 64) >= 2.0 * (12 * d * d + 13 * d));
    // 300 M rows of width 1: the logits (4 bytes a row) and the top tokens' index (8 a row) at once
    const Gpt2Config big = gpt2_config(header_only(gpt2_tensors(1, 1, 300000000, 16)), 1);
    CHECK(gpt2_run_bytes(big, 1) >= 12.0 * 300000000);
    CHECK(refusal([&] { Gpt2Run(header_only(gpt2_tensors(1, 1, 300000000, 16)), big, {1}); }).first == "too_large");
  }

  TEST_CASE("the layer-0 input refuses what the whole model refuses: NaN in a row read, F64 weights") {
    const File nan = build(gpt2_tensors(8, 1), [](const std::string& key, std::vector<float>& v) {
      if (key == "wte.weight") v[3 * 8 + 2] = std::nanf("");
    });
    const auto reads = plan_gpt2_block_input(nan.header, {3, 1}, 0);
    const Refused n = refused([&] { gpt2_block_input(nan.header, {3, 1}, 0, nan.of(reads)); });
    CHECK(n.code == "non_finite_parameter");
    CHECK(contains(n.message, "wte.weight[3]"));
    CHECK(refused([&] { run_all(nan, {3, 1}); }).code == "non_finite_parameter");  // the whole model: the same code
    Tensors f64 = gpt2_tensors(8, 1);
    std::get<1>(f64[0]) = "F64";
    const File wide = build(f64);
    CHECK(refusal([&] { plan_gpt2_block_input(wide.header, {3}, 0); }).first == "checkpoint_dtype");
    CHECK(refusal([&] { gpt2_config(wide.header); }).first == "checkpoint_dtype");
  }
}

namespace {
/// (1, H, T, T) causal weights with distinct values: row i of head h holds (h + 1) * (i + 1) * 100 + j
/// at keys j <= i and 0 after.
Tensor causal_weights(int64_t H, int64_t T) {
  Tensor w({1, H, T, T});
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j <= i; ++j) w.data[static_cast<size_t>((h * T + i) * T + j)] = static_cast<float>((h + 1) * (i + 1) * 100 + j);
  return w;
}
float at(const Tensor& t, int64_t h, int64_t i, int64_t j) { return t.data[static_cast<size_t>((h * t.shape[2] + i) * t.shape[3] + j)]; }
}  // namespace

TEST_SUITE("gpt2 results") {
  TEST_CASE("attention_thumbnail averages each block of queries x keys; cells above the diagonal are all masked") {
    const Tensor w = causal_weights(2, 4);
    const Tensor t = attention_thumbnail(w, 2);  // 2 x 2 blocks of 2 x 2
    CHECK(t.shape == Shape{1, 2, 2, 2});
    // head 0, cell (0, 0): queries 0-1, keys 0-1: (100 + 0 + 200 + 201) / 4
    CHECK(at(t, 0, 0, 0) == doctest::Approx((100.0 + 0.0 + 200.0 + 201.0) / 4).epsilon(1e-7));
    CHECK(at(t, 0, 0, 1) == 0.0f);
    // head 1, cell (1, 0): queries 2-3 (x2: 600, 800), keys 0-1
    CHECK(at(t, 1, 1, 0) == doctest::Approx((600.0 + 601.0 + 800.0 + 801.0) / 4).epsilon(1e-7));
    CHECK(at(t, 1, 1, 1) == doctest::Approx((602.0 + 0.0 + 802.0 + 803.0) / 4).epsilon(1e-7));
    // uneven blocks: T = 5 into 2 cells is rows/keys 0-1 and 2-4
    const Tensor u = attention_thumbnail(causal_weights(1, 5), 2);
    CHECK(at(u, 0, 1, 0) == doctest::Approx((300.0 + 301.0 + 400.0 + 401.0 + 500.0 + 501.0) / 6).epsilon(1e-7));
    CHECK(at(u, 0, 0, 1) == 0.0f);
    // no more cells than tokens: S = T is the weights themselves, bit for bit
    const Tensor same = attention_thumbnail(w, 64);
    CHECK(same.shape == w.shape);
    CHECK(same.data == w.data);
  }

  TEST_CASE("attention_first_tokens keeps the first F queries against the first F keys, exactly") {
    const Tensor w = causal_weights(3, 7);
    const Tensor f = attention_first_tokens(w, 4);
    CHECK(f.shape == Shape{1, 3, 4, 4});
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) CHECK(at(f, h, i, j) == at(w, h, i, j));
    CHECK(attention_first_tokens(w, 48).data == w.data);
  }

  TEST_CASE("the attention option's names; anything else is run_option on the attention slot") {
    CHECK(gpt2_attention_of("full") == Gpt2Attention::Full);
    CHECK(gpt2_attention_of("thumbnails") == Gpt2Attention::Thumbnails);
    for (const char* bad : {"", "Full", "weights", "<number>"}) {
      CAPTURE(bad);
      CHECK(refusal([&] { gpt2_attention_of(bad); }) == std::pair<std::string, std::string>{"run_option", "attention"});
    }
  }

  TEST_CASE("gpt2_run_bytes counts every layer's results as the caller holds them, of the kind asked for (and the logits)") {
    Gpt2Config c;
    c.n_embd = 1600;
    c.n_head = 25;
    c.n_layer = 48;
    c.n_ctx = 1024;
    c.vocab_size = 50257;
    c.dtype = "F32";
    const double full = gpt2_run_bytes(c, 1024, Gpt2Attention::Full), thumbnails = gpt2_run_bytes(c, 1024, Gpt2Attention::Thumbnails);
    // per layer: the input (T x d) and the weights (H x T x T), against H x (64^2 + 48^2) cells
    CHECK(full - thumbnails == doctest::Approx(48.0 * 4.0 * (1024.0 * 1600 + 25.0 * 1024 * 1024) - 48.0 * 4.0 * 25 * (64 * 64 + 48 * 48)));
    CHECK(full > kDefaultMemoryBudgetBytes);
    CHECK(thumbnails < kDefaultMemoryBudgetBytes);
    // few tokens: the thumbnails are the tokens themselves (S = F = T)
    CHECK(gpt2_run_bytes(c, 6, Gpt2Attention::Full) - gpt2_run_bytes(c, 6, Gpt2Attention::Thumbnails) ==
          doctest::Approx(48.0 * 4.0 * (6.0 * 1600 + 25.0 * 36) - 48.0 * 4.0 * 25 * (36 + 36)));
  }
}
