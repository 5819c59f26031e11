#include "attention_lab/gpt2.hpp"
#include "attention_lab/gpt2_sizes.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

#include "attention_lab/plan.hpp"
#include "attention_lab/text.hpp"

namespace attention_lab {

namespace {

/// The 12 tensors of block L, after "h.L.", with their shapes for width d (Conv1D weights are (in, out)).
std::vector<std::pair<std::string, Shape>> block_tensors(int64_t d) {
  return {{"ln_1.weight", {d}}, {"ln_1.bias", {d}}, {"attn.c_attn.weight", {d, 3 * d}}, {"attn.c_attn.bias", {3 * d}}, {"attn.c_proj.weight", {d, d}},    {"attn.c_proj.bias", {d}},
          {"ln_2.weight", {d}}, {"ln_2.bias", {d}}, {"mlp.c_fc.weight", {d, 4 * d}},    {"mlp.c_fc.bias", {4 * d}},    {"mlp.c_proj.weight", {4 * d, d}}, {"mlp.c_proj.bias", {d}}};
}

int64_t dtype_bytes(const std::string& dtype) { return dtype == "F32" ? 4 : 2; }

const std::string kGpt2Hint = "Use a GPT-2 checkpoint in the Hugging Face layout (model.safetensors of the gpt2 repositories).";

/// The float32 values of one read's bytes, refusing NaN and infinity (they would spread through every later layer).
std::vector<float> decoded(const ByteRead& r, const std::vector<uint8_t>& raw) { return decode_weight(r.entry, r.name, raw.data(), raw.size()); }

/// decoded(), for the read's bytes in `bytes` (by its name).
std::vector<float> values_of(const ByteRead& r, const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const auto it = bytes.find(r.name);
  if (it == bytes.end()) throw AttentionError("checkpoint_missing_key", "", "the bytes of " + r.name + " were not given", "");
  return decoded(r, it->second);
}

/// GELU with the tanh approximation, as the book's GELU and GPT-2: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void gelu_tanh(float* x, size_t n) {
  const double c = std::sqrt(2.0 / 3.14159265358979323846);
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i];
    x[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))));
  }
}

ModuleConfig attention_config(const Gpt2Config& c) {
  ModuleConfig m;
  m.spec = &checkpoint_class();
  m.d_in = c.n_embd;
  m.d_out = c.n_embd;
  m.context_length = c.n_ctx;
  m.dropout = 0.0;
  m.num_heads = c.n_head;
  m.qkv_bias = true;
  return m;
}

}  // namespace

namespace {

/// Block numbers of the keys "<prefix>h.<L>.<rest>" (L in canonical digits, as parse order gives them).
std::set<int64_t> block_numbers(const SafetensorsHeader& header, const std::string& prefix) {
  std::set<int64_t> out;
  const std::string start = prefix + "h.";
  // entries are sorted by key: the keys under `start` are one run of them
  auto it = std::lower_bound(header.entries.begin(), header.entries.end(), start, [](const SafetensorsEntry& e, const std::string& k) { return e.key < k; });
  for (; it != header.entries.end() && it->key.compare(0, start.size(), start) == 0; ++it) {
    const size_t dot = it->key.find('.', start.size());
    if (dot == std::string::npos) continue;
    const std::string digits = it->key.substr(start.size(), dot - start.size());
    if (digits.empty() || digits.size() > 6 || (digits.size() > 1 && digits[0] == '0') ||
        !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      continue;
    out.insert(std::stoll(digits));
  }
  return out;
}

std::string block_list(const std::set<int64_t>& blocks) {
  std::string s;
  size_t shown = 0;
  for (const int64_t b : blocks) {
    if (++shown > 8) return s + ", ... (" + std::to_string(blocks.size()) + " in all)";
    s += (s.empty() ? "" : ", ") + std::to_string(b);
  }
  return s;
}

/// n_layer of a file whose blocks are under `prefix`: its blocks must be h.0 .. h.{n - 1}, each with its
/// 12 tensors (a gap or a partial block would run a shorter model), and no second set of blocks under
/// the other prefix ("h." beside "transformer.h."). Throws checkpoint_layer (no blocks), checkpoint_missing_key
/// (names the missing keys), checkpoint_bad_header (two sets of blocks).
int64_t gpt2_blocks(const SafetensorsHeader& header, const std::string& prefix) {
  const std::set<int64_t> blocks = block_numbers(header, prefix);
  const std::string other = prefix.empty() ? "transformer." : "";
  if (const std::set<int64_t> beside = block_numbers(header, other); !beside.empty()) {
    throw AttentionError("checkpoint_bad_header", "",
                         "the file has blocks " + other + "h." + block_list(beside) + " beside " + prefix + "h." + (blocks.empty() ? "(none)" : block_list(blocks)) +
                             " (the blocks of " + prefix + "wte.weight's model): two models' keys in one file",
                         "Save one model per file (GPT2Model's keys, or GPT2LMHeadModel's with the prefix 'transformer.').");
  }
  if (blocks.empty()) throw AttentionError("checkpoint_layer", "layer", "the file has no transformer blocks (no " + prefix + "h.0.ln_1.weight)", kGpt2Hint);
  const int64_t n = *blocks.rbegin() + 1;
  std::vector<std::string> missing;
  for (int64_t L = 0; L < n; ++L)
    for (const auto& key : block_tensors(1)) {
      const std::string name = prefix + "h." + std::to_string(L) + "." + key.first;
      if (header.find(name) == nullptr) missing.push_back(name);
    }
  if (!missing.empty()) {
    std::string rest;  // the keys after the first, up to 5 of them
    for (size_t i = 1; i < missing.size() && i < 6; ++i) rest += (i == 1 ? "" : ", ") + missing[i];
    if (missing.size() > 6) rest += ", ... (" + std::to_string(missing.size()) + " keys in all)";
    std::set<int64_t> absent;
    for (int64_t L = 0; L < n; ++L)
      if (blocks.count(L) == 0) absent.insert(L);
    throw AttentionError("checkpoint_missing_key", "layer",
                         "the file has no " + missing[0] + ", which the whole model needs" + (rest.empty() ? "" : ", nor " + rest) + ": it has blocks " + block_list(blocks) +
                             (absent.empty() ? "" : " but not " + block_list(absent)) + ", and the model runs only with every block from 0 to " + std::to_string(n - 1) +
                             " complete (a shorter model would be another model)",
                         "The file is cut or incomplete: use the whole checkpoint (every h.L has 12 tensors).");
  }
  return n;
}

}  // namespace

Gpt2Config gpt2_config(const SafetensorsHeader& header, std::optional<int64_t> num_heads) {
  Gpt2Config c;
  c.prefix = header.find("wte.weight") == nullptr && header.find("transformer.wte.weight") != nullptr ? "transformer." : "";
  const auto need = [&](const std::string& key, const Shape& shape) -> const SafetensorsEntry& {
    const SafetensorsEntry* e = header.find(c.prefix + key);
    if (e == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + c.prefix + key + ", which the whole model needs", kGpt2Hint);
    if (!shape.empty() && e->shape != shape)
      throw AttentionError("checkpoint_shape", "", c.prefix + key + " is " + shape_string(e->shape) + " but the model needs " + shape_string(shape), kGpt2Hint);
    require_gpt2_dtype(*e);
    c.value_bytes = std::max(c.value_bytes, dtype_bytes(e->dtype));
    return *e;
  };
  const SafetensorsEntry& wte = need("wte.weight", {});
  if (wte.shape.size() != 2 || wte.shape[0] < 1 || wte.shape[1] < 1)
    throw AttentionError("checkpoint_shape", "", c.prefix + "wte.weight is " + shape_string(wte.shape) + " but must be (vocab_size, n_embd)", kGpt2Hint);
  c.vocab_size = wte.shape[0];
  c.n_embd = wte.shape[1];
  c.dtype = wte.dtype;
  const int64_t d = c.n_embd;
  const SafetensorsEntry* wpe = header.find(c.prefix + "wpe.weight");
  if (wpe == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + c.prefix + "wpe.weight, which the whole model needs", kGpt2Hint);
  if (wpe->shape.size() != 2 || wpe->shape[1] != d || wpe->shape[0] < 1)
    throw AttentionError("checkpoint_shape", "", c.prefix + "wpe.weight is " + shape_string(wpe->shape) + " but must be (n_ctx, " + std::to_string(d) + ")", kGpt2Hint);
  need("wpe.weight", wpe->shape);
  c.n_ctx = wpe->shape[0];
  c.n_layer = gpt2_blocks(header, c.prefix);
  for (int64_t L = 0; L < c.n_layer; ++L)
    for (const auto& [key, shape] : block_tensors(d)) need("h." + std::to_string(L) + "." + key, shape);
  need("ln_f.weight", {d});
  need("ln_f.bias", {d});
  c.n_head = gpt2_head_count(header, d, num_heads).n_head;
  const bool gpt2_shape = c.vocab_size == kGpt2Vocab && c.n_ctx == kGpt2Context;
  if (const Gpt2Size* size = gpt2_size_of_width(d); gpt2_shape && size && c.n_layer == size->n_layer && c.n_head == size->n_head) c.size = size->name;
  return c;
}

Gpt2Attention gpt2_attention_of(const std::string& name) {
  if (name == "full") return Gpt2Attention::Full;
  if (name == "thumbnails") return Gpt2Attention::Thumbnails;
  throw AttentionError(
      "run_option", "attention", "attention must be \"full\" or \"thumbnails\", got \"" + name + "\"",
      "Use \"full\" for every layer's whole weights, or \"thumbnails\" for a grid's averaged cells and the first " + std::to_string(kGpt2FirstTokens) + " tokens' weights.");
}

Tensor attention_thumbnail(const Tensor& w, int64_t size) {
  const int64_t H = w.shape[1], T = w.shape[2], S = std::min(T, size);
  Tensor out({1, H, S, S});
  for (int64_t hh = 0; hh < H; ++hh)
    for (int64_t a = 0; a < S; ++a) {
      const int64_t r0 = a * T / S, r1 = (a + 1) * T / S;
      for (int64_t b = 0; b < S; ++b) {
        const int64_t c0 = b * T / S, c1 = (b + 1) * T / S;
        double sum = 0.0;
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = c0; j < c1; ++j) sum += w.data[static_cast<size_t>((hh * T + i) * T + j)];
        out.data[static_cast<size_t>((hh * S + a) * S + b)] = static_cast<float>(sum / static_cast<double>((r1 - r0) * (c1 - c0)));
      }
    }
  return out;
}

