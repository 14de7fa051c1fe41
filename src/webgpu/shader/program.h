// A compute program under construction: a kernel declares its tensors and uniforms, writes its body in
// WGSL against the generated accessors, and gets back the full WGSL source plus the uniform data.
//
// For a tensor declared as `x` the program generates (whatever x's dtype, INT64 included):
//   alias x_t = <value type>;          the type x's values are computed in (see shader/types.h)
//   fn x_load(i: u32) -> x_t           element i (row-major linear index)
//   fn x_store(i: u32, v: x_t)         outputs only
//   alias x_raw_t; fn x_raw(i) -> x_raw_t; fn x_store_raw(i, v: x_raw_t)
//                                      the element's storage bits (vec2<u32> for 64-bit dtypes, u32
//                                      otherwise): moves without computing, exact for every dtype
//   fn x_store_word(w: u32, word: u32)  sub-word outputs: a whole word of packed elements
//   fn x_word(w: u32) -> u32            sub-word inputs: a whole word of packed elements (element
//                                      (32 / bits) * w + j in bits j * bits ...; bits past the last
//                                      element are unspecified)
//   const x_rank: u32;  fn x_shape(d: u32) -> u32;  fn x_stride(d: u32) -> u32;  fn x_numel() -> u32
//   fn x_addr(i: u32) -> u32           a pitched tensor's element i in its buffer (see pitch())
// and the arithmetic helpers of x's family: add_<fam>, lt_<fam>, to_i64_<fam>, from_f32_<fam> ...
// `$x` in the body is replaced with x's family name, so `add_$x(a, b)` is add_i64 for INT64.
//
// The WGSL text depends only on dtypes, ranks and attributes, never on sizes: sizes go into uniforms,
// so one pipeline serves every input-shape signature.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnxgpu/int64_policy.h"
#include "onnxgpu/tensor.h"
#include "webgpu/shader/narrow.h"
#include "webgpu/shader/types.h"

namespace onnxgpu::webgpu::shader {

enum : uint32_t { kFlagIndex = 1, kFlagDivZero = 2, kFlagOverflow = 4 };
// Words of a node's status record in the status buffer: the flags, whether a value was kept, and the
// value (the first out-of-range index an invocation kept, as int64 lo / hi words).
inline constexpr uint32_t kStatusWords = 4;

struct TensorDecl {
  std::string name;
  DType dtype;
  Shape shape;
  bool output;
  TypeInfo type;
  uint32_t binding;
  // A pitched tensor (Program::pitch): the uniform index of its row length; its row stride and start follow.
  int pitch = -1;
  // Bound as an array of vec4 (Program::vec4): x_load4 reads four elements with one 16-byte load.
  bool vec4 = false;
};

class Program {
 public:
  Program(std::string name, const Int64Policy& policy, uint32_t workgroup_size = 256);

  // Tensors, in binding order. Returns the family name of the tensor's type.
  const std::string& input(const std::string& name, DType dtype, const Shape& shape);
  const std::string& output(const std::string& name, DType dtype, const Shape& shape);

  // Uniforms: `name` becomes a WGSL function returning the value (u32, i32 or f32).
  void uniform(const std::string& name, uint32_t value);
  void uniform_i32(const std::string& name, int32_t value);
  void uniform_f32(const std::string& name, float value);
  // An int64: `name()` returns it as a w64, the type of to_i64_<fam> (for the w64_ helpers and
  // from_i64_<fam>).
  void uniform_i64(const std::string& name, int64_t value);
  // One element of tensor `like` (declared before) as its storage bits: `name()` returns like_raw_t,
  // for like_store_raw. `value` holds one element of like's dtype (no element: zero bits); a narrowed
  // int64 keeps its low word, as its buffer does.
  void uniform_raw(const std::string& name, const std::string& like, const Tensor& value);
  // An array: `name(i)` returns element i (u32).
  void uniform_array(const std::string& name, const std::vector<uint32_t>& values);

  // Tensor `index` (in declaration order) lies in its buffer in rows with gaps: element i (row-major
  // linear index) is at (i / len) * stride + start + i % len. A buffer with spare capacity along an axis
  // (a KV cache appended in place, runtime/resident.h) holds its tensors so (start: where in each row the
  // tensor begins, past the rows before it); the runtime pitches the bindings that lie in one after the
  // kernel has made its program, so no kernel knows of it. Called again it sets new values. 32- and
  // 64-bit elements only.
  void pitch(size_t index, uint32_t len, uint32_t stride, uint32_t start = 0);

  // Input `index` (float32, its element count a multiple of 4) is bound as an array of vec4<f32>, and
  // `fn x_load4(q: u32) -> vec4<f32>` returns its elements 4q ... 4q + 3 in one 16-byte load: the
  // bandwidth-bound kernels (a decode step's products) need the wide loads that scalar loads, each
  // checked on its own, do not merge into. x_load and x_raw keep working on single elements, and a
  // pitched tensor (pitch()) reads its four elements one by one.
  void vec4(size_t index);

  // The kernel computes on values of the narrow types (shader/narrow.h: Cast, QuantizeLinear,
  // DequantizeLinear): their x_load and x_store convert between the stored byte and the family's value,
  // small-float outputs as `mode` says. A program that loads or stores narrow values without this is
  // refused (refused_value_use), as the ONNX schemas admit these types only in those ops.
  void admit_narrow(NarrowStore mode = {}) {
    narrow_admitted_ = true;
    narrow_store_ = mode;
  }

