// Einsum, the part both kernel sets share (the CPU reference src/cpu/matmul.cpp, the GPU kernel
// src/webgpu/kernels/matmul.cpp): the equation parsed (letters a-z / A-Z, one ellipsis per term,
// implicit output: the ellipsis dims, then the letters that appear once, uppercase first) and checked
// against the inputs' shapes (size-1 dims broadcast), turned into a loop plan: every output element
// sums, over the summed labels' index space, the product of one element per input, which input i finds
// at offset sum_k out_index[k] * out_strides[i][k] + sum_k sum_index[k] * sum_strides[i][k] (a label
// repeated in a term adds its strides: diagonals; a broadcast size-1 dim has stride 0).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "onnxgpu/tensor.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

struct EinsumPlan {
  Shape out_shape, sum_shape;
  std::vector<std::vector<int64_t>> out_strides, sum_strides;  // per input
};

EinsumPlan einsum_plan(const std::string& equation, const std::vector<Shape>& inputs, const Fail& fail);

}  // namespace onnxgpu::ops
