#include "webgpu/shader/program.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

namespace onnxgpu::webgpu::shader {

namespace {

const char* kPrelude = R"(
const FLAG_INDEX: u32 = 1u;
const FLAG_DIV_ZERO: u32 = 2u;
const FLAG_OVERFLOW: u32 = 4u;
fn P(k: u32) -> u32 { return params.v[k >> 2u][k & 3u]; }
// Infinity and NaN: WGSL rejects them in constant expressions, so they come from private variables.
var<private> F32_INF_BITS: u32 = 0x7f800000u;
var<private> F32_NAN_BITS: u32 = 0x7fc00000u;
fn f32_inf() -> f32 { return bitcast<f32>(F32_INF_BITS); }
fn f32_nan() -> f32 { return bitcast<f32>(F32_NAN_BITS); }
// Records an error for this dispatch (out-of-range index, integer division by zero, INT64 overflow)
// in its node's status record (flags, claimed, value lo, value hi); the runtime reads the records
// after the run and reports them, naming the node. (STATUS_WORDS: kStatusWords, written by source().)
fn flag(code: u32) { atomicOr(&status_buf[P(0u) * STATUS_WORDS], code); }
// An out-of-range index: flagged, and the first one an invocation claims kept for the message.
fn flag_index(k: w64) {
  flag(FLAG_INDEX);
  let at = P(0u) * STATUS_WORDS;
  if (atomicCompareExchangeWeak(&status_buf[at + 1u], 0u, 1u).exchanged) {
    atomicStore(&status_buf[at + 2u], k.x);
    atomicStore(&status_buf[at + 3u], k.y);
  }
}
fn f64_to_f32(b: vec2<u32>) -> f32 {
  let hi = b.y;
  let sgn = hi & 0x80000000u;
  let e = (hi >> 20u) & 0x7ffu;
  if (e == 0x7ffu) { return bitcast<f32>(sgn | 0x7f800000u | select(0u, 0x400000u, (hi & 0xfffffu) != 0u || b.x != 0u)); }
  let e32 = i32(e) - 1023i + 127i;
  if (e32 >= 255i) { return bitcast<f32>(sgn | 0x7f800000u); }
  if (e32 <= 0i) { return bitcast<f32>(sgn); }
  let m = ((hi & 0xfffffu) << 3u) | (b.x >> 29u);
  let rest = b.x & 0x1fffffffu;
  var bits = sgn | (u32(e32) << 23u) | m;
  if (rest > 0x10000000u || (rest == 0x10000000u && (m & 1u) == 1u)) { bits = bits + 1u; }
  return bitcast<f32>(bits);
}
fn f32_to_f64(f: f32) -> vec2<u32> {
  let u = bitcast<u32>(f);
  let sgn = u & 0x80000000u;
  let e = (u >> 23u) & 0xffu;
  let m = u & 0x7fffffu;
  if (e == 0u) { return vec2<u32>(0u, sgn); }
  if (e == 255u) { return vec2<u32>(m << 29u, sgn | 0x7ff00000u | (m >> 3u)); }
  return vec2<u32>(m << 29u, sgn | ((e + 896u) << 20u) | (m >> 3u));
}
// float16 bits of v; pack2x16float is undefined beyond the float16 range, so inf/NaN are explicit.
fn f16_bits(v: f32) -> u32 {
  if ((bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) { return 0x7e00u; }
  if (abs(v) >= 65520.0) { return select(0x7c00u, 0xfc00u, v < 0.0); }
  return pack2x16float(vec2<f32>(v, 0.0)) & 0xffffu;
}
fn bf16_from_f32(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) { return (u >> 16u) | 0x40u; }
  return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}
)";

std::string u(uint64_t v) { return std::to_string(v) + "u"; }

// A float16 or bfloat16 element's f32 value from its bits, and its bits from an f32 value (the loads'
// and stores' conversions; as_stored composes them).
std::string half_from_bits(DType dtype, const std::string& bits) {
  return dtype == DType::Float16 ? "unpack2x16float(" + bits + ").x" : "bitcast<f32>(" + bits + " << 16u)";
}
std::string half_bits(DType dtype, const std::string& v) {
  return dtype == DType::Float16 ? "f16_bits(" + v + ")" : "bf16_from_f32(" + v + ")";
}

}  // namespace

