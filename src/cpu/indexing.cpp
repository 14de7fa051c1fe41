// Indexed reads and writes: Gather, GatherElements, GatherND, ScatterElements, Scatter, ScatterND,
// Compress, TensorScatter. Negative indices count from the end (once); any other out-of-range index is an error.
#include <algorithm>

#include "cpu/kernel.h"
#include "cpu/shape_util.h"
#include "ops/indexing.h"
#include "ops/scatter.h"

namespace onnxgpu::cpu {

namespace {

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

std::vector<int64_t> read_indices(const KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DType::Int32 && t.dtype() != DType::Int64)
    ctx.fail("input " + std::to_string(i) + " ('indices') must be int32 or int64, got " + t.describe());
  return t.to_int64_vector();
}

// Index `k` into an axis of size n: negatives wrap once; anything else out of [-n, n-1] fails.
int64_t wrap_index(const KernelContext& ctx, int64_t k, int64_t n, const std::string& where) {
  if (k < -n || k >= n)
    ctx.fail("index " + std::to_string(k) + " is out of range [" + std::to_string(-n) + ", " + std::to_string(n - 1) +
             "] for " + where);
  return k < 0 ? k + n : k;
}

std::string axis_of(int64_t axis, int64_t n, const Tensor& data) {
  return "axis " + std::to_string(axis) + " (size " + std::to_string(n) + ") of data " + data.describe();
}

std::vector<Tensor> gather(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) ctx.fail("data must have rank >= 1, got " + x.describe());
  std::vector<int64_t> idx = read_indices(ctx, 1);
  const Tensor& it = ctx.input(1);
  int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", 0), x.rank());
  int64_t n = x.dim(axis);
  for (int64_t& k : idx) k = wrap_index(ctx, k, n, axis_of(axis, n, x));
  Shape out_shape(x.shape().begin(), x.shape().begin() + axis);
  out_shape.insert(out_shape.end(), it.shape().begin(), it.shape().end());
  out_shape.insert(out_shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  int64_t outer = prod(x.shape(), 0, size_t(axis)), inner = prod(x.shape(), size_t(axis) + 1, x.shape().size());
  int64_t p = int64_t(idx.size());
  Tensor out(x.dtype(), out_shape);
  ElementCopier copy(x, out);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < p; ++j) copy.run((o * p + j) * inner, (o * n + idx[size_t(j)]) * inner, inner);
  return {out};
}

// For GatherElements / ScatterElements: the linear data index of every element of `indices`.
std::vector<int64_t> element_targets(const KernelContext& ctx, const Tensor& data, const Tensor& it, int64_t axis) {
  if (it.rank() != data.rank())
    ctx.fail("indices " + it.describe() + " must have the rank of data " + data.describe());
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && it.dim(d) > data.dim(d))
      ctx.fail("indices " + it.describe() + " is larger than data " + data.describe() + " on axis " + std::to_string(d));
  std::vector<int64_t> idx = read_indices(ctx, 1);
  std::vector<int64_t> strides = shape_strides(data.shape());
  int64_t n = data.dim(axis);
  std::vector<int64_t> targets(idx.size());
  size_t i = 0;
  for_each_coord(it.shape(), [&](const std::vector<int64_t>& c) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d)
      off += (int64_t(d) == axis ? wrap_index(ctx, idx[i], n, axis_of(axis, n, data)) : c[d]) * strides[d];
    targets[i++] = off;
  });
  return targets;
}

std::vector<Tensor> gather_elements(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& it = ctx.input(1);
  if (x.rank() == 0) ctx.fail("data must have rank >= 1, got " + x.describe());
  int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", 0), x.rank());
  return {take_elements(x, it.shape(), element_targets(ctx, x, it, axis))};
}

// GatherND / ScatterND addressing: the start of each addressed slice and the slice size.
struct NDTargets {
  std::vector<int64_t> starts;  // one per index tuple, in order
  int64_t slice = 1;            // elements per slice
  Shape tuple_shape;            // indices.shape[:-1]
};

