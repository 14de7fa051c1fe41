// Resize (opsets 10, 11, 13, 18, 19) and Upsample (1, 7, 9). Follows the ONNX reference implementation:
// each output coordinate is mapped to an input coordinate (coordinate_transformation_mode), then
// nearest picks one input element and linear / cubic weight the neighbours (edge-clamped), one axis at a
// time (the weights of every axis are separable). Values are computed in double.
#include <cmath>
#include <cstring>

#include "cpu/kernel.h"
#include "cpu/nn_util.h"

namespace onnxgpu::cpu {
namespace {

struct ResizeParams {
  std::string mode = "nearest";         // nearest | linear | cubic
  std::string coord = "half_pixel";     // coordinate_transformation_mode
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0;
  std::vector<double> scales;  // per axis of X
  Shape out;                   // per axis of X
  std::vector<bool> from_sizes;  // the axis' output length was given (its length is exact)
  std::vector<double> roi;     // [starts..., ends...] per axis of X (tf_crop_and_resize)
};

// The input coordinate of output index x along an axis (in: input length, a: axis).
double source_coord(const ResizeParams& p, size_t a, int64_t in, double x) {
  double scale = p.scales[a];
  // The reference uses the real-valued output length scale * in when the scales were given.
  double len = p.from_sizes[a] ? double(p.out[a]) : scale * double(in);
  const std::string& m = p.coord;
  if (m == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (m == "half_pixel_symmetric") {
    double adjustment = double(p.out[a]) / len;
    double center = double(in) / 2;
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  if (m == "pytorch_half_pixel") return len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (m == "align_corners") return len == 1 ? 0.0 : x * double(in - 1) / (len - 1);
  if (m == "asymmetric") return x / scale;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  // tf_crop_and_resize
  size_t r = p.out.size();
  double start = p.roi[a], end = p.roi[a + r];
  if (len > 1) return start * double(in - 1) + x * (end - start) * double(in - 1) / (len - 1);
  return 0.5 * (start + end) * double(in - 1);
}

int64_t nearest_index(const ResizeParams& p, double x) {
  double f = std::floor(x);
  if (x == f) return int64_t(f);
  double frac = x - f;
  const std::string& m = p.nearest_mode;
  if (m == "floor") return int64_t(f);
  if (m == "ceil") return int64_t(f) + 1;
  if (m == "round_prefer_ceil") return frac < 0.5 ? int64_t(f) : int64_t(f) + 1;
  return frac <= 0.5 ? int64_t(f) : int64_t(f) + 1;  // round_prefer_floor
}

double cubic_kernel(double x, double A) {
  x = std::fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

// One output position along an axis: input taps (clamped index, weight), or outside (extrapolate).
struct AxisTaps {
  bool outside = false;
  std::vector<std::pair<int64_t, double>> taps;
};

std::vector<AxisTaps> axis_taps(const ResizeParams& p, size_t a, int64_t in) {
  std::vector<AxisTaps> res(static_cast<size_t>(p.out[a]));
  double scale = p.scales[a];
  double ks = (p.antialias && scale < 1) ? scale : 1.0;  // kernel scale (antialiasing widens the filter)
  for (int64_t o = 0; o < p.out[a]; ++o) {
    AxisTaps& t = res[size_t(o)];
    double x = source_coord(p, a, in, double(o));
    if (p.coord == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) {
      t.outside = true;
      continue;
    }
    if (p.mode == "nearest") {
      t.taps.emplace_back(std::clamp<int64_t>(nearest_index(p, x), 0, in - 1), 1.0);
      continue;
    }
    // Neighbours f + i, i in [start, 1 - start], with ratio = x - f in (0, 1] (integers use the left pixel).
    double f = std::ceil(x) - 1;
    double ratio = x - f;
    int64_t start = p.mode == "linear" ? int64_t(std::floor(-1 / ks)) + 1 : int64_t(std::floor(-2 / ks)) + 1;
    std::vector<std::pair<int64_t, double>> w;
    double sum = 0;
    for (int64_t i = start; i <= 1 - start; ++i) {
      double d = (double(i) - ratio) * ks;
      double wt = p.mode == "linear" ? std::max(0.0, 1 - std::fabs(d)) : cubic_kernel(d, p.cubic_a);
      int64_t idx = int64_t(f) + i;
      if (p.exclude_outside && (idx < 0 || idx >= in)) wt = 0;
      w.emplace_back(idx, wt);
      sum += wt;
    }
    bool normalize = p.exclude_outside || ks != 1.0;
    for (auto& [idx, wt] : w) {
      if (wt == 0) continue;
      t.taps.emplace_back(std::clamp<int64_t>(idx, 0, in - 1), normalize ? wt / sum : wt);
    }
  }
  return res;
}

Tensor run_resize(const KernelContext& ctx, const Tensor& X, const ResizeParams& p) {
  size_t r = size_t(X.rank());
  for (size_t a = 0; a < r; ++a) {
    if (p.out[a] < 0) ctx.fail("output shape " + shape_str(p.out) + " has a negative dim");
    if (X.dim(int64_t(a)) == 0 && p.out[a] > 0)
      ctx.fail("cannot resize the empty axis " + std::to_string(a) + " of X " + X.describe() + " to " +
               std::to_string(p.out[a]));
  }
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

void check_mode(const KernelContext& ctx, const ResizeParams& p) {
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic") ctx.fail("unknown mode '" + p.mode + "'");
  static const char* coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                 "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(coords), std::end(coords), p.coord) == std::end(coords))
    ctx.fail("unknown coordinate_transformation_mode '" + p.coord + "'");
  static const char* nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(nearest), std::end(nearest), p.nearest_mode) == std::end(nearest))
    ctx.fail("unknown nearest_mode '" + p.nearest_mode + "'");
}

// Output lengths from per-axis scales: floor(in * scale).
void apply_scales(const KernelContext& ctx, const Tensor& X, ResizeParams& p, const std::vector<double>& scales,
                  const std::vector<int64_t>& axes) {
  if (scales.size() != axes.size())
    ctx.fail("scales has " + std::to_string(scales.size()) + " values but " + std::to_string(axes.size()) +
             " are expected (one per resized axis of X " + shape_str(X.shape()) + ")");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!(scales[i] > 0)) ctx.fail("scales must be positive, got " + std::to_string(scales[i]));
    size_t a = size_t(axes[i]);
    p.scales[a] = scales[i];
    p.out[a] = int64_t(std::floor(double(X.dim(int64_t(a))) * scales[i]));
  }
}

std::vector<Tensor> resize(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const ir::Node& node = ctx.node;
  size_t r = size_t(X.rank());
  ResizeParams p;
  p.mode = node.attr_string("mode", "nearest");
  p.scales.assign(r, 1.0);
  p.out = X.shape();
  p.from_sizes.assign(r, false);
  p.roi.assign(2 * r, 0.0);
  for (size_t a = 0; a < r; ++a) p.roi[a + r] = 1.0;
  if (ctx.opset < 11) {  // Resize-10: X, scales; asymmetric coordinates
    p.coord = "asymmetric";
    p.nearest_mode = "floor";
    check_mode(ctx, p);
    if (p.mode == "cubic") ctx.fail("mode 'cubic' needs opset 11");
    std::vector<int64_t> axes(r);
    for (size_t a = 0; a < r; ++a) axes[a] = int64_t(a);
    apply_scales(ctx, X, p, nn::to_doubles(ctx.input(1)), axes);
    return {run_resize(ctx, X, p)};
  }
  p.coord = node.attr_string("coordinate_transformation_mode", "half_pixel");
  p.nearest_mode = node.attr_string("nearest_mode", "round_prefer_floor");
  p.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  p.antialias = ctx.opset >= 18 && node.attr_int("antialias", 0) != 0;
  check_mode(ctx, p);
  std::vector<int64_t> axes;
  if (ctx.opset >= 18 && node.has_attr("axes")) {
    for (int64_t a : node.attr_ints("axes")) {
      a = ctx.normalize_axis(a, X.rank());
      if (std::find(axes.begin(), axes.end(), a) != axes.end()) ctx.fail("attribute 'axes' repeats an axis");
      axes.push_back(a);
    }
  } else {
    for (size_t a = 0; a < r; ++a) axes.push_back(int64_t(a));
  }
  if (ctx.has_input(1) && ctx.input(1).numel() > 0 && p.coord == "tf_crop_and_resize") {
    std::vector<double> roi = nn::to_doubles(ctx.input(1));
    if (roi.size() != 2 * axes.size())
      ctx.fail("roi has " + std::to_string(roi.size()) + " values, expected " + std::to_string(2 * axes.size()));
    for (size_t i = 0; i < axes.size(); ++i) {
      p.roi[size_t(axes[i])] = roi[i];
      p.roi[size_t(axes[i]) + r] = roi[i + axes.size()];
    }
  }
  bool has_scales = ctx.has_input(2) && ctx.input(2).numel() > 0;
  bool has_sizes = ctx.has_input(3) && ctx.input(3).numel() > 0;
  if (has_scales == has_sizes) ctx.fail("exactly one of 'scales' and 'sizes' must be given");
  if (has_scales) {
    apply_scales(ctx, X, p, nn::to_doubles(ctx.input(2)), axes);
  } else {
    const Tensor& st = ctx.input(3);
    if (st.dtype() != DType::Int64) ctx.fail("sizes must be int64, got " + st.describe());
    std::vector<int64_t> sizes = st.to_int64_vector();
    if (sizes.size() != axes.size())
      ctx.fail("sizes has " + std::to_string(sizes.size()) + " values but " + std::to_string(axes.size()) +
               " are expected (one per resized axis of X " + shape_str(X.shape()) + ")");
    std::string policy = ctx.opset >= 18 ? node.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
    if (policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = size_t(axes[i]);
        if (sizes[i] < 0) ctx.fail("sizes must be non-negative, got " + shape_str(sizes));
        p.out[a] = sizes[i];
        p.from_sizes[a] = true;
        p.scales[a] = X.dim(int64_t(a)) == 0 ? 1.0 : double(sizes[i]) / double(X.dim(int64_t(a)));
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double s = policy == "not_larger" ? INFINITY : 0;
      for (size_t i = 0; i < axes.size(); ++i) {
        double v = double(sizes[i]) / double(X.dim(axes[i]));
        s = policy == "not_larger" ? std::min(s, v) : std::max(s, v);
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = size_t(axes[i]);
        p.scales[a] = s;
        p.out[a] = int64_t(std::floor(s * double(X.dim(int64_t(a))) + 0.5));
      }
    } else {
      ctx.fail("unknown keep_aspect_ratio_policy '" + policy + "'");
    }
  }
  for (double s : p.scales)
    if (!(s > 0) || !std::isfinite(s)) ctx.fail("resize scales must be positive and finite");
  return {run_resize(ctx, X, p)};
}

std::vector<Tensor> upsample(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const ir::Node& node = ctx.node;
  size_t r = size_t(X.rank());
  ResizeParams p;
  p.mode = node.attr_string("mode", "nearest");
  if (p.mode == "bilinear") p.mode = "linear";
  if (p.mode != "nearest" && p.mode != "linear") ctx.fail("unknown mode '" + p.mode + "'");
  p.coord = "asymmetric";
  p.nearest_mode = "floor";
  p.scales.assign(r, 1.0);
  p.out = X.shape();
  p.from_sizes.assign(r, false);
  std::vector<double> scales;
  if (ctx.opset >= 9) {
    scales = nn::to_doubles(ctx.input(1));
  } else if (node.has_attr("scales")) {
    for (float f : node.attr_floats("scales")) scales.push_back(f);
  } else {  // Upsample-1: height_scale, width_scale on NCHW
    if (r != 4) ctx.fail("Upsample-1 needs a 4-D input, got " + X.describe());
    scales = {1.0, 1.0, node.attr_float("height_scale", 1.0f), node.attr_float("width_scale", 1.0f)};
  }
  std::vector<int64_t> axes(r);
  for (size_t a = 0; a < r; ++a) axes[a] = int64_t(a);
  apply_scales(ctx, X, p, scales, axes);
  return {run_resize(ctx, X, p)};
}

}  // namespace

void register_resize(KernelRegistry& r) {
  r.add("Resize", resize);
  r.add("Upsample", upsample);
}

}  // namespace onnxgpu::cpu
