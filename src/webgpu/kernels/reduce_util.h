// Helpers shared by the GPU reduction-like kernels (reduce.cpp, softmax.cpp, sort.cpp): workgroup
// sizing from the device limits and the [outer, n, inner] view of a tensor around one axis.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ops/axis.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu::reduce_util {

// The largest power-of-two workgroup size <= 256 that the device allows, with `shared_bytes_per_thread`
// bytes of workgroup memory per invocation. Depends on the device only, never on tensor sizes.
inline uint32_t workgroup_size(const Limits& lim, uint32_t shared_bytes_per_thread) {
  uint32_t wg = 256;
  auto over = [&](uint32_t w) {
    if (lim.max_compute_invocations_per_workgroup && w > lim.max_compute_invocations_per_workgroup) return true;
    if (lim.max_compute_workgroup_size_x && w > lim.max_compute_workgroup_size_x) return true;
    if (lim.max_compute_workgroup_storage_size && uint64_t(w) * shared_bytes_per_thread > lim.max_compute_workgroup_storage_size)
      return true;
    return false;
  };
  while (wg > 1 && over(wg)) wg /= 2;
  return wg;
}

// Dispatches `p` with one workgroup per group in [0, groups) (the program reads `wg`, the linear
// workgroup index, and returns for wg >= its own count). Nothing is dispatched for zero groups.
inline void dispatch_groups(GpuKernelContext& ctx, const shader::Program& p, std::vector<ValueRef> bindings,
                            uint64_t groups) {
  if (groups == 0) return;
  uint32_t x = 0, y = 0;
  grid_for(groups * p.workgroup_size(), p.workgroup_size(), ctx.limits, x, y);
  ctx.dispatch(p, std::move(bindings), x, y);
}

// Rows (the elements that make one result) are folded by segments of a workgroup: `seg` invocations
// per row, a power of two up to the workgroup size, about half the row length, so that short rows
// share a workgroup instead of leaving most of one idle. The segment size is a uniform: one pipeline
// serves every row length.
inline uint32_t segment_size(uint64_t row_length, uint32_t wg) {
  uint64_t want = (row_length + 1) / 2;
  uint32_t s = 1;
  while (s < want && s < wg) s *= 2;
  return s;
}

// $ONNXGPU_ROW_WG=N: the invocations a row takes in the row kernels that size them by the row
// (row_norm::workgroup, the global pools' segments) fixed to N, for measuring that sizing on a device
// (a power of two; 256: a workgroup per row, as before it); 0 when unset.
inline uint32_t forced_row_invocations() {
  const char* e = std::getenv("ONNXGPU_ROW_WG");
  return e && *e ? uint32_t(std::strtoul(e, nullptr, 10)) : 0u;
}

// Declares the uniforms `groups` (the number of rows) and `seg` (the segment size).
inline void segment_uniforms(shader::Program& p, uint64_t rows, uint32_t seg) {
  p.uniform("groups", uint32_t(rows));
  p.uniform("seg", seg);
}

// WGSL at the start of main(): this invocation's `lane` in its segment, the segment's first shared-
// memory slot `head`, its `row`, and whether the row exists (`live`). No early return: every
// invocation reaches the workgroup barriers.
inline const char* kSegmentPrelude =
    "  let S = seg();\n"
    "  let lane = lid % S;\n"
    "  let head = lid - lane;\n"
    "  let row = wg * (WG / S) + lid / S;\n"
    "  let live = row < groups();\n";

// WGSL of a tree fold within each segment: `step` folds shared slot lid + s into slot lid; the result
// ends in slot `head`. Starts with a barrier (the slots were just written) and ends with one.
inline std::string segment_tree(const std::string& step) {
  return "  workgroupBarrier();\n"
         "  for (var s = S / 2u; s > 0u; s = s >> 1u) {\n"
         "    if (lane < s) {\n" + step +
         "    }\n"
         "    workgroupBarrier();\n"
         "  }\n";
}

// Dispatches `p` for `rows` rows folded by segments of `seg` invocations. Nothing for zero rows.
inline void dispatch_rows(GpuKernelContext& ctx, const shader::Program& p, std::vector<ValueRef> bindings,
                          uint64_t rows, uint32_t seg) {
  if (rows == 0) return;
  uint64_t per_group = p.workgroup_size() / seg;
  uint64_t groups = (rows + per_group - 1) / per_group;
  uint32_t x = 0, y = 0;
  grid_for(groups * p.workgroup_size(), p.workgroup_size(), ctx.limits, x, y);
  ctx.dispatch(p, std::move(bindings), x, y);
}

// The [outer, n, inner] view of a shape around one axis (src/ops/axis.h).
using ops::AxisSplit;
using ops::coerce_2d;
using ops::split_at_axis;

// exp(x - shift) for a softmax-like sum (exp_f32 and log_f32 are the shader layer's, exact at the
// extremes). NaN is tested on the loaded x, before any arithmetic (a compiler that assumes no NaN may
// drop the test on a computed value).
inline const char* kExpLog = R"(
fn exp_shifted(x: f32, shift: f32) -> f32 { if (isnan_f32(x)) { return f32_nan(); } return exp_f32(x - shift); }
)";

}  // namespace onnxgpu::webgpu::reduce_util
