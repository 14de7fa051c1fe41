// Shared by the GPU indexing and generator kernels: index wrapping in WGSL and short descriptions of
// plan-time values for error messages. (Exact element moves: shader::move_element.)
#pragma once
#include <string>

#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

// WGSL: `wrap_index(k, n)` maps an index k (any integer type, as a w64 from to_i64_$idx) onto an axis of
// size n as the shader layer's w64_wrap_index does (negative indices count from the end, once); an index
// outside [-n, n-1] is also flagged FLAG_INDEX (the index kept for the error message) and gives
// BAD_INDEX, which is never a valid index (every dimension is below 2^32).
inline const char* kWrapIndex = R"(
const BAD_INDEX: u32 = INDEX_NONE;
fn wrap_index(k: w64, n: u32) -> u32 {
  let v = w64_wrap_index(k, n);
  if (v == BAD_INDEX) { flag_index(k); }
  return v;
}
)";

// "float32[2,3]" for input i, as the CPU kernels' Tensor::describe() writes it.
inline std::string describe_input(const GpuKernelContext& ctx, size_t i) {
  return std::string(dtype_name(ctx.dtype(i))) + shape_str(ctx.shape(i));
}

}  // namespace onnxgpu::webgpu