std::string as_stored(DType dtype, const std::string& v) {
  if (dtype != DType::Float16 && dtype != DType::BFloat16) return v;
  return half_from_bits(dtype, half_bits(dtype, v));
}

Program::Program(std::string name, const Int64Policy& policy, uint32_t workgroup_size)
    : name_(std::move(name)), policy_(policy), wg_(workgroup_size) {}

uint32_t Program::alloc(uint32_t n) {
  uint32_t off = uint32_t(uniforms_.size());
  uniforms_.resize(uniforms_.size() + n, 0);
  return off;
}

const std::string& Program::input(const std::string& name, DType dtype, const Shape& shape) {
  return add_tensor(name, dtype, shape, false);
}
const std::string& Program::output(const std::string& name, DType dtype, const Shape& shape) {
  return add_tensor(name, dtype, shape, true);
}

const std::string& Program::add_tensor(const std::string& name, DType dtype, const Shape& shape, bool output) {
  for (const auto& t : tensors_)
    if (t.name == name) throw Error("program " + name_ + ": tensor '" + name + "' declared twice");
  int64_t n = shape_numel(shape);
  if (n >= (int64_t(1) << 32)) throw NotImplemented("tensor of " + std::to_string(n) + " elements is too large for 32-bit GPU indexing");
  TensorDecl t{name, dtype, shape, output, type_info(dtype, policy_), uint32_t(2 + tensors_.size())};
  // Shape, strides and element count of the tensor, as uniforms.
  uint32_t r = uint32_t(shape.size());
  uint32_t off = alloc(2 * r + 1);
  auto strides = shape_strides(shape);
  for (uint32_t d = 0; d < r; ++d) {
    uniforms_[off + d] = uint32_t(shape[d]);
    uniforms_[off + r + d] = uint32_t(strides[d]);
  }
  uniforms_[off + 2 * r] = uint32_t(n);
  if (builds_text_) {
    uniform_fns_.append("const " + name + "_rank: u32 = " + u(r) + ";\n");
    uniform_fns_.append("fn " + name + "_shape(d: u32) -> u32 { return P(" + u(off) + " + d); }\n");
    uniform_fns_.append("fn " + name + "_stride(d: u32) -> u32 { return P(" + u(off + r) + " + d); }\n");
    uniform_fns_.append("fn " + name + "_numel() -> u32 { return P(" + u(off + 2 * r) + "); }\n");
  }
  tensors_.push_back(std::move(t));
  return tensors_.back().type.family;
}

void Program::uniform(const std::string& name, uint32_t value) {
  uint32_t off = alloc(1);
  uniforms_[off] = value;
  if (builds_text_) uniform_fns_.append("fn " + name + "() -> u32 { return P(" + u(off) + "); }\n");
}

void Program::uniform_i32(const std::string& name, int32_t value) {
  uint32_t off = alloc(1);
  std::memcpy(&uniforms_[off], &value, 4);
  if (builds_text_) uniform_fns_.append("fn " + name + "() -> i32 { return bitcast<i32>(P(" + u(off) + ")); }\n");
}

void Program::uniform_f32(const std::string& name, float value) {
  uint32_t off = alloc(1);
  std::memcpy(&uniforms_[off], &value, 4);
  if (builds_text_) uniform_fns_.append("fn " + name + "() -> f32 { return bitcast<f32>(P(" + u(off) + ")); }\n");
}

void Program::uniform_i64(const std::string& name, int64_t value) {
  uint32_t off = alloc(2);
  uniforms_[off] = uint32_t(uint64_t(value));
  uniforms_[off + 1] = uint32_t(uint64_t(value) >> 32);
  if (builds_text_) uniform_fns_.append("fn " + name + "() -> w64 { return w64(P(" + u(off) + "), P(" + u(off + 1) + ")); }\n");
}

