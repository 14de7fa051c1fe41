// Elementwise ops of two or more inputs with numpy broadcasting: arithmetic, comparisons, logic,
// BitShift, the Bitwise ops, SwiGLU, Where, PRelu and the variadic Max/Min/Sum/Mean.
#include <algorithm>
#include <cmath>

#include "ops/broadcast.h"
#include "cpu/elementwise_util.h"
#include "cpu/kernel.h"

namespace onnxgpu::cpu {
namespace {
using namespace ew;

constexpr DTypeSet kBoolOnly{DType::Bool};

// Linear index into an input for each element of the broadcast output.
class Indexer {
 public:
  Indexer(const Shape& in, const Shape& out) {
    if (shape_numel(in) == 1) kind_ = Kind::Scalar;
    else if (in == out) kind_ = Kind::Same;
    else if (is_trailing(in, out)) kind_ = Kind::Trailing, n_ = shape_numel(in);
    else map_ = ops::broadcast_index_map(in, out);
  }
  bool same() const { return kind_ == Kind::Same; }
  bool scalar() const { return kind_ == Kind::Scalar; }
  bool trailing() const { return kind_ == Kind::Trailing; }
  int64_t period() const { return n_; }  // a trailing input's element count
  int64_t operator()(int64_t i) const {
    switch (kind_) {
      case Kind::Same: return i;
      case Kind::Scalar: return 0;
      case Kind::Trailing: return i % n_;
      default: return map_[size_t(i)];
    }
  }

