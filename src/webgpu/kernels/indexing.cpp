// Indexed reads and writes on the GPU: Gather, GatherElements, GatherND, ScatterElements (and the
// deprecated Scatter), ScatterND, TensorScatter (one pass: each output element picks the past or the
// update element), Compress (the condition known at plan time).
//
// Index tensors are GPU values (int32 or int64) read at run time: each index goes through to_i64_$idx
// and wrap_index (negatives wrap once; anything out of range is flagged FLAG_INDEX and its element is
// skipped, never read or written), so the runtime reports the error naming the node.
//
// Scatter determinism. ONNX applies the updates in index order (for reduction 'none' with duplicate
// targets the last update wins; for 'add'/'mul' on floats the order fixes the rounding). The GPU
// reproduces that order exactly, without atomics, by giving every set of updates that can hit a common
// output element to ONE invocation, which applies them serially in index order:
//   ScatterElements: an update keeps its coordinates on every axis but `axis`, so two updates can
//     collide only if they differ just in their `axis` coordinate. One invocation per coordinate of
//     `indices` with the axis coordinate removed loops over that axis in order.
//   ScatterND: a tuple addresses a whole slice data[i_0, ..., i_{k-1}, :, ...]; slices coincide or are
//     disjoint. One invocation per element position inside the slice loops over the tuples in order.
// Every output element is thus written by a single invocation, in CPU order: results match the CPU bit
// for bit (floats included) whatever the duplicates. The price is parallelism: an invocation's latency
// grows with the updates it owns (indices.shape[axis] for ScatterElements, the tuple count for
// ScatterND), and ScatterND with k equal to the data rank (slices of one element) runs all its tuples
// in one invocation. (A parallel last-writer-wins pass for reduction 'none' would need an atomic u32
// temporary, which the program builder does not offer.)
// Both ops first copy data to the output (one dispatch), then scatter (a second dispatch).
#include "ops/indexing.h"
#include "ops/scatter.h"
#include "webgpu/kernels/indexing_util.h"

namespace onnxgpu::webgpu {

namespace {

uint32_t u32(int64_t v) { return uint32_t(v); }

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

void check_index_type(const GpuKernelContext& ctx, size_t i, bool int64_only) {
  DType t = ctx.dtype(i);
  if (t == DType::Int64 || (!int64_only && t == DType::Int32)) return;
  ctx.fail("input " + std::to_string(i) + " ('indices') must be " + (int64_only ? "int64" : "int32 or int64") +
           ", got " + describe_input(ctx, i));
}

// Data is empty but indices address it (the output, or the updates, are not empty): every index is
// out of range. The empty data is not bound (WebGPU cannot bind an empty 64-bit array); one invocation
// raises the flag. Returns true when that is the case.
bool empty_data_indexed(GpuKernelContext& ctx, int64_t indexed) {
  if (shape_numel(ctx.shape(0)) != 0 || indexed == 0) return false;
  auto p = ctx.program("empty_data");
  p.set_threads(1);
  p.body("  flag(FLAG_INDEX);");
  ctx.dispatch(p, {});
  return true;
}

void gather(GpuKernelContext& ctx) {
  const Shape& xs = ctx.shape(0);
  if (xs.empty()) ctx.fail("data must have rank >= 1, got " + describe_input(ctx, 0));
  check_index_type(ctx, 1, false);
  const Shape& is = ctx.shape(1);
  int64_t r = int64_t(xs.size());
  size_t axis = size_t(ctx.normalize_axis(ctx.node.attr_int("axis", 0), r));
  Shape out(xs.begin(), xs.begin() + axis);
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), xs.begin() + axis + 1, xs.end());
  DType t = ctx.dtype(0);
  ctx.set_output(0, t, out);
  if (empty_data_indexed(ctx, shape_numel(out))) return;
  auto p = ctx.program("gather");
  p.input("x", t, xs);
  p.input("idx", ctx.dtype(1), is);
  p.output("y", t, out);
  p.uniform("axis_n", u32(xs[axis]));
  p.uniform("count", u32(shape_numel(is)));
  p.uniform("inner", u32(prod(xs, axis + 1, xs.size())));
  p.declare(kWrapIndex);
  p.set_threads(uint64_t(shape_numel(out)));
  p.body(R"(  let inner_i = gi % inner();
  let t = gi / inner();
  let j = t % count();
  let o = t / count();
  let k = wrap_index(to_i64_$idx(idx_load(j)), axis_n());
  if (k == BAD_INDEX) { return; }
  let src = (o * axis_n() + k) * inner() + inner_i;
  )" + shader::move_element("y", "gi", "x", "src"));
  ctx.dispatch(p, {ctx.in(0), ctx.in(1), ctx.out(0)});
}