void Program::uniform_raw(const std::string& name, const std::string& like, const Tensor& value) {
  auto t = std::find_if(tensors_.begin(), tensors_.end(), [&](const TensorDecl& d) { return d.name == like; });
  if (t == tensors_.end()) throw Error("program " + name_ + ": uniform_raw '" + name + "' names no tensor '" + like + "'");
  if (value.dtype() != t->dtype)
    throw Error("program " + name_ + ": uniform_raw '" + name + "' holds " + value.describe() + ", not " + std::string(dtype_name(t->dtype)));
  const bool wide = t->type.storage_bits == 64;
  uint32_t off = alloc(wide ? 2 : 1);
  if (value.nbytes()) std::memcpy(&uniforms_[off], value.raw(), std::min<size_t>(value.nbytes(), size_t(t->type.storage_bits / 8)));
  std::string bits = wide ? "vec2<u32>(P(" + u(off) + "), P(" + u(off + 1) + "))" : "P(" + u(off) + ")";
  if (builds_text_) uniform_fns_.append("fn " + name + "() -> " + like + "_raw_t { return " + bits + "; }\n");
}

void Program::uniform_array(const std::string& name, const std::vector<uint32_t>& values) {
  uint32_t off = alloc(uint32_t(std::max<size_t>(values.size(), 1)));
  std::copy(values.begin(), values.end(), uniforms_.begin() + off);
  if (builds_text_) uniform_fns_.append("fn " + name + "(i: u32) -> u32 { return P(" + u(off) + " + i); }\n");
}

void Program::pitch(size_t index, uint32_t len, uint32_t stride, uint32_t start) {
  TensorDecl& t = tensors_.at(index);
  if (t.type.storage_bits < 32) throw Error("program " + name_ + ": tensor '" + t.name + "' of sub-word elements cannot be pitched");
  if (t.pitch < 0) t.pitch = int(alloc(3));
  uniforms_[size_t(t.pitch)] = len;
  uniforms_[size_t(t.pitch) + 1] = stride;
  uniforms_[size_t(t.pitch) + 2] = start;
}

void Program::vec4(size_t index) {
  TensorDecl& t = tensors_.at(index);
  if (t.dtype != DType::Float32 || t.output || shape_numel(t.shape) % 4 != 0 || shape_numel(t.shape) == 0)
    throw Error("program " + name_ + ": tensor '" + t.name + "' cannot be read as vec4 (float32 inputs of 4k elements only)");
  t.vec4 = true;
}

void Program::broadcast_index(const std::string& fn_name, const Shape& from, const Shape& to) {
  if (from.size() > to.size()) throw Error("broadcast_index: rank of " + shape_str(from) + " exceeds " + shape_str(to));
  size_t r = to.size(), lead = r - from.size();
  auto from_strides = shape_strides(from);
  std::vector<uint32_t> dims(r), strides(r, 0);
  for (size_t d = 0; d < r; ++d) {
    dims[d] = uint32_t(to[d]);
    if (d >= lead && from[d - lead] != 1) strides[d] = uint32_t(from_strides[d - lead]);
  }
  uniform_array(fn_name + "_dims", dims);
  uniform_array(fn_name + "_strides", strides);
  if (!builds_text_) return;
  std::string f = "fn " + fn_name + "(i: u32) -> u32 {\n  var rem = i;\n  var off = 0u;\n";
  if (r > 0)
    f += "  for (var d = " + std::to_string(r - 1) + "i; d >= 0i; d = d - 1i) {\n"
         "    let n = " + fn_name + "_dims(u32(d));\n"
         "    off = off + (rem % n) * " + fn_name + "_strides(u32(d));\n"
         "    rem = rem / n;\n  }\n";
  f += "  return off;\n}\n";
  decls_.append(f);
}

