// Pools on the GPU: AveragePool (and com.microsoft's QLinearAveragePool), MaxPool (with the optional Indices
// output), LpPool — one invocation per output element walking its window — and GlobalAveragePool, GlobalMaxPool, GlobalLpPool — a segment
// of a workgroup per (n, c) row, sized by the row (reduce_util.h), with a shared-memory tree reduction. Window geometry and output shapes are the CPU
// reference's (src/cpu/pool.cpp, ops::make_window); sums are accumulated in f32. LRN and RoiAlign: one
// invocation per output element.
#include <algorithm>

#include "ops/pool.h"
#include "ops/qlinear.h"
#include "webgpu/kernels/conv_util.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/reduce_util.h"
#include "webgpu/device.h"

namespace onnxgpu::webgpu {

namespace {

enum class PoolKind { Average, Max, Lp };

bool pool_type(DType t) { return t == DType::Float16 || t == DType::Float32 || t == DType::Float64; }

void check_input(const GpuKernelContext& ctx, bool allow_int8) {
  DType t = ctx.dtype(0);
  std::string xd = std::string(dtype_name(t)) + " " + shape_str(ctx.shape(0));
  if (!(pool_type(t) || (allow_int8 && (t == DType::Int8 || t == DType::UInt8))))
    ctx.fail("input X has unsupported type: " + xd);
  if (ctx.shape(0).size() < 3) ctx.fail("input X must be [N, C, D1, ...] (rank >= 3), got " + xd);
}

float lp_p(const GpuKernelContext& ctx) {
  return float(ops::lp_exponent(ctx.node, [&](const std::string& m) { ctx.fail(m); }));
}

// |v|^p with 0^p = 0 (WGSL's pow is undefined for a zero base).
const char* kLpPow = "fn lp_pow(a: f32, e: f32) -> f32 { return pow_f32(a, e); }\n";

// `qlinear`: QLinearAveragePool (ops/qlinear.h): X int8 / uint8 dequantized as it is summed, the mean
// divided by y_scale and requantized; scales and zero points uniforms when constant (QuantParam).
void pool(GpuKernelContext& ctx, PoolKind kind, bool qlinear = false) {
  if (qlinear)
    ops::check_qlinear_average_pool(ctx.node, ctx.operands(), ctx.fail_fn());
  else
    check_input(ctx, kind == PoolKind::Max);
  const ir::Node& node = ctx.node;
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  ops::PoolParams pp =
      ops::pool_params(node, xs, kind == PoolKind::Lp, [&](const std::string& m) { ctx.fail(m); });
  const ops::Window& win = pp.win;
  const Shape& out = pp.out;
  const bool include_pad = pp.include_pad;
  const int64_t storage_order = pp.storage_order;
  const float p_value = float(pp.p);
  const Shape& in_sp = win.in;
  const Shape& ks = win.kernel;
  bool want_indices = kind == PoolKind::Max && ctx.output_wanted(1);
  ctx.set_output(0, t, out);
  if (want_indices) ctx.set_output(1, DType::Int64, out);
  convutil::check_i32(ctx, convutil::dims(xs), "input dim");
  convutil::check_i32(ctx, convutil::dims(out), "output dim");
  convutil::check_i32(ctx, win.strides, "stride");
  convutil::check_i32(ctx, win.dilations, "dilation");
  convutil::check_i32(ctx, win.pad_begin, "pad");
  convutil::check_i32(ctx, win.pad_end, "pad");

  size_t r = in_sp.size();
  std::string R = std::to_string(r);
  auto param = [&](size_t i) { return qlinear ? QuantParam::of(ctx, i) : QuantParam{}; };
  const QuantParam xsc = param(1), xz = param(2), ysc = param(3), yz = param(4);
  std::string name = kind == PoolKind::Max ? "maxpool" : kind == PoolKind::Average ? "avgpool" : "lppool";
  if (qlinear)
    name = std::string("q") + name + "_s" + xsc.tag() + ysc.tag() + (ctx.has_input(2) ? std::string("_xz") + xz.tag() : "") +
           (ctx.has_input(4) ? std::string("_yz") + yz.tag() : "");
  if (include_pad && kind == PoolKind::Average) name += "_incpad";
  if (want_indices) name += storage_order ? "_indices_colmajor" : "_indices";
  if (r == 2)  // the window's geometry is part of the program (constants, below)
    for (const std::vector<int64_t>* v : {&ks, &win.strides, &win.dilations, &win.pad_begin, &win.pad_end})
      name += "_" + std::to_string((*v)[0]) + "x" + std::to_string((*v)[1]);
  auto p = ctx.program(name + std::to_string(r) + "d");
  p.input("x", t, xs);
  std::vector<ValueRef> binds{ctx.in(0)};
  std::string xsv, xzv = "0i", ysv, yzv = "0i";
  if (qlinear) {
    xsv = xsc.bind(ctx, p, binds, "xs", 1, "0u", true);
    if (ctx.has_input(2)) xzv = xz.bind(ctx, p, binds, "xz", 2, "0u", false);
    ysv = ysc.bind(ctx, p, binds, "ys", 3, "0u", true);
    if (ctx.has_input(4)) yzv = yz.bind(ctx, p, binds, "yz", 4, "0u", false);
  }
  p.output("y", t, out);
  binds.push_back(ctx.out(0));
  if (want_indices) {
    p.output("ind", DType::Int64, out);
    binds.push_back(ctx.out(1));
  }
  p.uniform("in_sz", uint32_t(shape_numel(in_sp)));
  p.uniform("k_sz", uint32_t(shape_numel(ks)));
  p.uniform("out_sz", uint32_t(shape_numel(win.out)));
  convutil::int_array(p, "ksize", ks);
  convutil::int_array(p, "stride", win.strides);
  convutil::int_array(p, "dil", win.dilations);
  convutil::int_array(p, "pad", win.pad_begin);
  convutil::int_array(p, "pad_end", win.pad_end);
  // Column-major multipliers of the spatial dims (Indices with storage_order 1).
  std::vector<int64_t> colmul(r, 1);
  for (size_t d = 1; d < r; ++d) colmul[d] = colmul[d - 1] * in_sp[d - 1];
  convutil::int_array(p, "colmul", colmul);
  if (kind == PoolKind::Lp) {
    p.uniform_f32("p_exp", p_value);
    p.declare(kLpPow);
  }
  p.set_threads(uint64_t(shape_numel(out)));

  // The window's taps: every spatial rank walks them through the uniform arrays (divisions per tap); a
  // 2-D window (images: ResNet's and a CNN's max pools) has its geometry as constants of the program
  // instead, its taps unrolled and no division but the output's position (4-10x fewer instructions
  // per output for a 2 x 2 or 3 x 3 window, which bounded the pool).
  std::string body, tap;
  if (r == 2) {
    auto c = [](int64_t v) { return std::to_string(v) + "i"; };
    p.declare("const KH: i32 = " + c(ks[0]) + ";\nconst KW: i32 = " + c(ks[1]) + ";\nconst SH: i32 = " + c(win.strides[0]) +
              ";\nconst SW: i32 = " + c(win.strides[1]) + ";\nconst DH: i32 = " + c(win.dilations[0]) +
              ";\nconst DW: i32 = " + c(win.dilations[1]) + ";\nconst PH: i32 = " + c(win.pad_begin[0]) +
              ";\nconst PW: i32 = " + c(win.pad_begin[1]) + ";\nconst PHE: i32 = " + c(win.pad_end[0]) +
              ";\nconst PWE: i32 = " + c(win.pad_end[1]) + ";\n");
    body =
        "  let sp = gi % out_sz();\n"
        "  let nc = gi / out_sz();\n"
        "  let x0 = nc * in_sz();\n"
        "  let ow = i32(sp % y_shape(3u));\n"
        "  let oh = i32(sp / y_shape(3u));\n"
        "  let H = i32(x_shape(2u));\n"
        "  let W = i32(x_shape(3u));\n"
        "  let h0 = oh * SH - PH;\n"
        "  let w0 = ow * SW - PW;\n";
    tap =
        "  for (var kh = 0i; kh < KH; kh = kh + 1i) {\n"
        "   for (var kw = 0i; kw < KW; kw = kw + 1i) {\n"
        "    let ph = h0 + kh * DH;\n"
        "    let pw = w0 + kw * DW;\n"
        "    let inside = ph >= 0i && ph < H && pw >= 0i && pw < W;\n"
        "    let in_padded = ph >= -PH && ph < H + PHE && pw >= -PW && pw < W + PWE;\n"
        "    let off = select(0u, u32(ph) * u32(W) + u32(pw), inside);\n"
        "    let cm = select(0u, u32(ph) + u32(pw) * u32(H), inside);\n";
  } else {
    body =
        "  let sp = gi % out_sz();\n"
        "  let nc = gi / out_sz();\n"
        "  let x0 = nc * in_sz();\n"
        "  var base: array<i32, " + R + ">;\n"
        "  var rem = sp;\n"
        "  for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
        "    let od = i32(rem % y_shape(u32(d) + 2u));\n"
        "    rem = rem / y_shape(u32(d) + 2u);\n"
        "    base[d] = od * bitcast<i32>(stride(u32(d))) - bitcast<i32>(pad(u32(d)));\n"
        "  }\n";
    tap =
        "  for (var ki = 0u; ki < k_sz(); ki = ki + 1u) {\n"
        "   {\n"
        "    var kr = ki;\n"
        "    var off = 0u;\n"
        "    var cm = 0u;\n"
        "    var inside = true;\n"
        "    var in_padded = true;\n"
        "    for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
        "      let kd = i32(kr % u32(bitcast<i32>(ksize(u32(d)))));\n"
        "      kr = kr / u32(bitcast<i32>(ksize(u32(d))));\n"
        "      let pd = base[d] + kd * bitcast<i32>(dil(u32(d)));\n"
        "      let n_d = i32(x_shape(u32(d) + 2u));\n"
        "      if (pd < 0i || pd >= n_d) { inside = false; }\n"
        "      if (pd < -bitcast<i32>(pad(u32(d))) || pd >= n_d + bitcast<i32>(pad_end(u32(d)))) { in_padded = false; }\n"
        "      off = off + u32(pd) * x_stride(u32(d) + 2u);\n"
        "      cm = cm + u32(pd) * bitcast<u32>(colmul(u32(d)));\n"
        "    }\n";
  }
  if (kind == PoolKind::Max) {
    // Strictly greater replaces (the first maximum wins; NaN never replaces), as the CPU reference.
    std::string empty = t == DType::Int8 ? "-128.0" : t == DType::UInt8 ? "0.0" : "-f32_inf()";
    body += "  var best = from_f32_$x(" + empty + ");\n  var found = false;\n  var arg = 0u;\n";
  } else {
    body += "  var acc = 0.0;\n  var taps = 0u;\n  var padded = 0u;\n";
  }
  body += tap;
  if (kind == PoolKind::Average) body += "    if (in_padded) { padded = padded + 1u; }\n";
  body += "    if (!inside) { continue; }\n    let v = x_load(x0 + off);\n";
  if (kind == PoolKind::Max) {
    std::string idx = storage_order ? "cm" : "off";
    body += "    if (!found || gt_$x(v, best)) { best = v; arg = " + idx + "; found = true; }\n   }\n  }\n"
            "  y_store(gi, best);\n";
    if (want_indices)
      body += "  ind_store(gi, from_i64_$ind(select(w64_from_i32(-1i), w64_from_u32(x0 + arg), found)));\n";
  } else if (kind == PoolKind::Average) {
    const std::string term = qlinear ? xsv + " * f32(i32(v) - " + xzv + ")" : "to_f32_$x(v)";  // QLinear: dequantized
    body += "    acc = acc + " + term + ";\n    taps = taps + 1u;\n   }\n  }\n";
    body += std::string("  let div = ") + (include_pad ? "padded" : "taps") + ";\n";
    if (qlinear)
      body += requantized_store(t, "select(0.0, acc / f32(div) / " + ysv + ", div > 0u)", yzv) + "\n";
    else
      body += "  y_store(gi, from_f32_$y(select(f32_nan(), acc / f32(div), div > 0u)));\n";
  } else {
    body += "    acc = acc + lp_pow(abs(to_f32_$x(v)), p_exp());\n   }\n  }\n";
    body += "  y_store(gi, from_f32_$y(lp_pow(acc, 1.0 / p_exp())));\n";
  }
  p.body(body);
  ctx.dispatch(p, binds);
}

// A segment per (n, c): a strided pass over the row, then a shared-memory tree reduction.
void global_pool(GpuKernelContext& ctx, PoolKind kind) {
  check_input(ctx, false);
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  float p_value = kind == PoolKind::Lp ? lp_p(ctx) : 0.0f;
  int64_t rows = xs[0] * xs[1];
  int64_t len = rows == 0 ? 0 : shape_numel(xs) / rows;
  Shape out(xs.size(), 1);
  out[0] = xs[0];
  out[1] = xs[1];
  ctx.set_output(0, t, out);
  if (rows == 0) return;
  // Segments of a workgroup per row (reduce_util.h): a squeeze-and-excitation's pool over 7 x 7 positions
  // takes 32 invocations, not a workgroup of 256 of which 207 idle through eight barriers.
  const uint32_t wgs = reduce_util::workgroup_size(ctx.limits, 4);
  uint32_t seg = reduce_util::segment_size(uint64_t(len), wgs);
  if (const uint32_t forced = reduce_util::forced_row_invocations()) seg = std::min(wgs, forced);
  std::string name = kind == PoolKind::Max ? "globalmax" : kind == PoolKind::Average ? "globalavg" : "globallp";
  auto p = ctx.program(name, wgs);
  p.input("x", t, xs);
  p.output("y", t, out);
  reduce_util::segment_uniforms(p, uint64_t(rows), seg);
  p.uniform("len", uint32_t(len));
  std::string decl = "const WG: u32 = " + std::to_string(wgs) + "u;\nvar<workgroup> part: array<f32, WG>;\n";
  std::string combine, init = "0.0", value = "v";
  if (kind == PoolKind::Max) {
    // The max of the non-NaN values; a NaN first element makes the result NaN (as the CPU's fold).
    init = "-f32_inf()";
    combine = "select(a, b, b > a)";
  } else if (kind == PoolKind::Average) {
    combine = "a + b";
  } else {
    p.uniform_f32("p_exp", p_value);
    decl += kLpPow;
    combine = "a + b";
    value = "lp_pow(abs(v), p_exp())";
  }
  decl += "fn combine(a: f32, b: f32) -> f32 { return " + combine + "; }\n";
  p.declare(decl);
  std::string body = std::string(reduce_util::kSegmentPrelude) +
      "  let x0 = row * len();\n"
      "  var acc = " + init + ";\n"
      "  if (live) {\n"
      "    for (var j = lane; j < len(); j = j + S) {\n"
      "      let v = to_f32_$x(x_load(x0 + j));\n"
      "      acc = combine(acc, " + value + ");\n"
      "    }\n"
      "  }\n"
      "  part[lid] = acc;\n" +
      reduce_util::segment_tree("      part[lid] = combine(part[lid], part[lid + s]);\n") +
      "  if (live && lane == 0u) {\n"
      "    var r = part[lid];\n";
  if (kind == PoolKind::Max) body += "    if (len() > 0u && isnan_f32(to_f32_$x(x_load(x0)))) { r = f32_nan(); }\n";
  if (kind == PoolKind::Average) body += "    r = select(f32_nan(), r / f32(len()), len() > 0u);\n";
  if (kind == PoolKind::Lp) body += "    r = lp_pow(r, 1.0 / p_exp());\n";
  body += "    y_store(row, from_f32_$y(r));\n  }";
  p.body(body);
  reduce_util::dispatch_rows(ctx, p, {ctx.in(0), ctx.out(0)}, uint64_t(rows), seg);
}

// LRN: one invocation per element, the sum of squares over its channel window [c - (size-1)/2, c + size/2].
void lrn(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  const Shape& xs = ctx.shape(0);
  if (!(pool_type(t) || t == DType::BFloat16)) ctx.fail("input X has unsupported type: " + std::string(dtype_name(t)));
  if (xs.size() < 2) ctx.fail("input X must be [N, C, ...] (rank >= 2), got " + shape_str(xs));
  const ir::Node& n = ctx.node;
  int64_t size = n.attr_int("size", 0);
  if (size <= 0) ctx.fail("attribute 'size' is required and must be positive");
  ctx.set_output(0, t, xs);
  if (shape_numel(xs) == 0) return;
  auto p = ctx.program("lrn");
  p.input("x", t, xs);
  p.output("y", t, xs);
  p.uniform("lo", uint32_t((size - 1) / 2));
  p.uniform("hi", uint32_t(size - 1 - (size - 1) / 2));
  p.uniform_f32("alpha_n", n.attr_float("alpha", 0.0001f) / float(size));
  p.uniform_f32("beta", n.attr_float("beta", 0.75f));
  p.uniform_f32("bias", n.attr_float("bias", 1.0f));
  p.set_threads(uint64_t(shape_numel(xs)));
  p.body("  let sp = x_stride(1u);\n"
         "  let C = x_shape(1u);\n"
         "  let c = (gi / sp) % C;\n"
         "  let base = gi - c * sp;\n"
         "  var sq = 0.0;\n"
         "  for (var k = select(0u, c - lo(), c >= lo()); k <= min(C - 1u, c + hi()); k = k + 1u) {\n"
         "    let v = x_load(base + k * sp);\n"
         "    sq = sq + v * v;\n"
         "  }\n"
         "  y_store(gi, x_load(gi) / pow_f32(bias() + alpha_n() * sq, beta()));");
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

// RoiAlign: one invocation per output bin (ops::roi_align_params), its samples as the CPU reference
// takes them, in f32; a batch index outside [0, N) is flagged.
void roi_align(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (!pool_type(t)) ctx.fail("input X has unsupported type: " + std::string(dtype_name(t)));
  if (ctx.dtype(1) != t) ctx.fail("input 'rois' must have the type of input 'X'");
  if (ctx.dtype(2) != DType::Int64) ctx.fail("input 'batch_indices' must be int64");
  ops::RoiAlignParams rp = ops::roi_align_params(ctx.node, ctx.opset, ctx.shape(0), ctx.shape(1), ctx.shape(2), ctx.fail_fn());
  ctx.set_output(0, t, rp.out);
  if (shape_numel(rp.out) == 0) return;
  auto p = ctx.program(std::string("roi_align_") + (rp.max_mode ? "max" : "avg") + (rp.half_pixel ? "_half_pixel" : ""));
  p.input("x", t, ctx.shape(0));
  p.input("rois", t, ctx.shape(1));
  p.input("bi", DType::Int64, ctx.shape(2));
  p.output("y", t, rp.out);
  p.uniform("sampling", uint32_t(rp.sampling_ratio));
  p.uniform_f32("scale", rp.spatial_scale);
  p.set_threads(uint64_t(shape_numel(rp.out)));
  const std::string combine = rp.max_mode ? "      let m = max(max(max(v.x, v.y), v.z), v.w);\n"
                                            "      acc = select(max(acc, m), m, first);\n"
                                            "      first = false;\n"
                                          : "      acc = acc + v.x + v.y + v.z + v.w;\n";
  p.body("  let ow = y_shape(3u);\n  let oh = y_shape(2u);\n  let C = y_shape(1u);\n"
         "  let pw = gi % ow;\n  let ph = (gi / ow) % oh;\n  let c = (gi / (ow * oh)) % C;\n  let r = gi / (ow * oh * C);\n"
         "  let H = x_shape(2u);\n  let W = x_shape(3u);\n"
         "  let bw64 = to_i64_$bi(bi_load(r));\n"
         "  if (!w64_in_range(bw64, x_shape(0u))) { flag(FLAG_INDEX); return; }\n"
         "  let b = w64_as_u32(bw64);\n"
         "  let offset = " + std::string(rp.half_pixel ? "0.5" : "0.0") + ";\n"
         "  let sw = to_f32_$rois(rois_load(r * 4u)) * scale() - offset;\n"
         "  let sh = to_f32_$rois(rois_load(r * 4u + 1u)) * scale() - offset;\n"
         "  var rw = to_f32_$rois(rois_load(r * 4u + 2u)) * scale() - offset - sw;\n"
         "  var rh = to_f32_$rois(rois_load(r * 4u + 3u)) * scale() - offset - sh;\n" +
         std::string(rp.half_pixel ? "" : "  rw = max(rw, 1.0);\n  rh = max(rh, 1.0);\n") +
         "  let bw = rw / f32(ow);\n  let bh = rh / f32(oh);\n"
         "  let gh = select(u32(ceil(rh / f32(oh))), sampling(), sampling() > 0u);\n"
         "  let gw = select(u32(ceil(rw / f32(ow))), sampling(), sampling() > 0u);\n"
         "  let plane = (b * C + c) * H * W;\n"
         "  var acc = 0.0;\n  var first = true;\n"
         "  for (var iy = 0u; iy < gh; iy = iy + 1u) {\n"
         "    for (var ix = 0u; ix < gw; ix = ix + 1u) {\n"
         "      var yy = sh + f32(ph) * bh + (f32(iy) + 0.5) * bh / f32(gh);\n"
         "      var xx = sw + f32(pw) * bw + (f32(ix) + 0.5) * bw / f32(gw);\n"
         "      var v = vec4<f32>(0.0);\n"
         "      if (!(yy < -1.0 || yy > f32(H) || xx < -1.0 || xx > f32(W))) {\n"
         "        yy = max(yy, 0.0);\n        xx = max(xx, 0.0);\n"
         "        var yl = u32(yy);\n        var xl = u32(xx);\n        var yh = yl + 1u;\n        var xh = xl + 1u;\n"
         "        if (yl >= H - 1u) { yl = H - 1u; yh = yl; yy = f32(yl); }\n"
         "        if (xl >= W - 1u) { xl = W - 1u; xh = xl; xx = f32(xl); }\n"
         "        let ly = yy - f32(yl);\n        let lx = xx - f32(xl);\n        let hy = 1.0 - ly;\n        let hx = 1.0 - lx;\n"
         "        v = vec4<f32>(hy * hx * x_load(plane + yl * W + xl), hy * lx * x_load(plane + yl * W + xh),\n"
         "                      ly * hx * x_load(plane + yh * W + xl), ly * lx * x_load(plane + yh * W + xh));\n"
         "      }\n" + combine +
         "    }\n"
         "  }\n" +
         std::string(rp.max_mode ? "" : "  acc = acc / f32(max(gh * gw, 1u));\n") +
         "  y_store(gi, acc);");
  ctx.dispatch(p, {ctx.in(0), ctx.in(1), ctx.in(2), ctx.out(0)});
}

}  // namespace

void register_pool(GpuKernelRegistry& r) {
  r.add("LRN", lrn);
  r.add("RoiAlign", roi_align);
  r.add("AveragePool", [](GpuKernelContext& c) { pool(c, PoolKind::Average); });
  r.add("QLinearAveragePool", [](GpuKernelContext& c) { pool(c, PoolKind::Average, true); }, ir::kMsDomain);
  r.add("MaxPool", [](GpuKernelContext& c) { pool(c, PoolKind::Max); });
  r.add("LpPool", [](GpuKernelContext& c) { pool(c, PoolKind::Lp); });
  r.add("GlobalAveragePool", [](GpuKernelContext& c) { global_pool(c, PoolKind::Average); });
  r.add("GlobalMaxPool", [](GpuKernelContext& c) { global_pool(c, PoolKind::Max); });
  r.add("GlobalLpPool", [](GpuKernelContext& c) { global_pool(c, PoolKind::Lp); });
}

}  // namespace onnxgpu::webgpu
