// The trace's side of the forward: the recorder that copies and summarizes the passes' stages, and
// the views (StageView) a resident trace reads instead of copies.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "attention_lab/stage_table.hpp"
#include "attention_passes.hpp"

namespace attention_lab {

namespace {
/// The stage `id` that `s` reads: the last one before `s` in `trace` (before its end when `s` is not in it).
const Stage& source_of(const std::vector<Stage>& trace, const Stage& s, const std::string& id) {
  const bool inside = !trace.empty() && &s >= trace.data() && &s < trace.data() + trace.size();
  for (size_t k = inside ? static_cast<size_t>(&s - trace.data()) : trace.size(); k-- > 0;)
    if (trace[k].id == id && trace[k].view == StageView::Own) return trace[k];
  throw std::invalid_argument("stage_rows: " + s.id + " reads stage '" + id + "', which this trace does not hold");
}
/// A MaskedFill view's value: `fill` where the mask holds 1 (masked_fill(mask.bool(), -inf)), else the source's.
inline float masked_fill(float mask, float value, float fill) { return mask == 1.0f ? fill : value; }

/// How a view's values are read, its source (and for MaskedFill the trace's mask) found once: the one
/// rule of a view for a value (its summaries at emit) and for rows (stage_rows). Row r of the view (an
/// index over every axis but the last) is row r of its source, and for MaskedFill takes mask row
/// r % rows: the mask is (num_tokens, keys), the same for every (b, head) slice.
struct ViewReader {
  const float* source;
  const float* mask;  // (rows, cols), or null (Same)
  int64_t rows, cols;
  float fill;  // -inf (MaskedFill), torch.finfo(float32).min (MaskedFillMin)

