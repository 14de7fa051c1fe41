// Cast and CastLike: the rules the CPU reference (src/cpu/cast.cpp) and the GPU kernel
// (src/webgpu/kernels/elementwise.cpp) share: the target type (attribute `to`), and for the narrow types'
// targets attribute `saturate` (opset 19: float8 values past the largest finite one become it, else
// infinity or NaN) and `round_mode` (Cast-24, float8e8m0 targets: "up", the default, "down" or "nearest").
//
// A float into an integer type, which ONNX leaves to the implementation where the target cannot hold it,
// is one rule on both providers (the CPU's float_to_int, the shader layer's cast_f32_*): toward zero, NaN
// gives 0; within int64, the int64's low bits (numpy's and torch's wrap: 300.7 -> 44 in uint8, -9 -> 7 in
// uint4); beyond it, int64 and uint64 saturate (uint64 exact up to 2^64), a narrower type takes its
// largest value above and 0 below.
#pragma once
#include <cctype>
#include <string>
#include <utility>

#include "core/narrow_float.h"
#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

// Cast's attribute `to`: an ONNX TensorProto.DataType number, or (Cast-1) its name such as "FLOAT". A number
// the engine has no type for comes back as it is (cast_target_unsupported says so).
inline DType cast_target(const ir::Node& n, const Fail& fail) {
  const ir::Attribute* a = n.attr("to");
  if (!a) raise(fail, "attribute 'to' is required");
  if (a->kind == ir::Attribute::Kind::String) {
    std::string name;
    for (char c : a->s) name += char(std::toupper(static_cast<unsigned char>(c)));
    static const std::pair<const char*, DType> kNames[] = {
        {"FLOAT", DType::Float32},   {"DOUBLE", DType::Float64}, {"FLOAT16", DType::Float16},
        {"BFLOAT16", DType::BFloat16}, {"INT8", DType::Int8},      {"UINT8", DType::UInt8},
        {"INT16", DType::Int16},     {"UINT16", DType::UInt16},  {"INT32", DType::Int32},
        {"UINT32", DType::UInt32},   {"INT64", DType::Int64},    {"UINT64", DType::UInt64},
        {"BOOL", DType::Bool},       {"STRING", DType::String}};
    for (const auto& [known, t] : kNames)
      if (name == known) return t;
    raise(fail, "attribute 'to' names an unknown type \"" + a->s + "\"");
  }
  return DType(int32_t(n.attr_int("to", 0)));
}

// Why a cast to `t` is out of the engine's scope (a type number it does not know), or "".
inline std::string cast_target_unsupported(DType t) {
  if (t == DType::String || kAllTypes.has(t) || dtype_is_narrow(t)) return "";
  return "cast to ONNX data type " + std::to_string(int(t)) + " is not supported";
}

inline NarrowConversion cast_conversion(const ir::Node& n, const Fail& fail) {
  NarrowConversion c;
  c.saturate = n.attr_int("saturate", 1) != 0;
  if (const ir::Attribute* a = n.attr("round_mode"); a && a->s != "up") {
    if (a->s == "down") c.rounding = E8M0Rounding::Down;
    else if (a->s == "nearest") c.rounding = E8M0Rounding::Nearest;
    else raise(fail, "attribute 'round_mode' is \"" + a->s + "\", expected \"up\", \"down\" or \"nearest\"");
  }
  return c;
}

}  // namespace onnxgpu::ops
