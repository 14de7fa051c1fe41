// MatMul, MatMulInteger, QLinearMatMul, com.microsoft's MatMulIntegerToFloat, Gemm, Einsum, Det.
// float32 MatMul and Gemm go through the library (src/cpu/blas.h: oneDNN, float32 accumulation) while
// it is enabled; the reference kernels below are the other types' path and the check: floats
// accumulate in double; integers accumulate exactly with two's complement wrap-around (as numpy).
#include <array>
#include <cmath>

#include "cpu/blas.h"
#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/broadcast.h"
#include "ops/einsum.h"
#include "ops/matmul.h"

namespace onnxgpu::cpu {
namespace {

using nn::from_double;

inline constexpr DTypeSet kMatMulTypes{DType::Float16, DType::Float32, DType::Float64, DType::BFloat16,
                                       DType::Int32,   DType::Int64,   DType::UInt32,  DType::UInt64};

// The accumulator of a dot product: double for floats, wrapping 64-bit for integers.
template <class T>
struct Accum {
  std::conditional_t<is_float_v<T>, double, uint64_t> v{};
  void add(T a, T b) {
    if constexpr (is_float_v<T>) {
      v += static_cast<double>(a) * static_cast<double>(b);
    } else {
      v += static_cast<uint64_t>(static_cast<int64_t>(a)) * static_cast<uint64_t>(static_cast<int64_t>(b));
    }
  }
  T get() const {
    if constexpr (is_float_v<T>) return from_double<T>(v);
    else return static_cast<T>(v);  // modular (C++20)
  }
};

// ---------------------------------------------------------------------------------------------- MatMul

struct MatMulPlan {
  int64_t M = 1, K = 1, N = 1;
  Shape batch;                      // broadcast batch dims
  std::vector<int64_t> a_off, b_off;  // per batch element: element offset of its matrix in A / B
  Shape out;
};

// numpy matmul shapes: 1-D operands are promoted (a prepended / appended 1) and the batch dims broadcast.
MatMulPlan plan_matmul(const KernelContext& ctx, const Shape& a, const Shape& b) {
  ops::MatMulShape s = ops::matmul_shape(a, b, [&](const std::string& m) { ctx.fail(m); });
  MatMulPlan p;
  p.M = s.M;
  p.K = s.K;
  p.N = s.N;
  p.batch = s.batch;
  p.a_off = ops::broadcast_index_map(s.a_batch, p.batch);
  p.b_off = ops::broadcast_index_map(s.b_batch, p.batch);
  for (auto& o : p.a_off) o *= p.M * p.K;
  for (auto& o : p.b_off) o *= p.K * p.N;
  p.out = s.out;
  return p;
}

// float32 through the library: one product per batch element; when every batch element reads the
// same B and A's matrices lie back to back (the usual [batch, seq, K] x [K, N]), one product whose
// rows are the whole batch's.
void matmul_library(const MatMulPlan& p, const Tensor& A, const Tensor& B, Tensor& Y) {
  const float* a = A.data<float>();
  const float* b = B.data<float>();
  float* y = Y.data<float>();
  const size_t nb = p.a_off.size();
  bool shared_b = true, packed_a = true;
  for (size_t bi = 0; bi < nb; ++bi) {
    shared_b = shared_b && p.b_off[bi] == p.b_off[0];
    packed_a = packed_a && p.a_off[bi] == int64_t(bi) * p.M * p.K;
  }
  if (nb > 1 && shared_b && packed_a) {
    blas::sgemm(false, false, int64_t(nb) * p.M, p.N, p.K, 1.0f, a, p.K, b + p.b_off[0], p.N, 0.0f, y, p.N);
    return;
  }
  for (size_t bi = 0; bi < nb; ++bi)
    blas::sgemm(false, false, p.M, p.N, p.K, 1.0f, a + p.a_off[bi], p.K, b + p.b_off[bi], p.N, 0.0f,
                y + int64_t(bi) * p.M * p.N, p.N);
}

std::vector<Tensor> matmul(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  if (A.dtype() != B.dtype())
    ctx.fail("A is " + A.describe() + " but B is " + B.describe() + "; they must have the same type");
  MatMulPlan p = plan_matmul(ctx, A.shape(), B.shape());
  if (A.dtype() == DType::Float32 && blas::enabled()) {
    Tensor Y = Tensor::uninitialized(DType::Float32, p.out);  // every element is written
    matmul_library(p, A, B, Y);
    return {Y};
  }
  Tensor Y(A.dtype(), p.out);
  visit_dtype(A.dtype(), [&]<class T>() {
    const T* a = A.data<T>();
    const T* b = B.data<T>();
    T* y = Y.data<T>();
    for (size_t bi = 0; bi < p.a_off.size(); ++bi) {
      const T* ab = a + p.a_off[bi];
      const T* bb = b + p.b_off[bi];
      T* yb = y + int64_t(bi) * p.M * p.N;
      // Row by row, k outside n: B is read along its rows (the same sums, in the same order, as
      // one dot product per element, but cache-friendly).
      std::vector<Accum<T>> row(size_t(p.N));
      for (int64_t m = 0; m < p.M; ++m) {
        std::fill(row.begin(), row.end(), Accum<T>{});
        for (int64_t k = 0; k < p.K; ++k) {
          const T av = ab[m * p.K + k];
          const T* brow = bb + k * p.N;
          for (int64_t n = 0; n < p.N; ++n) row[size_t(n)].add(av, brow[n]);
        }
        for (int64_t n = 0; n < p.N; ++n) yb[m * p.N + n] = row[size_t(n)].get();
      }
    }
  }, kMatMulTypes, "MatMul");
  return {Y};
}

// Zero point of MatMulInteger: a scalar, or one per row of A (per column of B).
std::vector<int32_t> zero_points(const KernelContext& ctx, size_t idx, DType want, int64_t count, const char* what) {
  std::vector<int32_t> zp(static_cast<size_t>(count), 0);
  if (!ctx.has_input(idx)) return zp;
  const Tensor& z = ctx.input(idx);
  if (z.dtype() != want)
    ctx.fail(std::string(what) + " is " + z.describe() + " but must have the type of its matrix (" +
             std::string(dtype_name(want)) + ")");
  if (z.numel() != 1 && z.numel() != count)
    ctx.fail(std::string(what) + " " + z.describe() + " must be a scalar or have " + std::to_string(count) +
             " elements");
  for (int64_t i = 0; i < count; ++i) zp[size_t(i)] = int32_t(z.int_at(z.numel() == 1 ? 0 : i));
  return zp;
}

// The integer products' A and B (int8 or uint8) and their plan.
MatMulPlan plan_integer_matmul(const KernelContext& ctx, const Tensor& A, const Tensor& B) {
  const DTypeSet q{DType::Int8, DType::UInt8};
  if (!q.has(A.dtype()) || !q.has(B.dtype()))
    ctx.fail("A and B must be int8 or uint8, got " + A.describe() + " and " + B.describe());
  return plan_matmul(ctx, A.shape(), B.shape());
}

std::vector<Tensor> matmul_integer(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  MatMulPlan p = plan_integer_matmul(ctx, A, B);
  std::vector<int32_t> za = zero_points(ctx, 2, A.dtype(), p.M, "a_zero_point");
  std::vector<int32_t> zb = zero_points(ctx, 3, B.dtype(), p.N, "b_zero_point");
  std::vector<double> a = nn::to_doubles(A), b = nn::to_doubles(B);
  Tensor Y(DType::Int32, p.out);
  int32_t* y = Y.data<int32_t>();
  for (size_t bi = 0; bi < p.a_off.size(); ++bi)
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t n = 0; n < p.N; ++n) {
        uint32_t acc = 0;  // int32 accumulation, wrapping
        for (int64_t k = 0; k < p.K; ++k) {
          int32_t av = int32_t(a[size_t(p.a_off[bi] + m * p.K + k)]) - za[size_t(m)];
          int32_t bv = int32_t(b[size_t(p.b_off[bi] + k * p.N + n)]) - zb[size_t(n)];
          acc += uint32_t(av * bv);
        }
        y[(int64_t(bi) * p.M + m) * p.N + n] = int32_t(acc);
      }
  return {Y};
}

// QLinearMatMul: the int32 product of (a - a_zero_point) and (b - b_zero_point), requantized to y's type:
// round-half-to-even(acc * a_scale * b_scale / y_scale) + y_zero_point, saturated. Scales are scalars or
// per row of a / per column of b (the factor in double).
std::vector<Tensor> qlinear_matmul(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(3);
  DTypeSet q{DType::Int8, DType::UInt8};
  if (!q.has(A.dtype()) || !q.has(B.dtype()))
    ctx.fail("a and b must be int8 or uint8, got " + A.describe() + " and " + B.describe());
  const Tensor& yz = ctx.input(7);
  if (!q.has(yz.dtype()) || yz.numel() != 1) ctx.fail("y_zero_point must be an int8 or uint8 scalar, got " + yz.describe());
  MatMulPlan p = plan_matmul(ctx, A.shape(), B.shape());
  std::vector<int32_t> za = zero_points(ctx, 2, A.dtype(), p.M, "a_zero_point");
  std::vector<int32_t> zb = zero_points(ctx, 5, B.dtype(), p.N, "b_zero_point");
  auto scales = [&](size_t i, int64_t count, const char* what) {
    const Tensor& t = ctx.input(i);
    if (!kFloatTypes.has(t.dtype()) || (t.numel() != 1 && t.numel() != count))
      ctx.fail(std::string(what) + " must be a float scalar or have " + std::to_string(count) + " values, got " + t.describe());
    std::vector<double> v = nn::to_doubles(t);
    if (v.size() == 1) v.assign(size_t(count), v[0]);
    return v;
  };
  std::vector<double> sa = scales(1, p.M, "a_scale"), sb = scales(4, p.N, "b_scale"), sy = scales(6, 1, "y_scale");
  const int32_t y0 = int32_t(yz.int_at(0));
  const double lo = yz.dtype() == DType::Int8 ? -128 : 0, hi = yz.dtype() == DType::Int8 ? 127 : 255;
  std::vector<double> a = nn::to_doubles(A), b = nn::to_doubles(B), y(size_t(shape_numel(p.out)));
  for (size_t bi = 0; bi < p.a_off.size(); ++bi)
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t n = 0; n < p.N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < p.K; ++k)
          acc += (int64_t(a[size_t(p.a_off[bi] + m * p.K + k)]) - za[size_t(m)]) *
                 (int64_t(b[size_t(p.b_off[bi] + k * p.N + n)]) - zb[size_t(n)]);
        double v = std::nearbyint(double(acc) * (sa[size_t(m)] * sb[size_t(n)] / sy[0])) + double(y0);
        y[size_t((int64_t(bi) * p.M + m) * p.N + n)] = std::clamp(v, lo, hi);
      }
  return {nn::tensor_from_doubles(yz.dtype(), p.out, y)};
}