Tensor attention_first_tokens(const Tensor& w, int64_t count) {
  const int64_t H = w.shape[1], T = w.shape[2], F = std::min(T, count);
  Tensor out({1, H, F, F});
  for (int64_t hh = 0; hh < H; ++hh)
    for (int64_t i = 0; i < F; ++i) std::copy_n(w.data.begin() + (hh * T + i) * T, F, out.data.begin() + (hh * F + i) * F);
  return out;
}

double gpt2_run_bytes(const Gpt2Config& c, int64_t num_tokens, Gpt2Attention attention) {
  const double d = static_cast<double>(c.n_embd), T = static_cast<double>(num_tokens), H = static_cast<double>(c.n_head);
  // raw bytes per value: the widest dtype read (an F16 wte beside F32 blocks reads the blocks at 4)
  const double V = static_cast<double>(c.vocab_size), raw = static_cast<double>(c.value_bytes > 0 ? c.value_bytes : dtype_bytes(c.dtype));
  const double panel = static_cast<double>(ops::packed_floats(1, 1));
  const auto packed = [panel](double k, double n) { return std::ceil(n / panel) * k * panel; };
  // Kept through the run: the residual stream, the last position's norm, the logits and one layer's
  // input and attention weights until the caller has copied them out.
  const double kept = 4.0 * (T * d + d + V + T * d + H * T * T);
  // Embedding: one wte row per token and T wpe rows, raw and as float32.
  const double embed = (raw + 4.0) * 2.0 * T * d;
  // A block: its raw bytes (all read before it runs), then the attention phase (its four tensors as
  // float32, one transposed weight, the module packed and its forward) and the MLP phase (one weight
  // as float32 and packed at a time). Both phases count: the allocator does not always reuse what the
  // first freed. Plus the activations: ln's output, the attention's output, the MLP's hidden 4d (the
  // attention weights are in `kept`; the attention forward's own buffers in plan_heap_bytes, as no
  // caller copies its output out).
  const ForwardPlan attn = plan_forward(attention_config(c));
  const double block_raw = raw * (12.0 * d * d + 13.0 * d);
  const double attn_phase = 4.0 * (5.0 * d * d + 4.0 * d) + plan_heap_bytes(attn, Shape{1, num_tokens, c.n_embd}, false);
  const double mlp_phase = 4.0 * (4.0 * d * d + 4.0 * d + packed(d, 4 * d));
  const double acts = 4.0 * (2.0 * T * d + 4.0 * T * d);
  const double block = block_raw + attn_phase + mlp_phase + acts;
  // A logits step: a chunk of wte rows, raw and as float32.
  const double logits = (raw + 4.0) * static_cast<double>(std::min<int64_t>(kGpt2LogitsChunkRows, c.vocab_size)) * d;
  // The top tokens: an int64 index of every vocabulary row (top_tokens), then the logits' copy out.
  const double top = 8.0 * V;
  // Every layer's results as the caller holds them (their JS copies, all kept to the end of the run).
  const double S = static_cast<double>(std::min<int64_t>(num_tokens, kGpt2ThumbnailSize)), F = static_cast<double>(std::min<int64_t>(num_tokens, kGpt2FirstTokens));
  const double per_layer = attention == Gpt2Attention::Full ? 4.0 * (T * d + H * T * T) : 4.0 * H * (S * S + F * F);
  const double results = static_cast<double>(c.n_layer) * per_layer + 4.0 * V;  // and the last position's logits
  return kept + std::max({embed, block, logits, top}) + results;
}

