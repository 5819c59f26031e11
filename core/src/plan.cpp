#include "attention_lab/plan.hpp"

#include "attention_lab/ops.hpp"
#include "attention_lab/stage_table.hpp"

#include <algorithm>
#include <cmath>

namespace attention_lab {

namespace {
bool has_param(const ModuleConfig& c, Role role, Layout layout) {
  for (const auto& p : c.recipe().params)
    if (p.role == role && p.layout == layout && (p.presence == Presence::Always || c.qkv_bias)) return true;
  return false;
}
}  // namespace

ForwardPlan plan_forward(const ModuleConfig& c) {
  const ClassSpec& r = c.recipe();
  ForwardPlan p;
  p.config = c;
  p.batched = r.batched;
  p.layout = r.heads;
  p.query_heads = p.layout == HeadsRule::Single ? 1 : c.num_heads;
  p.kv_heads = p.layout == HeadsRule::Single ? 1 : c.kv_heads();
  p.group_size = p.kv_heads > 0 ? p.query_heads / p.kv_heads : 1;
  p.per_head_axes = p.layout != HeadsRule::Single;
  p.head_dim = c.head_dim();
  p.head_dim_name = p.layout == HeadsRule::Fused ? "head_dim" : "d_out";
  p.proj_width = p.query_heads * p.head_dim;
  p.output_width = c.output_width();
  p.scale_div = static_cast<float>(std::sqrt(static_cast<double>(p.head_dim)));
  p.mask = r.mask == MaskRule::None ? MaskKind::None : r.mask == MaskRule::InvertedBuffer ? MaskKind::Inverted : MaskKind::Causal;
  p.window = c.sliding_window_size;
  p.mask_buffer = r.mask == MaskRule::CausalBuffer || r.mask == MaskRule::InvertedBuffer;
  p.dropout_stage = r.dropout == DropoutRule::Weights;
  p.dropout = c.dropout;
  p.dropout_heads_outer = p.layout == HeadsRule::Modules;
  p.matmul_projection = r.queries_in_out();
  p.out_proj = has_param(c, Role::Out, Layout::OutIn);
  p.out_proj_bias = has_param(c, Role::Out, Layout::Vector);
  p.proj = has_param(c, Role::Proj, Layout::OutIn);
  p.extra_kv = c.extra_kv_tokens();
  p.latent_dim = has_param(c, Role::LatentDown, Layout::OutIn) ? c.latent_width() : 0;
  p.rope_theta = r.rope_theta;
  p.mask_fill = r.mask_fill();
  p.gate = has_param(c, Role::Gate, Layout::OutIn);
  return p;
}

std::vector<HeadShare> head_shares(const ForwardPlan& p, int64_t parts, bool training) {
  const bool dropout_acts = p.dropout_stage && training && p.dropout > 0.0;
  const int64_t units = p.kv_heads;  // key/value heads, each with its group of query heads
  const int64_t n = p.layout == HeadsRule::Single || dropout_acts ? 1 : std::max<int64_t>(1, std::min(parts, units));
  if (n == 1) return {{0, p.query_heads}};
  std::vector<HeadShare> shares;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t begin = i * units / n, end = (i + 1) * units / n;
    shares.push_back({begin * p.group_size, (end - begin) * p.group_size});
  }
  return shares;
}

