#include "webgpu/shader/types.h"

#include "onnxgpu/error.h"

namespace onnxgpu::webgpu::shader {

TypeInfo type_info(DType dtype, const Int64Policy& policy) {
  TypeInfo t;
  t.dtype = dtype;
  switch (dtype) {
    case DType::Float32: t.family = "f32"; t.value = "f32"; t.storage_bits = 32; break;
    case DType::Float16: case DType::BFloat16: t.family = "f32"; t.value = "f32"; t.storage_bits = 16; break;
    case DType::Float64: t.family = "f32"; t.value = "f32"; t.storage_bits = 64; t.exact = false; break;
    case DType::Int8: t.family = "i32"; t.value = "i32"; t.storage_bits = 8; break;
    case DType::Int16: t.family = "i32"; t.value = "i32"; t.storage_bits = 16; break;
    case DType::Int32: t.family = "i32"; t.value = "i32"; t.storage_bits = 32; break;
    case DType::UInt8: t.family = "u32"; t.value = "u32"; t.storage_bits = 8; break;
    case DType::UInt16: t.family = "u32"; t.value = "u32"; t.storage_bits = 16; break;
    case DType::UInt32: t.family = "u32"; t.value = "u32"; t.storage_bits = 32; break;
    case DType::Bool: t.family = "bool"; t.value = "u32"; t.storage_bits = 8; break;
    case DType::UInt64: t.family = "u64"; t.value = "vec2<u32>"; t.storage_bits = 64; break;
    case DType::Int64:
      if (policy.strategy == Int64Policy::Strategy::CastToI32) {
        t.family = "i64n"; t.value = "i32"; t.storage_bits = 32; t.narrowed = true;
      } else {
        t.family = "i64"; t.value = "vec2<u32>"; t.storage_bits = 64;
      }
      break;
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
    case DType::Float4E2M1: case DType::Float8E8M0:
      t.family = "f32"; t.value = "f32"; t.storage_bits = 8; t.narrow = true; break;
    case DType::Int4: case DType::Int2: t.family = "i32"; t.value = "i32"; t.storage_bits = 8; t.narrow = true; break;
    case DType::UInt4: case DType::UInt2: t.family = "u32"; t.value = "u32"; t.storage_bits = 8; t.narrow = true; break;
    default:
      throw NotImplemented("element type " + std::string(dtype_name(dtype)) + " has no GPU representation");
  }
  t.value_bytes = t.value == "vec2<u32>" ? 8 : 4;
  return t;
}

uint32_t storage_bits(DType dtype, const Int64Policy& policy) { return uint32_t(type_info(dtype, policy).storage_bits); }

size_t gpu_element_size(DType dtype, const Int64Policy& policy) { return size_t(storage_bits(dtype, policy) / 8); }

namespace {

// 64-bit words as vec2<u32>(lo, hi). Shared by i64 and u64.
const char* kWide = R"(
alias w64 = vec2<u32>;
fn w64_from_u32(v: u32) -> w64 { return w64(v, 0u); }
fn w64_from_i32(v: i32) -> w64 { return w64(bitcast<u32>(v), select(0u, 0xffffffffu, v < 0i)); }
// Ranges and indices: whether a (signed) lies in [0, n) or in the i32 range, and its value as u32 or
// i32 once it does (a value outside gives an unspecified number).
fn w64_in_range(a: w64, n: u32) -> bool { return a.y == 0u && a.x < n; }
fn w64_fits_i32(a: w64) -> bool { return a.y == select(0u, 0xffffffffu, (a.x >> 31u) == 1u); }
fn w64_as_u32(a: w64) -> u32 { return a.x; }
fn w64_as_i32(a: w64) -> i32 { return bitcast<i32>(a.x); }
fn w64_add(a: w64, b: w64) -> w64 { let lo = a.x + b.x; return w64(lo, a.y + b.y + select(0u, 1u, lo < a.x)); }
fn w64_sub(a: w64, b: w64) -> w64 { return w64(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x)); }
fn w64_neg(a: w64) -> w64 { return w64_sub(w64(0u, 0u), a); }
fn w64_mulwide(a: u32, b: u32) -> w64 {
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return w64((p00 & 0xffffu) | (mid << 16u), p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
fn w64_mul(a: w64, b: w64) -> w64 { let p = w64_mulwide(a.x, b.x); return w64(p.x, p.y + a.x * b.y + a.y * b.x); }
fn w64_eq(a: w64, b: w64) -> bool { return a.x == b.x && a.y == b.y; }
fn w64_ult(a: w64, b: w64) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }
fn w64_slt(a: w64, b: w64) -> bool {
  let ah = bitcast<i32>(a.y); let bh = bitcast<i32>(b.y);
  return ah < bh || (ah == bh && a.x < b.x);
}
fn w64_is_zero(a: w64) -> bool { return a.x == 0u && a.y == 0u; }
fn w64_is_neg(a: w64) -> bool { return (a.y >> 31u) == 1u; }
// An index k onto an axis of n elements, negative ones counting from the end (once): in [0, n), or
// INDEX_NONE for k outside [-n, n) (never a valid index: every axis has fewer than 2^32 elements).
const INDEX_NONE: u32 = 0xffffffffu;
fn w64_wrap_index(k: w64, n: u32) -> u32 {
  let v = select(k, w64_add(k, w64_from_u32(n)), w64_is_neg(k));
  return select(INDEX_NONE, w64_as_u32(v), w64_in_range(v, n));
}
struct W64DivMod { q: w64, r: w64 }
// Unsigned 64-bit division; the caller handles a zero divisor.
fn w64_udivmod(n: w64, d: w64) -> W64DivMod {
  if (n.y == 0u && d.y == 0u) { return W64DivMod(w64(n.x / d.x, 0u), w64(n.x % d.x, 0u)); }
  var q = w64(0u, 0u);
  var r = w64(0u, 0u);
  for (var i = 63i; i >= 0i; i = i - 1i) {
    let top = r.y >> 31u;
    r = w64(r.x << 1u, (r.y << 1u) | (r.x >> 31u));
    let bit = select(n.x >> u32(i), n.y >> u32(i - 32i), i >= 32i) & 1u;
    r.x = r.x | bit;
    if (top == 1u || !w64_ult(r, d)) {
      r = w64_sub(r, d);
      if (i >= 32i) { q.y = q.y | (1u << u32(i - 32i)); } else { q.x = q.x | (1u << u32(i)); }
    }
  }
  return W64DivMod(q, r);
}
// Shifts by s in [0, 63]: left, and right filling with zeros or (arith) the sign bit.
fn w64_shl(a: w64, s: u32) -> w64 {
  if (s == 0u) { return a; }
  if (s >= 32u) { return w64(0u, a.x << (s - 32u)); }
  return w64(a.x << s, (a.y << s) | (a.x >> (32u - s)));
}
fn w64_shr(a: w64, s: u32, arith: bool) -> w64 {
  let fill = select(0u, 0xffffffffu, arith && w64_is_neg(a));
  if (s == 0u) { return a; }
  if (s >= 32u) { return w64(select(a.y >> (s - 32u), bitcast<u32>(bitcast<i32>(a.y) >> (s - 32u)), arith), fill); }
  return w64((a.x >> s) | (a.y << (32u - s)), select(a.y >> s, bitcast<u32>(bitcast<i32>(a.y) >> s), arith));
}
fn w64_to_f32_unsigned(a: w64) -> f32 { return f32(a.y) * 4294967296.0 + f32(a.x); }
fn w64_to_f32_signed(a: w64) -> f32 {
  return select(w64_to_f32_unsigned(a), -w64_to_f32_unsigned(w64_neg(a)), w64_is_neg(a));
}
fn w64_from_f32_unsigned(f: f32) -> w64 {
  let m = max(trunc(f), 0.0);
  let hi = floor(m / 4294967296.0);
  return w64(u32(m - hi * 4294967296.0), u32(hi));
}
// Cast's float -> integer rule (ops/cast.h; the CPU's float_to_int): toward zero, NaN 0; a value beyond
// int64 saturates (int64, uint64 from 2^63 to 2^64) or, for a narrower type, gives its largest value
// above and 0 below; else the int64's low bits. `tmax`: the target's largest value.
fn w64_cast_f32(f: f32) -> w64 {
  if ((bitcast<u32>(f) & 0x7fffffffu) > 0x7f800000u) { return w64(0u, 0u); }
  if (f >= 9223372036854775808.0) { return w64(0xffffffffu, 0x7fffffffu); }
  if (f <= -9223372036854775808.0) { return w64(0u, 0x80000000u); }
  let m = w64_from_f32_unsigned(abs(f));
  return select(m, w64_neg(m), f < 0.0);
}
fn cast_f32_u64(f: f32) -> w64 {
  if (f >= 18446744073709551616.0) { return w64(0xffffffffu, 0xffffffffu); }
  if (f >= 9223372036854775808.0) { return w64_from_f32_unsigned(f); }
  if (f < -9223372036854775808.0) { return w64(0u, 0u); }
  return w64_cast_f32(f);
}
fn cast_f32_i32(f: f32, tmax: i32) -> i32 {
  if (abs(f) < 2147483648.0) { return i32(trunc(f)); }
  if (f >= 9223372036854775808.0) { return tmax; }
  if (f < -9223372036854775808.0) { return 0i; }
  return bitcast<i32>(w64_cast_f32(f).x);
}
fn cast_f32_u32(f: f32, tmax: u32) -> u32 {
  if (f >= 0.0 && f < 4294967296.0) { return u32(trunc(f)); }
  if (f >= 9223372036854775808.0) { return tmax; }
  if (f < -9223372036854775808.0) { return 0u; }
  return w64_cast_f32(f).x;
}
)";

const char* kI64 = R"(
fn zero_i64() -> w64 { return w64(0u, 0u); }
fn isnan_i64(a: w64) -> bool { return false; }
fn one_i64() -> w64 { return w64(1u, 0u); }
fn lowest_i64() -> w64 { return w64(0u, 0x80000000u); }
fn highest_i64() -> w64 { return w64(0xffffffffu, 0x7fffffffu); }
fn add_i64(a: w64, b: w64) -> w64 { return w64_add(a, b); }
fn sub_i64(a: w64, b: w64) -> w64 { return w64_sub(a, b); }
fn mul_i64(a: w64, b: w64) -> w64 { return w64_mul(a, b); }
fn neg_i64(a: w64) -> w64 { return w64_neg(a); }
fn abs_i64(a: w64) -> w64 { return select(a, w64_neg(a), w64_is_neg(a)); }
fn sign_i64(a: w64) -> w64 { return select(select(w64(1u, 0u), w64(0u, 0u), w64_is_zero(a)), w64(0xffffffffu, 0xffffffffu), w64_is_neg(a)); }
fn eq_i64(a: w64, b: w64) -> bool { return w64_eq(a, b); }
fn lt_i64(a: w64, b: w64) -> bool { return w64_slt(a, b); }
fn le_i64(a: w64, b: w64) -> bool { return !w64_slt(b, a); }
fn gt_i64(a: w64, b: w64) -> bool { return w64_slt(b, a); }
fn ge_i64(a: w64, b: w64) -> bool { return !w64_slt(a, b); }
fn min_i64(a: w64, b: w64) -> w64 { return select(a, b, w64_slt(b, a)); }
fn max_i64(a: w64, b: w64) -> w64 { return select(a, b, w64_slt(a, b)); }
// Truncating division (ONNX Div); a zero divisor is flagged and gives 0.
fn div_i64(a: w64, b: w64) -> w64 {
  if (w64_is_zero(b)) { flag(FLAG_DIV_ZERO); return w64(0u, 0u); }
  let qr = w64_udivmod(abs_i64(a), abs_i64(b));
  return select(qr.q, w64_neg(qr.q), w64_is_neg(a) != w64_is_neg(b));
}
// fmod semantics (sign of the dividend).
fn fmod_i64(a: w64, b: w64) -> w64 {
  if (w64_is_zero(b)) { flag(FLAG_DIV_ZERO); return w64(0u, 0u); }
  let qr = w64_udivmod(abs_i64(a), abs_i64(b));
  return select(qr.r, w64_neg(qr.r), w64_is_neg(a));
}
// ONNX Mod with fmod=0: the result has the sign of the divisor.
fn mod_i64(a: w64, b: w64) -> w64 {
  let r = fmod_i64(a, b);
  if (!w64_is_zero(r) && w64_is_neg(r) != w64_is_neg(b)) { return w64_add(r, b); }
  return r;
}
fn to_f32_i64(a: w64) -> f32 { return w64_to_f32_signed(a); }
fn from_f32_i64(f: f32) -> w64 { return w64_cast_f32(f); }
fn to_i64_i64(a: w64) -> w64 { return a; }
fn from_i64_i64(a: w64) -> w64 { return a; }
fn to_bool_i64(a: w64) -> bool { return !w64_is_zero(a); }
fn from_bool_i64(b: bool) -> w64 { return w64(select(0u, 1u, b), 0u); }
)";

