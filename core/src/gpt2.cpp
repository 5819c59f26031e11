#include "attention_lab/gpt2.hpp"
#include "attention_lab/gpt2_sizes.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attention_lab/plan.hpp"

namespace attention_lab {

namespace {
/// The GPT-2 widths as a sentence ("a, b, c or d"), from the one size table.
std::string gpt2_widths() {
  std::string out;
  const size_t n = std::size(kGpt2Sizes);
  for (size_t i = 0; i < n; ++i) out += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::to_string(kGpt2Sizes[i].n_embd);
  return out;
}
}  // namespace

namespace {

/// The 12 tensors of block L, after "h.L.", with their shapes for width d (Conv1D weights are (in, out)).
std::vector<std::pair<std::string, Shape>> block_tensors(int64_t d) {
  return {{"ln_1.weight", {d}}, {"ln_1.bias", {d}}, {"attn.c_attn.weight", {d, 3 * d}}, {"attn.c_attn.bias", {3 * d}}, {"attn.c_proj.weight", {d, d}},    {"attn.c_proj.bias", {d}},
          {"ln_2.weight", {d}}, {"ln_2.bias", {d}}, {"mlp.c_fc.weight", {d, 4 * d}},    {"mlp.c_fc.bias", {4 * d}},    {"mlp.c_proj.weight", {4 * d, d}}, {"mlp.c_proj.bias", {d}}};
}

int64_t dtype_bytes(const std::string& dtype) { return dtype == "F32" ? 4 : 2; }

const std::string kGpt2Hint = "Use a GPT-2 checkpoint in the Hugging Face layout (model.safetensors of the gpt2 repositories).";

/// The float32 values of one read's bytes, refusing NaN and infinity (they would spread through every later layer).
std::vector<float> decoded(const ByteRead& r, const std::vector<uint8_t>& raw) {
  std::vector<float> v = decode_tensor(r.entry, raw.data(), raw.size());
  if (const std::string where = first_non_finite(v.data(), v.size(), r.entry.shape); !where.empty()) {
    throw AttentionError("non_finite_parameter", "", "the file's " + r.name + where + " (" + r.entry.dtype + ")",
                         r.entry.dtype == "F16" ? "float16 tops out at 65504: a larger value became inf when the file was saved."
                                                : "The file holds a NaN or infinity in a weight; it cannot be used as it is.");
  }
  return v;
}

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

Gpt2Config gpt2_config(const SafetensorsHeader& header, std::optional<int64_t> num_heads) {
  Gpt2Config c;
  c.prefix = header.find("wte.weight") == nullptr && header.find("transformer.wte.weight") != nullptr ? "transformer." : "";
  const auto need = [&](const std::string& key, const Shape& shape) -> const SafetensorsEntry& {
    const SafetensorsEntry* e = header.find(c.prefix + key);
    if (e == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + c.prefix + key + ", which the whole model needs", kGpt2Hint);
    if (!shape.empty() && e->shape != shape)
      throw AttentionError("checkpoint_shape", "", c.prefix + key + " is " + shape_string(e->shape) + " but the model needs " + shape_string(shape), kGpt2Hint);
    if (e->dtype != "F32" && e->dtype != "F16" && e->dtype != "BF16")
      throw AttentionError("checkpoint_dtype", "", c.prefix + key + " is " + e->dtype + "; GPT-2 files here are F32, F16 or BF16", kGpt2Hint);
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
  while (header.find(c.prefix + "h." + std::to_string(c.n_layer) + ".ln_1.weight") != nullptr) ++c.n_layer;
  if (c.n_layer == 0) throw AttentionError("checkpoint_layer", "layer", "the file has no transformer blocks (no " + c.prefix + "h.0.ln_1.weight)", kGpt2Hint);
  for (int64_t L = 0; L < c.n_layer; ++L)
    for (const auto& [key, shape] : block_tensors(d)) need("h." + std::to_string(L) + "." + key, shape);
  need("ln_f.weight", {d});
  need("ln_f.bias", {d});

  if (num_heads) {
    c.n_head = *num_heads;
  } else if (const auto it = header.metadata.find("n_head"); it != header.metadata.end()) {
    char* end = nullptr;
    const long long v = std::strtoll(it->second.c_str(), &end, 10);
    c.n_head = end != nullptr && *end == '\0' ? v : 0;
  } else {
    c.n_head = gpt2_preset_heads(d);
  }
  if (c.n_head < 1 || d % c.n_head != 0) {
    throw AttentionError("checkpoint_num_heads", "num_heads",
                         c.n_head < 1 ? "the head count of width " + std::to_string(d) + " is not GPT-2's (" + gpt2_widths() + ") and the file does not say it"
                                      : "num_heads " + std::to_string(c.n_head) + " does not divide n_embd " + std::to_string(d),
                         "Give num_heads (for example {num_heads: 12}).");
  }
  const bool gpt2_shape = c.vocab_size == kGpt2Vocab && c.n_ctx == kGpt2Context;
  if (const Gpt2Size* size = gpt2_size_of_width(d); gpt2_shape && size && c.n_layer == size->n_layer && c.n_head == size->n_head) c.size = size->name;
  return c;
}

double gpt2_run_bytes(const Gpt2Config& c, int64_t num_tokens) {
  const double d = static_cast<double>(c.n_embd), T = static_cast<double>(num_tokens), H = static_cast<double>(c.n_head);
  const double V = static_cast<double>(c.vocab_size), raw = static_cast<double>(dtype_bytes(c.dtype));
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
  return kept + std::max({embed, block, logits});
}

Gpt2Run::Gpt2Run(const SafetensorsHeader& header, const Gpt2Config& config, std::vector<int64_t> token_ids, double memory_budget_bytes)
    : header_(&header), config_(config), ids_(std::move(token_ids)) {
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
  const double bytes = gpt2_run_bytes(config_, num_tokens());
  if (bytes > memory_budget_bytes) {
    throw AttentionError("too_large", "tokens",
                         "running the model on " + std::to_string(num_tokens()) + " tokens needs about " + std::to_string(static_cast<long long>(bytes / 1048576.0)) +
                             " MiB, over the " + std::to_string(static_cast<long long>(memory_budget_bytes / 1048576.0)) + " MiB this page allows",
                         "Use fewer tokens.");
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
  (void)T;
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
  out.input = x_;
  // x = x + attn(ln_1(x)): the book's MultiHeadAttention, loaded from c_attn / c_proj as one layer is.
  {
    Tensor h = x_;
    ops::layer_norm_rows(h.data.data(), T, d, value(0).data(), value(1).data(), 1e-5f);
    CheckpointPlan plan;
    plan.config = attention_config(config_);
    plan.prefix = config_.prefix;
    for (const size_t i : {2, 3, 4, 5}) plan.needed.push_back(reads[i].entry);
    const AttentionModule attn = load_gpt2_attention(plan, bytes);
    ForwardOptions options;
    options.training = false;
    options.attn_weights = &out.attn_weights;
    options.memory_budget_bytes = 1e300;  // the run's estimate was checked at its start
    const Tensor a = attn.forward(h, options);
    for (size_t i = 0; i < x_.data.size(); ++i) x_.data[i] += a.data[i];
  }
  // x = x + c_proj(gelu(c_fc(ln_2(x)))), Conv1D weights (in, out): y = x @ W + b.
  {
    Tensor h = x_;
    ops::layer_norm_rows(h.data.data(), T, d, value(6).data(), value(7).data(), 1e-5f);
    std::vector<float> hidden(static_cast<size_t>(T * 4 * d));
    {
      const ops::PackedMatrix fc = ops::pack_b(value(8).data(), d, 4 * d, false);
      ops::gemm(h.data.data(), T, d, fc, value(9).data(), hidden.data());
    }
    gelu_tanh(hidden.data(), hidden.size());
    const ops::PackedMatrix proj = ops::pack_b(value(10).data(), 4 * d, d, false);
    ops::gemm(hidden.data(), T, 4 * d, proj, value(11).data(), h.data.data());
    for (size_t i = 0; i < x_.data.size(); ++i) x_.data[i] += h.data[i];
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
  return h;
}

std::vector<ByteRead> Gpt2Run::final_reads() const { return {{config_.prefix + "ln_f.weight", entry("ln_f.weight")}, {config_.prefix + "ln_f.bias", entry("ln_f.bias")}}; }

void Gpt2Run::final_norm(const std::map<std::string, std::vector<uint8_t>>& bytes) {
  if (next_layer_ != config_.n_layer) throw AttentionError("checkpoint_layer", "layer", "ln_f runs after every block", "");
  const std::vector<ByteRead> reads = final_reads();
  const int64_t d = config_.n_embd;
  last_.assign(x_.data.end() - d, x_.data.end());  // the last position only: the logits are wanted there
  ops::layer_norm_rows(last_.data(), 1, d, values_of(reads[0], bytes).data(), values_of(reads[1], bytes).data(), 1e-5f);
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
  ops::gemm(last_.data(), 1, d, rows, nullptr, logits_.data() + begin);
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
