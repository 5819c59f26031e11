#include "attention_lab/tensor.hpp"

#include <cstdio>
#include <cstring>

#include "attention_lab/ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attention_lab {

bool checked_numel(const Shape& shape, int64_t& n) {
  n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
  }
  return true;
}

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  if (checked_numel(shape, n)) return n;
  for (int64_t d : shape) {
    if (d < 0) throw AttentionError("tensor_shape", "", "shape " + shape_string(shape) + " has a negative size", "Every size must be 0 or more.");
  }
  throw AttentionError("too_large", "", "shape " + shape_string(shape) + " has more elements than fit in 64 bits", "Use smaller sizes.");
}

std::string shape_string(const Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) out += ',';
  return out + ")";
}

Tensor::Tensor(Shape s) : shape(std::move(s)), data(static_cast<size_t>(numel_of(shape)), 0.0f) {}

Tensor::Tensor(Shape s, std::vector<float> values) : shape(std::move(s)), data(std::move(values)) {
  for (int64_t d : shape) {
    if (d < 0) throw AttentionError("tensor_shape", "", "shape " + shape_string(shape) + " has a negative size", "Every size must be 0 or more.");
  }
  if (numel_of(shape) != static_cast<int64_t>(data.size())) {
    throw AttentionError("tensor_size", "", "shape " + shape_string(shape) + " holds " + std::to_string(numel_of(shape)) + " values but data has " + std::to_string(data.size()),
                         "Give exactly as many values as the product of the shape (row-major).");
  }
}

int64_t Tensor::size(int axis) const {
  const int r = rank();
  const int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) throw AttentionError("tensor_axis", "", "axis " + std::to_string(axis) + " is out of range for shape " + shape_string(shape), "");
  return shape[static_cast<size_t>(a)];
}

float Tensor::at(const Shape& index) const {
  if (index.size() != shape.size())
    throw AttentionError("tensor_axis", "index", "index " + shape_string(index) + " has " + std::to_string(index.size()) + " entries for a tensor of shape " + shape_string(shape),
                         "Give one index per axis.");
  size_t flat = 0;
  for (size_t a = 0; a < shape.size(); ++a) {
    const int64_t i = index[a] < 0 ? index[a] + shape[a] : index[a];
    if (i < 0 || i >= shape[a])
      throw AttentionError("tensor_axis", "index", "index " + std::to_string(index[a]) + " is out of range for axis " + std::to_string(a) + " of shape " + shape_string(shape),
                           "Axis " + std::to_string(a) + " takes 0 to " + std::to_string(shape[a] - 1) + " (or negative from the end).");
    flat = flat * static_cast<size_t>(shape[a]) + static_cast<size_t>(i);
  }
  return data[flat];
}

Tensor tensor_from(const float* values, Shape shape) {
  for (int64_t d : shape) {
    if (d < 0) throw AttentionError("tensor_shape", "", "shape " + shape_string(shape) + " has a negative size", "Every size must be 0 or more.");
  }
  const int64_t n = numel_of(shape);
  if (values == nullptr && n > 0)
    throw AttentionError("tensor_size", "", "shape " + shape_string(shape) + " holds " + std::to_string(n) + " values but the data pointer is null",
                         "Pass the buffer's first float.");
  return Tensor(std::move(shape), std::vector<float>(values, values + n));
}

namespace {

/// The entries of axis `axis` from flat offset `at` (the block's first value), as PyTorch nests them.
void append_block(std::string& out, const Tensor& t, size_t axis, size_t at, size_t stride, const std::vector<std::string>& cells, size_t width) {
  out += '[';
  const size_t n = static_cast<size_t>(t.shape[axis]);
  const size_t inner = axis + 1 < t.shape.size() ? stride / std::max<size_t>(n, 1) : 1;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) {
      if (axis + 1 == t.shape.size()) {
        out += ", ";
      } else {
        out += ',';
        out.append(t.shape.size() - 1 - axis, '\n');
        out.append(7 + axis + 1, ' ');  // under the first value: "tensor(" and one '[' per outer axis
      }
    }
    if (axis + 1 == t.shape.size()) {
      out.append(width - cells[at + i].size(), ' ');
      out += cells[at + i];
    } else {
      append_block(out, t, axis + 1, at + i * inner, inner, cells, width);
    }
  }
  out += ']';
}

}  // namespace

std::string tensor_string(const Tensor& t, int decimals) {
  std::vector<std::string> cells;
  size_t width = 0;
  for (float v : t.data) {
    char buf[64];
    if (std::isnan(v)) {
      std::snprintf(buf, sizeof buf, "nan");
    } else if (std::isinf(v)) {
      std::snprintf(buf, sizeof buf, v > 0 ? "inf" : "-inf");
    } else {
      std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(v));
    }
    cells.emplace_back(buf);
    width = std::max(width, cells.back().size());
  }
  if (t.shape.empty()) return "tensor(" + (cells.empty() ? std::string("0") : cells.front()) + ")";
  std::string out = "tensor(";
  append_block(out, t, 0, 0, t.data.size(), cells, width);
  return out + ")";
}

