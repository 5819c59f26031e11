// The f32x4 kernels over rows of values beside the product kernel (ops_kernel.cpp), with the same
// Highway static target: softmax's exps and division (simd_exp_sum, simd_divide_max; see ops.hpp for
// their contracts) and the one-pass summaries of a stage's values (summarize_values, SummaryStream).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "attention_lab/ops.hpp"
#include "hwy/contrib/math/math-inl.h"
#include "simd_f32x4.hpp"

namespace attention_lab::ops {

using namespace simd;

float simd_exp_sum(float* x, int64_t n, float shift) {
  // Highway's Exp: at most 1 ULP from e^x, exactly 0 below -104 (so exp(-inf) is 0, as std::exp).
  const D d;
  const V s = hn::Set(d, shift);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) hn::StoreU(hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), s)), d, x + i);
  if (i < n) {  // the last partial vector through a local copy: no load or store past n
    alignas(16) float tail[4] = {shift, shift, shift, shift};
    std::memcpy(tail, x + i, sizeof(float) * static_cast<size_t>(n - i));
    hn::Store(hn::Exp(d, hn::Sub(hn::Load(d, tail), s)), d, tail);
    std::memcpy(x + i, tail, sizeof(float) * static_cast<size_t>(n - i));
  }
  float sum = 0.0f;  // in index order, as the scalar softmax sums
  for (int64_t c = 0; c < n; ++c) sum += x[c];
  return sum;
}

float simd_divide_max(float* x, int64_t n, float divisor) {
  const D d;
  const V q = hn::Set(d, divisor);
  V hi = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto nan = hn::MaskFromVec(hn::Zero(d));  // a lane saw a NaN (f32x4 max keeps it on some targets only)
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const V v = hn::Div(hn::LoadU(d, x + i), q);
    hn::StoreU(v, d, x + i);
    hi = hn::Max(hi, v);
    nan = hn::Or(nan, hn::Ne(v, v));
  }
  float best = hn::GetLane(hn::MaxOfLanes(d, hi));
  bool any_nan = !hn::AllFalse(d, nan);
  for (; i < n; ++i) {
    x[i] = x[i] / divisor;
    any_nan = any_nan || std::isnan(x[i]);
    best = std::max(best, x[i]);
  }
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : best;
}

ValueSummary summarize_values(const float* x, int64_t n) {
  SummaryStream stream;
  stream.add(x, n);
  return stream.finish();
}

SummaryStream::SummaryStream(float fill) : fill_(fill) {
  for (int l = 0; l < 4; ++l) {
    lo_[l] = std::numeric_limits<float>::infinity();
    hi_[l] = -std::numeric_limits<float>::infinity();
    block_[l] = 0.0f;
    finite_[l] = neg_inf_[l] = zeros_[l] = masked_[l] = 0;
  }
}

