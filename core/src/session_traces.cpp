// Session's resident traces: a traced forward's stages kept in WASM memory (Objects::keep_trace), and
// what the caller draws asked of them (a heatmap of a slice, a window of a table, a copy of a stage).
#include <algorithm>
#include <cmath>

#include "attention_lab/text.hpp"
#include "session_detail.hpp"

namespace attention_lab {

using namespace session_detail;

namespace {
const Stage& stage_of(const std::vector<Stage>& stages, const std::string& id) {
  for (const Stage& s : stages)
    if (s.id == id) return s;
  std::string ids;
  for (const Stage& s : stages) ids += (ids.empty() ? "" : ", ") + s.id;
  throw AttentionError("trace_stage", "stage", "this trace has no stage '" + id + "'", "Its stages are " + ids + ".");
}

/// index as a whole number in [0, size) of axis `axis` of `s`, else trace_range naming both.
int64_t index_in(const Stage& s, size_t axis, double index, const char* what) {
  const double size = static_cast<double>(s.shape()[axis]);
  if (!(index == std::floor(index)))  // NaN, 1.5: not an index at all
    whole_number(index, what, 0, std::max(size - 1, 0.0), "trace_range", "Give an index of axis " + std::to_string(axis) + " (" + s.axes[axis] + ") of " + s.id + ".");
  if (!(index >= 0 && index < size))
    throw AttentionError("trace_range", what,
                         std::string(what) + " " + format_number(index) + " is outside axis " + std::to_string(axis) + " (" + s.axes[axis] + ") of " + s.id + ", which has " +
                             format_g(size, 12) + (size == 1 ? " entry" : " entries"),
                         size > 0 ? "Use a whole number from 0 to " + format_g(size - 1, 12) + "." : "That axis is empty.");
  return static_cast<int64_t>(index);
}
}  // namespace

TraceHeatmap Session::trace_heatmap(uint32_t trace, const std::string& stage, const std::vector<double>& leading, double height, double width) const {
  const std::vector<Stage>& stages = objects_->trace(trace);
  const Stage& s = stage_of(stages, stage);
  const Shape& shape = s.shape();
  const size_t nd = shape.size();
  const size_t lead = nd >= 2 ? nd - 2 : 0;
  if (leading.size() != lead)
    throw AttentionError("trace_range", "leading", s.id + " has " + std::to_string(lead) + " axes before its last two, got " + std::to_string(leading.size()) + " indices",
                         lead == 0 ? "Give no batch or head index for this stage." : "Give one index per leading axis (batch, then head).");
  for (const auto& [side, name] : {std::pair{height, "height"}, std::pair{width, "width"}})
    whole_number(side, name, 1, 4096, "trace_range", std::string("The heatmap's ") + name + " in cells (default 512); a slice smaller than that is drawn at its own size.");
  int64_t offset = 0;
  for (size_t i = 0; i < lead; ++i) offset = offset * shape[i] + index_in(s, i, leading[i], i == 0 ? "batch" : "head");
  const int64_t rows = nd >= 2 ? shape[nd - 2] : 1, cols = nd >= 1 ? shape[nd - 1] : 1;
  TraceHeatmap h;
  h.rows = static_cast<double>(rows);
  h.cols = static_cast<double>(cols);
  const int64_t hh = std::min(rows, static_cast<int64_t>(height)), ww = std::min(cols, static_cast<int64_t>(width));
  h.height = static_cast<double>(hh);
  h.width = static_cast<double>(ww);
  std::vector<float> scratch;
  if (rows > 0 && cols > 0) h.values = max_pool(stage_rows(stages, s, offset * rows, rows, scratch), rows, cols, hh, ww);
  return h;
}

TraceWindow Session::trace_window(uint32_t trace, const std::string& stage, const std::vector<double>& offsets, const std::vector<double>& sizes) const {
  const std::vector<Stage>& stages = objects_->trace(trace);
  const Stage& s = stage_of(stages, stage);
  const Shape& shape = s.shape();
  const size_t nd = shape.size();
  if (offsets.size() != nd || sizes.size() != nd)
    throw AttentionError("trace_range", "offsets",
                         s.id + " has " + std::to_string(nd) + " axes, got " + std::to_string(offsets.size()) + " offsets and " + std::to_string(sizes.size()) + " sizes",
                         "Give one offset and one size per axis.");
  std::vector<int64_t> at(nd), n(nd);
  for (size_t i = 0; i < nd; ++i) {
    const double size = static_cast<double>(shape[i]);
    for (const auto& [v, name] : {std::pair{offsets[i], "offsets"}, std::pair{sizes[i], "sizes"}})
      if (!(v == std::floor(v)))  // NaN, 1.5: not a position at all
        throw AttentionError("trace_range", name, std::string(name) + "[" + std::to_string(i) + "] must be a whole number, got " + format_number(v),
                             "Give one whole number per axis of " + s.id + ", e.g. offsets [0, 0, 0, 0] and sizes [1, 1, 6, 6].");
    if (!(offsets[i] >= 0 && offsets[i] <= size && offsets[i] == std::floor(offsets[i])) || !(sizes[i] >= 0 && sizes[i] == std::floor(sizes[i]) && offsets[i] + sizes[i] <= size))
      throw AttentionError("trace_range", "offsets",
                           "offset " + format_number(offsets[i]) + " and size " + format_number(sizes[i]) + " on axis " + std::to_string(i) + " (" + s.axes[i] + ") of " + s.id +
                               " reach past its " + format_g(size, 12) + " entries",
                           "Keep offset + size within the axis: at most " + format_g(size, 12) + ".");
    at[i] = static_cast<int64_t>(offsets[i]);
    n[i] = static_cast<int64_t>(sizes[i]);
  }
  std::vector<float> scratch;
  const RowReader row = [&](int64_t r) { return stage_rows(stages, s, r, 1, scratch); };
  return {tensor_window(shape, row, at, n), window_row_sums(shape, row, at, n)};
}

Tensor Session::trace_data(uint32_t trace, const std::string& stage) const {
  const std::vector<Stage>& stages = objects_->trace(trace);
  return stage_tensor(stages, stage_of(stages, stage));
}

double Session::trace_bytes_in_use() const {
  double bytes = 0;
  for (const auto& [h, stages] : objects_->traces)
    for (const Stage& s : stages) bytes += 4.0 * static_cast<double>(s.tensor.data.size());
  return bytes;
}

}  // namespace attention_lab
