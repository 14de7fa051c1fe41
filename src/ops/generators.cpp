#include "ops/generators.h"

#include <string>

namespace onnxgpu::ops {

Shape constant_of_shape_dims(const std::vector<int64_t>& dims, const Fail& fail) {
  for (int64_t d : dims)
    if (d < 0) raise(fail, "shape " + shape_str(dims) + " has a negative dimension");
  return Shape(dims);
}

Tensor constant_of_shape_value(const ir::Node& node, const Fail& fail) {
  const Tensor* v = node.attr_tensor("value");
  if (!v) return Tensor::from_vector<float>({1}, {0.0f});
  if (v->numel() != 1) raise(fail, "attribute 'value' must hold exactly one element, got " + v->describe());
  return *v;
}

DType eye_like_dtype(const ir::Node& node, DType x_dtype, const Shape& x, const Fail& fail) {
  if (x.size() != 2) raise(fail, "input must be 2-D, got " + std::string(dtype_name(x_dtype)) + shape_str(x));
  DType dt = node.has_attr("dtype") ? DType(node.attr_int("dtype", 0)) : x_dtype;
  if (!kAllTypes.has(dt)) raise(fail, "dtype " + std::to_string(int(dt)) + " is not supported");
  return dt;
}

void check_one_hot_inputs(DType indices, DType depth, const Shape& depth_shape, const Shape& values, const Fail& fail) {
  if (!kNumericTypes.has(indices))
    raise(fail, "indices and depth must be numeric, got indices of " + std::string(dtype_name(indices)));
  if (!kNumericTypes.has(depth)) raise(fail, "indices and depth must be numeric, got depth of " + std::string(dtype_name(depth)));
  if (shape_numel(depth_shape) != 1 || depth_shape.size() > 1)
    raise(fail, "depth must be a scalar or a 1-element 1-D tensor, got " + shape_str(depth_shape));
  if (shape_numel(values) != 2 || values.size() != 1)
    raise(fail, "values must be [off_value, on_value], got " + shape_str(values));
}

int64_t one_hot_depth(const Tensor& depth, const Fail& fail) {
  int64_t d = dtype_is_float(depth.dtype()) ? int64_t(depth.double_at(0)) : depth.int_at(0);
  if (d < 0) raise(fail, "depth " + std::to_string(d) + " is negative");
  return d;
}

OneHotShape one_hot_shape(const ir::Node& node, const Shape& indices, int64_t depth, const Fail& fail) {
  const int64_t r = int64_t(indices.size());
  OneHotShape s;
  s.axis = node.attr_int("axis", -1);
  if (s.axis < -(r + 1) || s.axis > r)
    raise(fail, "axis " + std::to_string(s.axis) + " is out of range for an output of rank " + std::to_string(r + 1));
  if (s.axis < 0) s.axis += r + 1;
  s.out = indices;
  s.out.insert(s.out.begin() + s.axis, depth);
  for (int64_t i = s.axis; i < r; ++i) s.inner *= indices[size_t(i)];
  return s;
}

}  // namespace onnxgpu::ops