const char* kU64 = R"(
fn zero_u64() -> w64 { return w64(0u, 0u); }
fn isnan_u64(a: w64) -> bool { return false; }
fn one_u64() -> w64 { return w64(1u, 0u); }
fn lowest_u64() -> w64 { return w64(0u, 0u); }
fn highest_u64() -> w64 { return w64(0xffffffffu, 0xffffffffu); }
fn add_u64(a: w64, b: w64) -> w64 { return w64_add(a, b); }
fn sub_u64(a: w64, b: w64) -> w64 { return w64_sub(a, b); }
fn mul_u64(a: w64, b: w64) -> w64 { return w64_mul(a, b); }
fn neg_u64(a: w64) -> w64 { return w64_neg(a); }
fn abs_u64(a: w64) -> w64 { return a; }
fn sign_u64(a: w64) -> w64 { return select(w64(1u, 0u), w64(0u, 0u), w64_is_zero(a)); }
fn eq_u64(a: w64, b: w64) -> bool { return w64_eq(a, b); }
fn lt_u64(a: w64, b: w64) -> bool { return w64_ult(a, b); }
fn le_u64(a: w64, b: w64) -> bool { return !w64_ult(b, a); }
fn gt_u64(a: w64, b: w64) -> bool { return w64_ult(b, a); }
fn ge_u64(a: w64, b: w64) -> bool { return !w64_ult(a, b); }
fn min_u64(a: w64, b: w64) -> w64 { return select(a, b, w64_ult(b, a)); }
fn max_u64(a: w64, b: w64) -> w64 { return select(a, b, w64_ult(a, b)); }
fn div_u64(a: w64, b: w64) -> w64 { if (w64_is_zero(b)) { flag(FLAG_DIV_ZERO); return w64(0u, 0u); } return w64_udivmod(a, b).q; }
fn fmod_u64(a: w64, b: w64) -> w64 { if (w64_is_zero(b)) { flag(FLAG_DIV_ZERO); return w64(0u, 0u); } return w64_udivmod(a, b).r; }
fn mod_u64(a: w64, b: w64) -> w64 { return fmod_u64(a, b); }
fn to_f32_u64(a: w64) -> f32 { return w64_to_f32_unsigned(a); }
fn from_f32_u64(f: f32) -> w64 { return w64_from_f32_unsigned(f); }
fn to_i64_u64(a: w64) -> w64 { return a; }
fn from_i64_u64(a: w64) -> w64 { return a; }
fn to_bool_u64(a: w64) -> bool { return !w64_is_zero(a); }
fn from_bool_u64(b: bool) -> w64 { return w64(select(0u, 1u, b), 0u); }
)";

