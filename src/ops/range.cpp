#include "ops/range.h"

#include <cmath>
#include <string>

namespace onnxgpu::ops {

int64_t range_count(const Tensor& s, const Tensor& l, const Tensor& d, const Fail& fail) {
  for (const Tensor* t : {&s, &l, &d}) {
    if (t->numel() != 1) raise(fail, "start, limit and delta must be scalars, got " + t->describe());
    if (t->dtype() != s.dtype())
      raise(fail, "start, limit and delta must have one type, got " + s.describe() + ", " + l.describe() + ", " +
                      d.describe());
  }
  const DTypeSet allowed{DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int16, DType::Int32, DType::Int64};
  if (!allowed.has(s.dtype())) raise(fail, "type " + std::string(dtype_name(s.dtype())) + " is not supported by Range");
  if (dtype_is_float(s.dtype())) {
    double ds = s.double_at(0), dl = l.double_at(0), dd = d.double_at(0);
    if (dd == 0) raise(fail, "delta must not be 0");
    double c = std::ceil((dl - ds) / dd);
    if (!std::isfinite(c)) raise(fail, "the element count of the range is not finite");
    if (c <= 0) return 0;
    if (c > double(int64_t(1) << 40)) raise(fail, "the range is too large");
    return int64_t(c);
  }
  __int128 start = s.int_at(0), limit = l.int_at(0), delta = d.int_at(0);
  if (delta == 0) raise(fail, "delta must not be 0");
  __int128 diff = limit - start, c = 0;
  if (delta > 0 && diff > 0) c = (diff + delta - 1) / delta;
  if (delta < 0 && diff < 0) c = (-diff - delta - 1) / -delta;
  return int64_t(c);
}

}  // namespace onnxgpu::ops
