// The layouts of the small float formats (float8 e4m3fn, e4m3fnuz, e5m2, e5m2fnuz and float4e2m1): the
// CPU's conversions (core/dtype.cpp: narrow_to_double, narrow_from_double) and the GPU's
// (webgpu/shader/narrow.cpp) are both written from this one table. float8e8m0, a bare exponent, has
// rules of its own (e8m0_from_double).
#pragma once
#include <cstdint>

#include "onnxgpu/dtype.h"

namespace onnxgpu {

// How a small float format spells its special values.
enum class NarrowSpecials {
  Ieee,        // E5M2: an all-ones exponent is infinity (zero mantissa) or NaN; -0 exists
  AllOnesNaN,  // E4M3FN: no infinity; S.1111.111 is NaN
  NegZeroNaN,  // FNUZ: no infinity and no -0; 0x80 is the one NaN
  None,        // float4e2m1: no infinity, no NaN (ONNX writes NaN as -0)
};

// Exponent and mantissa bits, bias, the largest finite value and that value's pattern.
struct NarrowFloatFormat {
  int exp_bits, man_bits, bias;
  double max;
  uint8_t max_code;
  NarrowSpecials specials;
  int bits() const { return 1 + exp_bits + man_bits; }
  uint8_t sign_bit() const { return uint8_t(1u << (bits() - 1)); }
  int min_exponent() const { return 1 - bias; }  // of the normal numbers; subnormals share its quantum
  // The pattern of NaN for a value of this sign bit (`sign`: 0 or sign_bit()), and of a value past `max`
  // when it does not saturate (infinity where the format has one, else NaN).
  uint8_t nan_code(uint8_t sign) const {
    return specials == NarrowSpecials::NegZeroNaN ? 0x80 : specials == NarrowSpecials::None ? sign_bit() : uint8_t(sign | 0x7f);
  }
  uint8_t overflow_code(uint8_t sign, bool saturate) const {
    if (saturate || specials == NarrowSpecials::None) return uint8_t(sign | max_code);
    if (specials == NarrowSpecials::Ieee) return uint8_t(sign | (((1u << exp_bits) - 1u) << man_bits));
    return nan_code(sign);
  }
};

// How a value becomes a small float (Cast's and QuantizeLinear's attributes `saturate` and `round_mode`):
// past the largest finite value it saturates, or else becomes infinity or NaN; float8e8m0 rounds its
// power of two up, down or to the nearest. The defaults are ONNX's.
struct NarrowConversion {
  bool saturate = true;
  E8M0Rounding rounding = E8M0Rounding::Up;
  bool operator==(const NarrowConversion&) const = default;
};

// The format of a float8 (not e8m0) or float4 type; throws for any other type.
NarrowFloatFormat narrow_float_format(DType t);

}  // namespace onnxgpu
