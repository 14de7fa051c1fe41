// GridSample and AffineGrid on the GPU: one invocation per output element. The rules are src/ops/grid's
// (shapes, attributes); the WGSL below follows its per-axis arithmetic in f32: the grid value's input
// coordinate (denormalized, nearest-rounded, an outside one clamped or reflected), then each axis' taps
// (1, 2 or 4: an index outside the axis reads 0, is clamped or is reflected) and weights, multiplied
// over the axes. The attributes are baked into the program; sizes come from the tensors' shapes.
#include <string>

#include "ops/grid.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

namespace {

using ops::GridSampleAttrs;

// The helpers of one GridSample configuration: g_coord(v, n) (the input coordinate of grid value v
// along an axis of n elements), g_tap(i, n) (a tap's index, or -1 for a zero) and g_weight(f, j) (tap
// j's weight for fraction f).
std::string grid_helpers(const GridSampleAttrs& a) {
  const bool align = a.align_corners;
  std::string s =
      "fn g_low() -> f32 { return " + std::string(align ? "0.0" : "-0.5") + "; }\n"
      "fn g_high(n: u32) -> f32 { return f32(n) - " + std::string(align ? "1.0" : "0.5") + "; }\n"
      "fn g_reflect(x: f32, lo: f32, hi: f32) -> f32 {\n"
      "  let range = hi - lo;\n"
      "  if (x < lo) { let dx = lo - x; let k = trunc(dx / range); let r = dx - k * range; return select(hi - r, lo + r, k % 2.0 == 0.0); }\n"
      "  if (x > hi) { let dx = x - hi; let k = trunc(dx / range); let r = dx - k * range; return select(lo + r, hi - r, k % 2.0 == 0.0); }\n"
      "  return x;\n"
      "}\n";
  s += "fn g_coord(v: f32, n: u32) -> f32 {\n";
  s += align ? "  var x = (v + 1.0) / 2.0 * (f32(n) - 1.0);\n" : "  var x = ((v + 1.0) * f32(n) - 1.0) / 2.0;\n";
  if (a.mode == GridSampleAttrs::Mode::Nearest) s += "  x = round(x);\n";  // half to even, as the reference's rint
  s += "  let lo = g_low();\n  let hi = g_high(n);\n";
  if (a.padding == GridSampleAttrs::Padding::Border) s += "  if (x < lo || x > hi) { x = clamp(x, 0.0, f32(n) - 1.0); }\n";
  if (a.padding == GridSampleAttrs::Padding::Reflection) s += "  if (x < lo || x > hi) { x = g_reflect(x, lo, hi); }\n";
  s += "  return x;\n}\n";
  s += "fn g_tap(i: i32, n: u32) -> i32 {\n";
  switch (a.padding) {
    case GridSampleAttrs::Padding::Zeros: s += "  return select(-1i, i, i >= 0i && i < i32(n));\n"; break;
    case GridSampleAttrs::Padding::Border: s += "  return clamp(i, 0i, i32(n) - 1i);\n"; break;
    case GridSampleAttrs::Padding::Reflection: s += "  return i32(trunc(g_reflect(f32(i), g_low(), g_high(n))));\n"; break;
  }
  s += "}\n";
  s += "fn g_weight(f: f32, j: u32) -> f32 {\n";
  switch (a.mode) {
    case GridSampleAttrs::Mode::Nearest: s += "  return 1.0;\n"; break;
    case GridSampleAttrs::Mode::Linear: s += "  return select(f, 1.0 - f, j == 0u);\n"; break;
    case GridSampleAttrs::Mode::Cubic:
      // ops::grid_cubic_coeffs (A = -0.75).
      s += "  let A = -0.75;\n"
           "  let x = abs(f);\n"
           "  if (j == 0u) { return ((A * (x + 1.0) - 5.0 * A) * (x + 1.0) + 8.0 * A) * (x + 1.0) - 4.0 * A; }\n"
           "  if (j == 1u) { return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0; }\n"
           "  if (j == 2u) { return ((A + 2.0) * (1.0 - x) - (A + 3.0)) * (1.0 - x) * (1.0 - x) + 1.0; }\n"
           "  return ((A * (2.0 - x) - 5.0 * A) * (2.0 - x) + 8.0 * A) * (2.0 - x) - 4.0 * A;\n";
      break;
  }
  s += "}\n";
  return s;
}

void grid_sample(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0), gt = ctx.dtype(1);
  if (!dtype_is_float(t)) ctx.fail("input 'X' must be a float tensor, got " + std::string(dtype_name(t)));
  if (!dtype_is_float(gt)) ctx.fail("input 'grid' must be a float tensor, got " + std::string(dtype_name(gt)));
  const Shape& xs = ctx.shape(0);
  const Shape& gs = ctx.shape(1);
  Shape out;
  GridSampleAttrs a = ops::grid_sample_attrs(ctx.node, xs, gs, out, ctx.fail_fn());
  const uint32_t d = uint32_t(xs.size() - 2), K = uint32_t(a.taps());
  if (d > 3) ctx.unsupported(std::to_string(d) + "-D sampling (the GPU kernel takes 1 to 3 spatial dims)");
  ctx.set_output(0, t, out);
  if (shape_numel(out) == 0) return;
  uint32_t combos = 1;
  for (uint32_t k = 0; k < d; ++k) combos *= K;
  const std::string mode = a.mode == GridSampleAttrs::Mode::Nearest ? "nearest" : a.mode == GridSampleAttrs::Mode::Linear ? "linear" : "cubic";
  const std::string pad = a.padding == GridSampleAttrs::Padding::Zeros ? "zeros" : a.padding == GridSampleAttrs::Padding::Border ? "border" : "reflection";
  auto p = ctx.program("grid_sample_" + std::to_string(d) + "d_" + mode + "_" + pad + (a.align_corners ? "_align" : ""));
  p.input("x", t, xs);
  p.input("g", gt, gs);
  p.output("y", t, out);
  p.declare("const D: u32 = " + u32_lit(d) + ";\nconst K: u32 = " + u32_lit(K) + ";\nconst COMBOS: u32 = " + u32_lit(combos) +
            ";\n" + grid_helpers(a));
  // Tap j of axis k reads index base + j + first (first: 0 nearest and linear, -1 cubic).
  std::string first = a.mode == GridSampleAttrs::Mode::Cubic ? "-1i" : "0i";
  std::string taps =
      a.mode == GridSampleAttrs::Mode::Nearest
          ? "    idx[k * K] = g_tap(i32(trunc(c)), len);\n    w[k * K] = 1.0;\n"
          : "    let b = floor(c);\n"
            "    for (var j = 0u; j < K; j = j + 1u) {\n"
            "      idx[k * K + j] = g_tap(i32(b) + i32(j) + " + first + ", len);\n"
            "      w[k * K + j] = g_weight(c - b, j);\n"
            "    }\n";
  p.set_threads(uint64_t(shape_numel(out)));
  p.body(
      "  let points = y_numel() / (y_shape(0u) * y_shape(1u));\n"
      "  let pt = gi % points;\n"
      "  let nc = gi / points;\n"
      "  let n = nc / y_shape(1u);\n"
      "  var idx: array<i32, " + std::to_string(d * K) + ">;\n"
      "  var w: array<f32, " + std::to_string(d * K) + ">;\n"
      "  for (var k = 0u; k < D; k = k + 1u) {\n"
      "    let len = x_shape(2u + k);\n"
      "    let c = g_coord(to_f32_$g(g_load((n * points + pt) * D + (D - 1u - k))), len);\n"  // the grid lists axes backwards
      + taps +
      "  }\n"
      "  let plane = nc * x_stride(1u);\n"
      "  var acc = 0.0;\n"
      "  for (var t = 0u; t < COMBOS; t = t + 1u) {\n"
      "    var tr = t;\n"
      "    var off = plane;\n"
      "    var wt = 1.0;\n"
      "    var zero = false;\n"
      "    for (var k = 0u; k < D; k = k + 1u) {\n"
      "      let j = tr % K;\n"
      "      tr = tr / K;\n"
      "      let i = idx[k * K + j];\n"
      "      if (i < 0i) { zero = true; }\n"
      "      off = off + u32(max(i, 0i)) * x_stride(2u + k);\n"
      "      wt = wt * w[k * K + j];\n"
      "    }\n"
      "    if (!zero) { acc = acc + wt * to_f32_$x(x_load(off)); }\n"
      "  }\n"
      "  y_store(gi, from_f32_$y(acc));");
  ctx.dispatch(p, {ctx.in(0), ctx.in(1), ctx.out(0)});
}