Gpt2Run::Gpt2Run(const SafetensorsHeader& header, const Gpt2Config& config, std::vector<int64_t> token_ids, double memory_budget_bytes, Gpt2Attention attention)
    : header_(&header), config_(config), ids_(std::move(token_ids)), attention_(attention) {
  if (ids_.empty()) throw AttentionError("input_empty", "tokens", "no tokens to run the model on", "Type at least one word.");
  for (const int64_t id : ids_) {
    if (id < 0 || id >= config_.vocab_size) {
      throw AttentionError("checkpoint_token", "tokens", "token id " + std::to_string(id) + " is outside the vocabulary (0 to " + std::to_string(config_.vocab_size - 1) + ")",
                           "Tokenize with the checkpoint's own tokenizer.");
    }
  }
  if (num_tokens() > config_.n_ctx) {
    throw AttentionError("context_too_short", "context_length", "num_tokens " + std::to_string(num_tokens()) + " > n_ctx " + std::to_string(config_.n_ctx) + " (wpe.weight rows)",
                         "Use at most " + std::to_string(config_.n_ctx) + " tokens.");
  }
  const double bytes = gpt2_run_bytes(config_, num_tokens(), attention_);
  if (bytes > memory_budget_bytes) {
    const bool thumbnails_fit = attention_ == Gpt2Attention::Full && gpt2_run_bytes(config_, num_tokens(), Gpt2Attention::Thumbnails) <= memory_budget_bytes;
    throw AttentionError("too_large", "tokens",
                         "running the model on " + std::to_string(num_tokens()) + " tokens needs about " + std::to_string(static_cast<long long>(bytes / 1048576.0)) +
                             " MiB, over the " + std::to_string(static_cast<long long>(memory_budget_bytes / 1048576.0)) + " MiB this page allows",
                         thumbnails_fit ? "Use fewer tokens, or {attention: \"thumbnails\"}: every layer's whole attention weights are what does not fit." : "Use fewer tokens.");
  }
}

const SafetensorsEntry& Gpt2Run::entry(const std::string& key) const {
  const SafetensorsEntry* e = header_->find(config_.prefix + key);
  if (e == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + config_.prefix + key, kGpt2Hint);
  return *e;
}

std::vector<ByteRead> Gpt2Run::embedding_reads() const {
  std::vector<ByteRead> reads;
  std::vector<int64_t> distinct = ids_;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const SafetensorsEntry& wte = entry("wte.weight");
  for (const int64_t id : distinct) reads.push_back({"wte.weight[" + std::to_string(id) + "]", rows_of(wte, id, id + 1)});
  reads.push_back({"wpe.weight[0:" + std::to_string(num_tokens()) + "]", rows_of(entry("wpe.weight"), 0, num_tokens())});
  return reads;
}

void Gpt2Run::embed(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const int64_t T = num_tokens(), d = config_.n_embd;
  const std::vector<ByteRead> reads = embedding_reads();
  std::map<int64_t, std::vector<float>> rows;  // each distinct id's wte row
  for (size_t r = 0; r + 1 < reads.size(); ++r) rows[std::stoll(reads[r].name.substr(11))] = values_of(reads[r], bytes);
  x_ = gpt2_embed(ids_, rows, values_of(reads.back(), bytes), d);  // (1, num_tokens, d) = wte[ids] + wpe[:T]
  check_gpt2_stage(x_.data.data(), static_cast<size_t>(T * d), d, -1, "embedding", "wte[ids] + wpe[:T]");
  embedded_ = true;
  next_layer_ = 0;
}

std::vector<ByteRead> Gpt2Run::block_reads(int64_t layer) const {
  if (layer < 0 || layer >= config_.n_layer) {
    throw AttentionError("checkpoint_layer", "layer", "layer " + std::to_string(layer) + " is not in the file (layers 0 to " + std::to_string(config_.n_layer - 1) + ")", "");
  }
  std::vector<ByteRead> reads;
  for (const auto& [key, shape] : block_tensors(config_.n_embd)) {
    const std::string name = "h." + std::to_string(layer) + "." + key;
    reads.push_back({config_.prefix + name, entry(name)});
  }
  return reads;
}

Gpt2Run::Layer Gpt2Run::block(int64_t layer, const std::map<std::string, std::vector<uint8_t>>& bytes) {
  if (!embedded_ || layer != next_layer_)
    throw AttentionError("checkpoint_layer", "layer", "block " + std::to_string(layer) + " runs after the embedding and every earlier block", "");
  const std::vector<ByteRead> reads = block_reads(layer);
  const int64_t T = num_tokens(), d = config_.n_embd;
  const auto value = [&](size_t i) { return values_of(reads[i], bytes); };
  Layer out;
  if (attention_ == Gpt2Attention::Full) out.input = x_;
  // x = x + attn(ln_1(x)): the book's MultiHeadAttention, loaded from c_attn / c_proj as one layer is.
  {
    Tensor h = x_;
    ops::layer_norm_rows(h.data.data(), T, d, value(0).data(), value(1).data(), 1e-5f);
    check_gpt2_stage(h.data.data(), h.data.size(), d, layer, "ln_1", "ln_1(x)");
    CheckpointPlan plan;
    plan.config = attention_config(config_);
    plan.prefix = config_.prefix;
    for (const size_t i : {2, 3, 4, 5}) plan.needed.push_back(reads[i].entry);
    const AttentionModule attn = load_gpt2_attention(plan, bytes);
    ForwardOptions options;
    options.training = false;
    options.attn_weights = &out.attn_weights;
    options.memory_budget_bytes = 1e300;  // the run's estimate was checked at its start
    options.pool = pool_;
    const Tensor a = attn.forward(h, options);
    check_gpt2_stage(a.data.data(), a.data.size(), d, layer, "attn", "attn(ln_1(x))");
    for (size_t i = 0; i < x_.data.size(); ++i) x_.data[i] += a.data[i];
    check_gpt2_stage(x_.data.data(), x_.data.size(), d, layer, "attn_residual", "x + attn(ln_1(x))");
    if (attention_ == Gpt2Attention::Thumbnails) {
      out.thumbnail = attention_thumbnail(out.attn_weights, kGpt2ThumbnailSize);
      out.first_tokens = attention_first_tokens(out.attn_weights, kGpt2FirstTokens);
      out.attn_weights = Tensor();
    }
  }
  // x = x + c_proj(gelu(c_fc(ln_2(x)))), Conv1D weights (in, out): y = x @ W + b.
  {
    Tensor h = x_;
    ops::layer_norm_rows(h.data.data(), T, d, value(6).data(), value(7).data(), 1e-5f);
    check_gpt2_stage(h.data.data(), h.data.size(), d, layer, "ln_2", "ln_2(x)");
    std::vector<float> hidden(static_cast<size_t>(T * 4 * d));
    {
      const ops::PackedMatrix fc = ops::pack_b(value(8).data(), d, 4 * d, false);
      ops::gemm(pool_, h.data.data(), T, d, fc, value(9).data(), hidden.data());
    }
    check_gpt2_stage(hidden.data(), hidden.size(), 4 * d, layer, "c_fc", "c_fc(ln_2(x))");
    gelu_tanh(hidden.data(), hidden.size());
    check_gpt2_stage(hidden.data(), hidden.size(), 4 * d, layer, "gelu", "gelu_tanh(c_fc(ln_2(x)))");
    const ops::PackedMatrix proj = ops::pack_b(value(10).data(), 4 * d, d, false);
    ops::gemm(pool_, hidden.data(), T, 4 * d, proj, value(11).data(), h.data.data());
    check_gpt2_stage(h.data.data(), h.data.size(), d, layer, "mlp_c_proj", "c_proj(gelu(c_fc(ln_2(x))))");
    for (size_t i = 0; i < x_.data.size(); ++i) x_.data[i] += h.data[i];
    check_gpt2_stage(x_.data.data(), x_.data.size(), d, layer, "mlp_residual", "x + mlp(ln_2(x))");
  }
  ++next_layer_;
  return out;
}

