#include "gpt2_block.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attention_lab {

const char* const kGpt2Hint = "Use a GPT-2 checkpoint in the Hugging Face layout (model.safetensors of the gpt2 repositories).";

int64_t gpt2_dtype_bytes(const std::string& dtype) { return dtype == "F32" ? 4 : 2; }

const SafetensorsEntry& gpt2_entry(const SafetensorsHeader& header, const Gpt2Config& config, const std::string& key) {
  const SafetensorsEntry* e = header.find(config.prefix + key);
  if (e == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + config.prefix + key, kGpt2Hint);
  return *e;
}

std::vector<float> gpt2_values(const ByteRead& r, const Gpt2Bytes& bytes) {
  const auto it = bytes.find(r.name);
  if (it == bytes.end()) throw AttentionError("checkpoint_missing_key", "", "the bytes of " + r.name + " were not given", "");
  return decode_weight(r.entry, r.name, it->second.data(), it->second.size());
}

namespace {

/// The ids once each, ascending: the wte rows an embedding reads.
std::vector<int64_t> distinct_ids(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

/// x[t] = wte[ids[t]] + wpe[t], (1, num_tokens, d) row-major float32, from each distinct id's wte row
/// (`rows`: id -> (d)) and the num_tokens rows of wpe read ((num_tokens * d), row-major).
Tensor embed_rows(const std::vector<int64_t>& ids, const std::map<int64_t, std::vector<float>>& rows, const std::vector<float>& wpe, int64_t d) {
  const int64_t T = static_cast<int64_t>(ids.size());
  Tensor x({1, T, d});
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<float>& row = rows.at(ids[static_cast<size_t>(t)]);
    for (int64_t c = 0; c < d; ++c) x.data[static_cast<size_t>(t * d + c)] = row[static_cast<size_t>(c)] + wpe[static_cast<size_t>(t * d + c)];
  }
  return x;
}

/// What a layer's input reads beside the embedding, once its keys, dtypes, shapes and tokens are
/// checked: the model's facts the embedding read takes (prefix, width, rows) and ln_1's two entries.
struct BlockInputPlan {
  Gpt2Config config;
  ByteRead ln_1_weight, ln_1_bias;
};

BlockInputPlan block_input_plan(const SafetensorsHeader& header, const std::vector<int64_t>& token_ids, int64_t layer) {
  CheckpointOptions probe;
  probe.layer = layer;
  probe.num_heads = 1;  // any divisor: only the prefix and the layer check are used here
  probe.context_length = 1;
  BlockInputPlan p;
  p.config.prefix = plan_gpt2_attention(header, probe).prefix;
  const auto need = [&](const std::string& key) -> const SafetensorsEntry& {
    const SafetensorsEntry* e = header.find(key);
    if (e == nullptr)
      throw AttentionError("checkpoint_missing_key", "", "the file has no " + key + ", needed to turn tokens into the layer's input",
                           "Use a full GPT-2 checkpoint (with wte, wpe and ln_1).");
    return *e;
  };
  const std::string& prefix = p.config.prefix;
  const SafetensorsEntry& wte = need(prefix + "wte.weight");
  const SafetensorsEntry& wpe = need(prefix + "wpe.weight");
  const std::string ln = prefix + "h." + std::to_string(layer) + ".ln_1.";
  p.ln_1_weight = {ln + "weight", need(ln + "weight")};
  p.ln_1_bias = {ln + "bias", need(ln + "bias")};
  const SafetensorsEntry &ln_w = p.ln_1_weight.entry, &ln_b = p.ln_1_bias.entry;
  for (const SafetensorsEntry* e : {&wte, &wpe, &ln_w, &ln_b}) require_gpt2_dtype(*e);
  if (wte.shape.size() != 2 || wpe.shape.size() != 2 || wte.shape[1] != wpe.shape[1] || ln_w.shape != Shape{wte.shape[1]} || ln_b.shape != Shape{wte.shape[1]})
    throw AttentionError("checkpoint_shape", "",
                         "wte " + shape_string(wte.shape) + ", wpe " + shape_string(wpe.shape) + " and ln_1 " + shape_string(ln_w.shape) + " do not fit together", "");
  if (token_ids.empty()) throw AttentionError("input_empty", "tokens", "no tokens to embed", "Type at least one word.");
  const int64_t num_tokens = static_cast<int64_t>(token_ids.size());
  if (num_tokens > wpe.shape[0]) {
    throw AttentionError("context_too_short", "context_length",
                         "num_tokens " + std::to_string(num_tokens) + " > context_length " + std::to_string(wpe.shape[0]) + " (wpe.weight rows)",
                         "Use at most " + std::to_string(wpe.shape[0]) + " tokens.");
  }
  for (const int64_t id : token_ids) {
    if (id < 0 || id >= wte.shape[0]) {
      throw AttentionError("checkpoint_token", "tokens", "token id " + std::to_string(id) + " is outside the vocabulary (0 to " + std::to_string(wte.shape[0] - 1) + ")",
                           "Tokenize with the checkpoint's own tokenizer.");
    }
  }
  p.config.vocab_size = wte.shape[0];
  p.config.n_embd = wte.shape[1];
  p.config.n_ctx = wpe.shape[0];
  return p;
}

/// GELU with the tanh approximation, as the book's GELU and GPT-2: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void gelu_tanh(float* x, size_t n) {
  const double c = std::sqrt(2.0 / 3.14159265358979323846);
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i];
    x[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))));
  }
}

