// WebAssembly benchmark of the f32x4 gemm kernel (ops::gemm) against the measured f32x4 peak of the
// same engine, and against Eigen's product on the same shapes. Built by the wasm preset as
// attention_kernel_bench; bench/kernel.mjs runs it in Node and prints the JSON.
// Exports one plain C function (no embind, no <emscripten/...>): kernel_bench_json(quick) returns a
// JSON string in the module's memory (read it with UTF8ToString).
#include <wasm_simd128.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "attention_lab/ops.hpp"

namespace {

using namespace attention_lab;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Best time of `repeat` runs of fn, each run at least min_seconds (fn repeated inside a run).
template <class F>
double best_seconds(F&& fn, int repeat, double min_seconds) {
  fn();  // warm-up (and V8's tier-up)
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    int calls = 0;
    const auto t0 = Clock::now();
    double t = 0.0;
    do {
      fn();
      ++calls;
      t = seconds_since(t0);
    } while (t < min_seconds);
    best = std::min(best, t / calls);
  }
  return best;
}

volatile float g_sink = 0.0f;  // keeps results alive

/// f32x4 peak, loop shape 1: 12 independent chains x = x * m + c (one mul and one add per step, 8 flop),
/// enough to cover the mul + add latency; 12 accumulators + 2 constants fit V8's 15 free xmm registers.
__attribute__((noinline)) float peak_chains(int64_t steps, float seed) {
  const v128_t m = wasm_f32x4_splat(0.999999f), c = wasm_f32x4_splat(1e-6f);
  v128_t x[12];
  for (int i = 0; i < 12; ++i) x[i] = wasm_f32x4_splat(seed + static_cast<float>(i));
  for (int64_t s = 0; s < steps; ++s)
    for (int i = 0; i < 12; ++i) x[i] = wasm_f32x4_add(wasm_f32x4_mul(x[i], m), c);
  v128_t sum = x[0];
  for (int i = 1; i < 12; ++i) sum = wasm_f32x4_add(sum, x[i]);
  return wasm_f32x4_extract_lane(sum, 0);
}

/// f32x4 peak, loop shape 2: 6 independent mul chains beside 6 independent add chains (6 mul + 6 add
/// per step, 48 flop): the two kinds need not wait for each other, which measures a little higher on
/// CPUs whose adder has a shorter latency than the multiplier.
__attribute__((noinline)) float peak_split(int64_t steps, float seed) {
  const v128_t m = wasm_f32x4_splat(0.9999999f), c = wasm_f32x4_splat(1e-7f);
  v128_t x[6], y[6];
  for (int i = 0; i < 6; ++i) x[i] = wasm_f32x4_splat(seed + static_cast<float>(i));
  for (int i = 0; i < 6; ++i) y[i] = wasm_f32x4_splat(seed - static_cast<float>(i));
  for (int64_t s = 0; s < steps; ++s) {
    for (int i = 0; i < 6; ++i) x[i] = wasm_f32x4_mul(x[i], m);
    for (int i = 0; i < 6; ++i) y[i] = wasm_f32x4_add(y[i], c);
  }
  v128_t sum = x[0];
  for (int i = 1; i < 6; ++i) sum = wasm_f32x4_add(sum, x[i]);
  for (int i = 0; i < 6; ++i) sum = wasm_f32x4_add(sum, y[i]);
  return wasm_f32x4_extract_lane(sum, 0);
}

