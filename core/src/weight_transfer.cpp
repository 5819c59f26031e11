#include "attention_lab/weight_transfer.hpp"

#include "attention_lab/validator.hpp"

#include <algorithm>
#include <cmath>

#include "attention_lab/text.hpp"

namespace attention_lab {

namespace {

/// The classes exercise 3.1 copies between (the recipe's copies_with: SelfAttention_v1 <-> v2).
bool is_single_head(const ClassSpec& r) { return r.heads == HeadsRule::Single && !r.copies_with.empty(); }
bool is_single_head(const AttentionModule& m) { return is_single_head(m.config().recipe()); }
/// "W_query" (v1) or "W_query.weight" (v2): the recipe's name for the matrix.
std::string weight_name(const ClassSpec& r, const std::string& matrix) { return r.queries_in_out() ? matrix : matrix + ".weight"; }
std::string weight_name(const AttentionModule& m, const std::string& matrix) { return weight_name(m.config().recipe(), matrix); }
bool has_qkv_bias(const AttentionModule& m) {
  for (const auto& p : m.config().recipe().params)
    if (p.role == Role::Query && p.layout == Layout::Vector) return m.config().qkv_bias;
  return false;
}

Tensor transposed(const Tensor& t) {
  Tensor out({t.shape[1], t.shape[0]});  // (cols, rows)
  for (int64_t i = 0; i < t.shape[0]; ++i)
    for (int64_t j = 0; j < t.shape[1]; ++j) out.data[static_cast<size_t>(j * t.shape[0] + i)] = t.data[static_cast<size_t>(i * t.shape[1] + j)];
  return out;
}

/// The three matrices exercise 3.1 copies between SelfAttention_v1 and v2.
constexpr const char* kSingleHeadMatrices[] = {"W_query", "W_key", "W_value"};

/// The weight of operator `role` in a config, "" when it has none.
std::string source_of_config(const ModuleConfig& c, Role role) {
  for (const auto& spec : parameter_specs(c))
    if (spec.recipe->role == role && spec.recipe->layout != Layout::Vector) return spec.name;
  return "";
}

const CopyPartner* partner(const AttentionModule& from, const AttentionModule& to) {
  for (const CopyPartner& p : to.config().recipe().copies_from)
    if (p.from == from.config().class_name()) return &p;
  return nullptr;
}

/// The source parameter of operator `role` in `m` (its weight or bias), "" when it has none.
std::string source_of(const AttentionModule& m, Role role, Layout layout) {
  for (const auto& spec : parameter_specs(m.config()))
    if (spec.recipe->role == role && (layout == Layout::Vector) == (spec.recipe->layout == Layout::Vector)) return spec.name;
  return "";
}

/// The output projections of a recipe in forward order (Out, then Proj when it has one).
std::vector<Role> output_roles(const ModuleConfig& c) {
  std::vector<Role> roles;
  for (Role r : {Role::Out, Role::Proj})
    if (!source_of_config(c, r).empty()) roles.push_back(r);
  return roles;
}

/// A parameter as the copy code names it: "mha.W_query.weight" (no per-head modules here, so no
/// heads[0]-style indexing).
std::string param_expr(const std::string& module, const std::string& name) { return module + "." + name; }

/// The copy's plan names only the target's parameters, the modules have the same sizes, and the tokens
/// fit: checked before `to` changes.
void check_copy_into(const ModuleConfig& fc, const ModuleConfig& tc, const std::vector<ParameterSpec>& targets, const CopyPlan& plan, const std::optional<Tensor>& tokens) {
  for (const auto& entry : plan) {
    const std::string& key = entry.first;  // (clang 14 cannot capture a structured binding)
    if (std::none_of(targets.begin(), targets.end(), [&key](const ParameterSpec& t) { return t.name == key; }))
      throw AttentionError("copy_plan", key, "the copy plan names '" + key + "', which is not a parameter of " + tc.class_name(),
                           "Name the target's parameters, e.g. " + targets.front().name + ".");
  }
  if (fc.d_in != tc.d_in || fc.output_width() != tc.output_width() || fc.num_heads != tc.num_heads)
    throw AttentionError("copy_unsupported", "d_out", "the two modules differ in size (" + fc.python_call() + " -> " + tc.python_call() + ")",
                         "Build the target with the same d_in, d_out and num_heads as the source.");
  if (tokens) check_input(fc, *tokens, "tokens");
}

/// The source operators a target parameter of `role` takes: q, k and v for a packed qkv, else its own role.
std::vector<Role> source_roles(Role role) {
  if (role == Role::Qkv) return {Role::Query, Role::Key, Role::Value};
  if (role == Role::Out || role == Role::Proj || role == Role::Query || role == Role::Key || role == Role::Value) return {role};
  return {};
}

/// The source parameters `parts` (nn.Linear's (out, in) weights, or biases) stacked into one value, then
/// transposed where the target keeps (in, out) unless the plan turns that off; its line of copy code.
Tensor packed_value(const AttentionModule& from, const ParameterSpec& t, const std::vector<std::string>& parts, bool transpose_off, const std::string& src, const std::string& dst,
                    MatrixReport& m, std::string& code) {
  const bool bias = t.recipe->layout == Layout::Vector;
  std::vector<Tensor> pieces;
  for (const std::string& name : parts) pieces.push_back(*from.parameter(name));
  int64_t rows = 0;
  for (const Tensor& p : pieces) rows += p.shape[0];
  Tensor value = bias ? Tensor({rows}) : Tensor({rows, pieces[0].shape[1]});
  int64_t at = 0;
  for (const Tensor& p : pieces) {
    std::copy(p.data.begin(), p.data.end(), value.data.begin() + at);
    at += static_cast<int64_t>(p.data.size());
  }
  m.from_shape = value.shape;
  std::string expr;
  for (size_t i = 0; i < parts.size(); ++i) expr += (i ? ", " : "") + param_expr(src, parts[i]);
  if (parts.size() > 1) expr = "torch.cat([" + expr + "])";
  const bool wants_transpose = !bias && t.recipe->layout == Layout::InOut;  // x @ W takes (in, out); nn.Linear keeps (out, in)
  const bool transpose = wants_transpose && !transpose_off;
  if (transpose) {
    value = transposed(value);
    expr += ".T";
  }
  m.action = parts.size() > 1 ? "packed" : transpose ? "transposed" : wants_transpose ? "untransposed" : "copied";
  if (m.action == "untransposed") m.hint = "Copied without .T: " + t.name + " is used as x @ W, so it lands transposed and the outputs will differ.";
  code += param_expr(dst, t.name) + " = torch.nn.Parameter(" + expr + ")\n";
  return value;
}

/// One target parameter's value from `from`, as the book maps it: packed or copied source operators,
/// the identity (zero bias) for an output projection before the last, or none where it keeps its own
/// (skipped by the plan, no counterpart, or a bias the source lacks). Fills `m` and adds to `code`.
std::optional<Tensor> target_value(const AttentionModule& from, const ModuleConfig& tc, const ParameterSpec& t, const CopyPlan& plan, const std::vector<Role>& outs,
                                   MatrixReport& m, std::string& code) {
  const ModuleConfig& fc = from.config();
  const std::string src = fc.recipe().python_name, dst = tc.recipe().python_name;
  const auto it = plan.find(t.name);
  const bool skip = it != plan.end() && !it->second.copy;
  const bool bias = t.recipe->layout == Layout::Vector;
  const std::vector<Role> roles = source_roles(t.recipe->role);
  const bool identity = !roles.empty() && (roles[0] == Role::Out || roles[0] == Role::Proj) && roles[0] != outs.back();
  if (roles.empty() || skip) {
    m.action = skip ? "not_copied" : "kept";
    m.hint = skip ? t.name + " keeps its own initial values, so the outputs will differ." : t.name + " has no counterpart in " + fc.class_name() + ": it keeps its own values.";
    code += "# " + param_expr(dst, t.name) + (skip ? " keeps its own initial values\n" : " has no counterpart: kept as built\n");
    return std::nullopt;
  }
  if (identity) {
    const int64_t n = tc.d_out;
    Tensor value = bias ? Tensor({n}) : Tensor({n, n});
    if (!bias)
      for (int64_t i = 0; i < n; ++i) value.data[static_cast<size_t>(i * n + i)] = 1.0f;
    m.action = "identity";
    code += param_expr(dst, t.name) + " = torch.nn.Parameter(" + (bias ? "torch.zeros(" : "torch.eye(") + std::to_string(n) + "))\n";
    return value;
  }
  std::vector<std::string> parts;
  for (Role role : roles) {
    const Role source_role = role == Role::Proj || role == Role::Out ? Role::Out : role;  // the source's one output projection
    const std::string name = bias ? source_of(from, source_role, Layout::Vector) : source_of_config(fc, source_role);
    if (!name.empty()) m.sources.push_back(name);
    parts.push_back(name);
  }
  if (bias && std::any_of(parts.begin(), parts.end(), [](const std::string& n) { return n.empty(); })) {
    m.action = "kept";
    m.sources.clear();
    m.hint = fc.class_name() + " has no bias here (qkv_bias=False): " + t.name + " keeps its own values.";
    code += "# " + param_expr(dst, t.name) + ": the source has no bias, kept as built\n";
    return std::nullopt;
  }
  return packed_value(from, t, parts, it != plan.end() && !it->second.transpose, src, dst, m, code);
}

/// The tokens both modules run on: the caller's, else the book's six tokens (d_in 3) or seeded ones,
/// doubled into a batch of two for the batched classes.
Tensor copy_tokens(const ModuleConfig& fc, const std::optional<Tensor>& tokens) {
  const Tensor x = tokens ? *tokens : (fc.d_in == 3 ? book_tokens() : seeded_tokens(6, fc.d_in, 123));
  Tensor out = x.shape.size() == 2 && fc.batched() ? Tensor({2, x.shape[0], x.shape[1]}) : x;
  if (out.data.size() != x.data.size()) {
    std::copy(x.data.begin(), x.data.end(), out.data.begin());
    std::copy(x.data.begin(), x.data.end(), out.data.begin() + static_cast<std::ptrdiff_t>(x.data.size()));
  }
  return out;
}

/// Both modules run in eval mode on the report's tokens: the largest output difference, whether they
/// agree, and the first stage that does not.
void compare_outputs(const AttentionModule& from, const AttentionModule& to, CopyReport& report) {
  ForwardOptions eval;
  eval.training = false;
  const Tensor a = from.forward(report.tokens, eval);
  const Tensor b = to.forward(report.tokens, eval);
  double max_diff = 0.0;
  bool nan = false;
  for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a.data[i]) - b.data[i]);
    if (!(d == d))
      nan = true;
    else
      max_diff = std::max(max_diff, d);
  }
  report.max_abs_diff = nan ? INFINITY : max_diff;
  report.stages = compare_stages(from, to, report.tokens);
  report.agree = !nan && a.shape == b.shape && max_diff <= kAgreementTolerance;
  if (!report.agree)
    for (const StageDiff& d : report.stages)
      if (!(d.max_abs_diff <= kAgreementTolerance)) {
        report.notes.push_back("The first stage that disagrees: " + d.id + " (max abs difference " + format_g(d.max_abs_diff, 3) + ").");
        break;
      }
}

}  // namespace

