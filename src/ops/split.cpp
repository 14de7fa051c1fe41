#include "ops/split.h"

namespace onnxgpu::ops {

std::vector<int64_t> split_sizes(const ir::Node& node, int64_t opset, int64_t axis, int64_t dim, const std::string& x,
                                 size_t outputs, bool has_input,
                                 const std::function<std::vector<int64_t>()>& input_sizes, const Fail& fail) {
  const int64_t n = int64_t(outputs);
  if (n == 0) raise(fail, "has no outputs");
  std::vector<int64_t> sizes;
  if (opset < 13 && node.has_attr("split")) {
    sizes = node.attr_ints("split");
  } else if ((opset < 2 || opset >= 13) && has_input) {
    sizes = input_sizes();  // empty: equal parts, as when omitted
  }
  if (!sizes.empty()) {
    if (int64_t(sizes.size()) != n)
      raise(fail, "split " + shape_str(sizes) + " has " + std::to_string(sizes.size()) + " entries for " + std::to_string(n) +
            " outputs");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) raise(fail, "split " + shape_str(sizes) + " has a negative size");
      sum += s;
    }
    if (sum != dim)
      raise(fail, "split " + shape_str(sizes) + " sums to " + std::to_string(sum) + " but axis " + std::to_string(axis) +
            " of input " + x + " has size " + std::to_string(dim));
    return sizes;
  }
  if (opset >= 18 && node.has_attr("num_outputs")) {
    int64_t k = node.attr_int("num_outputs", n);
    if (k != n) raise(fail, "num_outputs is " + std::to_string(k) + " but the node has " + std::to_string(n) + " outputs");
    int64_t chunk = (dim + n - 1) / n;
    if (chunk * (n - 1) > dim)
      raise(fail, "cannot split size " + std::to_string(dim) + " into " + std::to_string(n) + " chunks of " +
            std::to_string(chunk));
    sizes.assign(size_t(n), chunk);
    sizes.back() = dim - chunk * (n - 1);
    return sizes;
  }
  if (dim % n != 0)
    raise(fail, "axis " + std::to_string(axis) + " of input " + x + " (size " + std::to_string(dim) + ") cannot be split into " +
          std::to_string(n) + " equal parts");
  sizes.assign(size_t(n), dim / n);
  return sizes;
}

}  // namespace onnxgpu::ops
