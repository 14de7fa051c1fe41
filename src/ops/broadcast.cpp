#include "ops/broadcast.h"

#include <algorithm>

namespace onnxgpu::ops {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      throw InvalidArgument("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  Shape out;
  for (const Shape& s : shapes) out = broadcast_shapes(out, s);
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  if (in.size() > out.size())
    throw InvalidArgument("shape " + shape_str(in) + " cannot be broadcast to " + shape_str(out));
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> in_st = shape_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[i + off]) st[i + off] = in_st[i];
    else if (in[i] == 1) st[i + off] = 0;
    else throw InvalidArgument("shape " + shape_str(in) + " cannot be broadcast to " + shape_str(out));
  }
  return st;
}

std::vector<int64_t> broadcast_index_map(const Shape& in, const Shape& out) {
  std::vector<int64_t> st = broadcast_strides(in, out);
  int64_t n = shape_numel(out);
  std::vector<int64_t> map(static_cast<size_t>(n));
  size_t r = out.size();
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    map[size_t(i)] = off;
    for (size_t d = r; d-- > 0;) {  // odometer increment
      if (++idx[d] < out[d]) {
        off += st[d];
        break;
      }
      off -= st[d] * (out[d] - 1);
      idx[d] = 0;
    }
  }
  return map;
}

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
