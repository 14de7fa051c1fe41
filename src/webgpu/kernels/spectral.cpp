// Spectral ops on the GPU: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix.
// One invocation per output value (a complex one for DFT and STFT: a direct sum over the signal in
// double-float arithmetic, the twiddle index k * n kept modulo L as it steps; see twiddle_table). The
// scalar inputs that decide shapes (dft_length, axis, frame_step,
// frame_length, window sizes, MelWeightMatrix's parameters) must be known when the plan is made; the
// rules and definitions are src/ops/spectral's.
#include <cmath>
#include <cstring>
#include <numbers>
#include <optional>
#include <string>

#include "ops/spectral.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

namespace {

std::optional<int64_t> known_scalar(GpuKernelContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return std::nullopt;
  const Tensor& t = ctx.constant(i, what);
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    ctx.fail(std::string("input '") + what + "' must be int32 or int64, got " + t.describe());
  if (t.numel() != 1) ctx.fail(std::string("input '") + what + "' must be a scalar, got " + t.describe());
  return t.int_at(0);
}

// The twiddles cos and sin(2 pi m / L), m in [0, L), computed on the host in double and passed as
// float pairs (hi, lo: hi + lo is the double to ~2^-48), with sums of products in the same double-float
// arithmetic (Dekker's exact products, Knuth's exact sums): f32 twiddles and sums leave errors of ~1e-5
// on transforms of values ~100 where the exact result is 0. The table is a uniform array of fixed
// capacity (one pipeline for every length); longer transforms run on the CPU.
constexpr uint32_t kMaxTwiddles = 2048;

void twiddle_table(GpuKernelContext& ctx, shader::Program& p, int64_t L) {
  if (L > int64_t(kMaxTwiddles))
    ctx.unsupported("a transform of " + std::to_string(L) + " points (the GPU kernel's twiddle table holds " +
                    std::to_string(kMaxTwiddles) + ")");
  std::vector<uint32_t> tw(4 * kMaxTwiddles, 0);
  auto bits = [](float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; };
  for (int64_t m = 0; m < L; ++m) {
    double a = 2.0 * std::numbers::pi * double(m) / double(L);
    double c = std::cos(a), sn = std::sin(a);
    float ch = float(c), sh = float(sn);
    tw[size_t(4 * m)] = bits(ch), tw[size_t(4 * m + 1)] = bits(float(c - double(ch)));
    tw[size_t(4 * m + 2)] = bits(sh), tw[size_t(4 * m + 3)] = bits(float(sn - double(sh)));
  }
  p.uniform_array("tw", tw);
}

// cmul_acc(acc, v, m, sgn): acc (re and im as double-floats: vec4(re_hi, re_lo, im_hi, im_lo)) plus the
// complex v times cis(sgn * 2 pi m / L).
const char* kDoubleFloat =
    "fn df_split(a: f32) -> vec2<f32> { let c = 4097.0 * a; let hi = c - (c - a); return vec2<f32>(hi, a - hi); }\n"
    "fn df_two_prod(a: f32, b: f32) -> vec2<f32> {\n"
    "  let p = a * b;\n"
    "  let x = df_split(a);\n"
    "  let y = df_split(b);\n"
    "  return vec2<f32>(p, ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y);\n"
    "}\n"
    "fn df_two_sum(a: f32, b: f32) -> vec2<f32> { let s = a + b; let bb = s - a; return vec2<f32>(s, (a - (s - bb)) + (b - bb)); }\n"
    "fn df_add(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {\n"
    "  let s = df_two_sum(x.x, y.x);\n"
    "  let lo = s.y + x.y + y.y;\n"
    "  let hi = s.x + lo;\n"
    "  return vec2<f32>(hi, lo - (hi - s.x));\n"
    "}\n"
    "fn df_mul(a: f32, b: vec2<f32>) -> vec2<f32> { let p = df_two_prod(a, b.x); return vec2<f32>(p.x, p.y + a * b.y); }\n"
    "fn cmul_acc(acc: vec4<f32>, v: vec2<f32>, m: u32, sgn: f32) -> vec4<f32> {\n"
    "  let c = vec2<f32>(bitcast<f32>(tw(4u * m)), bitcast<f32>(tw(4u * m + 1u)));\n"
    "  let s = sgn * vec2<f32>(bitcast<f32>(tw(4u * m + 2u)), bitcast<f32>(tw(4u * m + 3u)));\n"
    "  let re = df_add(df_add(acc.xy, df_mul(v.x, c)), df_mul(-v.y, s));\n"
    "  let im = df_add(df_add(acc.zw, df_mul(v.x, s)), df_mul(v.y, c));\n"
    "  return vec4<f32>(re, im);\n"
    "}\n";

void dft(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (!dtype_is_float(t)) ctx.fail("input 'input' must be a float tensor, got " + std::string(dtype_name(t)));
  auto p = ops::dft_params(ctx.node, ctx.opset, ctx.shape(0), known_scalar(ctx, 1, "dft_length"),
                           ctx.opset >= 20 ? known_scalar(ctx, 2, "axis") : std::nullopt, ctx.fail_fn());
  ctx.set_output(0, t, p.out);
  if (shape_numel(p.out) == 0) return;
  const Shape& xs = ctx.shape(0);
  uint64_t inner = 1;
  for (size_t d = size_t(p.axis) + 1; d + 1 < xs.size(); ++d) inner *= uint64_t(xs[d]);
  auto prog = ctx.program(std::string("dft") + (p.inverse ? "_inv" : "") + (p.real_out ? "_c2r" : "") +
                          (p.complex_in ? "_complex" : "_real"));
  prog.input("x", t, xs);
  prog.output("y", t, p.out);
  prog.uniform("L", uint32_t(p.length));
  prog.uniform("in_len", uint32_t(p.in_len));
  prog.uniform("out_len", uint32_t(p.out_len));
  prog.uniform("inner", uint32_t(inner));
  const std::string cin = p.complex_in ? "2u" : "1u", cout = p.real_out ? "1u" : "2u";
  twiddle_table(ctx, prog, p.length);
  prog.declare(std::string(kDoubleFloat) +
               // Element (o, n, i) of the input as a complex value (0 beyond its length).
               "fn dft_at(o: u32, n: u32, i: u32) -> vec2<f32> {\n"
               "  if (n >= in_len()) { return vec2<f32>(0.0, 0.0); }\n"
               "  let b = ((o * in_len() + n) * inner() + i) * " + cin + ";\n" +
               (p.complex_in ? "  return vec2<f32>(to_f32_$x(x_load(b)), to_f32_$x(x_load(b + 1u)));\n"
                             : "  return vec2<f32>(to_f32_$x(x_load(b)), 0.0);\n") +
               "}\n");
  // Bin n of a Hermitian spectrum (inverse onesided): given, or the conjugate of bin L - n.
  std::string value = p.real_out ? "    var v = dft_at(o, n, i);\n"
                                   "    if (n >= in_len()) { v = dft_at(o, L() - n, i); v.y = -v.y; if (L() - n >= in_len()) { v = vec2<f32>(0.0, 0.0); } }\n"
                                 : "    let v = dft_at(o, n, i);\n";
  prog.set_threads(uint64_t(shape_numel(p.out)) / (p.real_out ? 1 : 2));
  prog.body(
      "  let i = gi % inner();\n"
      "  let k = (gi / inner()) % out_len();\n"
      "  let o = gi / (inner() * out_len());\n"
      "  let kstep = k % L();\n"
      "  var m = 0u;\n"
      "  var acc = vec4<f32>(0.0);\n"
      "  for (var n = 0u; n < L(); n = n + 1u) {\n" + value +
      "    acc = cmul_acc(acc, v, m, " + std::string(p.inverse ? "1.0" : "-1.0") + ");\n"
      "    m = m + kstep;\n"
      "    if (m >= L()) { m = m - L(); }\n"
      "  }\n" +
      "  var r = vec2<f32>(acc.x + acc.y, acc.z + acc.w);\n" +
      std::string(p.inverse ? "  r = r / f32(L());\n" : "") +
      "  let ob = gi * " + cout + ";\n"
      "  y_store(ob, from_f32_$y(r.x));\n" +
      std::string(p.real_out ? "" : "  y_store(ob + 1u, from_f32_$y(r.y));\n"));
  ctx.dispatch(prog, {ctx.in(0), ctx.out(0)});
}

void stft(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (!dtype_is_float(t)) ctx.fail("input 'signal' must be a float tensor, got " + std::string(dtype_name(t)));
  std::optional<int64_t> step = known_scalar(ctx, 1, "frame_step");
  if (!step) ctx.fail("input 'frame_step' is required");
  std::optional<int64_t> wlen;
  if (ctx.has_input(2)) {
    if (ctx.shape(2).size() != 1) ctx.fail("input 'window' must be 1-D, got shape " + shape_str(ctx.shape(2)));
    wlen = ctx.shape(2)[0];
  }
  auto p = ops::stft_params(ctx.node, ctx.shape(0), *step, wlen, known_scalar(ctx, 3, "frame_length"), ctx.fail_fn());
  ctx.set_output(0, t, p.out);
  if (shape_numel(p.out) == 0) return;
  const bool window = ctx.has_input(2);
  auto prog = ctx.program(std::string("stft") + (window ? "_window" : "") + (p.complex_in ? "_complex" : "_real"));
  prog.input("s", t, ctx.shape(0));
  std::vector<ValueRef> binds{ctx.in(0)};
  if (window) {
    prog.input("w", ctx.dtype(2), ctx.shape(2));
    binds.push_back(ctx.in(2));
  }
  prog.output("y", t, p.out);
  binds.push_back(ctx.out(0));
  prog.uniform("sig_len", uint32_t(p.signal_len));
  prog.uniform("fstep", uint32_t(p.frame_step));
  prog.uniform("flen", uint32_t(p.frame_length));
  prog.uniform("frames", uint32_t(p.frames));
  prog.uniform("bins", uint32_t(p.bins));
  twiddle_table(ctx, prog, p.frame_length);
  prog.declare(kDoubleFloat);
  const std::string c = p.complex_in ? "2u" : "1u";
  prog.set_threads(uint64_t(p.batch * p.frames * p.bins));
  prog.body(
      "  let k = gi % bins();\n"
      "  let f = (gi / bins()) % frames();\n"
      "  let b = gi / (bins() * frames());\n"
      "  let kstep = k % flen();\n"
      "  var m = 0u;\n"
      "  var acc = vec4<f32>(0.0);\n"
      "  for (var n = 0u; n < flen(); n = n + 1u) {\n"
      "    let at = (b * sig_len() + f * fstep() + n) * " + c + ";\n" +
      std::string(window ? "    let wn = to_f32_$w(w_load(n));\n" : "    let wn = 1.0;\n") +
      (p.complex_in ? "    let v = vec2<f32>(to_f32_$s(s_load(at)), to_f32_$s(s_load(at + 1u))) * wn;\n"
                    : "    let v = vec2<f32>(to_f32_$s(s_load(at)) * wn, 0.0);\n") +
      "    acc = cmul_acc(acc, v, m, -1.0);\n"
      "    m = m + kstep;\n"
      "    if (m >= flen()) { m = m - flen(); }\n"
      "  }\n"
      "  y_store(gi * 2u, from_f32_$y(acc.x + acc.y));\n"
      "  y_store(gi * 2u + 1u, from_f32_$y(acc.z + acc.w));");
  ctx.dispatch(prog, binds);
}

GpuKernel window(ops::WindowKind kind) {
  return [kind](GpuKernelContext& ctx) {
    std::optional<int64_t> size = known_scalar(ctx, 0, "size");
    if (!size) ctx.fail("input 'size' is required");
    if (*size < 0) ctx.fail("input 'size' must not be negative, got " + std::to_string(*size));
    DType t = ops::window_dtype(ctx.node, ctx.fail_fn());
    ctx.set_output(0, t, {*size});
    if (*size == 0) return;
    double a0, a1, a2;
    ops::window_coefficients(kind, a0, a1, a2);
    auto p = ctx.program("window");
    p.output("y", t, {*size});
    p.uniform_f32("denom", float(ops::window_denominator(ctx.node, *size)));
    p.set_threads(uint64_t(*size));
    // The angle 2 pi n / D with n / D reduced to [0, 1) first (cos has period 1 there).
    p.declare(shader::trig_helpers());
    p.body("  let q = f32(gi) / denom();\n"
           "  let a = 6.283185307179586 * (q - floor(q));\n"
           "  let b = 6.283185307179586 * (2.0 * q - floor(2.0 * q));\n"
           "  y_store(gi, from_f32_$y(" + f32_lit(float(a0)) + " - " + f32_lit(float(a1)) + " * cos_f32(a) + " +
           f32_lit(float(a2)) + " * cos_f32(b)));");
    ctx.dispatch(p, {ctx.out(0)});
  };
}

void mel_weight_matrix(GpuKernelContext& ctx) {
  auto num = known_scalar(ctx, 0, "num_mel_bins"), len = known_scalar(ctx, 1, "dft_length"),
       rate = known_scalar(ctx, 2, "sample_rate");
  if (!num || !len || !rate) ctx.fail("inputs 'num_mel_bins', 'dft_length' and 'sample_rate' are required");
  auto edge = [&](size_t i, const char* what) {
    const Tensor& v = ctx.constant(i, what);
    if (!dtype_is_float(v.dtype()) || v.numel() != 1) ctx.fail(std::string("input '") + what + "' must be a float scalar, got " + v.describe());
    return v.cast(DType::Float64).data<double>()[0];
  };
  double lo = edge(3, "lower_edge_hertz"), hi = edge(4, "upper_edge_hertz");
  DType t = ops::window_dtype(ctx.node, ctx.fail_fn());
  // The bin edges (ops::mel_bins, on the host from the known inputs); the triangles on the GPU.
  std::vector<int64_t> e = ops::mel_bins(*num, *len, *rate, lo, hi, ctx.fail_fn());
  const int64_t bins = *len / 2 + 1;
  ctx.set_output(0, t, {bins, *num});
  std::vector<uint32_t> edges(e.begin(), e.end());
  auto p = ctx.program("mel");
  p.output("y", t, {bins, *num});
  p.uniform("num", uint32_t(*num));
  p.uniform_array("edge", edges);
  p.set_threads(uint64_t(bins * *num));
  // ops::mel_weight.
  p.body("  let i = gi % num();\n"
         "  let j = gi / num();\n"
         "  let lo = edge(i);\n  let c = edge(i + 1u);\n  let hi = edge(i + 2u);\n"
         "  var w = 0.0;\n"
         "  if (hi > c && j >= c && j < hi) { w = f32(hi - j) / f32(hi - c); }\n"
         "  else if (c == lo) { w = select(0.0, 1.0, j == c); }\n"
         "  else if (j >= lo && j <= c) { w = f32(j - lo) / f32(c - lo); }\n"
         "  y_store(gi, from_f32_$y(w));");
  ctx.dispatch(p, {ctx.out(0)});
}

}  // namespace

void register_spectral(GpuKernelRegistry& r) {
  r.add("DFT", dft);
  r.add("STFT", stft);
  r.add("HannWindow", window(ops::WindowKind::Hann));
  r.add("HammingWindow", window(ops::WindowKind::Hamming));
  r.add("BlackmanWindow", window(ops::WindowKind::Blackman));
  r.add("MelWeightMatrix", mel_weight_matrix);
}

}  // namespace onnxgpu::webgpu