void Program::set_threads(uint64_t n) {
  threads_ = n;
  if (!guard_) {
    guard_ = true;
    uniform("threads", uint32_t(n));
  } else {
    throw Error("program " + name_ + ": set_threads called twice");
  }
}

void Program::keyed(std::string key, const std::vector<const Program*>& recorded, bool check) {
  if (!tensors_.empty() || uniforms_.size() != 1 || !key_.empty())
    throw Error("program " + name_ + ": keyed() comes first, once");
  key_ = std::move(key);
  for (const Program* r : recorded)
    if (r->name_ == name_ && r->wg_ == wg_ && r->key_ == key_) {
      if (check) {
        check_ = r;
        return;
      }
      uniform_fns_ = r->uniform_fns_;
      decls_ = r->decls_;
      body_ = r->body_;
      builds_text_ = false;
      return;
    }
}

std::string Program::accessors(const TensorDecl& t) const {
  const std::string& n = t.name;
  const std::string& v = t.type.value;
  std::string s;
  std::string access = t.output ? "read_write" : "read";
  bool sub_word = t.type.storage_bits < 32;
  // Where element i lies in the buffer: at i, or (pitched) in rows of `len` elements `stride` apart,
  // from `start` on in each.
  std::string at = "i";
  if (t.pitch >= 0) {
    const uint32_t off = uint32_t(t.pitch);
    at = n + "_addr(i)";
    s += "fn " + n + "_addr(i: u32) -> u32 { return (i / P(" + u(off) + ")) * P(" + u(off + 1) + ") + P(" + u(off + 2) +
         ") + i % P(" + u(off) + "); }\n";
  }
  std::string elem;
  if (sub_word) elem = t.output ? "atomic<u32>" : "u32";
  else if (t.type.storage_bits == 64) elem = "vec2<u32>";
  else elem = v;
  // The element's place in the buffer: buf[at], or component at % 4 of vec4 at / 4.
  std::string slot = n + "_buf[" + at + "]";
  if (t.vec4) {
    slot = n + "_buf[(" + at + ") >> 2u][(" + at + ") & 3u]";
    s += "@group(0) @binding(" + std::to_string(t.binding) + ") var<storage, read> " + n + "_buf: array<vec4<" + elem + ">>;\n";
    if (t.pitch >= 0) {  // the four elements need not be neighbours
      const std::string ld = n + "_load(4u * q";
      s += "fn " + n + "_load4(q: u32) -> vec4<" + v + "> { return vec4<" + v + ">(" + ld + "), " + ld + " + 1u), " + ld +
           " + 2u), " + ld + " + 3u)); }\n";
    } else {
      s += "fn " + n + "_load4(q: u32) -> vec4<" + v + "> { return " + n + "_buf[q]; }\n";
    }
  } else {
    s += "@group(0) @binding(" + std::to_string(t.binding) + ") var<storage, " + access + "> " + n + "_buf: array<" + elem + ">;\n";
  }
  s += "alias " + n + "_t = " + v + ";\n";
  // Loading the raw bits of a sub-word element.
  if (sub_word) {
    uint32_t bits = uint32_t(t.type.storage_bits), per = 32 / bits;
    std::string word_index = n + "_buf[i / " + u(per) + "]";
    std::string word = t.output ? "atomicLoad(&" + word_index + ")" : word_index;
    std::string mask = bits == 8 ? "0xffu" : "0xffffu";
    s += "fn " + n + "_bits(i: u32) -> u32 { return (" + word + " >> ((i % " + u(per) + ") * " + u(bits) + ")) & " +
         mask + "; }\n";
    // A whole word of packed elements (elements per * w ... per * w + per - 1, the first in the low
    // bits), for kernels that unpack data themselves (block-quantized weights read as they are stored).
    if (!t.output) s += "fn " + n + "_word(w: u32) -> u32 { return " + n + "_buf[w]; }\n";
  }
  std::string load;
  switch (t.dtype) {
    case DType::Float16: case DType::BFloat16: load = half_from_bits(t.dtype, n + "_bits(i)"); break;
    case DType::Float64: load = "f64_to_f32(" + n + "_buf[" + at + "])"; break;
    case DType::Int8: load = "bitcast<i32>(" + n + "_bits(i) << 24u) >> 24u"; break;
    case DType::Int16: load = "bitcast<i32>(" + n + "_bits(i) << 16u) >> 16u"; break;
    case DType::UInt8: case DType::UInt16: load = n + "_bits(i)"; break;
    case DType::Bool: load = "select(0u, 1u, " + n + "_bits(i) != 0u)"; break;
    default: load = t.type.narrow ? narrow_value(t.dtype, n + "_bits(i)") : slot; break;
  }
  s += "fn " + n + "_load(i: u32) -> " + v + " { return " + load + "; }\n";
  // Raw element access: the element's storage bits, whatever the dtype (vec2<u32> for 64-bit ones, u32
  // otherwise), for kernels that move elements without computing on them (exact for every dtype,
  // float64 and NaN payloads included).
  const bool wide = t.type.storage_bits == 64;
  s += "alias " + n + "_raw_t = " + std::string(wide ? "vec2<u32>" : "u32") + ";\n";
  std::string raw = sub_word ? n + "_bits(i)" : wide ? slot : "bitcast<u32>(" + slot + ")";
  s += "fn " + n + "_raw(i: u32) -> " + n + "_raw_t { return " + raw + "; }\n";
  if (t.output) {
    // The raw store (see _raw) and, for sub-word types, the store of a whole word of packed elements
    // (elements 32 / bits * w ...), for kernels that assemble words themselves. The value store of a
    // sub-word type converts to the element's bits and stores them raw.
    if (sub_word) {
      uint32_t per = 32 / uint32_t(t.type.storage_bits);
      std::string mask = t.type.storage_bits == 8 ? "0xffu" : "0xffffu";
      s += "fn " + n + "_store_raw(i: u32, v: u32) {\n"
           "  let w = i / " + u(per) + ";\n"
           "  let sh = (i % " + u(per) + ") * " + u(t.type.storage_bits) + ";\n"
           "  atomicAnd(&" + n + "_buf[w], ~(" + mask + " << sh));\n"
           "  atomicOr(&" + n + "_buf[w], (v & " + mask + ") << sh);\n}\n";
      s += "fn " + n + "_store_word(w: u32, word: u32) { atomicStore(&" + n + "_buf[w], word); }\n";
      std::string bits;
      switch (t.dtype) {
        case DType::Float16: case DType::BFloat16: bits = half_bits(t.dtype, "v"); break;
        case DType::Int8: case DType::Int16: bits = "bitcast<u32>(v)"; break;
        case DType::Bool: bits = "select(0u, 1u, v != 0u)"; break;
        default: bits = t.type.narrow ? narrow_byte(t.dtype, "v", narrow_store_) : "v"; break;
      }
      s += "fn " + n + "_store(i: u32, v: " + v + ") { " + n + "_store_raw(i, " + bits + "); }\n";
    } else {
      s += "fn " + n + "_store_raw(i: u32, v: " + n + "_raw_t) { " + n + "_buf[" + at + "] = " +
           (wide ? std::string("v") : "bitcast<" + elem + ">(v)") + "; }\n";
      if (t.dtype == DType::Float64) s += "fn " + n + "_store(i: u32, v: f32) { " + n + "_buf[" + at + "] = f32_to_f64(v); }\n";
      else s += "fn " + n + "_store(i: u32, v: " + v + ") { " + n + "_buf[" + at + "] = v; }\n";
    }
  }
  return s;
}

