// The attention ops: GroupQueryAttention and MultiHeadAttention (com.microsoft), Attention (ONNX,
// opset 23); see ops/attention.h. Computed in double.
#include <cmath>
#include <limits>

#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/attention.h"

namespace onnxgpu::cpu {
namespace {

// One query row's attention over the keys [lo, hi) of K [.., D] and V [.., Dv] (rows of `d` and `dv`
// values): softmax(softcap(scale q.k) + bias(j)) V, written to out[dv]; zeros when no key is seen (none
// in the range, or every score -inf).
struct RowAttention {
  double scale = 1, softcap = 0;
  bool smooth = false;  // an extra logit `sink` in the softmax's sum (of value 0)
  double sink = 0;
  // The scores of the row (after softcap and bias), for the caller's qk_matmul_output.
  static double score(double dot, double scale, double softcap) {
    double x = scale * dot;
    return softcap > 0 ? softcap * std::tanh(x / softcap) : x;
  }
  template <class Bias>
  void operator()(const double* q, const double* K, const double* V, int64_t lo, int64_t hi, int64_t d, int64_t dv,
                  double* out, const Bias& bias, std::vector<double>* probs = nullptr) const {
    for (int64_t c = 0; c < dv; ++c) out[c] = 0;
    if (lo >= hi) return;
    std::vector<double> s(size_t(hi - lo));
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = lo; j < hi; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += q[c] * K[j * d + c];
      const double x = score(dot, scale, softcap) + bias(j);
      s[size_t(j - lo)] = x;
      m = std::max(m, x);
    }
    if (smooth) m = std::max(m, sink);
    if (m == -std::numeric_limits<double>::infinity()) {
      if (probs) std::fill(probs->begin(), probs->end(), 0.0);
      return;
    }
    double sum = smooth ? std::exp(sink - m) : 0;
    for (double& x : s) sum += (x = std::exp(x - m));
    for (int64_t j = lo; j < hi; ++j) {
      const double w = s[size_t(j - lo)] / sum;
      if (probs) (*probs)[size_t(j - lo)] = w;
      for (int64_t c = 0; c < dv; ++c) out[c] += w * V[j * dv + c];
    }
  }
  void operator()(const double* q, const double* K, const double* V, int64_t lo, int64_t hi, int64_t d, int64_t dv,
                  double* out) const {
    (*this)(q, K, V, lo, hi, d, dv, out, [](int64_t) { return 0.0; });
  }
};

// The kernel's results, as many as the node has outputs (the presents are optional).
std::vector<Tensor> outputs_of(const KernelContext& ctx, std::vector<Tensor> r) {
  if (r.size() > ctx.num_outputs()) r.resize(ctx.num_outputs());
  return r;
}

// Rotates the first rotary_dim values of a head by the cache row `pos` (halves or interleaved).
void rotate(double* x, const double* cos, const double* sin, int64_t pos, int64_t rotary_dim, bool interleaved) {
  const int64_t half = rotary_dim / 2;
  const double* c = cos + pos * half;
  const double* s = sin + pos * half;
  for (int64_t k = 0; k < half; ++k) {
    const int64_t i = interleaved ? 2 * k : k, j = interleaved ? 2 * k + 1 : k + half;
    const double a = x[i], b = x[j];
    x[i] = a * c[k] - b * s[k];
    x[j] = b * c[k] + a * s[k];
  }
}

std::vector<Tensor> group_query_attention(KernelContext& ctx) {
  const Tensor& total = ctx.input(6);
  const ops::GqaParams p =
      ops::gqa_params(ctx.node, ctx.operands(), total.dtype() == DType::Int32 && total.numel() == 1 ? total.data<int32_t>()[0] : 0, ctx.fail_fn());
  const int64_t B = p.batch, S = p.seq, N = p.heads, Nkv = p.kv_heads, H = p.head_size, P = p.present_len,
                L = p.past_len, G = p.group();
  const std::vector<double> query = nn::to_doubles(ctx.input(0));
  std::vector<double> key, value, past_k, past_v, cos, sin;
  if (!p.packed) {
    key = nn::to_doubles(ctx.input(1));
    value = nn::to_doubles(ctx.input(2));
  }
  if (p.has_past) {
    past_k = nn::to_doubles(ctx.input(3));
    past_v = nn::to_doubles(ctx.input(4));
  }
  if (p.rotary) {
    cos = nn::to_doubles(ctx.input(7));
    sin = nn::to_doubles(ctx.input(8));
  }
  const int32_t* seqlens = ctx.input(5).data<int32_t>();
  std::vector<ops::GqaSequence> seqs;
  for (int64_t b = 0; b < B; ++b) seqs.push_back(ops::gqa_sequence(p, b, seqlens[b], ctx.fail_fn()));

  // The rotary position of each token: position_ids' (checked against the caches), or computed.
  std::vector<int64_t> pos(size_t(B * S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      int64_t& x = pos[size_t(b * S + s)];
      x = p.position_ids ? ctx.input(9).data<int64_t>()[b * S + s] : ops::gqa_position(p, seqs[size_t(b)], s);
      if (p.rotary && (x < 0 || x >= p.cache_rows))
        ctx.fail("position_ids value " + std::to_string(x) + " at index " + std::to_string(b * S + s) +
                 " is out of range [0, " + std::to_string(p.cache_rows) + ")");
    }
  // Token s's head n of Q (n < N), K (N <= n < N + Nkv) or V, as the inputs hold them.
  const int64_t row = p.query_row();
  auto head = [&](int64_t b, int64_t s, int64_t n) -> const double* {
    if (p.packed) return query.data() + (b * S + s) * row + n * H;
    if (n < N) return query.data() + (b * S + s) * row + n * H;
    if (n < N + Nkv) return key.data() + (b * S + s) * p.kv_hidden() + (n - N) * H;
    return value.data() + (b * S + s) * p.kv_hidden() + (n - N - Nkv) * H;
  };
  // The presents: the past's positions, the new keys (rotated) and values, zeros after.
  std::vector<double> pk(size_t(B * Nkv * P * H), 0.0), pv(pk.size(), 0.0), q(size_t(B * N * S * H));
  for (int64_t b = 0; b < B; ++b) {
    const ops::GqaSequence& sq = seqs[size_t(b)];
    for (int64_t n = 0; n < Nkv; ++n) {
      const size_t dst = size_t((b * Nkv + n) * P * H), src = size_t((b * Nkv + n) * L * H);
      for (int64_t i = 0; i < sq.past * H; ++i) {
        pk[dst + size_t(i)] = past_k[src + size_t(i)];
        pv[dst + size_t(i)] = past_v[src + size_t(i)];
      }
      for (int64_t s = 0; s < S; ++s) {
        double* k = pk.data() + dst + size_t((sq.past + s) * H);
        double* v = pv.data() + dst + size_t((sq.past + s) * H);
        std::copy_n(head(b, s, N + n), H, k);
        std::copy_n(head(b, s, N + Nkv + n), H, v);
        if (p.rotary) rotate(k, cos.data(), sin.data(), pos[size_t(b * S + s)], p.rotary_dim, p.interleaved);
      }
    }
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) {
        double* x = q.data() + ((b * N + n) * S + s) * H;
        std::copy_n(head(b, s, n), H, x);
        if (p.rotary) rotate(x, cos.data(), sin.data(), pos[size_t(b * S + s)], p.rotary_dim, p.interleaved);
      }
  }

  std::vector<double> bias, sinks;
  if (p.attention_bias) bias = nn::to_doubles(ctx.input(10));
  if (p.head_sink) sinks = nn::to_doubles(ctx.input(11));
  std::vector<double> out(size_t(B * S * N * H));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      const size_t kv = size_t((b * Nkv + n / G) * P * H);
      RowAttention attend{p.scale, p.softcap, p.smooth || p.head_sink, p.head_sink ? sinks[size_t(n)] : 0.0};
      for (int64_t s = 0; s < S; ++s) {
        const ops::KeyRange r = ops::gqa_keys(p, seqs[size_t(b)], s);
        auto add = [&](int64_t j) {  // attention_bias [B or 1, N or 1, S, total]
          if (!p.attention_bias || j >= p.total) return 0.0;
          const Shape& a = p.attention_bias_shape;
          return bias[size_t((((a[0] == 1 ? 0 : b) * a[1] + (a[1] == 1 ? 0 : n)) * S + s) * p.total + j)];
        };
        attend(q.data() + ((b * N + n) * S + s) * H, pk.data() + kv, pv.data() + kv, r.lo, r.hi, H, H,
               out.data() + (b * S + s) * N * H + n * H, add);
      }
    }
  const Shape present{B, Nkv, P, H};
  return outputs_of(ctx, {nn::tensor_from_doubles(p.dtype, {B, S, N * H}, out), nn::tensor_from_doubles(p.dtype, present, pk),
                          nn::tensor_from_doubles(p.dtype, present, pv)});
}