 private:
  // `in` is `out`'s last dims (after leading 1s): a bias row repeated over the rows, no map needed.
  static bool is_trailing(const Shape& in, const Shape& out) {
    size_t lead = 0;
    while (lead < in.size() && in[lead] == 1) ++lead;
    size_t n = in.size() - lead;
    return n <= out.size() && std::equal(in.begin() + lead, in.end(), out.end() - n);
  }
  enum class Kind { Same, Scalar, Trailing, Map } kind_ = Kind::Map;
  int64_t n_ = 1;
  std::vector<int64_t> map_;
};

Shape broadcast_or_fail(const KernelContext& ctx, const std::vector<Shape>& shapes) {
  try {
    return ops::broadcast_shapes(shapes);
  } catch (const InvalidArgument& e) {
    ctx.fail(std::string("inputs are not broadcastable: ") + e.what());
  }
}

// out[i] = f(a[.], b[.]) over the broadcast shape. f gets acc_t<A>, acc_t<B> values; the result type is O.
template <class A, class B, class O, class F>
Tensor broadcast_binary(const KernelContext& ctx, const Tensor& a, const Tensor& b, F&& f, bool legacy = true) {
  Shape bs = legacy ? ops::legacy_broadcast_b(ctx.node, ctx.opset, a.shape(), b.shape(), [&](const std::string& m) { ctx.fail(m); })
                       : b.shape();
  Shape out_shape = broadcast_or_fail(ctx, {a.shape(), bs});
  Tensor out(dtype_of<O>(), out_shape);
  Indexer ia(a.shape(), out_shape), ib(bs, out_shape);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  const int64_t n = out.numel();
  auto at = [&](int64_t i, A a, B b) { po[i] = O(f(acc_t<A>(a), acc_t<B>(b))); };
  // The common layouts as plain loops the compiler vectorizes (the same values as the generic loop):
  // equal shapes, a scalar operand, a bias row repeated over the rows.
  if (ia.same() && ib.same()) {
    for (int64_t i = 0; i < n; ++i) at(i, pa[i], pb[i]);
  } else if (ia.same() && ib.scalar()) {
    const B bv = pb[0];
    for (int64_t i = 0; i < n; ++i) at(i, pa[i], bv);
  } else if (ia.scalar() && ib.same()) {
    const A av = pa[0];
    for (int64_t i = 0; i < n; ++i) at(i, av, pb[i]);
  } else if (ia.same() && ib.trailing()) {
    const int64_t w = ib.period();
    for (int64_t r = 0; r < n; r += w)
      for (int64_t j = 0; j < w; ++j) at(r + j, pa[r + j], pb[j]);
  } else if (ia.trailing() && ib.same()) {
    const int64_t w = ia.period();
    for (int64_t r = 0; r < n; r += w)
      for (int64_t j = 0; j < w; ++j) at(r + j, pa[j], pb[r + j]);
  } else {
    for (int64_t i = 0; i < n; ++i) at(i, pa[ia(i)], pb[ib(i)]);
  }
  return out;
}

void check_same_type(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    ctx.fail("inputs A and B must have the same type, got " + a.describe() + " and " + b.describe());
}

// Registers an op whose output has the inputs' type T. `make(ctx)` returns a generic callable on acc_t<T>.
template <DTypeSet Types, class Make>
void add_same_type(KernelRegistry& r, const std::string& name, Make make) {
  r.add(name, [name, make](KernelContext& ctx) -> std::vector<Tensor> {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    check_same_type(ctx, a, b);
    auto f = make(ctx);
    return {visit_only<Types>(a.dtype(), [&]<class T>() { return broadcast_binary<T, T, T>(ctx, a, b, f); }, name)};
  });
}

// Registers an op with inputs of type T and a bool output.
template <DTypeSet Types, class F>
void add_predicate(KernelRegistry& r, const std::string& name, F f) {
  r.add(name, [name, f](KernelContext& ctx) -> std::vector<Tensor> {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    check_same_type(ctx, a, b);
    return {visit_only<Types>(a.dtype(), [&]<class T>() { return broadcast_binary<T, T, bool>(ctx, a, b, f); }, name)};
  });
}

// Integer power by squaring, wrapping like repeated two's complement multiplication.
template <class V>
V int_pow(const KernelContext& ctx, V base, int64_t e) {
  if (e < 0) {
    if (base == V(1)) return V(1);
    if constexpr (std::is_signed_v<V>)
      if (base == V(-1)) return (e & 1) ? V(-1) : V(1);
    if (base == V(0)) ctx.fail("integer 0 raised to a negative power");
    return V(0);  // |base| >= 2: 1/base^n truncates to 0
  }
  V result = V(1);
  while (e > 0) {
    if (e & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return result;
}

template <class V>
bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) return std::isnan(v);
  else return false;
}

// Max, Min, Sum, Mean: 1..N inputs of one type, multidirectional broadcast.
template <DTypeSet Types, class F>
void add_variadic(KernelRegistry& r, const std::string& name, bool mean, F f) {
  r.add(name, [name, mean, f](KernelContext& ctx) -> std::vector<Tensor> {
    size_t n = ctx.num_inputs();
    if (n == 0) ctx.fail("needs at least one input");
    std::vector<Shape> shapes;
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = ctx.input(i);
      if (t.dtype() != ctx.input(0).dtype())
        ctx.fail("all inputs must have the same type; input 0 is " + ctx.input(0).describe() + ", input " +
                 std::to_string(i) + " is " + t.describe());
      shapes.push_back(t.shape());
    }
    Shape out_shape = broadcast_or_fail(ctx, shapes);
    return {visit_only<Types>(ctx.input(0).dtype(), [&]<class T>() {
      using V = acc_t<T>;
      int64_t numel = shape_numel(out_shape);
      std::vector<V> acc(static_cast<size_t>(numel));
      for (size_t k = 0; k < n; ++k) {
        const T* p = ctx.input(k).template data<T>();
        Indexer ix(shapes[k], out_shape);
        for (int64_t i = 0; i < numel; ++i) {
          V v = V(p[ix(i)]);
          acc[size_t(i)] = k == 0 ? v : f(acc[size_t(i)], v);
        }
      }
      Tensor out(dtype_of<T>(), out_shape);
      T* po = out.data<T>();
      for (int64_t i = 0; i < numel; ++i) {
        if constexpr (std::is_floating_point_v<V>) po[i] = T(mean ? acc[size_t(i)] / V(n) : acc[size_t(i)]);
        else po[i] = T(acc[size_t(i)]);
      }
      return out;
    }, name)};
  });
}

Tensor pow_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (ctx.opset < 12) check_same_type(ctx, a, b);
  constexpr DTypeSet kBase = kFloatTypes | DTypeSet{DType::Int32, DType::Int64};
  return visit_only<kBase>(a.dtype(), [&]<class T>() {
    return visit_only<kNumericTypes>(b.dtype(), [&]<class E>() {
      return broadcast_binary<T, E, T>(ctx, a, b, [&](auto x, auto y) -> acc_t<T> {
        using V = decltype(x);
        if constexpr (is_int_v<V> && is_int_v<decltype(y)>) {
          if constexpr (std::is_same_v<decltype(y), uint64_t>)
            if (y > uint64_t(INT64_MAX)) return int_pow(ctx, x, int64_t(INT64_MAX - ((y & 1) ? 0 : 1)));
          return int_pow(ctx, x, int64_t(y));
        } else if constexpr (is_int_v<V>) {
          return float_to_int<V>(std::pow(double(x), double(y)));
        } else if constexpr (std::is_same_v<V, double>) {
          return std::pow(x, double(y));
        } else {
          // float base: compute in double, round once. Squares and cubes (GELU's x^3) by multiplying:
          // x * x is exact in double, the cube rounds once there, as pow() does (to within its error).
          const double dx = double(x), dy = double(y);
          if (dy == 2.0) return V(dx * dx);
          if (dy == 3.0) return V(dx * dx * dx);
          return V(std::pow(dx, dy));
        }
      });
    }, "Pow exponent");
  }, "Pow");
}