  // Broadcast index: adds `fn <fn_name>(i: u32) -> u32`, the element of `from` that broadcasts to
  // element i of a tensor of shape `to` (numpy rules).
  void broadcast_index(const std::string& fn_name, const Shape& from, const Shape& to);

  // Module-scope WGSL (helper functions, workgroup variables, constants).
  void declare(const std::string& wgsl) {
    if (builds_text_) decls_.append(wgsl + "\n");
  }
  // The body of main(). Available there: `gi` (linear invocation index), `lid` (local index),
  // `wg` (linear workgroup index) and `threads()` (the thread count given to set_threads).
  void body(const std::string& wgsl) {
    if (builds_text_) body_.append(wgsl + "\n");
  }

  // A program whose WGSL is a function of `key` (every choice it depends on beyond the names, dtypes
  // and ranks of its tensors and uniforms, in declaration order) and of its name. Called before
  // anything is declared. A kernel called again for other sizes (a refresh of a recorded plan,
  // runtime/refresh.h) passes the recorded programs (GpuKernelContext::needs_wgsl): one of the same
  // name and key gives this one its text, and builds_text() turns false: the kernel declares its
  // tensors and uniforms as always (their values are this call's) and need not build its WGSL, which
  // declare() and body() then ignore. (The caller still compares the whole programs: same_source.)
  // With `check`, the text is built all the same and the match kept (checked_against), for the caller
  // to compare the texts: a key that misses a choice fails loudly in the tests.
  void keyed(std::string key, const std::vector<const Program*>& recorded, bool check);
  const std::string& key() const { return key_; }
  bool builds_text() const { return builds_text_; }
  const Program* checked_against() const { return check_; }
  void forget_check() { check_ = nullptr; }
  // The same WGSL text of its own (uniform functions, declarations, body) as `o`.
  bool same_text(const Program& o) const {
    return name_ == o.name_ && wg_ == o.wg_ && uniform_fns_ == o.uniform_fns_ && decls_ == o.decls_ && body_ == o.body_;
  }
  // One invocation per element of [0, n): main() returns early for gi >= n.
  void set_threads(uint64_t n);

  uint32_t workgroup_size() const { return wg_; }
  uint64_t threads() const { return threads_; }
  const std::string& name() const { return name_; }
  const std::vector<TensorDecl>& tensors() const { return tensors_; }

  // Why the kernel may not run on the GPU as written, or "": its own WGSL (declarations and body) loads
  // or stores the values of a tensor that its value type cannot represent (TypeInfo::exact: float64,
  // which would silently round), or of a narrow type it has not admitted (admit_narrow). Moving such
  // elements whole (x_raw, x_store_raw) is exact and allowed.
  std::string refused_value_use() const;

  std::string source() const;                 // the whole WGSL module
  // Whether two programs have the same source(), told without assembling it.
  bool same_source(const Program& other) const;
  // Whether the two hold their texts in the same memory (copies of one program): then same_source
  // compares them at once.
  bool shares_text(const Program& o) const {
    return uniform_fns_.shares(o.uniform_fns_) && decls_.shares(o.decls_) && body_.shares(o.body_);
  }
  std::vector<uint32_t> uniform_data() const;  // slot 0 is the status slot, set by the runtime

 private:
  const std::string& add_tensor(const std::string& name, DType dtype, const Shape& shape, bool output);
  uint32_t alloc(uint32_t n);
  std::string accessors(const TensorDecl& t) const;

  std::string name_;
  Int64Policy policy_;
  uint32_t wg_;
  uint64_t threads_ = 0;
  bool guard_ = false;
  bool narrow_admitted_ = false;  // admit_narrow
  NarrowStore narrow_store_;
  std::vector<TensorDecl> tensors_;
  std::vector<uint32_t> uniforms_{0};  // slot 0: status slot of this dispatch
  // WGSL text shared between copies of a program until one appends (a refresh copies a recorded
  // program for every layer's kernel and compares it with the one recorded: both cheap so).
  class Text {
   public:
    void append(const std::string& t) {
      if (!p_) p_ = std::make_shared<std::string>();
      else if (p_.use_count() > 1) p_ = std::make_shared<std::string>(*p_);
      *p_ += t;
    }
    const std::string& str() const {
      static const std::string empty;
      return p_ ? *p_ : empty;
    }
    bool operator==(const Text& o) const { return p_ == o.p_ || str() == o.str(); }
    bool shares(const Text& o) const { return p_ == o.p_; }
    bool operator!=(const Text& o) const { return !(*this == o); }

   private:
    std::shared_ptr<std::string> p_;
  };
  Text uniform_fns_;
  Text decls_, body_;
  std::string key_;                 // keyed()
  bool builds_text_ = true;
  const Program* check_ = nullptr;  // keyed() with check: the recorded program of the same key
};

// The WGSL statement that copies element `si` of tensor `src` to element `di` of output `dst`, bit for
// bit, whatever their (equal) dtype.
inline std::string move_element(const std::string& dst, const std::string& di, const std::string& src,
                                const std::string& si) {
  return dst + "_store_raw(" + di + ", " + src + "_raw(" + si + "));";
}

// Replaces every `$name` in text with the given value (longest names first).
std::string substitute(std::string text, const std::map<std::string, std::string>& values);

// WGSL of the f32 value `v` as a tensor of `dtype` stores it and loads it back: float16 and bfloat16
// rounded by the stores' and loads' own conversions; `v` itself for the other types.
std::string as_stored(DType dtype, const std::string& v);

}  // namespace onnxgpu::webgpu::shader