const char* kF32 = R"(
fn zero_f32() -> f32 { return 0.0; }
fn one_f32() -> f32 { return 1.0; }
fn lowest_f32() -> f32 { return -f32_inf(); }
fn highest_f32() -> f32 { return f32_inf(); }
fn add_f32(a: f32, b: f32) -> f32 { return a + b; }
fn sub_f32(a: f32, b: f32) -> f32 { return a - b; }
fn mul_f32(a: f32, b: f32) -> f32 { return a * b; }
fn div_f32(a: f32, b: f32) -> f32 { return a / b; }
// C fmod, exact (the remainder of floats is always representable): integer long division of the
// significands, as musl's fmodf. a - b * trunc(a / b) would lose it once a / b is large.
fn fmod_f32(a: f32, b: f32) -> f32 {
  let ua = bitcast<u32>(a);
  let ub = bitcast<u32>(b) & 0x7fffffffu;
  let sa = ua & 0x80000000u;
  var ma = ua & 0x7fffffffu;
  var ea = i32(ma >> 23u);
  var eb = i32(ub >> 23u);
  if (ub == 0u || ub > 0x7f800000u || ea == 255i) { return f32_nan(); }
  if (ma <= ub) { return select(a, bitcast<f32>(sa), ma == ub); }
  var mb = ub;
  // Normalised significands (subnormals shifted up, their exponents below 1).
  if (ea == 0i) { ea = 1i; loop { if ((ma & 0x800000u) != 0u) { break; } ma = ma << 1u; ea = ea - 1i; } } else { ma = (ma & 0x7fffffu) | 0x800000u; }
  if (eb == 0i) { eb = 1i; loop { if ((mb & 0x800000u) != 0u) { break; } mb = mb << 1u; eb = eb - 1i; } } else { mb = (mb & 0x7fffffu) | 0x800000u; }
  loop {
    if (ea <= eb) { break; }
    if (ma >= mb) { ma = ma - mb; }
    if (ma == 0u) { return bitcast<f32>(sa); }
    ma = ma << 1u;
    ea = ea - 1i;
  }
  if (ma >= mb) { ma = ma - mb; }
  if (ma == 0u) { return bitcast<f32>(sa); }
  loop { if ((ma & 0x800000u) != 0u) { break; } ma = ma << 1u; ea = ea - 1i; }
  if (ea > 0i) { return bitcast<f32>(sa | (u32(ea) << 23u) | (ma & 0x7fffffu)); }
  return bitcast<f32>(sa | (ma >> u32(1i - ea)));
}
// numpy's mod (the sign of the divisor): a zero takes b's sign, x mod +-inf is x or +-inf.
fn mod_f32(a: f32, b: f32) -> f32 {
  let r = fmod_f32(a, b);
  if (r == 0.0) { return bitcast<f32>(bitcast<u32>(b) & 0x80000000u); }
  return select(r, r + b, (r < 0.0) != (b < 0.0));
}
fn neg_f32(a: f32) -> f32 { return -a; }
fn abs_f32(a: f32) -> f32 { return abs(a); }
// Sign and comparisons from the bits: a GPU may flush subnormals to zero in float arithmetic, which
// would make Sign(1e-40) 0 and 0 < 1e-40 false; integers order them exactly.
fn sign_f32(a: f32) -> f32 {
  let b = bitcast<u32>(a);
  if ((b & 0x7fffffffu) == 0u || isnan_f32(a)) { return a; }
  return select(1.0, -1.0, b >= 0x80000000u);
}
// A float's place in the order of floats (-0 = +0), for non-NaN values.
fn f32_order(a: f32) -> i32 { let b = bitcast<i32>(a); return select(b, (-2147483647i - 1i) - b, b < 0i); }
fn eq_f32(a: f32, b: f32) -> bool { return !isnan_f32(a) && !isnan_f32(b) && f32_order(a) == f32_order(b); }
fn lt_f32(a: f32, b: f32) -> bool { return !isnan_f32(a) && !isnan_f32(b) && f32_order(a) < f32_order(b); }
fn le_f32(a: f32, b: f32) -> bool { return !isnan_f32(a) && !isnan_f32(b) && f32_order(a) <= f32_order(b); }
fn gt_f32(a: f32, b: f32) -> bool { return lt_f32(b, a); }
fn ge_f32(a: f32, b: f32) -> bool { return le_f32(b, a); }
fn isnan_f32(a: f32) -> bool { return (bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u; }
// NaN-propagating min/max, as ONNX Min/Max.
fn min_f32(a: f32, b: f32) -> f32 { if (isnan_f32(a) || isnan_f32(b)) { return f32_nan(); } return min(a, b); }
fn max_f32(a: f32, b: f32) -> f32 { if (isnan_f32(a) || isnan_f32(b)) { return f32_nan(); } return max(a, b); }
fn to_f32_f32(a: f32) -> f32 { return a; }
fn from_f32_f32(f: f32) -> f32 { return f; }
fn to_i64_f32(a: f32) -> w64 { let m = w64_from_f32_unsigned(abs(a)); return select(m, w64_neg(m), a < 0.0); }
fn from_i64_f32(a: w64) -> f32 { return w64_to_f32_signed(a); }
fn to_bool_f32(a: f32) -> bool { return a != 0.0; }
fn from_bool_f32(b: bool) -> f32 { return select(0.0, 1.0, b); }
)" R"(
// Float math with the C library's results at the extremes (the CPU reference's): NaN in, NaN out;
// overflow to +-inf, never inf/inf; log(0) = -inf and log(x < 0) = NaN; subnormal inputs read from
// their bits. WGSL leaves these cases to the implementation (SwiftShader's exp(NaN) is inf, its tanh
// is NaN beyond 89), so kernels use these and not the builtins.
fn exp_f32(x: f32) -> f32 {
  if (isnan_f32(x)) { return x; }
  if (x > 88.8) { return f32_inf(); }
  if (x < -104.0) { return 0.0; }
  return exp(x);
}
fn log_f32(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let mag = b & 0x7fffffffu;
  if (mag > 0x7f800000u || (b != mag && mag != 0u)) { return f32_nan(); }  // NaN, x < 0
  if (mag == 0u) { return -f32_inf(); }
  if (b == 0x7f800000u) { return x; }
  if (b < 0x00800000u) { return log(f32(b)) - 103.27892990343185; }  // subnormal: b * 2^-149
  return log(x);
}
// tanh: an odd polynomial near 0 (Cephes' tanhf), 1 - 2 / (e^2|x| + 1) as (1 - e) / (1 + e) with
// e = e^-2|x| beyond, which never overflows.
fn tanh_f32(x: f32) -> f32 {
  if (isnan_f32(x)) { return x; }
  let a = abs(x);
  var r: f32;
  if (a < 0.625) {
    let z = a * a;
    r = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z + 1.33314422036e-1) * z -
         3.33332819422e-1) * z * a + a;
  } else {
    let e = exp(-2.0 * a);
    r = (1.0 - e) / (1.0 + e);
  }
  return select(r, -r, x < 0.0);
}
// floor and ceil of |x| < 1 from the bits (subnormals included), the builtins beyond.
fn floor_f32(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let mag = b & 0x7fffffffu;
  if (mag == 0u || mag >= 0x3f800000u) { return floor(x); }
  return select(0.0, -1.0, b != mag);
}
fn ceil_f32(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  let mag = b & 0x7fffffffu;
  if (mag == 0u || mag >= 0x3f800000u) { return ceil(x); }
  return select(1.0, -0.0, b != mag);
}
fn sigmoid_f32(x: f32) -> f32 { return 1.0 / (1.0 + exp_f32(-x)); }
fn sinh_f32(x: f32) -> f32 { if (isnan_f32(x)) { return x; } if (abs(x) > 89.5) { return select(f32_inf(), -f32_inf(), x < 0.0); } return sinh(x); }
fn cosh_f32(x: f32) -> f32 { if (isnan_f32(x)) { return x; } if (abs(x) > 89.5) { return f32_inf(); } return cosh(x); }
fn asin_f32(x: f32) -> f32 { if (!(abs(x) <= 1.0)) { return f32_nan(); } return asin(x); }
fn acos_f32(x: f32) -> f32 { if (!(abs(x) <= 1.0)) { return f32_nan(); } return acos(x); }
fn atan_f32(x: f32) -> f32 { if (isnan_f32(x)) { return x; } return atan(x); }
// asinh and acosh as log(2|x|) where x * x would overflow.
fn asinh_f32(x: f32) -> f32 {
  if (isnan_f32(x)) { return x; }
  let a = abs(x);
  let r = select(asinh(a), log_f32(a) + 0.6931471805599453, a > 1.0e4);
  return select(r, -r, x < 0.0);
}
fn acosh_f32(x: f32) -> f32 {
  if (!(x >= 1.0)) { return f32_nan(); }
  if (x > 1.0e4) { return log_f32(x) + 0.6931471805599453; }
  return acosh(x);
}
fn atanh_f32(x: f32) -> f32 {
  if (!(abs(x) <= 1.0)) { return f32_nan(); }
  if (abs(x) == 1.0) { return select(f32_inf(), -f32_inf(), x < 0.0); }
  return atanh(x);
}
fn sqrt_f32(x: f32) -> f32 { if (isnan_f32(x) || x < 0.0) { return f32_nan(); } return sqrt(x); }
fn softplus_f32(x: f32) -> f32 { if (x > 20.0) { return x; } return log_f32(1.0 + exp_f32(x)); }
// pow with the C library's results (C99 Annex F): pow(x, 0) = pow(1, y) = 1 even for NaN; negative
// bases with integral exponents; zeros, infinities and NaN spelled out (WGSL's pow is exp2(y log2 x),
// indeterminate for x <= 0).
fn pow_odd_int(b: f32) -> bool { return abs(b) < 16777216.0 && trunc(b) == b && abs(b) % 2.0 == 1.0; }
fn pow_f32(a: f32, b: f32) -> f32 {
  if (b == 0.0 || a == 1.0) { return 1.0; }
  if (isnan_f32(a) || isnan_f32(b)) { return f32_nan(); }
  let inf = f32_inf();
  if (abs(b) == inf) {
    if (a == -1.0) { return 1.0; }
    return select(select(inf, 0.0, b < 0.0), select(0.0, inf, b < 0.0), abs(a) < 1.0);
  }
  let odd = pow_odd_int(b);
  if (a == 0.0 || abs(a) == inf) {
    let big = (a == 0.0) == (b < 0.0);  // 0^-y and inf^y are infinite, 0^y and inf^-y zero
    let r = select(0.0, inf, big);
    return select(r, -r, odd && bitcast<u32>(a) >= 0x80000000u);
  }
  if (a < 0.0) {
    if (trunc(b) != b) { return f32_nan(); }
    let r = pow(-a, b);
    return select(r, -r, odd);
  }
  return pow(a, b);
}
)";

