// Reshape, Flatten, Squeeze and Unsqueeze, the part both kernel sets share: the output shape (the
// data is unchanged, so both kernels only see the input's bytes anew). An input whose value the op
// reads (Reshape's shape from opset 5, the axes of Squeeze and Unsqueeze from opset 13) comes through
// `ints_input`, called only when the opset reads it from an input. And Dropout's mode: whether it is
// the identity.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/tensor.h"
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

// Dropout: whether it trains (opset < 7: attribute is_test 0; from opset 12: input 2, a bool scalar) and
// its ratio (an attribute before opset 12, input 1 from it: a float scalar; default 0.5). Inputs 1 and 2
// (when given) come through `scalar_input`, called only where the opset reads them. A Dropout that does
// not train, or trains with ratio 0 (torchvision's attention dropout, exported in training mode), is the
// identity, its mask all ones. A training ratio outside [0, 1) fails.
struct DropoutMode {
  bool training = false;
  double ratio = 0.5;
  bool identity() const { return !training || ratio == 0; }
};
using ScalarInput = std::function<const Tensor&(size_t index, const char* name)>;
DropoutMode dropout_mode(const ir::Node& node, int64_t opset, bool has_ratio, bool has_training,
                         const ScalarInput& scalar_input, const Fail& fail);
// The mask's element type: bool from opset 10, the data's type before.
inline DType dropout_mask_dtype(int64_t opset, DType data) { return opset >= 10 ? DType::Bool : data; }

}  // namespace onnxgpu::ops
