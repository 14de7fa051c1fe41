// Shared by the GPU indexing and generator kernels: index wrapping in WGSL and short descriptions of
// plan-time values for error messages. (Exact element moves: shader::move_element.)
#pragma once
#include <string>

#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

// WGSL: `wrap_index(k, n)` maps an index k (any integer type, as a w64 from to_i64_$idx) onto an axis of
// size n. Negative indices count from the end, once; any index outside [-n, n-1] is flagged FLAG_INDEX
// (the index kept for the error message) and gives kBadIndex, which is never a valid index (every dimension is below 2^32).
inline const char* kWrapIndex = R"(
const BAD_INDEX: u32 = 0xffffffffu;
fn wrap_index(k: w64, n: u32) -> u32 {
  var v = k;
  if (w64_is_neg(v)) { v = w64_add(v, w64(n, 0u)); }
  if (w64_is_neg(v) || v.y != 0u || v.x >= n) { flag_index(k); return BAD_INDEX; }
  return v.x;
}
)";

// "float32[2,3]" for input i, as the CPU kernels' Tensor::describe() writes it.
inline std::string describe_input(const GpuKernelContext& ctx, size_t i) {
  return std::string(dtype_name(ctx.dtype(i))) + shape_str(ctx.shape(i));
}

}  // namespace onnxgpu::webgpu
