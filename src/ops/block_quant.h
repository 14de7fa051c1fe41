// Block-quantized weights (ONNX Runtime's com.microsoft ops), the rules both kernel sets share.
//
// MatMulNBits: Y = A @ dequantize(B)^T (+ bias), A [..., K] float, Y [..., N] of A's type. B holds N rows
// of K quantized values, `bits` each (2, 4 or 8), in blocks of `block_size` along K (a power of two,
// at least 16): B is uint8 [N, k_blocks, blob_size], k_blocks = ceil(K / block_size), blob_size =
// block_size * bits / 8 bytes, the values packed low bits first. A block's values dequantize as
// (q - zero_point) * scale with its row's scale and zero point:
//   scales       [N, k_blocks] (or [N * k_blocks]), A's type;
//   zero_points  optional: uint8 packed like B, `bits` each, [N, ceil(k_blocks * bits / 8)] (or flat),
//                or A's type [N, k_blocks] (or flat); absent: 2^(bits - 1);
//   g_idx        (deprecated, input 4): not supported, an error;
//   bias         optional [N], A's type.
// The values of the last block past K (K not a multiple of block_size) are padding, never used.
// Attributes K, N, bits (default 4), block_size (required), accuracy_level (how ONNX Runtime may
// lower A's precision internally: the engine always computes in float32, read and ignored).
//
// GatherBlockQuantized: Gather along gather_axis of `data` quantized in blocks of block_size along
// quantize_axis; output = (q - zero_point) * scale of the element's block, of the scales' type.
// `data` is uint8 (the engine has no int4 / uint4 types): then gather_axis is 0 and quantize_axis the
// last axis, whose bytes pack 8 / bits values each (bits 2, 4 or 8, low bits first): the output's last
// dim is the data's times 8 / bits. scales has data's rank with ceil(values / block_size) along the
// quantize axis; zero_points (optional, uint8) is packed like data along that axis (absent:
// 2^(bits - 1)). Indices int32 or int64, negative ones counting from the end; one outside
// [-dim, dim) is an error (ONNX Runtime's).
//
// Used by the CPU reference (src/cpu/block_quant.cpp) and the GPU kernels
// (src/webgpu/kernels/block_quant.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::ops {

struct MatMulNBitsParams {
  enum class ZeroPoints { Default, Packed, Float };
  enum : size_t { kA = 0, kB = 1, kScales = 2, kZeroPoints = 3, kGIdx = 4, kBias = 5 };
  int64_t K = 0, N = 0, bits = 4, block_size = 0;
  int64_t k_blocks = 0, blob_size = 0;  // blocks per row of B, bytes per block
  int64_t M = 0;                        // rows of A: the product of its leading dims
  Shape out;                            // A's shape with N for K
  ZeroPoints zero_points = ZeroPoints::Default;
  int64_t zp_row_bytes = 0;             // Packed: bytes per row of zero points, ceil(k_blocks * bits / 8)
  bool bias = false;
  int64_t default_zero_point() const { return int64_t(1) << (bits - 1); }
  int64_t values_per_byte() const { return 8 / bits; }
};

MatMulNBitsParams matmul_nbits_params(const ir::Node& node, const std::vector<Operand>& inputs, const Fail& fail);

struct GatherBlockQuantizedParams {
  enum : size_t { kData = 0, kIndices = 1, kScales = 2, kZeroPoints = 3 };
  int64_t bits = 4, block_size = 0;
  int64_t rows = 0;         // data's gather axis (axis 0): the indices' range
  int64_t row_values = 0;   // values per gathered row: the product of the other dims, the last in values
  int64_t last_values = 0;  // values along the quantize (last) axis
  int64_t blocks = 0;       // blocks along it: ceil(last_values / block_size)
  int64_t zp_bytes = 0;     // bytes of zero points per run of `blocks`: ceil(blocks * bits / 8)
  int64_t indices = 0;      // number of indices
  bool zero_points = false;
  Shape out;                // indices' shape, then data's dims after axis 0 (the last in values)
  int64_t default_zero_point() const { return int64_t(1) << (bits - 1); }
  int64_t values_per_byte() const { return 8 / bits; }
};

GatherBlockQuantizedParams gather_block_quantized_params(const ir::Node& node, const std::vector<Operand>& inputs,
                                                         const Fail& fail);

}  // namespace onnxgpu::ops
