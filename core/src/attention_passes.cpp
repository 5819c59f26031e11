#include "attention_passes.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attention_lab {

Tensor& Activations::operator[](StageId id) {
  Tensor* const in_order[] = {&input,
                              &queries,
                              &latent,
                              &cache_latent,
                              &keys,
                              &values,
                              &cos,
                              &sin,
                              &queries_rope,
                              &keys_rope,
                              &cache_k,
                              &cache_v,
                              &attn_scores,
                              &mask,
                              &attn_scores_masked,
                              &attn_weights,
                              &attn_weights_dropout,
                              &context_vec,
                              &heads_concat,
                              &gate,
                              &out_proj,
                              &proj,
                              &output};
  static_assert(sizeof(in_order) / sizeof(in_order[0]) == static_cast<size_t>(StageId::Output) + 1, "one activation per stage id");
  return *in_order[static_cast<size_t>(id)];
}

Shape PassContext::head_shape(int64_t rows, int64_t cols) const {
  const ForwardPlan& p = plan();
  if (!p.batched) return Shape{rows, cols};
  if (!p.per_head_axes) return Shape{chunk.b, rows, cols};
  return Shape{chunk.b, p.query_heads, rows, cols};
}

void mask_row(const ForwardPlan& p, const Chunk& c, float* row, int64_t i) {
  // A sliding window hides key j from query i when i - j >= window (and j > i, as any causal mask);
  // the inverted mask hides j <= i instead.
  const int64_t keys = c.past + c.T;  // appended keys (j >= keys) are never hidden
  const float fill = p.mask_fill;
  if (p.mask == MaskKind::Inverted) {
    std::fill(row, row + std::min(i + 1, keys), fill);
    return;
  }
  const int64_t hidden = c.past + i + p.mask_diagonal;  // the first key hidden: torch.triu(..., diagonal=mask_diagonal)
  if (hidden < keys) std::fill(row + std::max<int64_t>(hidden, 0), row + keys, fill);
  if (p.window > 0 && c.past + i - p.window >= 0) std::fill(row, row + std::min(c.past + i - p.window + 1, keys), fill);
}

void project_latent(const PassContext& ctx, const Tensor& x, Activations& a) {
  const ForwardPlan& p = ctx.plan();
  if (p.latent_dim == 0) return;
  const Chunk& c = ctx.chunk;
  const int64_t L = p.latent_dim;
  a.latent = Tensor({c.b, c.T, L});
  ops::gemm(ctx.options.pool, x.data.data(), c.b * c.T, p.config.d_in, ctx.operators.weight[kLatentDownOp], ctx.operators.bias_of(kLatentDownOp), a.latent.data.data());
  if (ctx.cache == nullptr) return;
  // A latent class's cache holds c_kv alone: its keys and values are re-projected from every cached
  // latent row plus the chunk's, as the book's cache_c_kv (torch.cat([cache_c_kv, latent_new], dim=1)).
  const int64_t entries = ctx.cache->entries();
  a.cache_latent = Tensor({c.b, c.past + c.T, L});
  for (int64_t bi = 0; bi < c.b; ++bi) {
    float* dst = a.cache_latent.data.data() + bi * (c.past + c.T) * L;
    if (c.past > 0) std::copy_n(ctx.cache->latent.data.data() + (bi * entries + c.drop) * L, c.past * L, dst);
    std::copy_n(a.latent.data.data() + bi * c.T * L, c.T * L, dst + c.past * L);
  }
}

