// ONNX Runtime's fused activations (com.microsoft), the rules both kernel sets share:
//   FastGelu   y = 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))),  v = X (+ bias)
//   BiasGelu   y = 0.5 v (1 + erf(v / sqrt(2))),                     v = X + bias
//   Gelu       BiasGelu without the bias (v = X): com.microsoft's, which ONNX Runtime's optimizer writes
//   QuickGelu  y = v sigmoid(alpha v) = v / (1 + exp(-alpha v)),     v = X   (alpha default 1.702)
//   BiasAdd    y = X + bias + skip                                   (X [N, S, C], skip X's shape)
// bias is 1-D with X's last dim (it repeats along the other dims); every input has X's float type.
// Used by the CPU reference (src/cpu/bias_activation.cpp) and the GPU kernel
// (src/webgpu/kernels/bias_activation.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::ops {

enum class BiasActivation { FastGelu, BiasGelu, QuickGelu, BiasAdd };

struct BiasActivationParams {
  BiasActivation op;
  bool bias = false;      // input 1 given
  bool skip = false;      // input 2 given (BiasAdd)
  int64_t channels = 1;   // X's last dim: element i adds bias[i % channels]
  float alpha = 1.702f;   // QuickGelu
};

BiasActivationParams bias_activation_params(const ir::Node& node, const std::vector<Operand>& inputs, const Fail& fail);

// sqrt(2 / pi) and 0.044715: FastGelu's (and Gelu approximate="tanh"'s) constants.
inline constexpr double kGeluTanhScale = 0.7978845608028654;
inline constexpr double kGeluTanhCubic = 0.044715;

}  // namespace onnxgpu::ops
