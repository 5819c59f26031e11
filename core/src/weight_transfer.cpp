#include "attention_lab/weight_transfer.hpp"

#include <algorithm>
#include <cmath>

namespace attention_lab {

namespace {

bool is_single_head(const AttentionModule& m) {
  const ClassKind k = m.config().kind;
  return k == ClassKind::SelfAttentionV1 || k == ClassKind::SelfAttentionV2;
}

/// v1 keeps W as (d_in, d_out) and computes x @ W; v2's nn.Linear keeps (d_out, d_in) and computes x @ W.T.
std::string weight_name(const AttentionModule& m, const std::string& matrix) {
  return m.config().kind == ClassKind::SelfAttentionV1 ? matrix : matrix + ".weight";
}

Tensor transposed(const Tensor& t) {
  Tensor out({t.shape[1], t.shape[0]});  // (cols, rows)
  for (int64_t i = 0; i < t.shape[0]; ++i)
    for (int64_t j = 0; j < t.shape[1]; ++j) out.data[static_cast<size_t>(j * t.shape[0] + i)] = t.data[static_cast<size_t>(i * t.shape[1] + j)];
  return out;
}

}  // namespace

CopyReport copy_weights(const AttentionModule& from, AttentionModule& to, const CopyPlan& plan, const std::optional<Tensor>& tokens) {
  if (!is_single_head(from) || !is_single_head(to)) {
    throw AttentionError("copy_unsupported", "", "weight copy works between SelfAttention_v1 and SelfAttention_v2 (got " + from.config().class_name() + " -> " + to.config().class_name() + ")",
                         "Build both modules as SelfAttention_v1 or SelfAttention_v2.");
  }
  const char* matrices[] = {"W_query", "W_key", "W_value"};
  for (const auto& entry : plan) {
    const std::string& key = entry.first;
    if (std::none_of(std::begin(matrices), std::end(matrices), [&key](const char* m) { return key == m; })) {
      throw AttentionError("copy_plan", key, "the copy plan names '" + key + "', which is not a weight matrix", "Use W_query, W_key and W_value.");
    }
  }
  const bool layouts_differ = from.config().kind != to.config().kind;
  CopyReport report;
  for (const char* matrix : matrices) {
    MatrixReport r;
    r.name = matrix;
    const Tensor& src = *from.parameter(weight_name(from, matrix));
    const Tensor& dst = *to.parameter(weight_name(to, matrix));
    r.from_shape = src.shape;
    r.to_shape = dst.shape;
    const auto it = plan.find(matrix);
    const CopyPlanEntry entry = it == plan.end() ? CopyPlanEntry{} : it->second;
    const std::string src_expr = (from.config().kind == ClassKind::SelfAttentionV1 ? "sa_v1." : "sa_v2.") + weight_name(from, matrix);
    if (!entry.copy) {
      r.action = "not_copied";
      r.hint = std::string(matrix) + " keeps its own initial values, so the outputs will differ.";
      report.matrices.push_back(r);
      continue;
    }
    const Tensor value = entry.transpose ? transposed(src) : src;
    if (value.shape != dst.shape) {
      r.action = "shape_mismatch";
      r.hint = "Cannot copy " + shape_string(value.shape) + " into " + shape_string(dst.shape) + ".";
      if (value.shape.size() == 2 && value.shape[0] == dst.shape[1] && value.shape[1] == dst.shape[0])
        r.hint += std::string(" The shape is exactly reversed: it looks transposed; ") + (entry.transpose ? "turn the transpose off." : "turn the transpose on (.T).");
      report.matrices.push_back(r);
      continue;
    }
    to.set_parameter(weight_name(to, matrix), value);
    r.action = entry.transpose ? "transposed" : "copied";
    if (entry.transpose != layouts_differ) {
      r.hint = layouts_differ ? std::string("Copied without .T: the shapes fit only because d_in == d_out, so ") + matrix +
                                    " lands transposed (v1 keeps (d_in, d_out), v2's Linear keeps (d_out, d_in)) and the outputs will differ."
                              : std::string("Transposed although both modules keep the same layout: ") + matrix + " lands transposed and the outputs will differ.";
    }
    report.matrices.push_back(r);
  }

  const bool from_bias = from.config().kind == ClassKind::SelfAttentionV2 && from.config().qkv_bias;
  const bool to_bias = to.config().kind == ClassKind::SelfAttentionV2 && to.config().qkv_bias;
  if (from_bias && !to_bias) report.notes.push_back("The source has q/k/v biases (qkv_bias=True) that the target cannot hold, so the outputs cannot agree.");
  if (to_bias && !from_bias) report.notes.push_back("The target's q/k/v biases keep their own initial values; set qkv_bias=False or copy them too.");
  if (to_bias && from_bias) report.notes.push_back("The q/k/v biases are not part of this copy; the target keeps its own.");

  report.tokens = tokens ? *tokens : (from.config().d_in == 3 ? book_tokens() : seeded_tokens(6, from.config().d_in, 123));
  if (from.config().d_in != to.config().d_in) {
    report.notes.push_back("The two modules take different d_in (" + std::to_string(from.config().d_in) + " vs " + std::to_string(to.config().d_in) + "), so no tokens fit both.");
    return report;
  }
  ForwardOptions eval;
  eval.training = false;
  const Tensor a = from.forward(report.tokens, eval);
  const Tensor b = to.forward(report.tokens, eval);
  if (a.shape != b.shape) {
    report.notes.push_back("The outputs have different shapes (" + shape_string(a.shape) + " vs " + shape_string(b.shape) + ").");
    return report;
  }
  double max_diff = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i) max_diff = std::max(max_diff, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
  report.max_abs_diff = max_diff;
  report.agree = max_diff <= 1e-6;
  if (!report.agree) {
    std::vector<std::string> suspects;
    for (const auto& r : report.matrices)
      if (r.action != (layouts_differ ? "transposed" : "copied")) suspects.push_back(r.name);
    if (!suspects.empty()) {
      std::string s;
      for (size_t i = 0; i < suspects.size(); ++i) s += (i ? ", " : "") + suspects[i];
      report.notes.push_back("The outputs differ (max abs difference " + std::to_string(max_diff) + "); look at " + s + ".");
    }
  }
  return report;
}

}  // namespace attention_lab
