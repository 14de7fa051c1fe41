// TopK on the GPU: one workgroup segment per row (the line along `axis`, the tensor seen as
// [outer, n, inner]; a whole workgroup for a long row, a share of one for short rows, reduce_util.h).
// The K results come out in K rounds: each round the segment finds, with a shared-memory tree, the
// element that comes first in the output order among those after the previous round's pick. The order
// is total (as the CPU reference's stable sort): by value (largest or smallest first; NaN counts as the
// largest value), then by index, lower first. Comparisons use the input family's helpers (gt_$x, lt_$x),
// so INT64 values are ordered exactly. K must be known at plan time (it sets the output shape).
// Cost: K passes over the row, fine for the usual small K; a full sort of a long row is quadratic.
#include <string>

#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/reduce_util.h"

namespace onnxgpu::webgpu {

namespace {

namespace ru = reduce_util;

void topk_kernel(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (!kNumericTypes.has(t) || t == DType::BFloat16)
    ctx.fail("input 0 has unsupported element type " + std::string(dtype_name(t)));
  const Shape& in = ctx.shape(0);
  int64_t rank = int64_t(in.size());
  if (rank == 0) ctx.fail("input 0 must have rank >= 1, got a scalar");
  int64_t k;
  if (ctx.opset >= 10) {
    const Tensor& kt = ctx.constant(1, "K");
    if (kt.dtype() != DType::Int64 || kt.numel() != 1 || kt.rank() > 1)
      ctx.fail("input 1 (K) must be a 1-element int64 tensor, got " + kt.describe());
    k = kt.int_at(0);
  } else {
    if (!ctx.node.has_attr("k")) ctx.fail("attribute 'k' is required");
    k = ctx.node.attr_int("k", 0);
  }
  int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", -1), rank);
  bool largest = ctx.node.attr_int("largest", 1) != 0;
  ru::AxisSplit s = ru::split_at_axis(in, axis);
  if (k < 0 || uint64_t(k) > s.n)
    ctx.fail("K = " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) + " of size " +
             std::to_string(s.n) + " (input 0 shape " + shape_str(in) + ")");
  Shape out = in;
  out[size_t(axis)] = k;
  ctx.set_output(0, t, out);
  ctx.set_output(1, DType::Int64, out);
  uint64_t groups = s.outer * s.inner;
  if (groups == 0 || k == 0) return;

  uint32_t wg = ru::workgroup_size(ctx.limits, shader::type_info(t, ctx.policy).value_bytes + 4);
  uint32_t seg = ru::segment_size(s.n, wg);
  auto p = ctx.program(largest ? "largest" : "smallest", wg);
  p.input("x", t, in);
  p.output("values", t, out);
  p.output("indices", DType::Int64, out);
  ru::segment_uniforms(p, groups, seg);
  p.uniform("n", uint32_t(s.n));
  p.uniform("k", uint32_t(k));
  p.uniform("inner", uint32_t(s.inner));
  std::string w = std::to_string(wg);
  // before(a, ia, b, ib): (a, ia) comes first in the output. NaN is the largest value.
  std::string nan_first = largest ? "na" : "nb";
  std::string cmp = largest ? "gt_$x" : "lt_$x";
  std::string decl = "const WG: u32 = " + w + "u;\n"
          "const NONE: u32 = 0xffffffffu;\n"
          "var<workgroup> sv: array<x_t, " + w + ">;\n"
          "var<workgroup> si: array<u32, " + w + ">;\n"
          "fn before(a: x_t, ia: u32, b: x_t, ib: u32) -> bool {\n"
          "  if (ib == NONE) { return ia != NONE; }\n"
          "  if (ia == NONE) { return false; }\n"
          "  let na = isnan_$x(a);\n"
          "  let nb = isnan_$x(b);\n"
          "  if (na || nb) {\n"
          "    if (na && nb) { return ia < ib; }\n"
          "    return " + nan_first + ";\n"
          "  }\n"
          "  if (" + cmp + "(a, b)) { return true; }\n"
          "  if (" + cmp + "(b, a)) { return false; }\n"
          "  return ia < ib;\n"
          "}\n";
  p.declare(decl);
  p.body(std::string(ru::kSegmentPrelude) +
         "  let o = row / inner();\n"
         "  let kin = row % inner();\n"
         "  let base = o * n() * inner() + kin;\n"
         "  let obase = o * k() * inner() + kin;\n"
         "  let len = select(0u, n(), live);\n"
         "  var prev_v = zero_$x();\n"
         "  var prev_i = NONE;\n"
         "  for (var j = 0u; j < k(); j = j + 1u) {\n"
         "    var bv = zero_$x();\n"
         "    var bi = NONE;\n"
         "    for (var i = lane; i < len; i = i + S) {\n"
         "      let v = x_load(base + i * inner());\n"
         "      if ((prev_i == NONE || before(prev_v, prev_i, v, i)) && before(v, i, bv, bi)) { bv = v; bi = i; }\n"
         "    }\n"
         "    sv[lid] = bv;\n"
         "    si[lid] = bi;\n" +
         ru::segment_tree("      if (before(sv[lid + s], si[lid + s], sv[lid], si[lid])) {\n"
                          "        sv[lid] = sv[lid + s];\n"
                          "        si[lid] = si[lid + s];\n"
                          "      }\n") +
         "    prev_v = sv[head];\n"
         "    prev_i = si[head];\n"
         "    if (live && lane == 0u && prev_i != NONE) {\n"
         "      let at = obase + j * inner();\n"
         "      values_store(at, x_load(base + prev_i * inner()));\n"
         "      indices_store(at, from_i64_$indices(w64_from_u32(prev_i)));\n"
         "    }\n"
         "    workgroupBarrier();\n"
         "  }\n");
  ru::dispatch_rows(ctx, p, {ctx.in(0), ctx.out(0), ctx.out(1)}, groups, seg);
}

}  // namespace

void register_sort(GpuKernelRegistry& r) { r.add("TopK", topk_kernel); }

}  // namespace onnxgpu::webgpu
