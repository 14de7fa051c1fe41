// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on the GPU (see ops/quantize.h: per tensor, per axis, blocked).
// One invocation per element, each finding its scale and zero point from the mode's index.
// - DequantizeLinear: x - zero_point in 64-bit integers through the families' to_i64 (int32 values and
//   zero points may differ by more than 2^31), then times the element's scale in f32, as the CPU
//   reference computes it, stored in the scale's type.
// - QuantizeLinear (float32 x and scale; other types run on the CPU, which divides them in double):
//   the float32 quotient x / scale rounded half to even, plus the zero point, saturated (NaN: 0). The
//   rounding decides ties, so the quotient must be the correctly rounded one, which WGSL's division
//   (2.5 ulp) is not: div_rn computes it by long division of the significands where it matters.
//   Into a float8 or float4: the quotient plus the zero point, rounded to the type by its store
//   (shader/narrow.h), saturated unless `saturate` is 0.
// The narrow types (int4, uint4, int2, uint2, float8, float4) load and store through the shader layer
// (admit_narrow): the kernels see their values only.
#include "ops/quantize.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/math_wgsl.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {

namespace {

// The scale index c of element gi (WGSL), by mode (uniforms dim, inner, block, blocks).
std::string scale_index(ops::LinearQuantParams::Mode mode) {
  using Mode = ops::LinearQuantParams::Mode;
  switch (mode) {
    case Mode::Tensor: return "  let c = 0u;\n";
    case Mode::Axis: return "  let c = (gi / inner()) % dim();\n";
    case Mode::Blocked:
      return "  let c = ((gi / (inner() * dim())) * blocks() + (gi / inner()) % dim() / block()) * inner() + gi % inner();\n";
  }
  return "";
}

void declare_params(shader::Program& p, const ops::LinearQuantParams& q) {
  p.uniform("dim", uint32_t(q.dim));
  p.uniform("inner", uint32_t(q.inner));
  p.uniform("block", uint32_t(q.block));
  p.uniform("blocks", uint32_t(q.blocks));
}

const char* mode_name(ops::LinearQuantParams::Mode mode) {
  using Mode = ops::LinearQuantParams::Mode;
  return mode == Mode::Tensor ? "tensor" : mode == Mode::Axis ? "axis" : "blocked";
}


void quantize_linear(GpuKernelContext& ctx) {
  const ops::LinearQuantParams q = ops::quantize_linear_params(ctx.node, ctx.opset, ctx.operands(), ctx.fail_fn());
  const Shape& xs = ctx.shape(0);
  ctx.set_output(0, q.out, xs);
  if (ctx.dtype(0) != DType::Float32 || ctx.dtype(1) != DType::Float32)
    ctx.unsupported("QuantizeLinear of " + std::string(dtype_name(ctx.dtype(0))) + " by a " +
                    std::string(dtype_name(ctx.dtype(1))) + " scale (the CPU divides those in double)");
  const int64_t n = shape_numel(xs);
  if (n == 0) return;
  strided::u32_dim(ctx, n, "x");
  const bool to_float = dtype_is_narrow_float(q.out);  // float8 / float4: rounded by the store, not to integers
  auto p = ctx.program(std::string("quantize_") + mode_name(q.mode) + (q.zero_point ? "_zp" : "") + (to_float ? "_float" : ""));
  p.input("x", DType::Float32, Shape{n});
  p.input("scale", DType::Float32, Shape{shape_numel(ctx.shape(1))});
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1)};
  if (q.zero_point) {
    p.input("zp", q.out, Shape{shape_numel(ctx.shape(2))});
    binds.push_back(ctx.in(2));
  }
  p.output("y", q.out, Shape{n});
  binds.push_back(ctx.out(0));
  if (dtype_is_narrow(q.out)) p.admit_narrow({.saturate = q.saturate});
  declare_params(p, q);
  if (!to_float) {
    p.uniform_f32("lo", float(q.lo));
    p.uniform_f32("hi", float(q.hi));
  }
  p.declare(kDivRn);
  p.set_threads(uint64_t(n));
  std::string b = scale_index(q.mode);
  b += to_float ? "  var v = div_rn(x_load(gi), scale_load(c));\n" : "  var v = round(div_rn(x_load(gi), scale_load(c)));\n";
  if (q.zero_point) b += "  v = v + f32(zp_load(c));\n";
  if (!to_float) b += "  v = select(clamp(v, lo(), hi()), 0.0, isnan_f32(v));\n";
  b += "  y_store(gi, from_f32_$y(v));\n";
  p.body(b);
  ctx.dispatch(p, binds);
}

