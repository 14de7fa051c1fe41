#include "ops/matmul.h"

#include "ops/broadcast.h"

namespace onnxgpu::ops {

MatMulShape matmul_shape(const Shape& a, const Shape& b, const Fail& fail) {
  if (a.empty() || b.empty())
    raise(fail, "MatMul inputs must have rank >= 1, got A " + shape_str(a) + " and B " + shape_str(b));
  Shape a2 = a, b2 = b;
  if (a.size() == 1) a2.insert(a2.begin(), 1);
  if (b.size() == 1) b2.push_back(1);
  MatMulShape s;
  s.M = a2[a2.size() - 2];
  s.K = a2.back();
  s.N = b2.back();
  if (b2[b2.size() - 2] != s.K) raise(fail, "inner dimensions differ: A " + shape_str(a) + " and B " + shape_str(b));
  s.a_batch.assign(a2.begin(), a2.end() - 2);
  s.b_batch.assign(b2.begin(), b2.end() - 2);
  try {
    s.batch = broadcast_shapes(s.a_batch, s.b_batch);
  } catch (const Error&) {
    raise(fail, "batch dimensions of A " + shape_str(a) + " and B " + shape_str(b) + " cannot be broadcast");
  }
  s.out = s.batch;
  if (a.size() != 1) s.out.push_back(s.M);
  if (b.size() != 1) s.out.push_back(s.N);
  return s;
}

GemmShape gemm_shape(const ir::Node& node, const Shape& a, const Shape& b, const Shape* c, const Fail& fail) {
  if (a.size() != 2 || b.size() != 2) raise(fail, "A and B must be 2-D, got " + shape_str(a) + " and " + shape_str(b));
  GemmShape s;
  s.trans_a = node.attr_int("transA", 0) != 0;
  s.trans_b = node.attr_int("transB", 0) != 0;
  s.M = s.trans_a ? a[1] : a[0];
  s.K = s.trans_a ? a[0] : a[1];
  int64_t kb = s.trans_b ? b[1] : b[0];
  s.N = s.trans_b ? b[0] : b[1];
  if (s.K != kb)
    raise(fail, "inner dimensions differ: A " + shape_str(a) + (s.trans_a ? " (transposed)" : "") + " and B " +
                    shape_str(b) + (s.trans_b ? " (transposed)" : ""));
  s.out = {s.M, s.N};
  if (c) {
    bool fits = c->size() <= 2;
    if (fits) {
      Shape c2 = *c;
      while (c2.size() < 2) c2.insert(c2.begin(), 1);
      fits = (c2[0] == 1 || c2[0] == s.M) && (c2[1] == 1 || c2[1] == s.N);
    }
    if (!fits) raise(fail, "C " + shape_str(*c) + " cannot be broadcast to the output " + shape_str(s.out));
  }
  return s;
}

}  // namespace onnxgpu::ops
