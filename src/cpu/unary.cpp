// Elementwise unary ops: math functions, activations, predicates (IsNaN, IsInf, Not), BitwiseNot.
#include <cmath>
#include <numbers>

#include "cpu/elementwise_util.h"
#include "cpu/kernel.h"

namespace onnxgpu::cpu {
namespace {
using namespace ew;

constexpr DTypeSet kSignedNumeric = kFloatTypes | kSignedIntTypes;

// Registers an op computing y = f(x) with the input's type. `make(ctx)` reads the node's attributes and
// returns a generic callable applied to acc_t<T> values (float/double for float types, T for integers).
template <DTypeSet Types, class Make>
void add_unary(KernelRegistry& r, const std::string& name, Make make) {
  r.add(name, [name, make](KernelContext& ctx) -> std::vector<Tensor> {
    const Tensor& x = ctx.input(0);
    auto f = make(ctx);
    return {visit_only<Types>(x.dtype(), [&]<class T>() { return map_elements<T, T>(x, f); }, name)};
  });
}

// Same, for ops without attributes.
template <DTypeSet Types, class F>
void add_simple(KernelRegistry& r, const std::string& name, F f) {
  add_unary<Types>(r, name, [f](const KernelContext&) { return f; });
}

template <class V>
V sigmoid(V x) {
  if (x >= V(0)) return V(1) / (V(1) + std::exp(-x));
  V e = std::exp(x);
  return e / (V(1) + e);
}

// Float math: the C library's functions, on float types only.
void register_float_math(KernelRegistry& r) {
  add_simple<kFloatTypes>(r, "Ceil", [](auto x) { return std::ceil(x); });
  add_simple<kFloatTypes>(r, "Floor", [](auto x) { return std::floor(x); });
  add_simple<kFloatTypes>(r, "Round", [](auto x) { return std::nearbyint(x); });  // ties to even
  add_simple<kFloatTypes>(r, "Sqrt", [](auto x) { return std::sqrt(x); });
  add_simple<kFloatTypes>(r, "Reciprocal", [](auto x) { return decltype(x)(1) / x; });
  add_simple<kFloatTypes>(r, "Exp", [](auto x) { return std::exp(x); });
  add_simple<kFloatTypes>(r, "Log", [](auto x) { return std::log(x); });
  add_simple<kFloatTypes>(r, "Sin", [](auto x) { return std::sin(x); });
  add_simple<kFloatTypes>(r, "Cos", [](auto x) { return std::cos(x); });
  add_simple<kFloatTypes>(r, "Tan", [](auto x) { return std::tan(x); });
  add_simple<kFloatTypes>(r, "Asin", [](auto x) { return std::asin(x); });
  add_simple<kFloatTypes>(r, "Acos", [](auto x) { return std::acos(x); });
  add_simple<kFloatTypes>(r, "Atan", [](auto x) { return std::atan(x); });
  add_simple<kFloatTypes>(r, "Sinh", [](auto x) { return std::sinh(x); });
  add_simple<kFloatTypes>(r, "Cosh", [](auto x) { return std::cosh(x); });
  add_simple<kFloatTypes>(r, "Asinh", [](auto x) { return std::asinh(x); });
  add_simple<kFloatTypes>(r, "Acosh", [](auto x) { return std::acosh(x); });
  add_simple<kFloatTypes>(r, "Atanh", [](auto x) { return std::atanh(x); });
  add_simple<kFloatTypes>(r, "Tanh", [](auto x) { return std::tanh(x); });
  add_simple<kFloatTypes>(r, "Sigmoid", [](auto x) { return sigmoid(x); });
  add_simple<kFloatTypes>(r, "Softsign", [](auto x) { return x / (decltype(x)(1) + std::fabs(x)); });
  add_simple<kFloatTypes>(r, "Softplus", [](auto x) {
    // log(1 + exp(x)) without overflow for large x.
    using V = decltype(x);
    return x > V(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  });
  add_simple<kFloatTypes>(r, "HardSwish", [](auto x) {
    using V = decltype(x);
    return x * std::max(V(0), std::min(V(1), x / V(6) + V(0.5)));
  });
}

// Numeric ops defined on integers too (wrapping like two's complement where they can overflow).
void register_numeric(KernelRegistry& r) {
  add_simple<kNumericTypes>(r, "Abs", [](auto x) {
    using V = decltype(x);
    if constexpr (std::is_unsigned_v<V>) return x;
    else if constexpr (is_int_v<V>) return x < 0 ? wrap_neg(x) : x;
    else return std::fabs(x);
  });
  add_simple<kSignedNumeric>(r, "Neg", [](auto x) {
    if constexpr (is_int_v<decltype(x)>) return wrap_neg(x);
    else return -x;
  });
  add_simple<kNumericTypes>(r, "Sign", [](auto x) {
    using V = decltype(x);
    if constexpr (std::is_unsigned_v<V>) return V(x != 0);
    else return x > V(0) ? V(1) : x < V(0) ? V(-1) : x;  // keeps 0 and NaN
  });
  add_simple<kNumericTypes>(r, "Erf", [](auto x) {
    using V = decltype(x);
    if constexpr (is_int_v<V>) return float_to_int<V>(std::erf(double(x)));
    else return std::erf(x);
  });
  add_simple<kSignedNumeric>(r, "Relu", [](auto x) {
    using V = decltype(x);
    return x < V(0) ? V(0) : x;  // NaN stays NaN
  });
}

// Activations with attributes, read per node.
void register_activations(KernelRegistry& r) {
  add_unary<kFloatTypes>(r, "LeakyRelu", [](const KernelContext& ctx) {
    float alpha = ctx.node.attr_float("alpha", 0.01f);
    return [alpha](auto x) {
      using V = decltype(x);
      return x < V(0) ? V(alpha) * x : x;
    };
  });
  add_unary<kFloatTypes>(r, "Elu", [](const KernelContext& ctx) {
    float alpha = ctx.node.attr_float("alpha", 1.0f);
    return [alpha](auto x) {
      using V = decltype(x);
      return x < V(0) ? V(alpha) * std::expm1(x) : x;
    };
  });
  add_unary<kFloatTypes>(r, "Selu", [](const KernelContext& ctx) {
    float alpha = ctx.node.attr_float("alpha", 1.67326319217681884765625f);
    float gamma = ctx.node.attr_float("gamma", 1.05070102214813232421875f);
    return [alpha, gamma](auto x) {
      using V = decltype(x);
      return x <= V(0) ? V(gamma) * (V(alpha) * std::exp(x) - V(alpha)) : V(gamma) * x;
    };
  });
  add_unary<kFloatTypes>(r, "Celu", [](const KernelContext& ctx) {
    float alpha = ctx.node.attr_float("alpha", 1.0f);
    if (alpha == 0.0f) ctx.fail("attribute 'alpha' must not be 0");
    return [alpha](auto x) {
      using V = decltype(x);
      if (std::isnan(x)) return x;  // std::max and std::min would drop it
      return std::max(V(0), x) + std::min(V(0), V(alpha) * std::expm1(x / V(alpha)));
    };
  });
  add_unary<kFloatTypes>(r, "HardSigmoid", [](const KernelContext& ctx) {
    float alpha = ctx.node.attr_float("alpha", 0.2f);
    float beta = ctx.node.attr_float("beta", 0.5f);
    return [alpha, beta](auto x) {
      using V = decltype(x);
      if (std::isnan(x)) return x;  // std::max and std::min would drop it
      return std::max(V(0), std::min(V(1), V(alpha) * x + V(beta)));
    };
  });
  add_unary<kFloatTypes>(r, "ThresholdedRelu", [](const KernelContext& ctx) {
    float alpha = ctx.node.attr_float("alpha", 1.0f);
    return [alpha](auto x) {
      using V = decltype(x);
      return x > V(alpha) ? x : V(0);
    };
  });
  add_unary<kNumericTypes>(r, "Shrink", [](const KernelContext& ctx) {
    double bias = ctx.node.attr_float("bias", 0.0f);
    double lambd = ctx.node.attr_float("lambd", 0.5f);
    return [bias, lambd](auto x) {
      using V = decltype(x);
      double xd = double(x);
      if (!(xd < -lambd) && !(xd > lambd)) return V(0);  // NaN included: "otherwise, y = 0"
      if constexpr (is_int_v<V>) {
        if (bias == std::trunc(bias) && std::fabs(bias) < 9.2e18) {  // exact integer arithmetic
          V b = V(int64_t(bias));
          return xd < -lambd ? wrap_add(x, b) : wrap_sub(x, b);
        }
        return float_to_int<V>(xd < -lambd ? xd + bias : xd - bias);
      } else {
        return xd < -lambd ? V(x + V(bias)) : V(x - V(bias));
      }
    };
  });
  add_unary<kFloatTypes>(r, "Gelu", [](const KernelContext& ctx) {
    std::string approx = ctx.node.attr_string("approximate", "none");
    if (approx != "none" && approx != "tanh")
      ctx.fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"" + approx + "\"");
    bool use_tanh = approx == "tanh";
    return [use_tanh](auto x) {
      using V = decltype(x);
      if (use_tanh) {
        V k = V(std::sqrt(2.0 / std::numbers::pi));
        return V(0.5) * x * (V(1) + std::tanh(k * (x + V(0.044715) * x * x * x)));
      }
      return V(0.5) * x * (V(1) + std::erf(x / V(std::numbers::sqrt2)));
    };
  });
  // Swish (opset 24): x * sigmoid(alpha * x).
  add_unary<kFloatTypes>(r, "Swish", [](const KernelContext& ctx) {
    float alpha = ctx.node.attr_float("alpha", 1.0f);
    return [alpha](auto x) { return x * sigmoid(decltype(x)(alpha) * x); };
  });
  // Mish (opset 18): x * tanh(softplus(x)), softplus as Softplus computes it.
  add_simple<kFloatTypes>(r, "Mish", [](auto x) {
    using V = decltype(x);
    V sp = x > V(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    return x * std::tanh(sp);
  });
}

// Predicates (IsNaN, IsInf) and Not: bool outputs; BitwiseNot.
void register_predicates(KernelRegistry& r) {
  r.add("IsNaN", [](KernelContext& ctx) -> std::vector<Tensor> {
    const Tensor& x = ctx.input(0);
    return {visit_only<kFloatTypes>(x.dtype(), [&]<class T>() {
      return map_elements<T, bool>(x, [](auto v) { return std::isnan(v); });
    }, "IsNaN")};
  });
  r.add("IsInf", [](KernelContext& ctx) -> std::vector<Tensor> {
    const Tensor& x = ctx.input(0);
    bool neg = ctx.node.attr_int("detect_negative", 1) != 0;
    bool pos = ctx.node.attr_int("detect_positive", 1) != 0;
    return {visit_only<kFloatTypes>(x.dtype(), [&]<class T>() {
      return map_elements<T, bool>(x, [&](auto v) { return std::isinf(v) && (v > 0 ? pos : neg); });
    }, "IsInf")};
  });
  r.add("Not", [](KernelContext& ctx) -> std::vector<Tensor> {
    const Tensor& x = ctx.input(0);
    return {visit_only<DTypeSet{DType::Bool}>(x.dtype(), [&]<class T>() {
      return map_elements<T, bool>(x, [](bool v) { return !v; });
    }, "Not")};
  });
  // BitwiseNot (opset 18): every integer type.
  add_simple<kIntTypes>(r, "BitwiseNot", [](auto x) { return decltype(x)(~x); });
}

}  // namespace

void register_unary(KernelRegistry& r) {
  register_float_math(r);
  register_numeric(r);
  register_activations(r);
  register_predicates(r);
}

}  // namespace onnxgpu::cpu
