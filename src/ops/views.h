// Reshape, Flatten, Squeeze and Unsqueeze, the part both kernel sets share: the output shape (the
// data is unchanged, so both kernels only see the input's bytes anew). An input whose value the op
// reads (Reshape's shape from opset 5, the axes of Squeeze and Unsqueeze from opset 13) comes through
// `ints_input`, called only when the opset reads it from an input.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

using IntsInput = std::function<std::vector<int64_t>()>;

// Axes in [-rank, rank - 1], made non-negative; a repeated axis fails.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const Fail& fail);

Shape reshape_output(const ir::Node& node, int64_t opset, const Shape& in, const IntsInput& shape_input,
                     const Fail& fail);
Shape flatten_output(const ir::Node& node, const Shape& in, const Fail& fail);
// `has_axes_input`: Squeeze (opset 13) was given input 1. No axes, or empty ones, squeeze every
// size-1 axis (as ONNX Runtime does).
Shape squeeze_output(const ir::Node& node, int64_t opset, const Shape& in, bool has_axes_input,
                     const IntsInput& axes_input, const Fail& fail);
Shape unsqueeze_output(const ir::Node& node, int64_t opset, const Shape& in, const IntsInput& axes_input,
                       const Fail& fail);

}  // namespace onnxgpu::ops
