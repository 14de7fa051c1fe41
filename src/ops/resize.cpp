#include "ops/resize.h"

#include <algorithm>
#include <cmath>

#include "ops/values.h"

namespace onnxgpu::ops {

namespace {

// The input coordinate of output index x along axis a (in: the input length).
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

void check_mode(const ResizeParams& p, const Fail& fail) {
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic") raise(fail, "unknown mode '" + p.mode + "'");
  static const char* coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                 "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(coords), std::end(coords), p.coord) == std::end(coords))
    raise(fail, "unknown coordinate_transformation_mode '" + p.coord + "'");
  static const char* nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(nearest), std::end(nearest), p.nearest_mode) == std::end(nearest))
    raise(fail, "unknown nearest_mode '" + p.nearest_mode + "'");
}

ResizeParams defaults(const ir::Node& node, const Shape& x) {
  size_t r = x.size();
  ResizeParams p;
  p.mode = node.attr_string("mode", "nearest");
  p.scales.assign(r, 1.0);
  p.out = x;
  p.from_sizes.assign(r, false);
  p.roi.assign(2 * r, 0.0);
  for (size_t a = 0; a < r; ++a) p.roi[a + r] = 1.0;
  return p;
}

std::vector<int64_t> all_axes(size_t r) {
  std::vector<int64_t> axes(r);
  for (size_t a = 0; a < r; ++a) axes[a] = int64_t(a);
  return axes;
}

// Output lengths from per-axis scales: floor(in * scale).
void apply_scales(ResizeParams& p, const Shape& x, const std::vector<double>& scales, const std::vector<int64_t>& axes,
                  const Fail& fail) {
  if (scales.size() != axes.size())
    raise(fail, "scales has " + std::to_string(scales.size()) + " values but " + std::to_string(axes.size()) +
                    " are expected (one per resized axis of X " + shape_str(x) + ")");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!(scales[i] > 0)) raise(fail, "scales must be positive, got " + std::to_string(scales[i]));
    size_t a = size_t(axes[i]);
    p.scales[a] = scales[i];
    p.out[a] = int64_t(std::floor(double(x[a]) * scales[i]));
  }
}

// The output shape against the input's.
ResizeParams& checked(ResizeParams& p, const Shape& x, const Fail& fail) {
  for (size_t a = 0; a < x.size(); ++a) {
    if (p.out[a] < 0) raise(fail, "output shape " + shape_str(p.out) + " has a negative dim");
    if (x[a] == 0 && p.out[a] > 0)
      raise(fail, "cannot resize the empty axis " + std::to_string(a) + " of X " + shape_str(x) + " to " +
                      std::to_string(p.out[a]));
  }
  return p;
}

}  // namespace

