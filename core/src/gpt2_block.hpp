// One GPT-2 block and the embedding read: the one home the whole-model run (Gpt2Run), its layer inputs
// and generation (Gpt2Generation) share (for gpt2*.cpp only; not part of the public headers).
//
//   x = wte[ids] + wpe[first : first + n]
//   x = x + attn(ln_1(x));  x = x + c_proj(gelu_tanh(c_fc(ln_2(x))))
//
// Every tensor is read through the file's checkpoint layout (checkpoint_layout.hpp: Hugging Face's names
// above, or the book's GPTModel's), copied by its row's rule. The attention is the core's
// AttentionModule: the book's MultiHeadAttention(d, d, n_ctx, 0.0, n_head, qkv_bias) (c_attn split into
// q, k, v, each transposed; the book's W_query ... as is), with the core's KvCache for generation's
// cached steps. No file of GPT-2 computes scores, a softmax or a key/value cache of its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "attention_lab/checkpoint.hpp"
#include "attention_lab/gpt2.hpp"
#include "attention_lab/modules.hpp"
#include "attention_lab/ops.hpp"

namespace attention_lab {

/// Bytes of each read, by ByteRead::name.
using Gpt2Bytes = std::map<std::string, std::vector<uint8_t>>;

/// 4 for F32, 2 for F16 and BF16.
int64_t gpt2_dtype_bytes(const std::string& dtype);
/// The read of the book's weight `target` ("tok_emb.weight", "out_head.weight", in block `block` >= 0:
/// "norm1.scale" ...) through the file's layout: the file key of the row that gives it (the head: its
/// own key or the tied one), named by the key without the prefix outside a block ("wte.weight"), with
/// it in a block. checkpoint_missing_key when the file has no such key.
ByteRead gpt2_read(const SafetensorsHeader& header, const Gpt2Config& config, const std::string& target, int64_t block = -1);
/// The float32 values of a read, from its bytes in `bytes`, refusing NaN and infinity (decode_weight).
std::vector<float> gpt2_values(const ByteRead& read, const Gpt2Bytes& bytes);

/// The embedding read: one wte row per distinct id (ascending: "wte.weight[id]"), then the wpe rows of
/// positions [first, first + ids.size()) ("wpe.weight[first:end]").
std::vector<ByteRead> gpt2_embedding_reads(const SafetensorsHeader& header, const Gpt2Config& config, const std::vector<int64_t>& ids, int64_t first);
/// x = wte[ids] + wpe[first : first + n], (1, n, n_embd), from the bytes of gpt2_embedding_reads (gpt2_embed).
Tensor gpt2_embedding(const SafetensorsHeader& header, const Gpt2Config& config, const std::vector<int64_t>& ids, int64_t first, const Gpt2Bytes& bytes);

/// The final norm's two reads (ln_f.weight and ln_f.bias, final_norm.scale and final_norm.shift), and
/// the head's bias when it has one (out_head.bias: a classifier's).
std::vector<ByteRead> gpt2_final_reads(const SafetensorsHeader& header, const Gpt2Config& config);
/// Logits chunk `chunk`'s read: the head's rows [chunk * kGpt2LogitsChunkRows, its end) ("wte.weight[begin:end]"
/// when tied, "out_head.weight[begin:end]").
ByteRead gpt2_logits_read(const SafetensorsHeader& header, const Gpt2Config& config, int64_t chunk);
/// How many logits chunks the head makes: ceil(n_out / kGpt2LogitsChunkRows).
int64_t gpt2_logits_chunks(const Gpt2Config& config);

/// The layout's block rows the file has (the book's q/k/v biases only with qkv_bias), in table order.
std::vector<const LayoutTensor*> gpt2_block_rows(const Gpt2Config& config);
/// Block `layer`'s reads, named by their file keys ("<prefix>h.L.<key>") in gpt2_block_rows' order.
std::vector<ByteRead> gpt2_block_reads(const SafetensorsHeader& header, const Gpt2Config& config, int64_t layer);

/// The block's attention: MultiHeadAttention(n_embd, n_embd, n_ctx, 0.0, n_head, qkv_bias) (True for GPT-2).
ModuleConfig gpt2_attention_config(const Gpt2Config& config);

/// A block's weights, float32, named after Hugging Face's file (norm1 is ln_1, ff.layers.0 is c_fc, ...;
/// checkpoint_layout.cpp maps both layouts' keys into them); the MLP's weights packed for y = x W^T + b,
/// the attention's as the module it makes.
struct Gpt2BlockWeights {
  explicit Gpt2BlockWeights(AttentionModule attention) : attn(std::move(attention)) {}
  std::vector<float> ln_1_weight, ln_1_bias;
  AttentionModule attn;  // W_query, W_key, W_value, out_proj (from c_attn split in three and transposed, or the book's as is)
  std::vector<float> ln_2_weight, ln_2_bias;
  ops::PackedMatrix mlp_c_fc_weight, mlp_c_proj_weight;
  std::vector<float> mlp_c_fc_bias, mlp_c_proj_bias;
};

/// Block `layer`'s weights from the bytes of gpt2_block_reads(layer), one tensor decoded at a time,
/// each copied by its layout row's rule.
/// Throws AttentionError like decode_weight (checkpoint_missing_key, non_finite_parameter, ...).
Gpt2BlockWeights load_gpt2_block(const SafetensorsHeader& header, const Gpt2Config& config, int64_t layer, const Gpt2Bytes& bytes);

/// LayerNorm (eps 1e-5, GPT-2's) of each of x's rows of `weight.size()` values, in place.
void gpt2_layer_norm(Tensor& x, const std::vector<float>& weight, const std::vector<float>& bias);

/// How a block runs.
struct Gpt2BlockOptions {
  int64_t layer = 0;               // h.L: what non_finite_stage names
  KvCache* cache = nullptr;        // a cached step: x is the chunk after what the cache holds (ForwardOptions::cache)
  Tensor* attn_weights = nullptr;  // receives the attention weights (1, n_head, n, keys) (ForwardOptions::attn_weights)
  ThreadPool* pool = nullptr;
};

/// The block on x (1, n, n_embd), in place: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)). Throws
/// AttentionError non_finite_stage at the first stage that turns NaN or infinite (ln_1, attn,
/// attn_residual, ln_2, c_fc, gelu, mlp_c_proj, mlp_residual), naming block `layer` and the row.
void run_gpt2_block(const Gpt2BlockWeights& w, Tensor& x, const Gpt2BlockOptions& options);

}  // namespace attention_lab