// GatherElements / ScatterElements: indices have data's rank and fit in data on every axis but `axis`.
void check_elements_shapes(const GpuKernelContext& ctx, size_t axis) {
  const Shape &xs = ctx.shape(0), &is = ctx.shape(1);
  if (is.size() != xs.size())
    ctx.fail("indices " + describe_input(ctx, 1) + " must have the rank of data " + describe_input(ctx, 0));
  for (size_t d = 0; d < xs.size(); ++d)
    if (d != axis && is[d] > xs[d])
      ctx.fail("indices " + describe_input(ctx, 1) + " is larger than data " + describe_input(ctx, 0) + " on axis " +
               std::to_string(d));
}

void gather_elements(GpuKernelContext& ctx) {
  const Shape& xs = ctx.shape(0);
  if (xs.empty()) ctx.fail("data must have rank >= 1, got " + describe_input(ctx, 0));
  check_index_type(ctx, 1, false);
  size_t axis = size_t(ctx.normalize_axis(ctx.node.attr_int("axis", 0), int64_t(xs.size())));
  check_elements_shapes(ctx, axis);
  const Shape& is = ctx.shape(1);
  DType t = ctx.dtype(0);
  ctx.set_output(0, t, is);
  if (empty_data_indexed(ctx, shape_numel(is))) return;
  auto p = ctx.program("gather_elements");
  p.input("x", t, xs);
  p.input("idx", ctx.dtype(1), is);
  p.output("y", t, is);
  p.declare(kWrapIndex);
  p.set_threads(uint64_t(shape_numel(is)));
  std::string a = std::to_string(axis) + "u";
  p.body(R"(  // data offset of this element's coordinates on every axis but `axis`
  var rem = gi;
  var off = 0u;
  for (var d = i32(idx_rank) - 1i; d >= 0i; d = d - 1i) {
    let c = rem % idx_shape(u32(d));
    rem = rem / idx_shape(u32(d));
    if (u32(d) != )" + a + R"() { off = off + c * x_stride(u32(d)); }
  }
  let k = wrap_index(to_i64_$idx(idx_load(gi)), x_shape()" + a + R"());
  if (k == BAD_INDEX) { return; }
  let src = off + k * x_stride()" + a + R"();
  )" + shader::move_element("y", "gi", "x", "src"));
  ctx.dispatch(p, {ctx.in(0), ctx.in(1), ctx.out(0)});
}

// GatherND / ScatterND addressing (src/ops/indexing.h).
using ops::NDLayout;

NDLayout nd_layout(const GpuKernelContext& ctx, int64_t batch_dims) {
  check_index_type(ctx, 1, true);
  return ops::nd_layout(ctx.shape(0), ctx.shape(1), batch_dims, describe_input(ctx, 0), describe_input(ctx, 1),
                        ctx.fail_fn());
}

// WGSL that sets `off` to the data offset of tuple `t` (plus `base`), or `continue`s / `return`s
// (`on_bad`) after an out-of-range index. `data` is the tensor whose shape the tuple indexes. Empty
// tuples (k = 0) address the whole data: the (empty) indices are then not bound at all.
std::string tuple_offset(int64_t k, const std::string& data, const std::string& t, const std::string& base,
                         const std::string& on_bad) {
  if (k == 0) return "    let off = " + base + ";\n";
  return "    var off = " + base + ";\n"
         "    var bad = false;\n"
         "    for (var m = 0u; m < kdim(); m = m + 1u) {\n"
         "      let w = wrap_index(to_i64_$idx(idx_load(" + t + " * kdim() + m)), " + data + "_shape(bdims() + m));\n"
         "      if (w == BAD_INDEX) { bad = true; break; }\n"
         "      off = off + w * " + data + "_stride(bdims() + m);\n"
         "    }\n"
         "    if (bad) { " + on_bad + " }\n";
}