void dequantize_linear(GpuKernelContext& ctx) {
  const ops::LinearQuantParams q = ops::dequantize_linear_params(ctx.node, ctx.opset, ctx.operands(), ctx.fail_fn());
  const Shape& xs = ctx.shape(0);
  ctx.set_output(0, q.out, xs);
  const int64_t n = shape_numel(xs);
  if (n == 0) return;
  strided::u32_dim(ctx, n, "x");
  auto p = ctx.program(std::string("dequantize_") + mode_name(q.mode) + (q.zero_point ? "_zp" : "") +
                       (dtype_is_narrow_float(ctx.dtype(0)) ? "_float" : ""));
  p.input("x", ctx.dtype(0), Shape{n});
  p.input("scale", ctx.dtype(1), Shape{shape_numel(ctx.shape(1))});
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1)};
  if (q.zero_point) {
    p.input("zp", ctx.dtype(2), Shape{shape_numel(ctx.shape(2))});
    binds.push_back(ctx.in(2));
  }
  p.output("y", q.out, Shape{n});
  binds.push_back(ctx.out(0));
  if (dtype_is_narrow(ctx.dtype(0))) p.admit_narrow();
  declare_params(p, q);
  p.set_threads(uint64_t(n));
  std::string b = scale_index(q.mode);
  if (dtype_is_narrow_float(ctx.dtype(0))) {  // float8 / float4: (x - zero point) * scale in f32, as the CPU
    b += "  var d = x_load(gi);\n";
    if (q.zero_point) b += "  d = d - zp_load(c);\n";
    b += "  y_store(gi, d * scale_load(c));\n";
  } else {
    b += "  var d = to_i64_$x(x_load(gi));\n";
    if (q.zero_point) b += "  d = w64_sub(d, to_i64_$zp(zp_load(c)));\n";
    b += "  y_store(gi, from_i64_f32(d) * scale_load(c));\n";
  }
  p.body(b);
  ctx.dispatch(p, binds);
}

