// LayerNormalization, the part both kernel sets share: the normalized axes and the stash type, read
// and checked once. Used by the CPU reference (src/cpu/normalization.cpp) and the GPU kernel
// (src/webgpu/kernels/normalization.cpp).
#pragma once
#include <cstdint>

#include "ir/graph.h"
#include "ops/fail.h"
#include "onnxgpu/dtype.h"

namespace onnxgpu::ops {

struct LayerNormParams {
  int64_t axis;  // the first normalized axis, in [0, rank)
  DType stash;   // the type of the mean and inverse standard deviation outputs
};

LayerNormParams layer_norm_params(const ir::Node& node, int64_t rank, const Fail& fail);

}  // namespace onnxgpu::ops
