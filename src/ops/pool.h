// AveragePool, MaxPool and LpPool, the part both kernel sets share: the window of the required
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

}  // namespace onnxgpu::ops
