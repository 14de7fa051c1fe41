// Numeric values as doubles and back, the conversions the shared op logic and both kernel sets use
// (Resize scales and roi, extrapolation values, the CPU reference's double arithmetic).
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "onnxgpu/tensor.h"

namespace onnxgpu::ops {

// All elements of a numeric tensor as double (exact for every type but 64-bit integers beyond 2^53).
inline std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  visit_dtype(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(p[i]);
  }, kAllTypes, "to_doubles");
  return v;
}

// Converts a double to T: floats round (via float for the 16-bit types), integers round to nearest and
// saturate, bool is != 0.
template <class T>
T from_double(double d) {
  if constexpr (std::is_same_v<T, bool>) {
    return d != 0;
  } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(d));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(d);
  } else {
    if (std::isnan(d)) return T(0);
    d = std::nearbyint(d);
    if (d <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(d);
  }
}

// A tensor of dtype `dt` and shape `s` from doubles (see from_double).
inline Tensor tensor_from_doubles(DType dt, const Shape& s, const std::vector<double>& v) {
  Tensor t(dt, s);
  visit_dtype(dt, [&]<class T>() {
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = from_double<T>(v[i]);
  }, kNumericTypes | DTypeSet{DType::Bool}, "tensor_from_doubles");
  return t;
}

}  // namespace onnxgpu::ops
