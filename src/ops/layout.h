// Concat, Expand, DepthToSpace and SpaceToDepth, the part both kernel sets share: attribute checks
// and output shapes, and for the two block rearrangements the view and permutation that express them
// as a transpose.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

struct ConcatShape {
  int64_t axis = 0;
  Shape out;
};
// `inputs`: every input's shape (there must be one at least; dtypes are the caller's to check).
ConcatShape concat_shape(const ir::Node& node, int64_t opset, const std::vector<Shape>& inputs, const Fail& fail);

// Expand's output: X broadcast with `shape` (numpy rules, no negative dims).
Shape expand_shape(const Shape& x, const std::vector<int64_t>& shape, const Fail& fail);

// A block rearrangement as a transpose: X seen with shape `view`, permuted by `perm`, read as `out`.
struct BlockTranspose {
  Shape view;
  std::vector<int64_t> perm;
  Shape out;
};
BlockTranspose depth_to_space(const ir::Node& node, int64_t opset, const Shape& x, const Fail& fail);
BlockTranspose space_to_depth(const ir::Node& node, const Shape& x, const Fail& fail);

}  // namespace onnxgpu::ops
