// The one small interface every matrix product of the modules goes through (Eigen behind it today;
// a WASM-SIMD kernel may replace it without touching the modules or the trace). All row-major float32.
#pragma once

#include <cstdint>

namespace attention_lab::ops {

/// y = x @ weight^T + bias, as torch.nn.functional.linear.
/// x (rows, in), weight (out, in), bias (out) or nullptr, y (rows, out). y must not alias x.
void linear(const float* x, int64_t rows, int64_t in, const float* weight, const float* bias, int64_t out, float* y);

/// out = a @ b (transpose_b false: b is (k, n)) or a @ b^T (transpose_b true: b is (n, k)).
/// a (m, k), out (m, n). out must not alias a or b.
void matmul(const float* a, const float* b, int64_t m, int64_t k, int64_t n, bool transpose_b, float* out);

/// Softmax over each row of x (rows, cols), in place, as torch.softmax(dim=-1): subtract the row max
/// first (exp overflows past ~88 in float32), then multiply by 1/sum. A row of only -inf becomes NaN in
/// PyTorch; causal masks always keep the diagonal, so that cannot happen here.
void softmax_rows(float* x, int64_t rows, int64_t cols);

/// LayerNorm over each row of x (rows, cols), in place, as torch.nn.LayerNorm(cols, eps): biased
/// variance, (x - mean) / sqrt(var + eps) * weight + bias. weight and bias are (cols).
void layer_norm_rows(float* x, int64_t rows, int64_t cols, const float* weight, const float* bias, float eps);

}  // namespace attention_lab::ops
