// Ops that make tensors: Constant, ConstantOfShape, Range, EyeLike, OneHot, Trilu.
#include <cmath>

#include "cpu/kernel.h"
#include "cpu/shape_util.h"
#include "ops/generators.h"
#include "ops/range.h"

namespace onnxgpu::cpu {

namespace {

std::vector<Tensor> constant(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  int given = 0;
  for (const char* a : {"value", "sparse_value", "value_float", "value_floats", "value_int", "value_ints",
                        "value_string", "value_strings"})
    given += n.has_attr(a) ? 1 : 0;
  if (given != 1) ctx.fail("exactly one of the value attributes must be set, found " + std::to_string(given));
  if (n.has_attr("value")) return {*n.attr_tensor("value")};
  if (n.has_attr("sparse_value")) ctx.unsupported("sparse_value is not supported");
  if (n.has_attr("value_float")) return {Tensor::scalar<float>(n.attr_float("value_float", 0))};
  if (n.has_attr("value_floats")) {
    auto v = n.attr_floats("value_floats");
    return {Tensor::from_vector<float>({int64_t(v.size())}, v)};
  }
  if (n.has_attr("value_int")) return {Tensor::scalar<int64_t>(n.attr_int("value_int", 0))};
  if (n.has_attr("value_ints")) {
    auto v = n.attr_ints("value_ints");
    return {Tensor::from_vector<int64_t>({int64_t(v.size())}, v)};
  }
  if (n.has_attr("value_string")) return {Tensor::strings({}, {n.attr_string("value_string", "")})};
  auto v = n.attr_strings("value_strings");
  return {Tensor::strings({int64_t(v.size())}, v)};
}

std::vector<Tensor> constant_of_shape(KernelContext& ctx) {
  Shape shape = ops::constant_of_shape_dims(int64_input(ctx, 0, "input"), ctx.fail_fn());
  Tensor value = ops::constant_of_shape_value(ctx.node, ctx.fail_fn());
  Tensor out(value.dtype(), shape);
  ElementCopier copy(value, out);
  for (int64_t i = 0; i < out.numel(); ++i) copy(i, 0);
  return {out};
}

std::vector<Tensor> range(KernelContext& ctx) {
  const Tensor &s = ctx.input(0), &l = ctx.input(1), &d = ctx.input(2);
  const int64_t count = ops::range_count(s, l, d, [&](const std::string& m) { ctx.fail(m); });
  return visit_dtype(s.dtype(), [&]<class T>() -> std::vector<Tensor> {
    T start = s.data<T>()[0], delta = d.data<T>()[0];
    Tensor out(s.dtype(), {count});
    T* o = out.data<T>();
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)  // opset 25's 16-bit floats, in float
        o[i] = T(float(start) + float(i) * float(delta));
      else if constexpr (is_float_v<T>) o[i] = T(start + T(i) * delta);
      // start + i * delta lies within [start, limit); unsigned arithmetic keeps the intermediate product defined.
      else o[i] = T(int64_t(uint64_t(int64_t(start)) + uint64_t(i) * uint64_t(int64_t(delta))));
    }
    return {out};
  });
}

template <class T>
T one() {
  if constexpr (std::is_same_v<T, bool>) return true;
  else return T(1.0f);
}

std::vector<Tensor> eye_like(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DType dt = ops::eye_like_dtype(ctx.node, x.dtype(), x.shape(), ctx.fail_fn());
  int64_t k = ctx.node.attr_int("k", 0);
  int64_t rows = x.dim(0), cols = x.dim(1);
  Tensor out(dt, x.shape());
  visit_dtype(dt, [&]<class T>() {
    T* o = out.data<T>();
    for (int64_t i = 0; i < rows; ++i) {
      // column j = i + k, computed without overflow for any k
      if (k >= cols || k <= -rows) break;
      int64_t j = i + k;
      if (j >= 0 && j < cols) o[i * cols + j] = one<T>();
    }
  });
  return {out};
}

// An index value (a float index truncated).
int64_t index_at(const Tensor& t, int64_t i) {
  if (dtype_is_float(t.dtype())) return int64_t(t.double_at(i));
  return t.int_at(i);
}

std::vector<Tensor> one_hot(KernelContext& ctx) {
  const Tensor &idx = ctx.input(0), &depth_t = ctx.input(1), &values = ctx.input(2);
  ops::check_one_hot_inputs(idx.dtype(), depth_t.dtype(), depth_t.shape(), values.shape(), ctx.fail_fn());
  const int64_t depth = ops::one_hot_depth(depth_t, ctx.fail_fn());
  ops::OneHotShape s = ops::one_hot_shape(ctx.node, idx.shape(), depth, ctx.fail_fn());
  const Shape& out_shape = s.out;
  const int64_t inner = s.inner;
  Tensor out(values.dtype(), out_shape);
  ElementCopier copy(values, out);
  for (int64_t i = 0; i < out.numel(); ++i) copy(i, 0);
  for (int64_t p = 0; p < idx.numel(); ++p) {
    int64_t k = index_at(idx, p);
    if (k < 0) k += depth;
    if (k < 0 || k >= depth) continue;  // out of range: all off_value
    int64_t o = p / inner, in = p % inner;
    copy((o * depth + k) * inner + in, 1);
  }
  return {out};
}

std::vector<Tensor> trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got " + x.describe());
  int64_t k = ctx.has_input(1) ? int64_scalar_input(ctx, 1, "k") : 0;
  bool upper = ctx.node.attr_int("upper", 1) != 0;
  int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  Tensor out(x.dtype(), x.shape());
  ElementCopier copy(x, out);
  int64_t mats = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = upper ? (j - i >= k) : (j - i <= k);
        int64_t e = (m * rows + i) * cols + j;
        if (keep) copy(e, e);
      }
  return {out};
}

}  // namespace

void register_generators(KernelRegistry& r) {
  r.add("Constant", constant);
  r.add("ConstantOfShape", constant_of_shape);
  r.add("Range", range);
  r.add("EyeLike", eye_like);
  r.add("OneHot", one_hot);
  r.add("Trilu", trilu);
}

}  // namespace onnxgpu::cpu
