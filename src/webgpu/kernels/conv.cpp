// Conv and ConvTranspose on the GPU, 1-D to 3-D (any spatial rank the uniforms can describe): a direct
// convolution, one invocation per output element, accumulating in f32 over the input channels of its
// group and the kernel window. Output shapes are computed exactly as the CPU reference (src/cpu/conv.cpp).
// The spatial rank shapes the WGSL; every size, stride, dilation and pad is a uniform.
#include "ops/conv.h"
#include "webgpu/device.h"
#include "webgpu/kernels/conv_util.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

namespace {


int64_t get_group(const GpuKernelContext& ctx) {
  return ops::conv_group(ctx.node, [&](const std::string& m) { ctx.fail(m); });
}

void check_kernel_shape_attr(const GpuKernelContext& ctx, const Shape& from_weights) {
  ops::check_kernel_shape(ctx.node, from_weights, [&](const std::string& m) { ctx.fail(m); });
}

// Common checks of X, W and B (dtype, ranks). Returns whether there is a bias.
bool check_inputs(const GpuKernelContext& ctx) {
  ops::check_conv_inputs(ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.fail_fn());
  if (ctx.shape(0).size() < 3)
    ctx.fail("input X must be [N, C, D1, ...] (rank >= 3), got " + shape_str(ctx.shape(0)));
  if (ctx.shape(1).size() != ctx.shape(0).size())
    ctx.fail("weights W " + shape_str(ctx.shape(1)) + " must have the rank of X " + shape_str(ctx.shape(0)));
  return ctx.has_input(2);
}

// A program over x, w (and the bias b) of X's float type writing y of shape `out`; `binds` gets the
// bindings in that order.
shader::Program float_program(GpuKernelContext& ctx, const std::string& name, bool has_bias, const Shape& out,
                              std::vector<ValueRef>& binds) {
  DType t = ctx.dtype(0);
  auto p = ctx.program(name + (has_bias ? "_bias" : ""));
  p.input("x", t, ctx.shape(0));
  p.input("w", t, ctx.shape(1));
  binds = {ctx.in(0), ctx.in(1)};
  if (has_bias) {
    p.input("b", t, ctx.shape(2));
    binds.push_back(ctx.in(2));
  }
  p.output("y", t, out);
  binds.push_back(ctx.out(0));
  return p;
}

// Splits the spatial linear index `sp` of the output into per-dim positions, into `var <name>: array<i32, R>`
// holding pos * mul(d) + add(d) for the given uniform arrays (WGSL).
std::string split_spatial(size_t r, const std::string& name, const std::string& expr) {
  std::string R = std::to_string(r);
  return "  var " + name + ": array<i32, " + R + ">;\n"
         "  var rem = sp;\n"
         "  for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
         "    let od = i32(rem % y_shape(u32(d) + 2u));\n"
         "    rem = rem / y_shape(u32(d) + 2u);\n"
         "    " + name + "[d] = " + expr + ";\n"
         "  }\n";
}

// Conv as an implicit GEMM per group: Y[m, col] = sum_kk W[m, kk] * X̂[kk, col] with kk = (c, kernel
// position) and col = (n, output position), X̂ gathered from X on the fly (zero in the padding). A
// workgroup of 256 computes a 64 x 64 tile of Y (4 x 4 per invocation), staging 16-deep slices of W and
// X̂ in workgroup memory. Used when a group has enough output channels to fill the tile's rows.
constexpr uint32_t kTile = 64, kTileK = 16;

bool use_tiled(const GpuKernelContext& ctx, int64_t Mg, int64_t group) {
  uint32_t storage = 2 * kTile * kTileK * 4;
  return Mg >= 16 && group <= int64_t(ctx.limits.max_compute_workgroups_per_dimension) && ctx.limits.max_compute_workgroup_storage_size >= storage &&
         ctx.limits.max_compute_invocations_per_workgroup >= 256 && ctx.limits.max_compute_workgroup_size_x >= 256;
}

void conv_tiled(GpuKernelContext& ctx, const ops::Window& win, int64_t group, bool has_bias, const Shape& out) {
  const Shape& xs = ctx.shape(0);
  const Shape& ws = ctx.shape(1);
  size_t r = xs.size() - 2;
  int64_t Mg = ws[0] / group, K = ws[1] * shape_numel(Shape(ws.begin() + 2, ws.end()));
  int64_t cols = xs[0] * shape_numel(win.out);
  std::vector<ValueRef> binds;
  auto p = float_program(ctx, "conv_tiled" + std::to_string(r) + "d", has_bias, out, binds);
  p.uniform("mg_n", uint32_t(Mg));
  p.uniform("k_len", uint32_t(K));
  p.uniform("cols", uint32_t(cols));
  p.uniform("in_sz", uint32_t(shape_numel(Shape(xs.begin() + 2, xs.end()))));
  p.uniform("k_sz", uint32_t(shape_numel(Shape(ws.begin() + 2, ws.end()))));
  p.uniform("out_sz", uint32_t(shape_numel(win.out)));
  convutil::int_array(p, "stride", win.strides);
  convutil::int_array(p, "dil", win.dilations);
  convutil::int_array(p, "pad", win.pad_begin);
  p.declare("var<workgroup> As: array<f32, " + std::to_string(kTile * kTileK) + ">;\n"
            "var<workgroup> Bs: array<f32, " + std::to_string(kTile * kTileK) + ">;");
  std::string R = std::to_string(r);
  std::string body =
      "  let tiles_m = (mg_n() + 63u) / 64u;\n"
      "  let tiles = tiles_m * ((cols() + 63u) / 64u);\n"
      "  if (wg >= tiles) { return; }\n"
      "  let g = wid.z;\n"
      "  let m0 = (wg % tiles_m) * 64u;\n"
      "  let c0 = (wg / tiles_m) * 64u;\n"
      "  let cg = w_shape(1u);\n"
      // The X̂ column this invocation loads, and where its window starts.
      "  let bcol = c0 + lid % 64u;\n"
      "  let bvalid = bcol < cols();\n"
      "  let bn = select(0u, bcol / out_sz(), bvalid);\n"
      "  var base: array<i32, " + R + ">;\n"
      "  var rem = bcol % out_sz();\n"
      "  for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
      "    let od = i32(rem % y_shape(u32(d) + 2u));\n"
      "    rem = rem / y_shape(u32(d) + 2u);\n"
      "    base[d] = od * bitcast<i32>(stride(u32(d))) - bitcast<i32>(pad(u32(d)));\n"
      "  }\n"
      "  let xbase = (bn * x_shape(1u) + g * cg) * in_sz();\n"
      // The W row this invocation loads (4 consecutive kk).
      "  let am = m0 + lid / 4u;\n"
      "  let arow = (g * mg_n() + am) * k_len();\n"
      "  let tm = lid / 16u;\n"
      "  let tn = lid % 16u;\n"
      "  var acc0 = vec4<f32>(0.0);\n"
      "  var acc1 = vec4<f32>(0.0);\n"
      "  var acc2 = vec4<f32>(0.0);\n"
      "  var acc3 = vec4<f32>(0.0);\n"
      "  for (var k0 = 0u; k0 < k_len(); k0 = k0 + 16u) {\n"
      "    for (var j = 0u; j < 4u; j = j + 1u) {\n"
      "      let kr = (lid % 4u) * 4u + j;\n"
      "      let kk = k0 + kr;\n"
      "      var v = 0.0;\n"
      "      if (am < mg_n() && kk < k_len()) { v = to_f32_$w(w_load(arow + kk)); }\n"
      "      As[kr * 64u + lid / 4u] = v;\n"
      "    }\n"
      "    for (var j = 0u; j < 4u; j = j + 1u) {\n"
      "      let kr = lid / 64u + 4u * j;\n"
      "      let kk = k0 + kr;\n"
      "      var v = 0.0;\n"
      "      if (bvalid && kk < k_len()) {\n"
      "        let c = kk / k_sz();\n"
      "        var kq = kk % k_sz();\n"
      "        var off = 0u;\n"
      "        var inside = true;\n"
      "        for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
      "          let kd = i32(kq % w_shape(u32(d) + 2u));\n"
      "          kq = kq / w_shape(u32(d) + 2u);\n"
      "          let pd = base[d] + kd * bitcast<i32>(dil(u32(d)));\n"
      "          if (pd < 0i || pd >= i32(x_shape(u32(d) + 2u))) { inside = false; break; }\n"
      "          off = off + u32(pd) * x_stride(u32(d) + 2u);\n"
      "        }\n"
      "        if (inside) { v = to_f32_$x(x_load(xbase + c * in_sz() + off)); }\n"
      "      }\n"
      "      Bs[kr * 64u + lid % 64u] = v;\n"
      "    }\n"
      "    workgroupBarrier();\n"
      "    for (var kr = 0u; kr < 16u; kr = kr + 1u) {\n"
      "      let ai = kr * 64u + tm * 4u;\n"
      "      let bi = kr * 64u + tn * 4u;\n"
      "      let b = vec4<f32>(Bs[bi], Bs[bi + 1u], Bs[bi + 2u], Bs[bi + 3u]);\n"
      "      acc0 = acc0 + As[ai] * b;\n"
      "      acc1 = acc1 + As[ai + 1u] * b;\n"
      "      acc2 = acc2 + As[ai + 2u] * b;\n"
      "      acc3 = acc3 + As[ai + 3u] * b;\n"
      "    }\n"
      "    workgroupBarrier();\n"
      "  }\n"
      "  let accs = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);\n"
      "  for (var i = 0u; i < 4u; i = i + 1u) {\n"
      "    let m = m0 + tm * 4u + i;\n"
      "    if (m >= mg_n()) { break; }\n"
      "    let mm = g * mg_n() + m;\n"
      "    let bias = " + std::string(has_bias ? "to_f32_$b(b_load(mm))" : "0.0") + ";\n"
      "    for (var j = 0u; j < 4u; j = j + 1u) {\n"
      "      let col = c0 + tn * 4u + j;\n"
      "      if (col >= cols()) { break; }\n"
      "      let n = col / out_sz();\n"
      "      y_store((n * y_shape(1u) + mm) * out_sz() + col % out_sz(), from_f32_$y(accs[i][j] + bias));\n"
      "    }\n"
      "  }";
  p.body(body);
  int64_t tiles = ((Mg + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile);
  if (tiles == 0) return;
  uint32_t gx, gy;
  grid_for(uint64_t(tiles) * 256, 256, ctx.limits, gx, gy);
  ctx.dispatch(p, binds, gx, gy, uint32_t(group));
}

// Conv (float, optional bias B) and ConvInteger (int8/uint8 X and W with optional zero points, int32 Y,
// exact integer accumulation).
void conv(GpuKernelContext& ctx, bool integer) {
  bool has_bias = false, has_xz = false, has_wz = false;
  const Shape& xs = ctx.shape(0);
  const Shape& ws = ctx.shape(1);
  DType t = ctx.dtype(0);
  if (!integer) {
    has_bias = check_inputs(ctx);
  } else {
    ops::check_conv_integer_inputs(ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.operand(3), ctx.fail_fn());
    has_xz = ctx.has_input(2);
    has_wz = ctx.has_input(3);
  }
  DType yt = integer ? DType::Int32 : t;
  int64_t group = get_group(ctx);
  ops::check_conv_shapes(xs, ws, group, has_bias ? ctx.shape(2)[0] : -1, [&](const std::string& m) { ctx.fail(m); });
  int64_t N = xs[0], M = ws[0];
  size_t r = xs.size() - 2;
  Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  check_kernel_shape_attr(ctx, k_sp);
  ops::Window win = convutil::window(ctx, in_sp, k_sp, false);
  Shape out{N, M};
  out.insert(out.end(), win.out.begin(), win.out.end());
  ctx.set_output(0, yt, out);
  convutil::check_i32(ctx, convutil::dims(xs), "input dim");
  convutil::check_i32(ctx, convutil::dims(out), "output dim");
  convutil::check_i32(ctx, win.strides, "stride");
  convutil::check_i32(ctx, win.dilations, "dilation");
  convutil::check_i32(ctx, win.pad_begin, "pad");
  if (!integer && use_tiled(ctx, M / group, group)) {
    conv_tiled(ctx, win, group, has_bias, out);
    return;
  }

  auto p = ctx.program(std::string(integer ? "convinteger" : "conv") + std::to_string(r) + "d" +
                       (has_bias ? "_bias" : "") + (has_xz ? "_xz" : "") + (has_wz ? "_wz" : ""));
  p.input("x", t, xs);
  p.input("w", ctx.dtype(1), ws);
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1)};
  if (has_bias) {
    p.input("b", t, ctx.shape(2));
    binds.push_back(ctx.in(2));
  }
  if (has_xz) {
    p.input("xz", ctx.dtype(2), ctx.shape(2));
    binds.push_back(ctx.in(2));
  }
  if (has_wz) {
    p.input("wz", ctx.dtype(3), ctx.shape(3));
    binds.push_back(ctx.in(3));
  }
  p.output("y", yt, out);
  binds.push_back(ctx.out(0));
  p.uniform("groups", uint32_t(group));
  p.uniform("in_sz", uint32_t(shape_numel(in_sp)));
  p.uniform("k_sz", uint32_t(shape_numel(k_sp)));
  p.uniform("out_sz", uint32_t(shape_numel(win.out)));
  convutil::int_array(p, "stride", win.strides);
  convutil::int_array(p, "dil", win.dilations);
  convutil::int_array(p, "pad", win.pad_begin);
  p.set_threads(uint64_t(shape_numel(out)));
  std::string R = std::to_string(r);
  std::string init, term, pad_term;
  if (integer) {
    init = "  var acc = 0i;\n"
           "  let xzv = " + std::string(has_xz ? "i32(xz_load(0u))" : "0i") + ";\n"
           "  let wzv = " + std::string(has_wz ? "i32(wz_load(select(0u, m, wz_numel() > 1u)))" : "0i") + ";\n";
    term = "(i32(x_load(x0 + c * in_sz() + off)) - xzv) * (i32(w_load(w0 + c * k_sz() + ki)) - wzv)";
  } else {
    init = "  var acc = " + std::string(has_bias ? "to_f32_$b(b_load(m))" : "0.0") + ";\n";
    term = "to_f32_$x(x_load(x0 + c * in_sz() + off)) * to_f32_$w(w_load(w0 + c * k_sz() + ki))";
    // Padding is zeros that multiply the weights (ONNX's definition; the tiled path loads them): 0 * inf
    // and 0 * NaN are NaN. Tested on the bits: a shader compiler may fold 0.0 * w to 0.
    pad_term = "      for (var c = 0u; c < cg; c = c + 1u) {\n"
               "        let wb = bitcast<u32>(to_f32_$w(w_load(w0 + c * k_sz() + ki)));\n"
               "        if ((wb & 0x7f800000u) == 0x7f800000u) { acc = f32_nan(); }\n"
               "      }\n";
  }
  std::string body =
      "  let sp = gi % out_sz();\n"
      "  let nm = gi / out_sz();\n"
      "  let m = nm % y_shape(1u);\n"
      "  let n = nm / y_shape(1u);\n"
      "  let cg = w_shape(1u);\n"
      "  let g = m / (y_shape(1u) / groups());\n" +
      split_spatial(r, "base", "od * bitcast<i32>(stride(u32(d))) - bitcast<i32>(pad(u32(d)))") +
      "  let x0 = (n * x_shape(1u) + g * cg) * in_sz();\n"
      "  let w0 = m * cg * k_sz();\n"
      + init +
      "  for (var ki = 0u; ki < k_sz(); ki = ki + 1u) {\n"
      "    var kr = ki;\n"
      "    var off = 0u;\n"
      "    var inside = true;\n"
      "    for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
      "      let kd = i32(kr % w_shape(u32(d) + 2u));\n"
      "      kr = kr / w_shape(u32(d) + 2u);\n"
      "      let pd = base[d] + kd * bitcast<i32>(dil(u32(d)));\n"
      "      if (pd < 0i || pd >= i32(x_shape(u32(d) + 2u))) { inside = false; break; }\n"
      "      off = off + u32(pd) * x_stride(u32(d) + 2u);\n"
      "    }\n"
      "    if (!inside) {\n" + pad_term + "      continue;\n    }\n"
      "    for (var c = 0u; c < cg; c = c + 1u) {\n"
      "      acc = acc + " + term + ";\n"
      "    }\n"
      "  }\n"
      "  y_store(gi, " + (integer ? "acc" : "from_f32_$y(acc)") + ");";
  p.body(body);
  ctx.dispatch(p, binds);
}

