// The geometry of sliding-window ops (Conv, ConvTranspose's im2col view, the pools): strides,
// dilations, pads and auto_pad read and checked once, the output dims, and the taps of a window.
// Used by the CPU reference (src/cpu/conv.cpp, pool.cpp) and the GPU kernels (src/webgpu/kernels/conv.cpp,
// pool.cpp), so both accept and reject the same nodes with the same messages.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu::ops {

// Advances a row-major multi-index over `shape`; false after the last one.
inline bool next_index(std::vector<int64_t>& idx, const Shape& shape) {
  for (size_t d = shape.size(); d-- > 0;) {
    if (++idx[d] < shape[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// Geometry of a sliding window op (Conv, pools) over the spatial dims of an input.
struct Window {
  Shape in;                 // spatial input dims
  Shape kernel;             // kernel dims
  std::vector<int64_t> strides, dilations;
  std::vector<int64_t> pad_begin, pad_end;
  Shape out;                // spatial output dims
  int64_t rank() const { return int64_t(in.size()); }
};

// Reads strides/dilations/pads/auto_pad of `n` and computes the output dims; a bad value goes to
// `fail`. `kernel` comes from the weights (Conv) or kernel_shape (pools). `ceil_mode` for pools.
inline Window make_window(const ir::Node& n, const Shape& in_spatial, const Shape& kernel, bool ceil_mode,
                          const Fail& fail, bool has_dilations = true) {
  size_t r = in_spatial.size();
  Window w;
  w.in = in_spatial;
  w.kernel = kernel;
  auto get = [&](const char* name, size_t count, int64_t def) {
    std::vector<int64_t> v = n.attr_ints(name, {});
    if (v.empty()) v.assign(count, def);
    if (v.size() != count)
      raise(fail, std::string("attribute '") + name + "' has " + std::to_string(v.size()) + " values, expected " +
               std::to_string(count) + " for " + std::to_string(r) + " spatial dims");
    return v;
  };
  if (kernel.size() != r) raise(fail, "kernel has rank " + std::to_string(kernel.size()) + " but input has " +
                                   std::to_string(r) + " spatial dims");
  w.strides = get("strides", r, 1);
  w.dilations = has_dilations ? get("dilations", r, 1) : std::vector<int64_t>(r, 1);
  std::vector<int64_t> pads = get("pads", 2 * r, 0);
  for (size_t i = 0; i < r; ++i) {
    if (w.strides[i] <= 0) raise(fail, "strides must be positive, got " + std::to_string(w.strides[i]));
    if (w.dilations[i] <= 0) raise(fail, "dilations must be positive, got " + std::to_string(w.dilations[i]));
    if (kernel[i] <= 0) raise(fail, "kernel dims must be positive, got " + shape_str(kernel));
    if (pads[i] < 0 || pads[i + r] < 0) raise(fail, "pads must be non-negative");
  }
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  w.pad_begin.assign(r, 0);
  w.pad_end.assign(r, 0);
  w.out.assign(r, 0);
  for (size_t i = 0; i < r; ++i) {
    int64_t eff = (kernel[i] - 1) * w.dilations[i] + 1;  // window extent
    int64_t s = w.strides[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t o = (in_spatial[i] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (o - 1) * s + eff - in_spatial[i]);
      int64_t small = total / 2, big = total - total / 2;
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : big;
      w.pad_end[i] = auto_pad == "SAME_UPPER" ? big : small;
      w.out[i] = o;
    } else if (auto_pad == "VALID") {
      int64_t span = in_spatial[i] - eff;
      if (span < 0) raise(fail, "window " + shape_str(kernel) + " is larger than the input " + shape_str(in_spatial));
      w.out[i] = span / s + 1;
    } else if (auto_pad == "NOTSET") {
      w.pad_begin[i] = pads[i];
      w.pad_end[i] = pads[i + r];
      int64_t span = in_spatial[i] + pads[i] + pads[i + r] - eff;
      if (span < 0)
        raise(fail, "window " + shape_str(kernel) + " (dilated) is larger than the padded input " +
                 shape_str(in_spatial));
      int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      // In ceil mode a last window that would start inside the end padding is dropped.
      if (ceil_mode && (o - 1) * s >= in_spatial[i] + pads[i]) --o;
      w.out[i] = o;
    } else {
      raise(fail, "unknown auto_pad '" + auto_pad + "'");
    }
  }
  return w;
}


// Floor division (Python's //) for possibly negative numerators and positive divisors.
inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The taps of the window at output position `o`: for each kernel position (row-major over w.kernel)
// whose input position lies inside the input, the pair (kernel linear index, input spatial linear offset).
inline void window_taps(const Window& w, const std::vector<int64_t>& o, std::vector<std::pair<int64_t, int64_t>>& taps) {
  taps.clear();
  size_t r = w.in.size();
  std::vector<int64_t> k(r, 0);
  int64_t nk = shape_numel(w.kernel);
  for (int64_t ki = 0; ki < nk; ++ki, next_index(k, w.kernel)) {
    int64_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < r && inside; ++d) {
      int64_t p = o[d] * w.strides[d] - w.pad_begin[d] + k[d] * w.dilations[d];
      inside = p >= 0 && p < w.in[d];
      off = off * w.in[d] + p;
    }
    if (inside) taps.emplace_back(ki, off);
  }
}

// The number of kernel positions of the window at `o` that lie inside the padded input
// [-pad_begin, in + pad_end) (AveragePool's divisor with count_include_pad).
inline int64_t window_padded_count(const Window& w, const std::vector<int64_t>& o) {
  int64_t count = 1;
  for (size_t d = 0; d < w.in.size(); ++d) {
    int64_t c = 0;
    for (int64_t k = 0; k < w.kernel[d]; ++k) {
      int64_t p = o[d] * w.strides[d] - w.pad_begin[d] + k * w.dilations[d];
      if (p >= -w.pad_begin[d] && p < w.in[d] + w.pad_end[d]) ++c;
    }
    count *= c;
  }
  return count;
}

}  // namespace onnxgpu::ops