std::vector<float> random_values(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = dist(rng);
  return v;
}

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Shape {
  const char* name;
  int64_t m, k, n;
  ops::Triangle tri;
  bool transpose_b;  // b given as (n, k): a weight (out, in) or keys
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

extern "C" __attribute__((used, visibility("default"))) const char* kernel_bench_json(int quick) {
  static std::string json;  // the returned text lives until the next call
  const int repeat = quick ? 2 : 5;
  const double min_seconds = quick ? 0.05 : 0.2;

  // The peak is the best of both loop shapes (8 flop per mul + add pair), each the best of `repeat` runs.
  const int64_t steps = 1'000'000;
  const double chains_s = best_seconds([&] { g_sink = peak_chains(steps, g_sink); }, repeat, min_seconds);
  const double split_s = best_seconds([&] { g_sink = peak_split(steps, g_sink); }, repeat, min_seconds);
  const double peak_chains_gflops = 12.0 * 8.0 * static_cast<double>(steps) / chains_s * 1e-9;
  const double peak_split_gflops = 6.0 * 8.0 * static_cast<double>(steps) / split_s * 1e-9;
  const double peak = std::max(peak_chains_gflops, peak_split_gflops);

  const Shape shapes[] = {
      {"linear 1024x768x768", 1024, 768, 768, ops::Triangle::None, true},
      {"linear 6x768x768", 6, 768, 768, ops::Triangle::None, true},
      {"linear 64x768x768", 64, 768, 768, ops::Triangle::None, true},
      {"linear 256x768x768", 256, 768, 768, ops::Triangle::None, true},
      {"scores 1024x64x1024 OutputLower", 1024, 64, 1024, ops::Triangle::OutputLower, true},
      {"context 1024x1024x64 ALower", 1024, 1024, 64, ops::Triangle::ALower, false},
  };
  json = "{\"peakGflops\": " + fmt("%.3f", peak) + ", \"peakChainsGflops\": " + fmt("%.3f", peak_chains_gflops) + ", \"peakSplitGflops\": " + fmt("%.3f", peak_split_gflops) +
         ", \"gemm\": [";
  bool first = true;
  for (const Shape& s : shapes) {
    auto a = random_values(s.m * s.k, 1);  // (m, k)
    if (s.tri == ops::Triangle::ALower)
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = i + 1; j < s.k; ++j) a[static_cast<size_t>(i * s.k + j)] = 0.0f;
    const auto b = random_values(s.k * s.n, 2);  // (k, n) or (n, k)
    const auto bias = random_values(s.n, 3);     // (n)
    const float* bias_ptr = s.tri == ops::Triangle::None ? bias.data() : nullptr;
    std::vector<float> c(static_cast<size_t>(s.m * s.n));  // (m, n)
    const ops::PackedMatrix packed = ops::pack_b(b.data(), s.k, s.n, s.transpose_b);
    const double kernel_s = best_seconds(
        [&] {
          ops::gemm(a.data(), s.m, s.k, packed, bias_ptr, c.data(), s.tri);
          g_sink = c[0];
        },
        repeat, min_seconds);
    const double pack_s = best_seconds(
        [&] {
          const auto p = ops::pack_b(b.data(), s.k, s.n, s.transpose_b);
          g_sink = p.data[0];
        },
        repeat, min_seconds / 4);

    // Eigen computes the full product (it has no triangle option).
    Eigen::Map<const RowMatrix> A(a.data(), s.m, s.k);
    Eigen::Map<RowMatrix> C(c.data(), s.m, s.n);
    const double eigen_s = best_seconds(
        [&] {
          if (s.transpose_b)
            C.noalias() = A * Eigen::Map<const RowMatrix>(b.data(), s.n, s.k).transpose();
          else
            C.noalias() = A * Eigen::Map<const RowMatrix>(b.data(), s.k, s.n);
          g_sink = c[0];
        },
        quick ? 1 : 3, min_seconds);

    const double full_flop = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n);
    // The triangles do about half: only j <= i (scores), only kk <= i (context).
    const double tri_rows = static_cast<double>(s.m) * static_cast<double>(s.m + 1) / 2.0;
    const double needed_flop = s.tri == ops::Triangle::OutputLower ? 2.0 * tri_rows * static_cast<double>(s.k)
                               : s.tri == ops::Triangle::ALower    ? 2.0 * tri_rows * static_cast<double>(s.n)
                                                                   : full_flop;
    const double gflops = needed_flop / kernel_s * 1e-9;
    json += std::string(first ? "" : ", ") + "{\"shape\": \"" + s.name + "\", \"m\": " + std::to_string(s.m) + ", \"k\": " + std::to_string(s.k) +
            ", \"n\": " + std::to_string(s.n) + ", \"ms\": " + fmt("%.3f", kernel_s * 1e3) + ", \"gflops\": " + fmt("%.3f", gflops) +
            ", \"percentOfPeak\": " + fmt("%.1f", 100.0 * gflops / peak) + ", \"packMs\": " + fmt("%.3f", pack_s * 1e3) + ", \"eigenMs\": " + fmt("%.3f", eigen_s * 1e3) +
            ", \"eigenGflops\": " + fmt("%.3f", full_flop / eigen_s * 1e-9) + ", \"speedupVsEigen\": " + fmt("%.2f", eigen_s / kernel_s) + "}";
    first = false;
  }
  json += "]}";
  return json.c_str();
}