std::vector<ByteRead> Gpt2Run::attention_input_reads(int64_t layer) const {
  std::vector<ByteRead> reads = block_reads(layer);
  reads.resize(2);  // ln_1.weight, ln_1.bias
  return reads;
}

Tensor Gpt2Run::attention_input(int64_t layer, const std::map<std::string, std::vector<uint8_t>>& bytes) const {
  if (!embedded_ || layer != next_layer_)
    throw AttentionError("checkpoint_layer", "layer", "the input of layer " + std::to_string(layer) + " comes after the embedding and every earlier block", "");
  const std::vector<ByteRead> reads = attention_input_reads(layer);
  Tensor h = x_;
  ops::layer_norm_rows(h.data.data(), num_tokens(), config_.n_embd, values_of(reads[0], bytes).data(), values_of(reads[1], bytes).data(), 1e-5f);
  check_gpt2_stage(h.data.data(), h.data.size(), config_.n_embd, layer, "ln_1", "ln_1(x)");
  return h;
}

std::vector<ByteRead> Gpt2Run::final_reads() const { return {{config_.prefix + "ln_f.weight", entry("ln_f.weight")}, {config_.prefix + "ln_f.bias", entry("ln_f.bias")}}; }

void Gpt2Run::final_norm(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  if (next_layer_ != config_.n_layer) throw AttentionError("checkpoint_layer", "layer", "ln_f runs after every block", "");
  const std::vector<ByteRead> reads = final_reads();
  const int64_t d = config_.n_embd;
  last_.assign(x_.data.end() - d, x_.data.end());  // the last position only: the logits are wanted there
  ops::layer_norm_rows(last_.data(), 1, d, values_of(reads[0], bytes).data(), values_of(reads[1], bytes).data(), 1e-5f);
  check_gpt2_stage(last_.data(), last_.size(), d, -1, "ln_f", "ln_f(x)[-1]");
  normed_ = true;
  logits_.assign(static_cast<size_t>(config_.vocab_size), 0.0f);
  logits_done_.assign(static_cast<size_t>((config_.vocab_size + kGpt2LogitsChunkRows - 1) / kGpt2LogitsChunkRows), 0);
}

ByteRead Gpt2Run::logits_read(int64_t begin) const {
  const int64_t end = std::min(begin + kGpt2LogitsChunkRows, config_.vocab_size);
  if (begin < 0 || begin >= config_.vocab_size || begin % kGpt2LogitsChunkRows != 0)
    throw AttentionError("checkpoint_token", "", "no logits chunk starts at row " + std::to_string(begin), "");
  return {"wte.weight[" + std::to_string(begin) + ":" + std::to_string(end) + "]", rows_of(entry("wte.weight"), begin, end)};
}

void Gpt2Run::logits_rows(int64_t begin, const std::vector<uint8_t>& bytes) {
  if (!normed_) throw AttentionError("checkpoint_layer", "layer", "the logits come after ln_f", "");
  const ByteRead r = logits_read(begin);
  const int64_t d = config_.n_embd, n = r.entry.shape[0];
  // logits[begin:end] = ln_f(x)[-1] @ wte[begin:end]^T, the tied output head, on the product kernel
  ops::PackedMatrix rows;
  {
    const std::vector<float> values = decoded(r, bytes);  // (n, d)
    rows = ops::pack_b(values.data(), d, n, true);
  }
  ops::gemm(pool_, last_.data(), 1, d, rows, nullptr, logits_.data() + begin);
  // the earlier rows are finite (each chunk is checked as it comes), so the first bad one is named by its token id
  if (!first_non_finite(logits_.data() + begin, static_cast<size_t>(n), Shape{n}).empty())
    check_gpt2_stage(logits_.data(), static_cast<size_t>(begin + n), 1, -1, "logits", "ln_f(x)[-1] @ wte^T");
  logits_done_[static_cast<size_t>(begin / kGpt2LogitsChunkRows)] = 1;
}

const std::vector<float>& Gpt2Run::last_logits() const {
  if (!normed_ || std::find(logits_done_.begin(), logits_done_.end(), 0) != logits_done_.end())
    throw AttentionError("checkpoint_layer", "", "the logits are not complete: every chunk of wte must be read", "");
  return logits_;
}

std::vector<std::pair<int64_t, double>> Gpt2Run::top_tokens(int k) const {
  const std::vector<float>& z = last_logits();
  const double top = *std::max_element(z.begin(), z.end());
  double sum = 0.0;
  for (const float v : z) sum += std::exp(static_cast<double>(v) - top);
  std::vector<int64_t> order(z.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t n = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(), [&](int64_t a, int64_t b) {
    return z[static_cast<size_t>(a)] > z[static_cast<size_t>(b)] || (z[static_cast<size_t>(a)] == z[static_cast<size_t>(b)] && a < b);
  });
  std::vector<std::pair<int64_t, double>> out;
  for (size_t i = 0; i < n; ++i) out.emplace_back(order[i], std::exp(static_cast<double>(z[static_cast<size_t>(order[i])]) - top) / sum);
  return out;
}

}  // namespace attention_lab