void gather_nd(GpuKernelContext& ctx) {
  int64_t batch_dims = ctx.opset >= 12 ? ctx.node.attr_int("batch_dims", 0) : 0;
  NDLayout l = nd_layout(ctx, batch_dims);
  const Shape& xs = ctx.shape(0);
  Shape out = l.tuple_shape;
  out.insert(out.end(), xs.begin() + l.b + l.k, xs.end());
  DType t = ctx.dtype(0);
  ctx.set_output(0, t, out);
  if (empty_data_indexed(ctx, shape_numel(out))) return;
  auto p = ctx.program("gather_nd");
  p.input("x", t, xs);
  if (l.k > 0) p.input("idx", ctx.dtype(1), ctx.shape(1));
  p.output("y", t, out);
  p.uniform("kdim", u32(l.k));
  p.uniform("bdims", u32(l.b));
  p.uniform("slice", u32(l.slice));
  p.uniform("per_batch", u32(l.per_batch));
  p.uniform("batch_block", u32(l.batch_block));
  p.declare(kWrapIndex);
  p.set_threads(uint64_t(shape_numel(out)));
  p.body("  let e = gi % slice();\n  let t = gi / slice();\n" +
         tuple_offset(l.k, "x", "t", "(t / per_batch()) * batch_block()", "return;") + "  " +
         shader::move_element("y", "gi", "x", "off + e"));
  if (l.k > 0) ctx.dispatch(p, {ctx.in(0), ctx.in(1), ctx.out(0)});
  else ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

using Reduction = ops::ScatterReduction;

Reduction read_reduction(const GpuKernelContext& ctx) {
  return ops::scatter_reduction(ctx.node, ctx.opset, [&](const std::string& m) { ctx.fail(m); });
}

// WGSL applying update element `ui` of `u` to output element `oi` of `y`. Max and min keep the CPU's
// std::max / std::min semantics (the output element wins ties and NaN comparisons).
std::string apply_update(const Int64Policy& policy, Reduction red, DType t, const std::string& oi, const std::string& ui) {
  switch (red) {
    case Reduction::None: return shader::move_element("y", oi, "u", ui);
    case Reduction::Add: return "y_store(" + oi + ", add_$y(y_load(" + oi + "), u_load(" + ui + ")));";
    case Reduction::Mul: return "y_store(" + oi + ", mul_$y(y_load(" + oi + "), u_load(" + ui + ")));";
    case Reduction::Max:
      return "{ let a = y_load(" + oi + "); let b = u_load(" + ui + "); y_store(" + oi + ", select(a, b, lt_$y(a, b))); }";
    case Reduction::Min:
      return "{ let a = y_load(" + oi + "); let b = u_load(" + ui + "); y_store(" + oi + ", select(a, b, lt_$y(b, a))); }";
  }
  return "";
}

// The first of the two scatter dispatches: output = data.
void copy_data(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  auto p = ctx.program("copy");
  p.input("x", t, ctx.shape(0));
  p.output("y", t, ctx.shape(0));
  p.set_threads(uint64_t(shape_numel(ctx.shape(0))));
  p.body("  " + shader::move_element("y", "gi", "x", "gi"));
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

void check_updates_type(const GpuKernelContext& ctx) {
  if (ctx.dtype(2) != ctx.dtype(0))
    ctx.fail("updates " + describe_input(ctx, 2) + " must have the type of data " + describe_input(ctx, 0));
}

void scatter_elements(GpuKernelContext& ctx) {
  const Shape& xs = ctx.shape(0);
  if (xs.empty()) ctx.fail("data must have rank >= 1, got " + describe_input(ctx, 0));
  check_index_type(ctx, 1, false);
  const Shape& is = ctx.shape(1);
  if (ctx.shape(2) != is)
    ctx.fail("updates " + describe_input(ctx, 2) + " must have the shape of indices " + describe_input(ctx, 1));
  size_t axis = size_t(ctx.normalize_axis(ctx.node.attr_int("axis", 0), int64_t(xs.size())));
  Reduction red = read_reduction(ctx);
  check_elements_shapes(ctx, axis);
  check_updates_type(ctx);
  DType t = ctx.dtype(0);
  ctx.set_output(0, t, xs);
  copy_data(ctx);
  if (shape_numel(is) == 0 || empty_data_indexed(ctx, shape_numel(is))) return;
  auto p = ctx.program("scatter_elements");
  p.input("idx", ctx.dtype(1), is);
  p.input("u", t, is);
  p.output("y", t, xs);
  p.declare(kWrapIndex);
  // One invocation per coordinate of indices without the axis coordinate (see the top of the file).
  p.set_threads(uint64_t(shape_numel(is) / is[axis]));
  std::string a = std::to_string(axis) + "u";
  p.body(R"(  var rem = gi;
  var yoff = 0u;
  var uoff = 0u;
  for (var d = i32(u_rank) - 1i; d >= 0i; d = d - 1i) {
    if (u32(d) == )" + a + R"() { continue; }
    let c = rem % u_shape(u32(d));
    rem = rem / u_shape(u32(d));
    yoff = yoff + c * y_stride(u32(d));
    uoff = uoff + c * u_stride(u32(d));
  }
  for (var j = 0u; j < u_shape()" + a + R"(); j = j + 1u) {
    let ui = uoff + j * u_stride()" + a + R"();
    let k = wrap_index(to_i64_$idx(idx_load(ui)), y_shape()" + a + R"());
    if (k == BAD_INDEX) { continue; }
    let oi = yoff + k * y_stride()" + a + R"();
    )" + apply_update(ctx.policy, red, t, "oi", "ui") + R"(
  })");
  ctx.dispatch(p, {ctx.in(1), ctx.in(2), ctx.out(0)});
}

void scatter_nd(GpuKernelContext& ctx) {
  NDLayout l = nd_layout(ctx, 0);
  const Shape& xs = ctx.shape(0);
  Shape want = l.tuple_shape;
  want.insert(want.end(), xs.begin() + l.k, xs.end());
  if (ctx.shape(2) != want)
    ctx.fail("updates " + describe_input(ctx, 2) + " must have shape " + shape_str(want) + " for indices " +
             describe_input(ctx, 1) + " and data " + describe_input(ctx, 0));
  Reduction red = read_reduction(ctx);
  check_updates_type(ctx);
  DType t = ctx.dtype(0);
  ctx.set_output(0, t, xs);
  copy_data(ctx);
  if (l.tuples == 0 || empty_data_indexed(ctx, l.tuples * l.slice)) return;
  auto p = ctx.program("scatter_nd");
  if (l.k > 0) p.input("idx", ctx.dtype(1), ctx.shape(1));
  p.input("u", t, ctx.shape(2));
  p.output("y", t, xs);
  p.uniform("kdim", u32(l.k));
  p.uniform("bdims", 0);
  p.uniform("slice", u32(l.slice));
  p.uniform("tuples", u32(l.tuples));
  p.declare(kWrapIndex);
  // One invocation per element position inside a slice, looping over the tuples in order.
  p.set_threads(uint64_t(l.slice));
  p.body("  for (var t = 0u; t < tuples(); t = t + 1u) {\n" + tuple_offset(l.k, "y", "t", "0u", "continue;") + "    " +
         apply_update(ctx.policy, red, t, "off + gi", "t * slice() + gi") + "\n  }");
  if (l.k > 0) ctx.dispatch(p, {ctx.in(1), ctx.in(2), ctx.out(0)});
  else ctx.dispatch(p, {ctx.in(2), ctx.out(0)});
}

// TensorScatter: one invocation per output element, which copies the update element written there (its
// batch element's write index read on the GPU; one that does not place the update is flagged) or the
// past element, as raw bits.
void tensor_scatter(GpuKernelContext& ctx) {
  auto ts = ops::tensor_scatter_params(ctx.node, ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.fail_fn());
  const Shape& ps = ctx.shape(0);
  DType t = ctx.dtype(0);
  if (t == DType::String) ctx.unsupported("string tensors");
  if (shape_numel(ps) == 0 || shape_numel(ctx.shape(1)) == 0) {  // nothing written: the past as it is
    ctx.alias_output(0, 0, ps);
    return;
  }
  ctx.set_output(0, t, ps);
  const bool indexed = ctx.has_input(2);
  auto p = ctx.program(std::string("tensor_scatter") + (ts.circular ? "_circular" : "_linear") + (indexed ? "_indexed" : ""));
  p.input("pa", t, ps);
  p.input("up", t, ctx.shape(1));
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1)};
  if (indexed) {
    p.input("wi", DType::Int64, ctx.shape(2));
    binds.push_back(ctx.in(2));
  }
  p.output("y", t, ps);
  binds.push_back(ctx.out(0));
  p.uniform("axis", uint32_t(ts.axis));
  p.uniform("max_seq", uint32_t(ts.max_seq));
  p.uniform("seq", uint32_t(ts.seq));
  p.uniform("mid", uint32_t(prod(ps, 1, size_t(ts.axis))));
  std::string w = "  var w = 0u;\n";
  if (indexed)
    w += "  let wi = to_i64_$wi(wi_load(b));\n"
         "  if (!w64_in_range(wi, " + std::string(ts.circular ? "max_seq()" : "max_seq() - seq() + 1u") + ")) { flag(FLAG_INDEX); return; }\n"
         "  w = w64_as_u32(wi);\n";
  p.set_threads(uint64_t(shape_numel(ps)));
  p.body("  let inner = pa_stride(axis());\n"
         "  let pos = (gi / inner) % max_seq();\n"
         "  let ob = gi / (inner * max_seq());\n"
         "  let b = ob / mid();\n" + w +
         (ts.circular ? "  let rel = (pos + max_seq() - w) % max_seq();\n  let inside = rel < seq();\n"
                      : "  let rel = pos - w;\n  let inside = pos >= w && rel < seq();\n") +
         "  if (inside) { y_store_raw(gi, up_raw((ob * seq() + rel) * inner + gi % inner)); } else { y_store_raw(gi, pa_raw(gi)); }");
  ctx.dispatch(p, binds);
}

