#include "gpt2_block.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attention_lab {

int64_t gpt2_dtype_bytes(const std::string& dtype) { return dtype == "F32" ? 4 : 2; }

ByteRead gpt2_read(const SafetensorsHeader& header, const Gpt2Config& config, const std::string& target, int64_t block) {
  const LayoutTensor* row = layout_row(*config.layout, target, block >= 0);
  if (row == nullptr) throw AttentionError("checkpoint_missing_key", "", std::string(config.layout->name) + " has no tensor for " + target, config.layout->hint);
  const std::string key = target == "out_head.weight" ? config.head_key : layout_key(*config.layout, config.prefix, *row, block);
  const SafetensorsEntry* e = header.find(key);
  if (e == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + key, config.layout->hint);
  // a read's name is the key without the prefix ("wte.weight[3]"); a block's keeps it ("transformer.h.0.ln_1.weight")
  return {block >= 0 || key.compare(0, config.prefix.size(), config.prefix) != 0 ? key : key.substr(config.prefix.size()), *e};
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
  BlockInputPlan p;
  const FoundLayout found = find_checkpoint_layout(header);
  p.config.layout = found.layout;
  p.config.prefix = found.prefix;
  const CheckpointLayout& layout = *found.layout;
  if (layout.id == std::string("huggingface")) {  // the one-layer load's checks of the layer (its keys, its number)
    CheckpointOptions probe;
    probe.layer = layer;
    probe.num_heads = 1;  // any divisor: only the prefix and the layer check are used here
    probe.context_length = 1;
    p.config.prefix = plan_gpt2_attention(header, probe).prefix;
  }
  const auto key_of = [&](const char* target, int64_t block) { return layout_key(layout, p.config.prefix, *layout_row(layout, target, block >= 0), block); };
  if (layer < 0 || (header.find(key_of("norm1.scale", layer)) == nullptr && header.find(key_of("att.W_query.weight", layer)) == nullptr))
    throw AttentionError("checkpoint_layer", "layer",
                         "there is no layer " + std::to_string(layer) + " in this file (no " + key_of("att.W_query.weight", std::max<int64_t>(layer, 0)) + ")",
                         "Choose a layer the file has.");
  const auto need = [&](const std::string& key) -> const SafetensorsEntry& {
    const SafetensorsEntry* e = header.find(key);
    if (e == nullptr)
      throw AttentionError("checkpoint_missing_key", "", "the file has no " + key + ", needed to turn tokens into the layer's input",
                           "Use a full GPT-2 checkpoint (with wte, wpe and ln_1).");
    return *e;
  };
  const SafetensorsEntry& wte = need(key_of("tok_emb.weight", -1));
  const SafetensorsEntry& wpe = need(key_of("pos_emb.weight", -1));
  p.ln_1_weight = {key_of("norm1.scale", layer), need(key_of("norm1.scale", layer))};
  p.ln_1_bias = {key_of("norm1.shift", layer), need(key_of("norm1.shift", layer))};
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
  const ByteRead wte = gpt2_read(header, config, "tok_emb.weight"), wpe = gpt2_read(header, config, "pos_emb.weight");
  for (const int64_t id : distinct_ids(ids)) reads.push_back({wte.name + "[" + std::to_string(id) + "]", rows_of(wte.entry, id, id + 1)});
  const int64_t end = first + static_cast<int64_t>(ids.size());
  reads.push_back({wpe.name + "[" + std::to_string(first) + ":" + std::to_string(end) + "]", rows_of(wpe.entry, first, end)});
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
  std::vector<ByteRead> reads = {gpt2_read(header, config, "final_norm.scale"), gpt2_read(header, config, "final_norm.shift")};
  if (config.head_bias) reads.push_back(gpt2_read(header, config, "out_head.bias"));
  return reads;
}

ByteRead gpt2_logits_read(const SafetensorsHeader& header, const Gpt2Config& config, int64_t chunk) {
  const int64_t begin = chunk * kGpt2LogitsChunkRows, end = std::min(begin + kGpt2LogitsChunkRows, config.n_out);
  const ByteRead head = gpt2_read(header, config, "out_head.weight");
  return {head.name + "[" + std::to_string(begin) + ":" + std::to_string(end) + "]", rows_of(head.entry, begin, end)};
}

