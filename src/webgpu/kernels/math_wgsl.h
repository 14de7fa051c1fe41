// WGSL math beyond the shader layer's that several kernel families declare (the elementwise ops' Erf
// and Gelu, the com.microsoft BiasGelu; the quantizers' correctly rounded division).
#pragma once

namespace onnxgpu::webgpu {

// erf with |error| < 1.5e-7 (Abramowitz and Stegun 7.1.26); NaN in, NaN out.
inline constexpr const char* kErfWgsl = R"(
fn erf_f32(x: f32) -> f32 {
  if (isnan_f32(x)) { return x; }
  let t = 1.0 / (1.0 + 0.3275911 * abs(x));
  let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp_f32(-x * x);
  return select(-y, y, x >= 0.0);
}
)";

// a / b rounded to the nearest float32 (ties to even) wherever the quotient is a normal float32, the
// operands' bits read as integers (subnormal operands included, which a GPU may flush in arithmetic):
// the significands are divided bit by bit, 25 quotient bits, the last the guard, the remainder the
// sticky bit. Elsewhere (zero, inf or NaN operands, quotients beyond the normal range) WGSL's a / b, whose
// error there changes no quantized value: such quotients are 0, NaN or round to 0 or saturate.
inline constexpr const char* kDivRn = R"(
fn div_rn(a: f32, b: f32) -> f32 {
  let ua = bitcast<u32>(a);
  let ub = bitcast<u32>(b);
  var ea = i32((ua >> 23u) & 0xffu);
  var eb = i32((ub >> 23u) & 0xffu);
  var ma = ua & 0x7fffffu;
  var mb = ub & 0x7fffffu;
  if ((ua & 0x7fffffffu) == 0u || (ub & 0x7fffffffu) == 0u || ea == 255i || eb == 255i) { return a / b; }
  if (ea == 0i) { let s = countLeadingZeros(ma) - 8u; ma = ma << s; ea = 1i - i32(s); } else { ma = ma | 0x800000u; }
  if (eb == 0i) { let s = countLeadingZeros(mb) - 8u; mb = mb << s; eb = 1i - i32(s); } else { mb = mb | 0x800000u; }
  var e = ea - eb;
  var r = ma;
  if (r < mb) { r = r << 1u; e = e - 1i; }
  if (e < -126i || e > 127i) { return a / b; }
  var qm = 0u;
  for (var i = 0u; i < 25u; i = i + 1u) {
    qm = qm << 1u;
    if (r >= mb) { r = r - mb; qm = qm | 1u; }
    r = r << 1u;
  }
  var mant = qm >> 1u;
  if ((qm & 1u) == 1u && (r != 0u || (mant & 1u) == 1u)) { mant = mant + 1u; }
  let bits = (u32(e + 127i) << 23u) + (mant - 0x800000u);
  return bitcast<f32>(((ua ^ ub) & 0x80000000u) | bits);
}
)";

}  // namespace onnxgpu::webgpu
