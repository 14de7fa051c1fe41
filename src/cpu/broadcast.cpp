#include "cpu/broadcast.h"

namespace onnxgpu::cpu {

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

}  // namespace onnxgpu::cpu