int64_t gpt2_logits_chunks(const Gpt2Config& config) { return (config.n_out + kGpt2LogitsChunkRows - 1) / kGpt2LogitsChunkRows; }

std::vector<const LayoutTensor*> gpt2_block_rows(const Gpt2Config& config) {
  std::vector<const LayoutTensor*> rows;
  for (const LayoutTensor& row : config.layout->block)
    if (!row.optional || config.qkv_bias) rows.push_back(&row);
  return rows;
}

std::vector<ByteRead> gpt2_block_reads(const SafetensorsHeader& header, const Gpt2Config& config, int64_t layer) {
  std::vector<ByteRead> reads;
  for (const LayoutTensor* row_ptr : gpt2_block_rows(config)) {
    const LayoutTensor& row = *row_ptr;
    const std::string key = layout_key(*config.layout, config.prefix, row, layer);
    const SafetensorsEntry* e = header.find(key);
    if (e == nullptr) throw AttentionError("checkpoint_missing_key", "", "the file has no " + key, config.layout->hint);
    reads.push_back({key, *e});
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
  m.qkv_bias = c.qkv_bias;
  return m;
}

namespace {

/// The MLP's weight `target` (ff.layers.0.weight (4d, d) or ff.layers.2.weight (d, 4d), nn.Linear's
/// (out, in)) packed for y = x @ W^T + b from the file's values: (out, in) as is, or Conv1D's (in, out)
/// when the layout transposes it. No transposed copy: the packing reads either order.
ops::PackedMatrix pack_mlp(const LayoutTensor& row, const std::vector<float>& v, int64_t in, int64_t out) { return ops::pack_b(v.data(), in, out, row.copy == LayoutCopy::AsIs); }

}  // namespace

Gpt2BlockWeights load_gpt2_block(const SafetensorsHeader& header, const Gpt2Config& config, int64_t layer, const Gpt2Bytes& bytes) {
  const int64_t d = config.n_embd;
  // the attention: the book's MultiHeadAttention, its weights as the layout's copy rules give them
  Gpt2BlockWeights w{AttentionModule(gpt2_attention_config(config))};
  // one file tensor decoded at a time (each decoded copy freed before the next)
  const std::vector<ByteRead> reads = gpt2_block_reads(header, config, layer);
  const std::vector<const LayoutTensor*> rows = gpt2_block_rows(config);  // reads[i] is rows[i]'s
  for (size_t i = 0; i < reads.size(); ++i) {
    const ByteRead& read = reads[i];
    const LayoutTensor& row = *rows[i];
    std::vector<float> v = gpt2_values(read, bytes);
    const std::string target = row.targets[0];
    if (target == "ff.layers.0.weight") {
      w.mlp_c_fc_weight = pack_mlp(row, v, d, 4 * d);
    } else if (target == "ff.layers.2.weight") {
      w.mlp_c_proj_weight = pack_mlp(row, v, 4 * d, d);
    } else {
      layout_weights(row, std::move(v), read.entry.shape, [&](NamedTensor t) {
        if (t.name.rfind("att.", 0) == 0) return w.attn.set_parameter(t.name.substr(4), t.tensor);  // each part packed as it comes
        const std::map<std::string, std::vector<float>*> vectors = {{"norm1.scale", &w.ln_1_weight},        {"norm1.shift", &w.ln_1_bias},
                                                                    {"norm2.scale", &w.ln_2_weight},        {"norm2.shift", &w.ln_2_bias},
                                                                    {"ff.layers.0.bias", &w.mlp_c_fc_bias}, {"ff.layers.2.bias", &w.mlp_c_proj_bias}};
        const auto into = vectors.find(t.name);
        if (into == vectors.end()) throw AttentionError("checkpoint_missing_key", "", "no GPT-2 block weight is named " + t.name, config.layout->hint);
        *into->second = std::move(t.tensor.data);
      });
    }
  }
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
