// Element types. Values match ONNX TensorProto.DataType so a model's numbers map directly.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <initializer_list>
#include <type_traits>

namespace onnxgpu {

enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
  // Narrow types, one byte per element in memory (packed two or four to a byte only in ONNX files):
  // float8 and float4 as their bit pattern, int4 / int2 as the sign-extended value, uint4 / uint2 as the
  // value. Cast, CastLike, QuantizeLinear and DequantizeLinear compute on them (the CPU reference through
  // narrow_to_double / narrow_from_double, the GPU through the shader layer: webgpu/shader/narrow.h); other
  // kernels move their bytes or refuse them.
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,  // a power of two: 2^(e - 127), 255 NaN (no sign, no zero)
  UInt2 = 25,
  Int2 = 26,
};

// IEEE half precision, stored as its bits. Arithmetic goes through float (exact for a reference).
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  Float16(float f) : bits(from_float(f)) {}  // NOLINT: implicit, so templated kernels work
  operator float() const { return to_float(bits); }  // NOLINT
  static uint16_t from_float(float f);
  static float to_float(uint16_t h);
};

// bfloat16, stored as its bits (the top half of a float32, rounded to nearest even).
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return to_float(bits); }  // NOLINT
  static uint16_t from_float(float f);
  static float to_float(uint16_t h) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

size_t dtype_size(DType t);            // bytes per element (0 for String/Undefined)
std::string_view dtype_name(DType t);  // "float32", "int64", ... (numpy-style names)
std::string_view dtype_onnx_name(DType t);  // "tensor(float)", "tensor(int64)" as ONNX Runtime writes them
DType dtype_from_name(std::string_view name);  // inverse of dtype_name; Undefined when unknown
bool dtype_is_float(DType t);    // Float16, BFloat16, Float32, Float64
bool dtype_is_integer(DType t);  // signed or unsigned integers (not Bool)
bool dtype_is_signed(DType t);   // signed integers and floats
bool dtype_is_narrow(DType t);   // the float8, float4, int4, uint4, int2 and uint2 types (one byte each in memory)
bool dtype_is_narrow_float(DType t);  // float8 and float4
int dtype_bits(DType t);         // bits per element in an ONNX file: 4 or 2 for the packed types, else 8 * size
// A narrow type's stored byte as a number (NaN, infinities and -0 as the type has them).
double narrow_to_double(DType t, uint8_t code);
// A number as a narrow type's byte: integers wrap (the low bits, as Cast does), floats round to nearest even;
// past the largest finite value a float saturates to it (`saturate`, Cast's default and float4's only
// way) or becomes the type's infinity, else its NaN.
uint8_t narrow_from_double(DType t, double v, bool saturate = true);
// float8e8m0's rounding (Cast-24's round_mode): the power of two of |v| (as float32) rounded up, down, or to
// the nearest (ties up); past 2^127 it saturates to it, else NaN. narrow_from_double rounds it up.
enum class E8M0Rounding { Up, Down, Nearest };
uint8_t e8m0_from_double(double v, bool saturate, E8M0Rounding mode);

// C++ type of each DType.
template <DType D> struct dtype_cpp;
template <> struct dtype_cpp<DType::Float32> { using type = float; };
template <> struct dtype_cpp<DType::Float64> { using type = double; };
template <> struct dtype_cpp<DType::Float16> { using type = Float16; };
template <> struct dtype_cpp<DType::BFloat16> { using type = BFloat16; };
template <> struct dtype_cpp<DType::Int8> { using type = int8_t; };
template <> struct dtype_cpp<DType::UInt8> { using type = uint8_t; };
template <> struct dtype_cpp<DType::Int16> { using type = int16_t; };
template <> struct dtype_cpp<DType::UInt16> { using type = uint16_t; };
template <> struct dtype_cpp<DType::Int32> { using type = int32_t; };
template <> struct dtype_cpp<DType::UInt32> { using type = uint32_t; };
template <> struct dtype_cpp<DType::Int64> { using type = int64_t; };
template <> struct dtype_cpp<DType::UInt64> { using type = uint64_t; };
template <> struct dtype_cpp<DType::Bool> { using type = bool; };

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<Float16>() { return DType::Float16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::BFloat16; }
template <> constexpr DType dtype_of<int8_t>() { return DType::Int8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::Int16; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::UInt16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::UInt32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::UInt64; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }

template <class T>
constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// Calls f.template operator()<T>() with the C++ type of `t`. Throws onnxgpu::Error for types
// outside `Allowed` (a DTypeSet). Example:
//   visit_dtype(t.dtype(), [&]<class T>() { sum<T>(t); });
struct DTypeSet {
  uint32_t bits = 0;
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<DType> ts) {
    for (DType t : ts) bits |= 1u << uint32_t(t);
  }
  constexpr bool has(DType t) const { return uint32_t(t) < 32 && ((bits >> uint32_t(t)) & 1u); }  // any value of t
  constexpr DTypeSet operator|(DTypeSet o) const {
    DTypeSet r;
    r.bits = bits | o.bits;
    return r;
  }
};
inline constexpr DTypeSet kFloatTypes{DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
inline constexpr DTypeSet kSignedIntTypes{DType::Int8, DType::Int16, DType::Int32, DType::Int64};
inline constexpr DTypeSet kUnsignedIntTypes{DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64};
inline constexpr DTypeSet kIntTypes = kSignedIntTypes | kUnsignedIntTypes;
inline constexpr DTypeSet kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr DTypeSet kAllTypes = kNumericTypes | DTypeSet{DType::Bool};

[[noreturn]] void throw_unsupported_dtype(DType t, std::string_view where);

template <class F>
decltype(auto) visit_dtype(DType t, F&& f, DTypeSet allowed = kAllTypes, std::string_view where = {}) {
  if (!allowed.has(t)) throw_unsupported_dtype(t, where);
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Float16: return f.template operator()<Float16>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Int8: return f.template operator()<int8_t>();
    case DType::UInt8: return f.template operator()<uint8_t>();
    case DType::Int16: return f.template operator()<int16_t>();
    case DType::UInt16: return f.template operator()<uint16_t>();
    case DType::Int32: return f.template operator()<int32_t>();
    case DType::UInt32: return f.template operator()<uint32_t>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::UInt64: return f.template operator()<uint64_t>();
    case DType::Bool: return f.template operator()<bool>();
    default: throw_unsupported_dtype(t, where);
  }
}

}  // namespace onnxgpu
