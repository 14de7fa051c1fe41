// RotaryEmbedding, the rules both kernel sets share: ONNX Runtime's (com.microsoft) and ONNX's (opset
// 23), one computation. Each token (b, s) of each head n rotates the first rotary_dim elements of its
// head by the angles of one row of the caches: with half = rotary_dim / 2 and k < half,
//   not interleaved: (x[k], x[k + half]) -> (x[k] cos[k] - x[k + half] sin[k], x[k + half] cos[k] + x[k] sin[k])
//   interleaved:     (x[2k], x[2k + 1])  -> (x[2k] cos[k] - x[2k + 1] sin[k], x[2k + 1] cos[k] + x[2k] sin[k])
// and copies the rest of the head. The input is [B, S, hidden] (hidden = heads * head_size) or
// [B, heads, S, head_size].
//   com.microsoft  inputs input, position_ids (int64: one value p0, token s reads row p0 + s; or
//                  [B, S]), cos_cache, sin_cache ([max_position, half]); attributes interleaved,
//                  num_heads, rotary_embedding_dim (0: the head size, then given by the caches:
//                  2 * cos_cache.shape[1]), is_packed_batching, scale (read, unused: ONNX Runtime uses
//                  it only to build caches, which it does not do either).
//   ai.onnx (23)   inputs X, cos_cache, sin_cache, position_ids (optional, int64 [B, S]); without
//                  position_ids the caches are [B, S, half] (token (b, s) reads row b * S + s);
//                  attributes interleaved, num_heads (required for a 3-D X), rotary_embedding_dim.
// A position outside the caches is an error (ONNX Runtime's check), on the GPU too (flagged).
// Used by the CPU reference (src/cpu/rotary.cpp) and the GPU kernel (src/webgpu/kernels/rotary.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::ops {

struct RotaryParams {
  enum class Rows { Offset, PerToken, Direct };  // a token's cache row: p0 + s, position_ids[b, s], b * S + s
  Rows rows;
  int64_t batch, seq, heads, head_size, rotary_dim;
  bool heads_first;    // the input is [B, heads, S, head_size]
  bool interleaved;
  int64_t cache_rows;  // the rows the caches hold
  size_t position_input, cos_input, sin_input;  // input indices (position_input: only when rows != Direct)
};

RotaryParams rotary_params(const ir::Node& node, int64_t opset, const std::vector<Operand>& inputs, const Fail& fail);

}  // namespace onnxgpu::ops