  ViewReader(const std::vector<Stage>& trace, const Stage& s) {
    const Shape& shape = s.shape();
    cols = shape.empty() ? 1 : shape.back();
    rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
    source = source_of(trace, s, s.source).tensor.data.data();
    mask = nullptr;
    fill = s.view == StageView::MaskedFillMin ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity();
    if (s.view != StageView::MaskedFill && s.view != StageView::MaskedFillMin) return;
    const Stage& m = source_of(trace, s, "mask");
    if (m.shape() != Shape{rows, cols}) throw std::invalid_argument("stage_rows: the mask's shape does not match " + s.id + "'s last two axes");
    mask = m.tensor.data.data();
  }
  /// The mask's row that row r of the view takes (MaskedFill; rows > 0).
  const float* mask_row(int64_t r) const { return mask + (r % rows) * cols; }
  /// The value at flat index i.
  float at(int64_t i) const {
    const float v = source[i];
    return mask == nullptr || cols == 0 || rows == 0 ? v : masked_fill(mask_row(i / cols)[i % cols], v, fill);
  }
  /// Rows [row, row + count): a pointer into the source (Same), or made in `scratch` (MaskedFill).
  const float* read_rows(int64_t row, int64_t count, std::vector<float>& scratch) const {
    const float* src = source + row * cols;
    if (mask == nullptr) return src;
    scratch.resize(static_cast<size_t>(count * cols));
    for (int64_t r = 0; rows > 0 && r < count; ++r) {
      const float* m = mask_row(row + r);
      float* out = scratch.data() + r * cols;
      for (int64_t c = 0; c < cols; ++c) out[c] = masked_fill(m[c], src[r * cols + c], fill);
    }
    return scratch.data();
  }
};

/// Which of the four (b, H, T, keys) stages: scores, masked scores, weights, dropped weights.
size_t slab_stage(StageId id) {
  switch (id) {
    case StageId::AttnScores:
      return 0;
    case StageId::AttnScoresMasked:
      return 1;
    case StageId::AttnWeights:
      return 2;
    default:
      return 3;
  }
}

}  // namespace

TraceRecorder::TraceRecorder(const PassContext& ctx) : ctx_(ctx) {
  const ForwardPlan& p = ctx.plan();
  // Slabs arrive in storage order except in the wrapper with b > 1, so each is appended to reserved
  // memory (no 4 x zero-fill of the largest tensors of the run) and only an out-of-order slab makes
  // its stage fill in zeros first. With stage_views the masked scores, and the dropout stage when no
  // dropout acts, are views (no copy).
  stage_shape_ = ctx.head_shape(ctx.chunk.T, ctx.chunk.Tk);
  stage_size_ = static_cast<size_t>(numel_of(stage_shape_));
  masked_view_ = ctx.options.stage_views;
  dropped_view_ = ctx.options.stage_views && !ctx.apply_dropout;
  for (Tensor& t : kept_) t.shape = stage_shape_;
  kept_[0].data.reserve(stage_size_);
  kept_[2].data.reserve(stage_size_);
  if (p.mask != MaskKind::None && !masked_view_) kept_[1].data.reserve(stage_size_);
  if (p.dropout_stage && !dropped_view_) kept_[3].data.reserve(stage_size_);
  for (auto& v : slab_values_) v.resize(static_cast<size_t>(ctx.chunk.b * p.query_heads));
  streams_[1] = ops::SummaryStream(p.mask_fill);  // the masked scores count the plan's fill as masked
}

void TraceRecorder::keep(Tensor& stage, size_t offset, const float* values, int64_t n) {
  std::vector<float>& d = stage.data;
  if (d.size() == offset) {
    d.insert(d.end(), values, values + n);
  } else {
    if (d.size() < stage_size_) d.resize(stage_size_);
    std::copy(values, values + n, d.begin() + static_cast<std::ptrdiff_t>(offset));
  }
}

void TraceRecorder::rows(StageId id, size_t /*slab*/, size_t offset, const float* values, int64_t n) {
  const size_t k = slab_stage(id);
  const bool view = (k == 1 && masked_view_) || (k == 3 && dropped_view_);
  if (!view) keep(kept_[k], offset, values, n);
  streams_[k].add(values, n);
  // no dropout acted: the dropout stage is the weights themselves
  if (k == 2 && ctx_.plan().dropout_stage && !ctx_.apply_dropout && !dropped_view_) keep(kept_[3], offset, values, n);
}

void TraceRecorder::slab_done(size_t slab) {
  // Each slab's summaries, made while its rows were still in cache, not read back from the whole stages.
  for (int k = 0; k < 3; ++k) slab_values_[k][slab] = streams_[k].finish();
  slab_values_[3][slab] = ctx_.apply_dropout ? streams_[3].finish() : slab_values_[2][slab];
  for (size_t k = 0; k < 4; ++k) streams_[k] = ops::SummaryStream(k == 1 ? ctx_.plan().mask_fill : -std::numeric_limits<float>::infinity());
}

Stage TraceRecorder::named_stage(StageId id) const {
  // A stage's id and its text from the stage table (title, formula, axes), values still to come.
  const PassContext& c = ctx_;
  StageText text = stage_text(c.plan(), id, c.chunk.T, c.options.training, c.cache != nullptr ? c.chunk.past : -1, c.chunk.position);
  Stage st;
  st.id = stage_id_name(id);
  st.display = stage_display(st.id);
  st.title = std::move(text.title);
  st.formula = std::move(text.formula);
  st.axes = std::move(text.axes);
  return st;
}

void TraceRecorder::emit(StageId id, Tensor t, const std::vector<ops::ValueSummary>* values) {
  if (!stage_present(ctx_.plan(), id, ctx_.cache != nullptr)) return;
  Stage st = named_stage(id);
  st.slice_summaries = values != nullptr ? summaries_of_slices(t, *values, st.summary) : summarize_slices(t, st.summary);
  st.tensor = std::move(t);
  ctx_.options.trace->push_back(std::move(st));
}

void TraceRecorder::emit_view(StageId id, StageView view, StageId source, const std::vector<ops::ValueSummary>& values) {
  // A view (stage_views): no values of its own; its summaries from the slabs' made during the run.
  if (!stage_present(ctx_.plan(), id, ctx_.cache != nullptr)) return;
  Stage st = named_stage(id);
  st.view_shape = stage_shape_;
  st.view = view;
  st.source = stage_id_name(source);
  // The NaN rows read each row's first value (of the masked scores: every row, as each has -inf):
  // one value each, its source and the mask found once.
  const ViewReader reader(*ctx_.options.trace, st);
  const auto value_at = [&](int64_t i) { return reader.at(i); };
  st.slice_summaries = summaries_of_slices(stage_shape_, value_at, values, st.summary);
  ctx_.options.trace->push_back(std::move(st));
}

void TraceRecorder::finish(Activations& a, const Tensor& x, const Tensor& output) {
  const ForwardPlan& p = ctx_.plan();
  const Chunk& c = ctx_.chunk;
  if (p.mask != MaskKind::None) {
    a.mask = Tensor({c.T, c.Tk});  // (num_tokens, keys), 1 where a key is masked: the rows of the chunk's positions
    for (int64_t i = 0; i < c.T; ++i) {
      float* row = a.mask.data.data() + i * c.Tk;
      mask_row(p, c, row, i);  // the plan's mask_fill where masked, then 1
      std::replace(row, row + c.Tk, p.mask_fill, 1.0f);
    }
  }
  a.input = x;  // the trace's own copies
  a.output = output;
  a.attn_scores = std::move(kept_[0]);
  a.attn_scores_masked = std::move(kept_[1]);
  a.attn_weights = std::move(kept_[2]);
  a.attn_weights_dropout = std::move(kept_[3]);
  // One walk over the stage ids in trace order, each stage's tensor moved from the record.
  for (size_t i = 0; i <= static_cast<size_t>(StageId::Output); ++i) {
    const StageId id = static_cast<StageId>(i);
    const bool slab = id == StageId::AttnScores || id == StageId::AttnScoresMasked || id == StageId::AttnWeights || id == StageId::AttnWeightsDropout;
    if (id == StageId::AttnScoresMasked && masked_view_)
      emit_view(id, std::isinf(p.mask_fill) ? StageView::MaskedFill : StageView::MaskedFillMin, StageId::AttnScores, slab_values_[1]);
    else if (id == StageId::AttnWeightsDropout && dropped_view_)
      emit_view(id, StageView::Same, StageId::AttnWeights, slab_values_[3]);
    else
      emit(id, std::move(a[id]), slab ? &slab_values_[slab_stage(id)] : nullptr);
  }
}

const float* stage_rows(const std::vector<Stage>& trace, const Stage& s, int64_t row, int64_t count, std::vector<float>& scratch) {
  if (s.view == StageView::Own) {
    const Shape& shape = s.shape();
    return s.tensor.data.data() + row * (shape.empty() ? 1 : shape.back());
  }
  return ViewReader(trace, s).read_rows(row, count, scratch);
}

Tensor stage_tensor(const std::vector<Stage>& trace, const Stage& s) {
  if (s.view == StageView::Own) return s.tensor;
  const Shape& shape = s.shape();
  const int64_t cols = shape.empty() ? 1 : shape.back();
  const int64_t rows = cols > 0 ? numel_of(shape) / cols : 0;
  std::vector<float> scratch;
  const float* values = stage_rows(trace, s, 0, rows, scratch);
  if (s.view == StageView::MaskedFill || s.view == StageView::MaskedFillMin) return Tensor(shape, std::move(scratch));
  return Tensor(shape, std::vector<float>(values, values + rows * cols));
}

}  // namespace attention_lab
