#include "ops/block_quant.h"

#include <string>

namespace onnxgpu::ops {

namespace {

const DTypeSet kDequantizedTypes{DType::Float32, DType::Float16, DType::BFloat16};

std::string named(const char* what, const Operand& o) { return std::string(what) + " " + o.describe(); }
std::string num(int64_t v) { return std::to_string(v); }
bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// `o` has shape `want`, or (old models) the same elements in one dim.
bool shape_or_flat(const Operand& o, const Shape& want) {
  return o.shape == want || o.shape == Shape{shape_numel(want)};
}

void check_bits(int64_t bits, const Fail& fail) {
  if (bits != 2 && bits != 4 && bits != 8) raise(fail, "bits " + num(bits) + " is not supported: expected 2, 4 or 8");
}

void check_block_size(int64_t block_size, const Fail& fail) {
  if (block_size < 16 || !power_of_two(block_size))
    raise(fail, "block_size " + num(block_size) + " must be a power of 2 and at least 16");
}

}  // namespace

MatMulNBitsParams matmul_nbits_params(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail) {
  using P = MatMulNBitsParams;
  if (in.size() < 3 || in.size() > 6)
    raise(fail, "takes 3 to 6 inputs (A, B, scales, zero_points, g_idx, bias), got " + num(int64_t(in.size())));
  if (node.outputs.size() != 1) raise(fail, "has one output (Y), the node has " + num(int64_t(node.outputs.size())));
  for (size_t i : {P::kA, P::kB, P::kScales})
    if (!in[i].given()) raise(fail, "input " + num(int64_t(i)) + " is required");
  for (const char* attr : {"K", "N", "block_size"})
    if (!node.has_attr(attr)) raise(fail, std::string("attribute '") + attr + "' is required");
  P p;
  p.K = node.attr_int("K", 0);
  p.N = node.attr_int("N", 0);
  p.bits = node.attr_int("bits", 4);
  p.block_size = node.attr_int("block_size", 0);
  if (node.attr_int("weight_prepacked", 0) != 0)
    raise(fail, "weight_prepacked " + num(node.attr_int("weight_prepacked", 0)) +
                    " (B in a CUDA layout) is not supported: B must be in the standard layout (weight_prepacked 0)");
  if (p.K <= 0 || p.N <= 0) raise(fail, "K " + num(p.K) + " and N " + num(p.N) + " must be positive");
  check_bits(p.bits, fail);
  check_block_size(p.block_size, fail);
  p.k_blocks = (p.K + p.block_size - 1) / p.block_size;
  p.blob_size = p.block_size * p.bits / 8;

  const Operand &a = in[P::kA], &b = in[P::kB], &scales = in[P::kScales];
  if (!kDequantizedTypes.has(a.dtype)) raise(fail, named("A", a) + " must be float32, float16 or bfloat16");
  if (a.shape.empty() || a.shape.back() != p.K)
    raise(fail, named("A", a) + " must have K = " + num(p.K) + " as its last dim");
  const Shape b_shape{p.N, p.k_blocks, p.blob_size};
  if (b.dtype != DType::UInt8 || b.shape != b_shape)
    raise(fail, named("B", b) + " must be uint8 " + shape_str(b_shape) + " ([N, ceil(K / block_size), block_size * bits / 8])");
  const Shape per_block{p.N, p.k_blocks};
  if (scales.dtype != a.dtype || !shape_or_flat(scales, per_block))
    raise(fail, named("scales", scales) + " must be " + std::string(dtype_name(a.dtype)) + " " + shape_str(per_block) +
                    " ([N, blocks], A's type)");
  if (in.size() > P::kZeroPoints && in[P::kZeroPoints].given()) {
    const Operand& zp = in[P::kZeroPoints];
    if (zp.dtype == DType::UInt8) {
      p.zero_points = P::ZeroPoints::Packed;
      p.zp_row_bytes = (p.k_blocks * p.bits + 7) / 8;
      const Shape want{p.N, p.zp_row_bytes};
      if (!shape_or_flat(zp, want))
        raise(fail, named("zero_points", zp) + " must be uint8 " + shape_str(want) + " (packed " + num(p.bits) +
                        "-bit values, [N, ceil(blocks * bits / 8)]) or " + std::string(dtype_name(a.dtype)) + " " +
                        shape_str(per_block));
    } else if (zp.dtype == a.dtype) {
      p.zero_points = P::ZeroPoints::Float;
      if (!shape_or_flat(zp, per_block))
        raise(fail, named("zero_points", zp) + " must be " + std::string(dtype_name(a.dtype)) + " " + shape_str(per_block) +
                        " ([N, blocks])");
    } else {
      raise(fail, named("zero_points", zp) + " must be uint8 (packed) or A's type " + std::string(dtype_name(a.dtype)));
    }
  }
  if (in.size() > P::kGIdx && in[P::kGIdx].given())
    raise(fail, "input 4 (g_idx, deprecated) is not supported: quantize the weights without act-order");
  if (in.size() > P::kBias && in[P::kBias].given()) {
    const Operand& bias = in[P::kBias];
    if (bias.dtype != a.dtype || bias.shape != Shape{p.N})
      raise(fail, named("bias", bias) + " must be " + std::string(dtype_name(a.dtype)) + " [" + num(p.N) + "]");
    p.bias = true;
  }
  p.M = shape_numel(a.shape) / p.K;
  p.out = a.shape;
  p.out.back() = p.N;
  return p;
}

GatherBlockQuantizedParams gather_block_quantized_params(const ir::Node& node, const std::vector<Operand>& in,
                                                         const Fail& fail) {
  using P = GatherBlockQuantizedParams;
  if (in.size() < 3 || in.size() > 4)
    raise(fail, "takes 3 or 4 inputs (data, indices, scales, zero_points), got " + num(int64_t(in.size())));
  if (node.outputs.size() != 1) raise(fail, "has one output, the node has " + num(int64_t(node.outputs.size())));
  for (size_t i : {P::kData, P::kIndices, P::kScales})
    if (!in[i].given()) raise(fail, "input " + num(int64_t(i)) + " is required");
  const Operand &data = in[P::kData], &indices = in[P::kIndices], &scales = in[P::kScales];
  if (data.dtype != DType::UInt8)
    raise(fail, named("data", data) + " must be uint8 (packed " + num(node.attr_int("bits", 4)) +
                    "-bit values; int4, uint4 and float8 data are not supported)");
  const int64_t r = int64_t(data.shape.size());
  if (r < 2) raise(fail, named("data", data) + " must have rank 2 or more (uint8 data: gather axis 0, quantize axis last)");
  P p;
  p.bits = node.attr_int("bits", 4);
  p.block_size = node.attr_int("block_size", 128);
  check_bits(p.bits, fail);
  check_block_size(p.block_size, fail);
  int64_t gather_axis = node.attr_int("gather_axis", 0), quantize_axis = node.attr_int("quantize_axis", 1);
  if (gather_axis < -r || gather_axis >= r || quantize_axis < -r || quantize_axis >= r)
    raise(fail, "gather_axis " + num(gather_axis) + " and quantize_axis " + num(quantize_axis) + " must be in [" +
                    num(-r) + ", " + num(r - 1) + "]");
  if (gather_axis < 0) gather_axis += r;
  if (quantize_axis < 0) quantize_axis += r;
  if (gather_axis != 0 || quantize_axis != r - 1)
    raise(fail, "uint8 data takes gather_axis 0 and quantize_axis " + num(r - 1) + " (the last), got " +
                    num(gather_axis) + " and " + num(quantize_axis));
  if (indices.dtype != DType::Int32 && indices.dtype != DType::Int64)
    raise(fail, named("indices", indices) + " must be int32 or int64");
  if (!kDequantizedTypes.has(scales.dtype)) raise(fail, named("scales", scales) + " must be float32, float16 or bfloat16");

  p.rows = data.shape[0];
  p.last_values = data.shape.back() * p.values_per_byte();
  p.blocks = (p.last_values + p.block_size - 1) / p.block_size;
  p.zp_bytes = (p.blocks * p.bits + 7) / 8;
  p.row_values = shape_numel(Shape(data.shape.begin() + 1, data.shape.end())) * p.values_per_byte();
  p.indices = shape_numel(indices.shape);
  Shape want_scales = data.shape;
  want_scales.back() = p.blocks;
  if (scales.shape != want_scales)
    raise(fail, named("scales", scales) + " must be " + shape_str(want_scales) + " (data's shape with ceil(" +
                    num(p.last_values) + " / block_size " + num(p.block_size) + ") blocks along the last axis)");
  if (in.size() > P::kZeroPoints && in[P::kZeroPoints].given()) {
    const Operand& zp = in[P::kZeroPoints];
    Shape want = data.shape;
    want.back() = p.zp_bytes;
    if (zp.dtype != DType::UInt8 || zp.shape != want)
      raise(fail, named("zero_points", zp) + " must be uint8 " + shape_str(want) + " (the blocks' " + num(p.bits) +
                      "-bit zero points packed like data)");
    p.zero_points = true;
  }
  p.out = indices.shape;
  p.out.insert(p.out.end(), data.shape.begin() + 1, data.shape.end());
  p.out.back() = p.last_values;
  return p;
}

}  // namespace onnxgpu::ops