// sin, cos and tan with the C library's results for any argument. WGSL's own are accurate only to
// 2^-11 absolute (SwiftShader's cos(0.1) is 0.9948397 where it is 0.9950042: a rotary embedding
// drifts past 1e-4), so every argument is reduced to r in [-pi/4, pi/4] and a quadrant n, and sin r,
// cos r come from minimax polynomials (Cephes' sinf / cosf, within 1 ulp there). Below 2 the
// reduction is x - n pi/2 with pi/2 in two parts; beyond, x is reduced to r in [-pi/4, pi/4] and a quadrant n exactly, with 4/pi to 192
// bits in integer arithmetic (the method of ARM's optimized-routines sinf: a 32x96-bit product gives
// the 2.62 fixed-point remainder).
const char* kTrig = R"(
var<private> INV_PIO4: array<u32, 24> = array<u32, 24>(
  0xa2u, 0xa2f9u, 0xa2f983u, 0xa2f9836eu, 0xf9836e4eu, 0x836e4e44u, 0x6e4e4415u, 0x4e441529u,
  0x441529fcu, 0x1529fc27u, 0x29fc2757u, 0xfc2757d1u, 0x2757d1f5u, 0x57d1f534u, 0xd1f534ddu, 0xf534ddc0u,
  0x34ddc0dbu, 0xddc0db62u, 0xc0db6295u, 0xdb629599u, 0x6295993cu, 0x95993c43u, 0x993c4390u, 0x3c439041u);
