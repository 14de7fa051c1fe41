// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (linear 8-bit quantization).
//   QuantizeLinear:   y = saturate(round_half_to_even(x / y_scale) + y_zero_point)
//   DequantizeLinear: y = (x - x_zero_point) * x_scale
// Scale and zero point are per-tensor (scalar or one element) or, from opset 13, per-axis (1-D, of
// length x.shape[axis]).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cpu/kernel.h"

namespace onnxgpu::cpu {
namespace {

std::string label(const KernelContext& ctx, size_t i, const char* formal) {
  return "input " + std::to_string(i) + " '" + formal + "' ('" + ctx.input_name(i) + "')";
}

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

// Maps each element of x to the index of its scale/zero point.
struct QuantAxis {
  int64_t channels = 1;  // 1: per-tensor
  int64_t inner = 1;     // elements per step along the axis
  int64_t index(int64_t i) const { return channels == 1 ? 0 : (i / inner) % channels; }
};

// Checks the scale (input `si`) and zero point (input `zi`, optional) against x; returns the axis map.
QuantAxis check_params(const KernelContext& ctx, const Tensor& x, size_t si, const char* sname, size_t zi,
                       const char* zname) {
  const Tensor& scale = ctx.input(si);
  if (scale.dtype() != DType::Float32)
    ctx.fail(label(ctx, si, sname) + " has type " + std::string(dtype_name(scale.dtype())) + ", expected float32");
  QuantAxis qa;
  const bool one = scale.numel() == 1 && scale.rank() <= 1;
  if (!one) {
    if (ctx.opset < 13 || scale.rank() != 1)
      ctx.fail(label(ctx, si, sname) + " has shape " + shape_str(scale.shape()) + ", expected a scalar" +
               (ctx.opset < 13 ? std::string(" (per-axis quantization needs opset 13)") : std::string(" or a 1-D tensor")));
    const int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", 1), x.rank());
    if (scale.dim(0) != x.dim(axis))
      ctx.fail(label(ctx, si, sname) + " has " + std::to_string(scale.dim(0)) + " elements, expected " +
               std::to_string(x.dim(axis)) + " (the size of axis " + std::to_string(axis) + " of input 0)");
    qa.channels = x.dim(axis);
    for (int64_t d = axis + 1; d < x.rank(); ++d) qa.inner *= x.dim(d);
  }
  if (ctx.has_input(zi)) {
    const Tensor& zp = ctx.input(zi);
    if (zp.numel() != scale.numel() || zp.rank() > 1)
      ctx.fail(label(ctx, zi, zname) + " has shape " + shape_str(zp.shape()) + ", expected the shape of '" + sname +
               "' " + shape_str(scale.shape()));
  }
  return qa;
}

std::vector<Tensor> quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Int32)
    ctx.fail(label(ctx, 0, "x") + " has type " + std::string(dtype_name(x.dtype())) + ", expected float32 or int32");
  const QuantAxis qa = check_params(ctx, x, 1, "y_scale", 2, "y_zero_point");
  const DType out_type = ctx.has_input(2) ? ctx.input(2).dtype() : DType::UInt8;
  if (out_type != DType::UInt8 && out_type != DType::Int8)
    ctx.fail(label(ctx, 2, "y_zero_point") + " has type " + std::string(dtype_name(out_type)) +
             ", expected uint8 or int8");
  const int64_t lo = out_type == DType::UInt8 ? 0 : -128, hi = out_type == DType::UInt8 ? 255 : 127;
  const float* scale = ctx.input(1).data<float>();
  std::vector<int64_t> zp(static_cast<size_t>(ctx.input(1).numel()), 0);
  if (ctx.has_input(2))
    for (size_t i = 0; i < zp.size(); ++i) zp[i] = ctx.input(2).int_at(int64_t(i));

  Tensor y(out_type, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = qa.index(i);
    int64_t q;
    if (x.dtype() == DType::Float32) {
      q = saturate(round_half_even(x.data<float>()[i] / scale[c]) + float(zp[size_t(c)]), lo, hi);
    } else {
      q = saturate(round_half_even(double(x.data<int32_t>()[i]) / double(scale[c])) + double(zp[size_t(c)]), lo, hi);
    }
    if (out_type == DType::UInt8) y.data<uint8_t>()[i] = static_cast<uint8_t>(q);
    else y.data<int8_t>()[i] = static_cast<int8_t>(q);
  }
  return {y};
}

std::vector<Tensor> dequantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::UInt8 && x.dtype() != DType::Int8 && x.dtype() != DType::Int32)
    ctx.fail(label(ctx, 0, "x") + " has type " + std::string(dtype_name(x.dtype())) + ", expected int8, uint8 or int32");
  if (ctx.has_input(2) && ctx.input(2).dtype() != x.dtype())
    ctx.fail(label(ctx, 2, "x_zero_point") + " has type " + std::string(dtype_name(ctx.input(2).dtype())) +
             ", expected " + std::string(dtype_name(x.dtype())) + " like input 'x'");
  const QuantAxis qa = check_params(ctx, x, 1, "x_scale", 2, "x_zero_point");
  const float* scale = ctx.input(1).data<float>();
  std::vector<int64_t> zp(static_cast<size_t>(ctx.input(1).numel()), 0);
  if (ctx.has_input(2))
    for (size_t i = 0; i < zp.size(); ++i) zp[i] = ctx.input(2).int_at(int64_t(i));

  Tensor y(DType::Float32, x.shape());
  float* out = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = qa.index(i);
    out[i] = float(x.int_at(i) - zp[size_t(c)]) * scale[c];
  }
  return {y};
}

// y_scale = (max(0, max(x)) - min(0, min(x))) / 255, y_zero_point = saturate(round(0 - min / y_scale)),
// y = saturate(round(x / y_scale) + y_zero_point), all into uint8.
std::vector<Tensor> dynamic_quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Float32)
    ctx.fail(label(ctx, 0, "x") + " has type " + std::string(dtype_name(x.dtype())) + ", expected float32");
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
  r.add("DynamicQuantizeLinear", dynamic_quantize_linear);
}

}  // namespace onnxgpu::cpu