/// x += y, element by element (a residual connection).
void add_into(Tensor& x, const float* y) {
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] += y[i];
}

}  // namespace

std::vector<ByteRead> gpt2_embedding_reads(const SafetensorsHeader& header, const Gpt2Config& config, const std::vector<int64_t>& ids, int64_t first) {
  std::vector<ByteRead> reads;
  const SafetensorsEntry& wte = gpt2_entry(header, config, "wte.weight");
  for (const int64_t id : distinct_ids(ids)) reads.push_back({"wte.weight[" + std::to_string(id) + "]", rows_of(wte, id, id + 1)});
  const int64_t end = first + static_cast<int64_t>(ids.size());
  reads.push_back({"wpe.weight[" + std::to_string(first) + ":" + std::to_string(end) + "]", rows_of(gpt2_entry(header, config, "wpe.weight"), first, end)});
  return reads;
}

Tensor gpt2_embedding(const SafetensorsHeader& header, const Gpt2Config& config, const std::vector<int64_t>& ids, int64_t first, const Gpt2Bytes& bytes) {
  const std::vector<ByteRead> reads = gpt2_embedding_reads(header, config, ids, first);
  const std::vector<int64_t> distinct = distinct_ids(ids);  // reads[i] is wte's row distinct[i]
  std::map<int64_t, std::vector<float>> rows;
  for (size_t i = 0; i < distinct.size(); ++i) rows[distinct[i]] = gpt2_values(reads[i], bytes);
  return embed_rows(ids, rows, gpt2_values(reads.back(), bytes), config.n_embd);  // (1, n, d) = wte[ids] + wpe[first : first + n]
}

std::vector<ByteRead> plan_gpt2_block_input(const SafetensorsHeader& header, const std::vector<int64_t>& token_ids, int64_t layer) {
  const BlockInputPlan p = block_input_plan(header, token_ids, layer);
  std::vector<ByteRead> reads = gpt2_embedding_reads(header, p.config, token_ids, 0);
  reads.push_back(p.ln_1_weight);
  reads.push_back(p.ln_1_bias);
  return reads;
}

Tensor gpt2_block_input(const SafetensorsHeader& header, const std::vector<int64_t>& token_ids, int64_t layer, const Gpt2Bytes& bytes) {
  const BlockInputPlan p = block_input_plan(header, token_ids, layer);
  const int64_t d = p.config.n_embd;
  Tensor x = gpt2_embedding(header, p.config, token_ids, 0, bytes);  // (1, num_tokens, d)
  check_gpt2_stage(x.data.data(), x.data.size(), d, -1, "embedding", "wte[ids] + wpe[:T]");
  gpt2_layer_norm(x, gpt2_values(p.ln_1_weight, bytes), gpt2_values(p.ln_1_bias, bytes));
  check_gpt2_stage(x.data.data(), x.data.size(), d, layer, "ln_1", "ln_1(x)");
  return x;
}

std::vector<ByteRead> gpt2_final_reads(const SafetensorsHeader& header, const Gpt2Config& config) {
  return {{config.prefix + "ln_f.weight", gpt2_entry(header, config, "ln_f.weight")}, {config.prefix + "ln_f.bias", gpt2_entry(header, config, "ln_f.bias")}};
}

ByteRead gpt2_logits_read(const SafetensorsHeader& header, const Gpt2Config& config, int64_t chunk) {
  const int64_t begin = chunk * kGpt2LogitsChunkRows, end = std::min(begin + kGpt2LogitsChunkRows, config.vocab_size);
  return {"wte.weight[" + std::to_string(begin) + ":" + std::to_string(end) + "]", rows_of(gpt2_entry(header, config, "wte.weight"), begin, end)};
}

int64_t gpt2_logits_chunks(const Gpt2Config& config) { return (config.vocab_size + kGpt2LogitsChunkRows - 1) / kGpt2LogitsChunkRows; }

std::vector<std::pair<std::string, Shape>> gpt2_block_tensors(int64_t d) {
  return {{"ln_1.weight", {d}}, {"ln_1.bias", {d}}, {"attn.c_attn.weight", {d, 3 * d}}, {"attn.c_attn.bias", {3 * d}}, {"attn.c_proj.weight", {d, d}},    {"attn.c_proj.bias", {d}},
          {"ln_2.weight", {d}}, {"ln_2.bias", {d}}, {"mlp.c_fc.weight", {d, 4 * d}},    {"mlp.c_fc.bias", {4 * d}},    {"mlp.c_proj.weight", {4 * d, d}}, {"mlp.c_proj.bias", {d}}};
}