/// The book's map from `from` into a class that lists it in copies_from, role by role: q/k/v into
/// q/k/v (packed rows where the target packs them, transposed where it keeps (in, out)), the source's
/// output projection into the target's last one, and the identity (zero bias) into any output
/// projection before it; bias_k/bias_v and biases the source lacks stay as built.
static CopyReport copy_into(const AttentionModule& from, AttentionModule& to, const CopyPlan& plan, const std::optional<Tensor>& tokens) {
  const ModuleConfig& fc = from.config();
  const ModuleConfig& tc = to.config();
  const std::vector<ParameterSpec> targets = parameter_specs(tc);
  check_copy_into(fc, tc, targets, plan, tokens);
  const std::vector<Role> outs = output_roles(tc);
  CopyReport report;
  std::vector<NamedTensor> values;
  std::string code;
  for (const ParameterSpec& t : targets) {
    MatrixReport m;
    m.name = t.name;
    m.to_shape = t.shape;
    std::optional<Tensor> value = target_value(from, tc, t, plan, outs, m, code);
    if (value && value->shape != t.shape) {
      m.action = "shape_mismatch";
      m.hint = "Cannot copy " + shape_string(value->shape) + " into " + shape_string(t.shape) + ".";
    } else if (value) {
      values.push_back({t.name, std::move(*value)});
    }
    report.matrices.push_back(m);
  }
  to.set_parameters(values);
  report.notes.push_back(partner(from, to)->note);
  std::string unmapped;  // the source's parameters no target takes (a class without biases): said, not silently dropped
  for (const ParameterSpec& s : parameter_specs(fc))
    if (std::none_of(report.matrices.begin(), report.matrices.end(), [&s](const MatrixReport& m) { return std::count(m.sources.begin(), m.sources.end(), s.name) > 0; }))
      unmapped += (unmapped.empty() ? "" : ", ") + s.name;
  if (!unmapped.empty()) report.notes.push_back("No target in " + tc.class_name() + " (it has no such parameter), so not copied: " + unmapped + ".");
  if (!unmapped.empty()) code += "# no target in " + tc.recipe().python_name + ", not copied: " + unmapped + "\n";
  report.code = code;
  report.tokens = copy_tokens(fc, tokens);
  compare_outputs(from, to, report);
  return report;
}

