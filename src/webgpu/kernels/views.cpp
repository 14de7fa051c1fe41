// Ops that only change how a buffer is seen: the output aliases the input's buffer (no dispatch).
#include "ops/views.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

namespace {

// An input whose value gives the new shape (Reshape's shape, the axes): known at plan time.
ops::IntsInput value_of(GpuKernelContext& ctx, size_t i, const char* what) {
  return [&ctx, i, what] { return ctx.constant(i, what).to_int64_vector(); };
}

void reshape(GpuKernelContext& ctx) {
  ctx.alias_output(0, 0, ops::reshape_output(ctx.node, ctx.opset, ctx.shape(0), value_of(ctx, 1, "shape"), ctx.fail_fn()));
}

void flatten(GpuKernelContext& ctx) { ctx.alias_output(0, 0, ops::flatten_output(ctx.node, ctx.shape(0), ctx.fail_fn())); }

void squeeze(GpuKernelContext& ctx) {
  ctx.alias_output(0, 0, ops::squeeze_output(ctx.node, ctx.opset, ctx.shape(0), ctx.has_input(1),
                                             value_of(ctx, 1, "axes"), ctx.fail_fn()));
}

void unsqueeze(GpuKernelContext& ctx) {
  ctx.alias_output(0, 0, ops::unsqueeze_output(ctx.node, ctx.opset, ctx.shape(0), value_of(ctx, 1, "axes"), ctx.fail_fn()));
}

void identity(GpuKernelContext& ctx) { ctx.alias_output(0, 0, ctx.shape(0)); }

void dropout(GpuKernelContext& ctx) {
  if (ctx.opset >= 12 && ctx.has_input(2)) {
    const Tensor& training = ctx.constant(2, "training_mode");
    if (training.numel() != 1) ctx.fail("training_mode must be a scalar");
    if (training.double_at(0) != 0) ctx.unsupported("training mode (random dropout)");
  }
  ctx.alias_output(0, 0, ctx.shape(0));
  if (ctx.output_wanted(1)) {  // the mask: all true in inference
    ctx.set_output(1, DType::Bool, ctx.shape(0));
    auto p = ctx.program("mask");
    p.output("m", DType::Bool, ctx.shape(0));
    p.set_threads(uint64_t(shape_numel(ctx.shape(0))));
    p.body("  m_store(gi, 1u);");
    ctx.dispatch(p, {ctx.out(1)});
  }
}

}  // namespace

void register_views(GpuKernelRegistry& r) {
  r.add("Reshape", reshape);
  r.add("Flatten", flatten);
  r.add("Squeeze", squeeze);
  r.add("Unsqueeze", unsqueeze);
  r.add("Identity", identity);
  r.add("Dropout", dropout);
}

}  // namespace onnxgpu::webgpu
