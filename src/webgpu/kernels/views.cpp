// Ops that only change how a buffer is seen: the output aliases the input's buffer (no dispatch).
#include <algorithm>

#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

namespace {

std::vector<int64_t> axes_of(GpuKernelContext& ctx, int64_t input_since_opset, size_t input_index) {
  if (ctx.opset >= input_since_opset) {
    if (!ctx.has_input(input_index)) return {};
    return ctx.constant(input_index, "axes").to_int64_vector();
  }
  return ctx.node.attr_ints("axes");
}

void reshape(GpuKernelContext& ctx) {
  const Shape& in = ctx.shape(0);
  std::vector<int64_t> target =
      ctx.opset >= 5 ? ctx.constant(1, "shape").to_int64_vector() : ctx.node.attr_ints("shape");
  bool allow_zero = ctx.node.attr_int("allowzero", 0) != 0;
  Shape out(target.size());
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allow_zero) {
      if (i >= in.size()) ctx.fail("shape has 0 at dimension " + std::to_string(i) + " beyond the input's rank");
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) ctx.fail("shape has more than one -1");
      infer = int64_t(i);
      continue;
    }
    if (d < 0) ctx.fail("shape has negative dimension " + std::to_string(d));
    out[i] = d;
    known *= d;
  }
  int64_t n = shape_numel(in);
  if (infer >= 0) {
    if (known == 0 || n % known != 0) ctx.fail("cannot reshape " + shape_str(in) + " with shape containing -1");
    out[size_t(infer)] = n / known;
  }
  if (shape_numel(out) != n) ctx.fail("cannot reshape " + shape_str(in) + " to " + shape_str(out));
  ctx.alias_output(0, 0, out);
}

void flatten(GpuKernelContext& ctx) {
  const Shape& in = ctx.shape(0);
  int64_t r = int64_t(in.size());
  int64_t axis = ctx.node.attr_int("axis", 1);
  if (axis < -r || axis > r) ctx.fail("axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += r;
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= in[size_t(i)];
  ctx.alias_output(0, 0, {a, b});
}

void squeeze(GpuKernelContext& ctx) {
  const Shape& in = ctx.shape(0);
  std::vector<int64_t> axes = axes_of(ctx, 13, 1);
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t ax = ctx.normalize_axis(a, int64_t(in.size()));
      if (in[size_t(ax)] != 1) ctx.fail("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(in[size_t(ax)]));
      drop[size_t(ax)] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  ctx.alias_output(0, 0, out);
}

void unsqueeze(GpuKernelContext& ctx) {
  const Shape& in = ctx.shape(0);
  std::vector<int64_t> axes = axes_of(ctx, 13, 1);
  int64_t r = int64_t(in.size() + axes.size());
  std::vector<bool> insert(size_t(r), false);
  for (int64_t a : axes) {
    int64_t ax = ctx.normalize_axis(a, r);
    if (insert[size_t(ax)]) ctx.fail("axis " + std::to_string(a) + " given twice");
    insert[size_t(ax)] = true;
  }
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < r; ++i) out.push_back(insert[size_t(i)] ? 1 : in.at(k++));
  ctx.alias_output(0, 0, out);
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
