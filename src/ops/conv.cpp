#include "ops/conv.h"

#include <string>

#include "ops/values.h"
#include "ops/window.h"

namespace onnxgpu::ops {

static std::string describe(const Operand& v) { return std::string(dtype_name(v.dtype)) + shape_str(v.shape); }

void check_conv_inputs(const Operand& x, const Operand& w, const Operand& b, const Fail& fail) {
  const DTypeSet types{DType::Float16, DType::Float32, DType::Float64};
  if (!types.has(x.dtype)) raise(fail, "X must be float16, float32 or float64, got " + describe(x));
  if (w.dtype != x.dtype) raise(fail, "W is " + describe(w) + " but X is " + describe(x));
  if (b.given() && (b.dtype != x.dtype || b.shape.size() != 1))
    raise(fail, "B must be a 1-D tensor of X's type, got " + describe(b));
}

void check_conv_integer_inputs(const Operand& x, const Operand& w, const Operand& x_zero, const Operand& w_zero,
                               const Fail& fail) {
  auto q = [](DType d) { return d == DType::Int8 || d == DType::UInt8; };
  if (!q(x.dtype) || !q(w.dtype)) raise(fail, "X and W must be int8 or uint8, got " + describe(x) + " and " + describe(w));
  if (x_zero.given() && (shape_numel(x_zero.shape) != 1 || x_zero.dtype != x.dtype))
    raise(fail, "x_zero_point must be a scalar of X's type, got " + describe(x_zero));
  if (w_zero.given() && !w.shape.empty()) {
    const int64_t M = w.shape[0], n = shape_numel(w_zero.shape);
    if (w_zero.dtype != w.dtype || (n != 1 && n != M))
      raise(fail, "w_zero_point must be a scalar or have one value per output channel (" + std::to_string(M) +
                      ") of W's type, got " + describe(w_zero));
  }
}

DType check_qlinear_conv_inputs(const std::vector<Operand>& in, const Fail& fail) {
  auto at = [&](size_t i) { return i < in.size() ? in[i] : Operand{}; };
  check_conv_integer_inputs(at(kQx), at(kQw), at(kQxZero), at(kQwZero), fail);
  const int64_t M = at(kQw).shape.empty() ? 1 : at(kQw).shape[0];
  auto scale = [&](size_t i, const char* what, bool per_channel) {
    const Operand& s = at(i);
    const int64_t n = shape_numel(s.shape);
    if (!s.given() || !dtype_is_float(s.dtype) || (n != 1 && !(per_channel && n == M)))
      raise(fail, std::string(what) + " must be a float scalar" +
                      (per_channel ? " or have one value per output channel (" + std::to_string(M) + ")" : std::string()) +
                      ", got " + (s.given() ? describe(s) : std::string("nothing")));
  };
  scale(kQxScale, "x_scale", false);
  scale(kQwScale, "w_scale", true);
  scale(kQyScale, "y_scale", false);
  const Operand& yz = at(kQyZero);
  if (!yz.given() || (yz.dtype != DType::Int8 && yz.dtype != DType::UInt8) || shape_numel(yz.shape) != 1)
    raise(fail, "y_zero_point must be an int8 or uint8 scalar (it gives y its type), got " +
                    (yz.given() ? describe(yz) : std::string("nothing")));
  const Operand& b = at(kQBias);
  if (b.given() && (b.dtype != DType::Int32 || b.shape.size() != 1 || b.shape[0] != M))
    raise(fail, "B must be int32 with one value per output channel (" + std::to_string(M) + "), got " + describe(b));
  return yz.dtype;
}

int64_t conv_group(const ir::Node& node, const Fail& fail) {
  int64_t g = node.attr_int("group", 1);
  if (g <= 0) raise(fail, "group must be positive, got " + std::to_string(g));
  return g;
}

void check_kernel_shape(const ir::Node& node, const Shape& from_weights, const Fail& fail) {
  std::vector<int64_t> ks = node.attr_ints("kernel_shape", {});
  if (!ks.empty() && Shape(ks) != from_weights)
    fail("kernel_shape " + shape_str(ks) + " does not match the weights' spatial dims " + shape_str(from_weights));
}

static void check_ranks(const Shape& x, const Shape& w, const Fail& fail) {
  if (x.size() < 3) raise(fail, "input X must be [N, C, D1, ...] (rank >= 3), got " + shape_str(x));
  if (w.size() != x.size()) raise(fail, "weights W " + shape_str(w) + " must have the rank of X " + shape_str(x));
}

void check_conv_shapes(const Shape& x, const Shape& w, int64_t group, int64_t bias_size, const Fail& fail) {
  check_ranks(x, w, fail);
  int64_t C = x[1], M = w[0], Cg = w[1];
  if (C != Cg * group)
    raise(fail, "X " + shape_str(x) + " has " + std::to_string(C) + " channels but W " + shape_str(w) + " with group " +
                    std::to_string(group) + " expects " + std::to_string(Cg * group));
  if (M % group != 0)
    raise(fail, "W " + shape_str(w) + " has " + std::to_string(M) + " output channels, not divisible by group " +
                    std::to_string(group));
  if (bias_size >= 0 && bias_size != M)
    raise(fail, "bias B has " + std::to_string(bias_size) + " elements but W " + shape_str(w) + " has " +
                    std::to_string(M) + " output channels");
}

void check_conv_transpose_shapes(const Shape& x, const Shape& w, int64_t group, int64_t bias_size, const Fail& fail) {
  check_ranks(x, w, fail);
  int64_t C = x[1];
  if (w[0] != C)
    raise(fail, "X " + shape_str(x) + " has " + std::to_string(C) + " channels but W " + shape_str(w) + " expects " +
                    std::to_string(w[0]));
  if (C % group != 0) raise(fail, "X has " + std::to_string(C) + " channels, not divisible by group " + std::to_string(group));
  const int64_t M = w[1] * group;
  if (bias_size >= 0 && bias_size != M)
    raise(fail, "B must be a 1-D tensor of X's type with " + std::to_string(M) + " values, got " +
                    std::to_string(bias_size));
}

ConvTransposeGeometry conv_transpose_geometry(const ir::Node& node, const Shape& in, const Shape& kernel,
                                              const Fail& fail) {
  size_t r = in.size();
  auto get = [&](const char* name, size_t count, int64_t def) {
    std::vector<int64_t> v = node.attr_ints(name, {});
    if (v.empty()) v.assign(count, def);
    if (v.size() != count)
      raise(fail, std::string("attribute '") + name + "' has " + std::to_string(v.size()) + " values, expected " +
            std::to_string(count));
    return v;
  };
  ConvTransposeGeometry g;
  g.strides = get("strides", r, 1);
  g.dilations = get("dilations", r, 1);
  std::vector<int64_t> opad = get("output_padding", r, 0), pads = get("pads", 2 * r, 0);
  std::vector<int64_t> out_attr = node.attr_ints("output_shape", {});
  if (out_attr.size() == r + 2) out_attr.erase(out_attr.begin(), out_attr.begin() + 2);
  if (!out_attr.empty() && out_attr.size() != r)
    raise(fail, "output_shape " + shape_str(out_attr) + " must have one value per spatial dim (" + std::to_string(r) + ")");
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    raise(fail, "unknown auto_pad '" + auto_pad + "'");
  g.pad_begin.resize(r);
  g.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    if (g.strides[i] <= 0 || g.dilations[i] <= 0) raise(fail, "strides and dilations must be positive");
    int64_t full = g.strides[i] * (in[i] - 1) + opad[i] + (kernel[i] - 1) * g.dilations[i] + 1;
    bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (!out_attr.empty() || same) {
      int64_t o = !out_attr.empty() ? out_attr[i] : in[i] * g.strides[i];
      int64_t total = full - o;
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? ops::floor_div(total, 2) : total - ops::floor_div(total, 2);
      g.out[i] = o;
    } else if (auto_pad == "VALID") {
      g.pad_begin[i] = 0;
      g.out[i] = full;
    } else {
      g.pad_begin[i] = pads[i];
      g.out[i] = full - pads[i] - pads[i + r];
    }
    if (g.out[i] < 0) raise(fail, "the output would have a negative size along spatial dim " + std::to_string(i));
  }
  return g;
}

