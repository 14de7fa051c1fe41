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

}  // namespace onnxgpu::ops