// com.microsoft's MatMulIntegerToFloat: A, B (int8 / uint8), a_scale (a float scalar), b_scale (a scalar or
// one per column, a_scale's type), a_zero_point, b_zero_point (optional, as MatMulInteger's), bias
// (optional, one per column): Y = float(int32 sum) * (a_scale * b_scale) + bias, in float32 (ONNX
// Runtime's), stored in a_scale's type.
std::vector<Tensor> matmul_integer_to_float(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  MatMulPlan p = plan_integer_matmul(ctx, A, B);
  const Tensor& as = ctx.input(2);
  const DType yt = as.dtype();
  if (!kFloatTypes.has(yt) || as.numel() != 1) ctx.fail("a_scale must be a float scalar, got " + as.describe());
  const Tensor& bs = ctx.input(3);
  if (bs.dtype() != yt || (bs.numel() != 1 && bs.numel() != p.N))
    ctx.fail("b_scale must be a scalar or have " + std::to_string(p.N) + " values of a_scale's type, got " + bs.describe());
  std::vector<int32_t> za = zero_points(ctx, 4, A.dtype(), p.M, "a_zero_point");
  std::vector<int32_t> zb = zero_points(ctx, 5, B.dtype(), p.N, "b_zero_point");
  std::vector<double> bias;
  if (ctx.has_input(6)) {
    const Tensor& b = ctx.input(6);
    if (b.dtype() != yt || b.shape() != Shape{p.N})
      ctx.fail("bias must be " + std::string(dtype_name(yt)) + "[" + std::to_string(p.N) + "], got " + b.describe());
    bias = nn::to_doubles(b);
  }
  const float a_scale = float(as.double_at(0));
  std::vector<double> a = nn::to_doubles(A), b = nn::to_doubles(B), y(size_t(shape_numel(p.out)));
  for (size_t bi = 0; bi < p.a_off.size(); ++bi)
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t n = 0; n < p.N; ++n) {
        uint32_t acc = 0;  // int32 accumulation, wrapping (as MatMulInteger)
        for (int64_t k = 0; k < p.K; ++k)
          acc += uint32_t((int32_t(a[size_t(p.a_off[bi] + m * p.K + k)]) - za[size_t(m)]) *
                          (int32_t(b[size_t(p.b_off[bi] + k * p.N + n)]) - zb[size_t(n)]));
        float v = float(int32_t(acc)) * (a_scale * float(bs.double_at(bs.numel() == 1 ? 0 : n)));
        if (!bias.empty()) v += float(bias[size_t(n)]);
        y[size_t((int64_t(bi) * p.M + m) * p.N + n)] = v;
      }
  return {nn::tensor_from_doubles(yt, p.out, y)};
}

