// Ops that change only the shape (or read it): Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size,
// Identity, Dropout (inference). Outputs share the input's storage where the data is unchanged.
#include <algorithm>
#include <random>

#include "cpu/kernel.h"
#include "cpu/shape_util.h"

namespace onnxgpu::cpu {

namespace {

std::vector<Tensor> reshape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> req;
  if (ctx.opset < 5) {
    if (!ctx.node.has_attr("shape")) ctx.fail("attribute 'shape' is required before opset 5");
    req = ctx.node.attr_ints("shape");
  } else {
    req = int64_input(ctx, 1, "shape");
  }
  bool allowzero = ctx.opset >= 14 && ctx.node.attr_int("allowzero", 0) != 0;
  Shape out(req.size());
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < req.size(); ++i) {
    int64_t d = req[i];
    if (d == 0 && !allowzero) {
      if (int64_t(i) >= x.rank())
        ctx.fail("shape " + ints_str(req) + " copies dimension " + std::to_string(i) + " (a 0) but the input " +
                 x.describe() + " has rank " + std::to_string(x.rank()));
      d = x.dim(int64_t(i));
    } else if (d == -1) {
      if (infer >= 0) ctx.fail("shape " + ints_str(req) + " has more than one -1");
      infer = int64_t(i);
      continue;
    } else if (d < -1) {
      ctx.fail("shape " + ints_str(req) + " has a negative dimension " + std::to_string(d));
    }
    out[i] = d;
    known *= d;
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      ctx.fail("cannot infer the -1 of shape " + ints_str(req) + " for input " + x.describe());
    out[size_t(infer)] = x.numel() / known;
  }
  if (shape_numel(out) != x.numel())
    ctx.fail("cannot reshape input " + x.describe() + " to " + shape_str(out) + " (shape input " + ints_str(req) +
             "): element counts differ");
  return {x.reshaped(out)};
}

std::vector<Tensor> flatten(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t r = x.rank();
  int64_t axis = ctx.node.attr_int("axis", 1);
  if (axis < -r || axis > r)
    ctx.fail("axis " + std::to_string(axis) + " is out of range [" + std::to_string(-r) + ", " + std::to_string(r) +
             "] for input " + x.describe());
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= x.dim(i);
  return {x.reshaped({outer, inner})};
}

std::vector<Tensor> squeeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool have_axes = false;
  std::vector<int64_t> axes;
  if (ctx.opset < 13) {
    have_axes = ctx.node.has_attr("axes");
    axes = ctx.node.attr_ints("axes");
  } else if (ctx.has_input(1)) {
    have_axes = true;
    axes = int64_input(ctx, 1, "axes");
  }
  std::vector<bool> drop(size_t(x.rank()), false);
  if (have_axes && !axes.empty()) {  // empty axes squeeze every size-1 axis, as when omitted (as ONNX Runtime does)
    for (int64_t a : normalize_axes(ctx, axes, x.rank())) {
      if (x.dim(a) != 1)
        ctx.fail("cannot squeeze axis " + std::to_string(a) + " of input " + x.describe() + ": its size is not 1");
      drop[size_t(a)] = true;
    }
  } else {
    for (int64_t i = 0; i < x.rank(); ++i) drop[size_t(i)] = x.dim(i) == 1;
  }
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!drop[size_t(i)]) out.push_back(x.dim(i));
  return {x.reshaped(out)};
}

std::vector<Tensor> unsqueeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  if (ctx.opset < 13) {
    if (!ctx.node.has_attr("axes")) ctx.fail("attribute 'axes' is required before opset 13");
    axes = ctx.node.attr_ints("axes");
  } else {
    axes = int64_input(ctx, 1, "axes");
  }
  int64_t out_rank = x.rank() + int64_t(axes.size());
  std::vector<bool> inserted(size_t(out_rank), false);
  for (int64_t a : normalize_axes(ctx, axes, out_rank)) inserted[size_t(a)] = true;
  Shape out;
  int64_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[size_t(i)] ? 1 : x.dim(j++));
  return {x.reshaped(out)};
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

// A mask of ones: bool from opset 10, the input's type before.
Tensor dropout_mask(const KernelContext& ctx, const Tensor& x) {
  if (ctx.opset >= 10) {
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
  bool training = false;
  double ratio = 0.5;
  if (ctx.opset < 7) {
    training = ctx.node.attr_int("is_test", 0) == 0;
    ratio = ctx.node.attr_float("ratio", 0.5f);
  } else if (ctx.opset < 12) {
    ratio = ctx.node.attr_float("ratio", 0.5f);
  } else {
    if (ctx.has_input(1)) {
      const Tensor& r = ctx.input(1);
      if (r.numel() != 1 || !dtype_is_float(r.dtype()))
        ctx.fail("input 'ratio' must be a float scalar, got " + r.describe());
      ratio = r.double_at(0);
    }
    if (ctx.has_input(2)) {
      const Tensor& t = ctx.input(2);
      if (t.numel() != 1 || t.dtype() != DType::Bool)
        ctx.fail("input 'training_mode' must be a bool scalar, got " + t.describe());
      training = t.data<bool>()[0];
    }
  }
  if (training && ratio != 0) {
    if (ratio < 0 || ratio >= 1) ctx.fail("ratio must be in [0, 1), got " + std::to_string(ratio));
    if (!ctx.node.has_attr("seed"))
      ctx.unsupported("Dropout in training mode with ratio " + std::to_string(ratio) + " and no seed is random");
    return dropout_training(ctx, x, ratio, ctx.node.attr_int("seed", 0));
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
