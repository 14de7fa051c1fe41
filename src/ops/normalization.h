// LayerNormalization and InstanceNormalization, the part both kernel sets share: the normalized axes
// and the stash type, the shapes of the inputs, read and checked once. Used by the CPU reference (src/cpu/normalization.cpp) and the GPU kernel
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

// InstanceNormalization: X [N, C, D1, ...] (rank >= 3), scale and B 1-D of X's type with C values.
void check_instance_norm(DType x_dtype, const Shape& x, DType scale_dtype, const Shape& scale, DType b_dtype,
                         const Shape& b, const Fail& fail);

}  // namespace onnxgpu::ops
