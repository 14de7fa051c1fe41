#include "webgpu/kernels/norm_prologue.h"

#include <algorithm>

#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

namespace {
constexpr uint32_t kL1 = 32;  // the first level of the sums over the workgroup: at most this many invocations
}

uint32_t row_stats_bytes(uint32_t rows, bool centered) { return 4 * rows * (kL1 * (centered ? 2 : 1) + 2); }

// One pass over the rows (each invocation adds its values serially), then per row and sum the
// workgroup's values added by NS_L1 invocations into ns_part (two barriers per sum), then per row the
// NS_L1 partial sums and the statistics: the sums in the order the normalization kernels add them
// (normalization.cpp's row_sum).
RowStatsWgsl row_stats_wgsl(uint32_t rows, uint32_t wg, bool centered, const std::string& scratch,
                            const std::function<std::string(uint32_t, const std::string&)>& per_value) {
  auto n_ = [](uint32_t v) { return std::to_string(v); };
  const uint32_t l1 = std::min(wg, kL1), sums = centered ? 2 : 1;
  RowStatsWgsl r;
  r.decl = "const NS_L1: u32 = " + u32_lit(l1) + ";\n"
           "var<workgroup> ns_part: array<f32, " + u32_lit(uint64_t(l1) * rows * sums) +
           ">;  // [sum][MR][NS_L1]: the row sums' first level\n"
           "var<workgroup> ns_mean: array<f32, " + u32_lit(rows) + ">;  // per row of A: its mean (0 uncentered)\n"
           "var<workgroup> ns_inv: array<f32, " + u32_lit(rows) + ">;  // per row of A: 1 / sqrt(variance + eps)\n";
  if (centered)  // the shift: the row's first value (an infinite one would make every difference NaN)
    r.decl += "fn ns_shift(m: u32) -> f32 { let f = nv(m, 0u); return select(0.0, f, abs(f) < f32_inf()); }\n";
  std::string& b = r.body;
  for (uint32_t m = 0; m < rows; ++m) {
    if (centered) b += "  let ns_s" + n_(m) + " = ns_shift(" + u32_lit(m) + ");\n";
    b += "  var ns_a" + n_(m) + " = vec2<f32>(0.0);\n";
  }
  b += "  for (var k = lid; k < K(); k = k + WG) {\n";
  for (uint32_t m = 0; m < rows; ++m) {
    const std::string v = "ns_v" + n_(m), a = "ns_a" + n_(m);
    b += "    let " + v + " = nv(" + u32_lit(m) + ", k);\n";
    if (per_value) b += "    " + per_value(m, v) + "\n";
    b += centered ? "    let ns_d" + n_(m) + " = " + v + " - ns_s" + n_(m) + ";\n    " + a + " = " + a + " + vec2<f32>(ns_d" +
                        n_(m) + ", ns_d" + n_(m) + " * ns_d" + n_(m) + ");\n"
                  : "    " + a + ".y = " + a + ".y + " + v + " * " + v + ";\n";
  }
  b += "  }\n";
  for (uint32_t c = 0; c < sums; ++c)
    for (uint32_t m = 0; m < rows; ++m) {
      const std::string comp = centered && c == 0 ? ".x" : ".y";
      b += "  workgroupBarrier();\n"
           "  " + scratch + "[lid] = ns_a" + n_(m) + comp + ";\n"
           "  workgroupBarrier();\n"
           "  if (lid < NS_L1) {\n"
           "    var t = " + scratch + "[lid];\n"
           "    for (var j = lid + NS_L1; j < WG; j = j + NS_L1) { t = t + " + scratch + "[j]; }\n"
           "    ns_part[" + u32_lit(uint64_t(c * rows + m) * l1) + " + lid] = t;\n"
           "  }\n";
    }
  b += "  workgroupBarrier();\n"
       "  if (lid < " + u32_lit(rows) + ") {\n"
       "    var t = vec2<f32>(0.0);\n"
       "    for (var j = 0u; j < NS_L1; j = j + 1u) {\n";
  b += centered ? "      t = t + vec2<f32>(ns_part[lid * NS_L1 + j], ns_part[(" + u32_lit(rows) + " + lid) * NS_L1 + j]);\n"
                : "      t.y = t.y + ns_part[lid * NS_L1 + j];\n";
  b += "    }\n"
       "    t = t / f32(K());\n";
  b += centered ? "    ns_mean[lid] = ns_shift(lid) + t.x;\n"
                  "    ns_inv[lid] = 1.0 / sqrt_f32(max_f32(t.y - t.x * t.x, 0.0) + eps());\n"  // NaN stays NaN
                : "    ns_mean[lid] = 0.0;\n"
                  "    ns_inv[lid] = 1.0 / sqrt_f32(t.y + eps());\n";
  b += "  }\n"
       "  workgroupBarrier();\n";
  return r;
}

}  // namespace onnxgpu::webgpu