std::vector<Tensor> multi_head_attention(KernelContext& ctx) {
  const ops::MhaParams p = ops::mha_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const int64_t B = p.batch, S = p.seq, N = p.heads, H = p.head_size, Hv = p.v_head_size, L = p.kv_seq,
                P = p.past_len, T = p.total, D = p.hidden(), Dv = p.v_hidden();
  std::vector<double> q = nn::to_doubles(ctx.input(0)), key = nn::to_doubles(ctx.input(1)),
                      value = nn::to_doubles(ctx.input(2)), bias, past_k, past_v, mask, attn_bias;
  if (p.bias) bias = nn::to_doubles(ctx.input(3));
  if (p.past) {
    past_k = nn::to_doubles(ctx.input(6));
    past_v = nn::to_doubles(ctx.input(7));
  }
  if (p.mask != ops::MhaParams::Mask::None) mask = nn::to_doubles(ctx.input(4));
  if (p.attention_bias) attn_bias = nn::to_doubles(ctx.input(5));
  if (p.bias)
    for (int64_t i = 0; i < B * S; ++i)
      for (int64_t c = 0; c < D; ++c) q[size_t(i * D + c)] += bias[size_t(c)];
  // The presents [B, N, T, H] and [B, N, T, Hv]: the past, then the new keys and values (with bias).
  std::vector<double> pk(size_t(B * N * T * H)), pv(size_t(B * N * T * Hv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t t = 0; t < T; ++t) {
        double* k = pk.data() + ((b * N + n) * T + t) * H;
        double* v = pv.data() + ((b * N + n) * T + t) * Hv;
        for (int64_t c = 0; c < H; ++c) {
          const int64_t j = t - P;
          k[c] = t < P ? past_k[size_t(((b * N + n) * P + t) * H + c)]
                 : p.bnsh_kv ? key[size_t(((b * N + n) * L + j) * H + c)]
                             : key[size_t((b * L + j) * D + n * H + c)] + (p.bias ? bias[size_t(D + n * H + c)] : 0.0);
        }
        for (int64_t c = 0; c < Hv; ++c) {
          const int64_t j = t - P;
          v[c] = t < P ? past_v[size_t(((b * N + n) * P + t) * Hv + c)]
                 : p.bnsh_kv ? value[size_t(((b * N + n) * L + j) * Hv + c)]
                             : value[size_t((b * L + j) * Dv + n * Hv + c)] + (p.bias ? bias[size_t(2 * D + n * Hv + c)] : 0.0);
        }
      }
  RowAttention attend{p.scale, 0, false, 0};
  std::vector<double> out(size_t(B * S * Dv));
  const double mfv = p.mask_filter_value;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) {
        auto extra = [&](int64_t j) {
          double x = 0;
          if (p.mask == ops::MhaParams::Mask::Lengths && double(j) >= mask[size_t(b)]) x += mfv;
          if (p.mask == ops::MhaParams::Mask::Keys && mask[size_t(b * T + j)] == 0) x += mfv;
          if (p.causal && j > P + s) x += mfv;
          if (p.attention_bias) {
            const Shape& a = p.attention_bias_shape;
            x += attn_bias[size_t((((a[0] == 1 ? 0 : b) * a[1] + (a[1] == 1 ? 0 : n)) * S + s) * T + j)];
          }
          return x;
        };
        const size_t kv = size_t(b * N + n);
        attend(q.data() + (b * S + s) * D + n * H, pk.data() + kv * T * H, pv.data() + kv * T * Hv, 0, T, H, Hv,
               out.data() + (b * S + s) * Dv + n * Hv, extra);
      }
  return outputs_of(ctx, {nn::tensor_from_doubles(p.dtype, {B, S, Dv}, out), nn::tensor_from_doubles(p.dtype, {B, N, T, H}, pk),
                          nn::tensor_from_doubles(p.dtype, {B, N, T, Hv}, pv)});
}

