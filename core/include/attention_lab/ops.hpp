// The one small interface every matrix product of the modules goes through (Eigen behind it today;
// a WASM-SIMD kernel may replace it without touching the modules or the trace). All row-major float32.
#pragma once

#include <cstdint>
#include <vector>

namespace attention_lab::ops {

/// y = x @ weight^T + bias, as torch.nn.functional.linear.
/// x (rows, in), weight (out, in), bias (out) or nullptr, y (rows, out). y must not alias x.
void linear(const float* x, int64_t rows, int64_t in, const float* weight, const float* bias, int64_t out, float* y);

/// out = a @ b (transpose_b false: b is (k, n)) or a @ b^T (transpose_b true: b is (n, k)).
/// a (m, k), out (m, n). out must not alias a or b.
void matmul(const float* a, const float* b, int64_t m, int64_t k, int64_t n, bool transpose_b, float* out);

/// A right-hand operand B (k, n) prepared once for many products a @ B (a module's weights).
struct PackedMatrix {
  int64_t k = 0, n = 0;
  std::vector<float> data;
};
/// B given as (k, n) row-major, or as (n, k) row-major when transpose_b (an nn.Linear weight (out, in)).
PackedMatrix pack_b(const float* b, int64_t k, int64_t n, bool transpose_b);
/// The inverse of pack_b: writes B back as (k, n) row-major, or (n, k) when transpose_b.
void unpack_b(const PackedMatrix& packed, float* b, bool transpose_b);
/// Floats pack_b allocates for a (k, n) operand (panels may pad n).
int64_t packed_floats(int64_t k, int64_t n);

/// Which part of a square product is needed or non-zero (causal attention).
enum class Triangle {
  None,
  OutputLower,  // only c[i, j] for j <= i is needed (scores before the causal mask); the rest is unspecified
  ALower,       // a[i, kk] == 0 for kk > i (causal weights): those terms may be skipped
};
/// c (m, n) = a (m, k) @ b + bias (n, or nullptr).
void gemm(const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle triangle = Triangle::None);

/// Softmax over each row of x (rows, cols), in place, as torch.softmax(dim=-1): subtract the row max
/// first (exp overflows past ~88 in float32), then multiply by 1/sum. A row of only -inf becomes NaN in
/// PyTorch; causal masks always keep the diagonal, so that cannot happen here.
void softmax_rows(float* x, int64_t rows, int64_t cols);

/// LayerNorm over each row of x (rows, cols), in place, as torch.nn.LayerNorm(cols, eps): biased
/// variance, (x - mean) / sqrt(var + eps) * weight + bias. weight and bias are (cols).
void layer_norm_rows(float* x, int64_t rows, int64_t cols, const float* weight, const float* bias, float eps);

}  // namespace attention_lab::ops