// ------------------------------------------------------------------------------------------------ Gemm

std::vector<Tensor> gemm(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  const ir::Node& node = ctx.node;
  double alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const Tensor* C = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  ops::GemmShape g = ops::gemm_shape(node, A.shape(), B.shape(), C ? &C->shape() : nullptr,
                                     [&](const std::string& m) { ctx.fail(m); });
  if (A.dtype() != B.dtype()) ctx.fail("A is " + A.describe() + " but B is " + B.describe());
  const bool ta = g.trans_a, tb = g.trans_b;
  const int64_t M = g.M, K = g.K, N = g.N;
  const Shape& out = g.out;
  std::vector<int64_t> cmap;
  if (C) {
    if (C->dtype() != A.dtype()) ctx.fail("C is " + C->describe() + " but A is " + A.describe());
    cmap = ops::broadcast_index_map(C->shape(), out);
  }
  // float32 through the library: Y starts as C broadcast, then Y = alpha * A'B' + beta * Y. alpha 0
  // and beta 0 with a C stay on the reference, which multiplies by them (0 * inf is NaN) where a
  // BLAS skips the term.
  if (A.dtype() == DType::Float32 && blas::enabled() && alpha != 0.0 && !(C && beta == 0.0)) {
    Tensor Y = Tensor::uninitialized(DType::Float32, out);  // every element is written
    float* y = Y.data<float>();
    if (C) {
      const float* c = C->data<float>();
      for (size_t i = 0; i < cmap.size(); ++i) y[i] = c[cmap[i]];
    }
    blas::sgemm(ta, tb, M, N, K, float(alpha), A.data<float>(), ta ? M : K, B.data<float>(), tb ? K : N,
                C ? float(beta) : 0.0f, y, N);
    return {Y};
  }
  Tensor Y(A.dtype(), out);
  visit_dtype(A.dtype(), [&]<class T>() {
    const T* a = A.data<T>();
    const T* b = B.data<T>();
    const T* c = C ? C->data<T>() : nullptr;
    T* y = Y.data<T>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        Accum<T> acc;
        for (int64_t k = 0; k < K; ++k) acc.add(a[ta ? k * M + m : m * K + k], b[tb ? n * K + k : k * N + n]);
        size_t i = size_t(m * N + n);
        if constexpr (is_float_v<T>) {
          double v = alpha * acc.v;
          if (c) v += beta * static_cast<double>(c[cmap[i]]);
          y[i] = from_double<T>(v);
        } else {
          // Exact when alpha and beta are 1 (the common case); otherwise scaled through double.
          T v = alpha == 1.0 ? acc.get() : static_cast<T>(static_cast<int64_t>(alpha * double(int64_t(acc.v))));
          if (c) {
            T cv = beta == 1.0 ? c[cmap[i]] : static_cast<T>(static_cast<int64_t>(beta * double(c[cmap[i]])));
            v = static_cast<T>(static_cast<uint64_t>(v) + static_cast<uint64_t>(cv));
          }
          y[i] = v;
        }
      }
  }, kMatMulTypes, "Gemm");
  return {Y};
}

