// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (linear quantization to 8- and 16-bit integers).
//   QuantizeLinear:   y = saturate(round_half_to_even(x / y_scale) + y_zero_point)
//   DequantizeLinear: y = (x - x_zero_point) * x_scale
// Scale and zero point are per-tensor (a scalar or one element), from opset 13 per-axis (1-D, of
// length x.shape[axis]) and from opset 21 blocked (x's rank, ceil(x.shape[axis] / block_size) along
// the axis, x's dims elsewhere: element i takes the scale of its block along the axis). The integer
// types: int8, uint8, and from opset 21 int16, uint16 (DequantizeLinear also int32); the scale is
// float32, or from opset 19 float16 / bfloat16, the type DequantizeLinear returns. QuantizeLinear's
// output type is its zero point's, else the attribute output_dtype (opset 21), else uint8. The int4,
// uint4, int2, uint2 and float8 / float4 types are not supported (the engine has no such dtypes).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cpu/kernel.h"
#include "cpu/nn_util.h"

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

// The range of a quantized integer type.
bool int_range(DType t, int64_t& lo, int64_t& hi) {
  switch (t) {
    case DType::UInt8: lo = 0; hi = 255; return true;
    case DType::Int8: lo = -128; hi = 127; return true;
    case DType::UInt16: lo = 0; hi = 65535; return true;
    case DType::Int16: lo = -32768; hi = 32767; return true;
    default: return false;
  }
}

const DTypeSet kScaleTypes{DType::Float32, DType::Float16, DType::BFloat16};

// Maps each element of x to the index of its scale / zero point.
struct QuantAxis {
  enum class Mode { Tensor, Axis, Blocked } mode = Mode::Tensor;
  int64_t dim = 1;     // x's size along the axis
  int64_t inner = 1;   // elements per step along the axis
  int64_t block = 1;   // Blocked: block size; blocks = ceil(dim / block)
  int64_t blocks = 1;
  int64_t index(int64_t i) const {
    switch (mode) {
      case Mode::Tensor: return 0;
      case Mode::Axis: return (i / inner) % dim;
      case Mode::Blocked: {
        const int64_t outer = i / (inner * dim), a = (i / inner) % dim;
        return (outer * blocks + a / block) * inner + i % inner;
      }
    }
    return 0;
  }
};

// Checks the scale (input `si`) and zero point (input `zi`, optional) against x; returns the map.
QuantAxis check_params(const KernelContext& ctx, const Tensor& x, size_t si, const char* sname, size_t zi,
                       const char* zname) {
  const Tensor& scale = ctx.input(si);
  if (!kScaleTypes.has(scale.dtype()) || (ctx.opset < 19 && scale.dtype() != DType::Float32))
    ctx.fail(label(ctx, si, sname) + " has type " + type_of(scale) + ", expected float32" +
             (ctx.opset < 19 ? std::string(" (float16 and bfloat16 scales need opset 19)") : ", float16 or bfloat16"));
  QuantAxis qa;
  const int64_t block = ctx.opset >= 21 ? ctx.node.attr_int("block_size", 0) : 0;
  if (block < 0) ctx.fail("block_size " + std::to_string(block) + " must be >= 0");
  const bool one = scale.numel() == 1 && scale.rank() <= 1;
  if (block > 0) {
    const int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", 1), x.rank());
    qa.mode = QuantAxis::Mode::Blocked;
    qa.dim = x.dim(axis);
    qa.block = block;
    qa.blocks = (qa.dim + block - 1) / block;
    for (int64_t d = axis + 1; d < x.rank(); ++d) qa.inner *= x.dim(d);
    Shape want = x.shape();
    want[size_t(axis)] = qa.blocks;
    if (scale.shape() != want)
      ctx.fail(label(ctx, si, sname) + " has shape " + shape_str(scale.shape()) + ", expected " + shape_str(want) +
               " (input 0's shape with ceil(" + std::to_string(qa.dim) + " / block_size " + std::to_string(block) +
               ") blocks along axis " + std::to_string(axis) + ")");
  } else if (!one) {
    if (ctx.opset < 13 || scale.rank() != 1)
      ctx.fail(label(ctx, si, sname) + " has shape " + shape_str(scale.shape()) + ", expected a scalar" +
               (ctx.opset < 13 ? std::string(" (per-axis quantization needs opset 13)")
                               : std::string(" or a 1-D tensor") + (ctx.opset >= 21 ? " (or blocks: block_size > 0)" : "")));
    const int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", 1), x.rank());
    if (scale.dim(0) != x.dim(axis))
      ctx.fail(label(ctx, si, sname) + " has " + std::to_string(scale.dim(0)) + " elements, expected " +
               std::to_string(x.dim(axis)) + " (the size of axis " + std::to_string(axis) + " of input 0)");
    qa.mode = QuantAxis::Mode::Axis;
    qa.dim = x.dim(axis);
    for (int64_t d = axis + 1; d < x.rank(); ++d) qa.inner *= x.dim(d);
  }
  if (ctx.has_input(zi)) {
    const Tensor& zp = ctx.input(zi);
    if (zp.numel() != scale.numel() || (qa.mode == QuantAxis::Mode::Blocked ? zp.shape() != scale.shape() : zp.rank() > 1))
      ctx.fail(label(ctx, zi, zname) + " has shape " + shape_str(zp.shape()) + ", expected the shape of '" + sname +
               "' " + shape_str(scale.shape()));
  }
  return qa;
}

