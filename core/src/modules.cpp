// An attention module's forward: the checks on its input, the passes over one Activations record
// (attention_passes.cpp) with a recorder for the trace, the heads joined from shares, and the warning
// that names the first stage to turn non-finite.
#include "attention_lab/modules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>

#include "attention_lab/diagnostics.hpp"
#include "attention_lab/ops.hpp"
#include "attention_lab/text.hpp"
#include "attention_lab/validator.hpp"
#include "attention_passes.hpp"
#include "module_impl.hpp"

namespace attention_lab {

namespace {
/// The checks of a forward of a share of the heads (ForwardOptions::share): AttentionError head_share.
/// One message built once (this code is in every binary, the page's first view included).
void check_share(const ForwardPlan& p, const HeadShare& s, const ForwardOptions& o, bool dropout_acts) {
  const char* slot = "share";
  const char* problem = nullptr;
  const char* hint = "Run the whole forward (module.forward).";
  if (p.layout == HeadsRule::Single) {
    problem = "this class has one head (of width d_out): there are no heads to share out";
  } else if (s.count < 1 || s.first < 0 || s.first + s.count > p.query_heads || s.first % p.group_size != 0 || s.count % p.group_size != 0) {
    problem = "not a run of whole key/value groups within the heads";
    hint = "Take the shares module.headShares(parts) gives.";
  } else if (o.trace != nullptr || o.attn_weights != nullptr || o.cache != nullptr) {
    problem = "a share of the heads runs untraced and without a KV cache";
    hint = "Trace, or cache, with the whole forward (module.forward).";
  } else if (dropout_acts) {
    slot = "dropout";
    problem = "dropout in training draws one stream over every head, in PyTorch's order, so a share cannot run on its own";
    hint = "Run in eval mode (training: false), or the whole forward.";
  }
  if (problem == nullptr) return;
  char text[256];
  std::snprintf(text, sizeof text, "heads [%lld, %lld) of %lld (%lld per key/value head): %s", static_cast<long long>(s.first), static_cast<long long>(s.first + s.count),
                static_cast<long long>(p.query_heads), static_cast<long long>(p.group_size), problem);
  throw AttentionError("head_share", slot, text, hint);
}

std::string fmt(double v, int precision = 4) { return format_g(v, precision); }

}  // namespace

void check_input(const ModuleConfig& c, const Tensor& x, const std::string& what, double memory_budget_bytes, bool trace) {
  check_input(plan_forward(c), x, what, memory_budget_bytes, trace);
}

void check_input(const ForwardPlan& plan, const Tensor& x, const std::string& what, double memory_budget_bytes, bool trace) {
  const ModuleConfig& c = plan.config;
  // The data must fit the shape before the shape means anything (a shape whose product overflows
  // 64 bits fits no data).
  for (int64_t d : x.shape) {
    if (d < 0) throw AttentionError("tensor_shape", what, what + " has shape " + shape_string(x.shape) + " with a negative size", "Every size must be 0 or more.");
  }
  int64_t numel = 0;
  if (!checked_numel(x.shape, numel) || static_cast<int64_t>(x.data.size()) != numel) {
    throw AttentionError("tensor_size", what, what + " has shape " + shape_string(x.shape) + " but " + std::to_string(x.data.size()) + " values",
                         "Give exactly as many values as the product of the shape, row-major.");
  }
  std::vector<Diagnostic> input_problems;
  check_input_shape(c, x.shape, input_problems);
  for (const auto& d : input_problems) {
    if (d.severity == Severity::Error) throw AttentionError(d.code, d.slots.empty() ? what : d.slots.front(), d.message, d.hint);
  }
  const double bytes = plan_bytes(plan, x.shape, trace);
  if (bytes > memory_budget_bytes) {
    if (!trace)
      throw AttentionError("too_large", what,
                           "a forward pass of " + c.python_call() + " on " + shape_string(x.shape) + " needs about " + fmt(bytes / (1024.0 * 1024.0), 6) + " MiB, over the " +
                               fmt(memory_budget_bytes / (1024.0 * 1024.0), 6) + " MiB budget",
                           "Use fewer tokens or a smaller batch.");
    CheckOptions budget;
    budget.input_shape = x.shape;
    budget.memory_budget_bytes = memory_budget_bytes;
    for (const auto& d : check_config(c.class_name(), c.slots(), budget))
      if (d.code == "too_large") throw AttentionError(d.code, d.slots.empty() ? what : d.slots.front(), d.message, d.hint);
    throw AttentionError("too_large", what, "a forward pass of " + c.python_call() + " on " + shape_string(x.shape) + " is over the memory budget", "Use fewer tokens.");
  }
  for (size_t i = 0; i < x.data.size(); ++i) {
    if (!std::isfinite(x.data[i])) {
      const int64_t width = x.shape.back();
      throw AttentionError("non_finite_input", what,
                           "token " + std::to_string((static_cast<int64_t>(i) / width) % x.shape[x.shape.size() - 2]) + " has a non-finite value (" + fmt(x.data[i]) +
                               ") at position " + std::to_string(static_cast<int64_t>(i) % width),
                           "Every embedding value must be a finite number; NaN or inf would spread through every stage.");
    }
  }
}

Tensor AttentionModule::forward(const Tensor& x, const ForwardOptions& options) const {
  std::optional<TorchGenerator> start;  // the generator before the run, to rerun it traced
  if (options.warnings != nullptr && options.generator != nullptr) start = *options.generator;
  // With warnings, a cached forward keeps its chunk only after the traced rerun that names a non-finite
  // stage, which must attend over the cache as it was (else the chunk would be appended twice).
  std::optional<PendingCache> pending;
  if (options.warnings != nullptr && options.cache != nullptr) pending.emplace();
  Tensor y = live(impl_).forward_pass(x, options, pending ? &*pending : nullptr);
  if (options.warnings != nullptr && !first_non_finite(y.data.data(), y.data.size(), y.shape).empty())
    options.warnings->push_back(live(impl_).non_finite_warning(x, options, start));
  if (pending) keep_pending(*pending, *options.cache);
  return y;
}

Diagnostic AttentionModule::Impl::non_finite_warning(const Tensor& x, const ForwardOptions& options, const std::optional<TorchGenerator>& start) const {
  Diagnostic d;
  d.severity = Severity::Warning;
  d.code = "non_finite_stage";
  d.hint = "Finite inputs overflowed float32 (about 3.4e38) on the way: scale the tokens or the weights down.";
  std::vector<Stage> local;
  const std::vector<Stage>* trace = options.trace;
  if (trace == nullptr) {
    ForwardOptions again = options;
    std::optional<TorchGenerator> generator = start;
    again.generator = generator ? &*generator : nullptr;
    again.trace = &local;
    again.warnings = nullptr;
    try {
      PendingCache discarded;  // the rerun leaves the cache as the run found it
      forward_pass(x, again, &discarded);
      trace = &local;
    } catch (const AttentionError&) {
      d.message = "the output holds NaN or infinity although every input value is finite (tracing this run to find where is over the memory budget)";
      return d;
    }
  }
  for (const Stage& s : *trace) {
    // A view's values are its source's (an earlier stage) or -inf: its source turned non-finite first.
    if (s.view != StageView::Own) continue;
    // The masked scores hold -inf where keys are hidden: only NaN and +inf count there.
    const bool masked = s.id == "attn_scores_masked";
    const std::vector<float>& v = s.tensor.data;
    size_t i = 0;
    while (i < v.size() && (std::isfinite(v[i]) || (masked && v[i] == -std::numeric_limits<float>::infinity()))) ++i;
    if (i == v.size()) continue;
    std::string where;
    size_t rest = i;
    std::vector<int64_t> index(s.tensor.shape.size());
    for (size_t a = index.size(); a-- > 0;) {
      const size_t size = static_cast<size_t>(std::max<int64_t>(s.tensor.shape[a], 1));
      index[a] = static_cast<int64_t>(rest % size);
      rest /= size;
    }
    // every axis but the last names the place: b, head, row
    for (size_t a = 0; a + 1 < index.size(); ++a)
      where += (where.empty() ? "" : ", ") + (a < s.axes.size() ? s.axes[a] : "axis " + std::to_string(a)) + " " + std::to_string(index[a]);
    d.slots = {s.id};
    d.message = s.id + " is the first stage to turn non-finite from finite inputs: " +
                (std::isnan(v[i]) ? "nan"
                 : v[i] > 0       ? "inf"
                                  : "-inf") +
                " at " + where + " (column " + std::to_string(index.empty() ? 0 : index.back()) + ")";
    // NaN weights whose row of masked scores is all -inf: the mask hid every key of that query
    // (softmax of a row of -inf is 0/0), not an overflow.
    if (s.id == "attn_weights") {
      for (const Stage& m : *trace) {
        if (m.id != "attn_scores_masked" || m.shape() != s.shape()) continue;
        const size_t cols = static_cast<size_t>(s.shape().back());
        std::vector<float> scratch;
        const float* row = stage_rows(*trace, m, static_cast<int64_t>(i / cols), 1, scratch);
        if (std::all_of(row, row + cols, [](float x) { return x == -std::numeric_limits<float>::infinity(); })) {
          d.message += ": the mask hides every key of this query, and softmax of a row of -inf is NaN";
          d.hint =
              "A mask must leave each query at least one key. A boolean mask passed where True means \"attend\" (scaled_dot_product_attention) hides the "
              "diagonal: pass ~mask, or is_causal=True.";
        }
      }
    }
    return d;
  }
  d.message = "the output holds NaN or infinity although every input value is finite";
  return d;
}

void AttentionModule::Impl::project(const ForwardPlan& p, const Tensor& concat, int64_t b, int64_t T, ThreadPool* pool, Tensor& out_proj, Tensor& projected) const {
  const int64_t d_out = p.config.d_out;
  if (p.out_proj) {
    out_proj = Tensor({b, T, d_out});  // (b, num_tokens, d_out)
    ops::gemm(pool, concat.data.data(), b * T, d_out, prepared_.weight[kOutOp], bias(kOutOp), out_proj.data.data());
  }
  if (p.proj) {
    projected = Tensor({b, T, d_out});  // (b, num_tokens, d_out)
    ops::gemm(pool, out_proj.data.data(), b * T, d_out, prepared_.weight[kProjOp], bias(kProjOp), projected.data.data());
  }
}

Tensor AttentionModule::project_heads(const Tensor& x, const Tensor& concat, const ForwardOptions& options) const {
  const ForwardPlan& p = live(impl_).plan_;
  if (p.layout == HeadsRule::Single)
    throw AttentionError("head_share", "share", p.config.class_name() + " has one head (of width d_out): there are no heads to join", "Run the whole forward (module.forward).");
  check_input(p, x, "x", options.memory_budget_bytes, false);
  const int64_t b = x.shape[0], T = x.shape[1];
  const Shape want{b, T, p.proj_width};
  if (concat.shape != want || concat.data.size() != static_cast<size_t>(numel_of(want)))
    throw AttentionError("head_share", "heads_concat",
                         "heads_concat has shape " + shape_string(concat.shape) + " (" + std::to_string(concat.data.size()) + " values); the heads of x " + shape_string(x.shape) +
                             " make " + shape_string(want),
                         "Join every share of module.headShares(parts), in order, along the last axis.");
  std::optional<TorchGenerator> start;
  if (options.warnings != nullptr && options.generator != nullptr) start = *options.generator;
  try {
    Tensor out_proj, projected;
    const Impl& m = live(impl_);
    const Tensor gate = p.gate ? gated(p, {m.prepared_.weight, m.prepared_.bias, m.prepared_.token}, options.pool, x, concat) : Tensor();
    m.project(p, p.gate ? gate : concat, b, T, options.pool, out_proj, projected);
    Tensor y = p.proj ? std::move(projected) : p.out_proj ? std::move(out_proj) : concat;
    if (options.warnings != nullptr && !first_non_finite(y.data.data(), y.data.size(), y.shape).empty()) {
      ForwardOptions whole = options;
      whole.share = nullptr;
      options.warnings->push_back(live(impl_).non_finite_warning(x, whole, start));
    }
    return y;
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", "x", "not enough memory to join the heads of " + p.config.python_call() + " on " + shape_string(x.shape),
                         "Use fewer tokens or a smaller batch.");
  }
}

