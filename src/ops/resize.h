// ONNX Resize (opsets 10, 11, 13, 18, 19) and Upsample (1, 7, 9), the part both kernel sets share:
// the parameters read from the node and its inputs and checked, and for each output index along an
// axis the input index and tap weights (computed in double, as the ONNX reference does: nearest
// rounding and the crop bounds are discontinuous). The CPU reference (src/cpu/resize.cpp) applies
// the taps itself; the GPU kernel (src/webgpu/kernels/resize.cpp) turns them into tables for its
// shader.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

struct ResizeParams {
  std::string mode = "nearest";      // nearest | linear | cubic
  std::string coord = "half_pixel";  // coordinate_transformation_mode
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0;
  std::vector<double> scales;    // per axis of X
  Shape out;                     // per axis of X
  std::vector<bool> from_sizes;  // the axis' output length was given (its length is exact)
  std::vector<double> roi;       // [starts..., ends...] per axis of X (tf_crop_and_resize)
};

// Input i of the node, read when the parameters need it (a kernel that cannot know it throws).
using InputReader = std::function<const Tensor&(size_t i, const char* what)>;

// A Resize node's parameters for an input of shape `x`: attributes, then roi (input 1), scales (2)
// or sizes (3); `given(i)` tells whether input i is there and not empty. Checked, output shape included.
ResizeParams resize_params(const ir::Node& node, int64_t opset, const Shape& x, const std::function<bool(size_t)>& given,
                           const InputReader& input, const Fail& fail);
// An Upsample node's (scales from input 1 since opset 9, else attributes).
ResizeParams upsample_params(const ir::Node& node, int64_t opset, const Shape& x, const InputReader& input,
                             const Fail& fail);

// Output index o along an axis: outside the crop (extrapolated), or taps first, first + 1, ... of
// `weights` (nearest: one tap, `first` already clamped; interpolation: `first` unclamped, the reader
// clamps each tap into [0, in)).
struct AxisSample {
  bool outside = false;
  int64_t first = 0;
  std::vector<double> weights;
};
std::vector<AxisSample> axis_samples(const ResizeParams& p, size_t axis, int64_t in);

// Every output index of the axis reads exactly its own input index with weight 1.
bool axis_is_identity(const std::vector<AxisSample>& samples, int64_t in);

}  // namespace onnxgpu::ops
