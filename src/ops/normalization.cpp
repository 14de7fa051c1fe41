#include "ops/normalization.h"

#include <string>
#include <utility>

namespace onnxgpu::ops {

LayerNormParams layer_norm_params(const ir::Node& node, int64_t rank, const Fail& fail) {
  if (rank == 0) raise(fail, "X is a scalar: LayerNormalization needs an axis to normalize over");
  int64_t axis = node.attr_int("axis", -1);
  if (axis < -rank || axis >= rank)
    raise(fail, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  int64_t stash = node.attr_int("stash_type", 1);
  if (stash < 0 || stash > 64 || !kFloatTypes.has(DType(stash)))
    raise(fail, "stash_type " + std::to_string(stash) + " is not a float type");
  return {axis, DType(stash)};
}

void check_instance_norm(DType x_dtype, const Shape& x, DType scale_dtype, const Shape& scale, DType b_dtype,
                         const Shape& b, const Fail& fail) {
  if (x.size() < 3)
    raise(fail, "input must be [N, C, D1, ...] (rank >= 3), got " + std::string(dtype_name(x_dtype)) + shape_str(x));
  const int64_t C = x[1];
  for (const auto& [dt, s] : {std::pair{scale_dtype, scale}, std::pair{b_dtype, b}})
    if (dt != x_dtype || s.size() != 1 || s[0] != C)
      raise(fail, "scale and B must be 1-D of X's type with " + std::to_string(C) + " values (the channels of input " +
                      shape_str(x) + "), got " + std::string(dtype_name(dt)) + shape_str(s));
}

}  // namespace onnxgpu::ops
