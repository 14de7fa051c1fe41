// Broadcasting, the rules every kernel that broadcasts shares (the CPU reference's and the GPU's):
// multidirectional (numpy-style) broadcasting, and that of the two-input elementwise ops before opset
// 7, which broadcast B to A only when the attribute broadcast=1, aligning B at `axis` of A (default:
// trailing alignment).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu::ops {

// The broadcast of shapes a and b; throws InvalidArgument naming both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
Shape broadcast_shapes(const std::vector<Shape>& shapes);

// For every element of `out` (row-major), the linear index of the element of an input of shape `in`
// that broadcasts to it. `in` must broadcast to `out`.
std::vector<int64_t> broadcast_index_map(const Shape& in, const Shape& out);

// Element strides of `in` seen through `out` (rank of out; 0 on broadcast dimensions).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// B's shape aligned so that numpy broadcasting gives the node's result (B's own shape from opset 7 on,
// where broadcasting is numpy's, and for ops that never had the attribute). Fails when the opset's
// rules reject the shapes.
Shape legacy_broadcast_b(const ir::Node& node, int64_t opset, const Shape& a, const Shape& b, const Fail& fail);

}  // namespace onnxgpu::ops
