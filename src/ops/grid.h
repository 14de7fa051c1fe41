// GridSample (opsets 16, 20, 22) and AffineGrid (opset 20): the rules the CPU reference
// (src/cpu/grid.cpp) and the GPU kernels (src/webgpu/kernels/grid.cpp) share: attributes, checks and
// output shapes, and GridSample's per-axis arithmetic as the ONNX reference implementation computes it
// (the GPU's WGSL follows the same steps in f32):
//   - a grid value v in [-1, 1] of spatial axis k (the grid's last dim lists the axes backwards: x, the
//     last axis, first) maps to x = (v + 1) / 2 * (n - 1) with align_corners, else ((v + 1) * n - 1) / 2;
//   - nearest rounds x half to even; then a coordinate outside [lo, hi] (align_corners: [0, n - 1], else
//     [-0.5, n - 0.5]) is clamped to [0, n - 1] (border) or reflected into [lo, hi] (reflection);
//   - linear reads taps floor(x) + {0, 1} with weights 1 - f, f (f = x - floor(x)); cubic taps
//     floor(x) + {-1, 0, 1, 2} with cubic_coeffs(f) (A = -0.75); a tap's index outside [0, n) reads 0
//     (zeros), is clamped (border) or reflected and truncated (reflection); the taps of every axis
//     multiply (the reference interpolates one axis at a time, which is the same sum).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/tensor.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

struct GridSampleAttrs {
  enum class Mode { Linear, Nearest, Cubic } mode = Mode::Linear;
  enum class Padding { Zeros, Border, Reflection } padding = Padding::Zeros;
  bool align_corners = false;
  int64_t taps() const { return mode == Mode::Linear ? 2 : mode == Mode::Cubic ? 4 : 1; }
};

// The node's attributes (opset 16's names bilinear / bicubic too), checked against X and Grid's shapes;
// the output shape [N, C, grid's spatial dims...] in `out`.
GridSampleAttrs grid_sample_attrs(const ir::Node& n, const Shape& x, const Shape& grid, Shape& out, const Fail& fail);

// The input coordinate of grid value v along an axis of n elements (denormalized).
inline double grid_denormalize(double v, int64_t n, bool align_corners) {
  return align_corners ? (v + 1) / 2 * double(n - 1) : ((v + 1) * double(n) - 1) / 2;
}

// The bounds a coordinate is reflected into.
inline double grid_low(bool align_corners) { return align_corners ? 0.0 : -0.5; }
inline double grid_high(int64_t n, bool align_corners) { return align_corners ? double(n - 1) : double(n) - 0.5; }

// x reflected into [lo, hi] (the reference's _gs_reflect).
inline double grid_reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (x < lo) {
    double dx = lo - x;
    double k = std::trunc(dx / range), r = dx - k * range;
    return std::fmod(k, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    double k = std::trunc(dx / range), r = dx - k * range;
    return std::fmod(k, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

// The coordinate after nearest's rounding and the padding of an outside coordinate.
inline double grid_coordinate(double v, int64_t n, const GridSampleAttrs& a) {
  double x = grid_denormalize(v, n, a.align_corners);
  if (a.mode == GridSampleAttrs::Mode::Nearest) x = std::nearbyint(x);  // half to even, as numpy's rint
  double lo = grid_low(a.align_corners), hi = grid_high(n, a.align_corners);
  if (x < lo || x > hi) {
    if (a.padding == GridSampleAttrs::Padding::Border) x = std::clamp(x, 0.0, double(n - 1));
    else if (a.padding == GridSampleAttrs::Padding::Reflection) x = grid_reflect(x, lo, hi);
  }
  return x;
}

// A tap's index along an axis of n elements: in [0, n), or -1 (reads 0) with zeros padding.
inline int64_t grid_tap_index(int64_t i, int64_t n, const GridSampleAttrs& a) {
  if (a.padding == GridSampleAttrs::Padding::Zeros) return i >= 0 && i < n ? i : -1;
  if (a.padding == GridSampleAttrs::Padding::Border) return std::clamp<int64_t>(i, 0, n - 1);
  return int64_t(grid_reflect(double(i), grid_low(a.align_corners), grid_high(n, a.align_corners)));
}

// The cubic convolution weights of taps -1, 0, 1, 2 for fraction t (A = -0.75).
inline void grid_cubic_coeffs(double t, double c[4]) {
  const double A = -0.75;
  double x = std::fabs(t);
  c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
  c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

// AffineGrid: theta [N, 2, 3] with size (N, C, H, W), or [N, 3, 4] with (N, C, D, H, W); the output
// grid [N, H, W, 2] / [N, D, H, W, 3]. `size` is input 1's values.
Shape affine_grid_shape(const Shape& theta, const std::vector<int64_t>& size, const Fail& fail);

// The base grid coordinate of index i along an axis of n elements (-1 .. 1).
inline double affine_grid_base(int64_t i, int64_t n, bool align_corners) {
  if (align_corners) return n > 1 ? -1.0 + 2.0 * double(i) / double(n - 1) : -1.0;  // one element: -1, as the reference
  return (2.0 * double(i) + 1.0) / double(n) - 1.0;
}

}  // namespace onnxgpu::ops
