// ONNX Reduce* ops, the part both kernel sets share: which dims a node reduces. Axes come from the
// attribute before `input_since` (13 for ReduceSum, 18 for the others) and from input 1 after; empty
// axes reduce every dim unless noop_with_empty_axes. Used by the CPU reference (src/cpu/reduce.cpp)
// and the GPU kernel (src/webgpu/kernels/reduce.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

// The mask of reduced dims of an input of rank `rank`. `axes_input()` reads input 1 (null when the
// node has none); it is called only when the opset takes the axes from the input.
std::vector<bool> reduced_dims(const ir::Node& node, int64_t opset, int64_t rank, int64_t input_since,
                               const std::function<const Tensor*()>& axes_input, const Fail& fail);

}  // namespace onnxgpu::ops