Col2ImGeometry col2im_geometry(const ir::Node& node, const Shape& input, const std::vector<int64_t>& image_shape,
                               const std::vector<int64_t>& block_shape, const Fail& fail) {
  Col2ImGeometry g;
  const size_t d = image_shape.size();
  if (d == 0 || block_shape.size() != d)
    raise(fail, "inputs 'image_shape' and 'block_shape' must have one value per spatial dim, got " +
                    std::to_string(d) + " and " + std::to_string(block_shape.size()));
  if (input.size() != 3) raise(fail, "input 'input' must be [N, C * prod(block_shape), L], got shape " + shape_str(input));
  auto get = [&](const char* name, size_t count, int64_t def) {
    std::vector<int64_t> v = node.attr_ints(name, {});
    if (v.empty()) v.assign(count, def);
    if (v.size() != count)
      raise(fail, std::string("attribute '") + name + "' has " + std::to_string(v.size()) + " values, expected " + std::to_string(count));
    return v;
  };
  g.strides = get("strides", d, 1);
  g.dilations = get("dilations", d, 1);
  std::vector<int64_t> pads = get("pads", 2 * d, 0);
  g.image = image_shape;
  g.block = block_shape;
  int64_t kprod = 1, lprod = 1;
  for (size_t k = 0; k < d; ++k) {
    if (g.strides[k] <= 0 || g.dilations[k] <= 0 || block_shape[k] <= 0 || image_shape[k] <= 0)
      raise(fail, "strides, dilations, block_shape and image_shape must be positive");
    int64_t span = image_shape[k] + pads[k] + pads[k + d] - g.dilations[k] * (block_shape[k] - 1) - 1;
    if (span < 0) raise(fail, "the block does not fit the padded image along spatial dim " + std::to_string(k));
    g.blocks.push_back(span / g.strides[k] + 1);
    g.pad_begin.push_back(pads[k]);
    kprod *= block_shape[k];
    lprod *= g.blocks.back();
  }
  if (input[1] % kprod != 0)
    raise(fail, "input 'input' " + shape_str(input) + ": dim 1 must be a multiple of prod(block_shape) = " + std::to_string(kprod));
  if (input[2] != lprod)
    raise(fail, "input 'input' " + shape_str(input) + ": dim 2 must be the block count " + std::to_string(lprod));
  g.channels = input[1] / kprod;
  g.out = {input[0], g.channels};
  g.out.insert(g.out.end(), image_shape.begin(), image_shape.end());
  return g;
}

