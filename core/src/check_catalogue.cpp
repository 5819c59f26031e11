// The catalogue of mistakes readers make in their own attention modules, one table (like the class
// recipes): each entry a variant of the book's forward with one pass altered, where the class has that
// step. Sources are public reports of the same mistake (issue and pull request threads); see
// docs/check-module.md. Each entry's line and fix are written for the class (check_lines.cpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attention_lab/check_module.hpp"
#include "check_lines.hpp"

namespace attention_lab {

namespace {

bool has_role(const ForwardPlan& p, Role role, Layout layout) { return p.config.recipe().param(role, layout) != nullptr; }
/// Queries, keys and values each of its own projection of x (nn.Linear or a (d_in, d_out) matrix; not
/// a packed qkv, not re-projected from a latent, no key/value tokens appended).
bool own_projections(const ForwardPlan& p) {
  bool own = false;
  for (const Layout l : {Layout::OutIn, Layout::InOut}) own = own || (has_role(p, Role::Query, l) && has_role(p, Role::Key, l) && has_role(p, Role::Value, l));
  return own && p.latent_dim == 0 && p.extra_kv == 0;
}
/// ... and W_key of W_query's shape: as many key/value heads as query heads.
bool twin_projections(const ForwardPlan& p) { return own_projections(p) && p.kv_heads == p.query_heads; }
bool split_heads(const ForwardPlan& p) { return p.layout == HeadsRule::Fused && p.query_heads > 1; }
/// The scores, the mask, the scale and the softmax are computed inside PyTorch's attention call
/// (ClassSpec::attention_in_torch): the reader writes none of those lines, only what the call is given.
bool torch_attention(const ForwardPlan& p) { return p.config.recipe().attention_in_torch(); }
/// ... and the heads split, merged and out_proj applied inside it too (nn.MultiheadAttention: the
/// class's own projection, proj, comes after PyTorch's out_proj).
bool torch_heads(const ForwardPlan& p) { return torch_attention(p) && p.proj; }

// ---- applies --------------------------------------------------------------------------------------

bool scaled(const ForwardPlan& p) { return p.scale_div != 1.0f && !torch_attention(p); }
bool scaled_by_head(const ForwardPlan& p) { return p.head_dim != p.config.d_out && !torch_attention(p); }
/// A causal mask the reader writes: in the scores, or in a buffer handed to PyTorch's call.
bool causal(const ForwardPlan& p) { return p.mask == MaskKind::Causal && (!torch_attention(p) || p.mask_buffer); }
bool masked(const ForwardPlan& p) { return p.mask != MaskKind::None && !torch_attention(p); }
bool mask_passed(const ForwardPlan& p) { return p.mask != MaskKind::None && torch_attention(p); }
bool softmaxed(const ForwardPlan& p) { return !torch_attention(p); }
bool splits(const ForwardPlan& p) { return split_heads(p) && own_projections(p); }
bool merges(const ForwardPlan& p) { return split_heads(p) && !torch_heads(p); }
/// W_key in W_query's place: nn.Linear's, or SelfAttention_v1's and MHAEinsum's (d_in, d_out) matrices
/// (MHAEinsum's bias_q stays, as its own `Q += self.bias_q` line does; a Linear's bias goes with W_key).
bool own_queries(const ForwardPlan& p) { return twin_projections(p); }
bool out_projected(const ForwardPlan& p) { return p.out_proj && !p.proj && !p.gate; }
bool square_linear(const ForwardPlan& p) { return twin_projections(p) && has_role(p, Role::Query, Layout::OutIn) && p.config.d_in == p.config.d_out; }
/// Dropout p > 0 on attention weights the class writes out (self.dropout(attn_weights); not inside
/// scaled_dot_product_attention or nn.MultiheadAttention). The entries are seeded: tried with a seed only.
bool drops_weights(const ForwardPlan& p) { return p.dropout_stage && p.dropout > 0.0 && !torch_attention(p); }

// ---- plan variants ----------------------------------------------------------------------------------

void by_d_out(ForwardPlan& p) { p.scale_div = static_cast<float>(std::sqrt(static_cast<double>(p.config.d_out))); }
void unscaled(ForwardPlan& p) { p.scale_div = 1.0f; }
void after_softmax(ForwardPlan& p) { p.softmax = SoftmaxStep::ScaleAfter; }
void diagonal_hidden(ForwardPlan& p) { p.mask_diagonal = 0; }
void no_mask(ForwardPlan& p) { p.mask = MaskKind::None; }
void over_queries(ForwardPlan& p) { p.softmax = SoftmaxStep::OverQueries; }
void split_by_view(ForwardPlan& p) { p.split_transpose = false; }
void merge_by_view(ForwardPlan& p) { p.merge_transpose = false; }
void dropout_nowhere(ForwardPlan& p) { p.dropout_at = DropoutAt::Nowhere; }
void dropout_on_scores(ForwardPlan& p) { p.dropout_at = DropoutAt::Scores; }
void no_out_proj(ForwardPlan& p) {
  p.out_proj = false;
  p.out_proj_bias = false;
}

// ---- weight variants (the projection pass's operators) -------------------------------------------

/// Queries made with W_key: every W_query tensor (each head's) replaced by its W_key counterpart.
void queries_from_keys(const ForwardPlan&, std::vector<NamedTensor>& params) {
  for (NamedTensor& q : params) {
    const size_t at = q.name.find("W_query");
    if (at == std::string::npos) continue;
    std::string key = q.name;
    key.replace(at, 7, "W_key");
    for (const NamedTensor& k : params)
      if (k.name == key) q.tensor = k.tensor;
  }
}

/// x @ W.weight for W_query, W_key and W_value (square): each weight transposed, each bias gone.
void weights_untransposed(const ForwardPlan&, std::vector<NamedTensor>& params) {
  for (NamedTensor& p : params) {
    const bool projection = p.name.find("W_query") != std::string::npos || p.name.find("W_key") != std::string::npos || p.name.find("W_value") != std::string::npos;
    if (!projection) continue;
    Tensor& t = p.tensor;
    if (t.shape.size() == 1) {
      std::fill(t.data.begin(), t.data.end(), 0.0f);
      continue;
    }
    const int64_t n = t.shape[0];  // square: (d_out, d_in) with d_in == d_out
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) std::swap(t.data[static_cast<size_t>(i * n + j)], t.data[static_cast<size_t>(j * n + i)]);
  }
}

std::vector<Mistake> make_catalogue() {
  namespace L = check_lines;
  return {
      {"scale_d_out", "scores divided by sqrt(d_out) instead of sqrt(head_dim)", L::scale_d_out,
       "lucidrains/vit-pytorch#65, Graylab/DL4Proteins-notebooks#12, omihub777/ViT-CIFAR#11", scaled_by_head, by_d_out, nullptr},
      {"no_scale", "scores not scaled", L::no_scale, "delzac/cntkx#10", scaled, unscaled, nullptr},
      {"scale_after_softmax", "the scaling applied after the softmax", L::scale_after_softmax, "esceptico/perceiver-io#9 (the scale applied the wrong way)", scaled, after_softmax,
       nullptr},
      {"mask_diagonal", "torch.triu(..., diagonal=0): a token cannot see itself (the first row is NaN)", L::mask_diagonal, "pbloem/former#10, rasbt/LLMs-from-scratch#1061", causal,
       diagonal_hidden, nullptr},
      {"mask_discarded", "attn_scores.masked_fill(...) without using its result: no mask", L::mask_discarded, "lucidrains/flamingo-pytorch#10, facebookresearch/ParlAI#3068",
       masked, no_mask, nullptr},
      {"softmax_dim", "softmax over dim=-2 (over the queries of each key)", L::softmax_dim, "nerdai/llms-from-scratch-rs#30, PetrochukM/PyTorch-NLP#2", softmaxed, over_queries,
       nullptr},
      {"heads_view_no_transpose", "heads split with .view(b, num_heads, num_tokens, head_dim)", L::heads_view, "hyunwoongko/transformer#15, harvardnlp/annotated-transformer#17",
       splits, split_by_view, nullptr},
      {"merge_view_no_transpose", "heads merged with .view(b, num_tokens, d_out) without transpose(1, 2)", L::merge_view,
       "649453932/Chinese-Text-Classification-Pytorch#10, jadore801120/attention-is-all-you-need-pytorch#80", merges, merge_by_view, nullptr},
      {"query_from_key", "queries computed with W_key", L::query_from_key, "Khaliladib11/Transformer-from-scratch#1", own_queries, nullptr, queries_from_keys},
      {"missing_out_proj", "out_proj not applied", L::missing_out_proj, "Kyubyong/transformer#117, jwallbridge/translob#4", out_projected, no_out_proj, nullptr},
      {"linear_no_transpose", "x @ W.weight instead of the layer (square weights only: the seed's transpose)", L::linear_no_transpose,
       "skyzh/tiny-llm#60, rasbt/LLMs-from-scratch#183", square_linear, nullptr, weights_untransposed},
      {"mask_not_passed", "PyTorch's attention call made without its mask (is_causal=True, attn_mask or block_mask): no mask", L::mask_not_passed,
       "keras-team/keras#23038, hkproj/pytorch-llama#15", mask_passed, no_mask, nullptr},
      // The dropout mistakes (seeded): the book's forward in training mode from torch.manual_seed(seed).
      {"dropout_missing", "self.dropout defined but never applied: the attention weights are not dropped", L::dropout_missing,
       "zhouhaoyi/Informer2020#97, jenkspt/gpt-jax#1, lucidrains/memory-compressed-attention#4", drops_weights, dropout_nowhere, nullptr, true},
      {"dropout_on_scores", "dropout applied to the masked attn_scores before the softmax instead of to attn_weights (a dropped -inf is NaN)", L::dropout_on_scores,
       "karpathy/ng-video-lecture#30", drops_weights, dropout_on_scores, nullptr, true},
  };
}

}  // namespace

const std::vector<Mistake>& mistake_catalogue() {
  static const std::vector<Mistake> catalogue = make_catalogue();
  return catalogue;
}

}  // namespace attention_lab
