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

}  // namespace

namespace {

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

}  // namespace

/// The book's map from `from` into a class that lists it in copies_from, role by role: q/k/v into
/// q/k/v (packed rows where the target packs them, transposed where it keeps (in, out)), the source's
/// output projection into the target's last one, and the identity (zero bias) into any output
/// projection before it; bias_k/bias_v and biases the source lacks stay as built.
static CopyReport copy_into(const AttentionModule& from, AttentionModule& to, const CopyPlan& plan, const std::optional<Tensor>& tokens) {
  const ModuleConfig& fc = from.config();
  const ModuleConfig& tc = to.config();
  const std::vector<ParameterSpec> targets = parameter_specs(tc);
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
  const std::vector<Role> outs = output_roles(tc);
  CopyReport report;
  std::vector<NamedTensor> values;
  const std::string src = fc.recipe().python_name, dst = tc.recipe().python_name;
  std::string code;
  const auto param_expr = [](const std::string& module, const std::string& name) {
    // nn.Module attribute access: heads.0.x -> heads[0].x is not needed here (no per-head modules)
    return module + "." + name;
  };
  for (const ParameterSpec& t : targets) {
    const ParamRecipe& r = *t.recipe;
    MatrixReport m;
    m.name = t.name;
    m.to_shape = t.shape;
    const auto it = plan.find(t.name);
    const bool skip = it != plan.end() && !it->second.copy;
    const bool bias = r.layout == Layout::Vector;
    std::vector<Role> roles;
    if (r.role == Role::Qkv)
      roles = {Role::Query, Role::Key, Role::Value};
    else if (r.role == Role::Out || r.role == Role::Proj)
      roles = {r.role};
    else if (r.role == Role::Query || r.role == Role::Key || r.role == Role::Value)
      roles = {r.role};
    const bool identity = !roles.empty() && (roles[0] == Role::Out || roles[0] == Role::Proj) && roles[0] != outs.back();
    if (roles.empty() || skip) {
      m.action = skip ? "not_copied" : "kept";
      m.hint = skip ? t.name + " keeps its own initial values, so the outputs will differ." : t.name + " has no counterpart in " + fc.class_name() + ": it keeps its own values.";
      code += "# " + param_expr(dst, t.name) + (skip ? " keeps its own initial values\n" : " has no counterpart: kept as built\n");
      report.matrices.push_back(m);
      continue;
    }
    // The source operators, as nn.Linear keeps them: weights (out, in), biases (out).
    Tensor value;
    if (identity) {
      const int64_t n = tc.d_out;
      value = bias ? Tensor({n}) : Tensor({n, n});
      if (!bias)
        for (int64_t i = 0; i < n; ++i) value.data[static_cast<size_t>(i * n + i)] = 1.0f;
      m.action = "identity";
      code += param_expr(dst, t.name) + " = torch.nn.Parameter(" + (bias ? "torch.zeros(" : "torch.eye(") + std::to_string(n) + "))\n";
    } else {
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
        report.matrices.push_back(m);
        continue;
      }
      std::vector<Tensor> pieces;
      for (const std::string& name : parts) pieces.push_back(*from.parameter(name));
      int64_t rows = 0;
      for (const Tensor& p : pieces) rows += p.shape[0];
      value = bias ? Tensor({rows}) : Tensor({rows, pieces[0].shape[1]});
      int64_t at = 0;
      for (const Tensor& p : pieces) {
        std::copy(p.data.begin(), p.data.end(), value.data.begin() + at);
        at += static_cast<int64_t>(p.data.size());
      }
      m.from_shape = value.shape;
      std::string expr;
      for (size_t i = 0; i < parts.size(); ++i) expr += (i ? ", " : "") + param_expr(src, parts[i]);
      if (parts.size() > 1) expr = "torch.cat([" + expr + "])";
      const bool wants_transpose = !bias && r.layout == Layout::InOut;  // x @ W takes (in, out); nn.Linear keeps (out, in)
      const bool transpose = wants_transpose && !(it != plan.end() && !it->second.transpose);
      if (transpose) {
        value = transposed(value);
        expr += ".T";
      }
      m.action = parts.size() > 1 ? "packed" : transpose ? "transposed" : wants_transpose ? "untransposed" : "copied";
      if (m.action == "untransposed") m.hint = "Copied without .T: " + t.name + " is used as x @ W, so it lands transposed and the outputs will differ.";
      code += param_expr(dst, t.name) + " = torch.nn.Parameter(" + expr + ")\n";
    }
    if (value.shape != t.shape) {
      m.action = "shape_mismatch";
      m.hint = "Cannot copy " + shape_string(value.shape) + " into " + shape_string(t.shape) + ".";
      report.matrices.push_back(m);
      continue;
    }
    values.push_back({t.name, std::move(value)});
    report.matrices.push_back(m);
  }
  to.set_parameters(values);
  report.notes.push_back(partner(from, to)->note);
  report.code = code;
  const Tensor x = tokens ? *tokens : (fc.d_in == 3 ? book_tokens() : seeded_tokens(6, fc.d_in, 123));
  report.tokens = x.shape.size() == 2 && fc.batched() ? Tensor({2, x.shape[0], x.shape[1]}) : x;
  if (report.tokens.data.size() != x.data.size()) {
    std::copy(x.data.begin(), x.data.end(), report.tokens.data.begin());
    std::copy(x.data.begin(), x.data.end(), report.tokens.data.begin() + static_cast<std::ptrdiff_t>(x.data.size()));
  }
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
  return report;
}

