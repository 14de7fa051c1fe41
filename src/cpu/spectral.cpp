// Spectral ops: DFT, STFT, the window generators (HannWindow, HammingWindow, BlackmanWindow) and
// MelWeightMatrix. Definitions and checks in src/ops/spectral; sums in double with the twiddle angle
// reduced exactly (k * n mod L), so long transforms keep their accuracy.
#include <cmath>
#include <numbers>
#include <optional>

#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/spectral.h"

namespace onnxgpu::cpu {
namespace {

// An optional scalar integer input's value.
std::optional<int64_t> scalar_input(const KernelContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return std::nullopt;
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    ctx.fail(std::string("input '") + what + "' must be int32 or int64, got " + t.describe());
  if (t.numel() != 1) ctx.fail(std::string("input '") + what + "' must be a scalar, got " + t.describe());
  return t.int_at(0);
}

// e^(sign 2 pi i k n / L) as (cos, sin), the angle reduced modulo L first.
void twiddle(int64_t k, int64_t n, int64_t L, double sign, double& c, double& s) {
  double a = sign * 2.0 * std::numbers::pi * double((k % L) * (n % L) % L) / double(L);
  c = std::cos(a), s = std::sin(a);
}

std::vector<Tensor> dft(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!kFloatTypes.has(x.dtype())) ctx.fail("input 'input' must be a float tensor, got " + x.describe());
  auto p = ops::dft_params(ctx.node, ctx.opset, x.shape(), scalar_input(ctx, 1, "dft_length"),
                           ctx.opset >= 20 ? scalar_input(ctx, 2, "axis") : std::nullopt, ctx.fail_fn());
  const Shape& xs = x.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < p.axis; ++d) outer *= xs[size_t(d)];
  for (size_t d = size_t(p.axis) + 1; d + 1 < xs.size(); ++d) inner *= xs[size_t(d)];
  const int64_t cin = xs.back(), cout = p.out.back();
  std::vector<double> xv = nn::to_doubles(x);
  std::vector<double> y(size_t(shape_numel(p.out)));
  const double sign = p.inverse ? 1.0 : -1.0, scale = p.inverse ? 1.0 / double(p.length) : 1.0;
  // Element (o, n, i) of the input as a complex number (0 beyond the input's length).
  auto at = [&](int64_t o, int64_t n, int64_t i, double& re, double& im) {
    re = im = 0;
    if (n >= p.in_len) return;
    size_t base = size_t(((o * p.in_len + n) * inner + i) * cin);
    re = xv[base];
    if (cin == 2) im = xv[base + 1];
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < p.out_len; ++k)
      for (int64_t i = 0; i < inner; ++i) {
        double sre = 0, sim = 0;
        for (int64_t n = 0; n < p.length; ++n) {
          double re, im;
          if (p.real_out) {  // bin n of the Hermitian spectrum: given, or the conjugate of bin L - n
            if (n < p.in_len) at(o, n, i, re, im);
            else if (p.length - n < p.in_len) at(o, p.length - n, i, re, im), im = -im;
            else re = im = 0;
          } else {
            at(o, n, i, re, im);
          }
          double c, s;
          twiddle(k, n, p.length, sign, c, s);
          sre += re * c - im * s;
          sim += re * s + im * c;
        }
        size_t out = size_t(((o * p.out_len + k) * inner + i) * cout);
        y[out] = sre * scale;
        if (cout == 2) y[out + 1] = sim * scale;
      }
  return {nn::tensor_from_doubles(x.dtype(), p.out, y)};
}

