// ONNX broadcasting of two-input elementwise ops, the part both kernel sets share: before opset 7 the
// arithmetic, logic and comparison ops broadcast B to A only when the attribute broadcast=1, aligning
// B at `axis` of A (default: trailing alignment). Used by the CPU reference (src/cpu/binary.cpp) and
// the GPU kernels (src/webgpu/kernels/elementwise.cpp).
#pragma once
#include <cstdint>

#include "ir/graph.h"
#include "ops/fail.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu::ops {

// B's shape aligned so that numpy broadcasting gives the node's result (B's own shape from opset 7 on,
// where broadcasting is numpy's, and for ops that never had the attribute). Fails when the opset's
// rules reject the shapes.
Shape legacy_broadcast_b(const ir::Node& node, int64_t opset, const Shape& a, const Shape& b, const Fail& fail);

}  // namespace onnxgpu::ops
