// Reduce* (Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare), ArgMax, ArgMin.
//
// Float reductions accumulate in double and round once. Integer sums, products and squares are exact
// modulo 2^64 (accumulated in uint64, which is two's-complement int64 arithmetic without UB), so an
// int64 sum is exact whenever the true result fits in int64.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/kernel.h"
#include "cpu/reduce_util.h"
#include "ops/reduce.h"

namespace onnxgpu::cpu {
namespace {

enum class ReduceKind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// Which elements each output element reduces: output o covers input offsets base[o] + red[r].
struct ReducePlan {
  Shape out_shape;
  std::vector<int64_t> base;
  std::vector<int64_t> red;
};

// Offsets (row-major order) of all index combinations over the dimensions selected by `take`.
std::vector<int64_t> offsets_over(const Shape& shape, const std::vector<bool>& take, bool want) {
  std::vector<int64_t> strides = shape_strides(shape);
  std::vector<int64_t> offs{0};
  for (size_t d = 0; d < shape.size(); ++d) {
    if (take[d] != want) continue;
    std::vector<int64_t> next;
    next.reserve(offs.size() * size_t(shape[d]));
    for (int64_t o : offs)
      for (int64_t j = 0; j < shape[d]; ++j) next.push_back(o + j * strides[d]);
    offs = std::move(next);
  }
  return offs;
}

ReducePlan plan_reduce(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  ReducePlan p;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) p.out_shape.push_back(in[d]);
    else if (keepdims) p.out_shape.push_back(1);
  }
  p.base = offsets_over(in, reduced, false);
  p.red = offsets_over(in, reduced, true);
  return p;
}

// The reduced dimensions of a Reduce* node (src/ops/reduce).
std::vector<bool> reduced_dims(const KernelContext& ctx, int64_t rank, int64_t input_since) {
  return ops::reduced_dims(
      ctx.node, ctx.opset, rank, input_since, [&]() -> const Tensor* { return ctx.has_input(1) ? &ctx.input(1) : nullptr; },
      [&](const std::string& m) { ctx.fail(m); });
}

// Integer accumulator: uint64 arithmetic is two's-complement arithmetic mod 2^64.
template <class T>
T int_result(uint64_t acc) {
  if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<int64_t>(acc));
  else return static_cast<T>(acc);
}

template <class T, class Get>
T reduce_group(ReduceKind kind, Get at, int64_t m) {
  constexpr bool kFloat = is_float_v<T>;
  switch (kind) {
    case ReduceKind::Max:
    case ReduceKind::Min: {
      bool is_max = kind == ReduceKind::Max;
      if (m == 0) {
        if constexpr (std::is_same_v<T, bool>) return !is_max;
        else if constexpr (kFloat)
          return from_double<T>(is_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
        else return is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
      }
      T best = at(0);
      if (is_nan_value(best)) return best;
      for (int64_t r = 1; r < m; ++r) {
        T v = at(r);
        if (is_nan_value(v)) return v;
        if constexpr (kFloat) {
          if (is_max ? to_double(v) > to_double(best) : to_double(v) < to_double(best)) best = v;
        } else {
          if (is_max ? v > best : v < best) best = v;
        }
      }
      return best;
    }
    case ReduceKind::Sum:
    case ReduceKind::Mean:
    case ReduceKind::SumSquare:
    case ReduceKind::L1:
    case ReduceKind::Prod: {
      if constexpr (kFloat) {
        double acc = kind == ReduceKind::Prod ? 1.0 : 0.0;
        for (int64_t r = 0; r < m; ++r) {
          double v = to_double(at(r));
          switch (kind) {
            case ReduceKind::SumSquare: acc += v * v; break;
            case ReduceKind::L1: acc += std::fabs(v); break;
            case ReduceKind::Prod: acc *= v; break;
            default: acc += v;
          }
        }
        if (kind == ReduceKind::Mean) acc /= double(m);  // 0/0 = NaN for an empty group, as numpy
        return from_double<T>(acc);
      } else if constexpr (!std::is_same_v<T, bool>) {
        uint64_t acc = kind == ReduceKind::Prod ? 1 : 0;
        for (int64_t r = 0; r < m; ++r) {
          T x = at(r);
          uint64_t v = static_cast<uint64_t>(x);  // sign-extends signed types (mod 2^64)
          switch (kind) {
            case ReduceKind::SumSquare: acc += v * v; break;
            case ReduceKind::L1: acc += (std::is_signed_v<T> && x < 0) ? uint64_t(0) - v : v; break;
            case ReduceKind::Prod: acc *= v; break;
            default: acc += v;
          }
        }
        if (kind == ReduceKind::Mean) {
          if (m == 0) return T(0);
          if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<int64_t>(acc) / m);
          else return static_cast<T>(acc / uint64_t(m));
        }
        return int_result<T>(acc);
      } else {
        return T{};
      }
    }
    case ReduceKind::L2:
    case ReduceKind::LogSum: {
      double acc = 0;
      for (int64_t r = 0; r < m; ++r) {
        double v = to_double(at(r));
        acc += kind == ReduceKind::L2 ? v * v : v;
      }
      return from_double<T>(kind == ReduceKind::L2 ? std::sqrt(acc) : std::log(acc));
    }
    case ReduceKind::LogSumExp: {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t r = 0; r < m; ++r) mx = std::fmax(mx, to_double(at(r)));
      if (std::isinf(mx)) return from_double<T>(mx);  // empty or all -inf: -inf; any +inf: +inf
      double acc = 0;
      bool nan = false;
      for (int64_t r = 0; r < m; ++r) {
        double v = to_double(at(r));
        nan |= std::isnan(v);
        acc += std::exp(v - mx);
      }
      return from_double<T>(nan ? std::numeric_limits<double>::quiet_NaN() : mx + std::log(acc));
    }
  }
  return T{};
}

