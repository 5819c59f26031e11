// The f32x4 product kernel (ops_kernel.cpp): bit-identical to the sequential scalar sum on every
// shape and path, and ops:: products against the other implementation (Eigen or the kernel).
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention_lab/ops.hpp"
#include "random_values.hpp"

using namespace attention_lab;

namespace {

/// The contract's scalar reference: the sequential sum over k from 0.0f, one multiply then one add per
/// term, bias last (this file is compiled with -ffp-contract=off). b (k, n), or (n, k) with transpose_b.
std::vector<float> reference(const std::vector<float>& a, const std::vector<float>& b, const float* bias, int64_t m, int64_t k, int64_t n, bool transpose_b) {
  std::vector<float> c(static_cast<size_t>(m * n));  // (m, n)
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) s = s + a[static_cast<size_t>(i * k + kk)] * b[static_cast<size_t>(transpose_b ? j * k + kk : kk * n + j)];
      c[static_cast<size_t>(i * n + j)] = bias != nullptr ? s + bias[j] : s;
    }
  return c;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) { return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0; }

std::vector<float> run_gemm(const std::vector<float>& a, const std::vector<float>& b, const float* bias, int64_t m, int64_t k, int64_t n, bool transpose_b,
                            ops::Triangle tri = ops::Triangle::None) {
  const ops::PackedMatrix packed = ops::pack_b(b.data(), k, n, transpose_b);
  std::vector<float> c(static_cast<size_t>(m * n), 0.0f);  // (m, n)
  ops::simd_gemm(a.data(), m, k, packed, bias, c.data(), tri);
  return c;
}

const int64_t kSizes[] = {1, 3, 5, 17, 63, 65, 769};

/// Eigen's own product c = a @ b (+ bias), written here rather than reached through ops::, so that it is
/// Eigen in every build: b (k, n), or (n, k) with transpose_b (an nn.Linear weight). The same
/// expressions as ops::linear and ops::matmul when those run Eigen.
std::vector<float> eigen_product(const std::vector<float>& a, const std::vector<float>& b, const float* bias, int64_t m, int64_t k, int64_t n, bool transpose_b) {
  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<float> c(static_cast<size_t>(m * n));     // (m, n)
  const Eigen::Map<const RowMatrix> A(a.data(), m, k);  // (m, k)
  Eigen::Map<RowMatrix> C(c.data(), m, n);              // (m, n)
  if (transpose_b) {
    C.noalias() = A * Eigen::Map<const RowMatrix>(b.data(), n, k).transpose();
  } else {
    C.noalias() = A * Eigen::Map<const RowMatrix>(b.data(), k, n);
  }
  if (bias != nullptr) C.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias, n);
  return c;
}

/// The same product by the named implementation: simd_gemm (the f32x4 kernel) or Eigen.
std::vector<float> product_by(ops::Kernel kernel, const std::vector<float>& a, const std::vector<float>& b, const float* bias, int64_t m, int64_t k, int64_t n, bool transpose_b) {
  return kernel == ops::Kernel::Simd ? run_gemm(a, b, bias, m, k, n, transpose_b) : eigen_product(a, b, bias, m, k, n, transpose_b);
}

/// The implementation the build's active one is compared with: never itself.
ops::Kernel other_than(ops::Kernel kernel) { return kernel == ops::Kernel::Simd ? ops::Kernel::Eigen : ops::Kernel::Simd; }

/// The build's active implementation and the other one, named in a failed check's report (INFO).
struct Kernels {
  ops::Kernel active = ops::active_kernel();
  ops::Kernel other = other_than(active);
};
std::ostream& operator<<(std::ostream& os, const Kernels& k) { return os << "active " << ops::kernel_name(k.active) << ", other " << ops::kernel_name(k.other); }

}  // namespace