void affine_grid(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (!dtype_is_float(t)) ctx.fail("input 'theta' must be a float tensor, got " + std::string(dtype_name(t)));
  if (ctx.dtype(1) != DType::Int64) ctx.fail("input 'size' must be int64, got " + std::string(dtype_name(ctx.dtype(1))));
  const Tensor& size_t_ = ctx.constant(1, "size");
  std::vector<int64_t> size(size_t(size_t_.numel()));
  for (int64_t i = 0; i < size_t_.numel(); ++i) size[size_t(i)] = size_t_.int_at(i);
  Shape out = ops::affine_grid_shape(ctx.shape(0), size, ctx.fail_fn());
  ctx.set_output(0, t, out);
  if (shape_numel(out) == 0) return;
  const uint32_t d = uint32_t(size.size() - 2);
  bool align = ctx.node.attr_int("align_corners", 0) != 0;
  auto p = ctx.program("affine_grid_" + std::to_string(d) + "d" + (align ? "_align" : ""));
  p.input("th", t, ctx.shape(0));
  p.output("y", t, out);
  // ops::affine_grid_base: the base coordinate of index i along an axis of n elements.
  p.declare("const D: u32 = " + u32_lit(d) + ";\n"
            "fn base(i: u32, n: u32) -> f32 {\n" +
            std::string(align ? "  if (n <= 1u) { return -1.0; }\n  return -1.0 + 2.0 * f32(i) / f32(n - 1u);\n"
                              : "  return (2.0 * f32(i) + 1.0) / f32(n) - 1.0;\n") +
            "}\n");
  p.set_threads(uint64_t(shape_numel(out)));
  // y[n, pos..., r] = sum_c theta[n, r, c] * base_c + theta[n, r, D], base_c along axis D - 1 - c (x first).
  p.body(
      "  let r = gi % D;\n"
      "  var rest = gi / D;\n"
      "  var pos: array<u32, 3>;\n"
      "  for (var k = D; k > 0u; k = k - 1u) { pos[k - 1u] = rest % y_shape(k); rest = rest / y_shape(k); }\n"
      "  let n = rest;\n"
      "  let row = (n * D + r) * (D + 1u);\n"
      "  var s = to_f32_$th(th_load(row + D));\n"
      "  for (var c = 0u; c < D; c = c + 1u) {\n"
      "    let axis = D - 1u - c;\n"
      "    s = s + to_f32_$th(th_load(row + c)) * base(pos[axis], y_shape(1u + axis));\n"
      "  }\n"
      "  y_store(gi, from_f32_$y(s));");
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

}  // namespace

void register_grid(GpuKernelRegistry& r) {
  r.add("GridSample", grid_sample);
  r.add("AffineGrid", affine_grid);
}

}  // namespace onnxgpu::webgpu
