#include "attention_lab/ops.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

namespace attention_lab::ops {

namespace {
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix>;
using Map = Eigen::Map<RowMatrix>;
using ConstVector = Eigen::Map<const Eigen::RowVectorXf>;
}  // namespace

void linear(const float* x, int64_t rows, int64_t in, const float* weight, const float* bias, int64_t out, float* y) {
#if ATTENTION_LAB_SIMD_KERNEL
  gemm(x, rows, in, pack_b(weight, in, out, true), bias, y);  // (rows, out)
#else
  ConstMap X(x, rows, in);        // (rows, in)
  ConstMap W(weight, out, in);    // (out, in)
  Map Y(y, rows, out);            // (rows, out)
  Y.noalias() = X * W.transpose();
  if (bias != nullptr) Y.rowwise() += ConstVector(bias, out);
#endif
}

void matmul(const float* a, const float* b, int64_t m, int64_t k, int64_t n, bool transpose_b, float* out) {
#if ATTENTION_LAB_SIMD_KERNEL
  gemm(a, m, k, pack_b(b, k, n, transpose_b), nullptr, out);  // (m, n)
#else
  ConstMap A(a, m, k);  // (m, k)
  Map C(out, m, n);     // (m, n)
  if (transpose_b) {
    C.noalias() = A * ConstMap(b, n, k).transpose();
  } else {
    C.noalias() = A * ConstMap(b, k, n);
  }
#endif
}

void softmax_rows(float* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    const float max = *std::max_element(row, row + cols);
    float sum = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = std::exp(row[c] - max);  // exp(-inf) is exactly 0: masked keys get weight 0
      sum += row[c];
    }
    const float inv = 1.0f / sum;
    for (int64_t c = 0; c < cols; ++c) row[c] *= inv;
  }
}

void layer_norm_rows(float* x, int64_t rows, int64_t cols, const float* weight, const float* bias, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    double mean = 0.0, var = 0.0;  // accumulate in double: rows are up to 1600 wide
    for (int64_t c = 0; c < cols; ++c) mean += row[c];
    mean /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= static_cast<double>(cols);
    const float rstd = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
    const float m = static_cast<float>(mean);
    for (int64_t c = 0; c < cols; ++c) row[c] = (row[c] - m) * rstd * weight[c] + bias[c];
  }
}

}  // namespace attention_lab::ops
