// ConstantOfShape, EyeLike and OneHot, the part both kernel sets share: attribute and input checks
// and output shapes. (Range: ops/range.h.)
#pragma once
#include <cstdint>

#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

// ConstantOfShape: the output shape from input 0's values (no negative dim) and the fill value
// (attribute 'value', one element; float32 0 by default).
Shape constant_of_shape_dims(const std::vector<int64_t>& dims, const Fail& fail);
Tensor constant_of_shape_value(const ir::Node& node, const Fail& fail);

// EyeLike: X must be 2-D; the output dtype is attribute 'dtype' or X's.
DType eye_like_dtype(const ir::Node& node, DType x_dtype, const Shape& x, const Fail& fail);

// OneHot's inputs: numeric indices and depth, a one-element depth, values [off_value, on_value].
void check_one_hot_inputs(DType indices, DType depth, const Shape& depth_shape, const Shape& values, const Fail& fail);
// The depth value from its tensor (a float depth is truncated).
int64_t one_hot_depth(const Tensor& depth, const Fail& fail);
struct OneHotShape {
  int64_t axis = 0, inner = 1;  // the new axis; elements of the index tensor after it
  Shape out;
};
OneHotShape one_hot_shape(const ir::Node& node, const Shape& indices, int64_t depth, const Fail& fail);

}  // namespace onnxgpu::ops
