#include "runtime/compare.h"

#include <cmath>
#include <sstream>

namespace onnxgpu::runtime {

CompareResult compare_tensors(const Tensor& got, const Tensor& want, Tolerance tol) {
  CompareResult r;
  if (got.dtype() != want.dtype()) {
    r.passed = false;
    r.message = "dtype " + std::string(dtype_name(got.dtype())) + ", expected " + std::string(dtype_name(want.dtype()));
    return r;
  }
  if (got.shape() != want.shape()) {
    r.passed = false;
    r.message = "shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape());
    return r;
  }
  if (got.dtype() == DType::String) {
    for (int64_t i = 0; i < got.numel(); ++i)
      if (got.string_data()[i] != want.string_data()[i]) {
        r.passed = false;
        r.message = "element " + std::to_string(i) + ": got '" + got.string_data()[i] + "', expected '" +
                    want.string_data()[i] + "'";
        return r;
      }
    return r;
  }
  if (dtype_is_narrow(got.dtype())) {  // exact, as the type's values (every NaN pattern alike)
    const uint8_t* a = static_cast<const uint8_t*>(got.raw());
    const uint8_t* b = static_cast<const uint8_t*>(want.raw());
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double x = narrow_to_double(got.dtype(), a[i]), y = narrow_to_double(got.dtype(), b[i]);
      if ((std::isnan(x) && std::isnan(y)) || (x == y && std::signbit(x) == std::signbit(y))) continue;
      r.passed = false;
      r.max_abs_diff = INFINITY;
      std::ostringstream os;
      os << "element " << i << ": got " << x << ", expected " << y;
      r.message = os.str();
      return r;
    }
    return r;
  }
  int64_t first_bad = -1;
  visit_dtype(got.dtype(), [&]<class T>() {
    const T* a = got.data<T>();
    const T* b = want.data<T>();
    for (int64_t i = 0; i < got.numel(); ++i) {
      bool ok;
      double diff;
      if constexpr (is_float_v<T>) {
        double x = double(a[i]), y = double(b[i]);
        if (std::isnan(x) || std::isnan(y)) {
          ok = std::isnan(x) && std::isnan(y);
          diff = ok ? 0 : INFINITY;
        } else if (std::isinf(x) || std::isinf(y)) {
          ok = x == y;
          diff = ok ? 0 : INFINITY;
        } else {
          diff = std::fabs(x - y);
          ok = diff <= tol.atol + tol.rtol * std::fabs(y);
        }
      } else {
        ok = a[i] == b[i];
        diff = ok ? 0 : std::fabs(double(a[i]) - double(b[i]));
      }
      r.max_abs_diff = std::max(r.max_abs_diff, diff);
      if (!ok && first_bad < 0) {
        first_bad = i;
        std::ostringstream os;
        os.precision(17);
        if constexpr (is_float_v<T>) os << "element " << i << ": got " << double(a[i]) << ", expected " << double(b[i]);
        else if constexpr (std::is_same_v<T, bool> || sizeof(T) == 1) os << "element " << i << ": got " << int(a[i]) << ", expected " << int(b[i]);
        else os << "element " << i << ": got " << a[i] << ", expected " << b[i];
        r.message = os.str();
      }
    }
  });
  r.passed = first_bad < 0;
  return r;
}

}  // namespace onnxgpu::runtime