namespace {

/// Exercise 3.1's copy is between the single-head classes, with a plan naming only their three
/// matrices, and tokens that fit: checked before `to` changes.
void check_single_head_copy(const AttentionModule& from, const AttentionModule& to, const CopyPlan& plan, const std::optional<Tensor>& tokens) {
  if (!is_single_head(from) || !is_single_head(to)) {
    throw AttentionError("copy_unsupported", "",
                         "weight copy works between SelfAttention_v1 and SelfAttention_v2, and from MultiHeadAttention into its chapter 3 bonus rewrites (got " +
                             from.config().class_name() + " -> " + to.config().class_name() + ")",
                         "Build both modules as SelfAttention_v1 or SelfAttention_v2, or copy a MultiHeadAttention into e.g. MultiHeadAttentionCombinedQKV.");
  }
  for (const auto& entry : plan) {
    const std::string& key = entry.first;
    if (std::none_of(std::begin(kSingleHeadMatrices), std::end(kSingleHeadMatrices), [&key](const char* m) { return key == m; })) {
      throw AttentionError("copy_plan", key, "the copy plan names '" + key + "', which is not a weight matrix", "Use W_query, W_key and W_value.");
    }
  }
  // All or nothing: tokens that cannot run are refused before `to` changes.
  if (tokens) check_input(from.config(), *tokens, "tokens");
}

/// One of W_query/W_key/W_value copied as the plan says (or not), with a hint where the copy lands
/// transposed: `layouts_differ` when v1 keeps (d_in, d_out) and v2 (d_out, d_in).
MatrixReport copy_matrix(const AttentionModule& from, AttentionModule& to, const char* matrix, const CopyPlan& plan, bool layouts_differ) {
  MatrixReport r;
  r.name = matrix;
  const Tensor src = *from.parameter(weight_name(from, matrix));
  const Tensor dst = *to.parameter(weight_name(to, matrix));
  r.from_shape = src.shape;
  r.to_shape = dst.shape;
  const auto it = plan.find(matrix);
  const CopyPlanEntry entry = it == plan.end() ? CopyPlanEntry{} : it->second;
  if (!entry.copy) {
    r.action = "not_copied";
    r.hint = std::string(matrix) + " keeps its own initial values, so the outputs will differ.";
    return r;
  }
  const Tensor value = entry.transpose ? transposed(src) : src;
  if (value.shape != dst.shape) {
    r.action = "shape_mismatch";
    r.hint = "Cannot copy " + shape_string(value.shape) + " into " + shape_string(dst.shape) + ".";
    if (value.shape.size() == 2 && value.shape[0] == dst.shape[1] && value.shape[1] == dst.shape[0])
      r.hint += std::string(" The shape is exactly reversed: it looks transposed; ") + (entry.transpose ? "turn the transpose off." : "turn the transpose on (.T).");
    return r;
  }
  to.set_parameter(weight_name(to, matrix), value);
  r.action = entry.transpose ? "transposed" : "copied";
  if (entry.transpose != layouts_differ) {
    r.hint = layouts_differ ? std::string("Copied without .T: the shapes fit only because d_in == d_out, so ") + matrix +
                                  " lands transposed (v1 keeps (d_in, d_out), v2's Linear keeps (d_out, d_in)) and the outputs will differ."
                            : std::string("Transposed although both modules keep the same layout: ") + matrix + " lands transposed and the outputs will differ.";
  }
  return r;
}

/// Notes on the q/k/v biases, which exercise 3.1's copy leaves alone.
void add_bias_notes(const AttentionModule& from, const AttentionModule& to, CopyReport& report) {
  const bool from_bias = has_qkv_bias(from);
  const bool to_bias = has_qkv_bias(to);
  if (from_bias && !to_bias) report.notes.push_back("The source has q/k/v biases (qkv_bias=True) that the target cannot hold, so the outputs cannot agree.");
  if (to_bias && !from_bias) report.notes.push_back("The target's q/k/v biases keep their own initial values; set qkv_bias=False or copy them too.");
  if (to_bias && from_bias) report.notes.push_back("The q/k/v biases are not part of this copy; the target keeps its own.");
}

/// Both single-head modules run in eval mode on the report's tokens: the largest output difference and,
/// when they differ, the matrices not copied as their layouts need.
void compare_single_head_outputs(const AttentionModule& from, const AttentionModule& to, bool layouts_differ, CopyReport& report) {
  if (from.config().d_in != to.config().d_in) {
    report.notes.push_back("The two modules take different d_in (" + std::to_string(from.config().d_in) + " vs " + std::to_string(to.config().d_in) + "), so no tokens fit both.");
    return;
  }
  ForwardOptions eval;
  eval.training = false;
  const Tensor a = from.forward(report.tokens, eval);
  const Tensor b = to.forward(report.tokens, eval);
  if (a.shape != b.shape) {
    report.notes.push_back("The outputs have different shapes (" + shape_string(a.shape) + " vs " + shape_string(b.shape) + ").");
    return;
  }
  double max_diff = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i) max_diff = std::max(max_diff, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
  report.max_abs_diff = max_diff;
  report.stages = compare_stages(from, to, report.tokens);
  report.agree = max_diff <= kAgreementTolerance;
  if (!report.agree) {
    std::vector<std::string> suspects;
    for (const auto& r : report.matrices)
      if (r.action != (layouts_differ ? "transposed" : "copied")) suspects.push_back(r.name);
    if (!suspects.empty()) {
      std::string s;
      for (size_t i = 0; i < suspects.size(); ++i) s += (i ? ", " : "") + suspects[i];
      report.notes.push_back("The outputs differ (max abs difference " + format_g(max_diff, 3) + "); look at " + s + ".");
    }
  }
}

}  // namespace

