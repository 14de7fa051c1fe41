// The recurrent layers of linear-attention models (Gated DeltaNet, as in Qwen3-Next; Mamba-style short
// convolutions): LinearAttention and CausalConvWithState, ONNX's ops for them (opset 25 on; the ONNX 1.23
// node tests hold them). Both carry a state from one call to the next (a decode step's past_state), so a
// generation loop feeds present_state back. The CPU reference: the formulas and the checks are
// ops/linear_attention.h's; computed in float64, returned in the inputs' float type.
#include <cmath>

#include "cpu/kernel.h"
#include "ops/linear_attention.h"

namespace onnxgpu::cpu {
namespace {

// Input i as float64 (absent: an undefined tensor).
Tensor f64(const KernelContext& ctx, size_t i) { return ctx.has_input(i) ? ctx.input(i).cast(DType::Float64) : Tensor(); }

std::vector<Tensor> causal_conv_with_state(KernelContext& ctx) {
  const ops::CausalConvParams cp = ops::causal_conv_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const Tensor x = f64(ctx, 0), w = f64(ctx, 1), bias = f64(ctx, 2), past = f64(ctx, 3);
  const int64_t b = cp.batch, c = cp.channels, l = cp.length, k = cp.taps;
  const int64_t p = l + k - 1;  // the padded length
  std::vector<double> padded(static_cast<size_t>(p));
  Tensor y(DType::Float64, {b, c, l}), present(DType::Float64, {b, c, k - 1});
  const double* xv = x.data<double>();
  const double* wv = w.data<double>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t j = 0; j < k - 1; ++j) padded[size_t(j)] = cp.has_past ? past.data<double>()[(i * c + ch) * (k - 1) + j] : 0.0;
      for (int64_t j = 0; j < l; ++j) padded[size_t(k - 1 + j)] = xv[(i * c + ch) * l + j];
      for (int64_t j = 0; j < l; ++j) {
        double s = cp.has_bias ? bias.data<double>()[ch] : 0.0;
        for (int64_t q = 0; q < k; ++q) s += wv[ch * k + q] * padded[size_t(j + q)];
        y.data<double>()[(i * c + ch) * l + j] = cp.silu ? s / (1 + std::exp(-s)) : s;
      }
      for (int64_t j = 0; j < k - 1; ++j) present.data<double>()[(i * c + ch) * (k - 1) + j] = padded[size_t(p - (k - 1) + j)];
    }
  return {y.cast(cp.dtype), present.cast(cp.dtype)};
}

std::vector<Tensor> linear_attention(KernelContext& ctx) {
  using namespace ops;
  const LinearAttentionParams lp = linear_attention_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const Tensor q = f64(ctx, kLaQuery), kx = f64(ctx, kLaKey), vx = f64(ctx, kLaValue), decay = f64(ctx, kLaDecay),
               beta = f64(ctx, kLaBeta), erase = f64(ctx, kLaErase);
  const int64_t b = lp.batch, t = lp.tokens, hq = lp.q_heads, hkv = lp.kv_heads, dk = lp.dk, dv = lp.dv, group = lp.group();
  const int64_t g_size = lp.decay_size, beta_heads = lp.beta_heads;
  const double scale = lp.scale;
  Tensor state = lp.has_past ? f64(ctx, kLaPast) : Tensor(DType::Float64, {b, hkv, dk, dv});
  Tensor y(DType::Float64, {b, t, hq * dv});
  double* s_all = state.data<double>();
  std::vector<double> v(static_cast<size_t>(dv)), ke(static_cast<size_t>(dk));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t step = 0; step < t; ++step) {
      for (int64_t h = 0; h < hkv; ++h) {
        double* s = s_all + (i * hkv + h) * dk * dv;
        const double* k = kx.data<double>() + (i * t + step) * hkv * dk + h * dk;
        const double* vin = vx.data<double>() + (i * t + step) * hkv * dv + h * dv;
        if (lp.gated) {
          const double* g = decay.data<double>() + (i * t + step) * hkv * g_size + h * g_size;
          for (int64_t d = 0; d < dk; ++d) {
            const double e = std::exp(g[g_size == 1 ? 0 : d]);
            for (int64_t m = 0; m < dv; ++m) s[d * dv + m] *= e;
          }
        }
        for (int64_t m = 0; m < dv; ++m) v[size_t(m)] = vin[m];
        if (lp.delta) {
          for (int64_t d = 0; d < dk; ++d)
            ke[size_t(d)] = lp.has_erase ? erase.data<double>()[(i * t + step) * hkv * dk + h * dk + d] * k[d] : k[d];
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
  return {y.cast(lp.out_dtype), state.cast(lp.state_dtype)};
}

}  // namespace

void register_linear_attention(KernelRegistry& r) {
  r.add("LinearAttention", linear_attention);
  r.add("CausalConvWithState", causal_conv_with_state);
}

}  // namespace onnxgpu::cpu
