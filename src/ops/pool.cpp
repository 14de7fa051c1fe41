#include "ops/pool.h"

#include <string>

namespace onnxgpu::ops {

double lp_exponent(const ir::Node& node, const Fail& fail) {
  const ir::Attribute* a = node.attr("p");
  if (!a) return 2.0;
  double p = a->kind == ir::Attribute::Kind::Float ? double(a->f) : double(a->i);
  if (!(p > 0)) raise(fail, "attribute 'p' must be positive, got " + std::to_string(p));
  return p;
}

PoolParams pool_params(const ir::Node& node, const Shape& x, bool lp, const Fail& fail) {
  std::vector<int64_t> ks = node.attr_ints("kernel_shape", {});
  if (ks.empty()) raise(fail, "attribute 'kernel_shape' is required");
  Shape in_sp(x.begin() + 2, x.end());
  PoolParams pp;
  pp.win = make_window(node, in_sp, ks, node.attr_int("ceil_mode", 0) != 0, fail);
  pp.include_pad = node.attr_int("count_include_pad", 0) != 0;
  pp.storage_order = node.attr_int("storage_order", 0);
  if (pp.storage_order != 0 && pp.storage_order != 1) raise(fail, "storage_order must be 0 or 1");
  if (lp) pp.p = lp_exponent(node, fail);
  pp.out = {x[0], x[1]};
  pp.out.insert(pp.out.end(), pp.win.out.begin(), pp.win.out.end());
  return pp;
}

RoiAlignParams roi_align_params(const ir::Node& node, int64_t opset, const Shape& x, const Shape& rois,
                                const Shape& batch_indices, const Fail& fail) {
  RoiAlignParams p;
  std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") raise(fail, "attribute 'mode' must be avg or max, got \"" + mode + "\"");
  p.max_mode = mode == "max";
  std::string ct = node.attr_string("coordinate_transformation_mode", opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ct != "half_pixel" && ct != "output_half_pixel")
    raise(fail, "attribute 'coordinate_transformation_mode' must be half_pixel or output_half_pixel, got \"" + ct + "\"");
  p.half_pixel = ct == "half_pixel";
  p.out_h = node.attr_int("output_height", 1);
  p.out_w = node.attr_int("output_width", 1);
  p.sampling_ratio = node.attr_int("sampling_ratio", 0);
  p.spatial_scale = node.attr_float("spatial_scale", 1.0f);
  if (p.out_h <= 0 || p.out_w <= 0) raise(fail, "output_height and output_width must be positive");
  if (p.sampling_ratio < 0) raise(fail, "attribute 'sampling_ratio' must not be negative");
  if (x.size() != 4) raise(fail, "input 'X' must be [N, C, H, W], got shape " + shape_str(x));
  if (rois.size() != 2 || rois[1] != 4) raise(fail, "input 'rois' must be [num_rois, 4], got shape " + shape_str(rois));
  if (batch_indices.size() != 1 || batch_indices[0] != rois[0])
    raise(fail, "input 'batch_indices' must be [" + std::to_string(rois[0]) + "] (one per roi), got shape " + shape_str(batch_indices));
  p.out = {rois[0], x[1], p.out_h, p.out_w};
  return p;
}

}  // namespace onnxgpu::ops
