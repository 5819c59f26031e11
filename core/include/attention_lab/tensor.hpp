// Row-major float32 tensors and the library's one error type.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_lab/ops.hpp"

namespace attention_lab {

using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for the empty shape). Throws AttentionError "tensor_shape" for a
/// negative size and "too_large" when the product does not fit in 64 bits.
int64_t numel_of(const Shape& shape);
/// numel_of without throwing: false for a negative size or a product past int64.
bool checked_numel(const Shape& shape, int64_t& n);

/// "(2, 6, 3)": the shape as PyTorch prints a torch.Size, without the word.
std::string shape_string(const Shape& shape);

/// A dense row-major float32 tensor: `data.size() == numel_of(shape)`.
struct Tensor {
  Shape shape;
  std::vector<float> data;

  Tensor() = default;
  /// Zeros of the given shape.
  explicit Tensor(Shape s);
  /// Throws AttentionError("tensor_size") when data does not fit the shape.
  Tensor(Shape s, std::vector<float> values);

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  /// Size of axis `axis`; negative counts from the end (as in PyTorch).
  int64_t size(int axis) const;
  int rank() const { return static_cast<int>(shape.size()); }
  /// The value at `index`, one entry per axis (as x[0, 5, 1] in PyTorch; negative counts from the
  /// end). Throws AttentionError "tensor_axis" (slot "index") for an index with another rank than the
  /// tensor's or out of an axis' range.
  float at(const Shape& index) const;
};

/// A tensor of `shape` holding a copy of the numel_of(shape) floats at `values`, read row-major (the
/// last axis varies fastest): e.g. a (b, num_tokens, d_in) input from a caller's buffer. Throws
/// AttentionError "tensor_shape" for a negative size, "tensor_size" when `values` is null and the shape
/// is not empty.
Tensor tensor_from(const float* values, Shape shape);

/// The tensor as PyTorch prints it (`print(t)`), in fixed point with `decimals` digits after the
/// point: "tensor([[0.3190, 0.4858],\n        [0.2943, 0.3897]])", columns right-aligned to the widest
/// value, a blank line between the blocks of a rank-3 tensor. (PyTorch switches to scientific notation
/// when the values span more than 1000x; this never does.)
std::string tensor_string(const Tensor& t, int decimals = 4);

/// What a reader sees of a whole tensor at a glance: min, max and mean of its finite values that are
/// not masked (NaN when there are none), how many are -inf, how many hold the mask's fill (`masked`:
/// -inf, or torch.finfo(float32).min where the recipe fills that; masked scores) and how many are
/// exactly 0 (masked weights). Also how many are not finite (NaN, +inf or -inf) and, over a slice's
/// rows (the last axis), how many rows begin with NaN: a query whose every key is masked gets
/// softmax(all -inf), a row of NaN.
struct TensorSummary {
  double min = 0.0, max = 0.0, mean = 0.0;
  int64_t neg_inf = 0, zeros = 0, count = 0;
  int64_t non_finite = 0, nan_rows = 0;
  int64_t masked = 0;
};
TensorSummary summarize(const Tensor& t);
/// The summary of each slice over the last two axes (one per (b, head) of a (b, H, T, T) stage; one in
/// all for a rank-2 tensor), and in `whole` the summary of the tensor, in the same single pass.
std::vector<TensorSummary> summarize_slices(const Tensor& t, TensorSummary& whole);
/// summarize_slices from each slice's values already summarized (`values[i]`: slice i, as
/// ops::summarize_values or an ops::SummaryStream over it gives): the same summaries and `whole`.
/// t's data gives the NaN rows. Throws std::invalid_argument when `values` has not one per slice.
std::vector<TensorSummary> summaries_of_slices(const Tensor& t, const std::vector<ops::ValueSummary>& values, TensorSummary& whole);
/// The same for values held elsewhere (a trace's view stage): `value_at(i)` is the value at flat
/// row-major offset i of `shape` (read once per row, at each row's first column).
std::vector<TensorSummary> summaries_of_slices(const Shape& shape, const std::function<float(int64_t)>& value_at, const std::vector<ops::ValueSummary>& values,
                                               TensorSummary& whole);

/// A (rows, cols) row-major slice `x` downsampled to (height, width) cells, 1 <= height <= rows,
/// 1 <= width <= cols: cell (y, x) holds the largest value of source rows r0 = floor(y * rows /
/// height) to max(r0 + 1, floor((y + 1) * rows / height)) - 1 and of the columns found likewise (max
/// pooling: one strong weight in a cell stays visible, as the page's heatmaps have always drawn it).
/// NaN never wins a cell, and a cell whose values are all -inf or NaN is -inf, so masked cells stay
/// masked. height = rows and width = cols give the slice itself, NaN read as -inf.
/// Returns (height, width) row-major.
std::vector<float> max_pool(const float* x, int64_t rows, int64_t cols, int64_t height, int64_t width);

/// The window of `t` that starts at `offsets` and has `sizes` (one of each per axis; the caller has
/// checked that offsets[i] + sizes[i] <= t.shape[i]), row-major in the window's shape.
Tensor tensor_window(const Tensor& t, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes);
/// For each row of that window (each index of its leading axes), the sum in index order, in double,
/// of the whole row of `t` along the last axis (not only the window's columns): a table of the
/// attention weights shows 12 of 1,024 columns and the row sum of all 1,024.
std::vector<double> window_row_sums(const Tensor& t, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes);
/// A row of a tensor of some shape by its index r over every axis but the last (row r starts at flat
/// offset r * shape.back()): a pointer to its shape.back() values, valid until the next call.
using RowReader = std::function<const float*(int64_t)>;
/// tensor_window and window_row_sums of a tensor of `shape` whose rows `row_at` reads (a trace's view stage).
Tensor tensor_window(const Shape& shape, const RowReader& row_at, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes);
std::vector<double> window_row_sums(const Shape& shape, const RowReader& row_at, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes);

/// Where the first NaN or infinity of `values` (n floats, row-major in `shape`) is, as "[1, 2]" and
/// its value ("nan", "inf", "-inf"); "" when every value is finite.
std::string first_non_finite(const float* values, size_t n, const Shape& shape);

/// A tensor with its PyTorch name (`W_query.weight`, `heads.0.W_key.bias`, ...).
struct NamedTensor {
  std::string name;
  Tensor tensor;
  const Shape& shape() const { return tensor.shape; }
  const std::vector<float>& data() const { return tensor.data; }
};

/// The most axes a tensor crossing the library boundary may have (the trace's have at most 4).
inline constexpr unsigned kMaxTensorAxes = 8;

/// Runtime misuse of the library (a bad tensor, an unknown parameter name, a config with errors).
/// `code` is stable and machine-readable; `slot` names the constructor slot or argument involved
/// ("" when none); `hint` says how to fix it.
class AttentionError : public std::runtime_error {
 public:
  AttentionError(std::string code, std::string slot, const std::string& message, std::string hint)
      : std::runtime_error(message), code_(std::move(code)), slot_(std::move(slot)), hint_(std::move(hint)) {}
  const std::string& code() const { return code_; }
  const std::string& slot() const { return slot_; }
  const std::string& hint() const { return hint_; }

 private:
  std::string code_;
  std::string slot_;
  std::string hint_;
};

}  // namespace attention_lab
