// The native GEMM reference for PyTorch's baseline check (npm run bench, issue 21.1): the single-thread
// (1024 x 768) @ (768 x 768) float32 product with Eigen 3.4, built with -O3 -march=native (AVX-512 on
// these machines), best of --reps. A PyTorch torch.mm figure below 60% of this one means a degraded
// BLAS kernel (or a busy machine), and bench/baseline.mjs reports the ratio to PyTorch as invalid.
//
//   attention_lab_gemm_reference [--reps 10]
//       prints {"engine": "eigen-native", "m": 1024, "k": 768, "n": 768, "gflops": ..., "simd": "...",
//               "samples_ms": [...]}
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// The SIMD the compiler targeted here (Eigen 3.4 reports AVX2 + FMA as "AVX").
constexpr const char* kSimd =
#if defined(__AVX512F__)
    "AVX-512F + FMA";
#elif defined(__AVX2__) && defined(__FMA__)
    "AVX2 + FMA";
#elif defined(__AVX__)
    "AVX";
#else
    "SSE2";
#endif

int main(int argc, char** argv) {
  int reps = 10;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  constexpr int m = 1024, k = 768, n = 768;
  Matrix a = Matrix::Random(m, k), b = Matrix::Random(k, n), c(m, n);
  c.noalias() = a * b;  // warm-up: page in, pack
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    c.noalias() = a * b;
    samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const double best = *std::min_element(samples.begin(), samples.end());
  std::printf("{\"engine\": \"eigen-native\", \"m\": %d, \"k\": %d, \"n\": %d, \"gflops\": %.2f, \"simd\": \"%s\", \"checksum\": %.6g, \"samples_ms\": [", m, k, n,
              2.0 * m * k * n / (best * 1e6), kSimd, static_cast<double>(c.sum()));
  for (size_t i = 0; i < samples.size(); ++i) std::printf("%s%.3f", i ? ", " : "", samples[i]);
  std::printf("]}\n");
  return 0;
}
