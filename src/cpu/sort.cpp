// TopK, Unique, NonZero.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "cpu/kernel.h"
#include "cpu/reduce_util.h"

namespace onnxgpu::cpu {
namespace {

// Strict "a sorts before b" in ascending order, NaN after every number (a strict weak order).
template <class T>
bool ascending_less(T a, T b) {
  if constexpr (is_float_v<T>) {
    double x = to_double(a), y = to_double(b);
    if (std::isnan(x)) return false;
    if (std::isnan(y)) return true;
    return x < y;
  } else {
    return a < b;
  }
}

std::vector<Tensor> topk(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!kNumericTypes.has(x.dtype()) || x.dtype() == DType::BFloat16)
    ctx.fail("input 0 ('" + ctx.input_name(0) + "') has unsupported element type " + std::string(dtype_name(x.dtype())));
  if (x.rank() == 0) ctx.fail("input 0 ('" + ctx.input_name(0) + "') must have rank >= 1, got a scalar");
  int64_t k;
  if (ctx.opset >= 10) {
    const Tensor& kt = ctx.input(1);
    if (kt.dtype() != DType::Int64 || kt.numel() != 1 || kt.rank() > 1)
      ctx.fail("input 1 ('" + ctx.input_name(1) + "', K) must be a 1-element int64 tensor, got " + kt.describe());
    k = kt.int_at(0);
  } else {
    if (!ctx.node.has_attr("k")) ctx.fail("attribute 'k' is required");
    k = ctx.node.attr_int("k", 0);
  }
  int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", -1), x.rank());
  bool largest = ctx.node.attr_int("largest", 1) != 0;
  AxisSplit s = split_at_axis(x.shape(), axis);
  if (k < 0 || k > s.n)
    ctx.fail("K = " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) + " of size " +
             std::to_string(s.n) + " (input 0 " + x.describe() + ")");
  Shape out_shape = x.shape();
  out_shape[size_t(axis)] = k;
  Tensor values(x.dtype(), out_shape), indices(DType::Int64, out_shape);
  int64_t* id = indices.data<int64_t>();
  AxisSplit so{s.outer, k, s.inner};
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* xd = x.data<T>();
    T* vd = values.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t in = 0; in < s.inner; ++in) {
        std::iota(order.begin(), order.end(), int64_t(0));
        auto before = [&](int64_t a, int64_t b) {
          T va = xd[s.at(o, a, in)], vb = xd[s.at(o, b, in)];
          return largest ? ascending_less(vb, va) : ascending_less(va, vb);
        };
        // Stable: equal values keep the lower index first.
        std::stable_sort(order.begin(), order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          vd[so.at(o, j, in)] = xd[s.at(o, order[size_t(j)], in)];
          id[so.at(o, j, in)] = order[size_t(j)];
        }
      }
  }, kNumericTypes, "TopK");
  return {values, indices};
}

template <class T>
int three_way(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, std::string>) {
    return a < b ? -1 : (b < a ? 1 : 0);
  } else {
    if (ascending_less(a, b)) return -1;
    if (ascending_less(b, a)) return 1;
    return 0;
  }
}

