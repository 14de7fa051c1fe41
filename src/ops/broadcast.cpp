#include "ops/broadcast.h"

namespace onnxgpu::ops {

namespace {
// The ops that took the 'broadcast' attribute before opset 7.
bool had_broadcast_attribute(const std::string& op) {
  for (const char* o : {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"})
    if (op == o) return true;
  return false;
}
}  // namespace

Shape legacy_broadcast_b(const ir::Node& node, int64_t opset, const Shape& a, const Shape& b, const Fail& fail) {
  if (opset >= 7 || !had_broadcast_attribute(node.op_type)) return b;
  if (node.attr_int("broadcast", 0) == 0) {
    if (a != b)
      raise(fail, "inputs have shapes " + shape_str(a) + " and " + shape_str(b) + " but broadcast=0 (opset " +
                      std::to_string(opset) + " requires equal shapes)");
    return b;
  }
  int64_t ra = int64_t(a.size()), rb = int64_t(b.size());
  if (rb > ra) raise(fail, "input B " + shape_str(b) + " has a higher rank than input A " + shape_str(a));
  int64_t axis = node.has_attr("axis") ? node.attr_int("axis", 0) : ra - rb;
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra) raise(fail, "attribute 'axis' does not place B " + shape_str(b) + " inside A " + shape_str(a));
  Shape r(size_t(ra), 1);
  for (int64_t i = 0; i < rb; ++i) r[size_t(axis + i)] = b[size_t(i)];
  return r;
}

}  // namespace onnxgpu::ops
