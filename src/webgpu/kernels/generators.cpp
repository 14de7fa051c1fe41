// Ops that make tensors, on the GPU: ConstantOfShape, Range, EyeLike, OneHot, Trilu.
//
// ConstantOfShape and Range have an output shape that depends on input VALUES: they run on the GPU only
// when those inputs are known at plan time (otherwise ctx.constant sends them to the CPU). In practice
// the planner folds them whenever their inputs are constants, so these two kernels are a completeness
// measure. OneHot needs its depth at plan time for the same reason; its indices and values are GPU
// tensors. Trilu reads k on the GPU at run time, so it works with any k.
#include <cmath>

#include "ops/generators.h"
#include "ops/range.h"
#include "webgpu/kernels/indexing_util.h"

namespace onnxgpu::webgpu {

namespace {

void constant_of_shape(GpuKernelContext& ctx) {
  if (!ctx.known(0)) ctx.unsupported("ConstantOfShape with a run-time shape: the output shape depends on its values");
  const Tensor& st = ctx.constant(0, "input");
  if (!dtype_is_integer(st.dtype()) || st.rank() > 1)
    ctx.fail("input 0 ('input') must be a 1-D integer tensor, got " + st.describe());
  Shape shape = ops::constant_of_shape_dims(st.to_int64_vector(), ctx.fail_fn());
  Tensor value = ops::constant_of_shape_value(ctx.node, ctx.fail_fn());
  DType t = value.dtype();
  if (t == DType::String) ctx.unsupported("string value");
  ctx.set_output(0, t, shape);
  auto p = ctx.program("fill");
  p.output("y", t, shape);
  // A float value is stored as its own bits (exact for every float type, float64 included); an integer
  // one as its int64 value, converted by the output's family (a narrowed int64 flags a value beyond int32).
  std::string store;
  if (dtype_is_float(t)) {
    p.uniform_raw("v", "y", value);
    store = "y_store_raw(gi, v());";
  } else {
    p.uniform_i64("v", value.int_at(0));
    store = "y_store(gi, from_i64_$y(v()));";
  }
  p.set_threads(uint64_t(shape_numel(shape)));
  p.body("  " + store);
  ctx.dispatch(p, {ctx.out(0)});
}

void range(GpuKernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.known(i)) ctx.unsupported("Range with run-time bounds: the output size depends on their values");
  const Tensor& s = ctx.constant(0, "start");
  const Tensor& l = ctx.constant(1, "limit");
  const Tensor& d = ctx.constant(2, "delta");
  const int64_t count = ops::range_count(s, l, d, [&](const std::string& m) { ctx.fail(m); });
  const DType t = s.dtype();
  ctx.set_output(0, t, {count});
  auto p = ctx.program("range");
  p.input("s", t, ctx.shape(0));
  p.input("d", t, ctx.shape(2));
  p.output("y", t, {count});
  p.set_threads(uint64_t(count));
  // start + i * delta: exact for the integer families (wrapping, the result lies in [start, limit)).
  p.body("  y_store(gi, add_$y(s_load(0u), mul_$y(from_i64_$y(w64_from_u32(gi)), d_load(0u))));");
  ctx.dispatch(p, {ctx.in(0), ctx.in(2), ctx.out(0)});
}

void eye_like(GpuKernelContext& ctx) {
  const Shape& xs = ctx.shape(0);
  DType t = ops::eye_like_dtype(ctx.node, ctx.dtype(0), xs, ctx.fail_fn());
  int64_t k = ctx.node.attr_int("k", 0);
  ctx.set_output(0, t, xs);
  auto p = ctx.program("eye");
  p.output("y", t, xs);
  p.uniform_i64("k", k);
  p.set_threads(uint64_t(shape_numel(xs)));
  // One where column - row == k (compared as int64, so any k works).
  p.body(R"(  let j = gi % y_shape(1u);
  let i = gi / y_shape(1u);
  let on = w64_eq(w64_sub(w64_from_u32(j), w64_from_u32(i)), k());
  y_store(gi, select(zero_$y(), one_$y(), on));)");
  ctx.dispatch(p, {ctx.out(0)});
}

void one_hot(GpuKernelContext& ctx) {
  const Shape &is = ctx.shape(0), &vs = ctx.shape(2);
  ops::check_one_hot_inputs(ctx.dtype(0), ctx.dtype(1), ctx.shape(1), vs, ctx.fail_fn());
  if (!ctx.known(1)) ctx.unsupported("OneHot with a run-time depth: the output shape depends on its value");
  const int64_t depth = ops::one_hot_depth(ctx.constant(1, "depth"), ctx.fail_fn());
  ops::OneHotShape s = ops::one_hot_shape(ctx.node, is, depth, ctx.fail_fn());
  const Shape& out = s.out;
  const int64_t inner = s.inner;
  DType t = ctx.dtype(2);
  ctx.set_output(0, t, out);
  auto p = ctx.program("one_hot");
  p.input("idx", ctx.dtype(0), is);
  p.input("vals", t, vs);
  p.output("y", t, out);
  p.uniform("depth", uint32_t(depth));
  p.uniform("inner", uint32_t(inner));
  p.set_threads(uint64_t(shape_numel(out)));
  // Out-of-range indices (after one wrap of negatives) give a row of off_value, as ONNX says.
  p.body(R"(  let in_i = gi % inner();
  let t = gi / inner();
  let pos = t % depth();
  let o = t / depth();
  let on = w64_wrap_index(to_i64_$idx(idx_load(o * inner() + in_i)), depth()) == pos;
  let src = select(0u, 1u, on);
  )" + shader::move_element("y", "gi", "vals", "src"));
  ctx.dispatch(p, {ctx.in(0), ctx.in(2), ctx.out(0)});
}

void trilu(GpuKernelContext& ctx) {
  const Shape& xs = ctx.shape(0);
  if (xs.size() < 2) ctx.fail("input must have rank >= 2, got " + describe_input(ctx, 0));
  bool has_k = ctx.has_input(1);
  if (has_k) {
    if (shape_numel(ctx.shape(1)) != 1)
      ctx.fail("input 1 ('k') must hold exactly one value, got " + describe_input(ctx, 1));
    if (!dtype_is_integer(ctx.dtype(1)))
      ctx.fail("input 1 ('k') must be an integer tensor, got " + describe_input(ctx, 1));
  }
  bool upper = ctx.node.attr_int("upper", 1) != 0;
  DType t = ctx.dtype(0);
  ctx.set_output(0, t, xs);
  auto p = ctx.program(upper ? "triu" : "tril");
  p.input("x", t, xs);
  if (has_k) p.input("k", ctx.dtype(1), ctx.shape(1));
  p.output("y", t, xs);
  p.uniform("rows", uint32_t(xs[xs.size() - 2]));
  p.uniform("cols", uint32_t(xs[xs.size() - 1]));
  p.set_threads(uint64_t(shape_numel(xs)));
  // k is read on the GPU; column - row is compared with it as int64.
  std::string keep = upper ? "!w64_slt(diff, kk)" : "!w64_slt(kk, diff)";
  p.body(std::string("  let kk = ") + (has_k ? "to_i64_$k(k_load(0u))" : "w64_from_u32(0u)") + R"(;
  let j = gi % cols();
  let i = (gi / cols()) % rows();
  let diff = w64_sub(w64_from_u32(j), w64_from_u32(i));
  if ()" + keep + ") {\n    " + shader::move_element("y", "gi", "x", "gi") + "\n  } else {\n    y_store(gi, zero_$y());\n  }");
  std::vector<ValueRef> binds{ctx.in(0)};
  if (has_k) binds.push_back(ctx.in(1));
  binds.push_back(ctx.out(0));
  ctx.dispatch(p, binds);
}

}  // namespace

void register_generators(GpuKernelRegistry& r) {
  r.add("ConstantOfShape", constant_of_shape);
  r.add("Range", range);
  r.add("EyeLike", eye_like);
  r.add("OneHot", one_hot);
  r.add("Trilu", trilu);
}

}  // namespace onnxgpu::webgpu