// Compress: the kept indices (ops::compress_keep, from the condition known at plan time: its values
// key the plan) in a uniform array; one invocation per output element moves its source element as raw
// bits.
void compress(GpuKernelContext& ctx) {
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  if (t == DType::String) ctx.unsupported("string tensors");
  const bool flat = !ctx.node.has_attr("axis");
  const Shape src = flat ? Shape{shape_numel(xs)} : xs;
  if (!flat && xs.empty()) ctx.fail("input must have rank >= 1 when axis is given, got shape " + shape_str(xs));
  const int64_t axis = flat ? 0 : ctx.normalize_axis(ctx.node.attr_int("axis", 0), int64_t(xs.size()));
  const int64_t n = src[size_t(axis)];
  std::vector<int64_t> keep = ops::compress_keep(ctx.constant(1, "condition"), n,
                                                 "axis " + std::to_string(axis) + " (size " + std::to_string(n) + ")", ctx.fail_fn());
  if (keep.size() > 4096) ctx.unsupported("more than 4096 kept indices (they travel as uniforms)");
  Shape out = src;
  out[size_t(axis)] = int64_t(keep.size());
  ctx.set_output(0, t, out);
  if (shape_numel(out) == 0) return;
  auto p = ctx.program("compress");
  p.input("x", t, xs);
  p.output("y", t, out);
  p.uniform_array("keep", std::vector<uint32_t>(keep.begin(), keep.end()));
  p.uniform("n", uint32_t(n));
  p.uniform("m", uint32_t(keep.size()));
  p.uniform("inner", uint32_t(prod(src, size_t(axis) + 1, src.size())));
  p.set_threads(uint64_t(shape_numel(out)));
  p.body("  let i = gi % inner();\n  let j = (gi / inner()) % m();\n  let o = gi / (inner() * m());\n"
         "  y_store_raw(gi, x_raw((o * n() + keep(j)) * inner() + i));");
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

}  // namespace

void register_indexing(GpuKernelRegistry& r) {
  r.add("Compress", compress);
  r.add("TensorScatter", tensor_scatter);
  r.add("Gather", gather);
  r.add("GatherElements", gather_elements);
  r.add("GatherND", gather_nd);
  r.add("ScatterElements", scatter_elements);
  r.add("Scatter", scatter_elements);
  r.add("ScatterND", scatter_nd);
}

}  // namespace onnxgpu::webgpu