namespace {

/// The sum of n floats (n a multiple of 32) with 8 f32x4 accumulators: one pass that only reads, the
/// fastest WebAssembly can stream memory (the add chains are short of the load rate).
__attribute__((noinline)) float stream_sum(const float* x, int64_t n) {
  v128_t acc[8];
  for (auto& a : acc) a = wasm_f32x4_splat(0.0f);
  for (const float* const end = x + n; x != end; x += 32)
    for (int r = 0; r < 8; ++r) acc[r] = wasm_f32x4_add(acc[r], wasm_v128_load(x + 4 * r));
  for (int r = 1; r < 8; ++r) acc[0] = wasm_f32x4_add(acc[0], acc[r]);
  return wasm_f32x4_extract_lane(acc[0], 0);
}

/// The same sum over 4 quarters of x read side by side (4 streams, as one-row gemm reads 4 panels): some
/// machines stream faster from several places at once than from one.
__attribute__((noinline)) float stream_sum4(const float* x, int64_t n) {
  const int64_t q = n / 4;
  v128_t acc[8];
  for (auto& a : acc) a = wasm_f32x4_splat(0.0f);
  for (const float *p = x, *const end = x + q; p != end; p += 8)
    for (int s = 0; s < 4; ++s) {
      acc[2 * s] = wasm_f32x4_add(acc[2 * s], wasm_v128_load(p + s * q));
      acc[2 * s + 1] = wasm_f32x4_add(acc[2 * s + 1], wasm_v128_load(p + s * q + 4));
    }
  for (int r = 1; r < 8; ++r) acc[0] = wasm_f32x4_add(acc[0], acc[r]);
  return wasm_f32x4_extract_lane(acc[0], 0);
}

}  // namespace

/// For bench/generate.mjs: the streaming bandwidth of WebAssembly here (a read-only f32x4 sum over 256
/// MiB, 8x the L3 of common CPUs, read as one stream and as 4; streamGBps is the faster) and ops::gemm with one row (a decoded token) on GPT-2 small's weights
/// and on a wte-sized matrix (154 MB: larger than any cache), as GB/s of packed weights read. JSON {streamGBps, gemv: [...]}.
extern "C" __attribute__((used, visibility("default"))) const char* decode_bench_json(int quick) {
  static std::string json;
  const int repeat = quick ? 3 : 7;
  const int64_t n = (quick ? 64 : 256) * 1048576 / 4;  // floats
  std::vector<float> big(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) big[static_cast<size_t>(i)] = static_cast<float>(i & 1023) * 1e-3f;  // touches every page
  const double stream_s = best_seconds([&] { g_sink = stream_sum(big.data(), n); }, repeat, 0.0);
  const double stream4_s = best_seconds([&] { g_sink = stream_sum4(big.data(), n); }, repeat, 0.0);
  const double stream_gbps = static_cast<double>(n) * 4.0 / stream_s * 1e-9, stream4_gbps = static_cast<double>(n) * 4.0 / stream4_s * 1e-9;
  big = {};
  big.shrink_to_fit();
  json = "{\"streamBytes\": " + std::to_string(n * 4) + ", \"streamGBps\": " + fmt("%.3f", std::max(stream_gbps, stream4_gbps)) + ", \"stream1GBps\": " + fmt("%.3f", stream_gbps) +
         ", \"stream4GBps\": " + fmt("%.3f", stream4_gbps) + ", \"gemv\": [";
  struct GemvShape {
    const char* name;
    int64_t k, n;
  };
  const GemvShape shapes[] = {{"c_attn 768x2304", 768, 2304}, {"c_fc 768x3072", 768, 3072}, {"mlp c_proj 3072x768", 3072, 768}, {"wte 768x50257", 768, 50257}};
  bool first = true;
  for (const GemvShape& g : shapes) {
    const auto w = random_values(g.k * g.n, 5);
    const ops::PackedMatrix packed = ops::pack_b(w.data(), g.k, g.n, false);
    const auto x = random_values(g.k, 6);
    std::vector<float> c(static_cast<size_t>(g.n));
    const double s = best_seconds(
        [&] {
          ops::gemm(x.data(), 1, g.k, packed, nullptr, c.data());
          g_sink = c[0];
        },
        repeat, quick ? 0.02 : 0.1);
    const double bytes = static_cast<double>(packed.data.size()) * 4.0;
    json += std::string(first ? "" : ", ") + "{\"shape\": \"" + g.name + "\", \"k\": " + std::to_string(g.k) + ", \"n\": " + std::to_string(g.n) +
            ", \"ms\": " + fmt("%.3f", s * 1e3) + ", \"GBps\": " + fmt("%.3f", bytes / s * 1e-9) + "}";
    first = false;
  }
  json += "]}";
  return json.c_str();
}

int main() { return 0; }
