#include "onnxgpu/dtype.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "core/narrow_float.h"
#include "onnxgpu/error.h"

namespace onnxgpu {

uint16_t Float16::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x007fffffu;
  int32_t exp = int32_t((x >> 23) & 0xffu);
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));  // inf / nan
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return uint16_t(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {                                    // subnormal or zero
    if (e < -10) return uint16_t(sign);
    mant |= 0x00800000u;
    uint32_t shift = uint32_t(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // round to nearest even (may carry into exp)
  return uint16_t(half);
}

float Float16::to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t BFloat16::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return uint16_t((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return uint16_t((x + rounding) >> 16);
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: case DType::Int32: case DType::UInt32: return 4;
    case DType::Float64: case DType::Int64: case DType::UInt64: return 8;
    case DType::Float16: case DType::BFloat16: case DType::Int16: case DType::UInt16: return 2;
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
    default: return dtype_is_narrow(t) ? 1 : 0;
  }
}

namespace {
struct Names {
  DType t;
  const char* name;
  const char* onnx;
};
constexpr Names kNames[] = {
    {DType::Float32, "float32", "tensor(float)"},   {DType::Float64, "float64", "tensor(double)"},
    {DType::Float16, "float16", "tensor(float16)"}, {DType::BFloat16, "bfloat16", "tensor(bfloat16)"},
    {DType::Int8, "int8", "tensor(int8)"},          {DType::UInt8, "uint8", "tensor(uint8)"},
    {DType::Int16, "int16", "tensor(int16)"},       {DType::UInt16, "uint16", "tensor(uint16)"},
    {DType::Int32, "int32", "tensor(int32)"},       {DType::UInt32, "uint32", "tensor(uint32)"},
    {DType::Int64, "int64", "tensor(int64)"},       {DType::UInt64, "uint64", "tensor(uint64)"},
    {DType::Bool, "bool", "tensor(bool)"},          {DType::String, "string", "tensor(string)"},
    {DType::Float8E4M3FN, "float8e4m3fn", "tensor(float8e4m3fn)"},
    {DType::Float8E4M3FNUZ, "float8e4m3fnuz", "tensor(float8e4m3fnuz)"},
    {DType::Float8E5M2, "float8e5m2", "tensor(float8e5m2)"},
    {DType::Float8E5M2FNUZ, "float8e5m2fnuz", "tensor(float8e5m2fnuz)"},
    {DType::Float4E2M1, "float4e2m1", "tensor(float4e2m1)"},
    {DType::Float8E8M0, "float8e8m0", "tensor(float8e8m0)"},
    {DType::UInt4, "uint4", "tensor(uint4)"},        {DType::Int4, "int4", "tensor(int4)"},
    {DType::UInt2, "uint2", "tensor(uint2)"},        {DType::Int2, "int2", "tensor(int2)"},
};
}  // namespace

std::string_view dtype_name(DType t) {
  for (const auto& n : kNames)
    if (n.t == t) return n.name;
  return "undefined";
}

std::string_view dtype_onnx_name(DType t) {
  for (const auto& n : kNames)
    if (n.t == t) return n.onnx;
  return "tensor(undefined)";
}

DType dtype_from_name(std::string_view name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.t;
  return DType::Undefined;
}

bool dtype_is_float(DType t) { return kFloatTypes.has(t); }
bool dtype_is_integer(DType t) { return kIntTypes.has(t); }
bool dtype_is_signed(DType t) { return kFloatTypes.has(t) || kSignedIntTypes.has(t); }

namespace {
bool is_narrow_int(DType t) { return t == DType::Int4 || t == DType::UInt4 || t == DType::Int2 || t == DType::UInt2; }
}  // namespace

bool dtype_is_narrow(DType t) { return dtype_is_narrow_float(t) || is_narrow_int(t); }

bool dtype_is_narrow_float(DType t) {
  return t == DType::Float8E4M3FN || t == DType::Float8E4M3FNUZ || t == DType::Float8E5M2 ||
         t == DType::Float8E5M2FNUZ || t == DType::Float4E2M1 || t == DType::Float8E8M0;
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::UInt4: case DType::Int4: case DType::Float4E2M1: return 4;
    case DType::UInt2: case DType::Int2: return 2;
    default: return int(8 * dtype_size(t));
  }
}

namespace {

// An int4 / int2 / uint4 / uint2 value from the low bits of `code`: sign-extended for the signed types.
int64_t narrow_int(DType t, uint64_t code) {
  switch (t) {
    case DType::Int4: return int8_t(uint8_t(code << 4)) >> 4;
    case DType::Int2: return int8_t(uint8_t(code << 6)) >> 6;
    case DType::UInt4: return int64_t(code & 0xfu);
    default: return int64_t(code & 0x3u);  // UInt2
  }
}

}  // namespace

NarrowFloatFormat narrow_float_format(DType t) {
  using S = NarrowSpecials;
  switch (t) {
    case DType::Float8E4M3FN: return {4, 3, 7, 448.0, 0x7e, S::AllOnesNaN};
    case DType::Float8E4M3FNUZ: return {4, 3, 8, 240.0, 0x7f, S::NegZeroNaN};
    case DType::Float8E5M2: return {5, 2, 15, 57344.0, 0x7b, S::Ieee};
    case DType::Float8E5M2FNUZ: return {5, 2, 16, 57344.0, 0x7f, S::NegZeroNaN};
    case DType::Float4E2M1: return {2, 1, 1, 6.0, 0x7, S::None};
    default: throw_unsupported_dtype(t, "a small float format");
  }
}

double narrow_to_double(DType t, uint8_t code) {
  if (is_narrow_int(t)) return double(narrow_int(t, code));
  if (t == DType::Float8E8M0) return code == 0xff ? std::nan("") : std::ldexp(1.0, int(code) - 127);
  const NarrowFloatFormat f = narrow_float_format(t);
  code &= uint8_t((1u << f.bits()) - 1u);
  const uint32_t e_max = (1u << f.exp_bits) - 1u;
  const uint32_t e = (code >> f.man_bits) & e_max, m = code & ((1u << f.man_bits) - 1u);
  const bool negative = (code & f.sign_bit()) != 0;
  const double nan = std::nan("");
  if (f.specials == NarrowSpecials::NegZeroNaN && code == 0x80) return nan;
  if (f.specials == NarrowSpecials::AllOnesNaN && (code & 0x7fu) == 0x7fu) return nan;
  if (f.specials == NarrowSpecials::Ieee && e == e_max) return m != 0 ? nan : negative ? -INFINITY : INFINITY;
  const double mag = e == 0 ? std::ldexp(double(m), 1 - f.bias - f.man_bits)
                            : std::ldexp(double(m + (1u << f.man_bits)), int(e) - f.bias - f.man_bits);
  return negative ? -mag : mag;
}

uint8_t narrow_from_double(DType t, double v, bool saturate) {
  if (is_narrow_int(t)) {
    // As a cast to a wider integer, then the low bits (NaN and out-of-range values as that cast gives them).
    const int64_t i = std::isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : int64_t(v);
    return uint8_t(narrow_int(t, uint64_t(i)));
  }
  if (t == DType::Float8E8M0) return e8m0_from_double(v, saturate, E8M0Rounding::Up);
  const NarrowFloatFormat f = narrow_float_format(t);
  const uint8_t sign = std::signbit(v) ? f.sign_bit() : 0;
  if (std::isnan(v)) return f.nan_code(sign);
  const double a = std::fabs(v);
  if (std::isinf(a)) return f.overflow_code(sign, saturate);
  // Round to nearest even on the format's grid: a quantum of 2^(e - man_bits) at exponent e, the smallest
  // normal exponent's below it (subnormals).
  const int emin = f.min_exponent();
  int e = a == 0 ? emin : std::ilogb(a);
  if (e < emin) e = emin;
  const double quantum = std::ldexp(1.0, e - f.man_bits);
  const double r = std::nearbyint(a / quantum) * quantum;  // the default rounding mode: to nearest even
  if (r > f.max) return f.overflow_code(sign, saturate);
  if (r == 0) return f.specials == NarrowSpecials::NegZeroNaN ? 0 : sign;
  const int re = std::ilogb(r);
  uint32_t code;
  if (re < emin) {
    code = uint32_t(r / std::ldexp(1.0, emin - f.man_bits));
  } else {
    const uint32_t m = uint32_t(r / std::ldexp(1.0, re - f.man_bits)) - (1u << f.man_bits);
    code = (uint32_t(re + f.bias) << f.man_bits) | m;
  }
  return uint8_t(sign | code);
}

uint8_t e8m0_from_double(double v, bool saturate, E8M0Rounding mode) {
  // The power of two of |v| as float32 (as ONNX's reference, which reads float32's exponent), moved by the
  // rest: 2^e <= |v| < 2^(e + 1).
  const double a = std::fabs(double(float(v)));
  if (std::isnan(a)) return 0xff;
  if (std::isinf(a)) return saturate ? 0xfe : 0xff;
  if (a == 0) return 0;  // no zero: the smallest, 2^-127
  int e = std::ilogb(a);
  const double p = std::ldexp(1.0, e);
  if ((mode == E8M0Rounding::Up && a > p) || (mode == E8M0Rounding::Nearest && a >= 1.5 * p)) ++e;
  const int code = e + 127;
  if (code < 0) return 0;
  if (code > 254) return saturate ? 0xfe : 0xff;
  return uint8_t(code);
}

void throw_unsupported_dtype(DType t, std::string_view where) {
  std::string msg = "unsupported element type " + std::string(dtype_name(t));
  if (!where.empty()) msg += " for " + std::string(where);
  throw NotImplemented(msg);
}

}  // namespace onnxgpu
