// The narrow types (dtype.h: float8, float4, int4, uint4, int2, uint2) on the GPU. A buffer holds one byte
// an element, as host memory does (program.cpp's sub-word accessors); kernels compute with the family's
// value type (types.h: f32 for the small floats, i32 / u32 for the integers), and these conversions between
// that value and the stored byte are what x_load and x_store apply. Only kernels that say they compute on
// narrow values (Program::admit_narrow: Cast, CastLike, QuantizeLinear, DequantizeLinear) may load or
// store them; every other kernel moves them as raw bytes or is refused, as the ONNX schemas admit them
// only there.
#pragma once
#include <string>

#include "core/narrow_float.h"
#include "onnxgpu/dtype.h"

namespace onnxgpu::webgpu::shader {

// How an f32 value becomes a small float's byte: rounded to nearest even, then as `mode` says.
using NarrowStore = NarrowConversion;

// WGSL: the value of narrow type `dtype` whose stored byte is the u32 expression `bits`.
std::string narrow_value(DType dtype, const std::string& bits);
// WGSL: the stored byte (a u32 in [0, 255]) of the value expression `v`; integers keep their low bits.
std::string narrow_byte(DType dtype, const std::string& v, const NarrowStore& mode);
// The WGSL functions those expressions call for `dtype` (empty for the integer types).
std::string narrow_helpers(DType dtype);

}  // namespace onnxgpu::webgpu::shader
