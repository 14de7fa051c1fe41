#include "ops/normalization.h"

#include <string>

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

}  // namespace onnxgpu::ops
