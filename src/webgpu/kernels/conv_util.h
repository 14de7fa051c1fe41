// Helpers shared by the GPU sliding-window kernels (conv.cpp, pool.cpp): the window geometry of the
// shared op logic (ops::make_window, as the CPU reference computes it), and the spatial parameters as
// uniform arrays.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/window.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu::convutil {

// The geometry of the window (strides, dilations, pads, auto_pad, ceil_mode) over `in_spatial`, with the
// output dims, validated as on the CPU (same errors, same shapes).
inline ops::Window window(const GpuKernelContext& ctx, const Shape& in_spatial, const Shape& kernel, bool ceil_mode) {
  return ops::make_window(ctx.node, in_spatial, kernel, ceil_mode, [&](const std::string& m) { ctx.fail(m); });
}

// A uniform array of (possibly negative) integers: read back in WGSL as bitcast<i32>(name(d)).
inline void int_array(shader::Program& p, const std::string& name, const std::vector<int64_t>& v) {
  std::vector<uint32_t> u;
  for (int64_t x : v) u.push_back(uint32_t(int32_t(x)));
  p.uniform_array(name, u);
}

// Fails unless every value fits the 32-bit signed arithmetic of the shaders.
inline void check_i32(const GpuKernelContext& ctx, const std::vector<int64_t>& v, const char* what) {
  for (int64_t x : v)
    if (x > INT32_MAX / 2 || x < -(INT32_MAX / 2))
      ctx.unsupported(std::string(what) + " value " + std::to_string(x) + " is too large for 32-bit GPU indexing");
}

inline std::vector<int64_t> dims(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

}  // namespace onnxgpu::webgpu::convutil