Tensor where_kernel(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (c.dtype() != DType::Bool) ctx.fail("input 'condition' must be bool, got " + c.describe());
  check_same_type(ctx, x, y);
  Shape out_shape = broadcast_or_fail(ctx, {c.shape(), x.shape(), y.shape()});
  Indexer ic(c.shape(), out_shape), ix(x.shape(), out_shape), iy(y.shape(), out_shape);
  const bool* pc = c.data<bool>();
  Tensor out(x.dtype(), out_shape);
  int64_t n = out.numel();
  if (x.dtype() == DType::String) {
    auto& po = out.string_data();
    const auto& px = x.string_data();
    const auto& py = y.string_data();
    for (int64_t i = 0; i < n; ++i) po[size_t(i)] = pc[ic(i)] ? px[size_t(ix(i))] : py[size_t(iy(i))];
    return out;
  }
  return visit_only<kAllTypes>(x.dtype(), [&]<class T>() {
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0; i < n; ++i) po[i] = pc[ic(i)] ? px[ix(i)] : py[iy(i)];
    return out;
  }, "Where");
}

Tensor prelu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor slope = ctx.input(1);
  check_same_type(ctx, x, slope);
  // Before opset 7 a slope of shape [C] applied per channel (axis 1).
  if (ctx.opset < 7 && slope.rank() == 1 && x.rank() >= 2 && slope.dim(0) == x.dim(1) && slope.dim(0) != 1) {
    Shape s(size_t(x.rank() - 1), 1);
    s[0] = slope.dim(0);
    slope = slope.reshaped(s);
  }
  Shape out_shape = broadcast_or_fail(ctx, {x.shape(), slope.shape()});
  if (out_shape != x.shape())
    ctx.fail("input 'slope' " + slope.describe() + " must broadcast to input 'X' " + x.describe());
  return visit_only<kNumericTypes>(x.dtype(), [&]<class T>() {
    return broadcast_binary<T, T, T>(ctx, x, slope, [](auto v, auto s) {
      using V = decltype(v);
      if constexpr (std::is_unsigned_v<V>) return v;
      else if constexpr (is_int_v<V>) return v < 0 ? wrap_mul(v, s) : v;
      else return v < V(0) ? v * s : v;
    }, /*legacy=*/false);
  }, "PRelu");
}

}  // namespace

