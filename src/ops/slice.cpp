#include "ops/slice.h"

#include <algorithm>
#include <numeric>

namespace onnxgpu::ops {

SlicedAxis slice_range(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;  // INT64_MIN + dim cannot overflow: dim >= 0
  if (end < 0) end += dim;
  // min(max()), not std::clamp: with dim == 0 and a negative step the bounds cross.
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
  SlicedAxis r;
  r.step = step;
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

SliceParams slice_params(const ir::Node& node, int64_t opset, const std::function<bool(size_t)>& given,
                         const std::function<std::vector<int64_t>(size_t, const char*)>& ints, const Fail& fail) {
  SliceParams p;
  if (opset < 10) {
    if (!node.has_attr("starts") || !node.has_attr("ends")) {
      raise(fail, "attributes 'starts' and 'ends' are required before opset 10");
    }
    p.starts = node.attr_ints("starts");
    p.ends = node.attr_ints("ends");
    p.have_axes = node.has_attr("axes");
    p.axes = node.attr_ints("axes");
    return p;
  }
  p.starts = ints(1, "starts");
  p.ends = ints(2, "ends");
  if (given(3)) {
    p.have_axes = true;
    p.axes = ints(3, "axes");
  }
  if (given(4)) p.steps = ints(4, "steps");
  return p;
}

std::vector<SlicedAxis> plan_slice(const Shape& x, SliceParams p, const Fail& fail) {
  const int64_t r = int64_t(x.size());
  const size_t n = p.starts.size();
  if (p.ends.size() != n) raise(fail, "starts " + shape_str(p.starts) + " and ends " + shape_str(p.ends) + " differ in length");
  if (!p.have_axes) {
    if (int64_t(n) > r) raise(fail, "starts has " + std::to_string(n) + " entries for input " + shape_str(x));
    p.axes.resize(n);
    std::iota(p.axes.begin(), p.axes.end(), 0);
  }
  if (p.axes.size() != n) raise(fail, "axes " + shape_str(p.axes) + " and starts " + shape_str(p.starts) + " differ in length");
  if (p.steps.empty()) p.steps.assign(n, 1);
  if (p.steps.size() != n) raise(fail, "steps " + shape_str(p.steps) + " and starts " + shape_str(p.starts) + " differ in length");
  std::vector<bool> seen(size_t(r), false);
  std::vector<SlicedAxis> out;
  for (size_t i = 0; i < n; ++i) {
    int64_t a = p.axes[i];
    if (r == 0) raise(fail, "axis " + std::to_string(a) + " given for a rank-0 tensor");
    if (a < -r || a >= r) raise(fail, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
    if (a < 0) a += r;
    if (seen[size_t(a)]) raise(fail, "axis " + std::to_string(p.axes[i]) + " is repeated");
    seen[size_t(a)] = true;
    if (p.steps[i] == 0) raise(fail, "steps " + shape_str(p.steps) + " has a 0 step");
    SlicedAxis s = slice_range(x[size_t(a)], p.starts[i], p.ends[i], p.steps[i]);
    s.axis = size_t(a);
    out.push_back(s);
  }
  return out;
}

}  // namespace onnxgpu::ops