std::vector<Tensor> unique(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DTypeSet types = kNumericTypes | DTypeSet{DType::Bool, DType::String};
  if (!types.has(x.dtype()))
    ctx.fail("input 0 ('" + ctx.input_name(0) + "') has unsupported element type " + std::string(dtype_name(x.dtype())));
  bool sorted = ctx.node.attr_int("sorted", 1) != 0;
  bool has_axis = ctx.node.has_attr("axis");
  Shape shape = x.shape();
  int64_t axis = 0;
  if (has_axis) {
    if (x.rank() == 0) ctx.fail("attribute 'axis' given but input 0 ('" + ctx.input_name(0) + "') is a scalar");
    axis = ctx.normalize_axis(ctx.node.attr_int("axis", 0), x.rank());
  } else {
    shape = Shape{x.numel()};
  }
  AxisSplit s = split_at_axis(shape, axis);

  auto run = [&]<class T>(const T* xd, auto make_out) -> std::vector<Tensor> {
    auto cmp = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k = 0; k < s.inner; ++k) {
          int c = three_way<T>(xd[s.at(o, a, k)], xd[s.at(o, b, k)]);
          if (c) return c;
        }
      return 0;
    };
    // Sort slice indices (stable, so the first of equal slices is its first occurrence) and group.
    std::vector<int64_t> order(static_cast<size_t>(s.n));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
    std::vector<int64_t> first, count;           // per unique slice, in sorted order
    std::vector<int64_t> group_of(static_cast<size_t>(s.n));  // slice -> group (sorted order)
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
        first.push_back(order[i]);
        count.push_back(0);
      }
      count.back()++;
      group_of[size_t(order[i])] = int64_t(first.size()) - 1;
    }
    int64_t u = int64_t(first.size());
    // Output position of each group: sorted order, or order of first occurrence.
    std::vector<int64_t> pos(static_cast<size_t>(u));
    std::iota(pos.begin(), pos.end(), int64_t(0));
    if (!sorted) {
      std::vector<int64_t> g(static_cast<size_t>(u));
      std::iota(g.begin(), g.end(), int64_t(0));
      std::sort(g.begin(), g.end(), [&](int64_t a, int64_t b) { return first[size_t(a)] < first[size_t(b)]; });
      for (int64_t j = 0; j < u; ++j) pos[size_t(g[size_t(j)])] = j;
    }
    Shape y_shape = shape;
    y_shape[size_t(axis)] = u;
    AxisSplit sy{s.outer, u, s.inner};
    Tensor indices(DType::Int64, {u}), inverse(DType::Int64, {s.n}), counts(DType::Int64, {u});
    std::vector<T> y(static_cast<size_t>(shape_numel(y_shape)));
    for (int64_t g = 0; g < u; ++g) {
      int64_t p = pos[size_t(g)];
      indices.data<int64_t>()[p] = first[size_t(g)];
      counts.data<int64_t>()[p] = count[size_t(g)];
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k = 0; k < s.inner; ++k) y[size_t(sy.at(o, p, k))] = xd[s.at(o, first[size_t(g)], k)];
    }
    for (int64_t i = 0; i < s.n; ++i) inverse.data<int64_t>()[i] = pos[size_t(group_of[size_t(i)])];
    return {make_out(y_shape, std::move(y)), indices, inverse, counts};
  };

  if (x.dtype() == DType::String) {
    return run(x.string_data().data(),
               [](Shape sh, std::vector<std::string> v) { return Tensor::strings(std::move(sh), std::move(v)); });
  }
  return visit_dtype(x.dtype(), [&]<class T>() {
    return run(x.data<T>(), [](Shape sh, std::vector<T> v) { return Tensor::from_vector<T>(std::move(sh), v); });
  }, types, "Unique");
}

std::vector<Tensor> nonzero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  // A scalar behaves as a 1-element vector (as numpy's nonzero).
  Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
  std::vector<bool> nz(static_cast<size_t>(x.numel()));
  if (x.dtype() == DType::String) {
    for (int64_t i = 0; i < x.numel(); ++i) nz[size_t(i)] = !x.string_data()[size_t(i)].empty();
  } else {
    if (!kAllTypes.has(x.dtype()))
      ctx.fail("input 0 ('" + ctx.input_name(0) + "') has unsupported element type " + std::string(dtype_name(x.dtype())));
    visit_dtype(x.dtype(), [&]<class T>() {
      const T* xd = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        if constexpr (is_float_v<T>) nz[size_t(i)] = to_double(xd[i]) != 0.0;
        else nz[size_t(i)] = xd[i] != T(0);
      }
    }, kAllTypes, "NonZero");
  }
  int64_t n = std::count(nz.begin(), nz.end(), true);
  int64_t rank = int64_t(shape.size());
  Tensor out(DType::Int64, {rank, n});
  int64_t* od = out.data<int64_t>();
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t col = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (nz[size_t(i)]) {
      for (int64_t d = 0; d < rank; ++d) od[d * n + col] = idx[size_t(d)];
      ++col;
    }
    for (int64_t d = rank - 1; d >= 0; --d) {  // advance the row-major multi-index
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
  return {out};
}

}  // namespace

void register_sort(KernelRegistry& r) {
  r.add("TopK", topk);
  r.add("Unique", unique);
  r.add("NonZero", nonzero);
}

}  // namespace onnxgpu::cpu
