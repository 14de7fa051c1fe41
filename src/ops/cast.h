// Cast and CastLike: the rule the CPU reference (src/cpu/cast.cpp) and the GPU kernel
// (src/webgpu/kernels/elementwise.cpp) share for the narrow types' targets: attribute `saturate`
// (opset 19: float8 values past the largest finite one become it, else infinity or NaN) and `round_mode`
// (Cast-24, float8e8m0 targets: "up", the default, "down" or "nearest").
#pragma once
#include <string>

#include "core/narrow_float.h"
#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

inline NarrowConversion cast_conversion(const ir::Node& n, const Fail& fail) {
  NarrowConversion c;
  c.saturate = n.attr_int("saturate", 1) != 0;
  if (const ir::Attribute* a = n.attr("round_mode"); a && a->s != "up") {
    if (a->s == "down") c.rounding = E8M0Rounding::Down;
    else if (a->s == "nearest") c.rounding = E8M0Rounding::Nearest;
    else raise(fail, "attribute 'round_mode' is \"" + a->s + "\", expected \"up\", \"down\" or \"nearest\"");
  }
  return c;
}

}  // namespace onnxgpu::ops