NDTargets nd_targets(const KernelContext& ctx, const Tensor& data, const Tensor& it, int64_t batch_dims) {
  if (it.dtype() != DType::Int64) ctx.fail("indices must be int64, got " + it.describe());
  ops::NDLayout l = ops::nd_layout(data.shape(), it.shape(), batch_dims, data.describe(), it.describe(), ctx.fail_fn());
  const int64_t b = l.b, k = l.k, batches = l.batches, batch_block = l.batch_block, per_batch = l.per_batch;
  NDTargets t;
  t.tuple_shape = l.tuple_shape;
  t.slice = l.slice;
  std::vector<int64_t> strides = shape_strides(data.shape());
  const int64_t* idx = it.data<int64_t>();
  t.starts.resize(size_t(batches * per_batch));
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t j = 0; j < per_batch; ++j) {
      const int64_t* tup = idx + (bi * per_batch + j) * k;
      int64_t off = bi * batch_block;
      for (int64_t m = 0; m < k; ++m) {
        int64_t n = data.dim(b + m);
        off += wrap_index(ctx, tup[m], n, axis_of(b + m, n, data)) * strides[size_t(b + m)];
      }
      t.starts[size_t(bi * per_batch + j)] = off;
    }
  return t;
}

std::vector<Tensor> gather_nd(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& it = ctx.input(1);
  int64_t b = ctx.opset >= 12 ? ctx.node.attr_int("batch_dims", 0) : 0;
  NDTargets t = nd_targets(ctx, x, it, b);
  Shape out_shape = t.tuple_shape;
  int64_t k = it.dim(it.rank() - 1);
  out_shape.insert(out_shape.end(), x.shape().begin() + b + k, x.shape().end());
  Tensor out(x.dtype(), out_shape);
  ElementCopier copy(x, out);
  for (size_t i = 0; i < t.starts.size(); ++i) copy.run(int64_t(i) * t.slice, t.starts[i], t.slice);
  return {out};
}

using Reduction = ops::ScatterReduction;

Reduction read_reduction(const KernelContext& ctx) {
  return ops::scatter_reduction(ctx.node, ctx.opset, [&](const std::string& m) { ctx.fail(m); });
}

template <class T>
T reduce(Reduction r, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return (r == Reduction::Add || r == Reduction::Max) ? (a || b) : (a && b);
  } else if constexpr (is_float_v<T>) {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    C x = C(a), y = C(b);
    switch (r) {
      case Reduction::Add: return T(x + y);
      case Reduction::Mul: return T(x * y);
      case Reduction::Max: return T(std::max(x, y));
      default: return T(std::min(x, y));
    }
  } else {  // integers wrap like two's complement (unsigned arithmetic keeps it defined)
    switch (r) {
      case Reduction::Add: return T(uint64_t(a) + uint64_t(b));
      case Reduction::Mul: return T(uint64_t(a) * uint64_t(b));
      case Reduction::Max: return std::max(a, b);
      default: return std::min(a, b);
    }
  }
}

// out[targets[i] + j] = reduce(out[...], updates[i * slice + j]) for j < slice.
void scatter_into(const KernelContext& ctx, Tensor& out, const Tensor& updates, const std::vector<int64_t>& targets,
                  int64_t slice, Reduction red) {
  if (updates.dtype() != out.dtype())
    ctx.fail("updates " + updates.describe() + " must have the type of data " + out.describe());
  if (red == Reduction::None) {
    ElementCopier copy(updates, out);
    for (size_t i = 0; i < targets.size(); ++i) copy.run(targets[i], int64_t(i) * slice, slice);
    return;
  }
  if (out.dtype() == DType::String) ctx.unsupported("a reduction on string tensors");
  visit_dtype(out.dtype(), [&]<class T>() {
    T* o = out.data<T>();
    const T* u = updates.data<T>();
    for (size_t i = 0; i < targets.size(); ++i)
      for (int64_t j = 0; j < slice; ++j) o[targets[i] + j] = reduce<T>(red, o[targets[i] + j], u[int64_t(i) * slice + j]);
  });
}

std::vector<Tensor> scatter_elements(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& it = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  if (x.rank() == 0) ctx.fail("data must have rank >= 1, got " + x.describe());
  if (upd.shape() != it.shape()) ctx.fail("updates " + upd.describe() + " must have the shape of indices " + it.describe());
  int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", 0), x.rank());
  Reduction red = read_reduction(ctx);
  std::vector<int64_t> targets = element_targets(ctx, x, it, axis);
  Tensor out = x.clone();
  scatter_into(ctx, out, upd, targets, 1, red);
  return {out};
}