// ---------------------------------------------------------------------------------------------- Einsum

// The equation and its loop plan: ops::einsum_plan. Sums in double (floats) or wrapping 64-bit integers.
std::vector<Tensor> einsum(KernelContext& ctx) {
  const size_t n_in = ctx.num_inputs();
  std::vector<Shape> shapes;
  const DType dt = ctx.input(0).dtype();
  for (size_t i = 0; i < n_in; ++i) {
    const Tensor& x = ctx.input(i);
    if (x.dtype() != dt) ctx.fail("all inputs must have the same type; input 0 is " + std::string(dtype_name(dt)) +
                                  " but input " + std::to_string(i) + " is " + x.describe());
    shapes.push_back(x.shape());
  }
  const ops::EinsumPlan p = ops::einsum_plan(ctx.node.attr_string("equation", ""), shapes, ctx.fail_fn());
  Tensor Y(dt, p.out_shape);
  visit_dtype(dt, [&]<class T>() {
    std::vector<const T*> xs;
    for (size_t i = 0; i < n_in; ++i) xs.push_back(ctx.input(i).data<T>());
    T* y = Y.data<T>();
    int64_t n_out = shape_numel(p.out_shape), n_sum = shape_numel(p.sum_shape);
    std::vector<int64_t> oi(p.out_shape.size(), 0);
    for (int64_t o = 0; o < n_out; ++o, nn::next_index(oi, p.out_shape)) {
      std::vector<int64_t> base(n_in, 0);
      for (size_t i = 0; i < n_in; ++i)
        for (size_t k = 0; k < oi.size(); ++k) base[i] += oi[k] * p.out_strides[i][k];
      std::conditional_t<is_float_v<T>, double, uint64_t> acc{};
      std::vector<int64_t> si(p.sum_shape.size(), 0);
      for (int64_t s = 0; s < n_sum; ++s, nn::next_index(si, p.sum_shape)) {
        std::conditional_t<is_float_v<T>, double, uint64_t> prod{1};
        for (size_t i = 0; i < n_in; ++i) {
          int64_t off = base[i];
          for (size_t k = 0; k < si.size(); ++k) off += si[k] * p.sum_strides[i][k];
          if constexpr (is_float_v<T>) prod *= static_cast<double>(xs[i][off]);
          else prod *= static_cast<uint64_t>(static_cast<int64_t>(xs[i][off]));
        }
        acc += prod;
      }
      if constexpr (is_float_v<T>) y[o] = from_double<T>(acc);
      else y[o] = static_cast<T>(acc);
    }
  }, kNumericTypes, "Einsum");
  return {Y};
}

