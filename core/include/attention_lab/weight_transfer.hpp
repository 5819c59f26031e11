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
  std::string name;    // W_query | W_key | W_value
  std::string action;  // copied | transposed | not_copied | shape_mismatch
  Shape from_shape;
  Shape to_shape;
  std::string hint;
};

struct CopyReport {
  std::vector<MatrixReport> matrices;
  /// max |from(tokens) - to(tokens)| over the outputs (eval mode); nullopt when output shapes differ.
  std::optional<double> max_abs_diff;
  bool agree = false;  // max_abs_diff <= 1e-6
  std::vector<std::string> notes;
  Tensor tokens;
};

/// Copies the matrices of `from` into `to` following `plan`, as the book's
/// `sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight.T)`, then compares the two modules'
/// outputs on `tokens` (num_tokens, d_in); without tokens: the book's six when d_in is 3, else
/// seeded_tokens(6, d_in, 123). Both modules must be SelfAttention_v1 or SelfAttention_v2
/// (AttentionError "copy_unsupported" otherwise). Unknown plan keys: AttentionError "copy_plan".
CopyReport copy_weights(const AttentionModule& from, AttentionModule& to, const CopyPlan& plan,
                        const std::optional<Tensor>& tokens = std::nullopt);

}  // namespace attention_lab
