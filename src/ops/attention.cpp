#include "ops/attention.h"

#include <cmath>

namespace onnxgpu::ops {

namespace {

const DTypeSet kAttentionTypes{DType::Float16, DType::Float32, DType::BFloat16};

std::string named(const char* what, const Operand& o) { return std::string(what) + " " + o.describe(); }

}  // namespace

GqaParams gqa_params(const ir::Node& node, const std::vector<Operand>& in, int64_t total, const Fail& fail) {
  auto given = [&](size_t i) { return i < in.size() && in[i].given(); };
  if (in.size() < 7)
    raise(fail, "takes at least 7 inputs (query, key, value, past_key, past_value, seqlens_k, "
                "total_sequence_length), got " + std::to_string(in.size()));
  if (in.size() > 12) raise(fail, "takes at most 12 inputs, got " + std::to_string(in.size()));
  if (node.outputs.size() > 3)
    raise(fail, "has at most 3 outputs (output, present_key, present_value), the node has " +
                    std::to_string(node.outputs.size()));
  for (size_t i : {0, 5, 6})
    if (!given(i)) raise(fail, "input " + std::to_string(i) + " is required");
  GqaParams p;
  p.heads = node.attr_int("num_heads", 0);
  p.kv_heads = node.attr_int("kv_num_heads", 0);
  if (p.heads <= 0 || p.kv_heads <= 0)
    raise(fail, "num_heads (" + std::to_string(p.heads) + ") and kv_num_heads (" + std::to_string(p.kv_heads) +
                    ") must be given and positive");
  if (p.heads % p.kv_heads != 0)
    raise(fail, "num_heads " + std::to_string(p.heads) + " must be a multiple of kv_num_heads " +
                    std::to_string(p.kv_heads));

  const Operand& q = in[0];
  p.dtype = q.dtype;
  if (!kAttentionTypes.has(q.dtype)) raise(fail, named("query", q) + " must be float32, float16 or bfloat16");
  if (q.shape.size() != 3) raise(fail, named("query", q) + " must be [batch, sequence, hidden]");
  p.batch = q.shape[0];
  p.seq = q.shape[1];
  p.packed = !given(1);
  if (p.packed != !given(2)) raise(fail, "key and value must be both given or both omitted (Q, K and V packed in query)");
  const int64_t heads_in_query = p.packed ? p.heads + 2 * p.kv_heads : p.heads;
  if (q.shape[2] % heads_in_query != 0 || q.shape[2] == 0)
    raise(fail, named("query", q) + ": hidden size " + std::to_string(q.shape[2]) + " is not " +
                    std::to_string(heads_in_query) + (p.packed ? " heads (num_heads + 2 kv_num_heads, packed)" : " heads"));
  p.head_size = q.shape[2] / heads_in_query;
  if (!p.packed) {
    const Shape want{p.batch, p.seq, p.kv_hidden()};
    for (size_t i : {1, 2}) {
      const char* name = i == 1 ? "key" : "value";
      if (in[i].dtype != q.dtype) raise(fail, named(name, in[i]) + " must be of query's type");
      if (in[i].shape != want)
        raise(fail, named(name, in[i]) + " must be [batch, sequence, kv_num_heads * head_size] = " + shape_str(want));
    }
  }

  p.has_past = given(3) || given(4);
  p.past_len = 0;
  if (p.has_past) {
    if (!given(3) || !given(4)) raise(fail, "past_key and past_value must be both given or both omitted");
    for (size_t i : {3, 4}) {
      const char* name = i == 3 ? "past_key" : "past_value";
      const Operand& x = in[i];
      if (x.dtype != q.dtype) raise(fail, named(name, x) + " must be of query's type");
      if (x.shape.size() != 4 || x.shape[0] != p.batch || x.shape[1] != p.kv_heads || x.shape[3] != p.head_size)
        raise(fail, named(name, x) + " must be [batch, kv_num_heads, length, head_size] = [" + std::to_string(p.batch) +
                        "," + std::to_string(p.kv_heads) + ",length," + std::to_string(p.head_size) + "]");
    }
    if (in[3].shape[2] != in[4].shape[2])
      raise(fail, "past_key " + in[3].describe() + " and past_value " + in[4].describe() + " must have one length");
    p.past_len = in[3].shape[2];
  }

  const Operand& sl = in[5];
  if (sl.dtype != DType::Int32 || sl.shape != Shape{p.batch})
    raise(fail, named("seqlens_k", sl) + " must be int32 [batch] = [" + std::to_string(p.batch) + "]");
  const Operand& ts = in[6];
  if (ts.dtype != DType::Int32 || shape_numel(ts.shape) != 1 || ts.shape.size() > 1)
    raise(fail, named("total_sequence_length", ts) + " must be an int32 scalar or [1]");
  p.total = total;
  const bool at_run_time = total == kGqaTotalAtRunTime;
  if (total < 1 && !at_run_time) raise(fail, "total_sequence_length " + std::to_string(total) + " must be positive");
  p.present_len = at_run_time ? (p.has_past ? p.past_len : p.seq) : std::max(total, p.past_len);
  p.first_prompt = at_run_time ? !p.has_past : p.seq == total;
  if (!p.first_prompt && !at_run_time) {
    if (p.seq > total)
      raise(fail, "the sequence length " + std::to_string(p.seq) + " exceeds total_sequence_length " + std::to_string(total));
    if (p.seq > 1 && p.batch != 1)
      raise(fail, "a step of " + std::to_string(p.seq) + " tokens after the prompt (sequence length != " +
                      "total_sequence_length " + std::to_string(total) + ") needs batch 1, got " + std::to_string(p.batch));
    if (!p.has_past)
      raise(fail, "a step after the prompt (sequence length " + std::to_string(p.seq) + " != total_sequence_length " +
                      std::to_string(total) + ") needs past_key and past_value");
  }

  const float scale = node.attr_float("scale", 0.0f);
  p.scale = scale != 0.0f ? scale : 1.0f / std::sqrt(float(p.head_size));
  p.softcap = node.attr_float("softcap", 0.0f);
  if (p.softcap < 0) raise(fail, "softcap " + std::to_string(p.softcap) + " must be >= 0");
  p.window = node.attr_int("local_window_size", -1);
  if (p.window < -1) raise(fail, "local_window_size " + std::to_string(p.window) + " must be -1 (none) or >= 0");
  p.smooth = node.attr_int("smooth_softmax", 0) != 0;
  p.rotary = node.attr_int("do_rotary", 0) != 0;
  p.interleaved = node.attr_int("rotary_interleaved", 0) != 0;
  p.rotary_dim = 0;
  p.cache_rows = 0;
  const bool caches = given(7) || given(8);
  if (caches && (!given(7) || !given(8))) raise(fail, "cos_cache and sin_cache must be both given or both omitted");
  if (p.rotary && !caches) raise(fail, "do_rotary needs cos_cache and sin_cache");
  if (caches) {
    const Operand &c = in[7], &s = in[8];
    for (const Operand* x : {&c, &s}) {
      const char* name = x == &c ? "cos_cache" : "sin_cache";
      if (x->dtype != q.dtype) raise(fail, named(name, *x) + " must be of query's type");
      if (x->shape.size() != 2 || x->shape[1] == 0 || 2 * x->shape[1] > p.head_size)
        raise(fail, named(name, *x) + " must be [max_position, rotary_dim / 2] with rotary_dim at most the head size " +
                        std::to_string(p.head_size));
    }
    if (c.shape != s.shape) raise(fail, "cos_cache " + c.describe() + " and sin_cache " + s.describe() + " must have one shape");
    if (!at_run_time && c.shape[0] < total)
      raise(fail, named("cos_cache", c) + " holds fewer positions than total_sequence_length " + std::to_string(total));
    if (p.rotary) {
      p.rotary_dim = 2 * c.shape[1];
      p.cache_rows = c.shape[0];
    }
  }
  if (given(9) && (in[9].dtype != DType::Int64 || in[9].shape != Shape{p.batch, p.seq}))
    raise(fail, named("position_ids", in[9]) + " must be int64 [batch, sequence] = " + shape_str(Shape{p.batch, p.seq}));
  p.position_ids = given(9) && p.rotary && !p.first_prompt;
  p.attention_bias = given(10);
  if (p.attention_bias) {
    const Operand& b = in[10];
    if (b.dtype != q.dtype || b.shape.size() != 4 || (b.shape[0] != 1 && b.shape[0] != p.batch) ||
        (b.shape[1] != 1 && b.shape[1] != p.heads) || b.shape[2] != p.seq || b.shape[3] != total)
      raise(fail, named("attention_bias", b) + " must be of query's type and [batch or 1, num_heads or 1, sequence, " +
                      "total_sequence_length] = [" + std::to_string(p.batch) + " or 1," + std::to_string(p.heads) +
                      " or 1," + std::to_string(p.seq) + "," + std::to_string(total) + "]");
    p.attention_bias_shape = b.shape;
  }
  p.head_sink = given(11);
  if (p.head_sink && (in[11].dtype != q.dtype || in[11].shape != Shape{p.heads}))
    raise(fail, named("head_sink", in[11]) + " must be of query's type and [num_heads] = [" + std::to_string(p.heads) + "]");
  return p;
}

GqaSequence gqa_sequence(const GqaParams& p, int64_t b, int64_t seqlens, const Fail& fail) {
  const int64_t t = seqlens + 1;
  GqaSequence q{p.first_prompt ? 0 : t - p.seq, t};
  auto bad = [&](const std::string& why) {
    raise(fail, "seqlens_k[" + std::to_string(b) + "] = " + std::to_string(seqlens) + " is out of range: " + why);
  };
  if (p.first_prompt) {
    if (t < 1 || t > p.seq) bad("a prompt's total length (seqlens_k + 1) must be in [1, " + std::to_string(p.seq) + "]");
  } else {
    if (q.past < 0) bad("the total length (seqlens_k + 1) must be at least the sequence length " + std::to_string(p.seq));
    if (q.past > p.past_len) bad("the past (seqlens_k + 1 - sequence length) exceeds past_key's " + std::to_string(p.past_len) + " positions");
    if (t > p.present_len) bad("the total length exceeds the present's " + std::to_string(p.present_len) + " positions");
    if (p.rotary && t > p.cache_rows) bad("the total length exceeds the rotary caches' " + std::to_string(p.cache_rows) + " positions");
  }
  return q;
}

}  // namespace onnxgpu::ops

