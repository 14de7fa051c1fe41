// Helpers shared by the elementwise families (unary.cpp, binary.cpp, cast.cpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "onnxgpu/dtype.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu::cpu::ew {

// The type arithmetic on T is done in: float for the 16-bit float types, T itself otherwise.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

template <class T>
constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Two's complement wrap-around arithmetic for integers (no signed overflow UB).
template <class T>
T wrap_add(T a, T b) { return T(uint64_t(a) + uint64_t(b)); }
template <class T>
T wrap_sub(T a, T b) { return T(uint64_t(a) - uint64_t(b)); }
template <class T>
T wrap_mul(T a, T b) { return T(uint64_t(a) * uint64_t(b)); }
template <class T>
T wrap_neg(T a) { return T(uint64_t(0) - uint64_t(a)); }

// Float -> integer conversion that truncates toward zero and is defined for every input (Cast's rule,
// ops/cast.h, which the GPU's casts follow): NaN gives 0, values within int64 wrap to narrower types,
// values beyond int64 saturate (a narrower type: its largest value above, 0 below).
template <class T>
T float_to_int(double v) {
  static_assert(is_int_v<T>);
  if (std::isnan(v)) return T(0);
  v = std::trunc(v);
  if constexpr (std::is_same_v<T, uint64_t>) {
    if (v >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
    if (v >= 9223372036854775808.0) return uint64_t(v);
  }
  if (v >= 9223372036854775808.0) return std::is_same_v<T, int64_t> ? T(std::numeric_limits<int64_t>::max()) : T(std::numeric_limits<T>::max());
  if (v < -9223372036854775808.0) return std::is_same_v<T, int64_t> ? T(std::numeric_limits<int64_t>::min()) : T(0);
  return T(int64_t(v));
}

// double -> float rounded to odd (truncate, then set the last bit when inexact). Rounding that float
// to a 16-bit float type then gives the correctly rounded result (no double-rounding error).
inline float double_to_float_odd(double d) {
  float f = float(d);
  if (std::isnan(d) || std::isinf(f) || double(f) == d) return f;
  if (std::fabs(double(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u |= 1u;
  std::memcpy(&f, &u, 4);
  return f;
}

// Converts a value of type S to D the way ONNX Cast does (float->int truncates, ->bool is != 0).
template <class D, class S>
D convert(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (std::is_same_v<D, bool>) {
    if constexpr (is_float_v<S>) return acc_t<S>(s) != acc_t<S>(0);
    else return s != S(0);
  } else if constexpr (is_int_v<D> && is_float_v<S>) {
    return float_to_int<D>(double(acc_t<S>(s)));
  } else if constexpr (std::is_same_v<D, Float16> || std::is_same_v<D, BFloat16>) {
    if constexpr (std::is_same_v<S, float> || std::is_same_v<S, Float16> || std::is_same_v<S, BFloat16> ||
                  std::is_same_v<S, bool>)
      return D(float(s));
    else
      return D(double_to_float_odd(double(s)));
  } else if constexpr (is_float_v<S>) {
    return D(acc_t<S>(s));
  } else {
    return D(s);  // integer/bool -> integer/float: C++ conversion (modular for integers, C++20)
  }
}

// Like visit_dtype, but instantiates f only for the types in Allowed (so f's body need only compile for
// those) and requires f to return a Tensor. Other types throw an error naming `where`.
template <DTypeSet Allowed, class F>
Tensor visit_only(DType t, F&& f, std::string_view where) {
  return visit_dtype(t, [&]<class T>() -> Tensor {
    if constexpr (Allowed.has(dtype_of<T>())) return f.template operator()<T>();
    else throw_unsupported_dtype(t, where);
  }, Allowed, where);
}

// Applies f (called with acc_t<T> values) to every element of x; the output has type O.
template <class T, class O, class F>
Tensor map_elements(const Tensor& x, F&& f) {
  Tensor y(dtype_of<O>(), x.shape());
  const T* in = x.data<T>();
  O* out = y.data<O>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) out[i] = O(f(acc_t<T>(in[i])));
  return y;
}

}  // namespace onnxgpu::cpu::ew
