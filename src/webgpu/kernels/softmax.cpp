// Softmax, LogSoftmax, Hardmax on the GPU: one workgroup segment per row (a whole workgroup for a long
// row, a share of one for short rows; reduce_util.h), shared-memory tree reductions for the row maximum
// (or first maximum) and the sum of exponentials.
// The rows are ops::softmax_rows, seen as [outer, n, inner]. As the CPU reference: the row maximum ignores NaN, a row whose maximum is infinite
// is not shifted (IEEE decides), and Hardmax marks the first maximum.
#include <string>

#include "ops/softmax.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/reduce_util.h"

namespace onnxgpu::webgpu {

namespace {

namespace ru = reduce_util;

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

void softmax_kernel(GpuKernelContext& ctx, SoftmaxKind kind) {
  DType t = ctx.dtype(0);
  if (!kFloatTypes.has(t)) ctx.fail("input 0 must be a float tensor, got " + std::string(dtype_name(t)));
  const Shape& in = ctx.shape(0);
  ops::AxisSplit s = ops::softmax_rows(ctx.node, ctx.opset, in, [&](const std::string& m) { ctx.fail(m); });
  ctx.set_output(0, t, in);
  uint64_t groups = s.outer * s.inner;
  if (groups == 0 || s.n == 0) return;

  bool hard = kind == SoftmaxKind::Hardmax;
  uint32_t wg = ru::workgroup_size(ctx.limits, hard ? 8 : 4);
  const char* name = kind == SoftmaxKind::Softmax ? "softmax" : kind == SoftmaxKind::LogSoftmax ? "logsoftmax" : "hardmax";
  uint32_t seg = ru::segment_size(s.n, wg);
  auto p = ctx.program(name, wg);
  p.input("x", t, in);
  p.output("y", t, in);
  ru::segment_uniforms(p, groups, seg);
  p.uniform("n", uint32_t(s.n));
  p.uniform("inner", uint32_t(s.inner));
  std::string w = std::to_string(wg);
  std::string decl = "const WG: u32 = " + w + "u;\n"
                     "var<workgroup> sv: array<f32, " + w + ">;\n";
  if (hard) decl += "var<workgroup> si: array<u32, " + w + ">;\n";
  decl +=
      "// max that ignores NaN (the CPU's `v > mx` scan from -inf).\n"
      "fn fmax_nan(a: f32, b: f32) -> f32 { return select(a, b, b > a); }\n";
  decl += ru::kExpLog;
  p.declare(decl);
  std::string body = std::string(ru::kSegmentPrelude) +
                     "  let base = (row / inner()) * n() * inner() + row % inner();\n"
                     "  let len = select(0u, n(), live);\n";
  if (hard) {
    // The first index of the largest value (NaN counts as -inf; a row of -inf marks index 0).
    body +=
        "  var bv = -f32_inf();\n"
        "  var bi = 0xffffffffu;\n"
        "  for (var i = lane; i < len; i = i + S) {\n"
        "    let x = x_load(base + i * inner());\n"
        "    let v = select(x, -f32_inf(), isnan_f32(x));\n"
        "    if (v > bv || (v == bv && i < bi)) { bv = v; bi = i; }\n"
        "  }\n"
        "  sv[lid] = bv;\n"
        "  si[lid] = bi;\n" +
        ru::segment_tree("      let v = sv[lid + s];\n"
                         "      let i = si[lid + s];\n"
                         "      if (v > sv[lid] || (v == sv[lid] && i < si[lid])) { sv[lid] = v; si[lid] = i; }\n") +
        "  let arg = si[head];\n"
        "  for (var i = lane; i < len; i = i + S) { y_store(base + i * inner(), select(0.0, 1.0, i == arg)); }\n";
  } else {
    body +=
        "  var mpart = -f32_inf();\n"
        "  for (var i = lane; i < len; i = i + S) { mpart = fmax_nan(mpart, x_load(base + i * inner())); }\n"
        "  sv[lid] = mpart;\n" +
        ru::segment_tree("      sv[lid] = fmax_nan(sv[lid], sv[lid + s]);\n") +
        "  let mx = sv[head];\n"
        "  let shift = select(mx, 0.0, abs(mx) == f32_inf());\n"
        "  workgroupBarrier();\n"
        "  var spart = 0.0;\n"
        "  for (var i = lane; i < len; i = i + S) { spart = spart + exp_shifted(x_load(base + i * inner()), shift); }\n"
        "  sv[lid] = spart;\n" +
        ru::segment_tree("      sv[lid] = sv[lid] + sv[lid + s];\n") +
        "  let sum = sv[head];\n";
    body += kind == SoftmaxKind::Softmax
                ? "  for (var i = lane; i < len; i = i + S) {\n"
                  "    let at = base + i * inner();\n"
                  "    y_store(at, exp_shifted(x_load(at), shift) / sum);\n"
                  "  }\n"
                : "  let log_sum = log_f32(sum);\n"
                  "  for (var i = lane; i < len; i = i + S) {\n"
                  "    let at = base + i * inner();\n"
                  "    y_store(at, (x_load(at) - shift) - log_sum);\n"
                  "  }\n";
  }
  p.body(body);
  ru::dispatch_rows(ctx, p, {ctx.in(0), ctx.out(0)}, groups, seg);
}

}  // namespace

void register_softmax(GpuKernelRegistry& r) {
  r.add("Softmax", [](GpuKernelContext& ctx) { softmax_kernel(ctx, SoftmaxKind::Softmax); });
  r.add("LogSoftmax", [](GpuKernelContext& ctx) { softmax_kernel(ctx, SoftmaxKind::LogSoftmax); });
  r.add("Hardmax", [](GpuKernelContext& ctx) { softmax_kernel(ctx, SoftmaxKind::Hardmax); });
}

}  // namespace onnxgpu::webgpu
