#include "webgpu/shader/narrow.h"

#include <cstring>
#include <optional>

#include "core/narrow_float.h"
#include "onnxgpu/error.h"

namespace onnxgpu::webgpu::shader {

namespace {

std::string u(uint32_t v) { return std::to_string(v) + "u"; }
std::string i(int v) { return std::to_string(v) + "i"; }

// An f32 WGSL literal of a value every f32 holds exactly (the formats' largest values), by its bits.
std::string f32_bits_literal(double v) {
  const float f = float(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return "bitcast<f32>(" + u(b) + ")";
}

std::string prefix(DType t) { return std::string(dtype_name(t)); }

// A float8 / float4 format's two conversions, written from its layout (core/narrow_float.h) as
// narrow_from_double and narrow_to_double are, in f32 (every value of these formats is one).
std::string small_float_helpers(DType t) {
  const NarrowFloatFormat f = narrow_float_format(t);
  const std::string p = prefix(t);
  const uint32_t sign = f.sign_bit(), e_max = (1u << f.exp_bits) - 1u, one = 1u << f.man_bits;
  const std::string nan = f.specials == NarrowSpecials::NegZeroNaN ? u(0x80)
                          : f.specials == NarrowSpecials::None     ? u(sign)
                                                                   : "(sign | 0x7fu)";
  std::string over = "(sign | " + u(f.max_code) + ")";  // saturated
  if (f.specials != NarrowSpecials::None) {
    const std::string beyond = f.specials == NarrowSpecials::Ieee ? "(sign | " + u(e_max << f.man_bits) + ")" : nan;
    over = "select(" + beyond + ", " + over + ", saturate)";
  }
  // 2^k as f32 for k in [-126, 127], from its bits (exp2 is not exact on every GPU).
  std::string s = "fn " + p + "_pow2(k: i32) -> f32 { return bitcast<f32>(u32(k + 127i) << 23u); }\n";
  s += "fn " + p + "_value(c_in: u32) -> f32 {\n"
                  "  let c = c_in & " + u((1u << f.bits()) - 1u) + ";\n"
                  "  let neg = (c & " + u(sign) + ") != 0u;\n"
                  "  let e = (c >> " + u(f.man_bits) + ") & " + u(e_max) + ";\n"
                  "  let m = c & " + u(one - 1u) + ";\n";
  if (f.specials == NarrowSpecials::NegZeroNaN) s += "  if (c == 0x80u) { return f32_nan(); }\n";
  if (f.specials == NarrowSpecials::AllOnesNaN) s += "  if ((c & 0x7fu) == 0x7fu) { return f32_nan(); }\n";
  if (f.specials == NarrowSpecials::Ieee)
    s += "  if (e == " + u(e_max) + ") { if (m != 0u) { return f32_nan(); } return select(f32_inf(), -f32_inf(), neg); }\n";
  // Subnormals: m quanta of 2^(1 - bias - man_bits); normals: the f32 of the same exponent and mantissa.
  s += "  var mag = f32(m) * " + p + "_pow2(" + i(f.min_exponent() - f.man_bits) + ");\n"
       "  if (e != 0u) { mag = bitcast<f32>(((e + " + u(uint32_t(127 - f.bias)) + ") << 23u) | (m << " +
       u(uint32_t(23 - f.man_bits)) + ")); }\n"
       "  return select(mag, -mag, neg);\n}\n";
  // |v| on the format's grid, to nearest even: q quanta of 2^(e - man_bits), e the exponent of |v| but at
  // least the smallest normal one (whose quantum the subnormals share). A product by a power of two and
  // WGSL's round (half to even) are exact.
  s += "fn " + p + "_byte(v: f32, saturate: bool) -> u32 {\n"
       "  let b = bitcast<u32>(v);\n"
       "  let sign = select(0u, " + u(sign) + ", (b >> 31u) == 1u);\n"
       "  let a = b & 0x7fffffffu;\n"
       "  if (a > 0x7f800000u) { return " + nan + "; }\n"
       "  if (a == 0x7f800000u) { return " + over + "; }\n"
       "  let e = max(i32(a >> 23u) - 127i, " + i(f.min_exponent()) + ");\n"
       "  let q = u32(round(bitcast<f32>(a) * " + p + "_pow2(" + i(f.man_bits) + " - e)));\n"
       "  if (q == 0u) { return " + (f.specials == NarrowSpecials::NegZeroNaN ? std::string("0u") : "sign") + "; }\n"
       "  if (f32(q) * " + p + "_pow2(e - " + i(f.man_bits) + ") > " + f32_bits_literal(f.max) + ") { return " + over + "; }\n"
       "  if (q >= " + u(2 * one) + ") { return sign | (u32(e + " + i(1 + f.bias) + ") << " + u(f.man_bits) + "); }\n"
       "  if (q < " + u(one) + ") { return sign | q; }\n"
       "  return sign | (u32(e + " + i(f.bias) + ") << " + u(f.man_bits) + ") | (q - " + u(one) + ");\n}\n";
  return s;
}

// float8e8m0: 2^(c - 127), 255 NaN. To it (e8m0_from_double): the power of two of |v| rounded up, down
// or to the nearest (ties up), 0 below 2^-127, past 2^127 saturated or NaN.
const char* kE8M0 = R"(
fn float8e8m0_value(c_in: u32) -> f32 {
  let c = c_in & 0xffu;
  if (c == 0xffu) { return f32_nan(); }
  if (c == 0u) { return bitcast<f32>(0x00400000u); }  // 2^-127: a subnormal f32
  return bitcast<f32>(c << 23u);
}
fn float8e8m0_byte(v: f32, saturate: bool, rounding: u32) -> u32 {
  let a = bitcast<u32>(v) & 0x7fffffffu;
  if (a > 0x7f800000u) { return 0xffu; }
  if (a == 0x7f800000u) { return select(0xffu, 0xfeu, saturate); }
  if (a == 0u) { return 0u; }
  // |v| = 2^e (1 + rest): the leading one's bit in the significand, subnormal f32s included.
  var e = i32(a >> 23u) - 127i;
  var lead = 23u;
  if ((a >> 23u) == 0u) { lead = firstLeadingBit(a); e = i32(lead) - 149i; }
  let rest = a & ((1u << lead) - 1u);
  let half = lead > 0u && ((rest >> (lead - 1u)) & 1u) == 1u;
  if ((rounding == 0u && rest != 0u) || (rounding == 2u && half)) { e = e + 1i; }
  let code = e + 127i;
  if (code < 0i) { return 0u; }
  if (code > 254i) { return select(0xffu, 0xfeu, saturate); }
  return u32(code);
}
)";

uint32_t rounding_code(E8M0Rounding r) { return r == E8M0Rounding::Up ? 0u : r == E8M0Rounding::Down ? 1u : 2u; }

// int4, int2, uint4, uint2: the integer's bits and whether it is signed (the value sign-extends from them).
struct NarrowInt {
  uint32_t bits;
  bool is_signed;
};
std::optional<NarrowInt> narrow_int(DType t) {
  switch (t) {
    case DType::Int4: return NarrowInt{4, true};
    case DType::Int2: return NarrowInt{2, true};
    case DType::UInt4: return NarrowInt{4, false};
    case DType::UInt2: return NarrowInt{2, false};
    default: return std::nullopt;
  }
}

}  // namespace

std::string narrow_value(DType dtype, const std::string& bits) {
  if (auto n = narrow_int(dtype)) {
    const std::string shift = u(32 - n->bits);
    return n->is_signed ? "(bitcast<i32>(" + bits + " << " + shift + ") >> " + shift + ")"
                        : "(" + bits + " & " + u((1u << n->bits) - 1u) + ")";
  }
  if (!dtype_is_narrow_float(dtype)) throw Error("narrow_value: " + prefix(dtype) + " is not a narrow type");
  return prefix(dtype) + "_value(" + bits + ")";
}

std::string narrow_byte(DType dtype, const std::string& v, const NarrowStore& mode) {
  if (auto n = narrow_int(dtype)) {  // the low bits; a signed value sign-extended through the byte
    const std::string shift = u(32 - n->bits);
    return n->is_signed ? "(bitcast<u32>((" + v + " << " + shift + ") >> " + shift + ") & 0xffu)"
                        : "(" + v + " & " + u((1u << n->bits) - 1u) + ")";
  }
  if (!dtype_is_narrow_float(dtype)) throw Error("narrow_byte: " + prefix(dtype) + " is not a narrow type");
  const std::string sat = mode.saturate ? "true" : "false";
  if (dtype == DType::Float8E8M0) return "float8e8m0_byte(" + v + ", " + sat + ", " + u(rounding_code(mode.rounding)) + ")";
  return prefix(dtype) + "_byte(" + v + ", " + sat + ")";
}

std::string narrow_helpers(DType dtype) {
  if (!dtype_is_narrow_float(dtype)) return "";
  if (dtype == DType::Float8E8M0) return kE8M0;
  return small_float_helpers(dtype);
}

}  // namespace onnxgpu::webgpu::shader
