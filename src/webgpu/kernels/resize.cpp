// Resize (opsets 10, 11, 13, 18, 19) and Upsample (1, 7, 9) on the GPU.
//
// The input coordinate of each output index is computed on the host in double, by the same code as
// the CPU reference's (src/ops/resize), because nearest rounding and the crop bounds are discontinuous:
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

#include "ops/resize.h"
#include "ops/values.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

namespace {

constexpr uint32_t kOutside = 0x80000000u;  // table entry of an output index outside the crop (extrapolated)

using ops::ResizeParams;

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
  std::vector<ops::AxisSample> samples = ops::axis_samples(p, a, in);
  bool nearest = p.mode == "nearest";
  taps = 1;
  for (const auto& s : samples) taps = std::max<uint32_t>(taps, uint32_t(s.weights.size()));
  for (const auto& s : samples) {
    if (s.outside) {
      tab.push_back(kOutside);
      if (!nearest) tab.insert(tab.end(), taps, 0u);
    } else if (nearest) {
      tab.push_back(uint32_t(s.first));
    } else {
      tab.push_back(uint32_t(int32_t(s.first)));
      for (double wt : s.weights) tab.push_back(f32_bits(wt));
    }
  }
  return !ops::axis_is_identity(samples, in);
}

// The extrapolation value as the output dtype rounds it (ops::from_double), as an f32 the shader
// converts exactly with from_f32.
float extrapolation_for(DType t, double d) {
  if (dtype_is_float(t)) return float(d);
  if (t == DType::Bool) return d != 0 ? 1.0f : 0.0f;
  double v = 0;
  visit_dtype(t, [&]<class T>() { v = double(ops::from_double<T>(d)); }, kNumericTypes, "Resize");
  return float(v);
}

void run_resize(GpuKernelContext& ctx, const ResizeParams& p) {
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  size_t r = xs.size();
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

void resize(GpuKernelContext& ctx) {
  auto given = [&](size_t i) { return ctx.has_input(i) && shape_numel(ctx.shape(i)) > 0; };
  auto input = [&](size_t i, const char* what) -> const Tensor& { return ctx.constant(i, what); };
  auto fail = [&](const std::string& m) { ctx.fail(m); };
  run_resize(ctx, ops::resize_params(ctx.node, ctx.opset, ctx.shape(0), given, input, fail));
}

void upsample(GpuKernelContext& ctx) {
  auto input = [&](size_t i, const char* what) -> const Tensor& { return ctx.constant(i, what); };
  auto fail = [&](const std::string& m) { ctx.fail(m); };
  run_resize(ctx, ops::upsample_params(ctx.node, ctx.opset, ctx.shape(0), input, fail));
}

}  // namespace

void register_resize(GpuKernelRegistry& r) {
  r.add("Resize", resize);
  r.add("Upsample", upsample);
}

}  // namespace onnxgpu::webgpu
