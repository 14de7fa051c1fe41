// CumSum and CumProd (opset 26): running sums / products along the axis given as input 1, optionally
// exclusive (the first output is the identity) and/or reversed. Floats accumulate in double (each output
// rounded once); integers wrap modulo 2^64, so int64 is exact.
#include <string>
#include <vector>

#include "cpu/kernel.h"
#include "cpu/reduce_util.h"

namespace onnxgpu::cpu {
namespace {

const DTypeSet kCumSumTypes =
    kFloatTypes | DTypeSet{DType::Int32, DType::UInt32, DType::Int64, DType::UInt64};

std::vector<Tensor> cumulate(KernelContext& ctx, bool product) {
  const Tensor& x = ctx.input(0);
  if (!kCumSumTypes.has(x.dtype()))
    ctx.fail("input 0 ('" + ctx.input_name(0) + "') has unsupported element type " + std::string(dtype_name(x.dtype())));
  if (x.rank() == 0) ctx.fail("input 0 ('" + ctx.input_name(0) + "') must have rank >= 1, got a scalar");
  int64_t axis = ctx.normalize_axis(scalar_int_input(ctx, 1, "axis"), x.rank());
  bool exclusive = ctx.node.attr_int("exclusive", 0) != 0;
  bool reverse = ctx.node.attr_int("reverse", 0) != 0;
  AxisSplit s = split_at_axis(x.shape(), axis);
  Tensor out(x.dtype(), x.shape());
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* xd = x.data<T>();
    T* od = out.data<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t k = 0; k < s.inner; ++k) {
        double facc = product ? 1 : 0;
        uint64_t iacc = product ? 1 : 0;
        for (int64_t step = 0; step < s.n; ++step) {
          int64_t i = reverse ? s.n - 1 - step : step;
          int64_t at = s.at(o, i, k);
          T v = xd[at];
          if constexpr (is_float_v<T>) {
            if (exclusive) od[at] = from_double<T>(facc);
            facc = product ? facc * to_double(v) : facc + to_double(v);
            if (!exclusive) od[at] = from_double<T>(facc);
          } else {
            if (exclusive) od[at] = static_cast<T>(iacc);
            iacc = product ? iacc * static_cast<uint64_t>(v) : iacc + static_cast<uint64_t>(v);
            if (!exclusive) od[at] = static_cast<T>(iacc);
          }
        }
      }
  }, kCumSumTypes, product ? "CumProd" : "CumSum");
  return {out};
}

}  // namespace

void register_cumsum(KernelRegistry& r) {
  r.add("CumSum", [](KernelContext& ctx) { return cumulate(ctx, false); });
  r.add("CumProd", [](KernelContext& ctx) { return cumulate(ctx, true); });
}

}  // namespace onnxgpu::cpu