struct TrigReduced { r: f32, n: u32 }
// |x| = r + n pi/2 for |x| >= 2 (finite).
fn trig_reduce(x: f32) -> TrigReduced {
  let bits = bitcast<u32>(x) & 0x7fffffffu;
  let k = (bits >> 26u) & 15u;
  let xi = ((bits & 0xffffffu) | 0x800000u) << ((bits >> 23u) & 7u);
  let p1 = w64_mulwide(xi, INV_PIO4[k + 4u]);
  let p2 = w64_mulwide(xi, INV_PIO4[k + 8u]);
  var res = w64_add(w64(p2.y, xi * INV_PIO4[k]), p1);
  let n = w64_add(res, w64(0u, 0x20000000u)).y >> 30u;
  res.y = res.y - (n << 30u);
  return TrigReduced(w64_to_f32_signed(res) * 3.4061215800865545e-19, n);
}
fn sin_poly(r: f32) -> f32 {
  let z = r * r;
  return r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
}
fn cos_poly(r: f32) -> f32 {
  let z = r * r;
  return 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
}
// x = r + n pi/2 with |r| <= pi/4: r, and n mod 4 (for x < 0 too).
fn trig_quadrant(x: f32) -> TrigReduced {
  if (abs(x) < 2.0) {
    let n = round(x * 0.6366197723675814);
    return TrigReduced((x - n * 1.5707963705062866) + n * 4.371139000186243e-8, u32(i32(n)) & 3u);
  }
  let t = trig_reduce(x);  // of |x|: x < 0 is -r - n pi/2
  if (x < 0.0) { return TrigReduced(-t.r, (4u - (t.n & 3u)) & 3u); }
  return TrigReduced(t.r, t.n & 3u);
}
fn sin_f32(x: f32) -> f32 {
  if (isnan_f32(x) || abs(x) == f32_inf()) { return f32_nan(); }
  let t = trig_quadrant(x);
  let s = select(sin_poly(t.r), cos_poly(t.r), (t.n & 1u) == 1u);
  return select(s, -s, t.n >= 2u);
}
fn cos_f32(x: f32) -> f32 {
  if (isnan_f32(x) || abs(x) == f32_inf()) { return f32_nan(); }
  let t = trig_quadrant(x);
  let c = select(cos_poly(t.r), sin_poly(t.r), (t.n & 1u) == 1u);
  return select(c, -c, t.n == 1u || t.n == 2u);
}
fn tan_f32(x: f32) -> f32 {
  if (isnan_f32(x) || abs(x) == f32_inf()) { return f32_nan(); }
  if (abs(x) < 0.78) { return sin_poly(x) / cos_poly(x); }
  var r = x;
  var odd = false;
  if (abs(x) < 2.0) {
    let n = round(x * 0.6366197723675814);  // the nearest multiple of pi/2, in two parts
    r = (x - n * 1.5707963705062866) + n * 4.371139000186243e-8;
    odd = (i32(n) & 1i) == 1i;
  } else {
    let t = trig_reduce(x);
    r = select(t.r, -t.r, x < 0.0);
    odd = (t.n & 1u) == 1u;
  }
  let s = sin_poly(r);
  let c = cos_poly(r);
  return select(s / c, -c / s, odd);
}
)";

