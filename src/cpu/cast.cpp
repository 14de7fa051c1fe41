// Cast, CastLike, Clip and BitCast.
#include <cctype>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <limits>
#include <optional>

#include "cpu/elementwise_util.h"
#include "cpu/kernel.h"
#include "ops/bitcast.h"
#include "ops/cast.h"

namespace onnxgpu::cpu {
namespace {
using namespace ew;

// The 'to' attribute (ops/cast.h); a type the engine does not know is out of scope.
DType cast_target(const KernelContext& ctx) {
  const DType t = ops::cast_target(ctx.node, ctx.fail_fn());
  if (const std::string why = ops::cast_target_unsupported(t); !why.empty()) ctx.unsupported(why);
  return t;
}

template <class T>
std::string to_string_value(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "1" : "0";
  } else if constexpr (is_int_v<T>) {
    return std::to_string(v);
  } else {
    using V = std::conditional_t<std::is_same_v<T, double>, double, float>;
    V x = V(v);
    if (std::isnan(x)) return "NaN";
    if (std::isinf(x)) return x > 0 ? "INF" : "-INF";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), x);  // shortest representation that round-trips
    return std::string(buf, res.ptr);
  }
}

template <class T>
T from_string_value(const KernelContext& ctx, const std::string& s) {
  const char* begin = s.c_str();
  char* end = nullptr;
  auto bad = [&]() { ctx.fail("cannot convert the string \"" + s + "\" to " + std::string(dtype_name(dtype_of<T>()))); };
  auto check_end = [&]() {
    while (end && *end && std::isspace(static_cast<unsigned char>(*end))) ++end;
    if (end == begin || (end && *end)) bad();
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
    double d = std::strtod(begin, &end);
    check_end();
    return d != 0.0;
  } else if constexpr (std::is_unsigned_v<T>) {
    errno = 0;
    unsigned long long v = std::strtoull(begin, &end, 10);
    check_end();
    if (errno == ERANGE || v > std::numeric_limits<T>::max() || s.find('-') != std::string::npos) bad();
    return T(v);
  } else if constexpr (is_int_v<T>) {
    errno = 0;
    long long v = std::strtoll(begin, &end, 10);
    check_end();
    if (errno == ERANGE || v > std::numeric_limits<T>::max() || v < std::numeric_limits<T>::min()) bad();
    return T(v);
  } else {
    double d = std::strtod(begin, &end);  // accepts "NaN", "INF", "+INF", "-inf", exponents
    check_end();
    if constexpr (std::is_same_v<T, double>) return d;
    else return convert<T>(d);
  }
}

// A cast from or to a narrow type (dtype.h), through double; an integer into int4 / int2 / uint4 / uint2
// keeps its low bits exactly. `mode`: the node's `saturate` and `round_mode` (ops/cast.h).
Tensor cast_narrow(const Tensor& x, DType to, const NarrowConversion& mode) {
  Tensor out(to, x.shape());
  const int64_t n = x.numel();
  auto encode = [&](double v) {
    return to == DType::Float8E8M0 ? e8m0_from_double(v, mode.saturate, mode.rounding) : narrow_from_double(to, v, mode.saturate);
  };
  if (dtype_is_narrow(x.dtype())) {
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    if (dtype_is_narrow(to)) {
      uint8_t* dst = static_cast<uint8_t*>(out.raw());
      for (int64_t i = 0; i < n; ++i) dst[i] = encode(narrow_to_double(x.dtype(), src[i]));
      return out;
    }
    visit_only<kAllTypes>(to, [&]<class D>() {
      D* dst = out.data<D>();
      for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(narrow_to_double(x.dtype(), src[i]));
      return Tensor();
    }, "Cast output");
    return out;
  }
  uint8_t* dst = static_cast<uint8_t*>(out.raw());
  const bool int_to = !dtype_is_narrow_float(to);
  visit_only<kAllTypes>(x.dtype(), [&]<class S>() {
    const S* src = x.data<S>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (is_int_v<S> || std::is_same_v<S, bool>) {
        // The low bits of the integer (a double would round an int64 beyond 2^53).
        dst[i] = int_to ? narrow_from_double(to, double(int64_t(uint64_t(src[i]) & 0xfu))) : encode(double(src[i]));
      } else {
        dst[i] = encode(double(src[i]));
      }
    }
    return Tensor();
  }, "Cast input");
  return out;
}

