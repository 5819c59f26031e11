// The one small interface every matrix product of the modules goes through (Eigen behind it today;
// a WASM-SIMD kernel may replace it without touching the modules or the trace). All row-major float32.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace attention_lab {
class ThreadPool;
}

namespace attention_lab::ops {

/// y = x @ weight^T + bias, as torch.nn.functional.linear.
/// x (rows, in), weight (out, in), bias (out) or nullptr, y (rows, out). y must not alias x.
void linear(const float* x, int64_t rows, int64_t in, const float* weight, const float* bias, int64_t out, float* y);

/// out = a @ b (transpose_b false: b is (k, n)) or a @ b^T (transpose_b true: b is (n, k)).
/// a (m, k), out (m, n). out must not alias a or b.
void matmul(const float* a, const float* b, int64_t m, int64_t k, int64_t n, bool transpose_b, float* out);

// ---- The f32x4 SIMD product kernel (Highway; compiled in every build, used by linear/matmul when
// ATTENTION_LAB_SIMD_KERNEL is on, the default for WebAssembly, where Eigen 3.4 runs near scalar).
// Numerical contract: every output element is the plain sequential sum over k in increasing order,
// starting from 0.0f, one multiply then one add per term (no fused multiply-add), then + bias[j]:
//   float s = 0; for (k = 0; k < K; ++k) s = s + a[i*K+k] * b[k*N+j]; c[i*N+j] = s (+ bias[j]).
// The kernel vectorizes over output columns and never splits a k sum, so results are bit-identical to
// that scalar loop (compiled with -ffp-contract=off), whatever the block sizes, natively and in WASM.

/// A right-hand operand (k, n) packed once into column panels for gemm, and reused. The layout is the
/// kernel's own: ceil(n / w) panels of w columns (w = the register tile's width), each (k, w)
/// row-major, zero-padded past n.
struct PackedMatrix {
  int64_t k = 0, n = 0;
  std::vector<float> data;  // (ceil(n / w), k, w) row-major
};

/// Packs b for gemm: b is (k, n) row-major, or with transpose_b it is given as (n, k) row-major (an
/// nn.Linear weight (out, in), so that gemm computes x @ weight^T).
PackedMatrix pack_b(const float* b, int64_t k, int64_t n, bool transpose_b);

/// pack_b into an existing PackedMatrix: no allocation when its capacity already fits (per-call packing
/// of keys and values in the hot path).
void pack_b_into(PackedMatrix& packed, const float* b, int64_t k, int64_t n, bool transpose_b);

/// Which part of a square product gemm may skip.
enum class Triangle {
  None,         // the full product
  OutputLower,  // m == n: only c[i, j] with j <= i is needed (causal scores); whole column blocks above
                // the diagonal are skipped and the values there are unspecified (the caller writes -inf)
  ALower,       // m == k: a[i, kk] == 0 for kk > i (causal weights @ values); each row block stops its k
                // loop after its last row, which leaves every sum unchanged (the sum starts at +0.0f)
};

/// The f32x4 kernel itself (what gemm runs when ATTENTION_LAB_SIMD_KERNEL is on): c = a @ b (+ bias),
/// b packed by pack_b. a (m, k) with row stride lda (0: k), c (m, b.n) with row stride ldc (0: b.n),
/// bias (b.n) or nullptr. c must not alias a. b.k != k throws std::invalid_argument. No allocation.
void simd_gemm(const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle tri = Triangle::None, int64_t lda = 0, int64_t ldc = 0);

/// Rows [row_begin, row_end) and column panels [panel_begin, panel_end) (columns panel * w .. panel * w
/// + w - 1, w = gemm_panel_width()) of simd_gemm's product, every value with the bits simd_gemm gives
/// it: row_begin must be a multiple of gemm_row_block() (0 when m == 1). What a thread pool's task
/// runs (ops::gemm with a pool).
void simd_gemm_block(const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle tri, int64_t lda, int64_t ldc, int64_t row_begin,
                     int64_t row_end, int64_t panel_begin, int64_t panel_end);

/// The kernel's row block (rows of a kept in cache across panels) and panel width: the units a
/// parallel product is split into.
int64_t gemm_row_block();
int64_t gemm_panel_width();

/// With m == 1 (one token: a decoded position, one row of logits) simd_gemm streams the packed panels
/// once, in memory order, several panels side by side so that their sequential sums overlap: the product
/// runs at memory bandwidth, with the same bits.

/// c = a @ b for one row a and an unpacked b, without packing it (a query against a KV cache's keys,
/// attention weights against its values): a (k), c (n); b is (k, n) row-major with row stride ldb
/// (0: n), or with transpose_b it is (n, k) row-major with row stride ldb (0: k), so that c = a @ b^T.
/// The contract of simd_gemm (every c[j] the sequential sum over k from 0.0f, one multiply then one add
/// per term): the same bits as simd_gemm(a, 1, k, pack_b(b, k, n, transpose_b)). c must not alias a or b.
void simd_vecmat(const float* a, int64_t k, const float* b, int64_t n, int64_t ldb, bool transpose_b, float* c);

/// The vecmat this build runs: simd_vecmat with ATTENTION_LAB_SIMD_KERNEL, else Eigen's product (the
/// reference). Same arguments as simd_vecmat.
void vecmat(const float* a, int64_t k, const float* b, int64_t n, int64_t ldb, bool transpose_b, float* c);

/// c = a @ b (+ bias): the product every module forward uses. With ATTENTION_LAB_SIMD_KERNEL (the
/// WebAssembly build) it is simd_gemm; otherwise Eigen on each packed panel, the reference (the
/// triangle hint is then ignored: the full product is computed). Same arguments and errors as simd_gemm.
void gemm(const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle tri = Triangle::None, int64_t lda = 0, int64_t ldc = 0);

/// gemm on a thread pool (null: one thread): c split into tasks of whole row blocks and column panels
/// (Eigen: column panels only, which it computes one by one anyway), sized from m, k and n alone, each
/// at least ~65k multiply-adds; every value has the bits gemm gives it, at any thread count. Small
/// products (below kMinParallelWork) run inline.
void gemm(ThreadPool* pool, const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle tri = Triangle::None, int64_t lda = 0,
          int64_t ldc = 0);

/// gemm on a pool over columns [col_begin, col_end) of c (rows of stride b.n) only: the column panels
/// that hold them, whose other columns are computed too; the rest of c is not written. Every value
/// computed has the bits gemm gives it (each is its own sum over k): what a share of a forward's heads
/// projects (AttentionModule::forward with ForwardOptions::share).
void gemm_columns(ThreadPool* pool, const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, int64_t col_begin, int64_t col_end);

/// The two implementations of the products (and of softmax_rows' exps) a build can run.
enum class Kernel {
  Eigen,  // Eigen's products and std::exp: the reference (the native default)
  Simd,   // simd_gemm and simd_exp_sum (ATTENTION_LAB_SIMD_KERNEL: the WebAssembly default, and the sanitize preset)
};

/// The one linear, matmul, gemm and softmax_rows run in this build (fixed when the core is compiled).
Kernel active_kernel();

/// A kernel's name for messages and test reports: "Eigen" or "simd_gemm".
const char* kernel_name(Kernel kernel);

/// Whether this build's products take each multiply-add as one relaxed-SIMD `f32x4.relaxed_madd`
/// (fused, one rounding, where the engine has FMA): true only in the WebAssembly binary built with
/// ATTENTION_LAB_RELAXED_FMA (attention_core_fma.wasm, issue 21.3); false in every other build, where
/// each term is a multiply then an add (the bits of the scalar sequential sum). Fixed when compiled.
bool kernel_fuses_multiply_add();

/// The inverse of pack_b: writes b back as (k, n) row-major, or (n, k) when transpose_b.
void unpack_b(const PackedMatrix& packed, float* b, bool transpose_b);

/// Floats pack_b allocates for a (k, n) operand (panels pad n up to the tile width).
int64_t packed_floats(int64_t k, int64_t n);

/// Softmax over each row of x (rows, cols), in place, as torch.softmax(dim=-1): subtract the row max
/// first (exp overflows past ~88 in float32), then multiply by 1/sum. A row of only -inf becomes NaN in
/// PyTorch; causal masks always keep the diagonal, so that cannot happen here.
void softmax_rows(float* x, int64_t rows, int64_t cols);

/// x[c] = e^(x[c] - shift) for c < n, in place, with f32x4 SIMD (Highway's Exp: at most 1 ULP from
/// std::exp, exactly 0 for -inf); returns the sum of the results in index order. What softmax_rows
/// runs when ATTENTION_LAB_SIMD_KERNEL is on.
float simd_exp_sum(float* x, int64_t n, float shift);

/// x[c] = x[c] / divisor for c < n, in place, with f32x4 SIMD (the same bits as the scalar division),
/// and returns the largest result (-inf for n = 0), NaN when any is NaN: that row's softmax is then NaN
/// throughout, as PyTorch's (Highway's Exp gives 0 for NaN, so a max that skipped it would have hidden
/// the NaN as a weight of 0). The scaled softmax's first pass when ATTENTION_LAB_SIMD_KERNEL is on.
float simd_divide_max(float* x, int64_t n, float divisor);

/// One pass over n values: min, max and sum of the finite ones that are not the mask fill (min +inf
/// and max -inf when there are none; `counted` of them), how many are finite, -inf, the mask fill
/// (`masked`: -inf, or torch.finfo(float32).min for a class whose recipe fills that), and exactly 0.
/// f32x4 SIMD; the sum is accurate to float32 rounding of 4096-value partial sums.
struct ValueSummary {
  float min = 0.0f, max = 0.0f;
  double sum = 0.0;
  int64_t finite = 0, neg_inf = 0, zeros = 0;
  int64_t masked = 0, counted = 0;
};
ValueSummary summarize_values(const float* x, int64_t n);

/// summarize_values over values that arrive in consecutive pieces (a traced forward summarizes each
/// block of rows of a (T, Tk) slab while it is still in cache): add() the pieces in order, then
/// finish(). The same bits as one summarize_values over all of them, however they are cut (the
/// f32x4 lanes and 4096-value partial sums count from the first value given).
class SummaryStream {
 public:
  /// `fill`: the value masked positions hold (ValueSummary::masked), -inf unless a recipe fills
  /// torch.finfo(float32).min (ForwardPlan::mask_fill).
  explicit SummaryStream(float fill = -std::numeric_limits<float>::infinity());
  void add(const float* x, int64_t n);
  ValueSummary finish() const;

