#include "onnxgpu/dtype.h"

#include <cmath>
#include <string>

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
    default: return 0;
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

void throw_unsupported_dtype(DType t, std::string_view where) {
  std::string msg = "unsupported element type " + std::string(dtype_name(t));
  if (!where.empty()) msg += " for " + std::string(where);
  throw NotImplemented(msg);
}

}  // namespace onnxgpu