Tensor cast_tensor(const KernelContext& ctx, const Tensor& x, DType to) {
  if (x.dtype() == to) return x.clone();
  if (dtype_is_narrow(x.dtype()) || dtype_is_narrow(to)) return cast_narrow(x, to, ops::cast_conversion(ctx.node, ctx.fail_fn()));
  Tensor out(to, x.shape());
  int64_t n = x.numel();
  if (to == DType::String) {
    auto& dst = out.string_data();
    visit_only<kAllTypes>(x.dtype(), [&]<class S>() {
      const S* src = x.data<S>();
      for (int64_t i = 0; i < n; ++i) dst[size_t(i)] = to_string_value(src[i]);
      return Tensor();
    }, "Cast input");
    return out;
  }
  if (x.dtype() == DType::String) {
    const auto& src = x.string_data();
    visit_only<kAllTypes>(to, [&]<class D>() {
      D* dst = out.data<D>();
      for (int64_t i = 0; i < n; ++i) dst[i] = from_string_value<D>(ctx, src[size_t(i)]);
      return Tensor();
    }, "Cast output");
    return out;
  }
  visit_only<kAllTypes>(x.dtype(), [&]<class S>() {
    const S* src = x.data<S>();
    return visit_only<kAllTypes>(to, [&]<class D>() {
      D* dst = out.data<D>();
      for (int64_t i = 0; i < n; ++i) dst[i] = convert<D>(src[i]);
      return Tensor();
    }, "Cast output");
  }, "Cast input");
  return out;
}

// Bound i (1 = min, 2 = max) of Clip-11+: an optional input holding one value of the input's type.
template <class T>
std::optional<acc_t<T>> clip_bound(const KernelContext& ctx, size_t i, const Tensor& x) {
  if (!ctx.has_input(i)) return std::nullopt;
  const Tensor& b = ctx.input(i);
  const char* what = i == 1 ? "min" : "max";
  if (b.dtype() != x.dtype()) ctx.fail(std::string("input '") + what + "' " + b.describe() + " must have the type of input 'input' " + x.describe());
  if (b.numel() != 1) ctx.fail(std::string("input '") + what + "' must be a scalar, got " + b.describe());
  return acc_t<T>(b.data<T>()[0]);
}

Tensor clip_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  return visit_only<kNumericTypes>(x.dtype(), [&]<class T>() {
    using V = acc_t<T>;
    std::optional<V> lo, hi;
    if (ctx.opset < 11) {
      if constexpr (!is_float_v<T>) ctx.fail("Clip before opset 11 takes float inputs only, got " + x.describe());
      else {
        lo = V(ctx.node.attr_float("min", -std::numeric_limits<float>::max()));
        hi = V(ctx.node.attr_float("max", std::numeric_limits<float>::max()));
      }
    } else {
      lo = clip_bound<T>(ctx, 1, x);
      hi = clip_bound<T>(ctx, 2, x);
    }
    return map_elements<T, T>(x, [&](V v) {
      if (lo && v < *lo) v = *lo;  // NaN compares false and stays NaN
      if (hi && v > *hi) v = *hi;
      return v;
    });
  }, "Clip");
}

// BitCast: the input's bits seen as another type of the same size (a byte that is not 0 or 1 read as bool
// is true, the only bool it can be).
Tensor bitcast_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DType to = ops::bitcast_target(ctx.node, x.dtype(), ctx.fail_fn());
  Tensor y(to, x.shape());
  if (to == DType::Bool) {
    const uint8_t* in = static_cast<const uint8_t*>(x.raw());
    bool* out = y.data<bool>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) out[i] = in[i] != 0;
  } else if (x.nbytes()) {
    std::memcpy(y.raw(), x.raw(), x.nbytes());
  }
  return y;
}

}  // namespace

void register_cast(KernelRegistry& r) {
  r.add("Cast", [](KernelContext& ctx) -> std::vector<Tensor> { return {cast_tensor(ctx, ctx.input(0), cast_target(ctx))}; });
  r.add("CastLike", [](KernelContext& ctx) -> std::vector<Tensor> {
    return {cast_tensor(ctx, ctx.input(0), ctx.input(1).dtype())};
  });
  r.add("Clip", [](KernelContext& ctx) -> std::vector<Tensor> { return {clip_kernel(ctx)}; });
  r.add("BitCast", [](KernelContext& ctx) -> std::vector<Tensor> { return {bitcast_kernel(ctx)}; });
}

}  // namespace onnxgpu::cpu