DeformConvGeometry deform_conv_geometry(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail) {
  auto input = [&](size_t i) { return i < in.size() ? in[i] : Operand{}; };
  const Operand x = input(0), w = input(1), off = input(2), b = input(3), mask = input(4);
  const DTypeSet types{DType::Float16, DType::Float32, DType::Float64, DType::BFloat16};
  if (!types.has(x.dtype)) raise(fail, "input 'X' must be float16, float32, float64 or bfloat16, got " + x.describe());
  auto same_type = [&](const char* name, const Operand& o) {
    if (o.dtype != x.dtype)
      raise(fail, std::string("input '") + name + "' must have X's type (" + x.describe() + "), got " + o.describe());
  };
  same_type("W", w);
  same_type("offset", off);
  if (b.given()) same_type("B", b);
  if (mask.given()) same_type("mask", mask);
  if (x.shape.size() != 4) raise(fail, "input 'X' must be a 2-D image [N, C, H, W] (DeformConv is 2-D), got " + x.describe());
  DeformConvGeometry g;
  g.group = conv_group(node, fail);
  if (b.given() && b.shape.size() != 1) raise(fail, "input 'B' must be 1-D, got " + b.describe());
  check_conv_shapes(x.shape, w.shape, g.group, b.given() ? b.shape[0] : -1, fail);
  const Shape kernel(w.shape.begin() + 2, w.shape.end());
  check_kernel_shape(node, kernel, fail);
  g.offset_group = node.attr_int("offset_group", 1);
  g.N = x.shape[0], g.C = x.shape[1], g.H = x.shape[2], g.W = x.shape[3], g.M = w.shape[0];
  g.kh = kernel[0], g.kw = kernel[1];
  if (g.offset_group <= 0 || g.C % g.offset_group != 0)
    raise(fail, "offset_group " + std::to_string(g.offset_group) + " must be positive and divide X's " +
                    std::to_string(g.C) + " channels");
  Window win = make_window(node, Shape(x.shape.begin() + 2, x.shape.end()), kernel, false, fail);
  g.oh = win.out[0], g.ow = win.out[1];
  g.stride_h = win.strides[0], g.stride_w = win.strides[1];
  g.dil_h = win.dilations[0], g.dil_w = win.dilations[1];
  g.pad_top = win.pad_begin[0], g.pad_left = win.pad_begin[1];
  const int64_t taps = g.offset_group * g.kh * g.kw;
  const Shape want_off{g.N, 2 * taps, g.oh, g.ow}, want_mask{g.N, taps, g.oh, g.ow};
  if (off.shape != want_off)
    raise(fail, "input 'offset' must be [N, offset_group * 2 * kH * kW, oH, oW] = " + shape_str(want_off) + ", got " +
                    off.describe());
  if (mask.given() && mask.shape != want_mask)
    raise(fail, "input 'mask' must be [N, offset_group * kH * kW, oH, oW] = " + shape_str(want_mask) + ", got " +
                    mask.describe());
  g.has_bias = b.given();
  g.has_mask = mask.given();
  return g;
}

}  // namespace onnxgpu::ops