std::vector<int64_t> zero_points(const KernelContext& ctx, size_t zi, int64_t n) {
  std::vector<int64_t> zp(size_t(n), 0);
  if (ctx.has_input(zi))
    for (size_t i = 0; i < zp.size(); ++i) zp[i] = ctx.input(zi).int_at(int64_t(i));
  return zp;
}

std::vector<Tensor> quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DTypeSet x_types = ctx.opset >= 19 ? DTypeSet{DType::Float32, DType::Float16, DType::BFloat16, DType::Int32}
                                           : DTypeSet{DType::Float32, DType::Int32};
  if (!x_types.has(x.dtype()))
    ctx.fail(label(ctx, 0, "x") + " has type " + type_of(x) + ", expected float32" +
             (ctx.opset >= 19 ? ", float16, bfloat16" : "") + " or int32");
  const QuantAxis qa = check_params(ctx, x, 1, "y_scale", 2, "y_zero_point");
  // The output type: the zero point's, else output_dtype (opset 21), else uint8.
  const int64_t output_dtype = ctx.opset >= 21 ? ctx.node.attr_int("output_dtype", 0) : 0;
  DType out_type = ctx.has_input(2) ? ctx.input(2).dtype() : output_dtype ? DType(output_dtype) : DType::UInt8;
  if (ctx.has_input(2) && output_dtype && DType(output_dtype) != out_type)
    ctx.fail("output_dtype " + std::to_string(output_dtype) + " differs from the type of " + label(ctx, 2, "y_zero_point") +
             ", " + std::string(dtype_name(out_type)));
  int64_t lo = 0, hi = 0;
  const bool sixteen = out_type == DType::UInt16 || out_type == DType::Int16;
  if (!int_range(out_type, lo, hi) || (sixteen && ctx.opset < 21)) {
    const std::string expected = std::string(", expected uint8 or int8") +
                                 (ctx.opset >= 21 ? ", uint16 or int16 (int4, uint4, int2, uint2 and float8 are not supported)" : "");
    if (ctx.has_input(2)) ctx.fail(label(ctx, 2, "y_zero_point") + " has type " + type_of(ctx.input(2)) + expected);
    ctx.fail("output_dtype " + std::to_string(output_dtype) + " (" + std::string(dtype_name(out_type)) + ") is not supported" +
             expected);
  }
  const std::vector<double> scale = nn::to_doubles(ctx.input(1));
  const std::vector<int64_t> zp = zero_points(ctx, 2, ctx.input(1).numel());

  Tensor y(out_type, x.shape());
  const bool float32 = x.dtype() == DType::Float32 && ctx.input(1).dtype() == DType::Float32;
  const std::vector<double> xs = nn::to_doubles(x);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = qa.index(i);
    int64_t q;
    if (float32) {  // in float32, as the reference computes it
      q = saturate(round_half_even(float(xs[size_t(i)]) / float(scale[size_t(c)])) + float(zp[size_t(c)]), lo, hi);
    } else {
      q = saturate(round_half_even(xs[size_t(i)] / scale[size_t(c)]) + double(zp[size_t(c)]), lo, hi);
    }
    visit_dtype(out_type, [&]<class T>() { y.data<T>()[i] = static_cast<T>(q); }, kIntTypes);
  }
  return {y};
}

std::vector<Tensor> dequantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool sixteen = x.dtype() == DType::UInt16 || x.dtype() == DType::Int16;
  if ((x.dtype() != DType::UInt8 && x.dtype() != DType::Int8 && x.dtype() != DType::Int32 && !sixteen) ||
      (sixteen && ctx.opset < 21))
    ctx.fail(label(ctx, 0, "x") + " has type " + type_of(x) + ", expected int8, uint8" +
             (ctx.opset >= 21 ? ", int16, uint16" : "") + " or int32 (int4, uint4, int2, uint2 and float8 are not supported)");
  if (ctx.has_input(2) && ctx.input(2).dtype() != x.dtype())
    ctx.fail(label(ctx, 2, "x_zero_point") + " has type " + type_of(ctx.input(2)) + ", expected " + type_of(x) +
             " like input 'x'");
  const QuantAxis qa = check_params(ctx, x, 1, "x_scale", 2, "x_zero_point");
  const DType out_type = ctx.input(1).dtype();
  const int64_t output_dtype = ctx.opset >= 23 ? ctx.node.attr_int("output_dtype", 0) : 0;
  if (output_dtype && DType(output_dtype) != out_type)
    ctx.fail("output_dtype " + std::to_string(output_dtype) + " differs from the type of " + label(ctx, 1, "x_scale") +
             ", " + std::string(dtype_name(out_type)));
  const std::vector<double> scale = nn::to_doubles(ctx.input(1));
  const std::vector<int64_t> zp = zero_points(ctx, 2, ctx.input(1).numel());
  // In float32 (as the reference computes it), then to the scale's type.
  std::vector<double> out(size_t(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = qa.index(i);
    out[size_t(i)] = float(x.int_at(i) - zp[size_t(c)]) * float(scale[size_t(c)]);
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
  r.add("DynamicQuantizeLinear", dynamic_quantize_linear);
}

}  // namespace onnxgpu::cpu