namespace {

/// One of q, k, v for the heads' share: the projection's columns of those heads, then each head's
/// rows copied into (b, heads, rows, hd); keys and values put an appended token (bias_k / bias_v,
/// head h's slice) after the chunk's.
void project_heads_of(const PassContext& ctx, const Tensor& x, const Activations& a, int m, Tensor& out, std::vector<float>& proj) {
  const ForwardPlan& p = ctx.plan();
  const Chunk& c = ctx.chunk;
  const Operators& mod = ctx.operators;
  const int64_t hd = p.head_dim, group = p.group_size;
  const bool latent_cache = ctx.cache != nullptr && p.latent_dim > 0;
  const int64_t heads = m == kQueryOp ? p.query_heads : p.kv_heads, width = heads * hd, rows = m == kQueryOp ? c.T : c.kv_rows;
  const bool from_latent = m != kQueryOp && p.latent_dim > 0;
  const int64_t made = m == kQueryOp ? c.T : latent_cache ? c.Tk : c.T;  // rows projected: the chunk's, or every cached latent's
  const float* source = !from_latent ? x.data.data() : latent_cache ? a.cache_latent.data.data() : a.latent.data.data();
  const int64_t head_first = m == kQueryOp ? ctx.heads.begin : ctx.heads.begin / group, head_last = m == kQueryOp ? ctx.heads.end : ctx.heads.end / group;
  ops::gemm_columns(ctx.options.pool, source, c.b * made, from_latent ? p.latent_dim : p.config.d_in, mod.weight[m], mod.bias_of(m), proj.data(), head_first * hd,
                    head_last * hd);  // (b*made, heads*hd), those heads' columns
  float* dst = out.data.data();
  if (!p.split_transpose) {  // view(b, heads, rows, hd) of the (b, rows, heads * hd) projection: its memory as it lies (a catalogue variant)
    std::copy_n(proj.data(), c.b * made * width, dst);
    return;
  }
  for (int64_t bi = 0; bi < c.b; ++bi)
    for (int64_t h = head_first; h < head_last; ++h) {
      for (int64_t t = 0; t < made; ++t) std::copy_n(proj.data() + (bi * made + t) * width + h * hd, hd, dst + ((bi * heads + h) * rows + t) * hd);
      if (m != kQueryOp && p.extra_kv) std::copy_n(mod.token[m - kKeyOp].data() + h * hd, hd, dst + ((bi * heads + h) * rows + c.T) * hd);
    }
}

}  // namespace

void project_qkv(const PassContext& ctx, const Tensor& x, Activations& a) {
  // Query head h reads key/value head h / group_size (GroupedQueryAttention's num_kv_groups; else
  // KV = H): what repeat_interleave(group_size, dim=1) does.
  const ForwardPlan& p = ctx.plan();
  const Chunk& c = ctx.chunk;
  Shape kv_shape = ctx.head_shape(c.kv_rows, p.head_dim);
  if (p.per_head_axes) kv_shape[1] = p.kv_heads;
  a.queries = Tensor(ctx.head_shape(c.T, p.head_dim));  // (b, H, T, hd)
  a.keys = Tensor(kv_shape);                            // (b, KV, kv_rows, hd)
  a.values = Tensor(kv_shape);
  const int64_t kv_rows = ctx.cache != nullptr && p.latent_dim > 0 ? c.Tk : c.T;              // rows the key/value projections compute
  std::vector<float> proj(static_cast<size_t>(c.b * std::max(c.T, kv_rows) * p.proj_width));  // (b*rows, H*hd), freed after the projections
  Tensor* const out[] = {&a.queries, &a.keys, &a.values};
  for (int m = kQueryOp; m <= kValueOp; ++m) project_heads_of(ctx, x, a, m, *out[m], proj);
}

