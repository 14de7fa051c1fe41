// ONNX Slice, the part both kernel sets share (src/ops/: the shape and attribute logic of an op,
// independent of where it runs): its parameters checked against the input's shape, and the range each
// sliced axis takes. The CPU reference (src/cpu/layout.cpp) and the GPU kernel
// (src/webgpu/kernels/layout.cpp) read the parameters from their own inputs, then call plan_slice.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu::ops {

struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;  // steps empty: all 1
  bool have_axes = false;                          // axes empty without it: 0, 1, ...
};

// A Slice node's parameters: attributes before opset 10, inputs 1-4 (starts, ends, axes, steps) after;
// `given(i)` tells whether input i is there and `ints(i, name)` reads it as integers.
SliceParams slice_params(const ir::Node& node, int64_t opset, const std::function<bool(size_t)>& given,
                         const std::function<std::vector<int64_t>(size_t, const char*)>& ints, const Fail& fail);

// One sliced axis: the first element taken, how many, and the step between them.
struct SlicedAxis {
  size_t axis = 0;
  int64_t start = 0, count = 0, step = 1;
};

// The range of one axis of size `dim` (ONNX Slice-10+ clamping; the INT64_MAX / INT64_MIN sentinels
// included). `step` != 0.
SlicedAxis slice_range(int64_t dim, int64_t start, int64_t end, int64_t step);

// Checks the parameters against the input shape `x` (lengths, axes in range and not repeated, no zero
// step) and returns the sliced axes. `fail` receives the message of the first problem (it must throw).
std::vector<SlicedAxis> plan_slice(const Shape& x, SliceParams p, const Fail& fail);

}  // namespace onnxgpu::ops
