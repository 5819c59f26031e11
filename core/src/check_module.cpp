// checkModule: the book's forward on the reader's x, compared with the reader's output and stages, and
// each catalogue variant (check_catalogue.cpp) run the same way to see which reproduces them.
#include "attention_lab/check_module.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <optional>
#include <utility>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/text.hpp"

namespace attention_lab {

namespace {

/// The trace stage that holds what the reader calls `id`: context_vec is heads_concat (the heads
/// merged) for a class with heads, the single-head classes' own context_vec otherwise.
std::string trace_id(const ForwardPlan& p, const std::string& id) {
  if (id == "context_vec" && p.layout != HeadsRule::Single) return "heads_concat";
  if (id == "attn_weights" && p.dropout_stage) return "attn_weights_dropout";  // after softmax and dropout (the weights themselves when none acts)
  return id;
}

/// The shape and axes the book's forward gives the reader's stage `id` (or "output").
Shape expected_shape(const ForwardPlan& p, const std::string& id, const Shape& x, std::vector<std::string>& axes) {
  const int64_t T = x[x.size() - 2], b = p.batched ? x[0] : 1, Tk = p.num_keys(T);
  Shape s;
  if (id == "attn_scores" || id == "attn_weights") {
    s = {T, Tk}, axes = {"num_tokens", "num_keys"};
    if (p.per_head_axes) s.insert(s.begin(), p.query_heads), axes.insert(axes.begin(), "num_heads");
  } else {
    const int64_t width = id == "output" ? p.output_width : p.layout == HeadsRule::Single ? p.head_dim : p.proj_width;
    s = {T, width}, axes = {"num_tokens", id == "output" ? "output_width" : p.layout == HeadsRule::Single ? "d_out" : "num_heads * head_dim"};
  }
  if (p.batched) s.insert(s.begin(), b), axes.insert(axes.begin(), "b");
  return s;
}

void check_shape(const ForwardPlan& p, const std::string& id, const Tensor& t, const Shape& x) {
  std::vector<std::string> axes;
  const Shape want = expected_shape(p, id, x, axes);
  if (t.shape == want && static_cast<int64_t>(t.data.size()) == numel_of(want)) return;
  std::string named;
  for (size_t i = 0; i < axes.size(); ++i) named += (i ? ", " : "") + axes[i];
  throw AttentionError("check_tensor", id,
                       id + " has shape " + shape_string(t.shape) + " (" + std::to_string(t.data.size()) + " values); the book's forward of " + p.config.python_call() + " on x " +
                           shape_string(x) + " gives " + shape_string(want) + " (" + named + ")",
                       id == "output" ? "Save the module's return value on the same x." : "Save " + id + " at the point the book's forward has it, shaped (" + named + ").");
}

/// The given stages, checked, in forward order.
std::vector<const NamedTensor*> given_stages(const ForwardPlan& p, const std::vector<NamedTensor>& stages, const Shape& x) {
  for (const NamedTensor& s : stages) {
    const auto& ids = check_stage_ids();
    if (std::find(ids.begin(), ids.end(), s.name) == ids.end())
      throw AttentionError("check_tensor", s.name, "no stage " + s.name + " to check", "Give any of attn_scores, attn_weights and context_vec, or none.");
  }
  std::vector<const NamedTensor*> ordered;
  for (const std::string& id : check_stage_ids())
    for (const NamedTensor& s : stages)
      if (s.name == id) {
        check_shape(p, id, s.tensor, x);
        ordered.push_back(&s);
      }
  return ordered;
}

/// A forward of `module` with plan `variant` on x, traced: its output and the reader's stages. Eval
/// without a seed; with one, training, dropout drawing from torch.manual_seed(seed)'s stream.
struct Run {
  Tensor output;
  std::vector<Stage> trace;
};
Run run(const AttentionModule& module, const ForwardPlan& variant, const Tensor& x, double budget, ThreadPool* pool, std::optional<uint64_t> seed) {
  Run r;
  TorchGenerator generator(seed.value_or(0));
  ForwardOptions o;
  o.pool = pool;
  o.training = seed.has_value();
  o.generator = &generator;
  o.trace = &r.trace;
  o.variant = &variant;
  o.memory_budget_bytes = budget;
  r.output = module.forward(x, o);
  return r;
}

/// The first of the reader's tensors (given stages, then the output) that leaves the run's, and the
/// run's tensor it leaves; none when none does.
struct Leaving {
  std::string id;
  const Tensor* yours;
  Tensor book;
};
/// The run's stage `id`, or none when the trace has no such stage.
std::optional<Tensor> traced(const Run& r, const std::string& id) {
  for (const Stage& st : r.trace)
    if (st.id == id) return stage_tensor(r.trace, st);
  return std::nullopt;
}

/// Whether the reader's attn_scores are the book's after the mask: the book fills them in place
/// (attn_scores.masked_fill_), so a reader who keeps the variable keeps the masked scores.
bool masked_in_place(const Run& r, const NamedTensor& s) {
  if (s.name != "attn_scores") return false;
  const std::optional<Tensor> masked = traced(r, "attn_scores_masked");
  return masked && check_tensors_agree(s.tensor, *masked);
}

std::optional<Leaving> first_leaving(const ForwardPlan& p, const Run& r, const std::vector<const NamedTensor*>& stages, const Tensor& output) {
  for (const NamedTensor* s : stages) {
    std::optional<Tensor> book = traced(r, trace_id(p, s->name));
    if (book && !check_tensors_agree(s->tensor, *book) && !masked_in_place(r, *s)) return Leaving{s->name, &s->tensor, std::move(*book)};
  }
  if (check_tensors_agree(output, r.output)) return std::nullopt;
  return Leaving{"output", &output, r.output};
}

/// The first value of `l` out of tolerance and the row of the last axis around it, side by side.
CheckDifference difference_of(const ForwardPlan& p, const Leaving& l, const Shape& x) {
  CheckDifference d;
  d.stage = l.id;
  d.shape = expected_shape(p, l.id, x, d.axes);
  const std::vector<float>& yours = l.yours->data;
  size_t at = 0;
  while (at + 1 < yours.size() && check_values_agree(yours[at], l.book.data[at])) ++at;
  d.index.assign(d.shape.size(), 0);
  for (size_t axis = d.shape.size(), rest = at; axis-- > 0;) {
    d.index[axis] = static_cast<int64_t>(rest % static_cast<size_t>(d.shape[axis]));
    rest /= static_cast<size_t>(d.shape[axis]);
  }
  const int64_t n = d.shape.back(), j = d.index.back();
  d.from = std::max<int64_t>(0, std::min(j - kDifferenceWindow / 2 + 1, n - kDifferenceWindow));
  const size_t row = at - static_cast<size_t>(j), end = static_cast<size_t>(std::min(n, d.from + kDifferenceWindow));
  for (size_t k = static_cast<size_t>(d.from); k < end; ++k) d.yours.push_back(yours[row + k]), d.book.push_back(l.book.data[row + k]);
  return d;
}

/// Each catalogue entry that applies to the class (the seeded ones only with a seed), run as the book's
/// forward with that one mistake: whether it reproduces the reader's output and every given stage.
void try_catalogue(const ModuleConfig& config, const ForwardPlan& book, const AttentionModule& module, const std::vector<NamedTensor>& params, const Tensor& x,
                   const Tensor& output, const std::vector<const NamedTensor*>& given, double budget, ThreadPool* pool, std::optional<uint64_t> seed, CheckReport& report) {
  for (const Mistake& m : mistake_catalogue()) {
    if (!m.applies(book) || (m.seeded && !seed)) continue;
    ForwardPlan variant = book;
    if (m.alter_plan != nullptr) m.alter_plan(variant);
    std::optional<AttentionModule> altered;
    if (m.alter_weights != nullptr) {
      std::vector<NamedTensor> copy = params;
      m.alter_weights(book, copy);
      altered.emplace(config);
      altered->set_parameters(copy);
    }
    const Run r = run(altered ? *altered : module, variant, x, budget, pool, seed);
    CauseLines lines = m.lines(book);
    report.causes.push_back({m.id, m.title, std::move(lines.line), std::move(lines.fix), m.source, !first_leaving(variant, r, given, output).has_value()});
  }
}

/// Without a seed the check runs the book's forward in eval mode: a class with dropout > 0 whose output
/// disagrees may have had its module left in training mode (dropout acting), which only a seed reproduces.
void note_dropout(const ForwardPlan& book, std::optional<uint64_t> seed, CheckReport& report) {
  if (report.agree || !book.dropout_stage || book.dropout <= 0.0) return;
  if (seed) {  // the draws follow the seed only when nothing else drew from the generator in between
    if (std::none_of(report.causes.begin(), report.causes.end(), [](const CheckCause& c) { return c.explains; }))
      report.notes.push_back("The check drew dropout from torch.manual_seed(" + std::to_string(*seed) +
                             ") right before the forward. If your notebook called it earlier (before the constructor, whose weights draw from it too), "
                             "the masks differ: call torch.manual_seed(" +
                             std::to_string(*seed) + ") again right before mha(batch), save the file again, or check in eval mode.");
    return;
  }
  report.notes.push_back("dropout = " + format_g(book.dropout, 6) +
                         " may be acting: a module left in training mode (no mha.eval()) drops attention weights at random, and the check ran the book's forward "
                         "in eval mode. Call mha.eval() before the forward, or to check training mode call torch.manual_seed(123) right before mha(batch) and save "
                         "\"seed\": 123 in the check file (lab.checkModule({..., seed: 123})).");
}

}  // namespace

const std::vector<std::string>& check_stage_ids() {
  static const std::vector<std::string> ids = {"attn_scores", "attn_weights", "context_vec"};
  return ids;
}

bool check_values_agree(float reader, float book) {
  if (std::isnan(book) || std::isnan(reader)) return std::isnan(book) == std::isnan(reader);  // NaN only where the book has NaN
  if (reader == book) return true;                                                            // equal infinities too
  const double d = std::fabs(static_cast<double>(reader) - book);
  return d <= kCheckTolerance * (1.0 + std::fabs(static_cast<double>(book)));
}

bool check_tensors_agree(const Tensor& reader, const Tensor& book, double* max_abs_diff) {
  const double inf = std::numeric_limits<double>::infinity();
  bool agree = reader.data.size() == book.data.size();
  double worst = agree ? 0.0 : inf;
  for (size_t i = 0; i < book.data.size() && i < reader.data.size(); ++i) {
    const float r = reader.data[i], b = book.data[i];
    if (!check_values_agree(r, b)) agree = false;
    if (std::isnan(b) || std::isnan(r)) {
      if (std::isnan(b) != std::isnan(r)) worst = inf;
    } else if (r != b) {
      worst = std::max(worst, std::fabs(static_cast<double>(r) - b));
    }
  }
  if (max_abs_diff != nullptr) *max_abs_diff = worst;
  return agree;
}

double check_bytes(const ForwardPlan& plan, const Shape& x_shape) {
  // The book's module and one traced forward with its results at a time, plus a variant's module, and
  // two copies of the parameters (the state dict's, checked; a variant's, altered): 4 bytes a float.
  const double params = 4.0 * static_cast<double>(parameter_count(plan.config));
  return plan_bytes(plan, x_shape, true) + plan_heap_bytes(plan, std::nullopt, false) + 2 * params;
}

CheckReport check_module(const ModuleConfig& config, const std::vector<NamedTensor>& state_dict, const Tensor& x, const Tensor& output, const std::vector<NamedTensor>& stages,
                         double budget, ThreadPool* pool, std::optional<uint64_t> seed) {
  CheckReport report;
  report.class_name = config.class_name();
  report.call = config.python_call();
  report.seed = seed;
  const ForwardPlan book = plan_forward(config);
  try {
    check_input(book, x, "x", budget, true);  // x's shape first: the estimate and the shapes below are read off it
  } catch (const AttentionError& e) {         // the call is the reader's: it, not a slot of a page, is what to fix
    throw AttentionError(e.code(), e.slot(), std::string(e.what()) + " (the call checked is " + config.python_call() + ", as the check gives it)",
                         e.hint() + " Or: the call must be your module's own, with the numbers it was built with.");
  }
  const double bytes = check_bytes(book, x.shape);
  if (bytes > budget)  // before the first allocation (the parameters' copy)
    throw AttentionError("too_large", "x",
                         "checking " + config.python_call() + " on x " + shape_string(x.shape) + " needs about " + format_g(bytes / 1048576.0, 6) + " MiB, over the " +
                             format_g(budget / 1048576.0, 6) + " MiB budget",
                         "Save fewer tokens or a smaller batch in the check file.");
  const std::vector<NamedTensor> params = check_state_dict(config, state_dict, &report.notes);
  check_shape(book, "output", output, x.shape);
  const std::vector<const NamedTensor*> given = given_stages(book, stages, x.shape);
  try {
    AttentionModule module(config);
    module.set_parameters(params);
    {
      const Run r = run(module, book, x, budget, pool, seed);
      report.agree = check_tensors_agree(output, r.output, &report.max_abs_diff);
      for (const NamedTensor* s : given)
        if (masked_in_place(r, *s) && !check_tensors_agree(s->tensor, *traced(r, "attn_scores")))
          report.notes.push_back(
              "Your attn_scores are the scores after the mask (masked_fill_ works in place), so they were compared with the book's masked scores; "
              "to give them before the mask, save attn_scores.clone() right after queries @ keys.transpose(2, 3).");
      if (const std::optional<Leaving> l = first_leaving(book, r, given, output)) {
        report.first_stage = l->id;
        report.difference = difference_of(book, *l, x.shape);
      }
    }
    try_catalogue(config, book, module, params, x, output, given, budget, pool, seed, report);
    note_dropout(book, seed, report);
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", "x", "not enough memory to check " + config.python_call() + " on x " + shape_string(x.shape), "Save fewer tokens or a smaller batch.");
  }
  return report;
}

}  // namespace attention_lab
