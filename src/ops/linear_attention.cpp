#include "ops/linear_attention.h"

#include <cmath>
#include <string>

namespace onnxgpu::ops {

namespace {

std::string num(int64_t v) { return std::to_string(v); }

// Input i: a float tensor of rank 3, else an error naming it.
const Operand& rank3(const std::vector<Operand>& in, size_t i, const char* name, const Fail& fail) {
  if (i >= in.size() || !in[i].given()) raise(fail, std::string("input '") + name + "' is required");
  const Operand& o = in[i];
  if (!kFloatTypes.has(o.dtype)) raise(fail, std::string("input '") + name + "' is " + o.describe() + ", expected a float type");
  if (o.shape.size() != 3) raise(fail, std::string("input '") + name + "' must be rank 3, got " + o.describe());
  return o;
}

bool given(const std::vector<Operand>& in, size_t i) { return i < in.size() && in[i].given(); }

}  // namespace

CausalConvParams causal_conv_params(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail) {
  const Operand& x = rank3(in, 0, "input", fail);
  const Operand& w = rank3(in, 1, "weight", fail);
  CausalConvParams p{x.shape[0], x.shape[1], x.shape[2], w.shape[2], given(in, 2), given(in, 3), false, x.dtype};
  if (w.shape[0] != p.channels || w.shape[1] != 1 || p.taps < 1)
    raise(fail, "input 'weight' must be [channels, 1, k] with channels " + num(p.channels) + " and k >= 1, got " + w.describe());
  if (p.has_bias && (!kFloatTypes.has(in[2].dtype) || in[2].shape != Shape{p.channels}))
    raise(fail, "input 'bias' must be a float [" + num(p.channels) + "], got " + in[2].describe());
  if (p.has_past) {
    const Operand& past = rank3(in, 3, "past_state", fail);
    if (past.shape != Shape{p.batch, p.channels, p.taps - 1})
      raise(fail, "input 'past_state' must be [" + num(p.batch) + ", " + num(p.channels) + ", " + num(p.taps - 1) +
                      "] (batch, channels, k - 1), got " + past.describe());
  }
  const std::string act = node.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    raise(fail, "attribute 'activation' is '" + act + "', expected none, silu or swish");
  p.silu = act != "none";
  return p;
}

LinearAttentionParams linear_attention_params(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail) {
  const Operand& q = rank3(in, kLaQuery, "query", fail);
  const Operand& k = rank3(in, kLaKey, "key", fail);
  const Operand& v = rank3(in, kLaValue, "value", fail);
  LinearAttentionParams p{};
  p.q_heads = node.attr_int("q_num_heads", 0);
  p.kv_heads = node.attr_int("kv_num_heads", 0);
  if (p.q_heads <= 0 || p.kv_heads <= 0 || p.q_heads % p.kv_heads != 0)
    raise(fail, "attributes 'q_num_heads' (" + num(p.q_heads) + ") and 'kv_num_heads' (" + num(p.kv_heads) +
                    ") must be positive, q_num_heads a multiple of kv_num_heads");
  const std::string rule = node.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    raise(fail, "attribute 'update_rule' is '" + rule + "', expected linear, gated, delta or gated_delta");
  p.gated = rule == "gated" || rule == "gated_delta";
  p.delta = rule == "delta" || rule == "gated_delta";
  if (p.gated != given(in, kLaDecay))
    raise(fail, "update_rule '" + rule + "' " + (p.gated ? "needs input 'decay'" : "takes no input 'decay'"));
  if (p.delta != given(in, kLaBeta)) raise(fail, "update_rule '" + rule + "' " + (p.delta ? "needs input 'beta'" : "takes no input 'beta'"));
  p.has_erase = given(in, kLaErase);
  if (!p.delta && p.has_erase) raise(fail, "update_rule '" + rule + "' takes no input 'erase_gate'");
  p.batch = q.shape[0];
  p.tokens = q.shape[1];
  for (const Operand* o : {&k, &v})
    if (o->shape[0] != p.batch || o->shape[1] != p.tokens)
      raise(fail, std::string("input '") + (o == &k ? "key" : "value") + "' is " + o->describe() +
                      ", expected the query's [B, T] = [" + num(p.batch) + ", " + num(p.tokens) + "] first");
  if (q.shape[2] % p.q_heads != 0 || k.shape[2] % p.kv_heads != 0 || v.shape[2] % p.kv_heads != 0)
    raise(fail, "the last axes of query, key and value (" + num(q.shape[2]) + ", " + num(k.shape[2]) + ", " + num(v.shape[2]) +
                    ") must divide into q_num_heads, kv_num_heads and kv_num_heads heads");
  p.dk = q.shape[2] / p.q_heads;
  p.dv = v.shape[2] / p.kv_heads;
  if (k.shape[2] / p.kv_heads != p.dk)
    raise(fail, "key heads of " + num(k.shape[2] / p.kv_heads) + " values, the query's of " + num(p.dk) + ": expected the same d_k");
  // decay: one per head or per key dimension; beta: one per head or one for all; erase_gate per key dimension.
  auto per_token = [&](size_t i, const char* name, std::initializer_list<int64_t> lasts) {
    const Operand& x = rank3(in, i, name, fail);
    bool last = false;
    for (int64_t l : lasts) last |= x.shape[2] == l;
    if (x.shape[0] != p.batch || x.shape[1] != p.tokens || !last) {
      std::string want;
      for (int64_t l : lasts) want += (want.empty() ? "" : " or ") + num(l);
      raise(fail, std::string("input '") + name + "' is " + x.describe() + ", expected [" + num(p.batch) + ", " + num(p.tokens) +
                      ", " + want + "]");
    }
    return x.shape[2];
  };
  if (p.gated) p.decay_size = per_token(kLaDecay, "decay", {p.kv_heads, p.kv_heads * p.dk}) / p.kv_heads;
  if (p.delta) p.beta_heads = per_token(kLaBeta, "beta", {p.kv_heads, 1});
  if (p.has_erase) per_token(kLaErase, "erase_gate", {p.kv_heads * p.dk});
  p.has_past = given(in, kLaPast);
  if (p.has_past && (!kFloatTypes.has(in[kLaPast].dtype) || in[kLaPast].shape != Shape{p.batch, p.kv_heads, p.dk, p.dv}))
    raise(fail, "input 'past_state' must be a float [" + num(p.batch) + ", " + num(p.kv_heads) + ", " + num(p.dk) + ", " + num(p.dv) +
                    "] (batch, kv heads, d_k, d_v), got " + in[kLaPast].describe());
  const float scale = node.attr_float("scale", 0.0f);
  p.scale = scale == 0.0f ? 1.0 / std::sqrt(double(p.dk)) : double(scale);
  p.out_dtype = q.dtype;
  p.state_dtype = p.has_past ? in[kLaPast].dtype : q.dtype;
  return p;
}

}  // namespace onnxgpu::ops