ResizeParams resize_params(const ir::Node& node, int64_t opset, const Shape& x, const std::function<bool(size_t)>& given,
                           const InputReader& input, const Fail& fail) {
  size_t r = x.size();
  ResizeParams p = defaults(node, x);
  if (opset < 11) {  // Resize-10: X, scales; asymmetric coordinates
    p.coord = "asymmetric";
    p.nearest_mode = "floor";
    check_mode(p, fail);
    if (p.mode == "cubic") raise(fail, "mode 'cubic' needs opset 11");
    apply_scales(p, x, ops::to_doubles(input(1, "scales")), all_axes(r), fail);
    return checked(p, x, fail);
  }
  p.coord = node.attr_string("coordinate_transformation_mode", "half_pixel");
  p.nearest_mode = node.attr_string("nearest_mode", "round_prefer_floor");
  p.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  p.antialias = opset >= 18 && node.attr_int("antialias", 0) != 0;
  check_mode(p, fail);
  std::vector<int64_t> axes;
  if (opset >= 18 && node.has_attr("axes")) {
    for (int64_t a : node.attr_ints("axes")) {
      if (a < -int64_t(r) || a >= int64_t(r))
        raise(fail, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
      if (a < 0) a += int64_t(r);
      if (std::find(axes.begin(), axes.end(), a) != axes.end()) raise(fail, "attribute 'axes' repeats an axis");
      axes.push_back(a);
    }
  } else {
    axes = all_axes(r);
  }
  if (p.coord == "tf_crop_and_resize" && given(1)) {
    std::vector<double> roi = ops::to_doubles(input(1, "roi"));
    if (roi.size() != 2 * axes.size())
      raise(fail, "roi has " + std::to_string(roi.size()) + " values, expected " + std::to_string(2 * axes.size()));
    for (size_t i = 0; i < axes.size(); ++i) {
      p.roi[size_t(axes[i])] = roi[i];
      p.roi[size_t(axes[i]) + r] = roi[i + axes.size()];
    }
  }
  bool has_scales = given(2), has_sizes = given(3);
  if (has_scales == has_sizes) raise(fail, "exactly one of 'scales' and 'sizes' must be given");
  if (has_scales) {
    apply_scales(p, x, ops::to_doubles(input(2, "scales")), axes, fail);
  } else {
    const Tensor& st = input(3, "sizes");
    if (st.dtype() != DType::Int64) raise(fail, "sizes must be int64, got " + st.describe());
    std::vector<int64_t> sizes = st.to_int64_vector();
    if (sizes.size() != axes.size())
      raise(fail, "sizes has " + std::to_string(sizes.size()) + " values but " + std::to_string(axes.size()) +
                      " are expected (one per resized axis of X " + shape_str(x) + ")");
    std::string policy = opset >= 18 ? node.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
    if (policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = size_t(axes[i]);
        if (sizes[i] < 0) raise(fail, "sizes must be non-negative, got " + shape_str(sizes));
        p.out[a] = sizes[i];
        p.from_sizes[a] = true;
        p.scales[a] = x[a] == 0 ? 1.0 : double(sizes[i]) / double(x[a]);
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double s = policy == "not_larger" ? INFINITY : 0;
      for (size_t i = 0; i < axes.size(); ++i) {
        double v = double(sizes[i]) / double(x[size_t(axes[i])]);
        s = policy == "not_larger" ? std::min(s, v) : std::max(s, v);
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = size_t(axes[i]);
        p.scales[a] = s;
        p.out[a] = int64_t(std::floor(s * double(x[a]) + 0.5));
      }
    } else {
      raise(fail, "unknown keep_aspect_ratio_policy '" + policy + "'");
    }
  }
  for (double s : p.scales)
    if (!(s > 0) || !std::isfinite(s)) raise(fail, "resize scales must be positive and finite");
  return checked(p, x, fail);
}

ResizeParams upsample_params(const ir::Node& node, int64_t opset, const Shape& x, const InputReader& input,
                             const Fail& fail) {
  size_t r = x.size();
  ResizeParams p = defaults(node, x);
  if (p.mode == "bilinear") p.mode = "linear";
  if (p.mode != "nearest" && p.mode != "linear") raise(fail, "unknown mode '" + p.mode + "'");
  p.coord = "asymmetric";
  p.nearest_mode = "floor";
  std::vector<double> scales;
  if (opset >= 9) {
    scales = ops::to_doubles(input(1, "scales"));
  } else if (node.has_attr("scales")) {
    for (float f : node.attr_floats("scales")) scales.push_back(f);
  } else {  // Upsample-1: height_scale, width_scale on NCHW
    if (r != 4) raise(fail, "Upsample-1 needs a 4-D input, got " + shape_str(x));
    scales = {1.0, 1.0, node.attr_float("height_scale", 1.0f), node.attr_float("width_scale", 1.0f)};
  }
  apply_scales(p, x, scales, all_axes(r), fail);
  return checked(p, x, fail);
}

std::vector<AxisSample> axis_samples(const ResizeParams& p, size_t a, int64_t in) {
  std::vector<AxisSample> res(size_t(std::max<int64_t>(p.out[a], 0)));
  double scale = p.scales[a];
  double ks = (p.antialias && scale < 1) ? scale : 1.0;  // kernel scale (antialiasing widens the filter)
  int64_t start = p.mode == "linear" ? int64_t(std::floor(-1 / ks)) + 1 : int64_t(std::floor(-2 / ks)) + 1;
  for (int64_t o = 0; o < p.out[a]; ++o) {
    AxisSample& s = res[size_t(o)];
    double x = source_coord(p, a, in, double(o));
    if (p.coord == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) {
      s.outside = true;
      continue;
    }
    if (p.mode == "nearest") {
      s.first = std::clamp<int64_t>(nearest_index(p, x), 0, in - 1);
      s.weights = {1.0};
      continue;
    }
    // Neighbours f + i, i in [start, 1 - start], with ratio = x - f in (0, 1] (integers use the left pixel).
    double f = std::ceil(x) - 1;
    double ratio = x - f;
    double sum = 0;
    for (int64_t i = start; i <= 1 - start; ++i) {
      double d = (double(i) - ratio) * ks;
      double wt = p.mode == "linear" ? std::max(0.0, 1 - std::fabs(d)) : cubic_kernel(d, p.cubic_a);
      int64_t idx = int64_t(f) + i;
      if (p.exclude_outside && (idx < 0 || idx >= in)) wt = 0;
      s.weights.push_back(wt);
      sum += wt;
    }
    bool normalize = p.exclude_outside || ks != 1.0;
    if (normalize)
      for (double& wt : s.weights)
        if (wt != 0) wt /= sum;
    s.first = int64_t(f) + start;
  }
  return res;
}

bool axis_is_identity(const std::vector<AxisSample>& samples, int64_t in) {
  if (int64_t(samples.size()) != in) return false;
  for (size_t o = 0; o < samples.size(); ++o) {
    const AxisSample& s = samples[o];
    if (s.outside) return false;
    int nonzero = 0;
    for (size_t k = 0; k < s.weights.size(); ++k) {
      if (s.weights[k] == 0) continue;
      ++nonzero;
      int64_t idx = std::clamp<int64_t>(s.first + int64_t(k), 0, in - 1);
      if (s.weights[k] != 1.0 || idx != int64_t(o)) return false;
    }
    if (nonzero != 1) return false;
  }
  return true;
}

}  // namespace onnxgpu::ops