// ---- generation -------------------------------------------------------------------------------------

namespace attention_lab {

namespace {

/// Floats pack_b allocates for a (k, n) operand.
double packed(double k, double n) { return static_cast<double>(ops::packed_floats(static_cast<int64_t>(k), static_cast<int64_t>(n))); }

/// The positions a generation's forward passes compute at most, and what its cache holds.
struct GenerationShape {
  double chunk = 0;     // the longest chunk one forward computes (the prompt's prefill, or the cropped context)
  double capacity = 0;  // keys one forward attends to at most (and the cache's size)
};

GenerationShape generation_shape(const Gpt2Config& c, int64_t prompt, const Gpt2GenerateOptions& o) {
  const int64_t positions = prompt + std::max<int64_t>(o.max_new_tokens, 1) - 1;  // the last token is never fed back
  GenerationShape s;
  s.capacity = static_cast<double>(o.cache ? (o.window ? *o.window : positions)
                                           : std::min(positions, c.n_ctx));  // a window is allocated whole, as the book's torch.zeros(b, H, window_size, hd)
  s.chunk = o.cache ? static_cast<double>(prompt) : s.capacity;
  return s;
}

std::string mib(double bytes) { return std::to_string(static_cast<long long>(std::ceil(bytes / 1048576.0))); }

}  // namespace

double gpt2_generation_bytes(const Gpt2Config& c, int64_t prompt_tokens, const Gpt2GenerateOptions& o, bool resident) {
  const double d = static_cast<double>(c.n_embd), H = static_cast<double>(c.n_head), hd = d / H, V = static_cast<double>(c.vocab_size);
  const double L = static_cast<double>(c.n_layer), raw = static_cast<double>(c.value_bytes > 0 ? c.value_bytes : dtype_bytes(c.dtype)), f = 4.0;
  const GenerationShape s = generation_shape(c, prompt_tokens, o);
  const double n = s.chunk, T = s.capacity;
  // Kept through the generation: every layer's keys and values (one layer's as scratch without the
  // cache), the chunk's residual stream, the last position's norm, ln_f, the logits, the ids.
  const double kv = f * (o.cache ? L : 1.0) * 2.0 * T * d;
  // With the attention rows: the last position's row per layer and head (kept), one step's copy of them,
  // and every step's rows the caller holds (the keys each new token sees, summed over the tokens).
  const double rows_kept = o.attention ? f * L * H * T : 0.0, rows_step = o.attention ? f * L * H * T : 0.0;
  double seen = 0;
  if (o.attention)
    for (int64_t i = 0; i < std::max<int64_t>(o.max_new_tokens, 1); ++i) seen += static_cast<double>(o.cache ? prompt_tokens + i : std::min(prompt_tokens + i, c.n_ctx));
  const double results = f * L * H * seen;
  const double kept = kv + rows_kept + results + f * (n * d + 3.0 * d + V) + 8.0 * (static_cast<double>(prompt_tokens) + static_cast<double>(o.max_new_tokens));
  // Picking a token: the top-k copy of the logits, the probabilities, the order of the 5 most likely
  // (and the step's copy of the attention rows).
  const double pick = f * 2.0 * V + 8.0 * V + rows_step;
  // One block: its packed weights; its raw bytes and one decoded tensor while it loads; the activations
  // (ln's output, q k v, the context, one head's scores, the packed keys and values, the MLP's 4d).
  const double weights = f * (packed(d, 3 * d) + packed(d, d) + packed(d, 4 * d) + packed(4 * d, d) + 13.0 * d);
  const double block_raw = raw * (12.0 * d * d + 13.0 * d) + f * 4.0 * d * d;
  const double acts = f * (n * d + 3.0 * n * d + n * d + n * T + packed(hd, T) + packed(T, hd) + n * d + 4.0 * n * d);
  // A logits chunk: wte rows raw, as float32 and packed.
  const double rows = static_cast<double>(std::min<int64_t>(kGpt2LogitsChunkRows, c.vocab_size));
  const double chunk = (raw + f) * rows * d + f * packed(d, rows);
  const double embed = (raw + f) * 2.0 * n * d;
  const double slack = 8.0 * 1048576.0;  // the allocator's bookkeeping, rounding and holes (measured: up to 4 MiB past the sum on GPT-2 small)
  if (!resident) return kept + std::max({embed, pick, block_raw + weights + acts, chunk}) + slack;
  double wte = 0;
  for (int64_t begin = 0; begin < c.vocab_size; begin += kGpt2LogitsChunkRows) wte += f * packed(d, static_cast<double>(std::min(kGpt2LogitsChunkRows, c.vocab_size - begin)));
  // Resident: every block and wte packed, on top of the load in progress. The blocks' loads leave
  // holes the larger wte chunks cannot use, so a block's load and a chunk's both count.
  return kept + L * weights + wte + std::max({embed, pick, block_raw + acts + chunk}) + slack;
}

Gpt2Step gpt2_pick_token(std::vector<float> z, double temperature, std::optional<int64_t> top_k, TorchGenerator* generator) {
  const int64_t V = static_cast<int64_t>(z.size());
  if (top_k) {  // torch.topk(logits, k), then torch.where(logits < top_logits[-1], -inf, logits): ties with the k-th stay
    std::vector<float> copy = z;
    std::nth_element(copy.begin(), copy.begin() + (*top_k - 1), copy.end(), std::greater<float>());
    const float kth = copy[static_cast<size_t>(*top_k - 1)];
    for (float& v : z)
      if (v < kth) v = -std::numeric_limits<float>::infinity();
  }
  Gpt2Step s;
  bool overflow = false;  // a finite logit / temperature past float32's largest (~3.4e38): a temperature near 0
  if (temperature > 0.0) {
    const float t = static_cast<float>(temperature);  // logits / temperature: the scalar as float32, one division
    for (float& v : z) {
      const float scaled = v / t;
      overflow = overflow || (std::isfinite(v) && !std::isfinite(scaled));
      v = scaled;
    }
  } else {
    s.token = std::max_element(z.begin(), z.end()) - z.begin();  // torch.argmax: the first maximum
  }
  ops::softmax_rows(z.data(), 1, V);  // torch.softmax(logits, dim=-1); z now holds the probabilities
  if (temperature > 0.0) {
    for (const float p : z)
      if (!(p >= 0.0f && std::isfinite(p)))
        throw AttentionError(
            "non_finite_probabilities", "temperature",
            "the probabilities are not finite at temperature " + format_number(temperature) + (overflow ? ": logits / temperature overflow float32 (past ~3.4e38)" : ""),
            "torch.multinomial refuses them too. Use temperature 0 for the most likely token (greedy), or one such as 0.7 to sample.");
    if (generator == nullptr) throw AttentionError("generator", "generator", "sampling at a temperature above 0 needs a generator", "Pass {generator: lab.manualSeed(123)}.");
    s.token = generator->multinomial_one(z.data(), V);
  }
  s.prob = z[static_cast<size_t>(s.token)];
  std::vector<int64_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  const auto k = static_cast<std::ptrdiff_t>(std::min<int64_t>(5, V));
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
    return z[static_cast<size_t>(a)] > z[static_cast<size_t>(b)] || (z[static_cast<size_t>(a)] == z[static_cast<size_t>(b)] && a < b);
  });
  for (std::ptrdiff_t i = 0; i < k; ++i) s.top.emplace_back(order[static_cast<size_t>(i)], z[static_cast<size_t>(order[static_cast<size_t>(i)])]);
  return s;
}

