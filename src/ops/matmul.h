// MatMul and Gemm, the part both kernel sets share: the shapes of the product. MatMul follows numpy:
// a 1-D A gets a 1 prepended and a 1-D B a 1 appended (each removed from the output again), and the
// batch dims broadcast. Gemm multiplies op(A) op(B), op transposing per transA / transB, and C, when
// given, must broadcast to the output [M, N].
#pragma once
#include <cstdint>

#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

struct MatMulShape {
  int64_t M = 1, K = 1, N = 1;
  Shape a_batch, b_batch;  // the operands' batch dims (after promotion)
  Shape batch;             // broadcast
  Shape out;
};
MatMulShape matmul_shape(const Shape& a, const Shape& b, const Fail& fail);

struct GemmShape {
  bool trans_a = false, trans_b = false;
  int64_t M = 1, K = 1, N = 1;
  Shape out;  // [M, N]
};
// `c`: C's shape, or null without C.
GemmShape gemm_shape(const ir::Node& node, const Shape& a, const Shape& b, const Shape* c, const Fail& fail);

}  // namespace onnxgpu::ops
