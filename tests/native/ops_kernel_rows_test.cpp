// The f32x4 row kernels beside the product kernel (ops_kernel_rows.cpp): softmax's exps and division.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attention_lab/ops.hpp"

using namespace attention_lab;

TEST_CASE("simd_exp_sum is within 2 ulp of std::exp, gives exactly 0 for -inf, and handles every tail length") {
  for (const int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 33}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = -0.37f * static_cast<float>(i * i) + 1.5f;
    if (n > 2) x[1] = -std::numeric_limits<float>::infinity();  // a masked key
    const float shift = 1.5f;                                   // the row max
    std::vector<float> got = x;
    const float sum = ops::simd_exp_sum(got.data(), n, shift);
    float want_sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      const float want = std::exp(x[static_cast<size_t>(i)] - shift);
      want_sum += got[static_cast<size_t>(i)];
      // Highway documents 1 ULP for Exp; allow 2 (float32 ulp of the value, or the smallest normal near 0).
      const float ulp = std::max(std::nextafter(want, std::numeric_limits<float>::infinity()) - want, std::numeric_limits<float>::min());
      CHECK_MESSAGE(std::fabs(got[static_cast<size_t>(i)] - want) <= 2 * ulp, "n=" << n << " i=" << i);
    }
    if (n > 2) CHECK(got[1] == 0.0f);
    CHECK(sum == want_sum);  // the sum is taken in index order
  }
}

TEST_CASE(
    "simd_divide_max divides with the scalar division's bits and returns the largest quotient (NaN when any is), at every tail length, with -inf, -0 and +inf; a row with a NaN "
    "has a softmax of NaN") {
  const float inf = std::numeric_limits<float>::infinity();
  for (const int64_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 33}) {
    for (const int special : {0, 1, 2, 3}) {  // none, -inf and -0 (every key but one masked), +inf, NaN
      CAPTURE(n);
      CAPTURE(special);
      std::vector<float> x(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 0.731f * static_cast<float>((i * 7) % 11) - 3.1f;
      if (special == 1)
        for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = i == n / 2 ? -0.0f : -inf;
      if (special == 2 && n > 0) x[static_cast<size_t>(n - 1)] = inf;  // in the tail when n is not a multiple of 4
      if (special == 3 && n > 0) x[static_cast<size_t>(n / 3)] = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> got = x;
      const float max = ops::simd_divide_max(got.data(), n, 8.0f);
      float want_max = -inf;  // of the quotients that are not NaN
      bool nan = false;
      for (int64_t i = 0; i < n; ++i) {
        const float q = x[static_cast<size_t>(i)] / 8.0f;
        CHECK(std::memcmp(&got[static_cast<size_t>(i)], &q, sizeof q) == 0);
        nan = nan || std::isnan(q);
        if (!std::isnan(q)) want_max = std::max(want_max, q);
      }
      if (nan)
        CHECK(std::isnan(max));
      else
        CHECK(max == want_max);
      if (n == 0) CHECK(max == -inf);
      if (nan) {  // either way the row's softmax is NaN throughout, as PyTorch's
        std::vector<float> row = x;
        ops::scaled_softmax_rows(row.data(), 1, n, 8.0f, false);
        CHECK(std::all_of(row.begin(), row.end(), [](float v) { return std::isnan(v); }));
      }
    }
  }
}
