// Rotary position embeddings (RoPE, rotate-half as the book's compute_rope; ch05/07_gpt_to_llama): the
// tables a module computes once and the pass that turns queries and keys after the head split, at the
// chunk's absolute positions (a KV cache's position onward). A recipe asks for it with rope_theta.
#include <algorithm>
#include <cmath>

#include "attention_passes.hpp"

namespace attention_lab {

void rope_tables(const ForwardPlan& p, std::vector<float> (&tables)[2]) {
  // precompute_rope_params as torch computes it in float32: inv_freq = 1.0 / (theta ** (arange(0, hd, 2).float() / hd)),
  // angles = positions[:, None] * inv_freq[None, :] written twice along head_dim, each op rounded to float32.
  // The pow, cos and sin are computed in double and rounded once (correctly rounded); torch's vectorized
  // float32 pow/cos/sin (SLEEF, 1 ulp) may differ from them by an ulp, which the fixtures allow (2e-6).
  const int64_t hd = p.head_dim, half = hd / 2, rows = p.config.context_length;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(hd);
    inv_freq[static_cast<size_t>(i)] = 1.0f / static_cast<float>(std::pow(p.rope_theta, static_cast<double>(exponent)));
  }
  for (auto& t : tables) t.assign(static_cast<size_t>(rows * hd), 0.0f);  // (context_length, head_dim)
  for (int64_t pos = 0; pos < rows; ++pos)
    for (int64_t j = 0; j < hd; ++j) {
      const double angle = static_cast<float>(pos) * inv_freq[static_cast<size_t>(j % half)];
      tables[0][static_cast<size_t>(pos * hd + j)] = static_cast<float>(std::cos(angle));
      tables[1][static_cast<size_t>(pos * hd + j)] = static_cast<float>(std::sin(angle));
    }
}

const Tensor& scored_queries(const ForwardPlan& p, const Activations& a) { return p.rope() ? a.queries_rope : a.queries; }
Tensor& scored_keys(const ForwardPlan& p, Activations& a) { return p.rope() ? a.keys_rope : a.keys; }

void apply_rope(const PassContext& ctx, Activations& a, bool observing) {
  const ForwardPlan& p = ctx.plan();
  if (!p.rope()) return;
  const Chunk& c = ctx.chunk;
  const int64_t hd = p.head_dim, half = hd / 2;
  const float* cos = ctx.operators.rope[0].data();  // (context_length, hd)
  const float* sin = ctx.operators.rope[1].data();
  // Row x at position pos: x * cos + cat((-x2, x1), dim=-1) * sin, two products then their sum, each
  // rounded to float32 as PyTorch's three ops are.
  const auto rotate = [&](const float* x, float* out, int64_t pos) {
    const float* cr = cos + pos * hd;
    const float* sr = sin + pos * hd;
    for (int64_t j = 0; j < hd; ++j) {
      const float turned = j < half ? -x[j + half] : x[j - half];
      const float a_part = x[j] * cr[j], b_part = turned * sr[j];
      out[j] = a_part + b_part;
    }
  };
  a.queries_rope = Tensor(a.queries.shape);  // (b, H, T, hd)
  const int64_t q_slabs = c.T > 0 && hd > 0 ? static_cast<int64_t>(a.queries.data.size()) / (c.T * hd) : 0;
  for (int64_t s = 0; s < q_slabs; ++s)
    for (int64_t t = 0; t < c.T; ++t) rotate(a.queries.data.data() + (s * c.T + t) * hd, a.queries_rope.data.data() + (s * c.T + t) * hd, c.position + t);
  // (b, KV, kv_rows, hd): the chunk's keys, from row `past` when the rows are every key attended (a
  // latent cache re-projects them); a cache of keys and values holds its keys rotated already
  a.keys_rope = a.keys;
  const int64_t rows = c.kv_rows, first = rows == c.Tk ? c.past : 0;
  const int64_t k_slabs = rows > 0 && hd > 0 ? static_cast<int64_t>(a.keys.data.size()) / (rows * hd) : 0;
  for (int64_t s = 0; s < k_slabs; ++s)
    for (int64_t t = 0; t < c.T; ++t) {
      const int64_t row = (s * rows + first + t) * hd;
      rotate(a.keys.data.data() + row, a.keys_rope.data.data() + row, c.position + t);
    }
  if (!observing) return;
  a.cos = Tensor({c.T, hd});  // (num_tokens, hd): the rows of the chunk's positions
  a.sin = Tensor({c.T, hd});
  std::copy_n(cos + c.position * hd, c.T * hd, a.cos.data.data());
  std::copy_n(sin + c.position * hd, c.T * hd, a.sin.data.data());
}

}  // namespace attention_lab