struct Gpt2Generation::Block {
  std::vector<float> ln1_w, ln1_b, attn_b, proj_b, ln2_w, ln2_b, fc_b, mlp_b;
  ops::PackedMatrix attn, proj, fc, mlp;  // Conv1D weights (in, out), packed for y = x @ W + b
};

Gpt2Generation::Gpt2Generation(const SafetensorsHeader& header, const Gpt2Config& config, std::vector<int64_t> prompt, const Gpt2GenerateOptions& options,
                               double memory_budget_bytes)
    : header_(&header), config_(config), options_(options), ids_(std::move(prompt)) {
  const auto bad = [](const std::string& slot, const std::string& message, const std::string& hint) { return AttentionError("generate_option", slot, message, hint); };
  if (ids_.empty()) throw AttentionError("input_empty", "tokens", "no prompt tokens to generate from", "Type at least one word.");
  for (const int64_t id : ids_) {
    if (id < 0 || id >= config_.vocab_size) {
      throw AttentionError("checkpoint_token", "tokens", "token id " + std::to_string(id) + " is outside the vocabulary (0 to " + std::to_string(config_.vocab_size - 1) + ")",
                           "Tokenize with the checkpoint's own tokenizer.");
    }
  }
  if (options_.max_new_tokens < 1 || options_.max_new_tokens > 100000)
    throw bad("maxNewTokens", "maxNewTokens must be a whole number from 1 to 100000, got " + std::to_string(options_.max_new_tokens), "For example {maxNewTokens: 20}.");
  if (!(std::isfinite(options_.temperature) && options_.temperature >= 0.0))
    throw bad("temperature", "temperature must be a finite number, 0 or more", "0 picks the most likely token (greedy); 1.0 samples from the model's own probabilities.");
  if (options_.top_k && (*options_.top_k < 1 || *options_.top_k > config_.vocab_size))
    throw bad("topK", "topK must be from 1 to vocab_size " + std::to_string(config_.vocab_size) + ", got " + std::to_string(*options_.top_k),
              "For example {topK: 25}, or null for all.");
  if (options_.eos_id && (*options_.eos_id < 0 || *options_.eos_id >= config_.vocab_size))
    throw bad("eosId", "eosId " + std::to_string(*options_.eos_id) + " is outside the vocabulary (0 to " + std::to_string(config_.vocab_size - 1) + ")",
              "GPT-2's <|endoftext|> is 50256.");
  prompt_ = static_cast<int64_t>(ids_.size());
  if (options_.window) {
    const int64_t w = *options_.window;
    if (!options_.cache) throw bad("window", "window is the KV cache's size, and cache is false", "Leave window out, or pass {cache: true}.");
    if (w < 1 || w > config_.n_ctx)
      throw bad("window", "window must be a whole number from 1 to n_ctx " + std::to_string(config_.n_ctx) + ", got " + std::to_string(w),
                "A window of n_ctx already holds every position wpe has; for example {window: 64}.");
    if (prompt_ > w)  // the prompt is one prefill chunk: the book's shift would leave its pointer below 0
      throw AttentionError("cache_window", "window", "the prompt's " + std::to_string(prompt_) + " tokens are one prefill chunk, longer than the window of " + std::to_string(w),
                           "Use a window of at least " + std::to_string(prompt_) + ", or a shorter prompt.");
  }
  const int64_t positions = prompt_ + options_.max_new_tokens - 1;
  if (options_.cache && positions > config_.n_ctx) {
    // with or without a window: each position reads its own wpe row, and wpe has n_ctx of them
    throw AttentionError("cache_context", "maxNewTokens",
                         "the KV cache would " + std::string(options_.window ? "see " : "hold ") + std::to_string(positions) + " positions (" + std::to_string(prompt_) +
                             " prompt tokens + maxNewTokens " + std::to_string(options_.max_new_tokens) + " - 1) but n_ctx is " + std::to_string(config_.n_ctx) +
                             " (wpe.weight rows)" +
                             (options_.window ? ": a window bounds the keys held, not the positions, and position " + std::to_string(config_.n_ctx) + " has no wpe row" : ""),
                         "Generate fewer tokens, or pass {cache: false} to crop the context to its last n_ctx tokens as the book's generate does.");
  }
  const double lean = gpt2_generation_bytes(config_, prompt_, options_, false), full = gpt2_generation_bytes(config_, prompt_, options_, true);
  resident_ = options_.resident.value_or(full <= memory_budget_bytes);
  estimate_ = resident_ ? full : lean;
  if (estimate_ > memory_budget_bytes) {
    throw AttentionError("too_large", "tokens",
                         "generating from " + std::to_string(prompt_) + " tokens needs about " + mib(estimate_) + " MiB" + (resident_ ? " with the weights resident" : "") +
                             ", over the " + mib(memory_budget_bytes) + " MiB this page allows",
                         resident_ && lean <= memory_budget_bytes ? "Let the weights be re-read per token (resident: null)." : "Use a shorter prompt or fewer new tokens.");
  }
  const GenerationShape shape = generation_shape(config_, prompt_, options_);
  capacity_ = static_cast<int64_t>(shape.capacity);
  const size_t kv = static_cast<size_t>((options_.cache ? config_.n_layer : 1) * capacity_ * config_.n_embd);
  keys_.assign(kv, 0.0f);
  values_.assign(kv, 0.0f);
  if (options_.attention) attention_.assign(static_cast<size_t>(config_.n_layer * config_.n_head * capacity_), 0.0f);
  if (resident_) blocks_.resize(static_cast<size_t>(config_.n_layer));
  // the first forward: the whole prompt (cropped to n_ctx without the cache)
  const int64_t window = options_.cache ? prompt_ : std::min(prompt_, config_.n_ctx);
  chunk_ids_.assign(ids_.end() - window, ids_.end());
  pos0_ = 0;
  n_ = window;
}

