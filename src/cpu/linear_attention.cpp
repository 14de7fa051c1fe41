// The recurrent layers of linear-attention models (Gated DeltaNet, as in Qwen3-Next; Mamba-style short
// convolutions): LinearAttention and CausalConvWithState, ONNX's ops for them (opset 25 on; the ONNX 1.23
// node tests hold them). Both carry a state from one call to the next (a decode step's past_state), so a
// generation loop feeds present_state back. CPU only: the recurrence runs token after token; in a WebGPU
// session each node falls back alone (fail-loud refuses it). Computed in float64, returned in the inputs'
// float type.
#include <cmath>

#include "cpu/kernel.h"

namespace onnxgpu::cpu {
namespace {

// Input i, a float tensor of rank 3 (else an error naming it), as float64.
Tensor rank3(const KernelContext& ctx, size_t i, const char* name) {
  const Tensor& t = ctx.input(i);
  if (!kFloatTypes.has(t.dtype())) ctx.fail(std::string("input '") + name + "' is " + t.describe() + ", expected a float type");
  if (t.rank() != 3) ctx.fail(std::string("input '") + name + "' must be rank 3, got " + t.describe());
  return t.cast(DType::Float64);
}

// CausalConvWithState: a depthwise 1-D convolution that sees only the past. input [B, C, L], weight
// [C, 1, K], bias [C] (optional), past_state [B, C, K - 1] (optional: zeros), activation "none", "silu" or
// "swish" (the same). The input is prefixed by the past state; output[b, c, t] = bias[c] +
// sum_k weight[c, 0, k] * padded[b, c, t + k], then x * sigmoid(x) under silu; present_state: the last
// K - 1 positions of the padded input.
std::vector<Tensor> causal_conv_with_state(KernelContext& ctx) {
  const Tensor x = rank3(ctx, 0, "input"), w = rank3(ctx, 1, "weight");
  const DType t = ctx.input(0).dtype();
  const int64_t b = x.dim(0), c = x.dim(1), l = x.dim(2), k = w.dim(2);
  if (w.dim(0) != c || w.dim(1) != 1 || k < 1)
    ctx.fail("input 'weight' must be [channels, 1, k] with channels " + std::to_string(c) + " and k >= 1, got " +
             ctx.input(1).describe());
  Tensor bias, past;
  if (ctx.has_input(2)) {
    bias = ctx.input(2).cast(DType::Float64);
    if (bias.shape() != Shape{c}) ctx.fail("input 'bias' must be [" + std::to_string(c) + "], got " + ctx.input(2).describe());
  }
  if (ctx.has_input(3)) {
    past = rank3(ctx, 3, "past_state");
    if (past.shape() != Shape{b, c, k - 1})
      ctx.fail("input 'past_state' must be [" + std::to_string(b) + ", " + std::to_string(c) + ", " + std::to_string(k - 1) +
               "] (batch, channels, k - 1), got " + ctx.input(3).describe());
  }
  const std::string act = ctx.node.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    ctx.fail("attribute 'activation' is '" + act + "', expected none, silu or swish");
  const int64_t p = l + k - 1;  // the padded length
  std::vector<double> padded(static_cast<size_t>(p));
  Tensor y(DType::Float64, {b, c, l}), present(DType::Float64, {b, c, k - 1});
  const double* xv = x.data<double>();
  const double* wv = w.data<double>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t j = 0; j < k - 1; ++j) padded[size_t(j)] = past.defined() ? past.data<double>()[(i * c + ch) * (k - 1) + j] : 0.0;
      for (int64_t j = 0; j < l; ++j) padded[size_t(k - 1 + j)] = xv[(i * c + ch) * l + j];
      for (int64_t j = 0; j < l; ++j) {
        double s = bias.defined() ? bias.data<double>()[ch] : 0.0;
        for (int64_t q = 0; q < k; ++q) s += wv[ch * k + q] * padded[size_t(j + q)];
        y.data<double>()[(i * c + ch) * l + j] = act == "none" ? s : s / (1 + std::exp(-s));
      }
      for (int64_t j = 0; j < k - 1; ++j) present.data<double>()[(i * c + ch) * (k - 1) + j] = padded[size_t(p - (k - 1) + j)];
    }
  return {y.cast(t), present.cast(t)};
}

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
std::vector<Tensor> linear_attention(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Tensor q = rank3(ctx, 0, "query"), kx = rank3(ctx, 1, "key"), vx = rank3(ctx, 2, "value");
  const int64_t hq = n.attr_int("q_num_heads", 0), hkv = n.attr_int("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    ctx.fail("attributes 'q_num_heads' (" + std::to_string(hq) + ") and 'kv_num_heads' (" + std::to_string(hkv) +
             ") must be positive, q_num_heads a multiple of kv_num_heads");
  const std::string rule = n.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    ctx.fail("attribute 'update_rule' is '" + rule + "', expected linear, gated, delta or gated_delta");
  const bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (gated != ctx.has_input(4))
    ctx.fail("update_rule '" + rule + "' " + (gated ? "needs input 'decay'" : "takes no input 'decay'"));
  if (delta != ctx.has_input(5)) ctx.fail("update_rule '" + rule + "' " + (delta ? "needs input 'beta'" : "takes no input 'beta'"));
  if (!delta && ctx.has_input(6)) ctx.fail("update_rule '" + rule + "' takes no input 'erase_gate'");
  const int64_t b = q.dim(0), t = q.dim(1);
  for (size_t i : {1, 2})
    if (ctx.input(i).dim(0) != b || ctx.input(i).dim(1) != t)
      ctx.fail(std::string("input '") + (i == 1 ? "key" : "value") + "' is " + ctx.input(i).describe() +
               ", expected the query's [B, T] = [" + std::to_string(b) + ", " + std::to_string(t) + "] first");
  if (q.dim(2) % hq != 0 || kx.dim(2) % hkv != 0 || vx.dim(2) % hkv != 0)
    ctx.fail("the last axes of query, key and value (" + std::to_string(q.dim(2)) + ", " + std::to_string(kx.dim(2)) + ", " +
             std::to_string(vx.dim(2)) + ") must divide into q_num_heads, kv_num_heads and kv_num_heads heads");
  const int64_t dk = q.dim(2) / hq, dv = vx.dim(2) / hkv, group = hq / hkv;
  if (kx.dim(2) / hkv != dk)
    ctx.fail("key heads of " + std::to_string(kx.dim(2) / hkv) + " values, the query's of " + std::to_string(dk) + ": expected the same d_k");
  // decay: one per head (g_size 1) or per key dimension (g_size d_k); beta: one per head or one for all.
  Tensor decay, beta, erase, past;
  int64_t g_size = 0, beta_heads = 0;
  auto per_token = [&](size_t i, const char* name, std::initializer_list<int64_t> lasts) {
    Tensor x = rank3(ctx, i, name);
    bool ok = x.dim(0) == b && x.dim(1) == t;
    bool last = false;
    for (int64_t l : lasts) last |= x.dim(2) == l;
    if (!ok || !last) {
      std::string want;
      for (int64_t l : lasts) want += (want.empty() ? "" : " or ") + std::to_string(l);
      ctx.fail(std::string("input '") + name + "' is " + ctx.input(i).describe() + ", expected [" + std::to_string(b) + ", " +
               std::to_string(t) + ", " + want + "]");
    }
    return x;
  };
  if (gated) decay = per_token(4, "decay", {hkv, hkv * dk}), g_size = decay.dim(2) / hkv;
  if (delta) beta = per_token(5, "beta", {hkv, 1}), beta_heads = beta.dim(2);
  if (ctx.has_input(6)) erase = per_token(6, "erase_gate", {hkv * dk});
  if (ctx.has_input(3)) {
    past = ctx.input(3).cast(DType::Float64);
    if (!kFloatTypes.has(ctx.input(3).dtype()) || past.shape() != Shape{b, hkv, dk, dv})
      ctx.fail("input 'past_state' must be a float [" + std::to_string(b) + ", " + std::to_string(hkv) + ", " + std::to_string(dk) +
               ", " + std::to_string(dv) + "] (batch, kv heads, d_k, d_v), got " + ctx.input(3).describe());
  }
  const float scale_attr = n.attr_float("scale", 0.0f);
  const double scale = scale_attr == 0.0f ? 1.0 / std::sqrt(double(dk)) : double(scale_attr);

  Tensor state = past.defined() ? past : Tensor(DType::Float64, {b, hkv, dk, dv});
  Tensor y(DType::Float64, {b, t, hq * dv});
  double* s_all = state.data<double>();
  std::vector<double> v(static_cast<size_t>(dv)), ke(static_cast<size_t>(dk));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t step = 0; step < t; ++step) {
      for (int64_t h = 0; h < hkv; ++h) {
        double* s = s_all + (i * hkv + h) * dk * dv;
        const double* k = kx.data<double>() + (i * t + step) * hkv * dk + h * dk;
        const double* vin = vx.data<double>() + (i * t + step) * hkv * dv + h * dv;
        if (gated) {
          const double* g = decay.data<double>() + (i * t + step) * hkv * g_size + h * g_size;
          for (int64_t d = 0; d < dk; ++d) {
            const double e = std::exp(g[g_size == 1 ? 0 : d]);
            for (int64_t m = 0; m < dv; ++m) s[d * dv + m] *= e;
          }
        }
        for (int64_t m = 0; m < dv; ++m) v[size_t(m)] = vin[m];
        if (delta) {
          for (int64_t d = 0; d < dk; ++d)
            ke[size_t(d)] = erase.defined() ? erase.data<double>()[(i * t + step) * hkv * dk + h * dk + d] * k[d] : k[d];
          const double bt = beta.data<double>()[(i * t + step) * beta_heads + (beta_heads == 1 ? 0 : h)];
          for (int64_t m = 0; m < dv; ++m) {
            double r = 0;
            for (int64_t d = 0; d < dk; ++d) r += s[d * dv + m] * ke[size_t(d)];
            v[size_t(m)] = bt * (v[size_t(m)] - r);
          }
        }
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t m = 0; m < dv; ++m) s[d * dv + m] += k[d] * v[size_t(m)];
      }
      for (int64_t h = 0; h < hq; ++h) {
        const double* s = s_all + (i * hkv + h / group) * dk * dv;
        const double* qh = q.data<double>() + (i * t + step) * hq * dk + h * dk;
        double* o = y.data<double>() + (i * t + step) * hq * dv + h * dv;
        for (int64_t m = 0; m < dv; ++m) {
          double r = 0;
          for (int64_t d = 0; d < dk; ++d) r += qh[d] * s[d * dv + m];
          o[m] = scale * r;
        }
      }
    }
  return {y.cast(ctx.input(0).dtype()), state.cast(ctx.has_input(3) ? ctx.input(3).dtype() : ctx.input(0).dtype())};
}

}  // namespace

void register_linear_attention(KernelRegistry& r) {
  r.add("LinearAttention", linear_attention);
  r.add("CausalConvWithState", causal_conv_with_state);
}

}  // namespace onnxgpu::cpu
