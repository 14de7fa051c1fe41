// ONNX Pad and Tile, the part both kernel sets share: the output shape and, for Pad, the pads of each
// axis, checked against the input. Used by the CPU reference (src/cpu/layout.cpp) and the GPU
// kernels (src/webgpu/kernels/layout.cpp), which read the parameters from their own inputs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "onnxgpu/tensor.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

// Tile: input `x` repeated `repeats` times along each axis.
Shape tile_shape(const Shape& x, const std::vector<int64_t>& repeats, const Fail& fail);

struct PadGeometry {
  std::vector<int64_t> begin, end;  // per axis of the input: elements added before / after (negative: cropped)
  Shape out;
};
// Pad in `mode` (constant, reflect, edge, wrap): `pads` holds the begins then the ends of `axes`
// (normalized; every axis when `axes_given` is false).
PadGeometry pad_geometry(const Shape& x, const std::string& mode, const std::vector<int64_t>& pads,
                         std::vector<int64_t> axes, bool axes_given, const Fail& fail);

}  // namespace onnxgpu::ops
