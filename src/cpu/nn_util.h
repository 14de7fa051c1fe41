// Helpers shared by the NN reference kernels (matmul, conv, pool, normalization, resize).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cpu/kernel.h"
#include "ops/values.h"
#include "ops/window.h"

namespace onnxgpu::cpu::nn {

// The shared helpers (src/ops/values.h, src/ops/window.h) under the names the CPU kernels use.
using ops::floor_div;
using ops::from_double;
using ops::next_index;
using ops::tensor_from_doubles;
using ops::to_doubles;
using ops::Window;
using ops::window_padded_count;
using ops::window_taps;

// ops::make_window, failing through the kernel context (an error naming the node).
inline Window make_window(const KernelContext& ctx, const Shape& in_spatial, const Shape& kernel, bool ceil_mode,
                          bool has_dilations = true) {
  return ops::make_window(ctx.node, in_spatial, kernel, ceil_mode, [&](const std::string& m) { ctx.fail(m); },
                          has_dilations);
}

}  // namespace onnxgpu::cpu::nn