namespace {
TensorSummary summary_of(const ops::ValueSummary& v, int64_t count, int64_t nan_rows = 0) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  TensorSummary s;
  s.non_finite = count - v.finite;
  s.nan_rows = nan_rows;
  s.min = v.counted ? v.min : nan;
  s.max = v.counted ? v.max : nan;
  s.mean = v.counted ? v.sum / static_cast<double>(v.counted) : nan;
  s.neg_inf = v.neg_inf;
  s.masked = v.masked;
  s.zeros = v.zeros;
  s.count = count;
  return s;
}
}  // namespace

TensorSummary summarize(const Tensor& t) { return summary_of(ops::summarize_values(t.data.data(), t.numel()), t.numel()); }

namespace {
/// Values in one slice over the last two axes (all of a tensor below rank 2).
int64_t slice_numel(const Tensor& t) { return t.rank() >= 2 ? t.shape[t.shape.size() - 1] * t.shape[t.shape.size() - 2] : t.numel(); }
}  // namespace

std::vector<TensorSummary> summarize_slices(const Tensor& t, TensorSummary& whole) {
  const int64_t slice = slice_numel(t);
  std::vector<ops::ValueSummary> values;
  for (int64_t offset = 0; slice > 0 && offset < t.numel(); offset += slice) values.push_back(ops::summarize_values(t.data.data() + offset, slice));
  return summaries_of_slices(t, values, whole);
}

std::vector<TensorSummary> summaries_of_slices(const Tensor& t, const std::vector<ops::ValueSummary>& values, TensorSummary& whole) {
  return summaries_of_slices(
      t.shape, [&](int64_t i) { return t.data[static_cast<size_t>(i)]; }, values, whole);
}

std::vector<TensorSummary> summaries_of_slices(const Shape& shape, const std::function<float(int64_t)>& value_at, const std::vector<ops::ValueSummary>& values,
                                               TensorSummary& whole) {
  const int64_t numel = numel_of(shape);
  const int64_t slice = shape.size() >= 2 ? shape[shape.size() - 1] * shape[shape.size() - 2] : numel;
  const size_t slices = slice > 0 ? static_cast<size_t>((numel + slice - 1) / slice) : 0;
  if (values.size() != slices) throw std::invalid_argument("summaries_of_slices: " + std::to_string(values.size()) + " summaries for " + std::to_string(slices) + " slices");
  std::vector<TensorSummary> out;
  ops::ValueSummary all;
  all.min = std::numeric_limits<float>::infinity();
  all.max = -all.min;
  // Rows of a slice that begin with NaN: one strided read per row (the first column), not a scan.
  const int64_t cols = !shape.empty() ? shape.back() : 1;
  int64_t nan_rows_all = 0;
  for (size_t k = 0; k < slices; ++k) {
    const ops::ValueSummary& v = values[k];
    const int64_t offset = static_cast<int64_t>(k) * slice;
    int64_t nan_rows = 0;
    if (v.finite < slice && cols > 0)
      for (int64_t r = offset; r < offset + slice; r += cols) nan_rows += std::isnan(value_at(r)) ? 1 : 0;
    nan_rows_all += nan_rows;
    out.push_back(summary_of(v, slice, nan_rows));
    all.min = std::min(all.min, v.min);
    all.max = std::max(all.max, v.max);
    all.sum += v.sum;
    all.finite += v.finite;
    all.neg_inf += v.neg_inf;
    all.zeros += v.zeros;
    all.masked += v.masked;
    all.counted += v.counted;
  }
  whole = summary_of(all, numel, nan_rows_all);
  return out;
}

std::vector<float> max_pool(const float* x, int64_t rows, int64_t cols, int64_t height, int64_t width) {
  std::vector<float> out(static_cast<size_t>(height * width));
  std::vector<int64_t> c0(static_cast<size_t>(width)), c1(static_cast<size_t>(width));
  for (int64_t c = 0; c < width; ++c) {
    c0[static_cast<size_t>(c)] = c * cols / width;
    c1[static_cast<size_t>(c)] = std::max(c0[static_cast<size_t>(c)] + 1, (c + 1) * cols / width);
  }
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // Each output row in two passes: the column-wise max over its source rows (a loop the compiler
  // vectorizes), then the max of each cell's columns. Max is max whatever the order, but for the two
  // zeros: the row-major rule keeps the first of -0 and +0 it meets, so an output row whose source rows
  // hold a -0 anywhere goes cell by cell in row-major order instead (the same bits as ever).
  std::vector<float> acc(static_cast<size_t>(cols));
  for (int64_t y = 0; y < height; ++y) {
    const int64_t r0 = y * rows / height;
    const int64_t r1 = std::max(r0 + 1, (y + 1) * rows / height);
    std::fill(acc.begin(), acc.end(), kNegInf);
    uint32_t negative_zero = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = x + r * cols;
      for (int64_t k = 0; k < cols; ++k) {
        const float v = row[k];
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        negative_zero |= static_cast<uint32_t>(bits == 0x80000000u);
        acc[static_cast<size_t>(k)] = v > acc[static_cast<size_t>(k)] ? v : acc[static_cast<size_t>(k)];  // NaN > best is false: NaN never wins
      }
    }
    float* o = out.data() + y * width;
    for (int64_t c = 0; c < width; ++c) {
      float best = kNegInf;
      if (negative_zero == 0) {
        for (int64_t k = c0[static_cast<size_t>(c)]; k < c1[static_cast<size_t>(c)]; ++k)
          if (acc[static_cast<size_t>(k)] > best) best = acc[static_cast<size_t>(k)];
      } else {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t k = c0[static_cast<size_t>(c)]; k < c1[static_cast<size_t>(c)]; ++k)
            if (x[r * cols + k] > best) best = x[r * cols + k];
      }
      o[c] = best;
    }
  }
  return out;
}