TEST_SUITE("ops kernel") {
  TEST_CASE("gemm is bit-identical to the sequential scalar sum on every shape, with and without bias, b plain or transposed") {
    uint32_t seed = 1;
    int checked = 0;
    for (const int64_t m : kSizes)
      for (const int64_t k : kSizes)
        for (const int64_t n : kSizes) {
          // At most one axis of 769 keeps the suite fast; 769 still crosses every block edge.
          if ((m == 769) + (k == 769) + (n == 769) > 1) continue;
          // Each shape gets one of the four variants, in turn, so every variant meets every kind of edge.
          const bool with_bias = (checked % 2) == 1;
          const bool transpose_b = (checked / 2) % 2 == 1;
          CAPTURE(m);
          CAPTURE(k);
          CAPTURE(n);
          CAPTURE(with_bias);
          CAPTURE(transpose_b);
          const auto a = random_values(m * k, seed++);  // (m, k)
          const auto b = random_values(k * n, seed++);  // (k, n) or (n, k)
          const auto bias = random_values(n, seed++);   // (n)
          const float* bias_ptr = with_bias ? bias.data() : nullptr;
          CHECK(same_bits(run_gemm(a, b, bias_ptr, m, k, n, transpose_b), reference(a, b, bias_ptr, m, k, n, transpose_b)));
          ++checked;
        }
    CHECK(checked == 6 * 6 * 6 + 3 * 6 * 6);
  }

  TEST_CASE("gemm with one token (m = 1) and with head_dim 1 (k = 1) is bit-identical to the scalar sum") {
    for (const bool transpose_b : {false, true})
      for (const bool with_bias : {false, true}) {
        CAPTURE(transpose_b);
        CAPTURE(with_bias);
        const auto bias = random_values(768, 7);
        const float* bias_ptr = with_bias ? bias.data() : nullptr;
        const auto x = random_values(768, 8);        // (1, 768): num_tokens = 1
        const auto w = random_values(768 * 768, 9);  // (768, 768)
        CHECK(same_bits(run_gemm(x, w, bias_ptr, 1, 768, 768, transpose_b), reference(x, w, bias_ptr, 1, 768, 768, transpose_b)));
        const auto q = random_values(70, 10);   // (70, 1): head_dim = 1
        const auto kt = random_values(70, 11);  // (70, 1) keys, used transposed
        CHECK(same_bits(run_gemm(q, kt, nullptr, 70, 1, 70, true), reference(q, kt, nullptr, 70, 1, 70, true)));
      }
  }

  TEST_CASE("gemm with one row (the streaming path) is bit-identical to the scalar sum past every group of panels, at GPT-2's widths too") {
    // m = 1 runs groups of panels side by side, then single panels; n from 1 to 80 ends a group at every
    // point (full, one panel short, a partial panel); k = 1, 3, 64, 769. Tolerance: none (same bits).
    uint32_t seed = 300;
    int checked = 0;
    for (const int64_t k : {1, 3, 64, 769})
      for (int64_t n = 1; n <= 80; ++n) {
        const bool with_bias = (checked % 2) == 1;
        const bool transpose_b = (checked / 2) % 2 == 1;
        CAPTURE(k);
        CAPTURE(n);
        CAPTURE(with_bias);
        CAPTURE(transpose_b);
        const auto a = random_values(k, seed++);      // (1, k)
        const auto b = random_values(k * n, seed++);  // (k, n) or (n, k)
        const auto bias = random_values(n, seed++);   // (n)
        const float* bias_ptr = with_bias ? bias.data() : nullptr;
        std::vector<float> c(static_cast<size_t>(n + 4), 123.0f);  // (1, n) and 4 floats past it, untouched
        ops::simd_gemm(a.data(), 1, k, ops::pack_b(b.data(), k, n, transpose_b), bias_ptr, c.data());
        CHECK(std::vector<float>(c.begin() + n, c.end()) == std::vector<float>(4, 123.0f));
        c.resize(static_cast<size_t>(n));
        CHECK(same_bits(c, reference(a, b, bias_ptr, 1, k, n, transpose_b)));
        ++checked;
      }
    CHECK(checked == 4 * 80);
    // GPT-2 small's four weights (Conv1D (in, out)) and a logits chunk of wte rows (n, d), one token
    const std::pair<int64_t, int64_t> widths[] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
    for (const auto& [k, n] : widths) {
      CAPTURE(k);
      CAPTURE(n);
      const auto x = random_values(k, seed++);
      const auto w = random_values(k * n, seed++);
      const auto bias = random_values(n, seed++);
      CHECK(same_bits(run_gemm(x, w, bias.data(), 1, k, n, false), reference(x, w, bias.data(), 1, k, n, false)));
    }
    const auto x = random_values(768, seed++);
    const auto wte = random_values(1001 * 768, seed++);  // (1001, 768) rows of wte, used transposed
    CHECK(same_bits(run_gemm(x, wte, nullptr, 1, 768, 1001, true), reference(x, wte, nullptr, 1, 768, 1001, true)));
  }

  TEST_CASE("simd_vecmat (a query against unpacked keys or values) is bit-identical to the scalar sum and to simd_gemm on the packed b, through row strides") {
    // b (n, k) used transposed (keys: q @ k^T) or (k, n) (values: weights @ v), each row ldb floats apart
    // (a head's slice of a cache); n and k cross the 4-row and 8-row groups and the 4-term blocks.
    // Tolerance: none (same bits); the floats past each row of b are NaN, so reading them would show.
    uint32_t seed = 400;
    int checked = 0;
    for (const bool transpose_b : {true, false})
      for (const int64_t k : {1, 2, 3, 4, 5, 7, 8, 9, 64, 65})
        for (const int64_t n : {1, 3, 4, 5, 7, 8, 9, 12, 13, 17, 64, 96, 97}) {
          CAPTURE(transpose_b);
          CAPTURE(k);
          CAPTURE(n);
          const int64_t rows = transpose_b ? n : k, cols = transpose_b ? k : n, ldb = cols + 3;
          const auto a = random_values(k, seed++);
          const auto dense = random_values(rows * cols, seed++);  // (rows, cols)
          std::vector<float> strided(static_cast<size_t>(rows * ldb), std::numeric_limits<float>::quiet_NaN());
          for (int64_t r = 0; r < rows; ++r) std::copy(dense.begin() + r * cols, dense.begin() + (r + 1) * cols, strided.begin() + r * ldb);
          std::vector<float> c(static_cast<size_t>(n));
          ops::simd_vecmat(a.data(), k, strided.data(), n, ldb, transpose_b, c.data());
          CHECK(same_bits(c, reference(a, dense, nullptr, 1, k, n, transpose_b)));
          CHECK(same_bits(c, run_gemm(a, dense, nullptr, 1, k, n, transpose_b)));
          std::vector<float> dense_c(static_cast<size_t>(n));
          ops::simd_vecmat(a.data(), k, dense.data(), n, 0, transpose_b, dense_c.data());  // ldb 0: the row length
          CHECK(same_bits(dense_c, c));
          ++checked;
        }
    CHECK(checked == 2 * 10 * 13);
  }

  TEST_CASE("the build runs the kernel CMake asked for, and names it") {
    // ATTENTION_LAB_SIMD_KERNEL: on for WebAssembly and the sanitize preset, off for the native preset.
    CHECK(ops::active_kernel() == (ATTENTION_LAB_TEST_SIMD_KERNEL ? ops::Kernel::Simd : ops::Kernel::Eigen));
    CHECK(std::string(ops::kernel_name(ops::Kernel::Simd)) == "simd_gemm");
    CHECK(std::string(ops::kernel_name(ops::Kernel::Eigen)) == "Eigen");
    MESSAGE("ops::linear, ops::matmul and ops::gemm run " << std::string(ops::kernel_name(ops::active_kernel())) << " in this build");
  }

  TEST_CASE("ops::linear and ops::matmul are the active kernel to the bit, and agree with the other implementation within rounding") {
    // The active one (Eigen natively, simd_gemm under sanitize and in WebAssembly) against the other:
    // simd_gemm when the build runs Eigen, Eigen's product written in this file when it runs the kernel.
    const Kernels kernels;
    INFO(kernels);
    for (const int64_t m : {1, 6, 33})
      for (const int64_t k : {3, 64, 769})
        for (const int64_t n : {2, 17, 300}) {
          CAPTURE(m);
          CAPTURE(k);
          CAPTURE(n);
          const auto x = random_values(m * k, 20);                                                     // (m, k)
          const auto w = random_values(n * k, 21);                                                     // (n, k): an nn.Linear weight
          const auto bias = random_values(n, 22);                                                      // (n)
          std::vector<float> linear(static_cast<size_t>(m * n)), product(static_cast<size_t>(m * n));  // (m, n)
          ops::linear(x.data(), m, k, w.data(), bias.data(), n, linear.data());
          ops::matmul(x.data(), w.data(), m, k, n, true, product.data());
          // What ops:: ran is the implementation active_kernel names, to the bit.
          CHECK(same_bits(linear, product_by(kernels.active, x, w, bias.data(), m, k, n, true)));
          CHECK(same_bits(product, product_by(kernels.active, x, w, nullptr, m, k, n, true)));
          const auto other_linear = product_by(kernels.other, x, w, bias.data(), m, k, n, true);
          const auto other_product = product_by(kernels.other, x, w, nullptr, m, k, n, true);
          // Two float32 summation orders differ by rounding alone: about 6e-8 per term, growing like
          // sqrt(k) for terms of random sign; 1e-5 * (1 + |value|) * sqrt(k) leaves a wide margin.
          const double tol_scale = 1e-5 * std::sqrt(static_cast<double>(k));
          int64_t outside = 0;
          for (size_t i = 0; i < linear.size(); ++i) {
            outside += !(std::fabs(other_linear[i] - linear[i]) <= tol_scale * (1.0 + std::fabs(linear[i])));
            outside += !(std::fabs(other_product[i] - product[i]) <= tol_scale * (1.0 + std::fabs(product[i])));
          }
          CHECK(outside == 0);
        }
  }

  TEST_CASE("OutputLower computes the lower triangle of q @ k^T exactly as the full product") {
    for (const int64_t T : {1, 5, 17, 65, 130})
      for (const int64_t hd : {1, 3, 64}) {
        CAPTURE(T);
        CAPTURE(hd);
        const auto q = random_values(T * hd, 30);  // (T, hd)
        const auto k = random_values(T * hd, 31);  // (T, hd)
        const auto full = run_gemm(q, k, nullptr, T, hd, T, true);
        const auto lower = run_gemm(q, k, nullptr, T, hd, T, true, ops::Triangle::OutputLower);
        int64_t mismatches = 0;
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = 0; j <= i; ++j) mismatches += lower[static_cast<size_t>(i * T + j)] != full[static_cast<size_t>(i * T + j)];
        CHECK(mismatches == 0);
      }
  }

  TEST_CASE("ALower gives the full product of a lower-triangular a, with and without bias") {
    for (const int64_t T : {1, 5, 17, 65, 133})
      for (const int64_t n : {1, 5, 64, 65}) {
        CAPTURE(T);
        CAPTURE(n);
        auto w = random_values(T * T, 40);  // (T, T) weights, zero above the diagonal as after a causal softmax
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = i + 1; j < T; ++j) w[static_cast<size_t>(i * T + j)] = 0.0f;
        const auto v = random_values(T * n, 41);  // (T, n)
        const auto bias = random_values(n, 42);   // (n)
        for (const float* bias_ptr : {static_cast<const float*>(nullptr), bias.data()}) {
          const auto full = run_gemm(w, v, bias_ptr, T, T, n, false);
          const auto skipped = run_gemm(w, v, bias_ptr, T, T, n, false, ops::Triangle::ALower);
          CHECK(full == skipped);
          CHECK(same_bits(skipped, reference(w, v, bias_ptr, T, T, n, false)));
        }
      }
  }

  TEST_CASE("gemm reads and writes through row strides lda and ldc") {
    const int64_t m = 19, k = 37, n = 21, lda = 50, ldc = 30;
    const auto big_a = random_values(m * lda, 50);     // (m, lda): a is its first k columns
    const auto b = random_values(k * n, 51);           // (k, n)
    std::vector<float> a(static_cast<size_t>(m * k));  // (m, k)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk) a[static_cast<size_t>(i * k + kk)] = big_a[static_cast<size_t>(i * lda + kk)];
    std::vector<float> c(static_cast<size_t>(m * ldc), 123.0f);  // (m, ldc): columns past n untouched
    ops::simd_gemm(big_a.data(), m, k, ops::pack_b(b.data(), k, n, false), nullptr, c.data(), ops::Triangle::None, lda, ldc);
    const auto expected = reference(a, b, nullptr, m, k, n, false);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        const float want = j < n ? expected[static_cast<size_t>(i * n + j)] : 123.0f;
        mismatches += std::memcmp(&c[static_cast<size_t>(i * ldc + j)], &want, sizeof(float)) != 0;
      }
    CHECK(mismatches == 0);
  }

  TEST_CASE("pack_b_into reuses the capacity it already has and packs the same as pack_b") {
    const auto big = random_values(300 * 70, 60);  // (300, 70)
    ops::PackedMatrix packed = ops::pack_b(big.data(), 300, 70, false);
    const float* storage = packed.data.data();
    const size_t capacity = packed.data.capacity();
    const auto small = random_values(40 * 33, 61);  // (40, 33) as (n, k) = (40, 33), used transposed
    ops::pack_b_into(packed, small.data(), 33, 40, true);
    CHECK(packed.data.data() == storage);
    CHECK(packed.data.capacity() == capacity);
    CHECK(packed.k == 33);
    CHECK(packed.n == 40);
    CHECK(packed.data == ops::pack_b(small.data(), 33, 40, true).data);
  }

  TEST_CASE("gemm refuses a b packed for another k") {
    const auto b = random_values(4 * 3, 70);  // (4, 3)
    std::vector<float> a(10), c(6);           // a (2, 5), c (2, 3)
    CHECK_THROWS_AS(ops::gemm(a.data(), 2, 5, ops::pack_b(b.data(), 4, 3, false), nullptr, c.data()), std::invalid_argument);
  }

  TEST_CASE("a product over k = 0 is zero plus bias") {
    const float bias[3] = {1.5f, -2.0f, 0.25f};
    ops::PackedMatrix empty = ops::pack_b(nullptr, 0, 3, false);
    std::vector<float> c(6, 9.0f);  // (2, 3)
    ops::gemm(nullptr, 2, 0, empty, bias, c.data());
    CHECK(c == std::vector<float>{1.5f, -2.0f, 0.25f, 1.5f, -2.0f, 0.25f});
    ops::gemm(nullptr, 2, 0, empty, nullptr, c.data());
    CHECK(c == std::vector<float>(6, 0.0f));
  }
}