namespace onnxgpu::ops {

MhaParams mha_params(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail) {
  auto given = [&](size_t i) { return i < in.size() && in[i].given(); };
  for (size_t i = 8; i < in.size(); ++i)
    if (given(i))
      raise(fail, "input " + std::to_string(i) + " (past_sequence_length, cache_indirection) is not supported by this engine");
  if (node.outputs.size() > 3)
    raise(fail, "has at most 3 outputs (output, present_key, present_value), the node has " +
                    std::to_string(node.outputs.size()));
  if (!given(0)) raise(fail, "input 0 (query) is required");
  if (!given(1) || !given(2))
    raise(fail, "key and value are required (Q, K and V packed in query are not supported by this engine)");
  MhaParams p;
  p.heads = node.attr_int("num_heads", 0);
  if (p.heads <= 0) raise(fail, "num_heads (" + std::to_string(p.heads) + ") must be given and positive");
  const Operand &q = in[0], &k = in[1], &v = in[2];
  p.dtype = q.dtype;
  if (!kAttentionTypes.has(q.dtype)) raise(fail, named("query", q) + " must be float32, float16 or bfloat16");
  if (q.shape.size() != 3) raise(fail, named("query", q) + " must be [batch, sequence, hidden]");
  p.batch = q.shape[0];
  p.seq = q.shape[1];
  if (q.shape[2] % p.heads != 0 || q.shape[2] == 0)
    raise(fail, named("query", q) + ": hidden size " + std::to_string(q.shape[2]) + " is not " + std::to_string(p.heads) + " heads");
  p.head_size = q.shape[2] / p.heads;
  for (const Operand* x : {&k, &v})
    if (x->dtype != q.dtype) raise(fail, named(x == &k ? "key" : "value", *x) + " must be of query's type");
  p.bnsh_kv = k.shape.size() == 4;
  if (p.bnsh_kv) {
    if (k.shape[0] != p.batch || k.shape[1] != p.heads || k.shape[3] != p.head_size)
      raise(fail, named("key", k) + " must be [batch, num_heads, length, head_size] = [" + std::to_string(p.batch) + "," +
                      std::to_string(p.heads) + ",length," + std::to_string(p.head_size) + "]");
    p.kv_seq = k.shape[2];
    if (v.shape.size() != 4 || v.shape[0] != p.batch || v.shape[1] != p.heads || v.shape[2] != p.kv_seq)
      raise(fail, named("value", v) + " must be [batch, num_heads, length, v_head_size] with key's length " + std::to_string(p.kv_seq));
    p.v_head_size = v.shape[3];
  } else {
    if (k.shape.size() != 3 || k.shape[0] != p.batch || k.shape[2] != q.shape[2])
      raise(fail, named("key", k) + " must be [batch, length, hidden] with query's batch and hidden size, or " +
                      "[batch, num_heads, length, head_size]");
    p.kv_seq = k.shape[1];
    if (v.shape.size() != 3 || v.shape[0] != p.batch || v.shape[1] != p.kv_seq || v.shape[2] % p.heads != 0)
      raise(fail, named("value", v) + " must be [batch, length, v_hidden] with key's length " + std::to_string(p.kv_seq) +
                      " and v_hidden a multiple of num_heads");
    p.v_head_size = v.shape[2] / p.heads;
  }
  p.bias = given(3);
  if (p.bias) {
    if (p.bnsh_kv) raise(fail, "bias is not supported with key and value in [batch, num_heads, length, head_size]");
    const int64_t want = 2 * p.hidden() + p.v_hidden();
    if (in[3].dtype != q.dtype || in[3].shape != Shape{want})
      raise(fail, named("bias", in[3]) + " must be of query's type and [" + std::to_string(want) + "] (Q, K and V biases)");
  }
  p.past = given(6) || given(7);
  p.past_len = 0;
  if (p.past) {
    if (!given(6) || !given(7)) raise(fail, "past_key and past_value must be both given or both omitted");
    if (p.bnsh_kv) raise(fail, "past_key and past_value are not supported with key and value in [batch, num_heads, length, head_size]");
    const Operand &pk = in[6], &pv = in[7];
    if (pk.dtype != q.dtype || pv.dtype != q.dtype) raise(fail, "past_key and past_value must be of query's type");
    if (pk.shape.size() != 4 || pk.shape[0] != p.batch || pk.shape[1] != p.heads || pk.shape[3] != p.head_size)
      raise(fail, named("past_key", pk) + " must be [batch, num_heads, length, head_size] = [" + std::to_string(p.batch) +
                      "," + std::to_string(p.heads) + ",length," + std::to_string(p.head_size) + "]");
    if (pv.shape != Shape{p.batch, p.heads, pk.shape[2], p.v_head_size})
      raise(fail, named("past_value", pv) + " must be " + shape_str(Shape{p.batch, p.heads, pk.shape[2], p.v_head_size}));
    p.past_len = pk.shape[2];
  }
  p.total = p.past_len + p.kv_seq;
  p.mask = MhaParams::Mask::None;
  if (given(4)) {
    const Operand& m = in[4];
    if (m.dtype != DType::Int32) raise(fail, named("key_padding_mask", m) + " must be int32");
    if (m.shape == Shape{p.batch}) p.mask = MhaParams::Mask::Lengths;
    else if (m.shape == Shape{p.batch, p.total}) p.mask = MhaParams::Mask::Keys;
    else
      raise(fail, named("key_padding_mask", m) + " must be [batch] = [" + std::to_string(p.batch) +
                      "] (key counts) or [batch, total_sequence_length] = " + shape_str(Shape{p.batch, p.total}));
  }
  p.attention_bias = given(5);
  if (p.attention_bias) {
    const Operand& b = in[5];
    if (b.dtype != q.dtype) raise(fail, named("attention_bias", b) + " must be of query's type");
    if (b.shape.size() != 4 || (b.shape[0] != 1 && b.shape[0] != p.batch) || (b.shape[1] != 1 && b.shape[1] != p.heads) ||
        b.shape[2] != p.seq || b.shape[3] != p.total)
      raise(fail, named("attention_bias", b) + " must be [batch or 1, num_heads or 1, sequence, total_sequence_length] = [" +
                      std::to_string(p.batch) + " or 1," + std::to_string(p.heads) + " or 1," + std::to_string(p.seq) + "," +
                      std::to_string(p.total) + "]");
    p.attention_bias_shape = b.shape;
  }
  const float scale = node.attr_float("scale", 0.0f);
  p.scale = scale != 0.0f ? scale : 1.0f / std::sqrt(float(p.head_size));
  p.mask_filter_value = node.attr_float("mask_filter_value", -10000.0f);
  p.causal = node.attr_int("unidirectional", 0) != 0;
  if (p.causal && p.seq != p.kv_seq)
    raise(fail, "unidirectional needs as many queries as new keys (sequence " + std::to_string(p.seq) + ", keys " +
                    std::to_string(p.kv_seq) + ")");
  return p;
}

OnnxAttentionParams onnx_attention_params(const ir::Node& node, int64_t opset, const std::vector<Operand>& in,
                                          const Fail& fail) {
  auto given = [&](size_t i) { return i < in.size() && in[i].given(); };
  if (opset < 23) raise(fail, "Attention is an ONNX op from opset 23 on; the model imports opset " + std::to_string(opset));
  if (in.size() > 7 || (opset < 24 && in.size() > 6))
    raise(fail, "takes at most " + std::string(opset < 24 ? "6" : "7") + " inputs, got " + std::to_string(in.size()));
  if (node.outputs.size() > 4)
    raise(fail, "has at most 4 outputs (Y, present_key, present_value, qk_matmul_output), the node has " +
                    std::to_string(node.outputs.size()));
  for (size_t i = 0; i < 3; ++i)
    if (!given(i)) raise(fail, "input " + std::to_string(i) + " is required");
  OnnxAttentionParams p;
  const Operand &q = in[0], &k = in[1], &v = in[2];
  p.dtype = q.dtype;
  if (!kAttentionTypes.has(q.dtype)) raise(fail, named("Q", q) + " must be float32, float16 or bfloat16");
  for (const Operand* x : {&k, &v})
    if (x->dtype != q.dtype) raise(fail, named(x == &k ? "K" : "V", *x) + " must be of Q's type");
  if (q.shape.size() != 3 && q.shape.size() != 4) raise(fail, named("Q", q) + " must be 3-D or 4-D");
  if (k.shape.size() != q.shape.size() || v.shape.size() != q.shape.size())
    raise(fail, "Q " + q.describe() + ", K " + k.describe() + " and V " + v.describe() + " must have one rank");
  p.three_d = q.shape.size() == 3;
  p.batch = q.shape[0];
  if (k.shape[0] != p.batch || v.shape[0] != p.batch) raise(fail, "Q, K and V must have one batch size");
  const int64_t qh = node.attr_int("q_num_heads", 0), kvh = node.attr_int("kv_num_heads", 0);
  if (p.three_d) {
    if (qh <= 0 || kvh <= 0) raise(fail, "q_num_heads and kv_num_heads are required (positive) for 3-D inputs");
    p.q_heads = qh;
    p.kv_heads = kvh;
    p.seq = q.shape[1];
    p.kv_seq = k.shape[1];
    if (v.shape[1] != p.kv_seq) raise(fail, "K " + k.describe() + " and V " + v.describe() + " must have one sequence length");
    if (q.shape[2] % qh != 0) raise(fail, named("Q", q) + ": hidden size is not q_num_heads " + std::to_string(qh) + " heads");
    if (k.shape[2] % kvh != 0) raise(fail, named("K", k) + ": hidden size is not kv_num_heads " + std::to_string(kvh) + " heads");
    if (v.shape[2] % kvh != 0) raise(fail, named("V", v) + ": hidden size is not kv_num_heads " + std::to_string(kvh) + " heads");
    p.head_size = q.shape[2] / qh;
    if (k.shape[2] / kvh != p.head_size)
      raise(fail, named("K", k) + " must have Q's head size " + std::to_string(p.head_size));
    p.v_head_size = v.shape[2] / kvh;
  } else {
    p.q_heads = q.shape[1];
    p.kv_heads = k.shape[1];
    p.seq = q.shape[2];
    p.kv_seq = k.shape[2];
    p.head_size = q.shape[3];
    if ((qh && qh != p.q_heads) || (kvh && kvh != p.kv_heads))
      raise(fail, "q_num_heads / kv_num_heads differ from the heads of Q " + q.describe() + " / K " + k.describe());
    if (k.shape[3] != p.head_size) raise(fail, named("K", k) + " must have Q's head size " + std::to_string(p.head_size));
    if (v.shape[1] != p.kv_heads || v.shape[2] != p.kv_seq)
      raise(fail, "V " + v.describe() + " must have K's heads and sequence length");
    p.v_head_size = v.shape[3];
  }
  if (p.kv_heads <= 0 || p.q_heads % p.kv_heads != 0)
    raise(fail, "the query heads " + std::to_string(p.q_heads) + " must be a multiple of the key/value heads " +
                    std::to_string(p.kv_heads));
  p.past = given(4) || given(5);
  p.past_len = 0;
  if (p.past) {
    if (!given(4) || !given(5)) raise(fail, "past_key and past_value must be both given or both omitted");
    const Operand &pk = in[4], &pv = in[5];
    if (pk.dtype != q.dtype || pv.dtype != q.dtype) raise(fail, "past_key and past_value must be of Q's type");
    if (pk.shape.size() != 4 || pk.shape[0] != p.batch || pk.shape[1] != p.kv_heads || pk.shape[3] != p.head_size)
      raise(fail, named("past_key", pk) + " must be [batch, kv_num_heads, length, head_size] = [" + std::to_string(p.batch) +
                      "," + std::to_string(p.kv_heads) + ",length," + std::to_string(p.head_size) + "]");
    if (pv.shape != Shape{p.batch, p.kv_heads, pk.shape[2], p.v_head_size})
      raise(fail, named("past_value", pv) + " must be " + shape_str(Shape{p.batch, p.kv_heads, pk.shape[2], p.v_head_size}));
    p.past_len = pk.shape[2];
  }
  p.total = p.past_len + p.kv_seq;
  p.mask = OnnxAttentionParams::Mask::None;
  p.mask_keys = p.total;
  if (given(3)) {
    const Operand& m = in[3];
    if (m.dtype == DType::Bool) p.mask = OnnxAttentionParams::Mask::Bool;
    else if (m.dtype == q.dtype) p.mask = OnnxAttentionParams::Mask::Float;
    else raise(fail, named("attn_mask", m) + " must be bool or of Q's type");
    if (m.shape.empty() || m.shape.size() > 4) raise(fail, named("attn_mask", m) + " must be of rank 1 to 4");
    p.mask_shape = m.shape;
    p.mask_keys = m.shape.back();
    if (p.mask_keys > p.total)
      raise(fail, named("attn_mask", m) + " covers more keys than the total sequence length " + std::to_string(p.total));
    const Shape full{p.batch, p.q_heads, p.seq, p.mask_keys};
    for (size_t d = 0; d < m.shape.size(); ++d) {
      const int64_t want = full[4 - m.shape.size() + d];
      if (m.shape[d] != 1 && m.shape[d] != want)
        raise(fail, named("attn_mask", m) + " does not broadcast to [batch, q_num_heads, q_sequence, keys] = " + shape_str(full));
    }
  }
  p.nonpad = given(6);
  if (p.nonpad && (in[6].dtype != DType::Int64 || in[6].shape != Shape{p.batch}))
    raise(fail, named("nonpad_kv_seqlen", in[6]) + " must be int64 [batch] = [" + std::to_string(p.batch) + "]");
  if (p.nonpad && p.past) raise(fail, "nonpad_kv_seqlen is not supported with past_key and past_value");
  p.causal = node.attr_int("is_causal", 0) != 0;
  p.left_window = node.attr_int("left_window_size", -1);
  p.right_window = node.attr_int("right_window_size", -1);
  if (p.left_window < -1 || p.right_window < -1)
    raise(fail, "left_window_size and right_window_size must be -1 (unbounded) or >= 0");
  const float scale = node.attr_float("scale", 0.0f);
  p.scale = node.has_attr("scale") ? scale : 1.0f / std::sqrt(float(p.head_size));
  p.softcap = node.attr_float("softcap", 0.0f);
  if (p.softcap < 0) raise(fail, "softcap " + std::to_string(p.softcap) + " must be >= 0");
  p.qk_mode = node.attr_int("qk_matmul_output_mode", 0);
  if (p.qk_mode < 0 || p.qk_mode > 3) raise(fail, "qk_matmul_output_mode " + std::to_string(p.qk_mode) + " must be 0 to 3");
  p.qk_output = node.outputs.size() > 3 && !node.outputs[3].empty();
  return p;
}

}  // namespace onnxgpu::ops