const char* kI32 = R"(
fn zero_i32() -> i32 { return 0i; }
fn isnan_i32(a: i32) -> bool { return false; }
fn one_i32() -> i32 { return 1i; }
fn lowest_i32() -> i32 { return -2147483647i - 1i; }
fn highest_i32() -> i32 { return 2147483647i; }
fn add_i32(a: i32, b: i32) -> i32 { return a + b; }
fn sub_i32(a: i32, b: i32) -> i32 { return a - b; }
fn mul_i32(a: i32, b: i32) -> i32 { return a * b; }
fn div_i32(a: i32, b: i32) -> i32 { if (b == 0i) { flag(FLAG_DIV_ZERO); return 0i; } return a / b; }
fn fmod_i32(a: i32, b: i32) -> i32 { if (b == 0i) { flag(FLAG_DIV_ZERO); return 0i; } return a % b; }
fn mod_i32(a: i32, b: i32) -> i32 { let r = fmod_i32(a, b); return select(r, r + b, r != 0i && ((r < 0i) != (b < 0i))); }
fn neg_i32(a: i32) -> i32 { return -a; }
fn abs_i32(a: i32) -> i32 { return abs(a); }
fn sign_i32(a: i32) -> i32 { return sign(a); }
fn eq_i32(a: i32, b: i32) -> bool { return a == b; }
fn lt_i32(a: i32, b: i32) -> bool { return a < b; }
fn le_i32(a: i32, b: i32) -> bool { return a <= b; }
fn gt_i32(a: i32, b: i32) -> bool { return a > b; }
fn ge_i32(a: i32, b: i32) -> bool { return a >= b; }
fn min_i32(a: i32, b: i32) -> i32 { return min(a, b); }
fn max_i32(a: i32, b: i32) -> i32 { return max(a, b); }
fn to_f32_i32(a: i32) -> f32 { return f32(a); }
fn from_f32_i32(f: f32) -> i32 { return i32(trunc(f)); }
fn to_i64_i32(a: i32) -> w64 { return w64_from_i32(a); }
fn from_i64_i32(a: w64) -> i32 { return bitcast<i32>(a.x); }
fn to_bool_i32(a: i32) -> bool { return a != 0i; }
fn from_bool_i32(b: bool) -> i32 { return select(0i, 1i, b); }
)";

