// Ops that change only the shape (or read it): Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size,
// Identity, Dropout (inference). Outputs share the input's storage where the data is unchanged.
#include <algorithm>
#include <random>

#include "cpu/kernel.h"
#include "cpu/shape_util.h"
#include "ops/views.h"

namespace onnxgpu::cpu {

namespace {

std::vector<Tensor> reshape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  return {x.reshaped(ops::reshape_output(ctx.node, ctx.opset, x.shape(), [&] { return int64_input(ctx, 1, "shape"); },
                                         ctx.fail_fn()))};
}

std::vector<Tensor> flatten(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  return {x.reshaped(ops::flatten_output(ctx.node, x.shape(), ctx.fail_fn()))};
}

std::vector<Tensor> squeeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  return {x.reshaped(ops::squeeze_output(ctx.node, ctx.opset, x.shape(), ctx.has_input(1),
                                         [&] { return int64_input(ctx, 1, "axes"); }, ctx.fail_fn()))};
}

std::vector<Tensor> unsqueeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  return {x.reshaped(ops::unsqueeze_output(ctx.node, ctx.opset, x.shape(), [&] { return int64_input(ctx, 1, "axes"); },
                                           ctx.fail_fn()))};
}

std::vector<Tensor> shape_op(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t r = x.rank();
  int64_t start = 0, end = r;
  if (ctx.opset >= 15) {
    start = ctx.node.attr_int("start", 0);
    end = ctx.node.attr_int("end", r);
  }
  auto clamp = [&](int64_t v) {
    if (v < 0) v += r;
    return std::clamp<int64_t>(v, 0, r);
  };
  start = clamp(start);
  end = clamp(end);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(x.dim(i));
  return {Tensor::from_vector<int64_t>({int64_t(dims.size())}, dims)};
}

std::vector<Tensor> size_op(KernelContext& ctx) { return {Tensor::scalar<int64_t>(ctx.input(0).numel())}; }

std::vector<Tensor> identity(KernelContext& ctx) { return {ctx.input(0)}; }

// A mask of ones (ops::dropout_mask_dtype: bool from opset 10, the input's type before).
Tensor dropout_mask(const KernelContext& ctx, const Tensor& x) {
  if (ops::dropout_mask_dtype(ctx.opset, x.dtype()) == DType::Bool) {
    Tensor m(DType::Bool, x.shape());
    std::fill_n(m.data<bool>(), m.numel(), true);
    return m;
  }
  Tensor m(x.dtype(), x.shape());
  visit_dtype(x.dtype(), [&]<class T>() { std::fill_n(m.data<T>(), m.numel(), T(1.0f)); }, kFloatTypes, "Dropout");
  return m;
}

// Training-mode Dropout with a seed: the mask is numpy's RandomState(seed).uniform(0, 1, shape) >= ratio (the
// stream ONNX's reference implementation uses), so a seeded node is reproducible; output = mask * x / (1 - ratio).
std::vector<Tensor> dropout_training(const KernelContext& ctx, const Tensor& x, double ratio, int64_t seed) {
  std::mt19937 gen(static_cast<uint32_t>(seed));  // numpy's legacy seeding is MT19937 init_genrand
  Tensor y(x.dtype(), x.shape()), mask(DType::Bool, x.shape());
  bool* m = mask.data<bool>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    uint32_t a = gen() >> 5, b = gen() >> 6;  // numpy's random_sample: 53 random bits
    m[i] = (a * 67108864.0 + b) / 9007199254740992.0 >= ratio;
  }
  visit_dtype(x.dtype(), [&]<class T>() {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* in = x.data<T>();
    T* o = y.data<T>();
    C keep = C(1) - C(ratio);
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = m[i] ? T(C(in[i]) / keep) : T(C(0));
  }, kFloatTypes, "Dropout");
  std::vector<Tensor> out{y};
  if (ctx.output_wanted(1)) out.push_back(mask);
  return out;
}

std::vector<Tensor> dropout(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!kFloatTypes.has(x.dtype())) ctx.fail("input 'data' must be a float tensor, got " + x.describe());
  const ops::DropoutMode mode = ops::dropout_mode(
      ctx.node, ctx.opset, ctx.has_input(1), ctx.has_input(2),
      [&](size_t i, const char*) -> const Tensor& { return ctx.input(i); }, ctx.fail_fn());
  if (!mode.identity()) {
    if (!ctx.node.has_attr("seed"))
      ctx.unsupported("Dropout in training mode with ratio " + std::to_string(mode.ratio) + " and no seed is random");
    return dropout_training(ctx, x, mode.ratio, ctx.node.attr_int("seed", 0));
  }
  std::vector<Tensor> out{x};
  if (ctx.output_wanted(1)) out.push_back(dropout_mask(ctx, x));
  return out;
}

}  // namespace

void register_shape_ops(KernelRegistry& r) {
  r.add("Reshape", reshape);
  r.add("Flatten", flatten);
  r.add("Squeeze", squeeze);
  r.add("Unsqueeze", unsqueeze);
  r.add("Shape", shape_op);
  r.add("Size", size_op);
  r.add("Identity", identity);
  r.add("Dropout", dropout);
}

}  // namespace onnxgpu::cpu
