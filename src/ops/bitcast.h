// BitCast (opset 26): the rule the CPU reference (src/cpu/cast.cpp) and the GPU kernel
// (src/webgpu/kernels/elementwise.cpp) share: the target type from attribute 'to', which must have the
// input's element size (the bits are reinterpreted element by element; the shape is kept).
#pragma once
#include <string>

#include "ir/graph.h"
#include "onnxgpu/dtype.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

inline DType bitcast_target(const ir::Node& n, DType from, const Fail& fail) {
  if (!n.has_attr("to")) raise(fail, "attribute 'to' is required");
  DType to = DType(int32_t(n.attr_int("to", 0)));
  if (!kAllTypes.has(to)) raise(fail, "attribute 'to' (" + std::to_string(n.attr_int("to", 0)) + ") is not a numeric or bool type");
  if (!kAllTypes.has(from)) raise(fail, "input 'input' has type " + std::string(dtype_name(from)) + ", which BitCast does not take");
  if (dtype_size(to) != dtype_size(from))
    raise(fail, "attribute 'to' is " + std::string(dtype_name(to)) + " (" + std::to_string(dtype_size(to)) +
                    " bytes), but input 'input' is " + std::string(dtype_name(from)) + " (" +
                    std::to_string(dtype_size(from)) + " bytes): BitCast needs types of one size");
  return to;
}

}  // namespace onnxgpu::ops