Gpt2Generation::~Gpt2Generation() = default;

const SafetensorsEntry& Gpt2Generation::entry(const std::string& key) const {
  const SafetensorsEntry* e = header_->find(config_.prefix + key);
  if (e == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + config_.prefix + key, kGpt2Hint);
  return *e;
}

std::vector<ByteRead> Gpt2Generation::block_reads(int64_t layer) const {
  std::vector<ByteRead> reads;
  for (const auto& [key, shape] : block_tensors(config_.n_embd)) {
    const std::string name = "h." + std::to_string(layer) + "." + key;
    reads.push_back({config_.prefix + name, entry(name)});
  }
  return reads;
}

std::vector<ByteRead> Gpt2Generation::reads() const {
  if (finished_) return {};
  switch (phase_) {
    case Phase::Embed: {
      std::vector<ByteRead> reads;
      std::vector<int64_t> distinct = chunk_ids_;
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      const SafetensorsEntry& wte = entry("wte.weight");
      for (const int64_t id : distinct) reads.push_back({"wte.weight[" + std::to_string(id) + "]", rows_of(wte, id, id + 1)});
      reads.push_back({"wpe.weight[" + std::to_string(pos0_) + ":" + std::to_string(pos0_ + n_) + "]", rows_of(entry("wpe.weight"), pos0_, pos0_ + n_)});
      return reads;
    }
    case Phase::Block:
      if (resident_ && blocks_[static_cast<size_t>(layer_)]) return {};
      return block_reads(layer_);
    case Phase::Final:
      if (!ln_f_w_.empty()) return {};
      return {{config_.prefix + "ln_f.weight", entry("ln_f.weight")}, {config_.prefix + "ln_f.bias", entry("ln_f.bias")}};
    case Phase::Logits: {
      if (resident_ && static_cast<size_t>(chunk_) < wte_chunks_.size()) return {};
      const int64_t begin = chunk_ * kGpt2LogitsChunkRows, end = std::min(begin + kGpt2LogitsChunkRows, config_.vocab_size);
      return {{"wte.weight[" + std::to_string(begin) + ":" + std::to_string(end) + "]", rows_of(entry("wte.weight"), begin, end)}};
    }
  }
  return {};
}

void Gpt2Generation::run_block(const Block& w, int64_t layer) {
  const int64_t n = n_, d = config_.n_embd, H = config_.n_head, hd = d / H, cap = capacity_;
  // A window that the chunk would overflow shifts its oldest entries out first (the book's
  // cache_k[:, :, :-overflow] = cache_k[:, :, overflow:]); the chunk's keys go after the held ones.
  const int64_t overflow = std::max<int64_t>(0, cached_ + n - cap), held = cached_ - overflow, T = held + n;
  const size_t base = static_cast<size_t>((options_.cache ? layer : 0) * H * cap * hd);
  float* K = keys_.data() + base;
  float* Vv = values_.data() + base;
  if (overflow > 0)
    for (int64_t hh = 0; hh < H; ++hh) {
      std::copy(K + (hh * cap + overflow) * hd, K + (hh * cap + cached_) * hd, K + hh * cap * hd);
      std::copy(Vv + (hh * cap + overflow) * hd, Vv + (hh * cap + cached_) * hd, Vv + hh * cap * hd);
    }
  // x = x + attn(ln_1(x)): q, k, v of the chunk's positions (c_attn, Conv1D), the new keys and values
  // appended at their positions, each query against every key up to its own position.
  std::vector<float> h(x_);
  ops::layer_norm_rows(h.data(), n, d, w.ln1_w.data(), w.ln1_b.data(), 1e-5f);
  std::vector<float> qkv(static_cast<size_t>(n * 3 * d));
  ops::gemm(pool_, h.data(), n, d, w.attn, w.attn_b.data(), qkv.data());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t hh = 0; hh < H; ++hh) {
      const float* row = qkv.data() + i * 3 * d + hh * hd;
      std::copy(row + d, row + d + hd, K + (hh * cap + held + i) * hd);
      std::copy(row + 2 * d, row + 2 * d + hd, Vv + (hh * cap + held + i) * hd);
    }
  const float scale_div = static_cast<float>(std::sqrt(static_cast<double>(hd)));
  std::vector<float> context(static_cast<size_t>(n * d)), scores(static_cast<size_t>(n * T));
  ops::PackedMatrix keys_t, values;
  for (int64_t hh = 0; hh < H; ++hh) {
    if (n == 1) {  // one new position (a cached decode): against the cache as it lies, no packing
      float* row = scores.data();
      ops::vecmat(qkv.data() + hh * hd, hd, K + hh * cap * hd, T, hd, true, row);  // q @ k^T (T)
      ops::scaled_softmax_rows(row, 1, T, scale_div, false);
      if (!attention_.empty()) std::copy(row, row + T, attention_.data() + (layer * H + hh) * cap);  // the new token's row
      ops::vecmat(row, T, Vv + hh * cap * hd, hd, hd, false, context.data() + hh * hd);              // weights @ v (hd)
      continue;
    }
    ops::pack_b_into(keys_t, K + hh * cap * hd, hd, T, true);
    ops::gemm(pool_, qkv.data() + hh * hd, n, hd, keys_t, nullptr, scores.data(), ops::Triangle::None, 3 * d);  // q @ k^T (n, T)
    for (int64_t i = 0; i < n; ++i) {  // chunk row i sees the held keys and the chunk's 0 .. i (the causal mask's row)
      float* row = scores.data() + i * T;
      const int64_t seen = held + i + 1;
      ops::scaled_softmax_rows(row, 1, seen, scale_div, false);
      std::fill(row + seen, row + T, 0.0f);
      if (!attention_.empty() && i == n - 1) std::copy(row, row + seen, attention_.data() + (layer * H + hh) * cap);  // the new token's row
    }
    ops::pack_b_into(values, Vv + hh * cap * hd, T, hd, false);
    ops::gemm(pool_, scores.data(), n, T, values, nullptr, context.data() + hh * hd, ops::Triangle::None, 0, d);  // weights @ v (n, hd)
  }
  ops::gemm(pool_, context.data(), n, d, w.proj, w.proj_b.data(), h.data());
  for (size_t i = 0; i < x_.size(); ++i) x_[i] += h[i];
  // x = x + c_proj(gelu(c_fc(ln_2(x))))
  h = x_;
  ops::layer_norm_rows(h.data(), n, d, w.ln2_w.data(), w.ln2_b.data(), 1e-5f);
  std::vector<float> hidden(static_cast<size_t>(n * 4 * d));
  ops::gemm(pool_, h.data(), n, d, w.fc, w.fc_b.data(), hidden.data());
  gelu_tanh(hidden.data(), hidden.size());
  ops::gemm(pool_, hidden.data(), n, 4 * d, w.mlp, w.mlp_b.data(), h.data());
  for (size_t i = 0; i < x_.size(); ++i) x_[i] += h[i];
}

