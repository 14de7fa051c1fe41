// ScatterElements and ScatterND, the part both kernel sets share: attribute 'reduction' (opset 16,
// max and min from 18; the deprecated Scatter has none).
#pragma once
#include <string>

#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

enum class ScatterReduction { None, Add, Mul, Max, Min };

inline ScatterReduction scatter_reduction(const ir::Node& node, int64_t opset, const Fail& fail) {
  if (node.op_type == "Scatter" || opset < 16) return ScatterReduction::None;
  std::string r = node.attr_string("reduction", "none");
  if (r == "none") return ScatterReduction::None;
  if (r == "add") return ScatterReduction::Add;
  if (r == "mul") return ScatterReduction::Mul;
  if (r == "max" && opset >= 18) return ScatterReduction::Max;
  if (r == "min" && opset >= 18) return ScatterReduction::Min;
  raise(fail, "reduction '" + r + "' is not supported at opset " + std::to_string(opset));
}

}  // namespace onnxgpu::ops