void SummaryStream::add(const float* x, int64_t n) {
  // f32x4 lanes with masks instead of branches (masked scores make the branches unpredictable); the
  // sum goes through float lanes for 4096 values at a time, then into a double. Lanes count from the
  // stream's first value: a piece that ends mid-vector leaves its last values in carry_.
  const D d;
  const hn::RebindToSigned<D> di;
  const V inf = hn::Set(d, std::numeric_limits<float>::infinity());
  const V neg_inf = hn::Neg(inf);
  const V zero = hn::Zero(d);
  const V fill = hn::Set(d, fill_);
  V lo = hn::Load(d, lo_), hi = hn::Load(d, hi_), block = hn::Load(d, block_);
  auto finite = hn::Load(di, finite_), neg_infs = hn::Load(di, neg_inf_), zeros = hn::Load(di, zeros_);  // per-lane counts (each mask lane is -1)
  auto masked = hn::Load(di, masked_);
  int64_t in_block = in_block_;
  double sum = sum_;
  const auto step = [&](const V v) {
    const auto is_finite = hn::Eq(hn::Sub(v, v), zero);  // inf - inf and NaN - NaN are NaN
    const auto is_masked = hn::Eq(v, fill);
    const auto counted = hn::AndNot(is_masked, is_finite);  // a finite fill (finfo.min) stays out of min, max and sum
    lo = hn::Min(lo, hn::IfThenElse(counted, v, inf));
    hi = hn::Max(hi, hn::IfThenElse(counted, v, neg_inf));
    block = hn::Add(block, hn::IfThenElseZero(counted, v));
    finite = hn::Sub(finite, hn::BitCast(di, hn::VecFromMask(d, is_finite)));
    neg_infs = hn::Sub(neg_infs, hn::BitCast(di, hn::VecFromMask(d, hn::Eq(v, neg_inf))));
    masked = hn::Sub(masked, hn::BitCast(di, hn::VecFromMask(d, is_masked)));
    zeros = hn::Sub(zeros, hn::BitCast(di, hn::VecFromMask(d, hn::Eq(v, zero))));
  };
  // After 4096 values, a partial sum: the block's lanes into the double, in lane order.
  const auto flush = [&]() {
    alignas(16) float lanes[4];
    hn::Store(block, d, lanes);
    for (int l = 0; l < kLanes; ++l) sum += lanes[l];
    block = zero;
    in_block = 0;
  };
  int64_t i = 0;
  if (carried_ > 0) {  // complete the vector the last piece began
    while (carried_ < kLanes && i < n) carry_[carried_++] = x[i++];
    if (carried_ < kLanes) return;  // (the state vectors were not changed)
    step(hn::LoadU(d, carry_));
    in_block += kLanes;
    if (in_block == 4096) flush();
    carried_ = 0;
  }
  // Whole vectors up to the next partial sum at a time: the inner loop has no test but its own end
  // (the same steps in the same order as one test per vector; ~1.5x faster in V8).
  while (i + kLanes <= n) {
    const int64_t run = std::min<int64_t>(4096 - in_block, (n - i) / kLanes * kLanes);
    const float* p = x + i;
    for (int64_t j = 0; j < run; j += kLanes) step(hn::LoadU(d, p + j));
    i += run;
    in_block += run;
    if (in_block == 4096) flush();
  }
  for (; i < n; ++i) carry_[carried_++] = x[i];
  in_block_ = in_block;
  sum_ = sum;
  hn::Store(lo, d, lo_);
  hn::Store(hi, d, hi_);
  hn::Store(block, d, block_);
  hn::Store(finite, di, finite_);
  hn::Store(neg_infs, di, neg_inf_);
  hn::Store(zeros, di, zeros_);
  hn::Store(masked, di, masked_);
}

ValueSummary SummaryStream::finish() const {
  ValueSummary s;
  double sum = sum_;
  if (in_block_ > 0)
    for (int l = 0; l < kLanes; ++l) sum += block_[l];
  for (int l = 0; l < kLanes; ++l) {
    s.finite += finite_[l];
    s.neg_inf += neg_inf_[l];
    s.zeros += zeros_[l];
    s.masked += masked_[l];
  }
  float min = *std::min_element(lo_, lo_ + kLanes);
  float max = *std::max_element(hi_, hi_ + kLanes);
  for (int c = 0; c < carried_; ++c) {  // the last few values, one at a time
    const float v = carry_[c];
    if (v == -std::numeric_limits<float>::infinity()) ++s.neg_inf;
    s.masked += v == fill_;
    if (!std::isfinite(v)) continue;
    ++s.finite;
    s.zeros += v == 0.0f;
    if (v == fill_) continue;
    min = std::min(min, v);
    max = std::max(max, v);
    sum += v;
  }
  s.min = min;
  s.max = max;
  s.sum = sum;
  s.counted = s.finite - (std::isfinite(fill_) ? s.masked : 0);
  return s;
}

}  // namespace attention_lab::ops
