// Shared by the GPU indexing and generator kernels: index wrapping in WGSL, exact element moves and
// short descriptions of plan-time values for error messages.
#pragma once
#include <string>

#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

// WGSL: `wrap_index(k, n)` maps an index k (any integer type, as a w64 from to_i64_$idx) onto an axis of
// size n. Negative indices count from the end, once; any index outside [-n, n-1] is flagged FLAG_INDEX
// and gives kBadIndex, which is never a valid index (every dimension is below 2^32).
inline const char* kWrapIndex = R"(
const BAD_INDEX: u32 = 0xffffffffu;
fn wrap_index(k: w64, n: u32) -> u32 {
  var v = k;
  if (w64_is_neg(v)) { v = w64_add(v, w64(n, 0u)); }
  if (w64_is_neg(v) || v.y != 0u || v.x >= n) { flag(FLAG_INDEX); return BAD_INDEX; }
  return v.x;
}
)";

// A WGSL statement that copies element `si` of tensor `src` to element `di` of tensor `dst` (both of
// dtype t) bit for bit. The accessors round-trip every dtype exactly except float64, which they compute
// in f32: a float64 element is moved as its two 32-bit words instead.
inline std::string move_element(DType t, const std::string& dst, const std::string& di, const std::string& src,
                                const std::string& si) {
  if (t == DType::Float64) return dst + "_buf[" + di + "] = " + src + "_buf[" + si + "];";
  return dst + "_store(" + di + ", " + src + "_load(" + si + "));";
}

// "float32[2,3]" for input i, as the CPU kernels' Tensor::describe() writes it.
inline std::string describe_input(const GpuKernelContext& ctx, size_t i) {
  return std::string(dtype_name(ctx.dtype(i))) + shape_str(ctx.shape(i));
}

}  // namespace onnxgpu::webgpu
