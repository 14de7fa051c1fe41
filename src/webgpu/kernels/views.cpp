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

// The identity (ops::dropout_mode) on the data's buffer; its mask, where wanted, all ones.
void dropout(GpuKernelContext& ctx) {
  const ops::DropoutMode mode = ops::dropout_mode(
      ctx.node, ctx.opset, ctx.has_input(1), ctx.has_input(2),
      [&](size_t i, const char* what) -> const Tensor& { return ctx.constant(i, what); }, ctx.fail_fn());
  if (!mode.identity()) ctx.unsupported("training mode with ratio " + std::to_string(mode.ratio) + " (random dropout)");
  ctx.alias_output(0, 0, ctx.shape(0));
  if (ctx.output_wanted(1)) {
    const DType mask = ops::dropout_mask_dtype(ctx.opset, ctx.dtype(0));
    ctx.set_output(1, mask, ctx.shape(0));
    auto p = ctx.program(mask == DType::Bool ? "mask" : "mask_ones");
    p.output("m", mask, ctx.shape(0));
    p.set_threads(uint64_t(shape_numel(ctx.shape(0))));
    p.body(mask == DType::Bool ? "  m_store(gi, 1u);" : "  m_store(gi, 1.0);");
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
