// AveragePool, MaxPool and LpPool (and RoiAlign's attributes, below), the part both kernel sets share: the window of the required
// kernel_shape over X's spatial dims (ops::make_window: strides, dilations, pads, auto_pad,
// ceil_mode), count_include_pad, storage_order, LpPool's p, and the output shape.
#pragma once
#include <cstdint>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/window.h"

namespace onnxgpu::ops {

struct PoolParams {
  Window win;
  Shape out;                  // [N, C, out spatial...]
  bool include_pad = false;   // count_include_pad (AveragePool)
  int64_t storage_order = 0;  // MaxPool's indices: 0 row-major, 1 column-major
  double p = 0;               // LpPool's exponent (2 by default), 0 for the others
};

// `x`: X's shape [N, C, D...]; `lp`: the node is an LpPool.
PoolParams pool_params(const ir::Node& node, const Shape& x, bool lp, const Fail& fail);
// Attribute 'p' of LpPool and GlobalLpPool (2 by default), which must be positive.
double lp_exponent(const ir::Node& node, const Fail& fail);

// RoiAlign (opsets 10, 16): X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2) of X's type, batch_indices [R]
// int64; output [R, C, output_height, output_width]. Each output bin averages (or, mode max, takes the
// largest weighted corner of) sampling_ratio^2 bilinear samples (adaptive ceil(roi / bins) when 0), as
// ONNX Runtime and the ONNX reference compute them (a sample beyond [-1, size] reads 0, coordinates
// clamped to the last pixel). coordinate_transformation_mode half_pixel (opset 16's default) shifts the
// scaled roi by -0.5 and keeps tiny rois; output_half_pixel (opset 10) widens them to at least 1.
struct RoiAlignParams {
  bool max_mode = false;
  bool half_pixel = true;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  float spatial_scale = 1.0f;
  Shape out;
};
RoiAlignParams roi_align_params(const ir::Node& node, int64_t opset, const Shape& x, const Shape& rois,
                                const Shape& batch_indices, const Fail& fail);

}  // namespace onnxgpu::ops