Tensor AttentionModule::Impl::forward_pass(const Tensor& x, const ForwardOptions& options, PendingCache* pending) const {
  const ForwardPlan& p = options.variant != nullptr ? *options.variant : plan_;
  check_input(p, x, "x", options.memory_budget_bytes, options.trace != nullptr);
  // dropout draws where the plan has it: on the weights (the book's), on the masked scores, or nowhere (catalogue variants)
  const bool dropout_acts = p.dropout_stage && options.training && p.dropout > 0.0 && p.dropout_at != DropoutAt::Nowhere;
  if (options.share != nullptr) check_share(p, *options.share, options, dropout_acts);
  if (dropout_acts && options.generator == nullptr) {
    throw AttentionError("generator_missing", "dropout", "dropout in training mode needs a random generator", "Pass a generator, or run in eval mode.");
  }
  const bool on_weights = dropout_acts && p.dropout_at == DropoutAt::Weights;
  PassContext ctx{p, {prepared_.weight, prepared_.bias, prepared_.token, prepared_.rope}, options, chunk_of(p, x, options), {0, p.query_heads}, options.cache, on_weights};
  ctx.dropout_scores = dropout_acts && p.dropout_at == DropoutAt::Scores;
  CacheRoom room;  // with a cache: a new storage when it grows, and the cache after the chunk
  ctx.room = &room;
  if (options.share != nullptr) ctx.heads = {options.share->first, options.share->first + options.share->count};
  try {
    Activations a;
    Recorder none;
    std::optional<TraceRecorder> tracer;
    if (options.trace != nullptr) tracer.emplace(ctx);
    Recorder& recorder = tracer ? static_cast<Recorder&>(*tracer) : none;
    project_latent(ctx, x, a);
    project_qkv(ctx, x, a);
    apply_rope(ctx, a, recorder.observing());
    extend_cache(ctx, a);
    attend(ctx, a, recorder);
    if (options.share != nullptr) return share_columns(ctx, a);
    merge_heads(ctx, a);
    gate_heads(ctx, x, a);
    // out_proj, then a second projection when the class has one (MHAPyTorchClass's proj)
    project(p, p.gate ? a.gate : a.heads_concat, ctx.chunk.b, ctx.chunk.T, options.pool, a.out_proj, a.proj);
    Tensor output = take_output(ctx, a, recorder.observing());
    if (options.cache != nullptr) next_cache(ctx, a, recorder.observing());  // the cache after this chunk, kept when the forward returns
    recorder.finish(a, x, output);
    if (options.cache != nullptr && pending != nullptr)
      *pending = {ctx.chunk, std::move(room), p.latent_dim > 0};
    else if (options.cache != nullptr)
      keep_cache(ctx, *options.cache);
    return output;
  } catch (const std::bad_alloc&) {
    throw AttentionError("too_large", "x", "not enough memory for a forward pass of " + p.config.python_call() + " on " + shape_string(x.shape),
                         "Use fewer tokens, a smaller batch, or turn the trace off.");
  }
}

}  // namespace attention_lab
