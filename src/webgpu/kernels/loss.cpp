// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on the GPU, as the CPU reference (src/cpu/loss.cpp).
//
// Input [N, C, d1..dk] is seen as [N, C, D], target [N, d1..dk] as M = N*D elements. One invocation per
// target element computes loss = -w * lp[n, target, d] with w = weight[target] (1 without weights, 0 where
// target == ignore_index); a target outside [0, C) that is not ignored flags FLAG_INDEX and is skipped.
// reduction 'none' stores the losses; 'sum'/'mean' store losses and weights into an f32 temp and a second,
// single-workgroup dispatch sums them with a shared-memory tree ('mean' = sum(loss) / sum(w)).
// SoftmaxCrossEntropyLoss first runs a log-softmax over C (one workgroup per (n, d) line) into an f32 temp
// (and into the log_prob output when wanted), then the NLL dispatches on that temp.
#include <string>

#include "ops/loss.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/reduce_util.h"

namespace onnxgpu::webgpu {

namespace {

namespace ru = reduce_util;

struct LossShape {
  uint64_t n = 0, c = 0, d = 1;
  uint64_t m() const { return n * d; }
};

LossShape loss_shape(GpuKernelContext& ctx, const char* what) {
  ops::LossShape ls = ops::loss_shape(ctx.node, ctx.shape(0), what, [&](const std::string& m) { ctx.fail(m); });
  LossShape s{uint64_t(ls.n), uint64_t(ls.c), uint64_t(ls.d)};
  if (s.n * s.c * s.d >= (uint64_t(1) << 32)) ctx.unsupported("input 0 has 2^32 elements or more");
  return s;
}

// The NLL dispatches on log-probabilities `lp` (dtype lp_dtype, [N, C, D]); output 0 gets dtype `out`.
void nll_dispatches(GpuKernelContext& ctx, const LossShape& s, ValueRef lp, DType lp_dtype, const Shape& lp_shape, DType out) {
  DType tdt = ctx.dtype(1);
  bool weighted = ctx.has_input(2);
  ops::LossTerms terms = ops::loss_terms(ctx.node, ctx.dtype(0), ctx.shape(0), tdt, ctx.shape(1),
                                         weighted ? ctx.dtype(2) : DType::Undefined,
                                         weighted ? ctx.shape(2) : Shape{}, [&](const std::string& m) { ctx.fail(m); });
  bool has_ignore = terms.ignore_index.has_value();
  int64_t ignore = terms.ignore_index.value_or(0);
  bool none = terms.reduction == ops::LossReduction::None;
  const std::string reduction = terms.reduction == ops::LossReduction::Sum ? "sum" : "mean";  // the program's name

  ctx.set_output(0, out, none ? ctx.shape(1) : Shape{});
  uint64_t m = s.m();
  ValueRef lw{};
  if (!none) lw = ctx.temp(DType::Float32, Shape{int64_t(2 * (m ? m : 1))});

  if (m > 0) {
    auto p = ctx.program(none ? "nll" : "nll_terms");
    p.input("lp", lp_dtype, lp_shape);
    p.input("tg", tdt, ctx.shape(1));
    if (weighted) p.input("w", ctx.dtype(2), ctx.shape(2));
    if (none) p.output("y", out, ctx.shape(1));
    else p.output("lw", DType::Float32, Shape{int64_t(2 * m)});
    p.uniform("num_el", uint32_t(m));
    p.uniform("classes", uint32_t(s.c));
    p.uniform("inner", uint32_t(s.d));
    if (has_ignore) p.uniform_i64("ignore", ignore);
    p.set_threads(m);
    std::string body =
        "  let i = gi;\n"
        "  let n = i / inner();\n"
        "  let k = i % inner();\n"
        "  let tc = to_i64_$tg(tg_load(i));\n"
        "  var loss = 0.0;\n"
        "  var wt = 0.0;\n";
    body += has_ignore ? "  if (!w64_eq(tc, ignore())) {\n" : "  {\n";
    body +=
        "    if (!w64_in_range(tc, classes())) {\n"
        "      flag_index(tc);\n"
        "    } else {\n"
        "      let c = w64_as_u32(tc);\n";
    body += weighted ? "      wt = w_load(c);\n" : "      wt = 1.0;\n";
    body +=
        "      loss = -wt * lp_load((n * classes() + c) * inner() + k);\n"
        "    }\n"
        "  }\n";
    body += none ? "  y_store(i, loss);\n" : "  lw_store(i, loss);\n  lw_store(num_el() + i, wt);\n";
    p.body(body);
    std::vector<ValueRef> b{lp, ctx.in(1)};
    if (weighted) b.push_back(ctx.in(2));
    b.push_back(none ? ctx.out(0) : lw);
    ctx.dispatch(p, b);
  }
  if (none) return;

  uint32_t wg = ru::workgroup_size(ctx.limits, 8);
  auto r = ctx.program(reduction, wg);
  r.input("lw", DType::Float32, Shape{int64_t(2 * (m ? m : 1))});
  r.output("y", out, Shape{});
  r.uniform("num_el", uint32_t(m));
  std::string w = std::to_string(wg);
  r.declare("const WG: u32 = " + w + "u;\n"
            "var<workgroup> sl: array<f32, " + w + ">;\n"
            "var<workgroup> sw: array<f32, " + w + ">;\n");
  std::string body =
      "  var a = 0.0;\n"
      "  var b = 0.0;\n"
      "  for (var i = lid; i < num_el(); i = i + WG) {\n"
      "    a = a + lw_load(i);\n"
      "    b = b + lw_load(num_el() + i);\n"
      "  }\n"
      "  sl[lid] = a;\n"
      "  sw[lid] = b;\n"
      "  workgroupBarrier();\n"
      "  for (var s = WG / 2u; s > 0u; s = s >> 1u) {\n"
      "    if (lid < s) {\n"
      "      sl[lid] = sl[lid] + sl[lid + s];\n"
      "      sw[lid] = sw[lid] + sw[lid + s];\n"
      "    }\n"
      "    workgroupBarrier();\n"
      "  }\n";
  body += reduction == "mean" ? "  if (lid == 0u) { y_store(0u, sl[0] / sw[0]); }\n"
                              : "  if (lid == 0u) { y_store(0u, sl[0]); }\n";
  r.body(body);
  ctx.dispatch(r, {lw, ctx.out(0)}, 1, 1, 1);
}

void nll_loss(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (t != DType::Float16 && t != DType::Float32 && t != DType::Float64)
    ctx.fail("input 0 ('" + ctx.node.inputs[0] + "') must be float16, float or double, got " + std::string(dtype_name(t)));
  LossShape s = loss_shape(ctx, "input");
  nll_dispatches(ctx, s, ctx.in(0), t, ctx.shape(0), t);
}

void softmax_cross_entropy(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (!kFloatTypes.has(t))
    ctx.fail("input 0 ('" + ctx.node.inputs[0] + "') must be a float tensor, got " + std::string(dtype_name(t)));
  LossShape s = loss_shape(ctx, "scores");
  const Shape& xs = ctx.shape(0);
  uint64_t numel = s.n * s.c * s.d;
  bool want_lp = ctx.output_wanted(1);
  if (want_lp) ctx.set_output(1, t, xs);
  ValueRef lp = ctx.temp(DType::Float32, Shape{int64_t(numel ? numel : 1)});
  uint64_t groups = s.m();
  if (numel > 0) {
    uint32_t wg = ru::workgroup_size(ctx.limits, 4);
    auto p = ctx.program("logsoftmax", wg);
    p.input("x", t, xs);
    p.output("lp", DType::Float32, Shape{int64_t(numel)});
    if (want_lp) p.output("lpo", t, xs);
    p.uniform("groups", uint32_t(groups));
    p.uniform("classes", uint32_t(s.c));
    p.uniform("inner", uint32_t(s.d));
    std::string w = std::to_string(wg);
    p.declare("const WG: u32 = " + w + "u;\n"
              "var<workgroup> sv: array<f32, " + w + ">;\n"
              "// max that ignores NaN (the CPU's fmax).\n"
              "fn fmax_nan(a: f32, b: f32) -> f32 { return select(a, b, b > a || isnan_f32(a)); }\n");
    std::string body =
        "  if (wg >= groups()) { return; }\n"
        "  let base = (wg / inner()) * classes() * inner() + wg % inner();\n"
        "  var mpart = -f32_inf();\n"
        "  for (var i = lid; i < classes(); i = i + WG) { mpart = fmax_nan(mpart, x_load(base + i * inner())); }\n"
        "  sv[lid] = mpart;\n"
        "  workgroupBarrier();\n"
        "  for (var s = WG / 2u; s > 0u; s = s >> 1u) {\n"
        "    if (lid < s) { sv[lid] = fmax_nan(sv[lid], sv[lid + s]); }\n"
        "    workgroupBarrier();\n"
        "  }\n"
        "  let mx = sv[0];\n"
        "  let shift = select(mx, 0.0, abs(mx) == f32_inf());\n"
        "  workgroupBarrier();\n"
        "  var spart = 0.0;\n"
        "  for (var i = lid; i < classes(); i = i + WG) { spart = spart + exp_f32(x_load(base + i * inner()) - shift); }\n"
        "  sv[lid] = spart;\n"
        "  workgroupBarrier();\n"
        "  for (var s = WG / 2u; s > 0u; s = s >> 1u) {\n"
        "    if (lid < s) { sv[lid] = sv[lid] + sv[lid + s]; }\n"
        "    workgroupBarrier();\n"
        "  }\n"
        "  let log_sum = log_f32(sv[0]);\n"
        "  for (var i = lid; i < classes(); i = i + WG) {\n"
        "    let at = base + i * inner();\n"
        "    let v = (x_load(at) - shift) - log_sum;\n"
        "    lp_store(at, v);\n";
    if (want_lp) body += "    lpo_store(at, v);\n";
    body += "  }\n";
    p.body(body);
    std::vector<ValueRef> b{ctx.in(0), lp};
    if (want_lp) b.push_back(ctx.out(1));
    ru::dispatch_rows(ctx, p, b, groups, p.workgroup_size());  // one workgroup per row
  }
  nll_dispatches(ctx, s, lp, DType::Float32, Shape{int64_t(numel ? numel : 1)}, t);
}

}  // namespace

void register_loss(GpuKernelRegistry& r) {
  r.add("NegativeLogLikelihoodLoss", nll_loss);
  r.add("SoftmaxCrossEntropyLoss", softmax_cross_entropy);
}

}  // namespace onnxgpu::webgpu
