#include "ops/layout.h"

#include <string>

#include "ops/axis.h"
#include "ops/broadcast.h"

namespace onnxgpu::ops {

ConcatShape concat_shape(const ir::Node& node, int64_t opset, const std::vector<Shape>& inputs, const Fail& fail) {
  if (inputs.empty()) raise(fail, "needs at least one input");
  const Shape& first = inputs[0];
  const int64_t r = int64_t(first.size());
  if (r == 0) raise(fail, "cannot concatenate scalars (input 0 is " + shape_str(first) + ")");
  if (opset >= 4 && !node.has_attr("axis")) raise(fail, "attribute 'axis' is required");
  ConcatShape c;
  c.axis = normalize_axis(node.attr_int("axis", 1), r, fail);
  c.out = first;
  c.out[size_t(c.axis)] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& s = inputs[i];
    bool ok = int64_t(s.size()) == r;
    for (int64_t d = 0; ok && d < r; ++d) ok = d == c.axis || s[size_t(d)] == first[size_t(d)];
    if (!ok)
      raise(fail, "input " + std::to_string(i) + " " + shape_str(s) + " does not match input 0 " + shape_str(first) +
                      " outside axis " + std::to_string(c.axis));
    c.out[size_t(c.axis)] += s[size_t(c.axis)];
  }
  return c;
}

Shape expand_shape(const Shape& x, const std::vector<int64_t>& shape, const Fail& fail) {
  for (int64_t d : shape)
    if (d < 0) raise(fail, "shape " + shape_str(shape) + " has a negative dimension");
  try {
    return broadcast_shapes(x, shape);
  } catch (const InvalidArgument& e) {
    raise(fail, "cannot expand input " + shape_str(x) + " to shape " + shape_str(shape) + ": " + e.what());
  }
}

// X [N, C, H, W] and attribute 'blocksize' (> 0).
static int64_t block_of(const ir::Node& node, const Shape& x, const Fail& fail) {
  if (x.size() != 4) raise(fail, "input must be 4-D [N,C,H,W], got " + shape_str(x));
  int64_t b = node.attr_int("blocksize", 0);
  if (b <= 0) raise(fail, "attribute 'blocksize' must be positive");
  return b;
}

BlockTranspose depth_to_space(const ir::Node& node, int64_t opset, const Shape& x, const Fail& fail) {
  const int64_t b = block_of(node, x, fail);
  const std::string mode = opset >= 11 ? node.attr_string("mode", "DCR") : "DCR";
  const int64_t n = x[0], c = x[1], h = x[2], w = x[3];
  if (c % (b * b) != 0)
    raise(fail, "channels of input " + shape_str(x) + " are not divisible by blocksize^2 = " + std::to_string(b * b));
  const int64_t oc = c / (b * b);
  BlockTranspose t;
  if (mode == "DCR") t = {{n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2}, {}};
  else if (mode == "CRD") t = {{n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3}, {}};
  else raise(fail, "mode '" + mode + "' is not DCR or CRD");
  t.out = {n, oc, h * b, w * b};
  return t;
}

BlockTranspose space_to_depth(const ir::Node& node, const Shape& x, const Fail& fail) {
  const int64_t b = block_of(node, x, fail);
  const int64_t n = x[0], c = x[1], h = x[2], w = x[3];
  if (h % b != 0 || w % b != 0)
    raise(fail, "height and width of input " + shape_str(x) + " must be divisible by blocksize " + std::to_string(b));
  // mode (opset 25): DCR puts the block offset before the channel in the output depth, CRD after it.
  const std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") raise(fail, "mode '" + mode + "' is not DCR or CRD");
  return {{n, c, h / b, b, w / b, b}, mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4} : std::vector<int64_t>{0, 1, 3, 5, 2, 4},
          {n, c * b * b, h / b, w / b}};
}

CropPad center_crop_pad(const ir::Node& node, const Shape& x, const std::vector<int64_t>& shape, const Fail& fail) {
  const int64_t r = int64_t(x.size());
  std::vector<int64_t> axes = node.attr_ints("axes", {});
  if (!node.has_attr("axes"))
    for (int64_t a = 0; a < r; ++a) axes.push_back(a);
  if (axes.size() != shape.size())
    raise(fail, "input 'shape' has " + std::to_string(shape.size()) + " values for " + std::to_string(axes.size()) + " axes");
  CropPad c;
  c.out = x;
  c.begin.assign(size_t(r), 0);
  std::vector<bool> seen(size_t(r), false);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
    if (a < 0 || a >= r) raise(fail, "axis " + std::to_string(axes[k]) + " is out of range for input " + shape_str(x));
    if (seen[size_t(a)]) raise(fail, "axis " + std::to_string(axes[k]) + " is repeated");
    seen[size_t(a)] = true;
    int64_t n = x[size_t(a)], s = shape[k];
    if (s < 0) raise(fail, "input 'shape' has a negative length " + std::to_string(s));
    c.out[size_t(a)] = s;
    c.begin[size_t(a)] = s >= n ? (s - n) / 2 : -((n - s) / 2);
  }
  return c;
}

ReverseSequenceAxes reverse_sequence_axes(const ir::Node& node, const Shape& x, const Shape& lens, const Fail& fail) {
  ReverseSequenceAxes a;
  a.batch_axis = node.attr_int("batch_axis", 1);
  a.time_axis = node.attr_int("time_axis", 0);
  if (x.size() < 2) raise(fail, "input 'input' must have rank >= 2, got " + shape_str(x));
  if (!((a.batch_axis == 0 && a.time_axis == 1) || (a.batch_axis == 1 && a.time_axis == 0)))
    raise(fail, "attributes batch_axis and time_axis must be 0 and 1 (in either order), got " +
                    std::to_string(a.batch_axis) + " and " + std::to_string(a.time_axis));
  if (lens.size() != 1 || lens[0] != x[size_t(a.batch_axis)])
    raise(fail, "input 'sequence_lens' " + shape_str(lens) + " must be 1-D with the batch size " +
                    std::to_string(x[size_t(a.batch_axis)]) + " of input 'input' " + shape_str(x));
  return a;
}

}  // namespace onnxgpu::ops
