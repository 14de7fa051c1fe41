#include "ops/reduce.h"

#include <string>

namespace onnxgpu::ops {

std::vector<bool> reduced_dims(const ir::Node& node, int64_t opset, int64_t rank, int64_t input_since,
                               const std::function<const Tensor*()>& axes_input, const Fail& fail) {
  bool from_input = opset >= input_since;
  std::vector<int64_t> axes;
  std::string what;
  if (from_input) {
    what = "input 1 ('axes')";
    if (const Tensor* a = axes_input()) {
      if (a->dtype() != DType::Int64) raise(fail, what + " must be int64, got " + a->describe());
      if (a->rank() > 1) raise(fail, what + " must be 1-D, got " + a->describe());
      axes = a->to_int64_vector();
    }
  } else {
    what = "attribute 'axes'";
    axes = node.attr_ints("axes");
  }
  if (axes.empty()) {
    bool noop = from_input && node.attr_int("noop_with_empty_axes", 0) != 0;
    // noop: reduce over no axis at all (each element is its own group).
    return std::vector<bool>(size_t(rank), !noop);
  }
  std::vector<bool> mask(size_t(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      raise(fail, what + ": axis " + std::to_string(a) + " is out of range for input rank " + std::to_string(rank));
    int64_t n = a < 0 ? a + rank : a;
    if (mask[size_t(n)]) raise(fail, what + ": axis " + std::to_string(a) + " appears more than once");
    mask[size_t(n)] = true;
  }
  return mask;
}

}  // namespace onnxgpu::ops