namespace {
// Whether `text` calls the function `fn` (a whole identifier followed by '(').
bool calls(const std::string& text, const std::string& fn) {
  for (size_t pos = text.find(fn + "("); pos != std::string::npos; pos = text.find(fn + "(", pos + 1)) {
    char before = pos ? text[pos - 1] : ' ';
    if (!(std::isalnum(static_cast<unsigned char>(before)) || before == '_')) return true;
  }
  return false;
}
}  // namespace

std::string Program::refused_value_use() const {
  for (const auto& t : tensors_) {
    if (t.type.exact && (!t.type.narrow || narrow_admitted_)) continue;
    for (const std::string& fn : {t.name + "_load", t.name + "_store"})
      if (calls(decls_.str(), fn) || calls(body_.str(), fn)) {
        const std::string what = "computes on " + std::string(dtype_name(t.dtype)) + " values (tensor '" + t.name + "')";
        return t.type.narrow ? what + ", which only Cast, CastLike, QuantizeLinear and DequantizeLinear do on the GPU"
                             : what + ", which the GPU would round to float32";
      }
  }
  return "";
}

std::string Program::source() const {
  size_t vec4s = (uniforms_.size() + 3) / 4;
  std::string s = "// onnxgpu program: " + name_ + "\n";
  s += "struct Params { v: array<vec4<u32>, " + std::to_string(vec4s) + "> }\n";
  s += "@group(0) @binding(0) var<uniform> params: Params;\n";
  s += "@group(0) @binding(1) var<storage, read_write> status_buf: array<atomic<u32>>;\n";
  s += "const STATUS_WORDS: u32 = " + u(kStatusWords) + ";\n";
  s += kPrelude;
  s += family_helpers("wide");
  std::set<std::string> families{"f32"};  // conversions through f32 are always available
  for (const auto& t : tensors_) families.insert(t.type.family);
  for (const auto& f : families) s += family_helpers(f);
  std::set<DType> narrow;
  for (const auto& t : tensors_)
    if (t.type.narrow && narrow.insert(t.dtype).second) s += narrow_helpers(t.dtype);
  for (const auto& t : tensors_) s += accessors(t);
  s += uniform_fns_.str();
  std::map<std::string, std::string> fam;
  for (const auto& t : tensors_) fam[t.name] = t.type.family;
  s += substitute(decls_.str(), fam);
  s += "@compute @workgroup_size(" + std::to_string(wg_) + ")\n";
  s += "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
       "        @builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {\n";
  s += "  _ = &params;\n  _ = &status_buf;\n";
  for (const auto& t : tensors_) s += "  _ = &" + t.name + "_buf;\n";
  s += "  let wg = wid.x + wid.y * nwg.x;\n";
  s += "  let gi = wg * " + u(wg_) + " + lid;\n";
  if (guard_) s += "  if (gi >= threads()) { return; }\n";
  s += substitute(body_.str(), fam);
  s += "}\n";
  return s;
}