void register_binary(KernelRegistry& r) {
  // --- Arithmetic -------------------------------------------------------------------------------
  auto none = [](auto f) { return [f](const KernelContext&) { return f; }; };
  add_same_type<kNumericTypes>(r, "Add", none([](auto a, auto b) {
    if constexpr (is_int_v<decltype(a)>) return wrap_add(a, b);
    else return a + b;
  }));
  add_same_type<kNumericTypes>(r, "Sub", none([](auto a, auto b) {
    if constexpr (is_int_v<decltype(a)>) return wrap_sub(a, b);
    else return a - b;
  }));
  add_same_type<kNumericTypes>(r, "Mul", none([](auto a, auto b) {
    if constexpr (is_int_v<decltype(a)>) return wrap_mul(a, b);
    else return a * b;
  }));
  add_same_type<kNumericTypes>(r, "Div", [](const KernelContext& ctx) {
    return [&ctx](auto a, auto b) {
      using V = decltype(a);
      if constexpr (is_int_v<V>) {
        if (b == V(0)) ctx.fail("integer division by zero (input B has a zero element)");
        if constexpr (std::is_signed_v<V>)
          if (b == V(-1)) return wrap_neg(a);  // avoids the overflow of MIN / -1
        return V(a / b);  // truncates toward zero
      } else {
        return a / b;
      }
    };
  });
  add_same_type<kNumericTypes>(r, "Mod", [](const KernelContext& ctx) {
    bool fmod = ctx.node.attr_int("fmod", 0) != 0;
    return [&ctx, fmod](auto a, auto b) {
      using V = decltype(a);
      if constexpr (is_int_v<V>) {
        if (b == V(0)) ctx.fail("integer modulo by zero (input B has a zero element)");
        if constexpr (std::is_signed_v<V>) {
          if (b == V(-1)) return V(0);
          V m = V(a % b);                                        // sign of the dividend (C fmod)
          if (!fmod && m != 0 && ((m < 0) != (b < 0))) m = V(m + b);  // sign of the divisor
          return m;
        } else {
          return V(a % b);
        }
      } else {
        V m = std::fmod(a, b);  // sign of the dividend (C fmod); NaN for b == 0 or an infinite a
        if (fmod) return m;
        // fmod=0 on floats (allowed since the opset-13 spec's clarification): the sign of the divisor, as
        // numpy's mod: a remainder of the other sign moves by b (-3 mod inf is inf), a zero takes b's sign.
        if (m != V(0) && ((m < V(0)) != (b < V(0)))) return V(m + b);
        if (m == V(0)) return std::copysign(V(0), b);
        return m;
      }
    };
  });
  r.add("Pow", [](KernelContext& ctx) -> std::vector<Tensor> { return {pow_kernel(ctx)}; });

  // --- Logic and bits ---------------------------------------------------------------------------
  add_same_type<kBoolOnly>(r, "And", none([](bool a, bool b) { return a && b; }));
  add_same_type<kBoolOnly>(r, "Or", none([](bool a, bool b) { return a || b; }));
  add_same_type<kBoolOnly>(r, "Xor", none([](bool a, bool b) { return a != b; }));
  // BitShift on every integer type (opset 11: unsigned only; later specs add the signed ones). The shift
  // amount is taken as the unsigned value of its bits: a negative one is a shift by the width or more,
  // which gives 0 to the left and the sign's fill (0 or -1) to the right; a right shift is arithmetic on
  // signed types, a left shift wraps (two's complement).
  add_same_type<kIntTypes>(r, "BitShift", [](const KernelContext& ctx) {
    std::string dir = ctx.node.attr_string("direction", "");
    if (dir != "LEFT" && dir != "RIGHT") ctx.fail("attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"" + dir + "\"");
    bool left = dir == "LEFT";
    return [left](auto a, auto b) {
      using V = decltype(a);
      using U = std::make_unsigned_t<V>;
      constexpr U bits = U(sizeof(V) * 8);
      U s = U(b);
      if (left) return s >= bits ? V(0) : V(U(U(a) << s));
      if constexpr (std::is_signed_v<V>) return s >= bits ? V(a < 0 ? -1 : 0) : V(a >> s);  // arithmetic
      else return s >= bits ? V(0) : V(a >> s);
    };
  });
  // Bitwise ops (opset 18) on every integer type.
  add_same_type<kIntTypes>(r, "BitwiseAnd", none([](auto a, auto b) { return decltype(a)(a & b); }));
  add_same_type<kIntTypes>(r, "BitwiseOr", none([](auto a, auto b) { return decltype(a)(a | b); }));
  add_same_type<kIntTypes>(r, "BitwiseXor", none([](auto a, auto b) { return decltype(a)(a ^ b); }));

  // SwiGLU (opset 28): Swish(a, alpha) * b, with numpy broadcasting.
  add_same_type<kFloatTypes>(r, "SwiGLU", [](const KernelContext& ctx) {
    float alpha = ctx.node.attr_float("alpha", 1.0f);
    return [alpha](auto a, auto b) {
      using V = decltype(a);
      V z = V(alpha) * a;
      V sig = z >= V(0) ? V(1) / (V(1) + std::exp(-z)) : std::exp(z) / (V(1) + std::exp(z));
      return a * sig * b;
    };
  });

  // --- Comparisons ------------------------------------------------------------------------------
  add_predicate<kAllTypes>(r, "Equal", [](auto a, auto b) { return a == b; });
  add_predicate<kNumericTypes>(r, "Greater", [](auto a, auto b) { return a > b; });
  add_predicate<kNumericTypes>(r, "Less", [](auto a, auto b) { return a < b; });
  add_predicate<kNumericTypes>(r, "GreaterOrEqual", [](auto a, auto b) { return a >= b; });
  add_predicate<kNumericTypes>(r, "LessOrEqual", [](auto a, auto b) { return a <= b; });

  // --- Selection --------------------------------------------------------------------------------
  r.add("Where", [](KernelContext& ctx) -> std::vector<Tensor> { return {where_kernel(ctx)}; });
  r.add("PRelu", [](KernelContext& ctx) -> std::vector<Tensor> { return {prelu_kernel(ctx)}; });

  // --- Variadic ---------------------------------------------------------------------------------
  add_variadic<kNumericTypes>(r, "Max", false, [](auto a, auto b) {
    if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
    return a < b ? b : a;
  });
  add_variadic<kNumericTypes>(r, "Min", false, [](auto a, auto b) {
    if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
    return b < a ? b : a;
  });
  add_variadic<kNumericTypes>(r, "Sum", false, [](auto a, auto b) {
    if constexpr (is_int_v<decltype(a)>) return wrap_add(a, b);
    else return a + b;
  });
  add_variadic<kFloatTypes>(r, "Mean", true, [](auto a, auto b) { return a + b; });
}

}  // namespace onnxgpu::cpu