CopyReport copy_weights(const AttentionModule& from, AttentionModule& to, const CopyPlan& plan, const std::optional<Tensor>& tokens) {
  if (partner(from, to) != nullptr) return copy_into(from, to, plan, tokens);
  check_single_head_copy(from, to, plan, tokens);
  const bool layouts_differ = from.config().recipe().queries_in_out() != to.config().recipe().queries_in_out();
  CopyReport report;
  for (const char* matrix : kSingleHeadMatrices) report.matrices.push_back(copy_matrix(from, to, matrix, plan, layouts_differ));
  add_bias_notes(from, to, report);
  report.code = copy_code(from.config().recipe(), to.config().recipe(), plan);
  report.tokens = tokens ? *tokens : (from.config().d_in == 3 ? book_tokens() : seeded_tokens(6, from.config().d_in, 123));
  compare_single_head_outputs(from, to, layouts_differ, report);
  return report;
}

std::vector<StageDiff> compare_stages(const AttentionModule& a, const AttentionModule& b, const Tensor& x) {
  std::vector<Stage> ta, tb;
  ForwardOptions oa, ob;
  oa.training = ob.training = false;
  oa.trace = &ta;
  ob.trace = &tb;
  a.forward(x, oa);
  b.forward(x, ob);
  std::vector<StageDiff> out;
  for (const auto& sa : ta) {
    for (const auto& sb : tb) {
      if (sa.id != sb.id || sa.tensor.shape != sb.tensor.shape) continue;
      double m = 0.0;
      for (size_t i = 0; i < sa.tensor.data.size(); ++i) {
        const float u = sa.tensor.data[i], v = sb.tensor.data[i];
        if (u == v) continue;  // also -inf == -inf in masked scores
        m = std::max(m, std::isfinite(u) && std::isfinite(v) ? static_cast<double>(std::fabs(u - v)) : INFINITY);
      }
      out.push_back({sa.id, m});
    }
  }
  return out;
}

std::string copy_code(const ClassSpec& from, const ClassSpec& to, const CopyPlan& plan) {
  if (!is_single_head(from) || !is_single_head(to))
    throw AttentionError("copy_unsupported", "", "weight copy works between SelfAttention_v1 and SelfAttention_v2 (got " + from.name + " -> " + to.name + ")", "");
  const bool same = &from == &to;
  const std::string src = same ? "src" : from.python_name;
  const std::string dst = same ? "dst" : to.python_name;
  std::string code;
  for (const char* m : {"W_query", "W_key", "W_value"}) {
    const auto it = plan.find(m);
    const std::string target = dst + "." + weight_name(to, m);
    if (it == plan.end() || !it->second.copy) {
      code += "# " + target + " keeps its own initial values\n";
      continue;
    }
    code += target + " = torch.nn.Parameter(" + src + "." + weight_name(from, m) + (it->second.transpose ? ".T" : "") + ")\n";
  }
  return code;
}

}  // namespace attention_lab