void Gpt2Generation::run_phase(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  const int64_t d = config_.n_embd;
  switch (phase_) {
    case Phase::Embed: {
      const std::vector<ByteRead> r = reads();
      std::map<int64_t, std::vector<float>> rows;
      for (size_t i = 0; i + 1 < r.size(); ++i) rows[std::stoll(r[i].name.substr(11))] = values_of(r[i], bytes);
      x_ = gpt2_embed(chunk_ids_, rows, values_of(r.back(), bytes), d).data;  // wte[ids] + wpe[pos0 : pos0 + n]
      phase_ = Phase::Block;
      layer_ = 0;
      return;
    }
    case Phase::Block: {
      std::unique_ptr<Block> loaded;
      const Block* w = resident_ ? blocks_[static_cast<size_t>(layer_)].get() : nullptr;
      if (w == nullptr) {
        const std::vector<ByteRead> r = block_reads(layer_);
        loaded = std::make_unique<Block>();
        Block& b = *loaded;
        b.ln1_w = values_of(r[0], bytes);
        b.ln1_b = values_of(r[1], bytes);
        b.attn = ops::pack_b(values_of(r[2], bytes).data(), d, 3 * d, false);
        b.attn_b = values_of(r[3], bytes);
        b.proj = ops::pack_b(values_of(r[4], bytes).data(), d, d, false);
        b.proj_b = values_of(r[5], bytes);
        b.ln2_w = values_of(r[6], bytes);
        b.ln2_b = values_of(r[7], bytes);
        b.fc = ops::pack_b(values_of(r[8], bytes).data(), d, 4 * d, false);
        b.fc_b = values_of(r[9], bytes);
        b.mlp = ops::pack_b(values_of(r[10], bytes).data(), 4 * d, d, false);
        b.mlp_b = values_of(r[11], bytes);
        w = loaded.get();
      }
      run_block(*w, layer_);
      if (resident_ && loaded) blocks_[static_cast<size_t>(layer_)] = std::move(loaded);
      if (++layer_ == config_.n_layer) phase_ = Phase::Final;
      return;
    }
    case Phase::Final: {
      if (ln_f_w_.empty()) {
        const std::vector<ByteRead> r = reads();
        ln_f_w_ = values_of(r[0], bytes);
        ln_f_b_ = values_of(r[1], bytes);
      }
      last_.assign(x_.end() - d, x_.end());  // the last position only: the next token is read there
      ops::layer_norm_rows(last_.data(), 1, d, ln_f_w_.data(), ln_f_b_.data(), 1e-5f);
      logits_.assign(static_cast<size_t>(config_.vocab_size), 0.0f);
      phase_ = Phase::Logits;
      chunk_ = 0;
      return;
    }
    case Phase::Logits: {
      const int64_t begin = chunk_ * kGpt2LogitsChunkRows;
      if (resident_ && static_cast<size_t>(chunk_) < wte_chunks_.size()) {
        ops::gemm(pool_, last_.data(), 1, d, wte_chunks_[static_cast<size_t>(chunk_)], nullptr, logits_.data() + begin);
      } else {
        const ByteRead r = reads().front();
        ops::PackedMatrix rows;
        {
          const std::vector<float> values = values_of(r, bytes);  // (rows, d)
          rows = ops::pack_b(values.data(), d, r.entry.shape[0], true);
        }
        ops::gemm(pool_, last_.data(), 1, d, rows, nullptr, logits_.data() + begin);
        if (resident_) wte_chunks_.push_back(std::move(rows));
      }
      ++chunk_;
      return;
    }
  }
}

std::optional<Gpt2Step> Gpt2Generation::finish_token(TorchGenerator* generator) {
  Gpt2Step s = gpt2_pick_token(logits_, options_.temperature, options_.top_k, generator);
  cached_ = options_.cache ? std::min(cached_ + n_, capacity_) : 0;  // a window keeps its last capacity_ entries
  s.cache_tokens = cached_;
  s.cache_bytes = 2.0 * 4.0 * static_cast<double>(config_.n_layer * cached_ * config_.n_embd);
  if (!attention_.empty()) {                                                                   // (n_layer, n_head, T) out of (n_layer, n_head, capacity)
    const int64_t T = options_.cache ? cached_ : n_, rows = config_.n_layer * config_.n_head;  // the keys the row saw: at most a window's
    s.attention_keys = T;
    s.attention.resize(static_cast<size_t>(rows * T));
    for (int64_t r = 0; r < rows; ++r) std::copy_n(attention_.data() + r * capacity_, T, s.attention.data() + r * T);
  }
  if (options_.eos_id && s.token == *options_.eos_id) {  // the book's `if idx_next == eos_id: break`: not appended
    eos_ = finished_ = true;
    return std::nullopt;
  }
  ids_.push_back(s.token);
  if (++made_ == options_.max_new_tokens) {
    finished_ = true;
    return s;
  }
  // the next forward: the new token alone (cached), or the whole context cropped to n_ctx
  if (options_.cache) {
    pos0_ += n_;  // the absolute position: wpe's row, whatever the window holds
    n_ = 1;
    chunk_ids_.assign(1, s.token);
  } else {
    n_ = std::min<int64_t>(static_cast<int64_t>(ids_.size()), config_.n_ctx);
    pos0_ = 0;
    chunk_ids_.assign(ids_.end() - n_, ids_.end());
  }
  phase_ = Phase::Embed;
  return s;
}

std::optional<Gpt2Step> Gpt2Generation::step(const std::map<std::string, std::vector<uint8_t>>& bytes, TorchGenerator* generator) {
  if (finished_) throw AttentionError("not_in_progress", "", "the generation is finished", "Start another with model.generate.");
  if (options_.temperature > 0.0 && generator == nullptr)
    throw AttentionError("generator", "generator", "sampling at a temperature above 0 needs a generator", "Pass {generator: lab.manualSeed(123)}.");
  static const std::map<std::string, std::vector<uint8_t>> none;
  const std::map<std::string, std::vector<uint8_t>>* given = &bytes;
  for (;;) {
    run_phase(*given);
    given = &none;
    if (phase_ == Phase::Logits && chunk_ * kGpt2LogitsChunkRows >= config_.vocab_size) {
      std::optional<Gpt2Step> s = finish_token(generator);
      if (s || finished_) return s;
    }
    if (finished_ || !reads().empty()) return std::nullopt;
  }
}

}  // namespace attention_lab
