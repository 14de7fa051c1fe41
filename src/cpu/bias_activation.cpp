// ONNX Runtime's fused activations (com.microsoft): FastGelu, BiasGelu, QuickGelu, BiasAdd (see
// ops/bias_activation.h). Computed in double.
#include <cmath>
#include <numbers>

#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/bias_activation.h"

namespace onnxgpu::cpu {
namespace {

std::vector<Tensor> bias_activation(KernelContext& ctx) {
  const ops::BiasActivationParams p = ops::bias_activation_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const Tensor& X = ctx.input(0);
  std::vector<double> v = nn::to_doubles(X);
  const std::vector<double> bias = p.bias ? nn::to_doubles(ctx.input(1)) : std::vector<double>();
  const std::vector<double> skip = p.skip ? nn::to_doubles(ctx.input(2)) : std::vector<double>();
  const size_t c = size_t(p.channels);
  for (size_t i = 0; i < v.size(); ++i) {
    double x = v[i];
    if (!bias.empty()) x += bias[i % c];
    switch (p.op) {
      case ops::BiasActivation::FastGelu:
        x = 0.5 * x * (1.0 + std::tanh(ops::kGeluTanhScale * (x + ops::kGeluTanhCubic * x * x * x)));
        break;
      case ops::BiasActivation::BiasGelu: x = 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); break;
      case ops::BiasActivation::QuickGelu: x = x / (1.0 + std::exp(-double(p.alpha) * x)); break;
      case ops::BiasActivation::BiasAdd: x += skip[i]; break;
    }
    v[i] = x;
  }
  return {nn::tensor_from_doubles(X.dtype(), X.shape(), v)};
}

}  // namespace

void register_bias_activation(KernelRegistry& r) {
  for (const char* op : {"FastGelu", "BiasGelu", "Gelu", "QuickGelu", "BiasAdd"}) r.add(op, bias_activation, ir::kMsDomain);
}

}  // namespace onnxgpu::cpu