std::vector<Tensor> scatter_nd(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& it = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  NDTargets t = nd_targets(ctx, x, it, 0);
  Shape want = t.tuple_shape;
  int64_t k = it.dim(it.rank() - 1);
  want.insert(want.end(), x.shape().begin() + k, x.shape().end());
  if (upd.shape() != want)
    ctx.fail("updates " + upd.describe() + " must have shape " + shape_str(want) + " for indices " + it.describe() +
             " and data " + x.describe());
  Tensor out = x.clone();
  scatter_into(ctx, out, upd, t.starts, t.slice, read_reduction(ctx));
  return {out};
}

// TensorScatter: past_cache with each batch element's update written along the axis from its write
// index (ops::tensor_scatter_params); linear positions must fit, circular ones wrap.
std::vector<Tensor> tensor_scatter(KernelContext& ctx) {
  const Tensor& past = ctx.input(0);
  const Tensor& upd = ctx.input(1);
  auto p = ops::tensor_scatter_params(ctx.node, ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.fail_fn());
  const int64_t B = past.dim(0);
  const int64_t inner = shape_numel(Shape(past.shape().begin() + p.axis + 1, past.shape().end()));
  const int64_t mid = shape_numel(Shape(past.shape().begin() + 1, past.shape().begin() + p.axis));  // dims between batch and axis
  Tensor out = past.clone();
  ElementCopier copy(upd, out);
  for (int64_t b = 0; b < B; ++b) {
    int64_t w = ctx.has_input(2) ? ctx.input(2).data<int64_t>()[b] : 0;
    if (w < 0 || (p.circular ? w >= p.max_seq : w + p.seq > p.max_seq))
      ctx.fail("write_indices[" + std::to_string(b) + "] = " + std::to_string(w) + " does not place " + std::to_string(p.seq) +
               " steps in " + std::to_string(p.max_seq) + (p.circular ? " (circular: must be in [0, max_seq))" : ""));
    for (int64_t m = 0; m < mid; ++m)
      for (int64_t s = 0; s < p.seq; ++s) {
        int64_t pos = p.circular ? (w + s) % p.max_seq : w + s;
        copy.run(((b * mid + m) * p.max_seq + pos) * inner, ((b * mid + m) * p.seq + s) * inner, inner);
      }
  }
  return {out};
}

std::vector<Tensor> compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.dtype() != DType::Bool || cond.rank() != 1)
    ctx.fail("condition must be a 1-D bool tensor, got " + cond.describe());
  bool flat = !ctx.node.has_attr("axis");
  Tensor src = flat ? x.reshaped({x.numel()}) : x;
  int64_t axis = flat ? 0 : ctx.normalize_axis(ctx.node.attr_int("axis", 0), x.rank());
  if (src.rank() == 0) ctx.fail("input must have rank >= 1 when axis is given, got " + x.describe());
  int64_t n = src.dim(axis);
  std::vector<int64_t> keep = ops::compress_keep(cond, n, axis_of(axis, n, x), ctx.fail_fn());
  Shape out_shape = src.shape();
  out_shape[size_t(axis)] = int64_t(keep.size());
  int64_t outer = prod(src.shape(), 0, size_t(axis)), inner = prod(src.shape(), size_t(axis) + 1, src.shape().size());
  int64_t m = int64_t(keep.size());
  Tensor out(x.dtype(), out_shape);
  ElementCopier copy(src, out);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j) copy.run((o * m + j) * inner, (o * n + keep[size_t(j)]) * inner, inner);
  return {out};
}

}  // namespace

void register_indexing(KernelRegistry& r) {
  r.add("Gather", gather);
  r.add("GatherElements", gather_elements);
  r.add("GatherND", gather_nd);
  r.add("ScatterElements", scatter_elements);
  r.add("Scatter", scatter_elements);
  r.add("ScatterND", scatter_nd);
  r.add("Compress", compress);
  r.add("TensorScatter", tensor_scatter);
}

}  // namespace onnxgpu::cpu
