// GridSample and AffineGrid: sampling an image at the points of a grid, and the grid of an affine
// transform. The rules (attributes, shapes, the per-axis coordinate and tap arithmetic of the ONNX
// reference) are in src/ops/grid; values are computed in double.
#include <cmath>
#include <vector>

#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/grid.h"

namespace onnxgpu::cpu {
namespace {

using ops::GridSampleAttrs;

std::vector<Tensor> grid_sample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  if (!kFloatTypes.has(x.dtype())) ctx.fail("input 'X' must be a float tensor, got " + x.describe());
  if (!kFloatTypes.has(grid.dtype())) ctx.fail("input 'grid' must be a float tensor, got " + grid.describe());
  Shape out_shape;
  GridSampleAttrs a = ops::grid_sample_attrs(ctx.node, x.shape(), grid.shape(), out_shape, ctx.fail_fn());
  const size_t d = size_t(x.rank()) - 2;
  const int64_t N = x.dim(0), C = x.dim(1);
  Shape in_sp(x.shape().begin() + 2, x.shape().end());
  const int64_t in_plane = shape_numel(in_sp);
  const int64_t points = shape_numel(out_shape) / std::max<int64_t>(1, N * C);
  std::vector<double> xv = nn::to_doubles(x), gv = nn::to_doubles(grid);
  std::vector<double> y(size_t(shape_numel(out_shape)), 0.0);
  const int64_t K = a.taps();
  // Per point and axis: the taps' indices (-1 reads 0) and weights.
  std::vector<int64_t> idx(d * size_t(K));
  std::vector<double> w(d * size_t(K));
  std::vector<int64_t> t(d);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < points; ++p) {
      const double* g = &gv[size_t((n * points + p) * int64_t(d))];
      for (size_t k = 0; k < d; ++k) {
        int64_t len = in_sp[k];
        double c = ops::grid_coordinate(g[d - 1 - k], len, a);  // grid values list the axes backwards
        int64_t* ik = &idx[k * size_t(K)];
        double* wk = &w[k * size_t(K)];
        if (a.mode == GridSampleAttrs::Mode::Nearest) {
          ik[0] = ops::grid_tap_index(int64_t(c), len, a);
          wk[0] = 1;
        } else {
          double base = std::floor(c), f = c - base;
          int64_t b = int64_t(base);
          if (a.mode == GridSampleAttrs::Mode::Linear) {
            wk[0] = 1 - f, wk[1] = f;
            for (int64_t j = 0; j < 2; ++j) ik[j] = ops::grid_tap_index(b + j, len, a);
          } else {
            ops::grid_cubic_coeffs(f, wk);
            for (int64_t j = 0; j < 4; ++j) ik[j] = ops::grid_tap_index(b - 1 + j, len, a);
          }
        }
      }
      for (int64_t ch = 0; ch < C; ++ch) {
        const double* plane = &xv[size_t((n * C + ch) * in_plane)];
        double sum = 0;
        std::fill(t.begin(), t.end(), 0);
        while (true) {  // every combination of taps
          double weight = 1;
          int64_t off = 0;
          bool zero = false;
          for (size_t k = 0; k < d; ++k) {
            int64_t i = idx[k * size_t(K) + size_t(t[k])];
            if (i < 0) zero = true;
            off = off * in_sp[k] + i;
            weight *= w[k * size_t(K) + size_t(t[k])];
          }
          if (!zero) sum += weight * plane[off];
          size_t k = d;
          while (k > 0 && ++t[k - 1] == K) t[--k] = 0;
          if (k == 0) break;
        }
        y[size_t((n * C + ch) * points + p)] = sum;
      }
    }
  return {nn::tensor_from_doubles(x.dtype(), out_shape, y)};
}

std::vector<Tensor> affine_grid(KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  const Tensor& size_t_ = ctx.input(1);
  if (!kFloatTypes.has(theta.dtype())) ctx.fail("input 'theta' must be a float tensor, got " + theta.describe());
  if (size_t_.dtype() != DType::Int64) ctx.fail("input 'size' must be int64, got " + size_t_.describe());
  std::vector<int64_t> size(size_t(size_t_.numel()));
  for (int64_t i = 0; i < size_t_.numel(); ++i) size[size_t(i)] = size_t_.data<int64_t>()[i];
  Shape out_shape = ops::affine_grid_shape(theta.shape(), size, ctx.fail_fn());
  bool align = ctx.node.attr_int("align_corners", 0) != 0;
  const int64_t d = int64_t(size.size()) - 2;
  Shape sp(size.begin() + 2, size.end());
  const int64_t points = shape_numel(sp);
  std::vector<double> th = nn::to_doubles(theta);
  std::vector<double> y(size_t(shape_numel(out_shape)));
  std::vector<int64_t> pos(static_cast<size_t>(d));
  for (int64_t n = 0; n < size[0]; ++n)
    for (int64_t p = 0; p < points; ++p) {
      for (int64_t k = d, rest = p; k-- > 0;) pos[size_t(k)] = rest % sp[size_t(k)], rest /= sp[size_t(k)];
      // The base point (x, y[, z], 1): x along the last axis.
      std::vector<double> base(size_t(d) + 1, 1.0);
      for (int64_t k = 0; k < d; ++k) base[size_t(k)] = ops::affine_grid_base(pos[size_t(d - 1 - k)], sp[size_t(d - 1 - k)], align);
      for (int64_t r = 0; r < d; ++r) {
        double s = 0;
        for (int64_t c = 0; c <= d; ++c) s += th[size_t((n * d + r) * (d + 1) + c)] * base[size_t(c)];
        y[size_t((n * points + p) * d + r)] = s;
      }
    }
  return {nn::tensor_from_doubles(theta.dtype(), out_shape, y)};
}

}  // namespace

void register_grid(KernelRegistry& r) {
  r.add("GridSample", grid_sample);
  r.add("AffineGrid", affine_grid);
}

}  // namespace onnxgpu::cpu
