// How each element type lives on the GPU, and the WGSL arithmetic for it. INT64 is decided here and
// in Int64Policy, nowhere else: kernels are written once against the "family" helpers below
// (add_<fam>, lt_<fam>, to_i64_<fam> ...) and work for every dtype, INT64 included.
#pragma once
#include <cstdint>
#include <string>

#include "onnxgpu/dtype.h"
#include "onnxgpu/int64_policy.h"

namespace onnxgpu::webgpu::shader {

// A helper family: the WGSL value type that kernels compute with, and the helper-name suffix.
//   f32  : f32           (float32; float16, bfloat16, float8 and float4 are loaded into f32 and stored
//                         back; float64's values would be rounded to f32, so a kernel may only move them:
//                         see `exact`)
//   i32  : i32           (int8, int16, int32, int4, int2)
//   u32  : u32           (uint8, uint16, uint32, uint4, uint2)
//   bool : u32 0/1       (bool)
//   i64  : vec2<u32>     (int64 as (lo, hi) words: exact two's complement arithmetic)
//   u64  : vec2<u32>     (uint64 likewise)
//   i64n : i32           (int64 narrowed to one i32 by the cast_to_i32 strategy; overflow is flagged)
struct TypeInfo {
  DType dtype = DType::Undefined;
  std::string family;   // helper suffix, see above
  std::string value;    // WGSL value type
  int storage_bits = 32;  // bits per element in the buffer: 8, 16, 32 or 64
  uint32_t value_bytes = 4;  // bytes of one value of `value` (in workgroup memory, registers): 8 for vec2<u32>
  bool narrowed = false;  // int64 stored as i32 (cast_to_i32)
  // false: the value type cannot hold every value of the dtype (float64 in f32). Such a tensor's
  // elements may be moved whole (raw word copies) but not loaded or stored as values: a kernel that
  // does is refused (Program::refused_value_use) and its node runs on the CPU.
  bool exact = true;
  // A narrow type (dtype.h; one byte an element, shader/narrow.h): only kernels that admit them
  // (Program::admit_narrow) may load or store its values; others move the bytes or are refused.
  bool narrow = false;
};

TypeInfo type_info(DType dtype, const Int64Policy& policy);

// Bytes per element in a GPU buffer (differs from dtype_size only for narrowed int64).
size_t gpu_element_size(DType dtype, const Int64Policy& policy);
// The bits an element takes in a GPU buffer (type_info's). Throws NotImplemented for types that cannot be
// stored (string).
uint32_t storage_bits(DType dtype, const Int64Policy& policy);

// Bytes of one w64 value, the int64 every family converts to and from (to_i64_<fam>, from_i64_<fam>):
// for workgroup memory that holds such values.
inline constexpr uint32_t kW64ValueBytes = 8;

// The WGSL helpers of one family (add_<fam>, ..., ipow_<fam>, shl_<fam> and shr_<fam> for the integer families, plus the
// conversions to/from i64 and f32), and the shared helpers they depend on. `status` helpers (flag())
// are always available in a program. The shared w64 helpers give kernels 64-bit integers without their
// representation: w64_from_u32 / w64_from_i32, w64_add, w64_sub, w64_mul, w64_eq, w64_slt, w64_ult,
// w64_is_neg, w64_is_zero, w64_udivmod, and the index helpers w64_in_range(k, n), w64_fits_i32(k),
// w64_as_u32(k), w64_as_i32(k) and w64_wrap_index(k, n) (INDEX_NONE when out of range).
std::string family_helpers(const std::string& family);

// WGSL sin_f32, cos_f32 and tan_f32 with the C library's results for any argument (not in every
// program: a kernel that calls them declares these).
const char* trig_helpers();

// The WGSL expression that converts `v`, a value of type `from`, to a value of type `to` (exact
// between integer types, int64 included; through f32 to and from floats).
std::string convert_value(const std::string& v, const TypeInfo& from, const TypeInfo& to);

}  // namespace onnxgpu::webgpu::shader