namespace {

/// The scratch of the attend pass: one slab's (T, Tk) values and the packed keys and values of the
/// key/value head it reads, reused slab after slab.
struct SlabScratch {
  KeyValueRows kv;  // where each (b, kv head)'s keys and values are read
  std::vector<float> slab;
  ops::PackedMatrix keys_t, values;
  int64_t block_rows = 0;  // rows per block: the whole slab, or ~256 KB when observed
};

/// Pass 4 on rows [r0, r0 + rows) of a slab's masked scores `sb` (rows, Tk): the plan's softmax step.
/// OverQueries normalises each column, so it is given the whole slab (attend's block_rows).
void softmax_block(const PassContext& ctx, float* sb, int64_t rows, int64_t Tk, bool lower, int64_t r0) {
  const ForwardPlan& p = ctx.plan();
  if (p.softmax == SoftmaxStep::Book) {
    ops::scaled_softmax_rows(ctx.options.pool, sb, rows, Tk, p.scale_div, lower, r0);
  } else if (p.softmax == SoftmaxStep::ScaleAfter) {  // softmax(scores, dim=-1) / d_k**0.5
    ops::scaled_softmax_rows(ctx.options.pool, sb, rows, Tk, 1.0f, false, r0);
    for (int64_t i = 0; i < rows * Tk; ++i) sb[i] /= p.scale_div;
  } else {  // softmax(scores / d_k**0.5, dim=-2): over the queries of each key (subtract the column max: exp overflows past ~88)
    for (int64_t j = 0; j < Tk; ++j) {
      float top = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < rows; ++i) top = std::max(top, sb[i * Tk + j] / p.scale_div);
      float sum = 0.0f;
      for (int64_t i = 0; i < rows; ++i) sum += (sb[i * Tk + j] = std::exp(sb[i * Tk + j] / p.scale_div - top));
      for (int64_t i = 0; i < rows; ++i) sb[i * Tk + j] /= sum;
    }
  }
}

/// Passes 2-6 on a slab of one query row, unobserved: ops::vecmat reads the keys and values in place
/// (a decode step's cache is read once, not packed first), with the bits of the packed product.
void attend_row(const PassContext& ctx, const float* q, const float* k, const float* v, float* row, float* context, size_t offset) {
  const ForwardPlan& p = ctx.plan();
  const Chunk& c = ctx.chunk;
  const int64_t Tk = c.Tk, hd = p.head_dim;
  ops::vecmat(q, hd, k, Tk, hd, true, row);  // q @ k^T (Tk)
  if (p.mask != MaskKind::None) mask_row(p, c, row, 0);
  ops::scaled_softmax_rows(ctx.options.pool, row, 1, Tk, p.scale_div, false, 0);
  if (ctx.options.attn_weights != nullptr) std::copy(row, row + Tk, ctx.options.attn_weights->data.begin() + static_cast<std::ptrdiff_t>(offset));
  if (ctx.apply_dropout) ctx.options.generator->dropout(row, Tk, p.dropout);
  ops::vecmat(row, Tk, v, hd, hd, false, context);  // weights @ v (hd)
}

