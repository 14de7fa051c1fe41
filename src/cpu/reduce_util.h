// Helpers shared by the reduction-like CPU kernels (reduce, softmax, sort, cumsum, loss).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "cpu/kernel.h"
#include "ops/axis.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu::cpu {

// The [outer, n, inner] view of a shape around one axis (src/ops/axis.h).
using ops::AxisSplit;
using ops::coerce_2d;
using ops::split_at_axis;

// Element -> double (float16/bfloat16 through float).
template <class T>
inline double to_double(T v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else if constexpr (is_float_v<T>) return double(float(v));
  else return double(v);
}

// double -> element (float16/bfloat16 through float; integers truncate like a C cast, saturating
// instead of UB when out of range or NaN).
template <class T>
inline T from_double(double v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else if constexpr (is_float_v<T>) return T(float(v));
  else if constexpr (std::is_same_v<T, bool>) return v != 0;
  else {
    if (std::isnan(v)) return T(0);
    constexpr double lo = double(std::numeric_limits<T>::min());
    constexpr double hi = double(std::numeric_limits<T>::max());
    if (v <= lo) return std::numeric_limits<T>::min();
    if (v >= hi) return std::numeric_limits<T>::max();
    return T(v);
  }
}

template <class T>
inline bool is_nan_value(T v) {
  if constexpr (is_float_v<T>) return std::isnan(to_double(v));
  else return false;
}

// A scalar integer input (axis of CumSum, K of TopK): one element, int32 or int64.
inline int64_t scalar_int_input(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    ctx.fail("input " + std::to_string(i) + " ('" + ctx.input_name(i) + "', " + what + ") must be int32 or int64, got " +
             t.describe());
  if (t.numel() != 1 || t.rank() > 1)
    ctx.fail("input " + std::to_string(i) + " ('" + ctx.input_name(i) + "', " + what +
             ") must be a scalar or a 1-element 1-D tensor, got " + t.describe());
  return t.int_at(0);
}

}  // namespace onnxgpu::cpu
