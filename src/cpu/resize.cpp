// Resize (opsets 10, 11, 13, 18, 19) and Upsample (1, 7, 9). Follows the ONNX reference implementation:
// each output coordinate is mapped to an input coordinate (coordinate_transformation_mode), then
// nearest picks one input element and linear / cubic weight the neighbours (edge-clamped), one axis at a
// time (the weights of every axis are separable). Values are computed in double. The parameters and
// the per-axis taps come from src/ops/resize (shared with the GPU kernel).
#include <cmath>
#include <cstring>

#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/resize.h"

namespace onnxgpu::cpu {
namespace {

using ops::ResizeParams;

// One output position along an axis: input taps (clamped index, weight), or outside (extrapolate).
struct AxisTaps {
  bool outside = false;
  std::vector<std::pair<int64_t, double>> taps;
};

std::vector<AxisTaps> axis_taps(const ResizeParams& p, size_t a, int64_t in) {
  std::vector<AxisTaps> res;
  for (const ops::AxisSample& s : ops::axis_samples(p, a, in)) {
    AxisTaps t;
    t.outside = s.outside;
    for (size_t k = 0; k < s.weights.size(); ++k)
      if (s.weights[k] != 0) t.taps.emplace_back(std::clamp<int64_t>(s.first + int64_t(k), 0, in - 1), s.weights[k]);
    res.push_back(std::move(t));
  }
  return res;
}

Tensor run_resize(const KernelContext& ctx, const Tensor& X, const ResizeParams& p) {
  size_t r = size_t(X.rank());
  std::vector<std::vector<AxisTaps>> taps;
  for (size_t a = 0; a < r; ++a) taps.push_back(axis_taps(p, a, X.dim(int64_t(a))));
  if (p.mode == "nearest") {
    // A gather (works for every dtype, strings included); tf_crop_and_resize may extrapolate.
    Tensor Y = X.dtype() == DType::String ? Tensor::strings(p.out, std::vector<std::string>(size_t(shape_numel(p.out))))
                                          : Tensor(X.dtype(), p.out);
    std::vector<int64_t> st = shape_strides(X.shape());
    std::vector<int64_t> idx(r, 0);
    size_t es = dtype_size(X.dtype());
    for (int64_t o = 0; o < Y.numel(); ++o, nn::next_index(idx, p.out)) {
      int64_t src = 0;
      bool outside = false;
      for (size_t a = 0; a < r; ++a) {
        const AxisTaps& t = taps[a][size_t(idx[a])];
        if (t.outside) { outside = true; break; }
        src += t.taps[0].first * st[a];
      }
      if (X.dtype() == DType::String) {
        Y.string_data()[size_t(o)] = outside ? std::string() : X.string_data()[size_t(src)];
      } else if (outside) {
        visit_dtype(X.dtype(), [&]<class T>() { Y.data<T>()[o] = nn::from_double<T>(p.extrapolation); });
      } else {
        std::memcpy(static_cast<std::byte*>(Y.raw()) + o * es, static_cast<const std::byte*>(X.raw()) + src * es, es);
      }
    }
    return Y;
  }
  if (X.dtype() == DType::String) ctx.fail("mode '" + p.mode + "' cannot interpolate strings");
  // Separable interpolation, one axis at a time.
  std::vector<double> cur = nn::to_doubles(X);
  Shape cur_shape = X.shape();
  for (size_t a = 0; a < r; ++a) {
    int64_t in = cur_shape[a], out = p.out[a];
    bool identity = in == out && std::all_of(taps[a].begin(), taps[a].end(), [&](const AxisTaps& t) {
      return !t.outside && t.taps.size() == 1 && t.taps[0].second == 1.0 && t.taps[0].first == &t - taps[a].data();
    });
    if (identity) continue;
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= cur_shape[d];
    for (size_t d = a + 1; d < r; ++d) inner *= cur_shape[d];
    std::vector<double> next(static_cast<size_t>(outer * out * inner));
    for (int64_t i = 0; i < outer; ++i)
      for (int64_t o = 0; o < out; ++o) {
        const AxisTaps& t = taps[a][size_t(o)];
        double* dst = next.data() + (i * out + o) * inner;
        if (t.outside) {
          std::fill(dst, dst + inner, p.extrapolation);
          continue;
        }
        std::fill(dst, dst + inner, 0.0);
        for (const auto& [src, wt] : t.taps) {
          const double* s = cur.data() + (i * in + src) * inner;
          for (int64_t k = 0; k < inner; ++k) dst[k] += wt * s[k];
        }
      }
    cur.swap(next);
    cur_shape[a] = out;
  }
  return nn::tensor_from_doubles(X.dtype(), p.out, cur);
}

std::vector<Tensor> resize(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  auto given = [&](size_t i) { return ctx.has_input(i) && ctx.input(i).numel() > 0; };
  auto input = [&](size_t i, const char*) -> const Tensor& { return ctx.input(i); };
  auto fail = [&](const std::string& m) { ctx.fail(m); };
  return {run_resize(ctx, X, ops::resize_params(ctx.node, ctx.opset, X.shape(), given, input, fail))};
}

std::vector<Tensor> upsample(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  auto input = [&](size_t i, const char*) -> const Tensor& { return ctx.input(i); };
  auto fail = [&](const std::string& m) { ctx.fail(m); };
  return {run_resize(ctx, X, ops::upsample_params(ctx.node, ctx.opset, X.shape(), input, fail))};
}

}  // namespace

void register_resize(KernelRegistry& r) {
  r.add("Resize", resize);
  r.add("Upsample", upsample);
}

}  // namespace onnxgpu::cpu