std::vector<ByteRead> gpt2_block_reads(const SafetensorsHeader& header, const Gpt2Config& config, int64_t layer) {
  std::vector<ByteRead> reads;
  for (const auto& [key, shape] : gpt2_block_tensors(config.n_embd)) {
    const std::string name = "h." + std::to_string(layer) + "." + key;
    reads.push_back({config.prefix + name, gpt2_entry(header, config, name)});
  }
  return reads;
}

ModuleConfig gpt2_attention_config(const Gpt2Config& c) {
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

Gpt2BlockWeights load_gpt2_block(const SafetensorsHeader& header, const Gpt2Config& config, int64_t layer, const Gpt2Bytes& bytes) {
  const int64_t d = config.n_embd;
  const std::string block = "h." + std::to_string(layer) + ".";
  const auto read = [&](const std::string& key) { return ByteRead{config.prefix + block + key, gpt2_entry(header, config, block + key)}; };
  const auto values = [&](const std::string& key) { return gpt2_values(read(key), bytes); };
  // the attention: the book's MultiHeadAttention, loaded from c_attn / c_proj as one layer is
  CheckpointPlan plan;
  plan.config = gpt2_attention_config(config);
  plan.prefix = config.prefix;
  for (const char* key : {"attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias"}) plan.needed.push_back(read(key).entry);
  Gpt2BlockWeights w(load_gpt2_attention(plan, bytes));
  w.ln_1_weight = values("ln_1.weight");
  w.ln_1_bias = values("ln_1.bias");
  w.ln_2_weight = values("ln_2.weight");
  w.ln_2_bias = values("ln_2.bias");
  // the MLP's Conv1D weights (in, out), packed one at a time (each decoded copy freed before the next)
  w.mlp_c_fc_weight = ops::pack_b(values("mlp.c_fc.weight").data(), d, 4 * d, false);
  w.mlp_c_fc_bias = values("mlp.c_fc.bias");
  w.mlp_c_proj_weight = ops::pack_b(values("mlp.c_proj.weight").data(), 4 * d, d, false);
  w.mlp_c_proj_bias = values("mlp.c_proj.bias");
  return w;
}

void gpt2_layer_norm(Tensor& x, const std::vector<float>& weight, const std::vector<float>& bias) {
  const int64_t d = static_cast<int64_t>(weight.size());
  ops::layer_norm_rows(x.data.data(), static_cast<int64_t>(x.data.size()) / d, d, weight.data(), bias.data(), 1e-5f);
}

void run_gpt2_block(const Gpt2BlockWeights& w, Tensor& x, const Gpt2BlockOptions& o) {
  const int64_t d = x.shape.back(), n = static_cast<int64_t>(x.data.size()) / d;
  const auto check = [&](const float* v, int64_t count, int64_t width, const char* stage, const char* formula) {
    check_gpt2_stage(v, static_cast<size_t>(count), width, o.layer, stage, formula);
  };
  Tensor h = x;  // the LayerNorms' output, then the MLP's
  // x = x + attn(ln_1(x)): the core's attention forward (with the KV cache on a cached step)
  {
    gpt2_layer_norm(h, w.ln_1_weight, w.ln_1_bias);
    check(h.data.data(), n * d, d, "ln_1", "ln_1(x)");
    ForwardOptions f;
    f.training = false;
    f.attn_weights = o.attn_weights;
    f.cache = o.cache;
    f.pool = o.pool;
    f.memory_budget_bytes = std::numeric_limits<double>::infinity();  // the run's or generation's own estimate was checked at its start
    const Tensor a = w.attn.forward(h, f);
    check(a.data.data(), n * d, d, "attn", "attn(ln_1(x))");
    add_into(x, a.data.data());
    check(x.data.data(), n * d, d, "attn_residual", "x + attn(ln_1(x))");
  }
  // x = x + c_proj(gelu(c_fc(ln_2(x)))), Conv1D weights (in, out): y = x @ W + b
  h.data = x.data;
  gpt2_layer_norm(h, w.ln_2_weight, w.ln_2_bias);
  check(h.data.data(), n * d, d, "ln_2", "ln_2(x)");
  std::vector<float> hidden(static_cast<size_t>(n * 4 * d));
  ops::gemm(o.pool, h.data.data(), n, d, w.mlp_c_fc_weight, w.mlp_c_fc_bias.data(), hidden.data());
  check(hidden.data(), n * 4 * d, 4 * d, "c_fc", "c_fc(ln_2(x))");
  gelu_tanh(hidden.data(), hidden.size());
  check(hidden.data(), n * 4 * d, 4 * d, "gelu", "gelu_tanh(c_fc(ln_2(x)))");
  ops::gemm(o.pool, hidden.data(), n, 4 * d, w.mlp_c_proj_weight, w.mlp_c_proj_bias.data(), h.data.data());
  check(h.data.data(), n * d, d, "mlp_c_proj", "c_proj(gelu(c_fc(ln_2(x))))");
  add_into(x, h.data.data());
  check(x.data.data(), n * d, d, "mlp_residual", "x + mlp(ln_2(x))");
}

}  // namespace attention_lab
