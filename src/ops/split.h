// ONNX Split, the part every user of the op shares: the size of each output along the split axis,
// from the 'split' attribute (before opset 13), the 'split' input (opset 13+), num_outputs (opset 18+)
// or equal parts, checked against the input. Used by the CPU reference (src/cpu/layout.cpp), the GPU
// kernel (src/webgpu/kernels/layout.cpp) and the fusion pass that writes a product straight into the
// parts (src/runtime/fusion.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

// The sizes of the node's `outputs` parts of an axis of size `dim` (`x` describes the input in
// messages). `input_sizes()` reads the 'split' input: called only where the opset takes it from an
// input and `has_input` says it is there; an empty list means equal parts.
std::vector<int64_t> split_sizes(const ir::Node& node, int64_t opset, int64_t axis, int64_t dim, const std::string& x,
                                 size_t outputs, bool has_input,
                                 const std::function<std::vector<int64_t>()>& input_sizes, const Fail& fail);

}  // namespace onnxgpu::ops