double plan_heap_bytes(const ForwardPlan& p, const std::optional<Shape>& input_shape, bool trace) {
  // The inverted mask's output always holds NaN (its last query sees no key), so a forward asked for
  // warnings reruns itself traced to name the first non-finite stage: count the trace.
  if (p.mask == MaskKind::Inverted) trace = true;
  const ModuleConfig& c = p.config;
  const double d_in = static_cast<double>(c.d_in), d_out = static_cast<double>(c.d_out);
  const double heads = static_cast<double>(p.query_heads), proj = static_cast<double>(p.proj_width);
  // The module: each weight once, prepared (packed) for the forward, and the biases.
  // ops::packed_floats in double: the estimate is asked about sizes whose product overflows int64
  // (it is what refuses them; found by fuzz_validator).
  const double panel = static_cast<double>(ops::packed_floats(1, 1));
  const auto packed = [panel](double k, double n) { return std::ceil(n / panel) * k * panel; };
  const double kv_width = static_cast<double>(p.kv_heads * p.head_dim);
  // Keys and values read x (d_in wide) or the latent (latent_dim wide, after its own projection).
  const double latent = static_cast<double>(p.latent_dim), kv_in = p.latent_dim > 0 ? latent : d_in;
  double floats = packed(d_in, proj) + 2 * packed(kv_in, kv_width) + (c.qkv_bias ? proj + 2 * kv_width : 0);
  if (p.latent_dim > 0) floats += packed(d_in, latent) + (c.qkv_bias ? latent : 0);
  if (p.gate) floats += packed(d_in, proj) + (has_param(c, Role::Gate, Layout::Vector) ? proj : 0);
  if (p.out_proj) floats += packed(d_out, d_out) + (p.out_proj_bias ? d_out : 0);
  if (p.proj) floats += packed(d_out, d_out) + d_out;
  floats += 2.0 * static_cast<double>(p.extra_kv) * kv_width;                                             // bias_k, bias_v
  if (p.rope()) floats += 2.0 * static_cast<double>(c.context_length) * static_cast<double>(p.head_dim);  // the cos and sin buffers
  if (input_shape && !input_shape->empty()) {
    const StageSizes s = stage_sizes(p, *input_shape);
    const double hd = static_cast<double>(p.head_dim);
    // What the forward allocates: each stage's own buffers (the stage table's, for the stages the plan
    // has: the input's copy, q/k/v per head, the latent, the context per head, the merged heads,
    // out_proj and proj), the projection scratch, and one (T, Tk) slab with the packed keys and
    // values of one head.
    floats += sum_stage_floats(p, s, StageCount::ForwardBuffers) + s.b * s.t * proj + s.t * s.tk + packed(hd, s.tk) + packed(s.tk, hd);
    if (trace) {
      // What only the trace keeps (the rest is moved into it): the (b, H, T, Tk) stages made whole,
      // the (T, Tk) mask, and copies of the input and the output (the stage table's trace copies).
      floats += sum_stage_floats(p, s, StageCount::TraceCopies);
      // and each of its stages' summaries: at most one per (b, head) slice, 16 floats' worth each
      // (TensorSummary: 3 doubles and 5 int64), and its texts (title, formula, axes and the fields that
      // fill them: about 256 bytes a stage) and its Stage record (its shape, a view's source; the
      // trace's vector of them doubles as it grows: 128 bytes a stage). A cached forward (estimated
      // here too, on every key's shape) has its cache stages as well.
      const double stages = stage_count(p, true);
      floats += stages * s.b * heads * 16 + stages * 96;
    }
  }
  return floats * 4.0;
}

double plan_result_bytes(const ForwardPlan& p, const std::optional<Shape>& input_shape, bool trace) {
  if (!input_shape || input_shape->empty()) return 0.0;
  const StageSizes s = stage_sizes(p, *input_shape);
  const double heads = static_cast<double>(p.query_heads);
  double floats = stage_floats(p, StageId::Output, s);  // the output, (b, num_tokens, width)
  if (trace) {
    // Each stage the forward emits (stage_present), at its size, and each stage's JS objects: its
    // summaries (one per (b, head) slice at most, plus the whole: an object of six numbers, 256 bytes'
    // worth each) and its texts, shape and typed-array headers (1 KiB)
    floats += sum_stage_floats(p, s, StageCount::Tensor) + static_cast<double>(stage_count(p, false)) * ((s.b * heads + 1) * 64 + 256);
  }
  return floats * 4.0;
}

double plan_resident_bytes(const ForwardPlan& p, const std::optional<Shape>& input_shape) {
  double bytes = plan_heap_bytes(p, input_shape, true) + plan_result_bytes(p, input_shape, false);
  if (!input_shape || input_shape->empty()) return bytes;
  const StageSizes s = stage_sizes(p, *input_shape);
  const double heads = static_cast<double>(p.query_heads);
  const double stages = stage_count(p, true);
  // Less the stages it keeps as views (ForwardOptions::stage_views), which plan_heap_bytes counts as
  // copies: the masked scores, and the dropout stage when dropout never acts (p = 0; with p > 0 a
  // training run keeps its own).
  bytes -= 4.0 * sum_stage_floats(p, s, StageCount::ResidentViews);
  // The stages' facts copied out (Session::run_resident's TraceStage list, then its JS objects): the
  // summaries twice over (16 floats each, then a JS object of 256 bytes' worth) and the texts.
  double floats = stages * (s.b * heads + 1) * (16 + 64) + stages * 256;
  // and what one query copies out while it runs: at most a whole stage (trace_data, an export), once
  // in the heap and once into JS.
  floats += 2 * largest_stage_floats(p, s);
  return bytes + floats * 4.0;
}

double plan_bytes(const ForwardPlan& p, const std::optional<Shape>& input_shape, bool trace) {
  double heap = plan_heap_bytes(p, input_shape, trace);
  // An output that is certainly non-finite (the inverted mask's NaN row) makes an untraced forward run
  // again traced, to name the stage that turned non-finite (forward's non_finite_stage warning): its
  // peak is that traced run's, beside the output it keeps.
  if (!trace && p.mask == MaskKind::Inverted && input_shape) heap = std::max(heap, plan_heap_bytes(p, input_shape, true) + plan_result_bytes(p, input_shape, false));
  return heap + plan_result_bytes(p, input_shape, trace);
}

}  // namespace attention_lab
