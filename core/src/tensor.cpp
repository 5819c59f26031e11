#include "attention_lab/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

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
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ',';
  os << ')';
  return os.str();
}

Tensor::Tensor(Shape s) : shape(std::move(s)), data(static_cast<size_t>(numel_of(shape)), 0.0f) {}

Tensor::Tensor(Shape s, std::vector<float> values) : shape(std::move(s)), data(std::move(values)) {
  for (int64_t d : shape) {
    if (d < 0) throw AttentionError("tensor_shape", "", "shape " + shape_string(shape) + " has a negative size", "Every size must be 0 or more.");
  }
  if (numel_of(shape) != static_cast<int64_t>(data.size())) {
    throw AttentionError("tensor_size", "",
                         "shape " + shape_string(shape) + " holds " + std::to_string(numel_of(shape)) +
                             " values but data has " + std::to_string(data.size()),
                         "Give exactly as many values as the product of the shape (row-major).");
  }
}

int64_t Tensor::size(int axis) const {
  const int r = rank();
  const int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) throw AttentionError("tensor_axis", "", "axis " + std::to_string(axis) + " is out of range for shape " + shape_string(shape), "");
  return shape[static_cast<size_t>(a)];
}

TensorSummary summarize(const Tensor& t) {
  TensorSummary s;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0.0;
  int64_t finite = 0;
  for (const float v : t.data) {
    if (v == -std::numeric_limits<float>::infinity()) {
      ++s.neg_inf;
    } else if (std::isfinite(v)) {
      lo = std::min(lo, static_cast<double>(v));
      hi = std::max(hi, static_cast<double>(v));
      sum += v;  // in double: a stage has up to ~10^8 values
      ++finite;
      s.zeros += v == 0.0f;
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.min = finite ? lo : nan;
  s.max = finite ? hi : nan;
  s.mean = finite ? sum / static_cast<double>(finite) : nan;
  s.count = t.numel();
  return s;
}

}  // namespace attention_lab
