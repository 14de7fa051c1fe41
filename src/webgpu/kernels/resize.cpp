// Resize (opsets 10, 11, 13, 18, 19) and Upsample (1, 7, 9) on the GPU.
//
// The input coordinate of each output index is computed on the host in double, exactly as the CPU
// reference (src/cpu/resize.cpp) does, because nearest rounding and the crop bounds are discontinuous:
// f32 arithmetic in the shader would pick other pixels where the double computation lands on a tie.
// Per resized axis the host builds a table, one entry per output index: the source index (nearest), or
// the first tap's unclamped index and the tap weights (linear, cubic, antialiased), or "outside"
// (tf_crop_and_resize). The tables travel in a fixed-capacity uniform array, so the WGSL text does not
// depend on sizes; an axis that maps every index to itself is flagged and skips its table.
// Nearest is a gather (every dtype); linear and cubic interpolate float tensors in f32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/nn_util.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

namespace {

constexpr uint32_t kOutside = 0x80000000u;  // table entry of an output index outside the crop (extrapolated)

struct ResizeParams {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0;
  std::vector<double> scales;
  Shape out;
  std::vector<bool> from_sizes;
  std::vector<double> roi;
};

double source_coord(const ResizeParams& p, size_t a, int64_t in, double x) {
  double scale = p.scales[a];
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
  return frac <= 0.5 ? int64_t(f) : int64_t(f) + 1;
}

double cubic_kernel(double x, double A) {
  x = std::fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

uint32_t f32_bits(double d) {
  float f = float(d);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// The table of axis `a`: for nearest one word per output index (the clamped source index or kOutside);
// for interpolation 1 + taps words (the first tap's unclamped index as i32 or kOutside, then the weights
// as f32). Returns false when the axis maps every output index to itself (no table needed).
bool axis_table(const ResizeParams& p, size_t a, int64_t in, uint32_t& taps, std::vector<uint32_t>& tab) {
  int64_t out = p.out[a];
  double scale = p.scales[a];
  double ks = (p.antialias && scale < 1) ? scale : 1.0;
  bool nearest = p.mode == "nearest";
  int64_t start = nearest ? 0 : p.mode == "linear" ? int64_t(std::floor(-1 / ks)) + 1 : int64_t(std::floor(-2 / ks)) + 1;
  taps = nearest ? 1 : uint32_t(2 - 2 * start);
  bool identity = in == out;
  for (int64_t o = 0; o < out; ++o) {
    double x = source_coord(p, a, in, double(o));
    if (p.coord == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) {
      identity = false;
      tab.push_back(kOutside);
      if (!nearest) tab.insert(tab.end(), taps, 0u);
      continue;
    }
    if (nearest) {
      int64_t i = std::clamp<int64_t>(nearest_index(p, x), 0, in - 1);
      identity = identity && i == o;
      tab.push_back(uint32_t(i));
      continue;
    }
    double f = std::ceil(x) - 1;
    double ratio = x - f;
    std::vector<double> w;
    double sum = 0;
    for (int64_t i = start; i <= 1 - start; ++i) {
      double d = (double(i) - ratio) * ks;
      double wt = p.mode == "linear" ? std::max(0.0, 1 - std::fabs(d)) : cubic_kernel(d, p.cubic_a);
      int64_t idx = int64_t(f) + i;
      if (p.exclude_outside && (idx < 0 || idx >= in)) wt = 0;
      w.push_back(wt);
      sum += wt;
    }
    bool normalize = p.exclude_outside || ks != 1.0;
    int64_t first = int64_t(f) + start;
    // The identity: one tap of weight 1 at index o (the others 0).
    int nonzero = 0;
    for (size_t k = 0; k < w.size(); ++k) {
      double wt = normalize && w[k] != 0 ? w[k] / sum : w[k];
      w[k] = wt;
      if (wt != 0) {
        ++nonzero;
        identity = identity && wt == 1.0 && std::clamp<int64_t>(first + int64_t(k), 0, in - 1) == o;
      }
    }
    identity = identity && nonzero == 1;
    tab.push_back(uint32_t(int32_t(first)));
    for (double wt : w) tab.push_back(f32_bits(wt));
  }
  return !identity;
}


// The extrapolation value as the output dtype rounds it (cpu::nn::from_double), as an f32 the shader
// converts exactly with from_f32.
float extrapolation_for(DType t, double d) {
  if (dtype_is_float(t)) return float(d);
  if (t == DType::Bool) return d != 0 ? 1.0f : 0.0f;
  double v = 0;
  visit_dtype(t, [&]<class T>() { v = double(cpu::nn::from_double<T>(d)); }, kNumericTypes, "Resize");
  return float(v);
}

void run_resize(GpuKernelContext& ctx, const ResizeParams& p) {
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  size_t r = xs.size();
  for (size_t a = 0; a < r; ++a) {
    if (p.out[a] < 0) ctx.fail("output shape " + shape_str(p.out) + " has a negative dim");
    if (xs[a] == 0 && p.out[a] > 0)
      ctx.fail("cannot resize the empty axis " + std::to_string(a) + " of X " + shape_str(xs) + " to " +
               std::to_string(p.out[a]));
  }
  if (t == DType::String) ctx.unsupported("string tensors");
  if (r == 0) ctx.unsupported("a 0-d input");
  bool nearest = p.mode == "nearest";
  if (!nearest && !dtype_is_float(t)) ctx.unsupported("mode '" + p.mode + "' on " + std::string(dtype_name(t)) + " (integers interpolate on the CPU)");
  ctx.set_output(0, t, p.out);
  if (shape_numel(p.out) == 0) return;

  std::vector<uint32_t> tab, ax_off(r, 0), ax_taps(r, 0);
  for (size_t a = 0; a < r; ++a) {
    std::vector<uint32_t> one;
    uint32_t taps = 0;
    if (!axis_table(p, a, xs[a], taps, one)) continue;
    ax_off[a] = uint32_t(tab.size());
    ax_taps[a] = taps;
    tab.insert(tab.end(), one.begin(), one.end());
  }
  // The capacity of the table uniform: fixed per device (the WGSL declares it), within the binding limit.
  uint64_t limit_words = ctx.limits.max_uniform_buffer_binding_size ? ctx.limits.max_uniform_buffer_binding_size / 4 : 16384;
  uint32_t capacity = uint32_t(std::min<uint64_t>(8192, limit_words > 1024 ? limit_words - 1024 : 0));
  if (tab.size() > capacity)
    ctx.unsupported("the resize tables need " + std::to_string(tab.size()) + " words, over the uniform capacity of " +
                    std::to_string(capacity));
  tab.resize(capacity, 0);

  std::string R = std::to_string(r);
  auto prog = ctx.program(std::string(nearest ? "nearest" : "interp") + R + "d");
  prog.input("x", t, xs);
  prog.output("y", t, p.out);
  prog.uniform_array("ax_off", ax_off);
  prog.uniform_array("ax_taps", ax_taps);
  prog.uniform_array("tab", tab);
  prog.set_threads(uint64_t(shape_numel(p.out)));
  std::string extrap = "from_f32_$y(" + f32_lit(extrapolation_for(t, p.extrapolation)) + ")";
  std::string body =
      "  var o: array<u32, " + R + ">;\n"
      "  var rem = gi;\n"
      "  for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
      "    o[d] = rem % y_shape(u32(d));\n"
      "    rem = rem / y_shape(u32(d));\n"
      "  }\n";
  if (nearest) {
    body +=
        "  var off = 0u;\n"
        "  for (var d = 0u; d < " + R + "u; d = d + 1u) {\n"
        "    var i = o[d];\n"
        "    if (ax_taps(d) != 0u) {\n"
        "      i = tab(ax_off(d) + o[d]);\n"
        "      if (i == " + std::to_string(kOutside) + "u) { y_store(gi, " + extrap + "); return; }\n"
        "    }\n"
        "    off = off + i * x_stride(d);\n"
        "  }\n"
        "  y_store(gi, x_load(off));";
  } else {
    body +=
        "  var combos = 1u;\n"
        "  for (var d = 0u; d < " + R + "u; d = d + 1u) {\n"
        "    let nt = ax_taps(d);\n"
        "    if (nt == 0u) { continue; }\n"
        "    combos = combos * nt;\n"
        "    if (tab(ax_off(d) + o[d] * (1u + nt)) == " + std::to_string(kOutside) + "u) { y_store(gi, " + extrap + "); return; }\n"
        "  }\n"
        "  var acc = 0.0;\n"
        "  for (var c = 0u; c < combos; c = c + 1u) {\n"
        "    var cr = c;\n"
        "    var off = 0u;\n"
        "    var w = 1.0;\n"
        "    for (var d = 0u; d < " + R + "u; d = d + 1u) {\n"
        "      let nt = ax_taps(d);\n"
        "      if (nt == 0u) { off = off + o[d] * x_stride(d); continue; }\n"
        "      let k = cr % nt;\n"
        "      cr = cr / nt;\n"
        "      let e = ax_off(d) + o[d] * (1u + nt);\n"
        "      let idx = clamp(bitcast<i32>(tab(e)) + i32(k), 0i, i32(x_shape(d)) - 1i);\n"
        "      off = off + u32(idx) * x_stride(d);\n"
        "      w = w * bitcast<f32>(tab(e + 1u + k));\n"
        "    }\n"
        "    if (w != 0.0) { acc = acc + w * to_f32_$x(x_load(off)); }\n"
        "  }\n"
        "  y_store(gi, from_f32_$y(acc));";
  }
  prog.body(body);
  ctx.dispatch(prog, {ctx.in(0), ctx.out(0)});
}

void check_mode(const GpuKernelContext& ctx, const ResizeParams& p) {
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic") ctx.fail("unknown mode '" + p.mode + "'");
  static const char* coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                 "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(coords), std::end(coords), p.coord) == std::end(coords))
    ctx.fail("unknown coordinate_transformation_mode '" + p.coord + "'");
  static const char* nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(nearest), std::end(nearest), p.nearest_mode) == std::end(nearest))
    ctx.fail("unknown nearest_mode '" + p.nearest_mode + "'");
}

void apply_scales(const GpuKernelContext& ctx, ResizeParams& p, const std::vector<double>& scales,
                  const std::vector<int64_t>& axes) {
  const Shape& xs = ctx.shape(0);
  if (scales.size() != axes.size())
    ctx.fail("scales has " + std::to_string(scales.size()) + " values but " + std::to_string(axes.size()) +
             " are expected (one per resized axis of X " + shape_str(xs) + ")");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!(scales[i] > 0)) ctx.fail("scales must be positive, got " + std::to_string(scales[i]));
    size_t a = size_t(axes[i]);
    p.scales[a] = scales[i];
    p.out[a] = int64_t(std::floor(double(xs[a]) * scales[i]));
  }
}