void add_reduce(KernelRegistry& r, const std::string& op, ReduceKind kind, int64_t input_since) {
  r.add(op, [op, kind, input_since](KernelContext& ctx) -> std::vector<Tensor> {
    const Tensor& x = ctx.input(0);
    DTypeSet types = kNumericTypes;
    if (kind == ReduceKind::Max || kind == ReduceKind::Min) {
      types = kFloatTypes | DTypeSet{DType::Int8, DType::UInt8, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64};
      if (ctx.opset >= 20) types = types | DTypeSet{DType::Bool};
    } else {
      types = kFloatTypes | DTypeSet{DType::Int32, DType::UInt32, DType::Int64, DType::UInt64};
    }
    if (!types.has(x.dtype()))
      ctx.fail("input 0 ('" + ctx.input_name(0) + "') has unsupported element type " + std::string(dtype_name(x.dtype())));
    std::vector<bool> reduced = reduced_dims(ctx, x.rank(), input_since);
    bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
    ReducePlan p = plan_reduce(x.shape(), reduced, keepdims);
    Tensor out(x.dtype(), p.out_shape);
    visit_dtype(x.dtype(), [&]<class T>() {
      const T* xd = x.data<T>();
      T* od = out.data<T>();
      int64_t m = int64_t(p.red.size());
      for (size_t o = 0; o < p.base.size(); ++o) {
        const int64_t b = p.base[o];
        od[o] = reduce_group<T>(kind, [&](int64_t i) { return xd[b + p.red[size_t(i)]]; }, m);
      }
    }, types, op);
    return {out};
  });
}

// ArgMax / ArgMin. NaN counts as the extreme (as numpy's argmax/argmin).
void add_arg(KernelRegistry& r, const std::string& op, bool is_max) {
  r.add(op, [op, is_max](KernelContext& ctx) -> std::vector<Tensor> {
    const Tensor& x = ctx.input(0);
    if (!kNumericTypes.has(x.dtype()))
      ctx.fail("input 0 ('" + ctx.input_name(0) + "') has unsupported element type " + std::string(dtype_name(x.dtype())));
    int64_t rank = x.rank();
    int64_t axis_attr = ctx.node.attr_int("axis", 0);
    if (rank == 0) ctx.fail("input 0 ('" + ctx.input_name(0) + "') must have rank >= 1, got a scalar");
    int64_t axis = ctx.normalize_axis(axis_attr, rank);
    bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
    bool last = ctx.node.attr_int("select_last_index", 0) != 0;
    AxisSplit s = split_at_axis(x.shape(), axis);
    if (s.n == 0 && s.outer * s.inner != 0)
      ctx.fail("input 0 ('" + ctx.input_name(0) + "') has a zero-size dimension at axis " + std::to_string(axis) +
               ": nothing to select");
    Shape out_shape = x.shape();
    if (keepdims) out_shape[size_t(axis)] = 1;
    else out_shape.erase(out_shape.begin() + axis);
    Tensor out(DType::Int64, out_shape);
    int64_t* od = out.data<int64_t>();
    visit_dtype(x.dtype(), [&]<class T>() {
      const T* xd = x.data<T>();
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k = 0; k < s.inner; ++k) {
          int64_t best = 0;
          T bv = xd[s.at(o, 0, k)];
          for (int64_t i = 1; i < s.n; ++i) {
            T v = xd[s.at(o, i, k)];
            bool better;
            if (is_nan_value(bv)) better = last && is_nan_value(v);
            else if (is_nan_value(v)) better = true;
            else {
              if constexpr (is_float_v<T>) {
                double a = to_double(v), b = to_double(bv);
                better = is_max ? (a > b || (last && a == b)) : (a < b || (last && a == b));
              } else {
                better = is_max ? (v > bv || (last && v == bv)) : (v < bv || (last && v == bv));
              }
            }
            if (better) {
              best = i;
              bv = v;
            }
          }
          od[o * s.inner + k] = best;
        }
    }, kNumericTypes, op);
    return {out};
  });
}

}  // namespace

void register_reduce(KernelRegistry& r) {
  add_reduce(r, "ReduceSum", ReduceKind::Sum, 13);
  add_reduce(r, "ReduceMean", ReduceKind::Mean, 18);
  add_reduce(r, "ReduceMax", ReduceKind::Max, 18);
  add_reduce(r, "ReduceMin", ReduceKind::Min, 18);
  add_reduce(r, "ReduceProd", ReduceKind::Prod, 18);
  add_reduce(r, "ReduceL1", ReduceKind::L1, 18);
  add_reduce(r, "ReduceL2", ReduceKind::L2, 18);
  add_reduce(r, "ReduceLogSum", ReduceKind::LogSum, 18);
  add_reduce(r, "ReduceLogSumExp", ReduceKind::LogSumExp, 18);
  add_reduce(r, "ReduceSumSquare", ReduceKind::SumSquare, 18);
  add_arg(r, "ArgMax", true);
  add_arg(r, "ArgMin", false);
}

}  // namespace onnxgpu::cpu