/// Passes 2-6 on slab (bi, h): scores = q @ k^T, the mask, softmax(scores / d_k**0.5), dropout, then
/// context = weights @ v, each block of rows given to the recorder while it is in cache.
void attend_slab(const PassContext& ctx, Activations& a, Recorder& rec, SlabScratch& s, int64_t bi, int64_t h) {
  const ForwardPlan& p = ctx.plan();
  const Chunk& c = ctx.chunk;
  const int64_t T = c.T, Tk = c.Tk, hd = p.head_dim;
  const bool observing = rec.observing();
  const bool masked = p.mask != MaskKind::None;
  const bool lower = p.lower_triangle() && c.past == 0;  // plain causal, keys = tokens: only the lower triangle counts
  const size_t slab_index = static_cast<size_t>(bi * p.query_heads + h);
  const size_t kv_index = static_cast<size_t>(bi * p.kv_heads + h / p.group_size);
  const float* q = scored_queries(p, a).data.data() + slab_index * static_cast<size_t>(T * hd);  // (T, hd)
  const float* k = s.kv.keys + kv_index * s.kv.stride;                                           // (Tk, hd)
  const float* v = s.kv.values + kv_index * s.kv.stride;                                         // (Tk, hd)
  const size_t offset = slab_index * static_cast<size_t>(T * Tk);
  float* slab = s.slab.data();
  float* context = a.context_vec.data.data() + slab_index * static_cast<size_t>(T * hd);
  if (T == 1 && !observing && p.softmax == SoftmaxStep::Book &&
      !ctx.dropout_scores) {  // one query (a cached decode step): against the keys and values as they lie, no packing, the same bits
    attend_row(ctx, q, k, v, slab, context, offset);
    return;
  }
  ops::pack_b_into(s.keys_t, k, hd, Tk, true);  // reuses the buffer of the previous head
  for (int64_t r0 = 0; r0 < T; r0 += s.block_rows) {
    const int64_t rows = std::min(s.block_rows, T - r0), n = rows * Tk;
    float* sb = slab + r0 * Tk;  // rows r0 .. r0 + rows - 1 of the slab
    const size_t at = offset + static_cast<size_t>(r0 * Tk);
    // with a plain causal mask and nothing observed only the lower triangle is needed
    ops::gemm(ctx.options.pool, q + r0 * hd, rows, hd, s.keys_t, nullptr, sb, lower && !observing ? ops::Triangle::OutputLower : ops::Triangle::None);
    if (observing) rec.rows(StageId::AttnScores, slab_index, at, sb, n);
    if (masked && (observing || !lower)) {  // the masked scores as the book writes them (the causal fast path needs no -inf past the diagonal)
      for (int64_t i = r0; i < r0 + rows; ++i) mask_row(p, c, slab + i * Tk, i);
    } else if (p.window > 0) {  // keys before the window: masked inside each row's causal prefix, so the softmax gives them weight 0
      for (int64_t i = std::max(p.window, r0); i < r0 + rows; ++i) std::fill(slab + i * Tk, slab + i * Tk + (i - p.window + 1), p.mask_fill);
    }
    if (masked && observing) rec.rows(StageId::AttnScoresMasked, slab_index, at, sb, n);
    // dropout on the masked scores (a catalogue variant): the same draws, row after row; a dropped -inf is NaN (-inf * 0)
    if (ctx.dropout_scores) ctx.options.generator->dropout(sb, n, p.dropout);
    // softmax(scores / d_k**0.5); masked keys get weight 0 (a row with every key masked is NaN, as in PyTorch)
    softmax_block(ctx, sb, rows, Tk, lower, r0);
    if (observing) rec.rows(StageId::AttnWeights, slab_index, at, sb, n);
  }
  if (ctx.options.attn_weights != nullptr) std::copy(slab, slab + T * Tk, ctx.options.attn_weights->data.begin() + static_cast<std::ptrdiff_t>(offset));
  if (ctx.apply_dropout) {
    ctx.options.generator->dropout(slab, T * Tk, p.dropout);
    if (observing) rec.rows(StageId::AttnWeightsDropout, slab_index, offset, slab, T * Tk);
  }
  if (observing) rec.slab_done(slab_index);
  // context = weights @ v (T, hd); a causal row i has zero weight past key i.
  ops::pack_b_into(s.values, v, Tk, hd, false);
  ops::gemm(ctx.options.pool, slab, T, Tk, s.values, nullptr, context, lower ? ops::Triangle::ALower : ops::Triangle::None);
}

}  // namespace

void attend(const PassContext& ctx, Activations& a, Recorder& rec) {
  const ForwardPlan& p = ctx.plan();
  const Chunk& c = ctx.chunk;
  if (ctx.options.attn_weights != nullptr) *ctx.options.attn_weights = Tensor(ctx.head_shape(c.T, c.Tk));
  a.context_vec = Tensor(ctx.head_shape(c.T, p.head_dim));  // (b, H, T, hd)
  SlabScratch s;
  s.kv = attended_rows(ctx, a);
  s.slab.resize(static_cast<size_t>(c.T * c.Tk));  // (T, Tk)
  // Observed, a slab goes through scores, mask and softmax a block of rows at a time (~256 KB, whole
  // rows, a multiple of the kernel's 4-row tile), so each stage's copy and summary read it from cache
  // (the whole slab at 1024 tokens is 4 MB, each stage 48 MB); else the slab is one block.
  // A softmax over the queries (a catalogue variant) needs the whole slab at once.
  const bool whole = !rec.observing() || p.softmax == SoftmaxStep::OverQueries;
  s.block_rows = !whole ? std::min(std::max<int64_t>(c.T, 1), std::max<int64_t>(4, 65536 / std::max<int64_t>(c.Tk, 1) / 4 * 4)) : std::max<int64_t>(c.T, 1);
  // Dropout draws in PyTorch's order: the wrapper runs head after head (each a CausalAttention over
  // the whole batch); the others draw over (b, [H,] T, T) row-major.
  if (p.dropout_heads_outer) {
    for (int64_t h = ctx.heads.begin; h < ctx.heads.end; ++h)
      for (int64_t bi = 0; bi < c.b; ++bi) attend_slab(ctx, a, rec, s, bi, h);
  } else {
    for (int64_t bi = 0; bi < c.b; ++bi)
      for (int64_t h = ctx.heads.begin; h < ctx.heads.end; ++h) attend_slab(ctx, a, rec, s, bi, h);
  }
}

