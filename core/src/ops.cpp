#include "attention_lab/ops.hpp"

#include "attention_lab/thread_pool.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attention_lab::ops {

namespace {
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix>;
using Map = Eigen::Map<RowMatrix>;
using ConstVector = Eigen::Map<const Eigen::RowVectorXf>;
}  // namespace

Kernel active_kernel() {
#if ATTENTION_LAB_SIMD_KERNEL
  return Kernel::Simd;
#else
  return Kernel::Eigen;
#endif
}

const char* kernel_name(Kernel kernel) { return kernel == Kernel::Simd ? "simd_gemm" : "Eigen"; }

void linear(const float* x, int64_t rows, int64_t in, const float* weight, const float* bias, int64_t out, float* y) {
#if ATTENTION_LAB_SIMD_KERNEL
  gemm(x, rows, in, pack_b(weight, in, out, true), bias, y);  // (rows, out)
#else
  ConstMap X(x, rows, in);      // (rows, in)
  ConstMap W(weight, out, in);  // (out, in)
  Map Y(y, rows, out);          // (rows, out)
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

namespace {
/// Column panels [p_begin, p_end) of gemm's product, all rows: the kernel's block, or Eigen on each
/// packed panel (the reference; the triangle hint is then ignored: the full product is computed).
void gemm_panels(const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle tri, int64_t lda, int64_t ldc, int64_t row_begin,
                 int64_t row_end, int64_t p_begin, int64_t p_end) {
#if ATTENTION_LAB_SIMD_KERNEL
  simd_gemm_block(a, m, k, b, bias, c, tri, lda, ldc, row_begin, row_end, p_begin, p_end);
#else
  (void)tri;
  (void)row_begin;
  (void)row_end;  // Eigen's tasks are whole columns of panels: all rows
  if (b.k != k) throw std::invalid_argument("gemm: a has " + std::to_string(k) + " columns but b was packed with k = " + std::to_string(b.k));
  // Eigen, panel by panel: panel p is (k, w) row-major and fills columns p*w .. p*w + w - 1 of c.
  using Stride = Eigen::OuterStride<>;
  const int64_t w = gemm_panel_width();
  if (lda == 0) lda = k;
  if (ldc == 0) ldc = b.n;
  const Eigen::Map<const RowMatrix, 0, Stride> A(a, m, k, Stride(lda));  // (m, k)
  for (int64_t j0 = p_begin * w; j0 < std::min(b.n, p_end * w); j0 += w) {
    const int64_t cols = std::min(w, b.n - j0);
    const Eigen::Map<const RowMatrix, 0, Stride> P(b.data.data() + j0 * k, k, cols, Stride(w));  // (k, cols) of panel j0 / w
    Eigen::Map<RowMatrix, 0, Stride> C(c + j0, m, cols, Stride(ldc));                            // (m, cols)
    C.noalias() = A * P;
    if (bias != nullptr) C.rowwise() += ConstVector(bias + j0, cols);
  }
#endif
}

/// Multiply-adds per task of a parallel product: ~6 microseconds of one thread, a hundred times a
/// task's bookkeeping.
constexpr double kMinTaskWork = 1 << 16;
}  // namespace

void gemm(const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle tri, int64_t lda, int64_t ldc) {
  gemm(nullptr, a, m, k, b, bias, c, tri, lda, ldc);
}

namespace {
/// ops::gemm on a pool over column panels [p_begin, p_end) of the product.
void gemm_panel_range(ThreadPool* pool, const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle tri, int64_t lda, int64_t ldc,
                      int64_t p_begin, int64_t p_end) {
  const int64_t w = gemm_panel_width(), panels = p_end - p_begin;
  const double work = static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(std::min(b.n, panels * w));
  if (pool == nullptr || work < kMinParallelWork || m <= 0 || panels <= 0) {
    gemm_panels(a, m, k, b, bias, c, tri, lda, ldc, 0, m, p_begin, p_end);
    return;
  }
  // Tasks: row blocks (the SIMD kernel's own; Eigen takes all rows at once) times groups of panels,
  // as many panels as make a task worth it, in multiples of 4 (the kernel's one-row groups).
#if ATTENTION_LAB_SIMD_KERNEL
  const int64_t rows = m == 1 ? 1 : gemm_row_block();
#else
  const int64_t rows = m;
#endif
  const double row_work = static_cast<double>(std::min(rows, m)) * static_cast<double>(std::max<int64_t>(k, 1)) * static_cast<double>(w);
  int64_t group = static_cast<int64_t>(std::ceil(kMinTaskWork / row_work));
  group = std::min(panels, (std::max<int64_t>(group, 1) + 3) / 4 * 4);
  const int64_t row_tasks = (m + rows - 1) / rows, panel_tasks = (panels + group - 1) / group;
  parallel_for(pool, row_tasks * panel_tasks, work, [&](int64_t t) {
    const int64_t r = t / panel_tasks, q = t % panel_tasks;
    gemm_panels(a, m, k, b, bias, c, tri, lda, ldc, r * rows, std::min(m, (r + 1) * rows), p_begin + q * group, std::min(p_end, p_begin + (q + 1) * group));
  });
}
}  // namespace

void gemm(ThreadPool* pool, const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle tri, int64_t lda, int64_t ldc) {
  gemm_panel_range(pool, a, m, k, b, bias, c, tri, lda, ldc, 0, (b.n + gemm_panel_width() - 1) / gemm_panel_width());
}

void gemm_columns(ThreadPool* pool, const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, int64_t col_begin, int64_t col_end) {
  const int64_t w = gemm_panel_width();
  col_begin = std::clamp<int64_t>(col_begin, 0, b.n);
  col_end = std::clamp<int64_t>(col_end, col_begin, b.n);
  gemm_panel_range(pool, a, m, k, b, bias, c, Triangle::None, 0, 0, col_begin / w, (col_end + w - 1) / w);
}

void vecmat(const float* a, int64_t k, const float* b, int64_t n, int64_t ldb, bool transpose_b, float* c) {
#if ATTENTION_LAB_SIMD_KERNEL
  simd_vecmat(a, k, b, n, ldb, transpose_b, c);
#else
  using Stride = Eigen::OuterStride<>;
  if (ldb == 0) ldb = transpose_b ? k : n;
  const ConstVector A(a, k);               // (1, k)
  Eigen::Map<Eigen::RowVectorXf> C(c, n);  // (1, n)
  if (transpose_b) {
    C.noalias() = A * Eigen::Map<const RowMatrix, 0, Stride>(b, n, k, Stride(ldb)).transpose();  // b (n, k)
  } else {
    C.noalias() = A * Eigen::Map<const RowMatrix, 0, Stride>(b, k, n, Stride(ldb));  // b (k, n)
  }
#endif
}

namespace {
/// Softmax of one row of n values whose largest is `max`, in place: subtract it first (exp overflows
/// past ~88 in float32).
void softmax_row(float* row, int64_t n, float max) {
#if ATTENTION_LAB_SIMD_KERNEL
  const float sum = simd_exp_sum(row, n, max);  // the exps are most of a long softmax's time
#else
  float sum = 0.0f;
  for (int64_t c = 0; c < n; ++c) {
    row[c] = std::exp(row[c] - max);  // exp(-inf) is exactly 0: masked keys get weight 0
    sum += row[c];
  }
#endif
  const float inv = 1.0f / sum;
  for (int64_t c = 0; c < n; ++c) row[c] *= inv;
}
}  // namespace

void softmax_rows(float* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    if (cols > 0) softmax_row(row, cols, *std::max_element(row, row + cols));
  }
}