// ------------------------------------------------------------------------------------------------- Det

std::vector<Tensor> det(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.rank() < 2 || X.dim(X.rank() - 1) != X.dim(X.rank() - 2))
    ctx.fail("input must be [*, M, M] (square matrices), got " + X.describe());
  if (!kFloatTypes.has(X.dtype())) ctx.fail("input must be a float tensor, got " + X.describe());
  int64_t n = X.dim(X.rank() - 1);
  Shape out(X.shape().begin(), X.shape().end() - 2);
  std::vector<double> x = nn::to_doubles(X);
  int64_t count = shape_numel(out);
  std::vector<double> y(static_cast<size_t>(count));
  for (int64_t b = 0; b < count; ++b) {
    std::vector<double> m(x.begin() + b * n * n, x.begin() + (b + 1) * n * n);
    double d = 1;
    for (int64_t c = 0; c < n && d != 0; ++c) {  // LU with partial pivoting
      int64_t piv = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(m[size_t(r * n + c)]) > std::fabs(m[size_t(piv * n + c)])) piv = r;
      if (m[size_t(piv * n + c)] == 0) { d = 0; break; }
      if (piv != c) {
        for (int64_t k = 0; k < n; ++k) std::swap(m[size_t(c * n + k)], m[size_t(piv * n + k)]);
        d = -d;
      }
      double p = m[size_t(c * n + c)];
      d *= p;
      for (int64_t r = c + 1; r < n; ++r) {
        double f = m[size_t(r * n + c)] / p;
        for (int64_t k = c; k < n; ++k) m[size_t(r * n + k)] -= f * m[size_t(c * n + k)];
      }
    }
    y[size_t(b)] = d;
  }
  return {nn::tensor_from_doubles(X.dtype(), out, y)};
}

}  // namespace

void register_matmul(KernelRegistry& r) {
  r.add("MatMul", matmul);
  r.add("MatMulInteger", matmul_integer);
  r.add("QLinearMatMul", qlinear_matmul);
  r.add("MatMulIntegerToFloat", matmul_integer_to_float, ir::kMsDomain);
  r.add("Gemm", gemm);
  r.add("Einsum", einsum);
  r.add("Det", det);
}

}  // namespace onnxgpu::cpu
