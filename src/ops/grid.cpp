#include "ops/grid.h"

namespace onnxgpu::ops {

GridSampleAttrs grid_sample_attrs(const ir::Node& n, const Shape& x, const Shape& grid, Shape& out, const Fail& fail) {
  GridSampleAttrs a;
  std::string mode = n.attr_string("mode", "linear");  // bilinear (the same) before opset 20
  if (mode == "linear" || mode == "bilinear") a.mode = GridSampleAttrs::Mode::Linear;
  else if (mode == "nearest") a.mode = GridSampleAttrs::Mode::Nearest;
  else if (mode == "cubic" || mode == "bicubic") a.mode = GridSampleAttrs::Mode::Cubic;
  else raise(fail, "attribute 'mode' must be linear, nearest or cubic (bilinear, bicubic before opset 20), got \"" + mode + "\"");
  std::string pad = n.attr_string("padding_mode", "zeros");
  if (pad == "zeros") a.padding = GridSampleAttrs::Padding::Zeros;
  else if (pad == "border") a.padding = GridSampleAttrs::Padding::Border;
  else if (pad == "reflection") a.padding = GridSampleAttrs::Padding::Reflection;
  else raise(fail, "attribute 'padding_mode' must be zeros, border or reflection, got \"" + pad + "\"");
  a.align_corners = n.attr_int("align_corners", 0) != 0;
  if (x.size() < 3) raise(fail, "input 'X' must have rank >= 3 (N, C, spatial dims...), got shape " + shape_str(x));
  size_t d = x.size() - 2;
  if (grid.size() != x.size())
    raise(fail, "input 'grid' " + shape_str(grid) + " must have the rank of input 'X' " + shape_str(x));
  if (grid[0] != x[0])
    raise(fail, "input 'grid' " + shape_str(grid) + " must have the batch size of input 'X' " + shape_str(x));
  if (grid.back() != int64_t(d))
    raise(fail, "the last dim of input 'grid' " + shape_str(grid) + " must be " + std::to_string(d) +
                    " (the spatial rank of input 'X' " + shape_str(x) + ")");
  for (size_t k = 2; k < x.size(); ++k)
    if (x[k] <= 0 && shape_numel(grid) > 0)
      raise(fail, "input 'X' " + shape_str(x) + " has an empty spatial dim to sample from");
  out = {x[0], x[1]};
  for (size_t k = 1; k + 1 < grid.size(); ++k) out.push_back(grid[k]);
  return a;
}

Shape affine_grid_shape(const Shape& theta, const std::vector<int64_t>& size, const Fail& fail) {
  if (size.size() != 4 && size.size() != 5)
    raise(fail, "input 'size' must have 4 (N, C, H, W) or 5 (N, C, D, H, W) values, got " + std::to_string(size.size()));
  int64_t d = int64_t(size.size()) - 2;
  if (theta.size() != 3 || theta[1] != d || theta[2] != d + 1)
    raise(fail, "input 'theta' must have shape [N, " + std::to_string(d) + ", " + std::to_string(d + 1) + "] for " +
                    std::to_string(d) + "-D sizes, got " + shape_str(theta));
  if (theta[0] != size[0])
    raise(fail, "input 'theta' " + shape_str(theta) + " and input 'size' disagree on N (" + std::to_string(size[0]) + ")");
  Shape out{size[0]};
  for (size_t k = 2; k < size.size(); ++k) {
    if (size[k] < 0) raise(fail, "input 'size' has a negative dim " + std::to_string(size[k]));
    out.push_back(size[k]);
  }
  out.push_back(d);
  return out;
}

}  // namespace onnxgpu::ops