void scaled_softmax_rows(float* x, int64_t rows, int64_t cols, float scale_div, bool causal, int64_t first_row) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    const int64_t n = causal ? std::min(first_row + r + 1, cols) : cols;
#if ATTENTION_LAB_SIMD_KERNEL
    const float max = simd_divide_max(row, n, scale_div);  // one pass: the division (same bits) and the max
#else
    for (int64_t c = 0; c < n; ++c) row[c] = row[c] / scale_div;
    const float max = n > 0 ? *std::max_element(row, row + n) : 0.0f;
#endif
    if (n > 0) softmax_row(row, n, max);
    std::fill(row + n, row + cols, 0.0f);
  }
}

void scaled_softmax_rows(ThreadPool* pool, float* x, int64_t rows, int64_t cols, float scale_div, bool causal, int64_t first_row) {
  // A value's softmax is about a dozen multiply-adds (the exp's polynomial, the max, the scalings).
  constexpr double kWorkPerValue = 12;
  const double work = kWorkPerValue * static_cast<double>(rows) * static_cast<double>(cols);
  const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(kMinTaskWork / (kWorkPerValue * static_cast<double>(std::max<int64_t>(cols, 1)))));
  if (pool == nullptr || rows <= chunk) {
    scaled_softmax_rows(x, rows, cols, scale_div, causal, first_row);
    return;
  }
  // Blocks of rows, claimed in order by whichever thread is free (a causal block's work grows with its rows).
  parallel_for(pool, (rows + chunk - 1) / chunk, causal ? work / 2 : work, [&](int64_t t) {
    const int64_t r0 = t * chunk;
    scaled_softmax_rows(x + r0 * cols, std::min(chunk, rows - r0), cols, scale_div, causal, first_row + r0);
  });
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
