// The title and formula variants of each trace stage, the texts column of the one stage table
// (stage_table.cpp): kept apart so that the table's rows stay one a line. stage_text.cpp fills them in,
// reading a row's texts and axes through texts_of and axes_kind.
#pragma once

#include <cstddef>

#include "attention_lab/plan.hpp"

namespace attention_lab::stage_texts {

/// One text of a stage: `variant` ("" when the stage has one text) picks it (variant_of); `{name}`
/// fields are filled from the plan (fields_of).
struct TextVariant {
  const char* variant;
  const char* title;
  const char* formula;
};

/// A stage's texts (the texts column of kStages).
struct Texts {
  const TextVariant* rows;
  size_t count;
};
template <size_t N>
constexpr Texts texts(const TextVariant (&rows)[N]) {
  return {rows, N};
}

/// The names of a stage's axes (stage_text's axes).
enum class Axes { Input, Tokens, Keys, CacheKeys, Latent, LatentCache, Mask, Slab, Merged, Rope };

/// Stage `id`'s texts and the names of its axes, from its row of kStages (stage_table.cpp).
Texts texts_of(StageId id);
Axes axes_kind(StageId id);

inline constexpr TextVariant kInputTexts[] = {
    {"", "Input tokens", "x"},
};
// queries, keys and values share their texts: {Stage} "Queries", {stage} "queries", {W} "W_query".
inline constexpr TextVariant kProjectionTexts[] = {
    {"matmul", "{Stage}{per_head}", "{stage} = x @ {W}"},
    {"single", "{Stage}{per_head}", "{stage} = {W}(x)  (x @ weight.T{bias})"},
    {"modules", "{Stage}{per_head}", "{stage}[:, h] = heads[h].{W}(x)  (x @ weight.T{bias})"},
    {"fused", "{Stage}{per_head}", "{stage} = ({W}(x)).view(b, num_tokens, num_heads, head_dim).transpose(1, 2)  (x @ weight.T{bias})"},
    {"grouped", "{Stage} per key/value head ({kv_heads}, each shared by {group_size} query heads)",
     "{stage} = ({W}(x)).view(b, num_tokens, num_kv_groups, head_dim).transpose(1, 2)  (x @ weight.T{bias}; weight is ({kv_width}, d_in))"},
    {"packed", "{Stage}{per_head}", "{stage} = qkv(x).view(b, num_tokens, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4)[{index}]  (rows {rows} of qkv.weight{bias}){extra}"},
    {"in_proj", "{Stage}{per_head}",
     "{stage} = in_proj(x) split into 3, viewed as (b, num_heads, num_tokens, head_dim)  (rows {rows} of multihead_attn.in_proj_weight{bias}){extra}"},
    {"einsum", "{Stage}{per_head}",
     "{stage} = torch.einsum(\"bnd,do->bno\", x, {W}){einsum_bias}.view(b, num_tokens, num_heads, head_dim).transpose(1, 2)  (x @ {W}, no transpose)"},
    {"latent", "{Stage} per head, re-projected from the latent c_kv",
     "{stage} = {Wup}(c_kv).view(b, num_tokens, num_heads, head_dim).transpose(1, 2)  (c_kv @ weight.T{bias}; weight is (d_out, {latent_dim}))"},
    {"latent_cached", "{Stage} per head, re-projected from every cached latent row ({cached} held, then the chunk's {num_tokens})",
     "{stage} = {Wup}(cache_c_kv).view(b, keys, num_heads, head_dim).transpose(1, 2)  (cache_c_kv @ weight.T{bias}; weight is (d_out, {latent_dim}))"},
};
inline constexpr TextVariant kLatentTexts[] = {
    {"", "Latent c_kv: {latent_dim} numbers per token, all a KV cache of this module stores (keys and values are re-projected from it)",
     "c_kv = {Wdown}(x)  (x @ weight.T{bias}; weight is ({latent_dim}, d_in))"},
};
inline constexpr TextVariant kCacheLatentTexts[] = {
    {"", "Cached latent c_kv: the {cached} rows held before this chunk, then its {num_tokens}: all the KV cache holds ({latent_dim} floats per token)",
     "cache_c_kv = torch.cat([cache_c_kv, c_kv], dim=1): keys and values are re-projected from all of it at every step"},
};
inline constexpr TextVariant kCacheKTexts[] = {
    {"", "Cached keys: the {cached} held before this chunk, then its {num_tokens}", "cache_k = torch.cat([cache_k, keys_new], dim=-2): every key the chunk's queries read"},
};
inline constexpr TextVariant kCacheVTexts[] = {
    {"", "Cached values: the {cached} held before this chunk, then its {num_tokens}", "cache_v = torch.cat([cache_v, values_new], dim=-2)"},
};
inline constexpr TextVariant kAttnScoresTexts[] = {
    {"unbatched", "Attention scores{per_head}", "queries @ keys.T"},
    {"batched", "Attention scores{per_head}", "queries @ keys.transpose(1, 2)"},
    {"fused", "Attention scores{per_head}", "queries @ keys.transpose(2, 3)"},
    {"grouped", "Attention scores per query head (query head h uses key head h // {group_size})", "queries @ keys.repeat_interleave({group_size}, dim=1).transpose(2, 3)"},
    {"sdpa", "Attention scores{per_head}", "queries @ keys.transpose(-2, -1), inside scaled_dot_product_attention (shown before its 1/sqrt(head_dim) scaling)"},
    {"flex", "Attention scores{per_head}", "queries @ keys.transpose(-2, -1), inside flex_attention (shown before its 1/sqrt(head_dim) scaling)"},
    {"nn_mha", "Attention scores{per_head}", "queries @ keys.transpose(-2, -1), inside nn.MultiheadAttention (shown before its 1/sqrt(head_dim) scaling){extra_key}"},
};
inline constexpr TextVariant kMaskTexts[] = {
    {"inverted", "Inverted mask: the buffer triu(ones, diagonal=1).bool() passed to scaled_dot_product_attention, where True means \"attend\"",
     "attn_mask = self.mask[:num_tokens, :num_tokens]: True above the diagonal takes part, so 1 here marks every key at or before the query (hidden)"},
    {"is_causal", "Causal mask for the {num_tokens} tokens given (is_causal=True: built by scaled_dot_product_attention; context_length is not read)",
     "attn_mask = torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril()  (True = takes part)"},
    {"flex", "Causal block mask for the {num_tokens} tokens given (create_block_mask(causal, ..., num_tokens, num_tokens) in each forward; context_length is not read)",
     "causal(b, h, q_idx, kv_idx) = q_idx >= kv_idx"},
    {"bool_buffer", "Causal mask (top-left {num_tokens} x {num_tokens} of the {context_length} x {context_length} bool buffer){extra_mask}",
     "attn_mask = self.mask[:num_tokens, :num_tokens]  (True = masked in nn.MultiheadAttention)"},
    {"buffer", "Causal mask (top-left {num_tokens} x {num_tokens} of the {context_length} x {context_length} buffer)",
     "mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)[:num_tokens, :num_tokens]"},
    {"tokens", "Causal mask for the {num_tokens} tokens given (no context_length: built each forward)",
     "mask = q_positions.unsqueeze(-1) < k_positions.unsqueeze(0), positions = torch.arange(num_tokens)"},
    {"window", "Sliding-window causal mask: each query sees itself and at most {window_before} before it (sliding_window_size = {window})",
     "mask = (diff < 0) | (diff >= {window}), diff = q_positions.unsqueeze(-1) - k_positions.unsqueeze(0)"},
};
inline constexpr TextVariant kAttnScoresMaskedTexts[] = {
    {"", "Masked scores (future keys set to {fill}){fill_note}", "attn_scores.masked_fill_(mask.bool(), {fill_code})"},
    {"window", "Masked scores (future keys and keys {window} or more tokens back set to {fill}){fill_note}", "attn_scores.masked_fill_(mask, {fill_code})"},
    {"inverted", "Masked scores (the inverted mask: keys at or before each query set to -inf)",
     "attn_scores + attn_mask, where the mask adds -inf wherever it is False (on and below the diagonal)"},
};
inline constexpr TextVariant kAttnWeightsTexts[] = {
    {"sdpa", "Attention weights{per_head} (each row sums to 1; a row with every key hidden is NaN)",
     "softmax((queries / {scale}) @ keys.T + mask, dim=-1): PyTorch scales the queries by 1/sqrt(head_dim), head_dim = {head_dim}"},
    {"", "Attention weights{per_head} (each row sums to 1)", "torch.softmax(attn_scores / d_k**0.5, dim=-1), d_k = {head_dim}: scores divided by {scale}"},
};
inline constexpr TextVariant kAttnWeightsDropoutTexts[] = {
    {"train", "Attention weights after dropout (p = {p})", "dropout(attn_weights): each weight zeroed with probability {p}, survivors x 1/(1-p) = {kept}; rows no longer sum to 1"},
    {"all", "Attention weights after dropout (p = 1: every weight dropped)",
     "dropout(attn_weights) with p = 1: attn_weights x 0, every weight zero (PyTorch draws no random numbers for p = 1)"},
    {"eval", "Attention weights after dropout (eval: dropout skipped)", "dropout(attn_weights) = attn_weights in eval mode"},
    {"p0", "Attention weights after dropout (dropout = 0.0: nothing dropped)", "dropout(attn_weights) = attn_weights when p = 0"},
};
inline constexpr TextVariant kContextVecTexts[] = {
    {"", "Context vectors{per_head}", "context_vec = attn_weights @ values"},
    {"grouped", "Context vectors per query head", "context_vec = attn_weights @ values.repeat_interleave({group_size}, dim=1)"},
};
inline constexpr TextVariant kHeadsConcatTexts[] = {
    {"modules", "Heads concatenated: width num_heads x d_out = {num_heads} x {head_dim} = {width}",
     "torch.cat([head(x) for head in heads], dim=-1): head h fills columns h*d_out to (h+1)*d_out-1"},
    {"fused", "Heads merged back to tokens: width d_out = {d_out}", "context_vec.transpose(1, 2).contiguous().view(b, num_tokens, d_out): (t, h, j) -> column h*head_dim + j"},
};
inline constexpr TextVariant kGateTexts[] = {
    {"", "Gated context: the merged heads times sigmoid(gate), each value scaled by a number between 0 and 1",
     "heads_concat * torch.sigmoid(gate), gate = {Wgate}(x)  (x @ weight.T{bias}; weight is (d_out, d_in))"},
};
inline constexpr TextVariant kOutProjTexts[] = {
    {"", "Output projection{out_named}", "{out}(context_vec) = context_vec @ {out}.weight.T + {out}.bias"},
    {"nobias", "Output projection ({out_comma}no bias)", "{out}(context_vec) = context_vec @ {out}.weight.T"},
};
inline constexpr TextVariant kProjTexts[] = {
    {"", "The class's own projection after nn.MultiheadAttention (proj)", "proj(attn_output) = attn_output @ proj.weight.T + proj.bias"},
};
inline constexpr TextVariant kOutputTexts[] = {
    {"", "Output: width {width} = {rule}", "output"},
};

// RoPE (rotate-half, as the book's compute_rope): {Stage} "Queries" or "Keys", {stage} "queries" or "keys".
inline constexpr TextVariant kRopeTexts[] = {
    {"", "{Stage} after RoPE{per_head}: dimension j of each head paired with j + head_dim / 2, rotated by the angle position x inv_freq[j] (positions {position} to {last})",
     "{stage} = compute_rope({stage}, self.cos, self.sin) = {stage} * cos + torch.cat((-x2, x1), dim=-1) * sin  (x1, x2: the two halves of head_dim = {head_dim})"},
};
inline constexpr TextVariant kCosTexts[] = {
    {"", "RoPE table cos: rows {position} to {last} of the ({context_length}, {head_dim}) buffer (theta = {theta})",
     "cos = torch.cos(angles), angles = positions[:, None] * inv_freq[None, :] written twice along head_dim, inv_freq = 1.0 / ({theta} ** (torch.arange(0, head_dim, 2).float() / "
     "head_dim))"},
};
inline constexpr TextVariant kSinTexts[] = {
    {"", "RoPE table sin: rows {position} to {last} of the ({context_length}, {head_dim}) buffer (theta = {theta})", "sin = torch.sin(angles): the same angles as cos"},
};

}  // namespace attention_lab::stage_texts
