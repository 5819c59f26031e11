// The f32x4 product kernel behind ops::gemm (see ops.hpp for the numerical contract), written with
// Highway's static target: WASM SIMD128 in the WebAssembly build, whatever the -m flags give natively
// (Debian's GCC 12.2 without -m flags gets HWY_SCALAR, one lane: same bits, just not fast).
// Register tile: kRows rows x kWidth columns of c, accumulated over k one term at a time (broadcast
// a[i, k], multiply by a vector of packed b, add). Mul then Add, never MulAdd: Highway's MulAdd is
// fused natively but not in WASM, and the bits must be the same in both. The one exception is the
// WebAssembly build made with ATTENTION_LAB_RELAXED_FMA (attention_core_fma.wasm, issue 21.3), where
// mul_add is the fused f32x4.relaxed_madd: its products round once, so its bits differ from the plain
// binary's (within the fixtures' tolerances), and the facade loads it only where the engine has it.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "attention_lab/ops.hpp"
#include "hwy/highway.h"
#include "simd_f32x4.hpp"

namespace attention_lab::ops {

bool kernel_fuses_multiply_add() {
#if defined(ATTENTION_LAB_RELAXED_FMA) && HWY_TARGET == HWY_WASM
  return true;
#else
  return false;
#endif
}

namespace {

using namespace simd;  // D, V (f32x4), kLanes

#ifndef ATTENTION_LAB_GEMM_ROWS
#define ATTENTION_LAB_GEMM_ROWS 4
#endif
#ifndef ATTENTION_LAB_GEMM_WIDTH
#define ATTENTION_LAB_GEMM_WIDTH 8
#endif
#ifndef ATTENTION_LAB_GEMM_KC
#define ATTENTION_LAB_GEMM_KC 256
#endif
#ifndef ATTENTION_LAB_GEMM_MC
#define ATTENTION_LAB_GEMM_MC 64
#endif

// 4x8 in V8 (x64): 8 accumulators + 2 vectors of b + 4 broadcasts of a = 14 of the 15 xmm registers it
// allocates (TurboFan issues all loads of a k step first, so those broadcasts are live together); 5x8
// and 6x8 spill accumulators and measured 72-81% of the f32x4 peak against ~100% for 4x8. The block
// sizes barely matter here (256/64 to 768/32 within noise). The macros are only for tuning runs.
constexpr int kRows = ATTENTION_LAB_GEMM_ROWS;            // rows of the register tile
constexpr int64_t kWidth = ATTENTION_LAB_GEMM_WIDTH;      // columns of the register tile = packed panel width
constexpr int kVecs = static_cast<int>(kWidth) / kLanes;  // vectors across the register tile
constexpr int64_t kKc = ATTENTION_LAB_GEMM_KC;            // k block: one (kKc, kWidth) panel slice stays in L1
constexpr int64_t kMc = ATTENTION_LAB_GEMM_MC;            // row block: (kMc, kKc) of a stays in L2 across panels
static_assert(kWidth % 4 == 0 && kVecs * kLanes == kWidth, "the tile width is a whole number of f32x4 vectors");

/// acc + x * y, lane by lane: a Mul and an Add (two roundings), or in the relaxed-FMA WebAssembly build
/// one f32x4.relaxed_madd (fused where the engine fuses it). Clang 14 has only the prototype builtin
/// (a + b * c, opcode 0xfd 0xaf 0x01), which V8 rejects; scripts/relaxed-simd.mjs rewrites it in place
/// to the final f32x4.relaxed_madd (0xfd 0x85 0x02, a * b + c), which takes the operands in the order
/// they were pushed: so the builtin is given (x, y, acc), and means x * y + acc once rewritten.
HWY_INLINE V mul_add(V acc, V x, V y) {
#if defined(ATTENTION_LAB_RELAXED_FMA) && HWY_TARGET == HWY_WASM
  return V{__builtin_wasm_fma_f32x4(x.raw, y.raw, acc.raw)};
#else
  return hn::Add(acc, hn::Mul(x, y));
#endif
}

/// c[0:R, 0:kWidth] (row stride ldc) = (accumulate ? c : 0) + a[0:R, 0:kc] @ panel[0:kc, :], term by
/// term in k order, then + bias when bias is not null.
template <int R>
HWY_INLINE void tile(const float* HWY_RESTRICT a, int64_t lda, const float* HWY_RESTRICT panel, int64_t kc, float* HWY_RESTRICT c, int64_t ldc, bool accumulate,
                     const float* HWY_RESTRICT bias) {
  const D d;
  V acc[R][kVecs];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = accumulate ? hn::LoadU(d, c + r * ldc + kLanes * v) : hn::Zero(d);
  // Pointers that step along k (not indices): Emscripten's LLVM runs without loop strength reduction,
  // and 64-bit index arithmetic costs V8 scalar instructions beside the vector ones.
  const float* HWY_RESTRICT row[R];
  for (int r = 0; r < R; ++r) row[r] = a + r * lda;
  for (const float* const end = panel + kc * kWidth; panel != end; panel += kWidth) {
    V b[kVecs];
    for (int v = 0; v < kVecs; ++v) b[v] = hn::LoadU(d, panel + kLanes * v);
    for (int r = 0; r < R; ++r) {
      const V x = hn::Set(d, *row[r]++);
      for (int v = 0; v < kVecs; ++v) acc[r][v] = mul_add(acc[r][v], x, b[v]);
    }
  }
  if (bias != nullptr) {
    for (int v = 0; v < kVecs; ++v) {
      const V bv = hn::LoadU(d, bias + kLanes * v);
      for (int r = 0; r < R; ++r) acc[r][v] = hn::Add(acc[r][v], bv);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVecs; ++v) hn::StoreU(acc[r][v], d, c + r * ldc + kLanes * v);
}

/// One register tile of R rows and `cols` <= kWidth columns; a partial tile goes through a local copy
/// so that no load or store reaches past column n.
template <int R>
void edge_tile(const float* a, int64_t lda, const float* panel, int64_t kc, float* c, int64_t ldc, int64_t cols, bool accumulate, const float* bias) {
  if (cols == kWidth) {
    tile<R>(a, lda, panel, kc, c, ldc, accumulate, bias);
    return;
  }
  alignas(16) float local[R * kWidth] = {};
  alignas(16) float local_bias[kWidth] = {};
  if (accumulate)
    for (int r = 0; r < R; ++r) std::memcpy(local + r * kWidth, c + r * ldc, sizeof(float) * static_cast<size_t>(cols));
  if (bias != nullptr) std::memcpy(local_bias, bias, sizeof(float) * static_cast<size_t>(cols));
  tile<R>(a, lda, panel, kc, local, kWidth, accumulate, bias != nullptr ? local_bias : nullptr);
  for (int r = 0; r < R; ++r) std::memcpy(c + r * ldc, local + r * kWidth, sizeof(float) * static_cast<size_t>(cols));
}

template <int R>
void dispatch_rows(int rows, const float* a, int64_t lda, const float* panel, int64_t kc, float* c, int64_t ldc, int64_t cols, bool accumulate, const float* bias) {
  if constexpr (R > 1) {
    if (rows < R) {
      dispatch_rows<R - 1>(rows, a, lda, panel, kc, c, ldc, cols, accumulate, bias);
      return;
    }
  }
  edge_tile<R>(a, lda, panel, kc, c, ldc, cols, accumulate, bias);
}

#ifndef ATTENTION_LAB_GEMV_PANELS
#define ATTENTION_LAB_GEMV_PANELS 4
#endif

// One row (m = 1, a decoded token): each output is still a sequential sum over all of k, so the sums
// of one panel are two dependent chains of adds; kGemvPanels panels side by side give 2 x kGemvPanels
// chains, enough to hide the add latency, and the panels are read front to back, each once: the packed
// weights stream through at memory bandwidth. (4 panels: 8 accumulators + a broadcast + the loads of
// one panel fit V8's xmm registers.)
constexpr int kGemvPanels = ATTENTION_LAB_GEMV_PANELS;

/// out[0 : P * kWidth] = a[0:k] @ (P consecutive panels of k rows, starting at `panels`) (+ bias), each
/// column the sequential sum over k from 0, then + bias: the bits of tile<1> over all of k.
template <int P>
HWY_INLINE void gemv_panels(const float* HWY_RESTRICT a, int64_t k, const float* HWY_RESTRICT panels, const float* HWY_RESTRICT bias, float* HWY_RESTRICT out) {
  const D d;
  V acc[P][kVecs];
  for (int q = 0; q < P; ++q)
    for (int v = 0; v < kVecs; ++v) acc[q][v] = hn::Zero(d);
  const float* HWY_RESTRICT p[P];
  for (int q = 0; q < P; ++q) p[q] = panels + q * k * kWidth;
  for (const float *x = a, *const end = a + k; x != end; ++x) {
    const V xv = hn::Set(d, *x);
    for (int q = 0; q < P; ++q) {
      for (int v = 0; v < kVecs; ++v) acc[q][v] = mul_add(acc[q][v], xv, hn::LoadU(d, p[q] + kLanes * v));
      p[q] += kWidth;
    }
  }
  for (int q = 0; q < P; ++q)
    for (int v = 0; v < kVecs; ++v) {
      V s = acc[q][v];
      if (bias != nullptr) s = hn::Add(s, hn::LoadU(d, bias + q * kWidth + kLanes * v));
      hn::StoreU(s, d, out + q * kWidth + kLanes * v);
    }
}

/// c (n) = a (k) @ b (+ bias) for a packed b, k >= 1, the columns of panels [p_begin, p_end): groups of
/// kGemvPanels panels, then the rest one panel at a time (each column's sum is the same either way); a
/// group that reaches past column n goes through a local copy (no store past n).
void gemv_packed(const float* a, int64_t k, const PackedMatrix& b, const float* bias, float* c, int64_t p_begin, int64_t p_end) {
  const int64_t n = b.n, panels = p_end;
  const float* data = b.data.data();
  const auto group = [&](auto width, int64_t p) {
    constexpr int P = decltype(width)::value;
    const int64_t j0 = p * kWidth;
    const float* panel = data + p * k * kWidth;
    if (j0 + P * kWidth <= n) {
      gemv_panels<P>(a, k, panel, bias != nullptr ? bias + j0 : nullptr, c + j0);
      return;
    }
    alignas(16) float local[P * kWidth];
    alignas(16) float local_bias[P * kWidth] = {};
    const size_t cols = static_cast<size_t>(n - j0);
    if (bias != nullptr) std::memcpy(local_bias, bias + j0, sizeof(float) * cols);
    gemv_panels<P>(a, k, panel, bias != nullptr ? local_bias : nullptr, local);
    std::memcpy(c + j0, local, sizeof(float) * cols);
  };
  int64_t p = p_begin;
  for (; p + kGemvPanels <= panels; p += kGemvPanels) group(std::integral_constant<int, kGemvPanels>(), p);
  for (; p < panels; ++p) group(std::integral_constant<int, 1>(), p);
}

/// c[j] = sum over kk of a[kk] * b[j * ldb + kk] (b's rows are the columns of the product: a @ b^T), for
/// 4 rows j at a time: each 4 x 4 block of b is transposed in registers so that lane r holds row j + r,
/// and the terms are added in kk order, as the scalar sum. Rows past the last group of 4, scalar.
void vecmat_rows(const float* HWY_RESTRICT a, int64_t k, const float* HWY_RESTRICT b, int64_t n, int64_t ldb, float* HWY_RESTRICT c) {
  int64_t j = 0;
#if HWY_TARGET != HWY_SCALAR  // f32x4 (HWY_SCALAR, one lane, has no interleaves: the scalar loop below does it all)
  {
    const D d;
    const auto block = [&](const float* r0, int64_t kk, V& acc) {
      const V x0 = hn::LoadU(d, r0 + kk), x1 = hn::LoadU(d, r0 + ldb + kk), x2 = hn::LoadU(d, r0 + 2 * ldb + kk), x3 = hn::LoadU(d, r0 + 3 * ldb + kk);
      const V lo01 = hn::InterleaveLower(d, x0, x1), lo23 = hn::InterleaveLower(d, x2, x3);  // x0[0] x1[0] x0[1] x1[1], x2[0] x3[0] x2[1] x3[1]
      const V hi01 = hn::InterleaveUpper(d, x0, x1), hi23 = hn::InterleaveUpper(d, x2, x3);  // the same with [2], [3]
      acc = mul_add(acc, hn::Set(d, a[kk]), hn::ConcatLowerLower(d, lo23, lo01));            // column kk of the 4 rows
      acc = mul_add(acc, hn::Set(d, a[kk + 1]), hn::ConcatUpperUpper(d, lo23, lo01));        // kk + 1
      acc = mul_add(acc, hn::Set(d, a[kk + 2]), hn::ConcatLowerLower(d, hi23, hi01));        // kk + 2
      acc = mul_add(acc, hn::Set(d, a[kk + 3]), hn::ConcatUpperUpper(d, hi23, hi01));        // kk + 3
    };
    const auto tail = [&](const float* r0, int64_t kk, V& acc) {  // the last k % 4 terms, one column at a time
      for (; kk < k; ++kk) {
        alignas(16) const float column[4] = {r0[kk], r0[ldb + kk], r0[2 * ldb + kk], r0[3 * ldb + kk]};
        acc = mul_add(acc, hn::Set(d, a[kk]), hn::Load(d, column));
      }
    };
    const int64_t k4 = k - k % 4;
    for (; j + 8 <= n; j += 8) {  // two groups of 4 rows: two independent chains of adds
      const float* r0 = b + j * ldb;
      const float* r4 = r0 + 4 * ldb;
      V acc0 = hn::Zero(d), acc1 = hn::Zero(d);
      for (int64_t kk = 0; kk < k4; kk += 4) {
        block(r0, kk, acc0);
        block(r4, kk, acc1);
      }
      tail(r0, k4, acc0);
      tail(r4, k4, acc1);
      hn::StoreU(acc0, d, c + j);
      hn::StoreU(acc1, d, c + j + 4);
    }
    for (; j + 4 <= n; j += 4) {
      const float* r0 = b + j * ldb;
      V acc = hn::Zero(d);
      for (int64_t kk = 0; kk < k4; kk += 4) block(r0, kk, acc);
      tail(r0, k4, acc);
      hn::StoreU(acc, d, c + j);
    }
  }
#endif
  for (; j < n; ++j) {
    float s = 0.0f;
    for (int64_t kk = 0; kk < k; ++kk) s = s + a[kk] * b[j * ldb + kk];
    c[j] = s;
  }
}

/// c[j] = sum over kk of a[kk] * b[kk * ldb + j] (a @ b, b (k, n) row-major): kWidth columns at a time
/// (two chains), each row of b read once, in order; the columns past the last full group through a
/// local copy.
void vecmat_cols(const float* HWY_RESTRICT a, int64_t k, const float* HWY_RESTRICT b, int64_t n, int64_t ldb, float* HWY_RESTRICT c) {
  const D d;
  int64_t j = 0;
  for (; j + kWidth <= n; j += kWidth) {
    V acc[kVecs];
    for (int v = 0; v < kVecs; ++v) acc[v] = hn::Zero(d);
    const float* row = b + j;
    for (int64_t kk = 0; kk < k; ++kk, row += ldb) {
      const V x = hn::Set(d, a[kk]);
      for (int v = 0; v < kVecs; ++v) acc[v] = mul_add(acc[v], x, hn::LoadU(d, row + kLanes * v));
    }
    for (int v = 0; v < kVecs; ++v) hn::StoreU(acc[v], d, c + j + kLanes * v);
  }
  for (; j < n; ++j) {
    float s = 0.0f;
    for (int64_t kk = 0; kk < k; ++kk) s = s + a[kk] * b[kk * ldb + j];
    c[j] = s;
  }
}

}  // namespace

void simd_vecmat(const float* a, int64_t k, const float* b, int64_t n, int64_t ldb, bool transpose_b, float* c) {
  if (ldb == 0) ldb = transpose_b ? k : n;
  if (transpose_b)
    vecmat_rows(a, k, b, n, ldb, c);
  else
    vecmat_cols(a, k, b, n, ldb, c);
}

void pack_b_into(PackedMatrix& packed, const float* b, int64_t k, int64_t n, bool transpose_b) {
  const int64_t panels = (n + kWidth - 1) / kWidth;
  packed.k = k;
  packed.n = n;
  packed.data.resize(static_cast<size_t>(panels * k * kWidth));  // keeps the capacity when it fits
  float* out = packed.data.data();
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t j0 = p * kWidth;
    const int64_t cols = std::min(kWidth, n - j0);
    float* panel = out + p * k * kWidth;  // (k, kWidth)
    for (int64_t kk = 0; kk < k; ++kk) {
      float* row = panel + kk * kWidth;
      if (transpose_b) {
        for (int64_t j = 0; j < cols; ++j) row[j] = b[(j0 + j) * k + kk];
      } else {
        std::memcpy(row, b + kk * n + j0, sizeof(float) * static_cast<size_t>(cols));
      }
      for (int64_t j = cols; j < kWidth; ++j) row[j] = 0.0f;
    }
  }
}

int64_t packed_floats(int64_t k, int64_t n) { return (n + kWidth - 1) / kWidth * k * kWidth; }

void unpack_b(const PackedMatrix& packed, float* b, bool transpose_b) {
  const int64_t k = packed.k, n = packed.n;
  for (int64_t j = 0; j < n; ++j) {
    const float* column = packed.data.data() + (j / kWidth) * k * kWidth + j % kWidth;  // panel j / kWidth, column j % kWidth
    for (int64_t kk = 0; kk < k; ++kk) (transpose_b ? b[j * k + kk] : b[kk * n + j]) = column[kk * kWidth];
  }
}

PackedMatrix pack_b(const float* b, int64_t k, int64_t n, bool transpose_b) {
  PackedMatrix packed;
  pack_b_into(packed, b, k, n, transpose_b);
  return packed;
}

int64_t gemm_row_block() { return kMc; }

int64_t gemm_panel_width() { return kWidth; }

void simd_gemm(const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle tri, int64_t lda, int64_t ldc) {
  simd_gemm_block(a, m, k, b, bias, c, tri, lda, ldc, 0, m, 0, (b.n + kWidth - 1) / kWidth);
}

void simd_gemm_block(const float* a, int64_t m, int64_t k, const PackedMatrix& b, const float* bias, float* c, Triangle tri, int64_t lda, int64_t ldc, int64_t row_begin,
                     int64_t row_end, int64_t panel_begin, int64_t panel_end) {
  if (b.k != k) throw std::invalid_argument("gemm: a has " + std::to_string(k) + " columns but b was packed with k = " + std::to_string(b.k));
  const int64_t n = b.n;
  if (lda == 0) lda = k;
  if (ldc == 0) ldc = n;
  row_end = std::min(row_end, m);
  panel_end = std::min(panel_end, (n + kWidth - 1) / kWidth);
  if (row_begin >= row_end || panel_begin >= panel_end) return;
  if (k <= 0) {  // the empty sum: 0, then + bias
    for (int64_t i = row_begin; i < row_end; ++i)
      for (int64_t j = panel_begin * kWidth; j < std::min(n, panel_end * kWidth); ++j) c[i * ldc + j] = bias != nullptr ? 0.0f + bias[j] : 0.0f;
    return;
  }
  if (m == 1) {  // one row: stream the panels once (the same sums; the triangles change nothing at m = 1)
    gemv_packed(a, k, b, bias, c, panel_begin, panel_end);
    return;
  }
  // Loops: k blocks outermost (a tile reloads its partial sums from c, so each sum stays sequential),
  // then row blocks, then panels, then register tiles down the row block. Row blocks start at
  // multiples of kMc from row 0 whatever row_begin is (it is one), so every tile is the one the whole
  // product would run.
  for (int64_t pc = 0; pc < k; pc += kKc) {
    const int64_t kc = std::min(kKc, k - pc);
    for (int64_t ic = row_begin; ic < row_end; ic += kMc) {
      const int64_t mc = std::min(kMc, row_end - ic);
      for (int64_t p = panel_begin; p < panel_end; ++p) {
        const int64_t j0 = p * kWidth;
        const int64_t cols = std::min(kWidth, n - j0);
        const float* panel = b.data.data() + (p * k + pc) * kWidth;  // (kc, kWidth) slice of panel p
        for (int64_t i0 = ic; i0 < ic + mc; i0 += kRows) {
          const int rows = static_cast<int>(std::min<int64_t>(kRows, ic + mc - i0));
          if (tri == Triangle::OutputLower && j0 > i0 + rows - 1) continue;  // whole tile above the diagonal
          const int64_t k_end = tri == Triangle::ALower ? std::min(k, i0 + rows) : k;
          if (pc >= k_end) continue;  // a is zero from here on for these rows
          const int64_t kc_here = std::min(kc, k_end - pc);
          const bool last = pc + kc_here >= k_end;
          dispatch_rows<kRows>(rows, a + i0 * lda + pc, lda, panel, kc_here, c + i0 * ldc + j0, ldc, cols, pc > 0, last && bias != nullptr ? bias + j0 : nullptr);
        }
      }
    }
  }
}

}  // namespace attention_lab::ops
