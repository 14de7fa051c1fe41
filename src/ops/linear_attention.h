// LinearAttention and CausalConvWithState (ONNX, opset 25 on: the recurrent layers of Gated DeltaNet /
// Mamba-style models), the rules both kernel sets share: which inputs each form takes, their shapes, the
// attributes. Used by the CPU reference (src/cpu/linear_attention.cpp) and the GPU kernels
// (src/webgpu/kernels/linear_attention.cpp).
//
// CausalConvWithState: a depthwise 1-D convolution that sees only the past. input [B, C, L], weight
// [C, 1, K], bias [C] (optional), past_state [B, C, K - 1] (optional: zeros), activation "none", "silu" or
// "swish" (the same). The input is prefixed by the past state; output[b, c, t] = bias[c] +
// sum_k weight[c, 0, k] * padded[b, c, t + k], then x * sigmoid(x) under silu; present_state: the last
// K - 1 positions of the padded input.
//
// LinearAttention: per head, a state S [d_k, d_v] updated token after token and read by the query:
//   gated rules:  S = exp(decay_t) * S           (decay per key dimension, or one per head)
//   delta rules:  v_t = beta_t * (v_t - S^T (erase_t * k_t))   (erase_gate optional, else k_t)
//   every rule:   S = S + k_t v_t^T;  o_t = scale * S^T q_t
// update_rule: "linear", "gated", "delta" or "gated_delta" (the default), which decides which of decay and
// beta must be given (and no other). query [B, T, Hq d_k], key [B, T, Hkv d_k], value [B, T, Hkv d_v],
// past_state [B, Hkv, d_k, d_v] (optional: zeros), decay [B, T, Hkv] or [B, T, Hkv d_k], beta [B, T, Hkv]
// or [B, T, 1], erase_gate [B, T, Hkv d_k]. Query head h reads key/value head h / (Hq / Hkv). scale 0 or
// absent: 1 / sqrt(d_k). chunk_size is a hint without effect on the result. Outputs: output
// [B, T, Hq d_v] in the query's type, present_state in past_state's type (else the query's).
// Every column of a head's state (one value dimension) evolves on its own: the GPU kernel's parallelism.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::ops {

struct CausalConvParams {
  int64_t batch, channels, length, taps;  // input [batch, channels, length], weight [channels, 1, taps]
  bool has_bias, has_past;
  bool silu;                              // activation silu / swish (else none)
  DType dtype;                            // the input's (and both outputs')
};
CausalConvParams causal_conv_params(const ir::Node& node, const std::vector<Operand>& inputs, const Fail& fail);

// LinearAttention's input indices.
enum LinearAttentionInput : size_t { kLaQuery, kLaKey, kLaValue, kLaPast, kLaDecay, kLaBeta, kLaErase };

struct LinearAttentionParams {
  int64_t batch, tokens, q_heads, kv_heads, dk, dv;
  bool gated, delta;       // the update rule's two parts
  int64_t decay_size;      // decay's values per head and token: 1 or d_k (gated only)
  int64_t beta_heads;      // beta's last axis: kv_heads or 1 (delta only)
  bool has_erase, has_past;
  double scale;
  DType out_dtype, state_dtype;  // output's (the query's) and present_state's (past_state's, else the query's)
  int64_t group() const { return q_heads / kv_heads; }
};
LinearAttentionParams linear_attention_params(const ir::Node& node, const std::vector<Operand>& inputs, const Fail& fail);

}  // namespace onnxgpu::ops
