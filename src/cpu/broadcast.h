// Multidirectional (numpy-style) broadcasting, shared by every CPU kernel that broadcasts.
#pragma once
#include <string>
#include <vector>

#include "onnxgpu/tensor.h"

namespace onnxgpu::cpu {

// The broadcast of shapes a and b; throws InvalidArgument naming both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
Shape broadcast_shapes(const std::vector<Shape>& shapes);

// For every element of `out` (row-major), the linear index of the element of an input of shape `in`
// that broadcasts to it. `in` must broadcast to `out`.
std::vector<int64_t> broadcast_index_map(const Shape& in, const Shape& out);

// Element strides of `in` seen through `out` (rank of out; 0 on broadcast dimensions).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

}  // namespace onnxgpu::cpu
