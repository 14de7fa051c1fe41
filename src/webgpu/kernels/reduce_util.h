// Helpers shared by the GPU reduction-like kernels (reduce.cpp, softmax.cpp, sort.cpp): workgroup
// sizing from the device limits and the [outer, n, inner] view of a tensor around one axis.
#pragma once
#include <cstdint>
#include <string>

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

// A tensor seen as [outer, n, inner] around one axis.
struct AxisSplit {
  uint64_t outer = 1, n = 1, inner = 1;
};

inline AxisSplit split_at_axis(const Shape& s, int64_t axis) {
  AxisSplit r;
  for (int64_t d = 0; d < int64_t(s.size()); ++d) {
    uint64_t v = uint64_t(s[size_t(d)]);
    if (d < axis) r.outer *= v;
    else if (d == axis) r.n = v;
    else r.inner *= v;
  }
  return r;
}

// The shape coerced to 2D at `axis`: [prod(dims[:axis]), prod(dims[axis:])], as a split with inner 1.
inline AxisSplit coerce_2d(const Shape& s, int64_t axis) {
  AxisSplit r;
  for (int64_t d = 0; d < int64_t(s.size()); ++d) (d < axis ? r.outer : r.n) *= uint64_t(s[size_t(d)]);
  return r;
}

// WGSL: `isnan_<name>(v)` for a value of the family `fam` (false for integer families).
inline std::string isnan_fn(const std::string& name, const std::string& fam, const std::string& type) {
  return "fn isnan_" + name + "(v: " + type + ") -> bool { return " +
         (fam == "f32" ? std::string("isnan_f32(v)") : std::string("false")) + "; }\n";
}

}  // namespace onnxgpu::webgpu::reduce_util
