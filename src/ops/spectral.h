// The spectral ops (DFT 17/20, STFT 17, HannWindow, HammingWindow, BlackmanWindow 17, MelWeightMatrix 17):
// the rules the CPU reference (src/cpu/spectral.cpp) and the GPU kernels (src/webgpu/kernels/spectral.cpp)
// share: attributes and inputs read and checked, output shapes, and the definitions:
//   DFT   Y[k] = s * sum_n x[n] e^(-+2 pi i k n / L) along `axis` (L the transform length: dft_length, or
//         the axis' length; the signal is cut or zero-padded to L); inverse: + and s = 1 / L; onesided:
//         bins 0 .. L/2 of a forward transform; inverse onesided: the input holds bins 0 .. m-1 of a
//         Hermitian spectrum (L = dft_length or 2 (m - 1)), the output the real signal (last dim 1).
//   STFT  frame f, bin k: sum_{n < frame_length} signal[f * step + n] w[n] e^(-2 pi i k n / frame_length).
//   Windows of N points, D = N (periodic) or N - 1: Hann 0.5 - 0.5 cos(2 pi n / D), Hamming
//         25/46 - 21/46 cos(2 pi n / D), Blackman 0.42 - 0.5 cos(2 pi n / D) + 0.08 cos(4 pi n / D).
//   MelWeightMatrix: triangles between the mel-spaced bins (mel_bins), as the ONNX reference builds them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/tensor.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

struct DftParams {
  int64_t axis = 1;         // of the input
  int64_t length = 0;       // L, the transform length
  int64_t in_len = 0;       // the input's length along the axis
  int64_t out_len = 0;      // the output's length along the axis
  bool inverse = false;
  bool onesided = false;
  bool complex_in = false;  // the input's last dim is 2 (else 1: real)
  bool real_out = false;    // inverse onesided: the output's last dim is 1
  Shape out;
};

// `dft_length` and `axis_input` (opset 20's inputs 1 and 2) when given.
DftParams dft_params(const ir::Node& n, int64_t opset, const Shape& x, std::optional<int64_t> dft_length,
                     std::optional<int64_t> axis_input, const Fail& fail);

struct StftParams {
  int64_t batch = 0, signal_len = 0, frame_step = 0, frame_length = 0, frames = 0, bins = 0;
  bool complex_in = false;
  bool onesided = true;
  Shape out;  // [batch, frames, bins, 2]
};

// `frame_length` (input 3) when given; `window_len` the window's length when input 2 is given.
StftParams stft_params(const ir::Node& n, const Shape& signal, int64_t frame_step, std::optional<int64_t> window_len,
                       std::optional<int64_t> frame_length, const Fail& fail);

enum class WindowKind { Hann, Hamming, Blackman };
// The window's coefficients: a0 - a1 cos(2 pi n / D) + a2 cos(4 pi n / D).
void window_coefficients(WindowKind k, double& a0, double& a1, double& a2);
// The output dtype (attribute output_datatype) and the denominator D for `size` points.
DType window_dtype(const ir::Node& n, const Fail& fail);
double window_denominator(const ir::Node& n, int64_t size);

// MelWeightMatrix: the num_mel_bins + 2 bin edges (spectrogram bin indices), as the reference computes them.
std::vector<int64_t> mel_bins(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower_hz,
                              double upper_hz, const Fail& fail);
// Weight of spectrogram bin j for mel bin i, from the edges (the reference's two loops, the second
// overwriting the centre).
double mel_weight(const std::vector<int64_t>& edges, int64_t i, int64_t j);

}  // namespace onnxgpu::ops