Tensor share_columns(const PassContext& ctx, const Activations& a) {
  const Chunk& c = ctx.chunk;
  const int64_t H = ctx.plan().query_heads, hd = ctx.plan().head_dim;
  const int64_t width = (ctx.heads.end - ctx.heads.begin) * hd;
  Tensor part({c.b, c.T, width});
  for (int64_t bi = 0; bi < c.b; ++bi)
    for (int64_t h = ctx.heads.begin; h < ctx.heads.end; ++h)
      for (int64_t t = 0; t < c.T; ++t)
        std::copy_n(a.context_vec.data.data() + ((bi * H + h) * c.T + t) * hd, hd, part.data.data() + (bi * c.T + t) * width + (h - ctx.heads.begin) * hd);
  return part;
}

void merge_heads(const PassContext& ctx, Activations& a) {
  // (b, H, T, hd) -> (b, T, H*hd): the wrapper's torch.cat, the fused transpose(1, 2).contiguous().view.
  const ForwardPlan& p = ctx.plan();
  if (p.layout == HeadsRule::Single) return;
  const Chunk& c = ctx.chunk;
  const int64_t H = p.query_heads, hd = p.head_dim, width = p.proj_width;
  a.heads_concat = Tensor({c.b, c.T, width});  // (b, num_tokens, num_heads * hd)
  if (!p.merge_transpose) {                    // view(b, T, d_out) of (b, H, T, hd) without the transpose: its memory as it lies (a catalogue variant)
    a.heads_concat.data = a.context_vec.data;
    return;
  }
  for (int64_t bi = 0; bi < c.b; ++bi)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < c.T; ++t) std::copy_n(a.context_vec.data.data() + ((bi * H + h) * c.T + t) * hd, hd, a.heads_concat.data.data() + (bi * c.T + t) * width + h * hd);
}

Tensor gated(const ForwardPlan& p, const Operators& operators, ThreadPool* pool, const Tensor& x, const Tensor& concat) {
  const int64_t rows = numel_of(concat.shape) / p.proj_width;                                                                   // b * T
  Tensor out(concat.shape);                                                                                                     // (b, num_tokens, d_out)
  ops::gemm(pool, x.data.data(), rows, p.config.d_in, operators.weight[kGateOp], operators.bias_of(kGateOp), out.data.data());  // gate = x @ W_gate.T + b
  // context * torch.sigmoid(gate), sigmoid as PyTorch's CPU kernel writes it: 1 / (1 + exp(-gate))
  for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = concat.data[i] * (1.0f / (1.0f + std::exp(-out.data[i])));
  return out;
}

void gate_heads(const PassContext& ctx, const Tensor& x, Activations& a) {
  if (ctx.plan().gate) a.gate = gated(ctx.plan(), ctx.operators, ctx.options.pool, x, a.heads_concat);
}

Tensor take_output(const PassContext& ctx, Activations& a, bool keep) {
  const ForwardPlan& p = ctx.plan();
  Tensor* last = p.proj ? &a.proj : p.out_proj ? &a.out_proj : p.layout != HeadsRule::Single ? &a.heads_concat : &a.context_vec;
  Tensor output = keep ? *last : std::move(*last);
  if (p.layout == HeadsRule::Single) output.shape = p.batched ? Shape{ctx.chunk.b, ctx.chunk.T, p.head_dim} : Shape{ctx.chunk.T, p.head_dim};
  return output;
}

}  // namespace attention_lab
