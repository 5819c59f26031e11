// Copying W_query/W_key/W_value between SelfAttention_v1 and SelfAttention_v2 (book exercise 3.1).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attention_lab/modules.hpp"

namespace attention_lab {

struct CopyPlanEntry {
  bool copy = false;
  bool transpose = false;
};
/// Keys "W_query", "W_key", "W_value"; a missing key is not copied.
using CopyPlan = std::map<std::string, CopyPlanEntry>;

struct MatrixReport {
  std::string name;  // the target parameter: W_query | W_key | W_value (exercise 3.1), qkv.weight, proj.bias, ...
  /// copied | transposed | not_copied | shape_mismatch; with the book's map into a bonus class also
  /// packed (rows stacked), identity (an operator the source does not have: I, or a zero bias), kept
  /// (the target keeps its own: bias_k/bias_v, a bias the source lacks) and untransposed (a plan
  /// skipped the transpose the map needs).
  std::string action;
  std::vector<std::string> sources;  // the source parameters it is made from (none for identity and kept)
  Shape from_shape;
  Shape to_shape;
  std::string hint;
};

/// One stage compared between two modules run on the same tokens (eval mode).
struct StageDiff {
  std::string id;
  double max_abs_diff = 0.0;
};

struct CopyReport {
  std::vector<MatrixReport> matrices;
  /// max |from(tokens) - to(tokens)| over the outputs (eval mode); nullopt when output shapes differ.
  std::optional<double> max_abs_diff;
  bool agree = false;  // max_abs_diff <= 1e-6
  std::vector<std::string> notes;
  Tensor tokens;
  /// Every stage both modules have with the same shape, compared.
  std::vector<StageDiff> stages;
  /// The PyTorch lines that do this copy (`sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight.T)`).
  std::string code;
};

/// Copies the matrices of `from` into `to` following `plan`, as the book's
/// `sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight.T)`, then compares the two modules'
/// outputs on `tokens` ((num_tokens, d_in), or (b, num_tokens, d_in) for batched classes); without
/// tokens: the book's six when d_in is 3, else seeded_tokens(6, d_in, 123) (batched: two copies).
/// The pairs: SelfAttention_v1 <-> v2 (copies_with; plan keys W_query, W_key, W_value), and a class
/// whose recipe lists `from`'s class in copies_from (the chapter's MultiHeadAttention into each
/// chapter 3 bonus class, with the book's map role by role; plan keys are target parameter names,
/// {copy: false} keeps the target's own values, {transpose: false} skips a transpose the map needs).
/// Other pairs: AttentionError "copy_unsupported". Unknown plan keys: AttentionError "copy_plan".
/// Tokens that `from` cannot run are refused before anything is copied (check_input, slot "tokens").
CopyReport copy_weights(const AttentionModule& from, AttentionModule& to, const CopyPlan& plan, const std::optional<Tensor>& tokens = std::nullopt);

/// Runs both modules on `x` in eval mode with tracing and compares every stage they share (same id and
/// shape). Throws AttentionError like forward when `x` does not fit one of them.
std::vector<StageDiff> compare_stages(const AttentionModule& a, const AttentionModule& b, const Tensor& x);

/// The PyTorch lines for a v1/v2 copy plan, variables named sa_v1 / sa_v2 (or src / dst when both
/// modules are the same class).
/// Throws AttentionError "copy_unsupported" unless both classes copy with each other (copies_with).
std::string copy_code(const ClassSpec& from, const ClassSpec& to, const CopyPlan& plan);

/// How a fused module stacks the wrapper's heads. `Stacked` is right: head h owns rows
/// h*d_out .. (h+1)*d_out - 1 of each fused projection. `Interleaved` (row j*num_heads + h) is the
/// classic head-merge mistake, kept so the page and tests can show what it does.
enum class HeadLayout { Stacked, Interleaved };

/// The fused config equivalent to a wrapper's (d_out per head -> num_heads x d_out total) and back
/// (d_out total -> head_dim per head). Throws AttentionError "convert_unsupported" for other classes.
ModuleConfig equivalent_config(const ModuleConfig& config);

/// MultiHeadAttention(d_in, num_heads*d_out, ...) holding the wrapper's heads: W_*.weight = the heads'
/// weights stacked on the output axis (biases likewise), out_proj = identity with zero bias.
AttentionModule fused_from_wrapper(const AttentionModule& wrapper, HeadLayout layout = HeadLayout::Stacked);

/// MultiHeadAttentionWrapper(d_in, head_dim, ...) whose head h holds rows h*head_dim .. of the fused
/// projections. The wrapper has no out_proj: the two agree only when out_proj is the identity with zero
/// bias (as after fused_from_wrapper); compare_stages shows where they part.
AttentionModule wrapper_from_fused(const AttentionModule& mha);

/// The PyTorch lines of the conversion (`torch.cat([h.W_query.weight for h in wrapper.heads])` ...).
std::string conversion_code(const AttentionModule& from);

}  // namespace attention_lab
