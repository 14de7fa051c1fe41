// Axes, the part both kernel sets share: an axis attribute normalised against a rank, and a shape seen
// around one axis as [outer, n, inner] (the reductions, Softmax, TopK, CumSum, ArgMax).
#pragma once
#include <cstdint>
#include <string>

#include "ops/fail.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu::ops {

// `axis` in [-rank, rank - 1] (a scalar's only axis is 0 or -1), made non-negative.
inline int64_t normalize_axis(int64_t axis, int64_t rank, const Fail& fail) {
  int64_t lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  if (axis < lo || axis > hi)
    raise(fail, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// A shape seen as [outer, n, inner] around one axis: element (o, i, k) lies at (o * n + i) * inner + k.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
  int64_t at(int64_t o, int64_t i, int64_t k) const { return (o * n + i) * inner + k; }
};

inline AxisSplit split_at_axis(const Shape& s, int64_t axis) {
  AxisSplit r;
  for (int64_t d = 0; d < int64_t(s.size()); ++d) {
    if (d < axis) r.outer *= s[size_t(d)];
    else if (d == axis) r.n = s[size_t(d)];
    else r.inner *= s[size_t(d)];
  }
  return r;
}

// The shape coerced to 2-D at `axis` ([prod(dims[:axis]), prod(dims[axis:])]), as a split with inner 1.
inline AxisSplit coerce_2d(const Shape& s, int64_t axis) {
  AxisSplit r;
  for (int64_t d = 0; d < int64_t(s.size()); ++d) (d < axis ? r.outer : r.n) *= s[size_t(d)];
  return r;
}

}  // namespace onnxgpu::ops
