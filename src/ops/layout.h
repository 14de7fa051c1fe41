// Concat, Expand, DepthToSpace, SpaceToDepth, CenterCropPad and ReverseSequence, the part both kernel
// sets share: attribute checks and output shapes, and for the two block rearrangements the view and
// permutation that express them as a transpose.
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

// CenterCropPad (opset 18): each axis of `axes` (attribute, default all) cropped or zero-padded to the
// given length, centred as the reference does (crop start floor((n - s) / 2), pad start floor((s - n) / 2)).
// Output y[c] = x[c - begin] (0 outside x): `begin` is the pad start, or minus the crop start.
struct CropPad {
  Shape out;
  std::vector<int64_t> begin;
};
CropPad center_crop_pad(const ir::Node& node, const Shape& x, const std::vector<int64_t>& shape, const Fail& fail);

// ReverseSequence (opset 10): x [.., batch_axis .., time_axis ..] (rank >= 2), sequence_lens [batch]
// (values in [0, time], checked by the kernels); the first sequence_lens[b] elements of each batch
// element's sequence reversed.
struct ReverseSequenceAxes {
  int64_t batch_axis = 1, time_axis = 0;
};
ReverseSequenceAxes reverse_sequence_axes(const ir::Node& node, const Shape& x, const Shape& lens, const Fail& fail);

}  // namespace onnxgpu::ops
