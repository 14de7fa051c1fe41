// QuantizeLinear, DequantizeLinear (see ops/quantize.h: per tensor, per axis, blocked), DynamicQuantizeLinear.
// QuantizeLinear divides in float32 where x and the scale are float32 (as the ONNX reference does), else
// in double; DequantizeLinear computes (x - zero_point) in 64 bits, times the scale in float32.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/quantize.h"

namespace onnxgpu::cpu {
namespace {

std::string label(const KernelContext& ctx, size_t i, const char* formal) {
  return "input " + std::to_string(i) + " '" + formal + "' ('" + ctx.input_name(i) + "')";
}

std::string type_of(const Tensor& t) { return std::string(dtype_name(t.dtype())); }

// Rounds half to even, independent of the floating-point rounding mode.
template <class D>
D round_half_even(D v) {
  D r = std::round(v);  // half away from zero
  if (std::abs(v - std::trunc(v)) == D(0.5)) r = D(2) * std::round(v / D(2));
  return r;
}

// Saturates an integral value into [lo, hi]; NaN becomes 0 (what a NaN-to-integer cast gives on x86).
template <class D>
int64_t saturate(D r, int64_t lo, int64_t hi) {
  if (std::isnan(r)) return 0;
  if (r <= D(lo)) return lo;
  if (r >= D(hi)) return hi;
  return static_cast<int64_t>(r);
}

// Element i of a quantized tensor as a number (the narrow types' too).
double quantized_at(const Tensor& t, int64_t i) {
  if (dtype_is_narrow(t.dtype())) return narrow_to_double(t.dtype(), static_cast<const uint8_t*>(t.raw())[i]);
  return double(t.int_at(i));
}

std::vector<double> zero_points(const KernelContext& ctx, size_t zi, int64_t n) {
  std::vector<double> zp(size_t(n), 0.0);
  if (ctx.has_input(zi))
    for (size_t i = 0; i < zp.size(); ++i) zp[i] = quantized_at(ctx.input(zi), int64_t(i));
  return zp;
}

std::vector<Tensor> quantize_linear(KernelContext& ctx) {
  const ops::LinearQuantParams qa = ops::quantize_linear_params(ctx.node, ctx.opset, ctx.operands(), ctx.fail_fn());
  const Tensor& x = ctx.input(0);
  const DType out_type = qa.out;
  const int64_t lo = qa.lo, hi = qa.hi;
  const std::vector<double> scale = nn::to_doubles(ctx.input(1));
  const std::vector<double> zp = zero_points(ctx, 2, ctx.input(1).numel());

  Tensor y(out_type, x.shape());
  const bool float32 = x.dtype() == DType::Float32 && ctx.input(1).dtype() == DType::Float32;
  const std::vector<double> xs = nn::to_doubles(x);
  if (dtype_is_narrow_float(out_type)) {  // float8 / float4: x / scale + zero point, rounded to the type
    uint8_t* q = static_cast<uint8_t*>(y.raw());
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t c = qa.index(i);
      const double v = float32 ? double(float(xs[size_t(i)]) / float(scale[size_t(c)]) + float(zp[size_t(c)]))
                               : xs[size_t(i)] / scale[size_t(c)] + zp[size_t(c)];
      q[i] = narrow_from_double(out_type, v, qa.saturate);
    }
    return {y};
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = qa.index(i);
    int64_t q;
    if (float32) {  // in float32, as the reference computes it
      q = saturate(round_half_even(float(xs[size_t(i)]) / float(scale[size_t(c)])) + float(zp[size_t(c)]), lo, hi);
    } else {
      q = saturate(round_half_even(xs[size_t(i)] / scale[size_t(c)]) + double(zp[size_t(c)]), lo, hi);
    }
    if (dtype_is_narrow(out_type)) static_cast<uint8_t*>(y.raw())[i] = narrow_from_double(out_type, double(q));
    else visit_dtype(out_type, [&]<class T>() { y.data<T>()[i] = static_cast<T>(q); }, kIntTypes);
  }
  return {y};
}

std::vector<Tensor> dequantize_linear(KernelContext& ctx) {
  const ops::LinearQuantParams qa = ops::dequantize_linear_params(ctx.node, ctx.opset, ctx.operands(), ctx.fail_fn());
  const Tensor& x = ctx.input(0);
  const DType out_type = qa.out;
  const std::vector<double> scale = nn::to_doubles(ctx.input(1));
  const std::vector<double> zp = zero_points(ctx, 2, ctx.input(1).numel());
  // In float32 (as the reference computes it), then to the scale's type. (The difference of two integers
  // of at most 32 bits, or of two float8 values, is exact in double.)
  std::vector<double> out(size_t(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = qa.index(i);
    out[size_t(i)] = float(quantized_at(x, i) - zp[size_t(c)]) * float(scale[size_t(c)]);
  }
  return {nn::tensor_from_doubles(out_type, x.shape(), out)};
}

// y_scale = (max(0, max(x)) - min(0, min(x))) / 255, y_zero_point = saturate(round(0 - min / y_scale)),
// y = saturate(round(x / y_scale) + y_zero_point), all into uint8.
std::vector<Tensor> dynamic_quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Float32)
    ctx.fail(label(ctx, 0, "x") + " has type " + type_of(x) + ", expected float32");
  const float* p = x.data<float>();
  float mn = 0.0f, mx = 0.0f;
  bool nan = false;
  for (int64_t i = 0; i < x.numel(); ++i) {
    nan = nan || std::isnan(p[i]);
    mn = std::min(mn, p[i]);
    mx = std::max(mx, p[i]);
  }
  // A NaN makes min/max NaN in the reference, hence a NaN scale, zero point 0 and y all 0.
  const float scale = nan ? std::numeric_limits<float>::quiet_NaN() : (mx - mn) / 255.0f;
  const int64_t zp = scale > 0.0f ? saturate(round_half_even(0.0f - mn / scale), 0, 255) : 0;
  Tensor y(DType::UInt8, x.shape());
  uint8_t* q = y.data<uint8_t>();
  // scale 0 (x all zero) quantizes everything to the zero point, 0.
  if (scale > 0.0f)
    for (int64_t i = 0; i < x.numel(); ++i) q[i] = uint8_t(saturate(round_half_even(p[i] / scale) + float(zp), 0, 255));
  return {y, Tensor::scalar<float>(scale), Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp))};
}

}  // namespace

void register_quantize(KernelRegistry& r) {
  r.add("QuantizeLinear", quantize_linear);
  r.add("DequantizeLinear", dequantize_linear);
  r.add("QuantizeLinear", quantize_linear, ir::kMsDomain);  // ONNX's at opset 21 (ops::quantize_linear_params)
  r.add("DequantizeLinear", dequantize_linear, ir::kMsDomain);
  r.add("DynamicQuantizeLinear", dynamic_quantize_linear);
}

}  // namespace onnxgpu::cpu
