// Softmax, LogSoftmax and Hardmax, the part both kernel sets share: which elements form one row.
// Before opset 13 the input is coerced to 2-D at `axis` (default 1) and each row of that matrix is a
// row; from opset 13 a row is the line along the single dimension `axis` (default -1). A scalar is a
// 1-element vector. Opset 1 had no range check: axis == rank coerces to [N, 1] (each element alone).
#pragma once
#include "ir/graph.h"
#include "ops/axis.h"

namespace onnxgpu::ops {

inline AxisSplit softmax_rows(const ir::Node& node, int64_t opset, const Shape& input_shape, const Fail& fail) {
  bool legacy = opset < 13;
  int64_t axis = node.attr_int("axis", legacy ? 1 : -1);
  Shape shape = input_shape.empty() ? Shape{1} : input_shape;
  int64_t rank = int64_t(shape.size());
  if (!(opset < 11 && axis == rank)) axis = normalize_axis(axis, rank, fail);
  return legacy ? coerce_2d(shape, axis) : split_at_axis(shape, axis);
}

}  // namespace onnxgpu::ops