// DynamicQuantizeLinear (float32 x -> uint8 y, its scale and zero point), the CPU reference's rule:
// scale = (max(0, max x) - min(0, min x)) / 255 (NaN anywhere: a NaN scale, zero point 0, y all 0),
// zero point = saturate(round(-min / scale)), y = saturate(round(x / scale) + zero point); scale 0 (x all
// zero) gives zero point 0 and y 0. Two dispatches: one workgroup finds the range and writes the scale and
// zero point (also into a scratch pair for the second); then one invocation per element quantizes. The
// divisions are the correctly rounded ones (div_rn), as the CPU's: the scale is an output and ties decide y.
void dynamic_quantize_linear(GpuKernelContext& ctx) {
  const Shape& xs = ctx.shape(0);
  if (ctx.dtype(0) != DType::Float32)
    ctx.unsupported("DynamicQuantizeLinear of " + std::string(dtype_name(ctx.dtype(0))) + " (float32 only)");
  ctx.set_output(0, DType::UInt8, xs);
  ctx.set_output(1, DType::Float32, Shape{});
  ctx.set_output(2, DType::UInt8, Shape{});
  const int64_t n = shape_numel(xs);
  if (n == 0) ctx.unsupported("an empty x");
  strided::u32_dim(ctx, n, "x");
  constexpr uint32_t kWg = 256;
  const ValueRef pair = ctx.temp(DType::Float32, Shape{2});  // scale, zero point (as a float)

  auto range = ctx.program("dynamic_quantize_range", kWg);
  range.input("x", DType::Float32, Shape{n});
  range.output("scale", DType::Float32, Shape{1});
  range.output("zp", DType::UInt8, Shape{1});
  range.output("sz", DType::Float32, Shape{2});
  range.uniform("N", uint32_t(n));
  range.declare(std::string(kDivRn) +
                "var<workgroup> lo_s: array<f32, " + u32_lit(kWg) + ">;\n"
                "var<workgroup> hi_s: array<f32, " + u32_lit(kWg) + ">;\n"
                "var<workgroup> nan_s: array<u32, " + u32_lit(kWg) + ">;\n");
  range.body(
      "  var lo = 0.0;\n"
      "  var hi = 0.0;\n"
      "  var nan = 0u;\n"
      "  for (var i = lid; i < N(); i = i + " + u32_lit(kWg) + ") {\n"
      "    let v = x_load(i);\n"
      "    if (isnan_f32(v)) { nan = 1u; } else { lo = min(lo, v); hi = max(hi, v); }\n"
      "  }\n"
      "  lo_s[lid] = lo;\n"
      "  hi_s[lid] = hi;\n"
      "  nan_s[lid] = nan;\n"
      "  workgroupBarrier();\n"
      "  for (var s = " + u32_lit(kWg / 2) + "; s > 0u; s = s >> 1u) {\n"
      "    if (lid < s) {\n"
      "      lo_s[lid] = min(lo_s[lid], lo_s[lid + s]);\n"
      "      hi_s[lid] = max(hi_s[lid], hi_s[lid + s]);\n"
      "      nan_s[lid] = nan_s[lid] | nan_s[lid + s];\n"
      "    }\n"
      "    workgroupBarrier();\n"
      "  }\n"
      "  if (lid == 0u) {\n"
      "    var scale = div_rn(hi_s[0] - lo_s[0], 255.0);\n"
      "    if (nan_s[0] != 0u) { scale = f32_nan(); }\n"
      "    var z = 0.0;\n"
      "    if (scale > 0.0) { z = clamp(round(div_rn(-lo_s[0], scale)), 0.0, 255.0); }\n"
      "    scale_store(0u, scale);\n"
      "    zp_store(0u, u32(z));\n"
      "    sz_store(0u, scale);\n"
      "    sz_store(1u, z);\n"
      "  }\n");
  ctx.dispatch(range, {ctx.in(0), ctx.out(1), ctx.out(2), pair}, 1, 1);  // one workgroup (no guard: barriers)

  auto q = ctx.program("dynamic_quantize");
  q.input("x", DType::Float32, Shape{n});
  q.input("sz", DType::Float32, Shape{2});
  q.output("y", DType::UInt8, Shape{n});
  q.declare(kDivRn);
  q.set_threads(uint64_t(n));
  q.body(
      "  let scale = sz_load(0u);\n"
      "  var v = 0.0;\n"
      "  if (scale > 0.0) { v = round(div_rn(x_load(gi), scale)) + sz_load(1u); }\n"
      "  v = select(clamp(v, 0.0, 255.0), 0.0, isnan_f32(v));\n"
      "  y_store(gi, u32(v));\n");
  ctx.dispatch(q, {ctx.in(0), pair, ctx.out(0)});
}

}  // namespace

void register_quantize(GpuKernelRegistry& r) {
  r.add("QuantizeLinear", quantize_linear);
  r.add("DequantizeLinear", dequantize_linear);
  r.add("QuantizeLinear", quantize_linear, ir::kMsDomain);  // ONNX's at opset 21 (ops::quantize_linear_params)
  r.add("DequantizeLinear", dequantize_linear, ir::kMsDomain);
  r.add("DynamicQuantizeLinear", dynamic_quantize_linear);
}

}  // namespace onnxgpu::webgpu