std::vector<Tensor> stft(KernelContext& ctx) {
  const Tensor& sig = ctx.input(0);
  if (!kFloatTypes.has(sig.dtype())) ctx.fail("input 'signal' must be a float tensor, got " + sig.describe());
  std::optional<int64_t> step = scalar_input(ctx, 1, "frame_step");
  if (!step) ctx.fail("input 'frame_step' is required");
  std::optional<int64_t> wlen;
  std::vector<double> w;
  if (ctx.has_input(2)) {
    const Tensor& wt = ctx.input(2);
    if (wt.rank() != 1) ctx.fail("input 'window' must be 1-D, got " + wt.describe());
    wlen = wt.dim(0);
    w = nn::to_doubles(wt);
  }
  auto p = ops::stft_params(ctx.node, sig.shape(), *step, wlen, scalar_input(ctx, 3, "frame_length"), ctx.fail_fn());
  if (w.empty()) w.assign(size_t(p.frame_length), 1.0);
  std::vector<double> sv = nn::to_doubles(sig);
  const int64_t c = p.complex_in ? 2 : 1;
  std::vector<double> y(size_t(shape_numel(p.out)));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t f = 0; f < p.frames; ++f)
      for (int64_t k = 0; k < p.bins; ++k) {
        double sre = 0, sim = 0;
        for (int64_t n = 0; n < p.frame_length; ++n) {
          size_t at = size_t((b * p.signal_len + f * p.frame_step + n) * c);
          double re = sv[at] * w[size_t(n)], im = c == 2 ? sv[at + 1] * w[size_t(n)] : 0.0;
          double tc, ts;
          twiddle(k, n, p.frame_length, -1.0, tc, ts);
          sre += re * tc - im * ts;
          sim += re * ts + im * tc;
        }
        size_t out = size_t(((b * p.frames + f) * p.bins + k) * 2);
        y[out] = sre, y[out + 1] = sim;
      }
  return {nn::tensor_from_doubles(sig.dtype(), p.out, y)};
}

Kernel window(ops::WindowKind kind) {
  return [kind](KernelContext& ctx) -> std::vector<Tensor> {
    std::optional<int64_t> size = scalar_input(ctx, 0, "size");
    if (!size) ctx.fail("input 'size' is required");
    if (*size < 0) ctx.fail("input 'size' must not be negative, got " + std::to_string(*size));
    DType t = ops::window_dtype(ctx.node, ctx.fail_fn());
    double a0, a1, a2, D = ops::window_denominator(ctx.node, *size);
    ops::window_coefficients(kind, a0, a1, a2);
    std::vector<double> v(static_cast<size_t>(*size));
    for (int64_t n = 0; n < *size; ++n) {
      double a = 2.0 * std::numbers::pi * double(n) / D;
      v[size_t(n)] = a0 - a1 * std::cos(a) + a2 * std::cos(2.0 * a);
    }
    return {nn::tensor_from_doubles(t, {*size}, v)};
  };
}

std::vector<Tensor> mel_weight_matrix(KernelContext& ctx) {
  auto num = scalar_input(ctx, 0, "num_mel_bins"), len = scalar_input(ctx, 1, "dft_length"),
       rate = scalar_input(ctx, 2, "sample_rate");
  if (!num || !len || !rate) ctx.fail("inputs 'num_mel_bins', 'dft_length' and 'sample_rate' are required");
  auto edge = [&](size_t i, const char* what) {
    const Tensor& t = ctx.input(i);
    if (!kFloatTypes.has(t.dtype()) || t.numel() != 1) ctx.fail(std::string("input '") + what + "' must be a float scalar, got " + t.describe());
    return nn::to_doubles(t)[0];
  };
  double lo = edge(3, "lower_edge_hertz"), hi = edge(4, "upper_edge_hertz");
  DType t = ops::window_dtype(ctx.node, ctx.fail_fn());
  std::vector<int64_t> e = ops::mel_bins(*num, *len, *rate, lo, hi, ctx.fail_fn());
  const int64_t bins = *len / 2 + 1;
  std::vector<double> v(size_t(bins * *num));
  for (int64_t j = 0; j < bins; ++j)
    for (int64_t i = 0; i < *num; ++i) v[size_t(j * *num + i)] = ops::mel_weight(e, i, j);
  return {nn::tensor_from_doubles(t, {bins, *num}, v)};
}

}  // namespace

void register_spectral(KernelRegistry& r) {
  r.add("DFT", dft);
  r.add("STFT", stft);
  r.add("HannWindow", window(ops::WindowKind::Hann));
  r.add("HammingWindow", window(ops::WindowKind::Hamming));
  r.add("BlackmanWindow", window(ops::WindowKind::Blackman));
  r.add("MelWeightMatrix", mel_weight_matrix);
}

}  // namespace onnxgpu::cpu