std::vector<Tensor> onnx_attention(KernelContext& ctx) {
  const ops::OnnxAttentionParams p = ops::onnx_attention_params(ctx.node, ctx.opset, ctx.operands(), ctx.fail_fn());
  const int64_t B = p.batch, Nq = p.q_heads, Nkv = p.kv_heads, S = p.seq, L = p.kv_seq, H = p.head_size,
                Hv = p.v_head_size, P = p.past_len, T = p.total, G = p.group();
  const std::vector<double> q = nn::to_doubles(ctx.input(0)), key = nn::to_doubles(ctx.input(1)),
                            value = nn::to_doubles(ctx.input(2));
  std::vector<double> past_k, past_v, mask;
  if (p.past) {
    past_k = nn::to_doubles(ctx.input(4));
    past_v = nn::to_doubles(ctx.input(5));
  }
  if (p.mask != ops::OnnxAttentionParams::Mask::None) mask = nn::to_doubles(ctx.input(3));
  std::vector<int64_t> nonpad;
  if (p.nonpad) {
    const int64_t* v = ctx.input(6).data<int64_t>();
    nonpad.assign(v, v + B);
  }
  // The presents: the past, then the new keys and values.
  std::vector<double> pk(size_t(B * Nkv * T * H)), pv(size_t(B * Nkv * T * Hv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < Nkv; ++n)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t j = t - P;
        for (int64_t c = 0; c < H; ++c)
          pk[size_t(((b * Nkv + n) * T + t) * H + c)] =
              t < P ? past_k[size_t(((b * Nkv + n) * P + t) * H + c)]
              : p.three_d ? key[size_t((b * L + j) * Nkv * H + n * H + c)] : key[size_t(((b * Nkv + n) * L + j) * H + c)];
        for (int64_t c = 0; c < Hv; ++c)
          pv[size_t(((b * Nkv + n) * T + t) * Hv + c)] =
              t < P ? past_v[size_t(((b * Nkv + n) * P + t) * Hv + c)]
              : p.three_d ? value[size_t((b * L + j) * Nkv * Hv + n * Hv + c)] : value[size_t(((b * Nkv + n) * L + j) * Hv + c)];
      }
  // The mask's element for (b, n, s, key j < M): its shape right-aligned to [B, Nq, S, M], broadcast.
  Shape m4(4 - p.mask_shape.size(), 1);
  m4.insert(m4.end(), p.mask_shape.begin(), p.mask_shape.end());
  const double inf = std::numeric_limits<double>::infinity();
  RowAttention attend{p.scale, p.softcap, false, 0};
  std::vector<double> out(size_t(B * Nq * S * Hv)), qk(p.qk_output ? size_t(B * Nq * S * T) : 0);
  std::vector<double> probs(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < Nq; ++n)
      for (int64_t s = 0; s < S; ++s) {
        auto bias = [&](int64_t j) {
          double x = 0;
          if (p.mask != ops::OnnxAttentionParams::Mask::None) {
            if (j >= p.mask_keys) return -inf;
            const double m = mask[size_t((((m4[0] == 1 ? 0 : b) * m4[1] + (m4[1] == 1 ? 0 : n)) * m4[2] + (m4[2] == 1 ? 0 : s)) *
                                             m4[3] + j)];
            if (p.mask == ops::OnnxAttentionParams::Mask::Bool) {
              if (m == 0) return -inf;
            } else {
              x += m;
            }
          }
          const int64_t c = s + (p.past ? P : p.nonpad ? nonpad[size_t(b)] - S : 0);  // the row's position
          if (p.causal && j > c) return -inf;
          if (p.left_window >= 0 && j < c - p.left_window) return -inf;
          if (p.right_window >= 0 && j > c + p.right_window) return -inf;
          if (p.nonpad && j >= nonpad[size_t(b)]) return -inf;
          return x;
        };
        const double* qr = p.three_d ? q.data() + (b * S + s) * Nq * H + n * H : q.data() + ((b * Nq + n) * S + s) * H;
        double* yr = p.three_d ? out.data() + (b * S + s) * Nq * Hv + n * Hv : out.data() + ((b * Nq + n) * S + s) * Hv;
        const size_t kv = size_t(b * Nkv + n / G);
        attend(qr, pk.data() + kv * T * H, pv.data() + kv * T * Hv, 0, T, H, Hv, yr, bias, &probs);
        if (!p.qk_output) continue;
        double* row = qk.data() + ((b * Nq + n) * S + s) * T;
        for (int64_t j = 0; j < T; ++j) {
          if (p.qk_mode == 3) {
            row[j] = probs[size_t(j)];
            continue;
          }
          double dot = 0;
          for (int64_t c = 0; c < H; ++c) dot += qr[c] * pk[kv * T * H + size_t(j * H + c)];
          row[j] = RowAttention::score(dot, p.scale, p.softcap) + (p.qk_mode == 2 ? bias(j) : 0.0);
        }
      }
  const Shape y = p.three_d ? Shape{B, S, Nq * Hv} : Shape{B, Nq, S, Hv};
  std::vector<Tensor> r{nn::tensor_from_doubles(p.dtype, y, out), nn::tensor_from_doubles(p.dtype, {B, Nkv, T, H}, pk),
                        nn::tensor_from_doubles(p.dtype, {B, Nkv, T, Hv}, pv)};
  if (p.qk_output) r.push_back(nn::tensor_from_doubles(p.dtype, {B, Nq, S, T}, qk));
  return outputs_of(ctx, std::move(r));
}

}  // namespace

void register_attention(KernelRegistry& r) {
  r.add("GroupQueryAttention", group_query_attention, ir::kMsDomain);
  r.add("MultiHeadAttention", multi_head_attention, ir::kMsDomain);
  r.add("Attention", onnx_attention);
}

}  // namespace onnxgpu::cpu
