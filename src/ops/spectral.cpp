#include "ops/spectral.h"

#include <cmath>

namespace onnxgpu::ops {

DftParams dft_params(const ir::Node& n, int64_t opset, const Shape& x, std::optional<int64_t> dft_length,
                     std::optional<int64_t> axis_input, const Fail& fail) {
  DftParams p;
  const int64_t r = int64_t(x.size());
  if (r < 2) raise(fail, "input 'input' must have rank >= 2 ([batch, signal dims..., 1 or 2]), got shape " + shape_str(x));
  if (x.back() != 1 && x.back() != 2)
    raise(fail, "the last dim of input 'input' " + shape_str(x) + " must be 1 (real) or 2 (complex)");
  p.complex_in = x.back() == 2;
  p.inverse = n.attr_int("inverse", 0) != 0;
  p.onesided = n.attr_int("onesided", 0) != 0;
  int64_t axis = opset >= 20 ? axis_input.value_or(-2) : n.attr_int("axis", 1);
  if (opset >= 20 && n.has_attr("axis")) raise(fail, "DFT-20 takes the axis as input 2, not as an attribute");
  // Opset 20: [-r, -2] or [0, r - 2] (counted on the input's rank, its last dim not a signal axis).
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r - 2)
    raise(fail, "axis " + std::to_string(axis < 0 ? axis - r : axis) + " is not a signal axis of input 'input' " + shape_str(x));
  p.axis = axis;
  p.in_len = x[size_t(axis)];
  if (dft_length && *dft_length <= 0) raise(fail, "input 'dft_length' must be positive, got " + std::to_string(*dft_length));
  if (p.inverse && p.onesided) {
    if (!p.complex_in) raise(fail, "an inverse onesided DFT takes a complex input (last dim 2), got " + shape_str(x));
    p.length = dft_length ? *dft_length : 2 * (p.in_len - 1);
    if (p.length <= 0) raise(fail, "an inverse onesided DFT of " + std::to_string(p.in_len) + " bins has no length");
    p.out_len = p.length;
    p.real_out = true;
  } else {
    p.length = dft_length ? *dft_length : p.in_len;
    if (p.length <= 0) raise(fail, "the DFT of an empty axis");
    p.out_len = p.onesided ? p.length / 2 + 1 : p.length;
  }
  p.out = x;
  p.out[size_t(axis)] = p.out_len;
  p.out.back() = p.real_out ? 1 : 2;
  return p;
}

StftParams stft_params(const ir::Node& n, const Shape& signal, int64_t frame_step, std::optional<int64_t> window_len,
                       std::optional<int64_t> frame_length, const Fail& fail) {
  StftParams p;
  if (signal.size() != 3 || (signal[2] != 1 && signal[2] != 2))
    raise(fail, "input 'signal' must have shape [batch, signal_length, 1 or 2], got " + shape_str(signal));
  p.batch = signal[0];
  p.signal_len = signal[1];
  p.complex_in = signal[2] == 2;
  p.onesided = n.attr_int("onesided", 1) != 0;
  if (frame_step <= 0) raise(fail, "input 'frame_step' must be positive, got " + std::to_string(frame_step));
  p.frame_step = frame_step;
  if (window_len && frame_length && *window_len != *frame_length)
    raise(fail, "input 'window' has " + std::to_string(*window_len) + " values but 'frame_length' is " + std::to_string(*frame_length));
  if (!window_len && !frame_length) raise(fail, "needs input 'window' or input 'frame_length'");
  p.frame_length = window_len ? *window_len : *frame_length;
  if (p.frame_length <= 0 || p.frame_length > p.signal_len)
    raise(fail, "the frame length " + std::to_string(p.frame_length) + " must be in [1, " + std::to_string(p.signal_len) +
                    "] (the signal's length)");
  if (p.onesided && p.complex_in) raise(fail, "onesided=1 takes a real signal (last dim 1)");
  p.frames = (p.signal_len - p.frame_length) / p.frame_step + 1;
  p.bins = p.onesided ? p.frame_length / 2 + 1 : p.frame_length;
  p.out = {p.batch, p.frames, p.bins, 2};
  return p;
}

void window_coefficients(WindowKind k, double& a0, double& a1, double& a2) {
  a2 = 0;
  switch (k) {
    case WindowKind::Hann: a0 = 0.5, a1 = 0.5; break;
    case WindowKind::Hamming: a0 = 25.0 / 46.0, a1 = 21.0 / 46.0; break;
    case WindowKind::Blackman: a0 = 0.42, a1 = 0.5, a2 = 0.08; break;
  }
}

DType window_dtype(const ir::Node& n, const Fail& fail) {
  DType t = DType(int32_t(n.attr_int("output_datatype", int64_t(DType::Float32))));
  if (!kNumericTypes.has(t))
    raise(fail, "attribute 'output_datatype' (" + std::to_string(n.attr_int("output_datatype", 1)) + ") is not a numeric type");
  return t;
}

double window_denominator(const ir::Node& n, int64_t size) {
  return n.attr_int("periodic", 1) != 0 ? double(size) : double(size - 1);
}

std::vector<int64_t> mel_bins(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower_hz,
                              double upper_hz, const Fail& fail) {
  if (num_mel_bins <= 0) raise(fail, "input 'num_mel_bins' must be positive, got " + std::to_string(num_mel_bins));
  if (dft_length <= 0) raise(fail, "input 'dft_length' must be positive, got " + std::to_string(dft_length));
  if (sample_rate <= 0) raise(fail, "input 'sample_rate' must be positive, got " + std::to_string(sample_rate));
  if (!(lower_hz >= 0 && lower_hz < upper_hz))
    raise(fail, "the edges must satisfy 0 <= lower_edge_hertz < upper_edge_hertz, got " + std::to_string(lower_hz) +
                    " and " + std::to_string(upper_hz));
  const double low_mel = 2595.0 * std::log10(1.0 + lower_hz / 700.0);
  const double high_mel = 2595.0 * std::log10(1.0 + upper_hz / 700.0);
  const double step = (high_mel - low_mel) / double(num_mel_bins + 2);  // the reference divides by the edge count
  const int64_t bins = dft_length / 2 + 1;
  std::vector<int64_t> edges(size_t(num_mel_bins + 2));
  for (int64_t i = 0; i < num_mel_bins + 2; ++i) {
    double hz = 700.0 * (std::pow(10.0, (double(i) * step + low_mel) / 2595.0) - 1.0);
    edges[size_t(i)] = int64_t(std::floor(double(dft_length + 1) * hz / double(sample_rate)));
    if (edges[size_t(i)] < 0 || edges[size_t(i)] >= bins + (i == num_mel_bins + 1 ? 1 : 0))
      raise(fail, "mel bin edge " + std::to_string(edges[size_t(i)]) + " falls outside the " + std::to_string(bins) +
                      " spectrogram bins (upper_edge_hertz beyond sample_rate / 2?)");
  }
  return edges;
}

double mel_weight(const std::vector<int64_t>& e, int64_t i, int64_t j) {
  const int64_t lo = e[size_t(i)], c = e[size_t(i + 1)], hi = e[size_t(i + 2)];
  if (hi > c && j >= c && j < hi) return double(hi - j) / double(hi - c);
  if (c == lo) return j == c ? 1.0 : 0.0;
  if (j >= lo && j <= c) return double(j - lo) / double(c - lo);
  return 0.0;
}

}  // namespace onnxgpu::ops