const char* kU32 = R"(
fn zero_u32() -> u32 { return 0u; }
fn isnan_u32(a: u32) -> bool { return false; }
fn one_u32() -> u32 { return 1u; }
fn lowest_u32() -> u32 { return 0u; }
fn highest_u32() -> u32 { return 0xffffffffu; }
fn add_u32(a: u32, b: u32) -> u32 { return a + b; }
fn sub_u32(a: u32, b: u32) -> u32 { return a - b; }
fn mul_u32(a: u32, b: u32) -> u32 { return a * b; }
fn div_u32(a: u32, b: u32) -> u32 { if (b == 0u) { flag(FLAG_DIV_ZERO); return 0u; } return a / b; }
fn fmod_u32(a: u32, b: u32) -> u32 { if (b == 0u) { flag(FLAG_DIV_ZERO); return 0u; } return a % b; }
fn mod_u32(a: u32, b: u32) -> u32 { return fmod_u32(a, b); }
fn neg_u32(a: u32) -> u32 { return 0u - a; }
fn abs_u32(a: u32) -> u32 { return a; }
fn sign_u32(a: u32) -> u32 { return select(0u, 1u, a != 0u); }
fn eq_u32(a: u32, b: u32) -> bool { return a == b; }
fn lt_u32(a: u32, b: u32) -> bool { return a < b; }
fn le_u32(a: u32, b: u32) -> bool { return a <= b; }
fn gt_u32(a: u32, b: u32) -> bool { return a > b; }
fn ge_u32(a: u32, b: u32) -> bool { return a >= b; }
fn min_u32(a: u32, b: u32) -> u32 { return min(a, b); }
fn max_u32(a: u32, b: u32) -> u32 { return max(a, b); }
fn to_f32_u32(a: u32) -> f32 { return f32(a); }
fn from_f32_u32(f: f32) -> u32 { return u32(trunc(f)); }
fn to_i64_u32(a: u32) -> w64 { return w64_from_u32(a); }
fn from_i64_u32(a: w64) -> u32 { return a.x; }
fn to_bool_u32(a: u32) -> bool { return a != 0u; }
fn from_bool_u32(b: bool) -> u32 { return select(0u, 1u, b); }
)";

const char* kBool = R"(
fn zero_bool() -> u32 { return 0u; }
fn isnan_bool(a: u32) -> bool { return false; }
fn one_bool() -> u32 { return 1u; }
fn lowest_bool() -> u32 { return 0u; }
fn highest_bool() -> u32 { return 1u; }
fn eq_bool(a: u32, b: u32) -> bool { return a == b; }
fn lt_bool(a: u32, b: u32) -> bool { return a < b; }
fn le_bool(a: u32, b: u32) -> bool { return a <= b; }
fn gt_bool(a: u32, b: u32) -> bool { return a > b; }
fn ge_bool(a: u32, b: u32) -> bool { return a >= b; }
fn min_bool(a: u32, b: u32) -> u32 { return min(a, b); }
fn max_bool(a: u32, b: u32) -> u32 { return max(a, b); }
fn add_bool(a: u32, b: u32) -> u32 { return a | b; }
fn mul_bool(a: u32, b: u32) -> u32 { return a & b; }
fn to_f32_bool(a: u32) -> f32 { return f32(a); }
fn from_f32_bool(f: f32) -> u32 { return select(0u, 1u, f != 0.0); }
fn to_i64_bool(a: u32) -> w64 { return w64(a, 0u); }
fn from_i64_bool(a: w64) -> u32 { return select(0u, 1u, !w64_is_zero(a)); }
fn to_bool_bool(a: u32) -> bool { return a != 0u; }
fn from_bool_bool(b: bool) -> u32 { return select(0u, 1u, b); }
)";

// int64 narrowed to i32 (cast_to_i32): i32 arithmetic with every overflow flagged, so a value beyond
// int32 is an error naming the tensor, never a wrong number.
const char* kI64n = R"(
fn zero_i64n() -> i32 { return 0i; }
fn isnan_i64n(a: i32) -> bool { return false; }
fn one_i64n() -> i32 { return 1i; }
fn lowest_i64n() -> i32 { return -2147483647i - 1i; }
fn highest_i64n() -> i32 { return 2147483647i; }
fn add_i64n(a: i32, b: i32) -> i32 { let r = a + b; if (((a ^ r) & (b ^ r)) < 0i) { flag(FLAG_OVERFLOW); } return r; }
fn sub_i64n(a: i32, b: i32) -> i32 { let r = a - b; if (((a ^ b) & (a ^ r)) < 0i) { flag(FLAG_OVERFLOW); } return r; }
fn mul_i64n(a: i32, b: i32) -> i32 {
  let w = w64_mul(w64_from_i32(a), w64_from_i32(b));
  if (!w64_fits_i32(w)) { flag(FLAG_OVERFLOW); }
  return w64_as_i32(w);
}
fn div_i64n(a: i32, b: i32) -> i32 {
  if (b == 0i) { flag(FLAG_DIV_ZERO); return 0i; }
  if (b == -1i && a == (-2147483647i - 1i)) { flag(FLAG_OVERFLOW); }
  return a / b;
}
fn fmod_i64n(a: i32, b: i32) -> i32 { if (b == 0i) { flag(FLAG_DIV_ZERO); return 0i; } if (b == -1i) { return 0i; } return a % b; }
fn mod_i64n(a: i32, b: i32) -> i32 { let r = fmod_i64n(a, b); return select(r, r + b, r != 0i && ((r < 0i) != (b < 0i))); }
fn neg_i64n(a: i32) -> i32 { if (a == (-2147483647i - 1i)) { flag(FLAG_OVERFLOW); } return -a; }
fn abs_i64n(a: i32) -> i32 { if (a == (-2147483647i - 1i)) { flag(FLAG_OVERFLOW); } return abs(a); }
fn sign_i64n(a: i32) -> i32 { return sign(a); }
fn eq_i64n(a: i32, b: i32) -> bool { return a == b; }
fn lt_i64n(a: i32, b: i32) -> bool { return a < b; }
fn le_i64n(a: i32, b: i32) -> bool { return a <= b; }
fn gt_i64n(a: i32, b: i32) -> bool { return a > b; }
fn ge_i64n(a: i32, b: i32) -> bool { return a >= b; }
fn min_i64n(a: i32, b: i32) -> i32 { return min(a, b); }
fn max_i64n(a: i32, b: i32) -> i32 { return max(a, b); }
fn to_f32_i64n(a: i32) -> f32 { return f32(a); }
fn from_f32_i64n(f: f32) -> i32 {
  let t = select(trunc(f), 0.0, (bitcast<u32>(f) & 0x7fffffffu) > 0x7f800000u);  // NaN: 0, as the CPU's cast
  if (t >= 2147483648.0 || t < -2147483648.0) { flag(FLAG_OVERFLOW); }
  return i32(t);
}
fn to_i64_i64n(a: i32) -> w64 { return w64_from_i32(a); }
fn from_i64_i64n(a: w64) -> i32 { if (!w64_fits_i32(a)) { flag(FLAG_OVERFLOW); } return w64_as_i32(a); }
fn to_bool_i64n(a: i32) -> bool { return a != 0i; }
fn from_bool_i64n(b: bool) -> i32 { return select(0i, 1i, b); }
)";

