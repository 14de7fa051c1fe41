// Plan-time helpers of the GPU layout kernels (src/webgpu/kernels/layout.cpp).
#pragma once
#include <algorithm>
#include <cstdint>

namespace onnxgpu::webgpu {

// One sliced axis: the first element taken and how many (ONNX Slice-10+ clamping, the same as the
// CPU reference in src/cpu/layout.cpp; INT64_MAX / INT64_MIN sentinels included).
struct SliceRange {
  int64_t start = 0;
  int64_t count = 0;
};

// `dim` >= 0, `step` != 0 (the caller checks).
inline SliceRange slice_range(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;  // INT64_MIN + dim cannot overflow: dim >= 0
  if (end < 0) end += dim;
  // min(max()), not std::clamp: with dim == 0 and a negative step the bounds cross.
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
  SliceRange r;
  if (step > 0) {
    start = clamp(start, 0, dim);
    end = clamp(end, 0, dim);
    r.count = end > start ? int64_t((__int128(end) - start - 1) / step + 1) : 0;
  } else {
    start = clamp(start, 0, dim - 1);
    end = clamp(end, -1, dim - 1);
    r.count = start > end ? int64_t((__int128(start) - end - 1) / -__int128(step) + 1) : 0;
  }
  r.start = start;
  return r;
}

}  // namespace onnxgpu::webgpu