 private:
  alignas(16) float lo_[4], hi_[4], block_[4];  // f32x4 state between pieces (Highway stays out of this header)
  alignas(16) int32_t finite_[4], neg_inf_[4], zeros_[4], masked_[4];
  float fill_;
  float carry_[4] = {};  // the last values of a piece that did not fill a vector: the next piece's first
  int carried_ = 0;
  int64_t in_block_ = 0;  // values added to block_ since the last partial sum
  double sum_ = 0.0;
};

/// The attention weights of one (T, T) slab, in place: each row divided by `scale_div` (sqrt(d_k)),
/// then softmax_rows. With `causal`, row i uses only its first i + 1 entries (whatever the rest holds)
/// and the rest becomes 0: the same bits as masking with -inf first (exp(-inf) is exactly 0 and adding
/// 0 changes no sum), at about half the work.
/// `first_row`: the slab row that x's first row is (a block of rows of the slab), for `causal`.
void scaled_softmax_rows(float* x, int64_t rows, int64_t cols, float scale_div, bool causal, int64_t first_row = 0);
/// The same on `pool` (null: this thread), blocks of rows as its tasks when the slab is worth it: the
/// same bits on any thread count (each row is computed alone, in the same order of operations).
void scaled_softmax_rows(ThreadPool* pool, float* x, int64_t rows, int64_t cols, float scale_div, bool causal, int64_t first_row = 0);

/// LayerNorm over each row of x (rows, cols), in place, as torch.nn.LayerNorm(cols, eps): biased
/// variance, (x - mean) / sqrt(var + eps) * weight + bias. weight and bias are (cols).
void layer_norm_rows(float* x, int64_t rows, int64_t cols, const float* weight, const float* bias, float eps);

}  // namespace attention_lab::ops