// ipow_<fam>(base, e): integer power by squaring, the exponent an int64 (to_i64_<fam> of any integer
// type). Products wrap, or flag overflow, as the family's mul_ does; the base is not squared past the
// exponent's last bit, so a square the result does not need never flags. A negative exponent gives 1
// for base 1, +-1 for base -1 and 0 otherwise (1 / base^n truncated), as the CPU reference does
// (which refuses base 0).
std::string int_pow(const std::string& fam, const std::string& type) {
  std::string s = R"(
fn ipow_$f(base: $t, e_in: w64) -> $t {
  if (w64_is_neg(e_in)) {
    if (eq_$f(base, one_$f())) { return one_$f(); }
    if (eq_$f(base, neg_$f(one_$f()))) { return select(one_$f(), base, (e_in.x & 1u) == 1u); }
    return zero_$f();
  }
  var r = one_$f();
  var b = base;
  var e = e_in;
  for (var k = 0u; k < 64u; k = k + 1u) {
    if ((e.x & 1u) == 1u) { r = mul_$f(r, b); }
    e = w64((e.x >> 1u) | (e.y << 31u), e.y >> 1u);
    if (w64_is_zero(e)) { break; }
    b = mul_$f(b, b);
  }
  return r;
}
)";
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"$f", fam}, {"$t", type}})
    for (size_t pos = 0; (pos = s.find(key, pos)) != std::string::npos; pos += value.size()) s.replace(pos, key.size(), value);
  return s;
}

// shl_<fam>(a, s, bits) and shr_<fam>(a, s, bits): BitShift on an integer type of `bits` bits (the
// element type's width: 8 for int8 in the i32 family, 64 for int64 narrowed to i32), the amount s as an
// int64 (to_i64_<fam>) taken as unsigned: an amount of `bits` or more (a negative one too) gives 0 to the
// left and the sign's fill to the right. Left shifts wrap (the store keeps the element's low bits; the
// narrowed family flags a result beyond int32); right shifts are arithmetic on signed families.
std::string int_shift(const std::string& fam, const std::string& type, bool arith) {
  std::string s = R"(
fn shl_$f(a: $t, s: w64, bits: u32) -> $t {
  if (s.y != 0u || s.x >= bits) { return zero_$f(); }
  return from_i64_$f(w64_shl(to_i64_$f(a), s.x));
}
fn shr_$f(a: $t, s: w64, bits: u32) -> $t {
  let w = to_i64_$f(a);
  if (s.y != 0u || s.x >= bits) { return from_i64_$f(select(w64(0u, 0u), w64(0xffffffffu, 0xffffffffu), $a && w64_is_neg(w))); }
  return from_i64_$f(w64_shr(w, s.x, $a));
}
)";
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"$f", fam}, {"$t", type}, {"$a", arith ? "true" : "false"}})
    for (size_t pos = 0; (pos = s.find(key, pos)) != std::string::npos; pos += value.size()) s.replace(pos, key.size(), value);
  return s;
}

}  // namespace

const char* trig_helpers() { return kTrig; }

std::string convert_value(const std::string& v, const TypeInfo& from, const TypeInfo& to) {
  const std::string& ff = from.family;
  const std::string& tf = to.family;
  if (ff == tf) return v;
  if (tf == "bool") return "from_bool_bool(to_bool_" + ff + "(" + v + "))";
  if (ff == "bool") return "from_bool_" + tf + "(to_bool_bool(" + v + "))";
  if (tf == "f32") return "to_f32_" + ff + "(" + v + ")";
  // A float into an integer type follows Cast's rule (ops/cast.h), not WGSL's clamping conversions: a
  // negative float into an unsigned type keeps the low bits of its integer part (ONNX's tests wrap -9 to 7
  // in uint4), and one beyond 32 bits keeps the low bits of its int64.
  if (ff == "f32" && (tf == "i32" || tf == "u32")) {
    const int bits = to.narrow ? 32 : to.storage_bits;
    const uint64_t umax = bits >= 32 ? 0xffffffffull : (uint64_t(1) << bits) - 1;
    return tf == "i32" ? "cast_f32_i32(" + v + ", " + std::to_string(umax >> 1) + "i)"
                       : "cast_f32_u32(" + v + ", " + std::to_string(umax) + "u)";
  }
  if (ff == "f32" && tf == "u64") return "cast_f32_u64(" + v + ")";
  if (ff == "f32") return "from_f32_" + tf + "(" + v + ")";
  return "from_i64_" + tf + "(to_i64_" + ff + "(" + v + "))";
}

std::string family_helpers(const std::string& family) {
  if (family == "wide") return kWide;
  if (family == "i64") return kI64 + int_pow("i64", "w64") + int_shift("i64", "w64", true);
  if (family == "u64") return kU64 + int_pow("u64", "w64") + int_shift("u64", "w64", false);
  if (family == "f32") return kF32;
  if (family == "i32") return kI32 + int_pow("i32", "i32") + int_shift("i32", "i32", true);
  if (family == "u32") return kU32 + int_pow("u32", "u32") + int_shift("u32", "u32", false);
  if (family == "bool") return kBool;
  if (family == "i64n") return kI64n + int_pow("i64n", "i32") + int_shift("i64n", "i32", true);
  throw Error("unknown WGSL helper family '" + family + "'");
}

}  // namespace onnxgpu::webgpu::shader
