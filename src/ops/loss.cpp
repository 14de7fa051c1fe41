#include "ops/loss.h"

#include <string>

namespace onnxgpu::ops {

LossShape loss_shape(const ir::Node& node, const Shape& x, const char* what, const Fail& fail) {
  if (x.size() < 2)
    raise(fail, "input 0 ('" + node.inputs.at(0) + "', " + what + ") must have shape [N, C, ...], got " + shape_str(x));
  LossShape s;
  s.n = x[0];
  s.c = x[1];
  for (size_t i = 2; i < x.size(); ++i) s.d *= x[i];
  return s;
}

LossTerms loss_terms(const ir::Node& node, DType x_dtype, const Shape& x, DType target_dtype, const Shape& target,
                     DType weight_dtype, const Shape& weight, const Fail& fail) {
  auto name = [&](size_t i) { return i < node.inputs.size() ? node.inputs[i] : std::string(); };
  if (target_dtype != DType::Int32 && target_dtype != DType::Int64)
    raise(fail, "input 1 ('" + name(1) + "', target) must be int32 or int64, got " + std::string(dtype_name(target_dtype)) +
                    shape_str(target));
  Shape want{x[0]};
  for (size_t i = 2; i < x.size(); ++i) want.push_back(x[i]);
  if (target != want)
    raise(fail, "input 1 ('" + name(1) + "', target) must have shape " + shape_str(want) + " for input 0 " +
                    std::string(dtype_name(x_dtype)) + shape_str(x) + ", got " + shape_str(target));
  if (weight_dtype != DType::Undefined && (weight_dtype != x_dtype || weight != Shape{x[1]}))
    raise(fail, "input 2 ('" + name(2) + "', weight) must be " + std::string(dtype_name(x_dtype)) + "[" +
                    std::to_string(x[1]) + "], got " + std::string(dtype_name(weight_dtype)) + shape_str(weight));
  LossTerms t;
  std::string reduction = node.attr_string("reduction", "mean");
  if (reduction == "none") t.reduction = LossReduction::None;
  else if (reduction == "sum") t.reduction = LossReduction::Sum;
  else if (reduction == "mean") t.reduction = LossReduction::Mean;
  else raise(fail, "attribute 'reduction' must be 'none', 'sum' or 'mean', got '" + reduction + "'");
  if (node.has_attr("ignore_index")) t.ignore_index = node.attr_int("ignore_index", 0);
  return t;
}

}  // namespace onnxgpu::ops
