// Operands read (or results written) through strides instead of as contiguous row-major tensors:
// a Transpose folded into a product, a broadcast operand. Shared by the products (matmul.cpp) and
// the fused attention (attention.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu::strided {

// How a matrix operand is laid out: element (r, c) of matrix z is at x_boff(z) + r * s_row + c * s_col.
struct Layout {
  bool strided = false;
  uint32_t s_row = 0, s_col = 0;  // strides of the matrix axes (A: m, k; B: k, n)
  std::vector<uint32_t> s_batch;  // per dim of the broadcast batch (0 where the operand broadcasts)
};

// v as a 32-bit GPU index, else unsupported (naming `what`).
uint32_t u32_dim(const GpuKernelContext& ctx, int64_t v, const char* what);

// The shape of X[perm] (a Transpose folded in); `s` itself for an empty perm. Unsupported for a perm
// that is not one of s's axes.
Shape permute_shape(const GpuKernelContext& ctx, const Shape& s, const std::vector<int64_t>& perm);

// The layout of X[perm] (X of shape x; an empty perm: X as it is) read in place: strides of its last
// two axes and of each dim of `batch`, the broadcast batch that X[perm]'s batch dims `op_batch`
// broadcast to.
Layout permuted(const GpuKernelContext& ctx, const Shape& x, const std::vector<int64_t>& perm, const Shape& op_batch,
                const Shape& batch);

// The layout that writes a result of shape `out` (= batch + [rows, cols]) where a Transpose `perm` of
// it puts each element (an empty perm: in place, row-major).
Layout written(const GpuKernelContext& ctx, const Shape& out, const std::vector<int64_t>& perm, const Shape& batch);

// The layout of a tensor of shape x broadcast (numpy rules) to `batch` + [rows, cols]: stride 0 along
// every axis where x has 1 or no dim.
Layout broadcast(const GpuKernelContext& ctx, const Shape& x, const Shape& batch);

// Declares bd<j> (the dims of `batch`) and, for each strided operand x, x_sr and x_sc (the strides of
// its matrix axes) and x_boff(z), the offset of its matrix z.
void declare(shader::Program& p, const Shape& batch, const std::vector<std::pair<std::string, const Layout*>>& layouts);

}  // namespace onnxgpu::webgpu::strided
