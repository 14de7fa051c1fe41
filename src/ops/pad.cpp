#include "ops/pad.h"

#include <numeric>

namespace onnxgpu::ops {

Shape tile_shape(const Shape& x, const std::vector<int64_t>& repeats, const Fail& fail) {
  if (repeats.size() != x.size())
    raise(fail, "repeats " + shape_str(repeats) + " must have one entry per dimension of input " + shape_str(x));
  Shape out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (repeats[i] < 0) raise(fail, "repeats " + shape_str(repeats) + " has a negative entry");
    out[i] = x[i] * repeats[i];
  }
  return out;
}

PadGeometry pad_geometry(const Shape& x, const std::string& mode, const std::vector<int64_t>& pads,
                         std::vector<int64_t> axes, bool axes_given, const Fail& fail) {
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    raise(fail, "mode '" + mode + "' is not one of constant, reflect, edge, wrap");
  size_t r = x.size();
  if (!axes_given) {
    axes.resize(r);
    std::iota(axes.begin(), axes.end(), 0);
  }
  size_t na = axes.size();
  if (pads.size() != 2 * na)
    raise(fail, "pads " + shape_str(pads) + " must have " + std::to_string(2 * na) + " entries for input " + shape_str(x));
  PadGeometry g;
  g.begin.assign(r, 0);
  g.end.assign(r, 0);
  for (size_t i = 0; i < na; ++i) {
    g.begin[size_t(axes[i])] = pads[i];
    g.end[size_t(axes[i])] = pads[na + i];
  }
  g.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    g.out[i] = x[i] + g.begin[i] + g.end[i];
    if (g.out[i] < 0)
      raise(fail, "pads " + shape_str(pads) + " crop more than the size of axis " + std::to_string(i) + " of input " +
                      shape_str(x));
    if (mode != "constant" && x[i] == 0 && g.out[i] > 0)
      raise(fail, "cannot pad the empty axis " + std::to_string(i) + " of input " + shape_str(x) + " in mode " + mode);
  }
  return g;
}

}  // namespace onnxgpu::ops
