// The f32x4 vector of the core's Highway code (ops_kernel.cpp, ops_kernel_rows.cpp), on Highway's
// static target: WASM SIMD128 in the WebAssembly build, whatever the -m flags give natively (Debian's
// GCC 12.2 without -m flags gets HWY_SCALAR, one lane).
#pragma once

#include "hwy/highway.h"

namespace attention_lab::ops::simd {

namespace hn = hwy::HWY_NAMESPACE;
using D = hn::CappedTag<float, 4>;  // f32x4 (one lane on HWY_SCALAR)
using V = hn::Vec<D>;
constexpr int kLanes = static_cast<int>(hn::MaxLanes(D()));  // 4 (1 on HWY_SCALAR)

}  // namespace attention_lab::ops::simd
