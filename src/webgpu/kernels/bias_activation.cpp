// ONNX Runtime's fused activations (com.microsoft) on the GPU: FastGelu, BiasGelu, QuickGelu, BiasAdd
// (see ops/bias_activation.h). One invocation per element, in f32 (float16 and bfloat16 are loaded
// into f32 and stored back; float64 arithmetic is refused by the shader layer: those nodes run on the
// CPU): v = X + bias[i % channels] (+ skip), then the activation.
#include "ops/bias_activation.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/math_wgsl.h"

namespace onnxgpu::webgpu {

namespace {

void bias_activation(GpuKernelContext& ctx) {
  const ops::BiasActivationParams bp = ops::bias_activation_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const Shape& xs = ctx.shape(0);
  const DType t = ctx.dtype(0);
  ctx.set_output(0, t, xs);
  auto p = ctx.program("bias_activation");
  p.input("x", t, xs);
  std::vector<ValueRef> binds{ctx.in(0)};
  std::string v = "x_load(gi)";
  if (bp.bias) {
    p.input("b", t, ctx.shape(1));
    binds.push_back(ctx.in(1));
    p.uniform("channels", uint32_t(bp.channels));
    v += " + b_load(gi % channels())";
  }
  if (bp.skip) {
    p.input("sk", t, ctx.shape(2));
    binds.push_back(ctx.in(2));
    v += " + sk_load(gi)";
  }
  p.output("y", t, xs);
  binds.push_back(ctx.out(0));
  std::string y;
  switch (bp.op) {
    case ops::BiasActivation::FastGelu:
      y = "0.5 * v * (1.0 + tanh_f32(" + f32_lit(float(ops::kGeluTanhScale)) + " * (v + " +
          f32_lit(float(ops::kGeluTanhCubic)) + " * v * v * v)))";
      break;
    case ops::BiasActivation::BiasGelu:
      p.declare(kErfWgsl);
      y = "0.5 * v * (1.0 + erf_f32(v * 0.7071067811865476))";
      break;
    case ops::BiasActivation::QuickGelu: y = "v / (1.0 + exp_f32(-" + f32_lit(bp.alpha) + " * v))"; break;
    case ops::BiasActivation::BiasAdd: y = "v"; break;
  }
  p.set_threads(uint64_t(shape_numel(xs)));
  p.body("  let v = " + v + ";\n  y_store(gi, " + y + ");");
  ctx.dispatch(p, std::move(binds));
}

}  // namespace

void register_bias_activation(GpuKernelRegistry& r) {
  for (const char* op : {"FastGelu", "BiasGelu", "Gelu", "QuickGelu", "BiasAdd"}) r.add(op, bias_activation, ir::kMsDomain);
}

}  // namespace onnxgpu::webgpu
