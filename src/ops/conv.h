// ONNX Conv and ConvTranspose, the attribute logic both kernel sets share: group, kernel_shape, and
// ConvTranspose's spatial geometry (strides, dilations, output_padding, pads / auto_pad / output_shape)
// resolved into the leading pad of each dim and the output's spatial shape. (Conv's window is
// ops::make_window, shared with the pools.) Used by the CPU reference (src/cpu/conv.cpp) and the
// GPU kernel (src/webgpu/kernels/conv.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::ops {

// Conv / ConvTranspose: X float16, float32 or float64, W of X's type, B (optional) 1-D of X's type.
void check_conv_inputs(const Operand& x, const Operand& w, const Operand& b, const Fail& fail);
// ConvInteger: X and W int8 or uint8, x_zero_point a scalar of X's type, w_zero_point a scalar or one
// value per output channel of W's type.
void check_conv_integer_inputs(const Operand& x, const Operand& w, const Operand& x_zero, const Operand& w_zero,
                               const Fail& fail);

// QLinearConv's inputs, in the node's order: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B (optional).
enum QLinearConvInput : size_t { kQx, kQxScale, kQxZero, kQw, kQwScale, kQwZero, kQyScale, kQyZero, kQBias };
// QLinearConv: x and w int8 or uint8 with zero points as ConvInteger's (omitted: 0); x_scale and y_scale
// float scalars, w_scale a float scalar or one per output channel; y_zero_point an int8 or uint8 scalar,
// which gives y its type (returned); B (optional) int32, one per output channel.
//   y = saturate(round_half_to_even((sum (x - x_zero_point)(w - w_zero_point) + B) * f) + y_zero_point)
// where f = x_scale * w_scale / y_scale is computed in float32, as ONNX's reference and ONNX Runtime do
// (the rounding and saturation: ops::requantize, ops/qlinear.h).
DType check_qlinear_conv_inputs(const std::vector<Operand>& in, const Fail& fail);

// Attribute 'group' (> 0).
int64_t conv_group(const ir::Node& node, const Fail& fail);
// Attribute 'kernel_shape', when given, must be the weights' spatial dims.
void check_kernel_shape(const ir::Node& node, const Shape& from_weights, const Fail& fail);
// Conv's X [N, C, D...] and W [M, C / group, k...]: ranks >= 3 and equal, C = W[1] * group, M divisible
// by group, and the bias, when given (`bias_size` >= 0), of M values.
void check_conv_shapes(const Shape& x, const Shape& w, int64_t group, int64_t bias_size, const Fail& fail);
// ConvTranspose's X [N, C, D...] and W [C, M / group, k...]: ranks >= 3 and equal, C divisible by group,
// and the bias, when given (`bias_size` >= 0), of M values.
void check_conv_transpose_shapes(const Shape& x, const Shape& w, int64_t group, int64_t bias_size, const Fail& fail);

struct ConvTransposeGeometry {
  std::vector<int64_t> strides, dilations;
  std::vector<int64_t> pad_begin;  // per spatial dim: output position q receives x[i] * w[k] where
                                   // i * stride + k * dilation - pad_begin = q
  Shape out;                       // the output's spatial dims
};

// `in` and `kernel`: the spatial dims of X and W.
ConvTransposeGeometry conv_transpose_geometry(const ir::Node& node, const Shape& in, const Shape& kernel,
                                              const Fail& fail);

// Col2Im (opset 18): input [N, C * prod(block_shape), L] holds the sliding blocks of an image
// [N, C, image_shape...] (pads begin..., end...; strides; dilations), L = prod(blocks) where blocks[d] =
// (image[d] + pads - dilation[d] * (block[d] - 1) - 1) / stride[d] + 1. Output pixel x sums, for every
// block offset j with q = x + pad_begin - j * dilation a multiple of the stride and l = q / stride inside
// blocks, the input element [n, c * prod(block) + flat(j), flat(l)].
struct Col2ImGeometry {
  Shape image, block, blocks;
  std::vector<int64_t> strides, dilations, pad_begin;
  int64_t channels = 0;
  Shape out;
};
Col2ImGeometry col2im_geometry(const ir::Node& node, const Shape& input, const std::vector<int64_t>& image_shape,
                               const std::vector<int64_t>& block_shape, const Fail& fail);

// DeformConv (opset 19; bfloat16 from 22), 2-D: inputs X [N, C, H, W], W [M, C / group, kH, kW], offset
// [N, offset_group * 2 * kH * kW, oH, oW], B [M] (optional), mask [N, offset_group * kH * kW, oH, oW]
// (optional), all of one float type. Output position (oh, ow) of output channel m sums, over the input
// channels c of m's group and the kernel taps (i, j), W[m, c, i, j] * mask * X[n, c] sampled bilinearly at
//   h = oh * stride_h - pad_top + i * dilation_h + dh,  w = ow * stride_w - pad_left + j * dilation_w + dw
// where (dh, dw) are offset channels 2 * t and 2 * t + 1 of offset group g = c / (C / offset_group) and the
// mask channel is t, t = g * kH * kW + i * kW + j (ONNX's reference: GridSample, bilinear, zeros padding,
// align_corners). A tap's four neighbours outside the image read 0; a coordinate that is NaN reads 0.
struct DeformConvGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0, M = 0, kh = 0, kw = 0, oh = 0, ow = 0, group = 1, offset_group = 1;
  int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, pad_top = 0, pad_left = 0;
  bool has_bias = false, has_mask = false;
  Shape out() const { return {N, M, oh, ow}; }
};
// Inputs in the node's order (X, W, offset, B, mask); the checks name the input at fault.
DeformConvGeometry deform_conv_geometry(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail);

}  // namespace onnxgpu::ops
