// How the tests compare two tensors of values: the largest absolute difference, strict about shapes
// and about the values PyTorch makes non-finite.
#pragma once

#include <algorithm>
#include <cmath>

#include "attention_lab/tensor.hpp"

/// Max |a - b| where -inf must meet -inf and NaN must meet NaN exactly (PyTorch's NaN rows, as in the
/// inverted-mask class); a NaN on one side only counts as a mismatch, and so do other shapes (returns inf).
inline double max_abs_diff(const attention_lab::Tensor& a, const attention_lab::Tensor& b) {
  if (a.shape != b.shape) return INFINITY;
  double m = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    if (std::isnan(a.data[i]) || std::isnan(b.data[i])) {
      if (std::isnan(a.data[i]) != std::isnan(b.data[i])) return INFINITY;
      continue;
    }
    if (std::isinf(a.data[i]) || std::isinf(b.data[i])) {
      if (a.data[i] != b.data[i]) return INFINITY;
      continue;
    }
    const double d = std::fabs(static_cast<double>(a.data[i]) - b.data[i]);
    if (!(d == d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}
