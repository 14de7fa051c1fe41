// Shared by the GPU indexing and generator kernels: index wrapping in WGSL, exact element moves and
// short descriptions of plan-time values for error messages.
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

// A WGSL statement that copies element `si` of tensor `src` to element `di` of output `dst` (both of
// dtype t) bit for bit, whatever the dtype: the raw storage word(s) for 32- and 64-bit elements, the
// raw bits for 8- and 16-bit ones (the value accessors would compute float64 in f32 and could
// canonicalise NaN payloads or flush float16 subnormals).
inline std::string move_element(const Int64Policy& policy, DType t, const std::string& dst, const std::string& di,
                                const std::string& src, const std::string& si) {
  int bits = shader::type_info(t, policy).storage_bits;
  if (bits >= 32) return dst + "_buf[" + di + "] = " + src + "_buf[" + si + "];";
  std::string per = std::to_string(32 / bits) + "u", mask = bits == 8 ? "0xffu" : "0xffffu";
  return "{ let mv_d = " + di + "; let mv_v = " + src + "_bits(" + si + "); let mv_sh = (mv_d % " + per + ") * " +
         std::to_string(bits) + "u; atomicAnd(&" + dst + "_buf[mv_d / " + per + "], ~(" + mask +
         " << mv_sh)); atomicOr(&" + dst + "_buf[mv_d / " + per + "], mv_v << mv_sh); }";
}

// "float32[2,3]" for input i, as the CPU kernels' Tensor::describe() writes it.
inline std::string describe_input(const GpuKernelContext& ctx, size_t i) {
  return std::string(dtype_name(ctx.dtype(i))) + shape_str(ctx.shape(i));
}

}  // namespace onnxgpu::webgpu