void conv_transpose(GpuKernelContext& ctx) {
  bool has_bias = check_inputs(ctx);
  const Shape& xs = ctx.shape(0);
  const Shape& ws = ctx.shape(1);
  DType t = ctx.dtype(0);
  const ir::Node& node = ctx.node;
  int64_t group = get_group(ctx);
  ops::check_conv_transpose_shapes(xs, ws, group, has_bias ? ctx.shape(2)[0] : -1, ctx.fail_fn());
  int64_t N = xs[0], Mg = ws[1], M = Mg * group;
  size_t r = xs.size() - 2;
  Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  check_kernel_shape_attr(ctx, k_sp);
  ops::ConvTransposeGeometry geo = ops::conv_transpose_geometry(node, in_sp, k_sp, [&](const std::string& m) { ctx.fail(m); });
  const std::vector<int64_t>&strides = geo.strides, &dil = geo.dilations, &pb = geo.pad_begin;
  const Shape& out_sp = geo.out;
  Shape out{N, M};
  out.insert(out.end(), out_sp.begin(), out_sp.end());
  ctx.set_output(0, t, out);
  convutil::check_i32(ctx, convutil::dims(xs), "input dim");
  convutil::check_i32(ctx, convutil::dims(out), "output dim");
  convutil::check_i32(ctx, strides, "stride");
  convutil::check_i32(ctx, dil, "dilation");
  convutil::check_i32(ctx, pb, "pad");

  std::vector<ValueRef> binds;
  auto p = float_program(ctx, "convtranspose" + std::to_string(r) + "d", has_bias, out, binds);
  p.uniform("groups", uint32_t(group));
  p.uniform("in_sz", uint32_t(shape_numel(in_sp)));
  p.uniform("k_sz", uint32_t(shape_numel(k_sp)));
  p.uniform("out_sz", uint32_t(shape_numel(out_sp)));
  convutil::int_array(p, "stride", strides);
  convutil::int_array(p, "dil", dil);
  convutil::int_array(p, "pad", pb);
  p.set_threads(uint64_t(shape_numel(out)));
  std::string R = std::to_string(r);
  // Output position q receives x[i] * w[k] where i * stride + k * dil - pad = q.
  std::string body =
      "  let sp = gi % out_sz();\n"
      "  let nm = gi / out_sz();\n"
      "  let m = nm % y_shape(1u);\n"
      "  let n = nm / y_shape(1u);\n"
      "  let mg_n = w_shape(1u);\n"
      "  let cg = x_shape(1u) / groups();\n"
      "  let g = m / mg_n;\n"
      "  let mg = m % mg_n;\n" +
      split_spatial(r, "q", "od + bitcast<i32>(pad(u32(d)))") +
      "  let x0 = (n * x_shape(1u) + g * cg) * in_sz();\n"
      "  let w0 = (g * cg * mg_n + mg) * k_sz();\n"
      "  let wc = mg_n * k_sz();\n"
      "  var acc = " + std::string(has_bias ? "to_f32_$b(b_load(m))" : "0.0") + ";\n"
      "  for (var ki = 0u; ki < k_sz(); ki = ki + 1u) {\n"
      "    var kr = ki;\n"
      "    var off = 0u;\n"
      "    var inside = true;\n"
      "    for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
      "      let kd = i32(kr % w_shape(u32(d) + 2u));\n"
      "      kr = kr / w_shape(u32(d) + 2u);\n"
      "      let s = bitcast<i32>(stride(u32(d)));\n"
      "      let td = q[d] - kd * bitcast<i32>(dil(u32(d)));\n"
      "      if (td < 0i || td % s != 0i || td / s >= i32(x_shape(u32(d) + 2u))) { inside = false; break; }\n"
      "      off = off + u32(td / s) * x_stride(u32(d) + 2u);\n"
      "    }\n"
      "    if (!inside) { continue; }\n"
      "    for (var c = 0u; c < cg; c = c + 1u) {\n"
      "      acc = acc + to_f32_$x(x_load(x0 + c * in_sz() + off)) * to_f32_$w(w_load(w0 + c * wc + ki));\n"
      "    }\n"
      "  }\n"
      "  y_store(gi, from_f32_$y(acc));";
  p.body(body);
  ctx.dispatch(p, binds);
}

}  // namespace

void register_conv(GpuKernelRegistry& r) {
  r.add("Conv", [](GpuKernelContext& ctx) { conv(ctx, false); });
  r.add("ConvInteger", [](GpuKernelContext& ctx) { conv(ctx, true); });
  r.add("ConvTranspose", conv_transpose);
}

}  // namespace onnxgpu::webgpu