TEST_CASE("unpack_b gives back what pack_b packed, both layouts, and packed_floats is what pack_b allocates") {
  for (const int64_t k : {1, 3, 17}) {
    for (const int64_t n : {1, 5, 8, 9, 65}) {
      std::vector<float> b(static_cast<size_t>(k * n));
      for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) * 0.5f - 3.0f;
      for (const bool transpose_b : {false, true}) {
        const ops::PackedMatrix packed = ops::pack_b(b.data(), k, n, transpose_b);
        CHECK(static_cast<int64_t>(packed.data.size()) == ops::packed_floats(k, n));
        std::vector<float> back(b.size());
        ops::unpack_b(packed, back.data(), transpose_b);
        CHECK(back == b);
      }
    }
  }
}

TEST_CASE("ops::gemm (Eigen per packed panel, or simd_gemm, as the build names) agrees with the other implementation") {
  const Kernels kernels;
  INFO(kernels);
  const int64_t m = 19, k = 33, n = 21;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), bias(static_cast<size_t>(n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<float>(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(static_cast<float>(i) * 0.7f);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i);
  const ops::PackedMatrix packed = ops::pack_b(b.data(), k, n, false);
  std::vector<float> c1(static_cast<size_t>(m * n));
  ops::gemm(a.data(), m, k, packed, bias.data(), c1.data());
  // With the kernel active, ops::gemm is simd_gemm to the bit (Eigen's panels have no bit-level contract).
  if (kernels.active == ops::Kernel::Simd) CHECK(same_bits(c1, run_gemm(a, b, bias.data(), m, k, n, false)));
  const std::vector<float> c2 = product_by(kernels.other, a, b, bias.data(), m, k, n, false);  // (m, n)
  // Sums of 33 terms of size <= 1 in float32: Eigen's order differs from the sequential one by a few ulps.
  for (size_t i = 0; i < c1.size(); ++i) CHECK(std::fabs(c1[i] - c2[i]) <= 1e-5f * (1.0f + std::fabs(c2[i])));
}

TEST_CASE("ops::vecmat (Eigen or simd_vecmat, as the build names) is the active kernel and agrees with the other within rounding") {
  const ops::Kernel active = ops::active_kernel();
  const std::string active_name = ops::kernel_name(active);
  CAPTURE(active_name);
  const int64_t k = 64, n = 97, ldb_t = 70;
  std::vector<float> a(static_cast<size_t>(k)), keys(static_cast<size_t>(n * ldb_t)), values(static_cast<size_t>(k * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<float>(i));
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = std::cos(static_cast<float>(i) * 0.7f);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::cos(static_cast<float>(i) * 0.3f);
  for (const bool transpose_b : {true, false}) {
    CAPTURE(transpose_b);
    const float* b = transpose_b ? keys.data() : values.data();
    const int64_t ldb = transpose_b ? ldb_t : n;
    std::vector<float> ours(static_cast<size_t>(n)), simd(static_cast<size_t>(n)), dense(static_cast<size_t>(k * n));
    ops::vecmat(a.data(), k, b, n, ldb, transpose_b, ours.data());
    ops::simd_vecmat(a.data(), k, b, n, ldb, transpose_b, simd.data());
    if (active == ops::Kernel::Simd) CHECK(same_bits(ours, simd));
    for (int64_t r = 0; r < (transpose_b ? n : k); ++r)
      for (int64_t c = 0; c < (transpose_b ? k : n); ++c) dense[static_cast<size_t>(r * (transpose_b ? k : n) + c)] = b[r * ldb + c];
    const std::vector<float> eigen = eigen_product(a, dense, nullptr, 1, k, n, transpose_b);
    for (int64_t j = 0; j < n; ++j) CHECK(std::fabs(ours[static_cast<size_t>(j)] - eigen[static_cast<size_t>(j)]) <= 1e-5f * (1.0f + std::fabs(eigen[static_cast<size_t>(j)])));
    // Sums of 64 terms of size <= 1 in float32: Eigen's order differs from the sequential one by a few ulps.
    for (int64_t j = 0; j < n; ++j) CHECK(std::fabs(simd[static_cast<size_t>(j)] - eigen[static_cast<size_t>(j)]) <= 1e-5f * (1.0f + std::fabs(eigen[static_cast<size_t>(j)])));
  }
}
