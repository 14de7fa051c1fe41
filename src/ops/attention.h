// The attention ops, the part both kernel sets share: GroupQueryAttention and MultiHeadAttention
// (ONNX Runtime's, com.microsoft) and Attention (ONNX, opset 23), read and checked once; which keys a
// query row sees.
// Used by the CPU reference (src/cpu/attention.cpp) and the GPU kernels
// (src/webgpu/kernels/attention_ops.cpp).
//
// GroupQueryAttention (com.microsoft), as ONNX Runtime's CPU EP computes it:
//   inputs   query [B, S, N*H] (or Q, K and V packed: [B, S, (N + 2 Nkv) * H], key and value omitted),
//            key and value [B, S, Nkv*H], past_key and past_value [B, Nkv, L, H] (optional, BNSH; L is
//            the past's length, or a static buffer's maximum length), seqlens_k int32 [B] (each
//            sequence's total length minus one), total_sequence_length int32 (one value), cos_cache and
//            sin_cache [max_position, rotary_dim / 2] (with do_rotary), position_ids int64 [B, S] (the
//            rotary positions after the prompt; the prompt's are computed, as ONNX Runtime's CPU EP
//            does), attention_bias [B or 1, N or 1, S, total_sequence_length], head_sink [N] (each
//            head's sink logit).
//   outputs  output [B, S, N*H]; present_key and present_value [B, Nkv, P, H], P = max(total, L).
//   attrs    num_heads N, kv_num_heads Nkv (N a multiple of it), scale (0: 1/sqrt(H)), softcap (0: none),
//            local_window_size (-1: none), do_rotary, rotary_interleaved, smooth_softmax.
// Per sequence b, with T = seqlens_k[b] + 1 its total length: the prompt (S == total_sequence_length)
// has no past (past = 0); any later step's past is past = T - S positions of past_key. The present holds
// the past's first `past` positions, then the S new keys (rotated with do_rotary: token s at position
// past + s, a padded prompt row s >= T at position 1), then zeros. Query row s of head n sees the keys of
// KV head n / (N / Nkv) at positions [lo, hi): c = past + s + 1, hi = min(c, T), lo = max(0, c - w)
// with a local window w >= 0 (else 0). Its scores scale * q.k, then softcap * tanh(score / softcap),
// plus attention_bias, softmaxed with an extra logit in the sum (its value 0) with smooth_softmax (0)
// or head_sink (the head's), weight V. A row that sees no key outputs 0.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::ops {

struct GqaParams {
  DType dtype;
  int64_t batch, seq, heads, kv_heads, head_size;
  bool packed;          // query holds Q, K and V
  bool has_past;
  int64_t past_len;     // L: past_key's sequence length (0 without a past)
  int64_t total;        // total_sequence_length
  int64_t present_len;  // P = max(total, L)
  bool first_prompt;    // S == total: no past is read
  float scale;          // as applied (1/sqrt(H) when the attribute is 0)
  float softcap;        // 0: none
  int64_t window;       // local_window_size, -1: none
  bool smooth;          // smooth_softmax
  bool rotary, interleaved;
  int64_t rotary_dim;   // 2 * cos_cache.shape[1] with do_rotary
  int64_t cache_rows;   // cos_cache.shape[0]
  bool attention_bias;  // input 10
  Shape attention_bias_shape;
  bool head_sink;       // input 11
  bool position_ids;    // rotary positions from input 9 (given, with do_rotary, after the prompt)
  int64_t group() const { return heads / kv_heads; }
  int64_t q_hidden() const { return heads * head_size; }
  int64_t kv_hidden() const { return kv_heads * head_size; }
  // The row length of the tensor that holds Q (and K, V when packed): query's last dim.
  int64_t query_row() const { return packed ? (heads + 2 * kv_heads) * head_size : q_hidden(); }
};

// Checks the node and its inputs (`total` is total_sequence_length's value) and gives the parameters.
// total kGqaTotalAtRunTime: its value is computed on the GPU (ONNX Runtime's model builder derives it from
// the attention mask there for graph capture), so only a run knows it. Then the present is the past's
// buffer (P = L: a static KV buffer, which ONNX Runtime's WebGPU EP requires under graph capture too), or
// without a past the prompt's S positions; whether a run is the prompt (S == total), and that total fits
// (at most P; S without a past), are the GPU's to decide and check (first_prompt false, total -1 here).
constexpr int64_t kGqaTotalAtRunTime = -1;
GqaParams gqa_params(const ir::Node& node, const std::vector<Operand>& inputs, int64_t total, const Fail& fail);

// The positions of one sequence: its past length and its total length T (seqlens_k + 1), checked
// against the tensors (a prompt's T at most S; a later step's past within past_key and T within the
// present). `seqlens` is seqlens_k[b].
struct GqaSequence {
  int64_t past, total;
};
GqaSequence gqa_sequence(const GqaParams& p, int64_t b, int64_t seqlens, const Fail& fail);