namespace {
/// Calls f(offset of the row's first window value in t, offset of the whole row in t) for each row of
/// the window, in row-major order of its leading axes.
template <typename F>
void for_window_rows(const Shape& shape, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes, F f) {
  const size_t nd = shape.size();
  if (nd == 0) {
    f(0, 0);
    return;
  }
  std::vector<int64_t> strides(nd, 1);
  for (size_t i = nd - 1; i-- > 0;) strides[i] = strides[i + 1] * shape[i + 1];
  for (size_t i = 0; i + 1 < nd; ++i)
    if (sizes[i] == 0) return;
  std::vector<int64_t> at(offsets.begin(), offsets.end());
  while (true) {
    int64_t row = 0;
    for (size_t i = 0; i + 1 < nd; ++i) row += at[i] * strides[i];
    f(row + offsets[nd - 1], row);
    size_t i = nd - 1;
    while (i-- > 0) {
      if (++at[i] < offsets[i] + sizes[i]) break;
      at[i] = offsets[i];
    }
    if (i == static_cast<size_t>(-1)) return;
  }
}
}  // namespace

Tensor tensor_window(const Tensor& t, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes) {
  const int64_t cols = t.shape.empty() ? 1 : t.shape.back();
  return tensor_window(
      t.shape, [&](int64_t r) { return t.data.data() + r * cols; }, offsets, sizes);
}

std::vector<double> window_row_sums(const Tensor& t, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes) {
  const int64_t cols = t.shape.empty() ? 1 : t.shape.back();
  return window_row_sums(
      t.shape, [&](int64_t r) { return t.data.data() + r * cols; }, offsets, sizes);
}

Tensor tensor_window(const Shape& shape, const RowReader& row_at, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes) {
  Shape out(sizes.begin(), sizes.end());
  std::vector<float> data;
  data.reserve(static_cast<size_t>(numel_of(out)));
  const int64_t cols = shape.empty() ? 1 : shape.back();
  const int64_t n = sizes.empty() ? 1 : sizes.back(), first = offsets.empty() ? 0 : offsets.back();
  for_window_rows(shape, offsets, sizes, [&](int64_t, int64_t row) {
    const float* r = row_at(cols > 0 ? row / cols : 0) + first;
    data.insert(data.end(), r, r + n);
  });
  return Tensor(std::move(out), std::move(data));
}

std::vector<double> window_row_sums(const Shape& shape, const RowReader& row_at, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes) {
  std::vector<double> out;
  const int64_t cols = shape.empty() ? 1 : shape.back();
  for_window_rows(shape, offsets, sizes, [&](int64_t, int64_t row) {
    const float* r = row_at(cols > 0 ? row / cols : 0);
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += r[c];
    out.push_back(sum);
  });
  return out;
}

std::string first_non_finite(const float* values, size_t n, const Shape& shape) {
  // Blocks of all-finite values are passed with one vectorizable test on the exponent bits (a whole
  // GPT-2 file is checked this way, 124M values); only a block with NaN or inf is searched one by one.
  constexpr size_t kBlock = 4096;
  size_t i = 0;
  for (; i < n; i += kBlock) {
    const size_t end = std::min(n, i + kBlock);
    uint32_t bad = 0;
    for (size_t j = i; j < end; ++j) {
      uint32_t u;
      std::memcpy(&u, values + j, 4);
      bad |= static_cast<uint32_t>((u & 0x7f800000u) == 0x7f800000u);
    }
    if (bad) break;
  }
  while (i < n && std::isfinite(values[i])) ++i;
  if (i >= n) return "";
  std::vector<int64_t> index(shape.size(), 0);
  size_t rest = i;
  for (size_t a = shape.size(); a-- > 0;) {
    const size_t size = static_cast<size_t>(std::max<int64_t>(shape[a], 1));
    index[a] = static_cast<int64_t>(rest % size);
    rest /= size;
  }
  std::string where = "[";
  for (size_t a = 0; a < index.size(); ++a) where += (a ? ", " : "") + std::to_string(index[a]);
  return where + "] is " + (std::isnan(values[i]) ? "nan" : values[i] > 0 ? "inf" : "-inf");
}

}  // namespace attention_lab