CopyReport copy_weights(const AttentionModule& from, AttentionModule& to, const CopyPlan& plan, const std::optional<Tensor>& tokens) {
  if (partner(from, to) != nullptr) return copy_into(from, to, plan, tokens);
  if (!is_single_head(from) || !is_single_head(to)) {
    throw AttentionError("copy_unsupported", "",
                         "weight copy works between SelfAttention_v1 and SelfAttention_v2, and from MultiHeadAttention into its chapter 3 bonus rewrites (got " +
                             from.config().class_name() + " -> " + to.config().class_name() + ")",
                         "Build both modules as SelfAttention_v1 or SelfAttention_v2, or copy a MultiHeadAttention into e.g. MultiHeadAttentionCombinedQKV.");
  }
  const char* matrices[] = {"W_query", "W_key", "W_value"};
  for (const auto& entry : plan) {
    const std::string& key = entry.first;
    if (std::none_of(std::begin(matrices), std::end(matrices), [&key](const char* m) { return key == m; })) {
      throw AttentionError("copy_plan", key, "the copy plan names '" + key + "', which is not a weight matrix", "Use W_query, W_key and W_value.");
    }
  }
  // All or nothing: tokens that cannot run are refused before `to` changes.
  if (tokens) check_input(from.config(), *tokens, "tokens");
  const bool layouts_differ = from.config().recipe().queries_in_out() != to.config().recipe().queries_in_out();
  CopyReport report;
  for (const char* matrix : matrices) {
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

  const bool from_bias = has_qkv_bias(from);
  const bool to_bias = has_qkv_bias(to);
  if (from_bias && !to_bias) report.notes.push_back("The source has q/k/v biases (qkv_bias=True) that the target cannot hold, so the outputs cannot agree.");
  if (to_bias && !from_bias) report.notes.push_back("The target's q/k/v biases keep their own initial values; set qkv_bias=False or copy them too.");
  if (to_bias && from_bias) report.notes.push_back("The q/k/v biases are not part of this copy; the target keeps its own.");

  report.code = copy_code(from.config().recipe(), to.config().recipe(), plan);
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

ModuleConfig equivalent_config(const ModuleConfig& c) {
  ModuleConfig out = c;
  const ClassSpec* to = find_class(c.recipe().converts_to);
  if (to != nullptr && c.recipe().heads == HeadsRule::Modules) {
    out.spec = to;
    out.d_out = c.num_heads * c.d_out;
  } else if (to != nullptr && c.recipe().heads == HeadsRule::Fused) {
    out.spec = to;
    out.d_out = c.head_dim();
  } else {
    throw AttentionError("convert_unsupported", "", c.class_name() + " has no multi-head equivalent", "Convert between MultiHeadAttentionWrapper and MultiHeadAttention.");
  }
  return out;
}

AttentionModule fused_from_wrapper(const AttentionModule& wrapper, HeadLayout layout) {
  const ModuleConfig& w = wrapper.config();
  if (w.recipe().heads != HeadsRule::Modules || w.recipe().converts_to.empty()) {
    throw AttentionError("convert_unsupported", "", "expected a MultiHeadAttentionWrapper, got " + w.class_name(), "");
  }
  const int64_t H = w.num_heads, hd = w.d_out, d_in = w.d_in, total = H * hd;
  // The equivalent is checked like any setup (its out_proj can be far larger than the wrapper): a
  // fused module over the memory budget is refused before anything is allocated.
  const ModuleConfig target = equivalent_config(w);
  AttentionModule fused(validated_config(target.class_name(), target.slots()));
  // Head h's row j lands in row h*hd + j (stacked) or j*H + h (interleaved: the mistake).
  const auto row = [&](int64_t h, int64_t j) { return layout == HeadLayout::Stacked ? h * hd + j : j * H + h; };
  for (const char* m : {"W_query", "W_key", "W_value"}) {
    Tensor weight({total, d_in});  // (d_out_total, d_in)
    Tensor bias({total});
    for (int64_t h = 0; h < H; ++h) {
      const std::string head = "heads." + std::to_string(h) + "." + m;
      const Tensor hw = *wrapper.parameter(head + ".weight");  // (hd, d_in)
      for (int64_t j = 0; j < hd; ++j) std::copy_n(hw.data.begin() + j * d_in, d_in, weight.data.begin() + row(h, j) * d_in);
      if (w.qkv_bias) {
        const Tensor hb = *wrapper.parameter(head + ".bias");
        for (int64_t j = 0; j < hd; ++j) bias.data[static_cast<size_t>(row(h, j))] = hb.data[static_cast<size_t>(j)];
      }
    }
    fused.set_parameter(std::string(m) + ".weight", weight);
    if (w.qkv_bias) fused.set_parameter(std::string(m) + ".bias", bias);
  }
  Tensor identity({total, total});  // out_proj = I, bias 0: the fused module adds nothing after the merge
  for (int64_t i = 0; i < total; ++i) identity.data[static_cast<size_t>(i * total + i)] = 1.0f;
  fused.set_parameter("out_proj.weight", identity);
  fused.set_parameter("out_proj.bias", Tensor({total}));
  return fused;
}

AttentionModule wrapper_from_fused(const AttentionModule& mha) {
  const ModuleConfig& c = mha.config();
  if (c.recipe().heads != HeadsRule::Fused || c.recipe().converts_to.empty()) {
    throw AttentionError("convert_unsupported", "", "expected a MultiHeadAttention, got " + c.class_name(), "");
  }
  const int64_t H = c.num_heads, hd = c.head_dim(), d_in = c.d_in;
  const ModuleConfig target = equivalent_config(c);
  AttentionModule wrapper(validated_config(target.class_name(), target.slots()));
  for (const char* m : {"W_query", "W_key", "W_value"}) {
    const Tensor fw = *mha.parameter(std::string(m) + ".weight");  // (d_out, d_in)
    for (int64_t h = 0; h < H; ++h) {
      const std::string head = "heads." + std::to_string(h) + "." + m;
      Tensor weight({hd, d_in});  // rows h*hd .. (h+1)*hd - 1
      std::copy_n(fw.data.begin() + h * hd * d_in, hd * d_in, weight.data.begin());
      wrapper.set_parameter(head + ".weight", weight);
      if (c.qkv_bias) {
        const Tensor fb = *mha.parameter(std::string(m) + ".bias");
        wrapper.set_parameter(head + ".bias", Tensor({hd}, std::vector<float>(fb.data.begin() + h * hd, fb.data.begin() + (h + 1) * hd)));
      }
    }
  }
  return wrapper;
}

std::string conversion_code(const AttentionModule& from) {
  const ModuleConfig& c = from.config();
  const ModuleConfig to = equivalent_config(c);
  std::string code;
  if (c.recipe().heads == HeadsRule::Modules) {
    code += "mha = " + to.python_call() + "\n";
    for (const char* m : {"W_query", "W_key", "W_value"}) {
      code += "mha." + std::string(m) + ".weight = torch.nn.Parameter(torch.cat([h." + m + ".weight for h in wrapper.heads], dim=0))\n";
      if (c.qkv_bias) code += "mha." + std::string(m) + ".bias = torch.nn.Parameter(torch.cat([h." + m + ".bias for h in wrapper.heads], dim=0))\n";
    }
    code += "mha.out_proj.weight = torch.nn.Parameter(torch.eye(" + std::to_string(to.d_out) + "))\n";
    code += "mha.out_proj.bias = torch.nn.Parameter(torch.zeros(" + std::to_string(to.d_out) + "))\n";
  } else {
    code += "wrapper = " + to.python_call() + "\n";
    code += "for h, head in enumerate(wrapper.heads):\n";
    code += "    rows = slice(h * " + std::to_string(to.d_out) + ", (h + 1) * " + std::to_string(to.d_out) + ")\n";
    for (const char* m : {"W_query", "W_key", "W_value"}) {
      code += "    head." + std::string(m) + ".weight = torch.nn.Parameter(mha." + m + ".weight[rows])\n";
      if (c.qkv_bias) code += "    head." + std::string(m) + ".bias = torch.nn.Parameter(mha." + m + ".bias[rows])\n";
    }
    code += "# the wrapper has no out_proj: it matches mha only if mha.out_proj is the identity with zero bias\n";
  }
  return code;
}

}  // namespace attention_lab