ResizeParams defaults(const GpuKernelContext& ctx) {
  size_t r = ctx.shape(0).size();
  ResizeParams p;
  p.mode = ctx.node.attr_string("mode", "nearest");
  p.scales.assign(r, 1.0);
  p.out = ctx.shape(0);
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

void resize(GpuKernelContext& ctx) {
  const Shape& xs = ctx.shape(0);
  const ir::Node& node = ctx.node;
  size_t r = xs.size();
  ResizeParams p = defaults(ctx);
  if (ctx.opset < 11) {
    p.coord = "asymmetric";
    p.nearest_mode = "floor";
    check_mode(ctx, p);
    if (p.mode == "cubic") ctx.fail("mode 'cubic' needs opset 11");
    apply_scales(ctx, p, cpu::nn::to_doubles(ctx.constant(1, "scales")), all_axes(r));
    run_resize(ctx, p);
    return;
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
      a = ctx.normalize_axis(a, int64_t(r));
      if (std::find(axes.begin(), axes.end(), a) != axes.end()) ctx.fail("attribute 'axes' repeats an axis");
      axes.push_back(a);
    }
  } else {
    axes = all_axes(r);
  }
  auto given = [&](size_t i) { return ctx.has_input(i) && shape_numel(ctx.shape(i)) > 0; };
  if (p.coord == "tf_crop_and_resize" && given(1)) {
    std::vector<double> roi = cpu::nn::to_doubles(ctx.constant(1, "roi"));
    if (roi.size() != 2 * axes.size())
      ctx.fail("roi has " + std::to_string(roi.size()) + " values, expected " + std::to_string(2 * axes.size()));
    for (size_t i = 0; i < axes.size(); ++i) {
      p.roi[size_t(axes[i])] = roi[i];
      p.roi[size_t(axes[i]) + r] = roi[i + axes.size()];
    }
  }
  bool has_scales = given(2), has_sizes = given(3);
  if (has_scales == has_sizes) ctx.fail("exactly one of 'scales' and 'sizes' must be given");
  if (has_scales) {
    apply_scales(ctx, p, cpu::nn::to_doubles(ctx.constant(2, "scales")), axes);
  } else {
    if (ctx.dtype(3) != DType::Int64) ctx.fail("sizes must be int64, got " + std::string(dtype_name(ctx.dtype(3))));
    std::vector<int64_t> sizes = ctx.constant(3, "sizes").to_int64_vector();
    if (sizes.size() != axes.size())
      ctx.fail("sizes has " + std::to_string(sizes.size()) + " values but " + std::to_string(axes.size()) +
               " are expected (one per resized axis of X " + shape_str(xs) + ")");
    std::string policy = ctx.opset >= 18 ? node.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
    if (policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = size_t(axes[i]);
        if (sizes[i] < 0) ctx.fail("sizes must be non-negative, got " + shape_str(sizes));
        p.out[a] = sizes[i];
        p.from_sizes[a] = true;
        p.scales[a] = xs[a] == 0 ? 1.0 : double(sizes[i]) / double(xs[a]);
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double s = policy == "not_larger" ? INFINITY : 0;
      for (size_t i = 0; i < axes.size(); ++i) {
        double v = double(sizes[i]) / double(xs[size_t(axes[i])]);
        s = policy == "not_larger" ? std::min(s, v) : std::max(s, v);
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        size_t a = size_t(axes[i]);
        p.scales[a] = s;
        p.out[a] = int64_t(std::floor(s * double(xs[a]) + 0.5));
      }
    } else {
      ctx.fail("unknown keep_aspect_ratio_policy '" + policy + "'");
    }
  }
  for (double s : p.scales)
    if (!(s > 0) || !std::isfinite(s)) ctx.fail("resize scales must be positive and finite");
  run_resize(ctx, p);
}

void upsample(GpuKernelContext& ctx) {
  const Shape& xs = ctx.shape(0);
  const ir::Node& node = ctx.node;
  size_t r = xs.size();
  ResizeParams p = defaults(ctx);
  if (p.mode == "bilinear") p.mode = "linear";
  if (p.mode != "nearest" && p.mode != "linear") ctx.fail("unknown mode '" + p.mode + "'");
  p.coord = "asymmetric";
  p.nearest_mode = "floor";
  std::vector<double> scales;
  if (ctx.opset >= 9) {
    scales = cpu::nn::to_doubles(ctx.constant(1, "scales"));
  } else if (node.has_attr("scales")) {
    for (float f : node.attr_floats("scales")) scales.push_back(f);
  } else {
    if (r != 4) ctx.fail("Upsample-1 needs a 4-D input, got " + shape_str(xs));
    scales = {1.0, 1.0, node.attr_float("height_scale", 1.0f), node.attr_float("width_scale", 1.0f)};
  }
  apply_scales(ctx, p, scales, all_axes(r));
  run_resize(ctx, p);
}

}  // namespace

void register_resize(GpuKernelRegistry& r) {
  r.add("Resize", resize);
  r.add("Upsample", upsample);
}

}  // namespace onnxgpu::webgpu
