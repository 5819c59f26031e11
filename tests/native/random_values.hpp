// Seeded test inputs for the product tests (ops_kernel_test, thread_pool_test).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

/// `count` floats uniform in [-1, 1) from std::mt19937(seed): the same values on every run and build.
inline std::vector<float> random_values(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = dist(rng);
  return v;
}
