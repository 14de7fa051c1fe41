#include "webgpu/kernels/row_norm.h"

#include <algorithm>

#include "webgpu/device.h"
#include "webgpu/kernels/reduce_util.h"

namespace onnxgpu::webgpu::row_norm {

uint32_t workgroup(const Limits& l, uint64_t len) {
  uint32_t cap = std::min(l.max_compute_invocations_per_workgroup ? l.max_compute_invocations_per_workgroup : 256u,
                          l.max_compute_workgroup_size_x ? l.max_compute_workgroup_size_x : 256u);
  uint64_t want = len == 0 ? 256 : (len + kCached - 1) / kCached;
  if (const uint32_t forced = reduce_util::forced_row_invocations()) want = forced;
  uint32_t w = 32;
  while (w < want && w < 256) w *= 2;
  while (w > cap && w > 1) w /= 2;
  return w;
}

std::string sum_decl(uint32_t wgs) {
  return "const WG: u32 = " + std::to_string(wgs) + "u;\n"
         "const WG32: u32 = " + std::to_string(std::min(wgs, 32u)) + "u;\n"
         "var<workgroup> red: array<vec2<f32>, WG>;\n"
         "var<workgroup> red2: array<vec2<f32>, WG32>;\n"
         "fn row_sum(lid: u32, v: vec2<f32>) -> vec2<f32> {\n"
         "  red[lid] = v;\n"
         "  workgroupBarrier();\n"
         "  if (lid < WG32) {\n"
         "    var s = red[lid];\n"
         "    for (var k = lid + WG32; k < WG; k = k + WG32) { s = s + red[k]; }\n"
         "    red2[lid] = s;\n"
         "  }\n"
         "  workgroupBarrier();\n"
         "  var t = vec2<f32>(0.0);\n"
         "  for (var k = 0u; k < WG32; k = k + 1u) { t = t + red2[k]; }\n"
         "  return t;\n"
         "}\n";
}

// The body of a row kernel (one workgroup per row, y the output).
// One pass over the row: the sums of (v - s) and (v - s)^2, shifted by the row's first element s so that
// the variance does not cancel (s is close to the mean next to the spread of most rows); without
// centering s is 0 and the second sum is the mean square.
std::string body(const RowSpec& r) {
  std::string s =
      "  let row = wg;\n"
      "  if (row >= rows()) { return; }\n"
      "  let n = len();\n"
      "  let base = row * n;\n";
  s += r.centered ? "  let first = xv(base);\n"
                    "  let shift = select(0.0, first, abs(first) < f32_inf());\n"  // an infinite shift would make every d NaN
                  : "  let shift = 0.0;\n";
  s += "  var acc = vec2<f32>(0.0);\n";
  auto accumulate = [&](const std::string& j, const std::string& v) {
    std::string a = r.sum.empty() ? "" : "let i = base + " + j + "; let v = " + v + "; " + r.sum + " ";
    return a + "let d = " + v + " - shift; acc = acc + vec2<f32>(d, d * d);";
  };
  for (uint32_t c = 0; c < kCached; ++c) {
    const std::string v = "v" + std::to_string(c), j = "j" + std::to_string(c);
    s += "  let " + j + " = lid + " + std::to_string(c) + "u * WG;\n";
    s += r.cached.empty() ? "  let " + v + " = xv(select(base, base + " + j + ", " + j + " < n));\n" : "  var " + v + " = 0.0;\n";
  }
  s += r.cached;
  for (uint32_t c = 0; c < kCached; ++c) {
    const std::string v = "v" + std::to_string(c), j = "j" + std::to_string(c);
    s += "  if (" + j + " < n) { " + accumulate(j, v) + " }\n";
  }
  s += "  for (var j = lid + " + std::to_string(kCached) + "u * WG; j < n; j = j + WG) {\n"
       "    let xj = xv(base + j);\n"
       "    " + accumulate("j", "xj") + "\n"
       "  }\n"
       "  let t = row_sum(lid, acc) / f32(n);\n";
  s += r.centered ? "  let mean = shift + t.x;\n" : "  let mean = 0.0;\n";
  const std::string var = r.centered ? "max_f32(t.y - t.x * t.x, 0.0)" : "t.y";  // NaN stays NaN
  s += r.eps_on_std ? "  let inv = 1.0 / (sqrt_f32(" + var + ") + eps());\n" : "  let inv = 1.0 / sqrt_f32(" + var + " + eps());\n";
  auto write = [&](const std::string& j, const std::string& v) {
    std::string w = "    let i = base + " + j + ";\n    var r = (" + v + " - mean) * inv;\n";
    if (!r.scale.empty()) w += "    r = r * " + r.scale + ";\n";
    if (!r.shift.empty()) w += "    r = r + " + r.shift + ";\n";
    return w + "    y_store(i, r);\n";
  };
  for (uint32_t c = 0; c < kCached; ++c) {
    std::string v = "v" + std::to_string(c), j = "j" + std::to_string(c);
    s += "  if (" + j + " < n) {\n    let j = " + j + ";\n" + write(j, v) + "  }\n";
  }
  s += "  for (var j = lid + " + std::to_string(kCached) + "u * WG; j < n; j = j + WG) {\n" + write("j", "xv(base + j)") + "  }\n";
  s += r.stats;
  return s;
}

void dispatch(GpuKernelContext& ctx, const shader::Program& p, std::vector<ValueRef> binds, uint64_t rows) {
  if (rows == 0) return;
  uint32_t x, y;
  grid_for(rows * p.workgroup_size(), p.workgroup_size(), ctx.limits, x, y);
  ctx.dispatch(p, std::move(binds), x, y);
}

}  // namespace onnxgpu::webgpu::row_norm