std::vector<uint32_t> Program::uniform_data() const { return uniforms_; }

bool Program::same_source(const Program& o) const {
  // source() is a function of these (and of constant texts); a tensor's accessors of its name,
  // binding, direction, rank and type (sizes come from uniforms).
  if (name_ != o.name_ || wg_ != o.wg_ || guard_ != o.guard_ || narrow_store_ != o.narrow_store_ ||
      uniforms_.size() != o.uniforms_.size() ||
      tensors_.size() != o.tensors_.size() || uniform_fns_ != o.uniform_fns_ || decls_ != o.decls_ || body_ != o.body_)
    return false;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorDecl &a = tensors_[i], &b = o.tensors_[i];
    if (a.name != b.name || a.dtype != b.dtype || a.shape.size() != b.shape.size() || a.output != b.output ||
        a.binding != b.binding || a.type.family != b.type.family || a.pitch != b.pitch || a.vec4 != b.vec4)
      return false;
  }
  return true;
}

std::string substitute(std::string text, const std::map<std::string, std::string>& values) {
  std::vector<std::pair<std::string, std::string>> kv(values.begin(), values.end());
  std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [k, v] : kv) {
    std::string key = k[0] == '$' ? k : "$" + k;
    for (size_t pos = 0; (pos = text.find(key, pos)) != std::string::npos;) {
      text.replace(pos, key.size(), v);
      pos += v.size();
    }
  }
  return text;
}

}  // namespace onnxgpu::webgpu::shader