// The keys query row s of a sequence sees: [lo, hi) (empty when lo >= hi).
struct KeyRange {
  int64_t lo, hi;
};
inline KeyRange gqa_keys(const GqaParams& p, const GqaSequence& q, int64_t s) {
  int64_t c = q.past + s + 1, hi = c < q.total ? c : q.total, lo = 0;
  if (p.window >= 0 && c - p.window > 0) lo = c - p.window;
  return {lo, hi};
}

// The rotary position of token s of a sequence, when position_ids does not give it (see
// GqaParams::position_ids).
inline int64_t gqa_position(const GqaParams& p, const GqaSequence& q, int64_t s) {
  return p.first_prompt && s >= q.total ? 1 : q.past + s;
}

// MultiHeadAttention (com.microsoft), as ONNX Runtime's CPU EP computes it:
//   inputs   query [B, S, D]; key [B, L, D] and value [B, L, Dv] (3-D, with past and bias), or BNSH
//            [B, N, L, H] and [B, N, L, Hv] (the keys as they are: no past, no bias); bias [2 D + Dv]
//            (optional: Q, K and V biases); key_padding_mask int32 [B] (each sequence's key count) or
//            [B, T] (0: masked); attention_bias [B or 1, N or 1, S, T]; past_key [B, N, P, H] and
//            past_value [B, N, P, Hv] (optional). T = P + L.
//   outputs  output [B, S, Dv]; present_key [B, N, T, H] and present_value [B, N, T, Hv] (the past, then
//            the new keys and values).
//   attrs    num_heads N, scale (0: 1/sqrt(H)), mask_filter_value (-10000), unidirectional.
// Row s of head n: scores scale * q.k over all T keys, plus mask_filter_value where the key padding
// mask masks the key, plus mask_filter_value for keys after P + s with unidirectional (which needs as
// many queries as new keys: S == L), plus attention_bias; softmaxed, weight V.
struct MhaParams {
  DType dtype;
  int64_t batch, seq, heads, head_size, v_head_size, kv_seq, past_len, total;  // B, S, N, H, Hv, L, P, T
  bool bnsh_kv;      // key and value given as [B, N, L, H]
  bool bias, past;
  enum class Mask { None, Lengths, Keys } mask;  // key_padding_mask [B] or [B, T]
  bool attention_bias;
  Shape attention_bias_shape;  // as given, 4-D
  float scale, mask_filter_value;
  bool causal;
  int64_t hidden() const { return heads * head_size; }
  int64_t v_hidden() const { return heads * v_head_size; }
};
MhaParams mha_params(const ir::Node& node, const std::vector<Operand>& inputs, const Fail& fail);

// Attention (ONNX, opset 23; nonpad_kv_seqlen from opset 24):
//   inputs   Q [B, Nq, S, H] or [B, S, Nq * H] (3-D: q_num_heads and kv_num_heads given); K [B, Nkv, L, H]
//            or [B, L, Nkv * H]; V [B, Nkv, L, Hv] or [B, L, Nkv * Hv]; attn_mask (bool: true attends;
//            or Q's type: added) broadcast to [B, Nq, S, T] over its last dim's M <= T keys (the rest
//            masked); past_key [B, Nkv, P, H], past_value [B, Nkv, P, Hv]; nonpad_kv_seqlen int64 [B]
//            (each sequence's valid keys). T = P + L; Nq a multiple of Nkv (head n reads KV head
//            n / (Nq / Nkv)).
//   outputs  Y (Q's layout, head size Hv); present_key, present_value (past then new: [B, Nkv, T, ..]);
//            qk_matmul_output [B, Nq, S, T] (qk_matmul_output_mode 0: the scaled products, softcapped;
//            1: plus the mask; 2: the same as 1; 3: the softmax).
//   attrs    scale (default 1/sqrt(H)), softcap (0: none), is_causal, q_num_heads, kv_num_heads,
//            qk_matmul_output_mode, softmax_precision (the softmax is computed in float32 or wider),
//            left_window_size and right_window_size (opset 25; -1: unbounded).
// Row s of head n, at position c = s + offset (offset P, or nonpad_kv_seqlen[b] - S without a past, else
// 0): scores softcap(scale q.k), plus the float mask, -inf where a bool mask is false, past the mask's
// width, after key c with is_causal, before key c - left_window_size and after key c +
// right_window_size, and from key nonpad_kv_seqlen[b] on; softmaxed (a row with every key masked
// gives 0), weight V.
struct OnnxAttentionParams {
  DType dtype;
  bool three_d;
  int64_t batch, q_heads, kv_heads, seq, kv_seq, head_size, v_head_size, past_len, total;  // B, Nq, Nkv, S, L, H, Hv, P, T
  enum class Mask { None, Bool, Float } mask;
  Shape mask_shape;    // as given
  int64_t mask_keys;   // its last dim M (the keys it covers)
  bool past, nonpad, causal;
  int64_t left_window, right_window;  // -1: none
  float scale, softcap;
  int64_t qk_mode;
  bool qk_output;      // output 3 wanted
  int64_t group() const { return q_heads / kv_heads; }
};
OnnxAttentionParams onnx_attention_params(const ir::Node& node, int64_t opset, const std::vector<Operand>& inputs,
                                          const Fail& fail);

}  // namespace onnxgpu::ops
