// The case table of tests/unit/test_gpu_ops.cpp (see gpu_op_cases.h). Every op with a GPU kernel needs
// at least one case here; write the case with the op's ONNX semantics in mind (valid indices, no integer
// zero divisors, values in a range where the CPU and GPU definitions agree) and say why in `note` when a
// case narrows the values or the dtypes.
#include "gpu_op_cases.h"

#include <cmath>
#include <limits>
#include <set>

#include "onnxgpu/dtype.h"

namespace onnxgpu::gpu_op_cases {

namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();

const std::vector<DType> kFloats = {DType::Float32, DType::Float16, DType::Float64};
const std::vector<DType> kInts = {DType::Int8,  DType::UInt8,  DType::Int16, DType::UInt16,
                                  DType::Int32, DType::UInt32, DType::Int64, DType::UInt64};

// ---- Values ----------------------------------------------------------------------------------------

int64_t uniform(Rng& r, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(r); }
double uniform_real(Rng& r, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(r); }

// One "wide" value of an integer type, as the 64-bit pattern sign- or zero-extended.
template <class T>
T wide_int(Rng& r) {
  using L = std::numeric_limits<T>;
  constexpr bool is64 = sizeof(T) == 8;
  constexpr bool is32 = sizeof(T) == 4;
  int k = int(uniform(r, 0, 9));
  if constexpr (std::is_signed_v<T>) {
    if (k <= 2) return T(uniform(r, -20, 20));
    if constexpr (is64) {
      int64_t sign = (r() & 1) ? -1 : 1;
      if (k == 3) return T(sign * uniform(r, int64_t(1) << 32, int64_t(1) << 34));   // beyond 2^32
      if (k == 4) return T(sign * uniform(r, int64_t(1) << 40, int64_t(1) << 52));
      if (k == 5) return T(sign * ((int64_t(1) << 62) + uniform(r, -1000, 1000)));   // near INT64_MAX/2
      if (k == 6) {
        static const int64_t b[] = {kI64Max, kI64Min, 2147483647, 2147483648LL, -2147483648LL, -2147483649LL,
                                    4294967295LL, 4294967296LL, -4294967296LL, -4294967295LL, 4294967297LL, kI64Max - 1,
                                    kI64Min + 1};
        return T(b[uniform(r, 0, std::size(b) - 1)]);
      }
      return T(r());
    } else {
      if (k == 3 || k == 4) return T(L::max() - uniform(r, 0, 20));
      if (k == 5 || k == 6) return T(L::min() + uniform(r, 0, 20));
      if (is32 && k == 7) return T((r() & 1) ? 65536 : -65537);
      return T(r());
    }
  } else {
    if (k <= 2) return T(uniform(r, 0, 20));
    if constexpr (is64) {
      if (k == 3) return T(uniform(r, int64_t(1) << 32, int64_t(1) << 34));
      if (k == 4) return T(uniform(r, int64_t(1) << 40, int64_t(1) << 52));
      if (k == 5) return T((uint64_t(1) << 63) + uint64_t(uniform(r, -1000, 1000)));
      if (k == 6) {
        static const uint64_t b[] = {~uint64_t(0), ~uint64_t(0) - 1, 2147483648ULL, 4294967295ULL, 4294967296ULL,
                                     4294967297ULL, (uint64_t(1) << 63) - 1, uint64_t(1) << 63};
        return T(b[uniform(r, 0, std::size(b) - 1)]);
      }
      return T(r());
    } else {
      if (k == 3 || k == 4) return T(L::max() - T(uniform(r, 0, 20)));
      if (is32 && k == 5) return T((uint32_t(1) << 31) + uint32_t(uniform(r, -20, 20)));
      return T(r());
    }
  }
}

// A few values per type that collide often and sit on both sides of the 32-bit word boundary.
template <class T>
T tricky(Rng& r) {
  if constexpr (std::is_same_v<T, bool>) {
    return (r() & 1) != 0;
  } else if constexpr (is_float_v<T>) {
    static const double v[] = {-2, -1, -0.5, 0, 0.5, 1, 2, 3};
    return T(float(v[uniform(r, 0, 7)]));
  } else if constexpr (sizeof(T) == 8 && std::is_signed_v<T>) {
    static const int64_t v[] = {0, 1, -1, 4294967295LL, 4294967296LL, -4294967296LL, kI64Max, kI64Min, 2147483648LL, 7};
    return T(v[uniform(r, 0, 9)]);
  } else if constexpr (sizeof(T) == 8) {
    static const uint64_t v[] = {0, 1, 4294967295ULL, 4294967296ULL, ~uint64_t(0), uint64_t(1) << 63, 2147483648ULL, 7};
    return T(v[uniform(r, 0, 7)]);
  } else {
    using L = std::numeric_limits<T>;
    const T v[] = {T(0), T(1), T(L::max()), T(L::min()), T(7), T(L::max() - 1), std::is_signed_v<T> ? T(-1) : T(2)};
    return v[uniform(r, 0, 6)];
  }
}

template <class T>
T one_value(Dom dom, Rng& r) {
  if constexpr (std::is_same_v<T, bool>) {
    return (r() & 1) != 0;
  } else if constexpr (is_float_v<T>) {
    double v = 0;
    switch (dom) {
      case Dom::Wide: case Dom::Small: v = uniform_real(r, -3, 3); break;
      case Dom::NonZero: v = uniform_real(r, 0.5, 3) * ((r() & 1) ? -1 : 1); break;
      case Dom::Positive: v = uniform_real(r, 0.1, 3); break;
      case Dom::SmallNonNeg: v = uniform_real(r, 0, 3); break;
      case Dom::Unit: v = uniform_real(r, -0.95, 0.95); break;
      case Dom::GeOne: v = uniform_real(r, 1.05, 3); break;
      case Dom::Tricky: return tricky<T>(r);
      case Dom::Special: {
        int k = int(uniform(r, 0, 5));
        if (k == 0) v = std::numeric_limits<double>::quiet_NaN();
        else if (k == 1) v = std::numeric_limits<double>::infinity();
        else if (k == 2) v = -std::numeric_limits<double>::infinity();
        else v = uniform_real(r, -3, 3);
        break;
      }
    }
    return T(float(v));  // float-representable, so float64 inputs survive the GPU's f32 arithmetic
  } else {
    switch (dom) {
      case Dom::Wide: return wide_int<T>(r);
      case Dom::NonZero:
        for (;;) if (T v = wide_int<T>(r); v != T(0)) return v;
      case Dom::Positive:
        for (;;) {
          T v = wide_int<T>(r);
          if constexpr (std::is_signed_v<T>) {
            if (v < 0 && v != std::numeric_limits<T>::min()) v = T(-v);
          }
          if (v > T(0)) return v;
        }
      case Dom::Small: return std::is_signed_v<T> ? T(uniform(r, -4, 4)) : T(uniform(r, 0, 4));
      case Dom::SmallNonNeg: return T(uniform(r, 0, 5));
      case Dom::Tricky: return tricky<T>(r);
      default: return wide_int<T>(r);
    }
  }
}

// ---- Attributes and tensors ---------------------------------------------------------------------------

onnx::AttributeProto* attr(onnx::NodeProto& n, const std::string& name, onnx::AttributeProto_AttributeType t) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(t);
  return a;
}

Tensor i64v(std::vector<int64_t> v) { Shape s{int64_t(v.size())}; return Tensor::from_vector<int64_t>(s, v); }

// Uniform integers in [lo, hi] in the input's dtype (integral values for float dtypes).
Gen ints_in(int64_t lo, int64_t hi) {
  return [lo, hi](DType dt, const Shape& s, Rng& r) {
    std::vector<int64_t> v(static_cast<size_t>(shape_numel(s)));
    for (auto& x : v) x = uniform(r, lo, hi);
    return Tensor::from_vector<int64_t>(s, v).cast(dt);
  };
}

// ints_in(lo, hi) with element `at` replaced by `bad` (an out-of-range index).
Gen ints_with(int64_t lo, int64_t hi, int64_t at, int64_t bad) {
  return [lo, hi, at, bad](DType dt, const Shape& s, Rng& r) {
    Tensor t = ints_in(lo, hi)(DType::Int64, s, r);
    t.data<int64_t>()[at] = bad;
    return t.cast(dt);
  };
}

// Uniform reals in [lo, hi] in the input's dtype.
Gen reals_in(double lo, double hi) {
  return [lo, hi](DType dt, const Shape& s, Rng& r) {
    std::vector<double> v(static_cast<size_t>(shape_numel(s)));
    for (auto& x : v) x = uniform_real(r, lo, hi);
    return Tensor::from_vector<double>(s, v).cast(dt);
  };
}

// Fixed values (cast to the input's dtype), whatever the run.
Gen fixed(std::vector<int64_t> v) {
  return [v](DType dt, const Shape& s, Rng&) { return Tensor::from_vector<int64_t>(s, v).cast(dt); };
}

// A value of the varied dtype per dtype, as a one-element tensor of shape s.
Tensor scalar_of(DType dt, const Shape& s, int64_t i64, uint64_t u64, int64_t i32, int64_t small, double f, bool b) {
  Tensor t(dt, s);
  visit_dtype(dt, [&]<class T>() {
    T v;
    if constexpr (std::is_same_v<T, bool>) v = b;
    else if constexpr (is_float_v<T>) v = T(float(f));
    else if constexpr (std::is_same_v<T, int64_t>) v = i64;
    else if constexpr (std::is_same_v<T, uint64_t>) v = u64;
    else if constexpr (sizeof(T) == 4) v = T(i32);
    else v = T(small);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = v;
  });
  return t;
}

// ---- The case builder -------------------------------------------------------------------------------

struct B {
  Case c;
  std::vector<std::function<void(onnx::NodeProto&, DType)>> attr_fns;

  explicit B(std::string op, std::string variant = "") {
    c.op = std::move(op);
    c.variant = std::move(variant);
  }
  B& tp(std::string p) { c.type_param = std::move(p); return *this; }
  B& domain(std::string d) { c.domain = std::move(d); return *this; }
  B& ms() { return domain("com.microsoft"); }  // ONNX Runtime's contrib domain
  B& opset(int v) { c.opset = v; return *this; }
  // A graph input of the varied dtype.
  B& x(std::string name, Shape s, Dom d = Dom::Wide) { c.inputs.push_back({std::move(name), std::move(s), std::nullopt, d, {}, false, {}}); return *this; }
  B& xg(std::string name, Shape s, Gen g) { c.inputs.push_back({std::move(name), std::move(s), std::nullopt, Dom::Wide, std::move(g), false, {}}); return *this; }
  // A graph input of a fixed dtype.
  B& f(std::string name, DType t, Shape s, Dom d = Dom::Wide) { c.inputs.push_back({std::move(name), std::move(s), t, d, {}, false, {}}); return *this; }
  B& fg(std::string name, DType t, Shape s, Gen g) { c.inputs.push_back({std::move(name), std::move(s), t, Dom::Wide, std::move(g), false, {}}); return *this; }
  // An initializer of a fixed dtype.
  B& k(std::string name, Tensor t) {
    Shape s = t.shape();
    DType dt = t.dtype();
    c.inputs.push_back({std::move(name), s, dt, Dom::Wide, [t](DType, const Shape&, Rng&) { return t; }, true, {}});
    return *this;
  }
  // An initializer of the varied dtype.
  B& kx(std::string name, Shape s, Gen g) { c.inputs.push_back({std::move(name), std::move(s), std::nullopt, Dom::Wide, std::move(g), true, {}}); return *this; }
  B& kxd(std::string name, Shape s, Dom d) { c.inputs.push_back({std::move(name), std::move(s), std::nullopt, d, {}, true, {}}); return *this; }
  // An omitted optional input.
  B& none() { c.inputs.push_back({"", {}, DType::Float32, Dom::Wide, {}, false, {}}); return *this; }

  B& a(std::function<void(onnx::NodeProto&, DType)> fn) { attr_fns.push_back(std::move(fn)); return *this; }
  B& i(const std::string& name, int64_t v) {
    return a([name, v](onnx::NodeProto& n, DType) { attr(n, name, onnx::AttributeProto_AttributeType_INT)->set_i(v); });
  }
  B& fl(const std::string& name, float v) {
    return a([name, v](onnx::NodeProto& n, DType) { attr(n, name, onnx::AttributeProto_AttributeType_FLOAT)->set_f(v); });
  }
  B& s(const std::string& name, std::string v) {
    return a([name, v](onnx::NodeProto& n, DType) { attr(n, name, onnx::AttributeProto_AttributeType_STRING)->set_s(v); });
  }
  B& ints(const std::string& name, std::vector<int64_t> v) {
    return a([name, v](onnx::NodeProto& n, DType) {
      auto* p = attr(n, name, onnx::AttributeProto_AttributeType_INTS);
      for (int64_t x : v) p->add_ints(x);
    });
  }
  // The varied dtype as an int attribute (Cast 'to', EyeLike 'dtype').
  B& dtype_attr(const std::string& name) {
    return a([name](onnx::NodeProto& n, DType dt) { attr(n, name, onnx::AttributeProto_AttributeType_INT)->set_i(int64_t(dt)); });
  }
  B& outs(int n) { c.outputs = n; return *this; }
  B& omit_outputs(std::vector<int> v) { c.omitted_outputs = std::move(v); return *this; }
  B& tol(double t) { c.tol = t; return *this; }
  B& atol(double t) { c.atol = t; return *this; }
  B& note(std::string s) { c.note = std::move(s); return *this; }
  B& only(std::vector<DType> v) { c.only = std::move(v); return *this; }
  B& quick(std::vector<DType> v = {DType::Float32, DType::Int64, DType::UInt64}) { c.quick = std::move(v); return *this; }
  B& without_schema(std::vector<DType> v) { c.dtypes_without_schema = std::move(v); return *this; }
  B& fold() { c.may_fold = true; return *this; }
  B& extremes(Extremes e, std::string why) { c.extremes = e; c.extremes_note = std::move(why); return *this; }
  // The last input's second value set: `g` (a valid one).
  B& second(Gen g) {
    c.inputs.back().second = std::move(g);
    return *this;
  }
  // The last input's second value set: `g`; the case expects that run to fail.
  B& second_fails(Gen g) {
    c.inputs.back().second = std::move(g);
    c.second_run_fails = true;
    return *this;
  }

  operator Case() const {  // NOLINT
    Case r = c;
    auto fns = attr_fns;
    r.attrs = [fns](onnx::NodeProto& n, DType dt) {
      for (const auto& fn : fns) fn(n, dt);
    };
    return r;
  }
};

const Shape S3{2, 3, 4};  // the usual data shape
const Shape SB{3, 1};     // broadcasts against S3

// ---- Op-specific value generators ------------------------------------------------------------------

// Cast inputs: values that every target type can hold (out-of-range float -> int is implementation-defined).
Gen cast_input(DType to) {
  return [to](DType from, const Shape& s, Rng& r) {
    if (to == DType::Bool) return make_values(from, s, Dom::Tricky, r);  // zeros and non-zeros
    if (!dtype_is_float(from) || !dtype_is_integer(to)) return make_values(from, s, Dom::Wide, r);
    // float -> integer: in the target's range; beyond 2^32 (exact multiples of 2^20) for 64-bit targets.
    double lo = 0, hi = 0;
    bool big = false;
    switch (to) {
      case DType::Int8: lo = -100; hi = 100; break;
      case DType::UInt8: lo = 0; hi = 250; break;
      case DType::Int16: lo = -30000; hi = 30000; break;
      case DType::UInt16: lo = 0; hi = 60000; break;
      case DType::Int32: lo = -2.0e9; hi = 2.0e9; break;
      case DType::UInt32: lo = 0; hi = 4.0e9; break;
      case DType::Int64: lo = -3; hi = 3; big = true; break;
      case DType::UInt64: lo = 0; hi = 3; big = true; break;
      default: break;
    }
    if (from == DType::Float16) hi = std::min(hi, 60000.0), lo = std::max(lo, -60000.0);
    Tensor t(from, s);
    visit_dtype(from, [&]<class T>() {
      if constexpr (is_float_v<T>) {
        for (int64_t i = 0; i < t.numel(); ++i) {
          double v = uniform_real(r, lo, hi);
          if (big && from != DType::Float16 && (i % 2 == 1)) v = double(uniform(r, 1, 1 << 22)) * 1048576.0 * (lo < 0 && (r() & 1) ? -1 : 1);
          t.data<T>()[i] = T(float(v));
        }
      }
    });
    return t;
  };
}

// Clip bounds of the varied dtype (lo < hi, inside the Wide values' range).
Tensor clip_bound(DType dt, bool hi) {
  switch (dt) {
    case DType::Int64: return scalar_of(dt, {}, hi ? (int64_t(1) << 40) + 3 : -(int64_t(1) << 33) - 5, 0, 0, 0, 0, false);
    case DType::UInt64: return scalar_of(dt, {}, 0, hi ? (uint64_t(1) << 63) + 9 : (uint64_t(1) << 32) + 7, 0, 0, 0, false);
    case DType::Int32: return scalar_of(dt, {}, 0, 0, hi ? (1 << 30) : -(1 << 30), 0, 0, false);
    case DType::UInt32: return scalar_of(dt, {}, 0, 0, hi ? int64_t(1) << 31 : 1000, 0, 0, false);
    case DType::Int8: return scalar_of(dt, {}, 0, 0, 0, hi ? 60 : -50, 0, false);
    case DType::UInt8: return scalar_of(dt, {}, 0, 0, 0, hi ? 200 : 20, 0, false);
    case DType::Int16: return scalar_of(dt, {}, 0, 0, 0, hi ? 2000 : -1000, 0, false);
    case DType::UInt16: return scalar_of(dt, {}, 0, 0, 0, hi ? 40000 : 100, 0, false);
    default: return scalar_of(dt, {}, 0, 0, 0, 0, hi ? 1.5 : -1.0, false);
  }
}
Gen clip_gen(bool hi) {
  return [hi](DType dt, const Shape& s, Rng&) { return clip_bound(dt, hi).reshaped(s); };
}

// Range: start, limit, delta per dtype: 7 or 8 elements, beyond 2^32 for int64.
Gen range_gen(int which) {
  return [which](DType dt, const Shape& s, Rng&) {
    double start = -1.5, delta = 0.375;
    int64_t istart = 0, idelta = 0;
    if (dt == DType::Int64) istart = (int64_t(1) << 40) + 3, idelta = -((int64_t(1) << 33) + 1);
    if (dt == DType::Int32) istart = -(int64_t(1) << 30), idelta = int64_t(1) << 27;
    if (dt == DType::Int16) istart = -1000, idelta = 300;
    Tensor t(dt, s);
    visit_dtype(dt, [&]<class T>() {
      T v;
      if constexpr (is_float_v<T>) v = T(float(which == 0 ? start : which == 1 ? start + 7.5 * delta : delta));
      else v = T(which == 0 ? istart : which == 1 ? istart + 7 * idelta + idelta / 2 : idelta);
      t.data<T>()[0] = v;
    });
    return t;
  };
}

// Scatter indices along axis 0 of a [rows, ...] tensor: distinct rows per column (no write races),
// negative half the time.
Gen distinct_rows(int64_t rows) {
  return [rows](DType dt, const Shape& s, Rng& r) {
    int64_t n = s[0], cols = shape_numel(s) / n;
    std::vector<int64_t> v(static_cast<size_t>(shape_numel(s)));
    for (int64_t c = 0; c < cols; ++c) {
      std::vector<int64_t> perm(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) perm[size_t(i)] = i;
      std::shuffle(perm.begin(), perm.end(), r);
      for (int64_t i = 0; i < n; ++i) v[size_t(i * cols + c)] = perm[size_t(i)] - ((r() & 1) ? rows : 0);
    }
    return Tensor::from_vector<int64_t>(s, v).cast(dt);
  };
}

// ScatterND indices [n, 1]: distinct rows of a [rows, ...] tensor.
Gen distinct_nd(int64_t rows) {
  return [rows](DType dt, const Shape& s, Rng& r) {
    std::vector<int64_t> perm(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) perm[size_t(i)] = i - ((r() & 1) ? rows : 0);
    std::shuffle(perm.begin(), perm.end(), r);
    perm.resize(size_t(s[0]));
    return Tensor::from_vector<int64_t>(s, perm).cast(dt);
  };
}

// GatherND indices [..., k] into dims `dims`, each coordinate in [-d, d-1].
Gen nd_indices(std::vector<int64_t> dims) {
  return [dims](DType dt, const Shape& s, Rng& r) {
    std::vector<int64_t> v(static_cast<size_t>(shape_numel(s)));
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t d = dims[i % dims.size()];
      v[i] = uniform(r, -d, d - 1);
    }
    return Tensor::from_vector<int64_t>(s, v).cast(dt);
  };
}

// Slice parameters in the varied index dtype, with the dtype's own INT_MAX/INT_MIN sentinels.
Gen slice_param(std::vector<int64_t> v) {
  return [v](DType dt, const Shape& s, Rng&) {
    std::vector<int64_t> w = v;
    if (dt == DType::Int32)
      for (auto& x : w) x = x == kI64Max ? kI32Max : x == kI64Min ? kI32Min : x;
    return Tensor::from_vector<int64_t>(s, w).cast(dt);
  };
}

// ---- The table --------------------------------------------------------------------------------------

std::vector<Case> build() {
  std::vector<Case> v;
  std::string family;  // the group a case runs in (one gtest per group)
  auto add = [&](const Case& c) {
    v.push_back(c);
    v.back().family = family;
  };

  // -- Elementwise: float math ----------------------------------------------------------------------
  family = "elementwise_unary";
  const std::pair<const char*, Dom> math[] = {
      {"Exp", Dom::Wide},      {"Log", Dom::Positive},  {"Sqrt", Dom::Positive}, {"Reciprocal", Dom::NonZero},
      {"Sin", Dom::Wide},      {"Cos", Dom::Wide},      {"Tan", Dom::Unit},      {"Asin", Dom::Unit},
      {"Acos", Dom::Unit},     {"Atan", Dom::Wide},     {"Sinh", Dom::Wide},     {"Cosh", Dom::Wide},
      {"Asinh", Dom::Wide},    {"Acosh", Dom::GeOne},   {"Atanh", Dom::Unit},    {"Tanh", Dom::Wide},
      {"Floor", Dom::Wide},    {"Ceil", Dom::Wide},     {"Sigmoid", Dom::Wide},  {"Softplus", Dom::Wide},
      {"Softsign", Dom::Wide}, {"HardSwish", Dom::Wide}, {"Erf", Dom::Wide},
  };
  for (const auto& [op, dom] : math) {
    B b(op);
    b.x("X", S3, dom).tol(10).note("transcendental functions in f32: 10x tolerance");
    add(b);
  }
  add(B("Round").xg("X", S3, [](DType dt, const Shape& s, Rng& r) {
    // Halves (ties to even) among other values.
    std::vector<int64_t> h(static_cast<size_t>(shape_numel(s)));
    for (auto& x : h) x = uniform(r, -7, 7);
    Tensor t = Tensor::from_vector<int64_t>(s, h).cast(DType::Float64);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = i % 3 == 2 ? uniform_real(r, -3, 3) : t.data<double>()[i] / 2;
    return t.cast(DType::Float32).cast(dt);
  }));
  add(B("Abs").x("X", S3));
  add(B("Neg").x("X", S3));
  add(B("Sign").x("X", S3));
  add(B("Relu").x("X", S3));
  add(B("Not").x("X", S3));
  add(B("BitwiseNot").opset(18).without_schema(kInts).x("X", S3).note("BitwiseNot-18 (no schema in ONNX 1.12): dtypes from the opset-18 spec"));
  add(B("IsNaN").tp("T1").x("X", S3, Dom::Special));
  add(B("IsInf").tp("T1").x("X", S3, Dom::Special));
  add(B("IsInf", "negative only").tp("T1").x("X", S3, Dom::Special).i("detect_positive", 0));
  add(B("IsInf", "positive only").tp("T1").x("X", S3, Dom::Special).i("detect_negative", 0));

  // -- Elementwise: activations -------------------------------------------------------------------------
  family = "elementwise_unary";
  add(B("LeakyRelu").x("X", S3).fl("alpha", 0.1f));
  add(B("Elu").x("X", S3).fl("alpha", 0.5f).tol(10).note("exp: 10x tolerance"));
  add(B("Selu").x("X", S3).tol(10).note("exp: 10x tolerance"));
  add(B("Celu").x("X", S3).fl("alpha", 1.5f).tol(10).note("exp: 10x tolerance"));
  add(B("HardSigmoid").x("X", S3).fl("alpha", 0.3f).fl("beta", 0.4f));
  add(B("ThresholdedRelu").x("X", S3).fl("alpha", 0.7f));
  // Integral lambd and bias so the integer types see the same thresholds as the float ones.
  add(B("Shrink").x("X", S3).fl("lambd", 1.0f).fl("bias", 2.0f));
  add(B("Shrink", "default").x("X", S3));
  add(B("Gelu").opset(20).without_schema(kFloats).x("X", S3).tol(10)
          .note("Gelu-20 (no schema in ONNX 1.12): dtypes from the opset-20 spec; erf: 10x tolerance"));
  add(B("Swish").opset(24).without_schema(kFloats).x("X", S3).tol(10)
          .note("Swish-24 (no schema in ONNX 1.12): dtypes from the opset-24 spec; exp: 10x tolerance"));
  add(B("Swish", "alpha 0.75").opset(24).without_schema(kFloats).x("X", S3).fl("alpha", 0.75f).tol(10)
          .note("Swish-24 (no schema in ONNX 1.12): dtypes from the opset-24 spec; exp: 10x tolerance"));
  add(B("Mish").opset(18).without_schema(kFloats).x("X", S3).tol(10)
          .note("Mish-18 (no schema in ONNX 1.12): dtypes from the opset-18 spec; exp, log, tanh: 10x tolerance"));
  add(B("Gelu", "tanh").opset(20).without_schema(kFloats).x("X", S3).s("approximate", "tanh").tol(10)
          .note("Gelu-20 (no schema in ONNX 1.12): dtypes from the opset-20 spec; tanh: 10x tolerance"));

  // -- Elementwise: binary ------------------------------------------------------------------------------
  // ONNX Runtime's fused activations (com.microsoft; no schema in ONNX 1.12: dtypes from its schemas).
  family = "bias_activation";
  add(B("FastGelu").ms().without_schema(kFloats).x("X", S3).tol(10));
  add(B("FastGelu", "bias").ms().without_schema(kFloats).x("X", S3).x("bias", {4}).tol(10));
  add(B("BiasGelu").ms().without_schema(kFloats).x("X", S3).x("bias", {4}).tol(10));
  add(B("Gelu", "com.microsoft").ms().without_schema(kFloats).x("X", S3).tol(10));
  add(B("QuickGelu").ms().without_schema(kFloats).x("X", S3).tol(10));
  add(B("QuickGelu", "alpha -0.5").ms().without_schema(kFloats).x("X", S3).fl("alpha", -0.5f).tol(10));
  add(B("BiasAdd").ms().without_schema(kFloats).x("X", S3).x("bias", {4}).x("skip", S3));

  family = "elementwise_binary";
  add(B("Add").x("A", S3).x("B", SB));
  add(B("Sub").x("A", S3).x("B", SB));
  add(B("Mul").x("A", S3).x("B", SB));
  add(B("Div").x("A", S3).x("B", SB, Dom::NonZero));
  add(B("Mod").x("A", S3).x("B", SB, Dom::NonZero)
          .a([](onnx::NodeProto& n, DType dt) {
            if (dtype_is_float(dt)) attr(n, "fmod", onnx::AttributeProto_AttributeType_INT)->set_i(1);
          })
          .note("fmod=0 (sign of the divisor) for integers; floats require fmod=1"));
  add(B("Mod", "fmod").x("A", S3).x("B", SB, Dom::NonZero).i("fmod", 1));
  add(B("Pow").x("X", S3, Dom::NonZero).xg("Y", SB, [](DType dt, const Shape& s, Rng& r) {
    return make_values(dt, s, Dom::Small, r);
  }).tol(10).note("exponents in [-4, 4] (integers) / [-3, 3] (floats); non-zero bases; pow: 10x tolerance"));
  add(B("Pow", "exponent T1, float base").tp("T1").f("X", DType::Float32, S3, Dom::NonZero).x("Y", SB, Dom::Small).tol(10)
          .note("exponent of every admitted type; pow: 10x tolerance"));
  add(B("Pow", "exponent T1, int64 base").tp("T1").fg("X", DType::Int64, S3, ints_in(1, 9)).x("Y", SB, Dom::Small)
          .note("int64 bases 1..9 with exponents of every admitted type, fractional ones included"));
  add(B("Pow", "int64 exponents beyond 2^32").only({DType::Int32, DType::Int64})
          .xg("X", {3, 8}, fixed({-1, 1, 2, -2, 3, -3, 7, -1, 1, -1, 2, 3, -3, 5, -1, 1, -7, 2, -1, 3, 1, -1, 9, -2}))
          .fg("Y", DType::Int64, {8}, fixed({(int64_t(1) << 32) + 1, -(int64_t(1) << 32) - 1, int64_t(1) << 33, kI64Max,
                                             kI64Min, 63, int64_t(1) << 32, -(int64_t(1) << 32)}))
          .note("integer bases (float ones would round the exponent to float): wrapping products, +-1 to negative "
                "exponents of both parities beyond 32 bits"));
  add(B("PRelu").x("X", S3).x("slope", SB));
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
    add(B(op).x("A", S3, Dom::Tricky).x("B", SB, Dom::Tricky));
  for (const char* op : {"And", "Or", "Xor"}) add(B(op).x("A", S3).x("B", SB));
  for (const char* dir : {"LEFT", "RIGHT"})
    add(B("BitShift", dir).x("X", S3).xg("Y", SB, [](DType dt, const Shape& s, Rng& r) {
      return ints_in(0, int64_t(dtype_size(dt)) * 8 - 1)(dt, s, r);
    }).s("direction", dir).note("shift amounts below the bit width"));
  for (const char* dir : {"LEFT", "RIGHT"})
    add(B("BitShift", std::string(dir) + ", opset 28").opset(28).without_schema(kInts).x("X", S3)
            .xg("Y", SB, ints_in(-2, 70)).s("direction", dir)
            .note("BitShift-28 (libonnx's schema is BitShift-11, unsigned only): every integer type; amounts "
                  "beyond the width and negative ones (unsigned bits beyond it) give 0 or the sign's fill"));
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    add(B(op).opset(18).without_schema(kInts).x("A", S3).x("B", SB)
            .note(std::string(op) + "-18 (no schema in ONNX 1.12): dtypes from the opset-18 spec"));
  add(B("SwiGLU").opset(28).without_schema(kFloats).x("A", S3).x("B", SB).tol(10)
          .note("SwiGLU-28 (no schema in ONNX 1.12): dtypes from the spec; exp: 10x tolerance"));
  add(B("SwiGLU", "alpha 0.5").opset(28).without_schema(kFloats).x("A", S3).x("B", S3).fl("alpha", 0.5f).tol(10)
          .note("SwiGLU-28 (no schema in ONNX 1.12): dtypes from the spec; exp: 10x tolerance"));
  add(B("Mod", "fmod 0, opset 28").opset(28).without_schema(kFloats).x("A", S3).x("B", SB, Dom::NonZero)
          .note("floats with fmod=0 (numpy's mod, the sign of the divisor; libonnx's Mod-13 schema is older)"));
  add(B("Where").f("condition", DType::Bool, SB).x("X", S3).x("Y", {4}));
  for (const char* op : {"Max", "Min"}) {
    add(B(op).x("x0", S3).x("x1", SB, Dom::Tricky).x("x2", {4}, Dom::Tricky));
    add(B(op, "one input").x("x0", S3));
  }
  for (const char* op : {"Sum", "Mean"}) {
    add(B(op).x("x0", S3).x("x1", SB).x("x2", {4}));
    add(B(op, "one input").x("x0", S3));
  }

  // -- Cast, CastLike, Clip ---------------------------------------------------------------------------
  family = "cast_clip";
  const DType all12[] = {DType::Float32, DType::Float16, DType::Float64, DType::Int8, DType::UInt8, DType::Int16,
                         DType::UInt16, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64, DType::Bool};
  for (DType to : all12) {
    int64_t to_i = int64_t(to);
    B b("Cast", "to " + std::string(dtype_name(to)));
    b.tp("T1").xg("input", S3, cast_input(to)).i("to", to_i).note("float inputs within the target's range (beyond 2^32 for 64-bit targets)");
    // Every source type for the 64-bit, float32 and bool targets; the main sources for the others.
    if (to != DType::Int64 && to != DType::UInt64 && to != DType::Float32 && to != DType::Bool)
      b.quick({DType::Int64, DType::UInt64, DType::Float32, DType::Float16, DType::Int32, DType::Bool});
    add(b);
  }
  // BitCast-26 (no schema in ONNX 1.12): the varied input type to the signed / unsigned integer of its
  // size (float32 -> int32, int8 -> uint8, uint64 -> int64 ...), and float32 / float64 from the integers.
  auto bitcast_to = [](DType dt) {
    switch (dt) {
      case DType::Float32: case DType::UInt32: return DType::Int32;
      case DType::Int32: return DType::Float32;
      case DType::Float16: case DType::Int16: return DType::UInt16;
      case DType::UInt16: return DType::Int16;
      case DType::Float64: case DType::UInt64: return DType::Int64;
      case DType::Int64: return DType::Float64;
      case DType::Int8: case DType::Bool: return DType::UInt8;
      default: return DType::Int8;
    }
  };
  add(B("BitCast").opset(26).without_schema({DType::Float32, DType::Float16, DType::Float64, DType::Int8, DType::UInt8,
                                             DType::Int16, DType::UInt16, DType::Int32, DType::UInt32, DType::Int64,
                                             DType::UInt64, DType::Bool})
          .x("input", S3).extremes(Extremes::None, "NaN payloads: moved as bits, compared as values")
          .a([bitcast_to](onnx::NodeProto& n, DType dt) { attr(n, "to", onnx::AttributeProto_AttributeType_INT)->set_i(int64_t(bitcast_to(dt))); })
          .note("to the other type of the input's size"));
  add(B("BitCast", "to bool").opset(26).without_schema({DType::Int8, DType::UInt8}).x("input", S3)
          .a([](onnx::NodeProto& n, DType) { attr(n, "to", onnx::AttributeProto_AttributeType_INT)->set_i(int64_t(DType::Bool)); })
          .note("bytes other than 0 and 1 are true"));
  add(B("CastLike").tp("T1").xg("input", S3, cast_input(DType::Int64)).f("target_type", DType::Int64, {1}));
  add(B("CastLike", "target T2").tp("T2").f("input", DType::Int64, S3).x("target_type", {1}));
  add(B("Clip").x("input", S3).xg("min", {}, clip_gen(false)).xg("max", {}, clip_gen(true)));
  add(B("Clip", "max only").x("input", S3).none().xg("max", {}, clip_gen(true)));
  add(B("Clip", "min only, constant").x("input", S3).kx("min", {}, clip_gen(false)));
  add(B("Clip", "no bounds").x("input", S3));

  // -- Views ---------------------------------------------------------------------------------------------
  family = "views";
  add(B("Reshape").x("data", S3).k("shape", i64v({4, -1, 2})));
  add(B("Reshape", "0 copies a dim").x("data", S3).k("shape", i64v({0, 12})));
  add(B("Flatten").x("input", S3).i("axis", 2));
  add(B("Squeeze").x("data", {2, 1, 4, 1}).k("axes", i64v({1, -1})));
  add(B("Squeeze", "no axes").x("data", {2, 1, 4, 1}));
  add(B("Unsqueeze").x("data", {2, 3}).k("axes", i64v({0, -1})));
  add(B("Identity").tp("V").x("input", S3));
  add(B("Dropout").x("data", S3).outs(2));
  add(B("Dropout", "ratio, training_mode=false").x("data", S3).k("ratio", Tensor::scalar<float>(0.25f))
          .k("training_mode", Tensor::scalar<bool>(false)));
  // Training with ratio 0 (torchvision's attention dropout, exported in training mode): the identity.
  add(B("Dropout", "training_mode=true, ratio 0").x("data", S3).k("ratio", Tensor::scalar<float>(0.0f))
          .k("training_mode", Tensor::scalar<bool>(true)).outs(2));
  add(B("Dropout", "opset 7: a mask of the data's type").opset(7).x("data", S3).outs(2));

  // -- Layout ----------------------------------------------------------------------------------------------
  family = "layout";
  add(B("Transpose").x("data", S3).ints("perm", {2, 0, 1}));
  add(B("Transpose", "default perm").x("data", S3));
  add(B("Concat").x("a", S3).x("b", {2, 1, 4}).x("c", {2, 2, 4}).i("axis", 1));
  add(B("Concat", "axis -1").x("a", S3).x("b", {2, 3, 1}).i("axis", -1));
  add(B("Split").x("input", {2, 6, 4}).k("split", i64v({1, 2, 3})).i("axis", 1).outs(3));
  add(B("Split", "equal, axis -1").x("input", {2, 3, 4}).i("axis", -1).outs(2));
  add(B("Slice").x("data", {4, 6, 5}).k("starts", i64v({1, -1, 0})).k("ends", i64v({kI64Max, kI64Min, 4}))
          .k("axes", i64v({0, 1, -1})).k("steps", i64v({1, -2, 2}))
          .note("INT64_MAX / INT64_MIN end sentinels, a negative step, a negative axis"));
  add(B("Slice", "int32 params").x("data", {4, 6, 5}).k("starts", Tensor::from_vector<int32_t>({2}, {-3, 1}))
          .k("ends", Tensor::from_vector<int32_t>({2}, {kI32Max, kI32Min})).k("axes", Tensor::from_vector<int32_t>({2}, {0, 2}))
          .k("steps", Tensor::from_vector<int32_t>({2}, {1, -1})));
  add(B("Slice", "Tind").tp("Tind").f("data", DType::Int64, {4, 6, 5})
          .kx("starts", {3}, slice_param({1, -1, 0})).kx("ends", {3}, slice_param({kI64Max, kI64Min, 4}))
          .kx("axes", {3}, slice_param({0, 1, -1})).kx("steps", {3}, slice_param({1, -2, 2})));
  add(B("Slice", "no axes, no steps").x("data", {4, 6}).k("starts", i64v({-3, 2})).k("ends", i64v({3, 100})));
  add(B("Slice", "bounds beyond 2^32").quick({DType::Int64, DType::Float32}).x("data", {4, 6})
          .k("starts", i64v({-(int64_t(1) << 32) - 1, int64_t(1) << 32})).k("ends", i64v({(int64_t(1) << 32) + 3, -(int64_t(1) << 32)}))
          .k("axes", i64v({0, 1})).k("steps", i64v({1, -1}))
          .note("bounds whose low word is in range clamp like INT64_MAX/INT64_MIN"));
  add(B("Expand").x("input", SB).k("shape", i64v({2, 3, 4})));
  add(B("Expand", "rank grows, 1s kept").x("input", {2, 1, 4}).k("shape", i64v({3, 1, 1, 1})));
  add(B("Tile").x("input", {2, 3}).k("repeats", i64v({2, 3})));
  add(B("Pad").x("data", {2, 3}).k("pads", i64v({0, 1, 1, 2})).kx("constant_value", {}, [](DType dt, const Shape& s, Rng&) {
    return scalar_of(dt, s, (int64_t(1) << 41) + 5, (uint64_t(1) << 63) + 3, -2147483647, -7, 1.25, true);
  }));
  add(B("Pad", "zero, negative pads").x("data", {3, 4}).k("pads", i64v({1, -1, -1, 2})));
  add(B("Pad", "opset 2, value attribute").opset(2).x("data", {2, 3}).ints("pads", {0, 1, 1, 2}).fl("value", -1.25f)
          .note("the fill value is baked into the program (float types only at opset 2)"));
  add(B("Pad", "reflect").x("data", {3, 4}).k("pads", i64v({1, 2, 2, 3})).s("mode", "reflect"));
  add(B("Pad", "edge").x("data", {3, 4}).k("pads", i64v({2, 0, 1, 3})).s("mode", "edge"));
  const std::vector<DType> kAllTypes12 = {DType::Float32, DType::Float16, DType::Float64, DType::Int8, DType::UInt8, DType::Int16,
                                          DType::UInt16, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64, DType::Bool};
  add(B("CenterCropPad").opset(18).without_schema(kAllTypes12).x("input_data", {4, 5, 3}).k("shape", i64v({3, 8, 3}))
          .note("CenterCropPad-18 (no schema in ONNX 1.12): every type; axis 0 cropped, axis 1 padded"));
  add(B("CenterCropPad", "axes").opset(18).without_schema(kAllTypes12).x("input_data", {2, 7, 4}).k("shape", i64v({2, 5}))
          .ints("axes", {-1, 1}).note("CenterCropPad-18 (no schema in ONNX 1.12)"));
  add(B("ReverseSequence").x("input", {4, 3, 2}).fg("sequence_lens", DType::Int64, {3}, fixed({4, 1, 2})));
  add(B("ReverseSequence", "batch axis 0").x("input", {2, 5}).k("sequence_lens", i64v({3, 0})).i("batch_axis", 0).i("time_axis", 1));
  add(B("DepthToSpace").x("input", {1, 8, 2, 3}).i("blocksize", 2));
  add(B("DepthToSpace", "CRD").x("input", {1, 8, 2, 3}).i("blocksize", 2).s("mode", "CRD"));
  add(B("SpaceToDepth").x("input", {1, 2, 4, 6}).i("blocksize", 2));

  // -- Indexing ----------------------------------------------------------------------------------------------
  family = "indexing";
  add(B("Gather").x("data", {5, 4}).fg("indices", DType::Int64, {2, 3}, ints_in(-5, 4)));
  add(B("Gather", "axis 1, int32 indices").x("data", {5, 4}).fg("indices", DType::Int32, {2, 3}, ints_in(-4, 3)).i("axis", 1));
  add(B("Gather", "scalar index").x("data", {5, 4}).fg("indices", DType::Int64, {}, ints_in(-5, 4)));
  add(B("Gather", "Tind").tp("Tind").f("data", DType::Int64, {5, 4}).xg("indices", {2, 3}, ints_in(-5, 4)));
  add(B("GatherElements").x("data", {3, 4}).fg("indices", DType::Int64, {3, 2}, ints_in(-4, 3)).i("axis", 1));
  add(B("GatherElements", "axis 0, int32 indices").x("data", {3, 4}).fg("indices", DType::Int32, {2, 4}, ints_in(-3, 2)));
  add(B("GatherElements", "Tind").tp("Tind").f("data", DType::Int64, {3, 4}).xg("indices", {3, 2}, ints_in(-4, 3)).i("axis", 1));
  add(B("GatherND").x("data", {2, 3, 4}).fg("indices", DType::Int64, {2, 2}, nd_indices({2, 3})));
  add(B("GatherND", "batch_dims 1").x("data", {2, 3, 4}).fg("indices", DType::Int64, {2, 1}, nd_indices({3})).i("batch_dims", 1));
  add(B("ScatterElements").x("data", {3, 4}).fg("indices", DType::Int64, {2, 4}, distinct_rows(3)).x("updates", {2, 4}));
  add(B("ScatterElements", "axis 1, int32 indices").x("data", {4, 3}).fg("indices", DType::Int32, {4, 2}, ints_in(-3, 2))
          .x("updates", {4, 2}).i("axis", 1).s("reduction", "add").note("duplicate indices, reduction add"));
  add(B("ScatterElements", "mul").x("data", {3, 4}).fg("indices", DType::Int64, {2, 4}, ints_in(-3, 2))
          .x("updates", {2, 4}, Dom::Small).s("reduction", "mul"));
  add(B("ScatterElements", "Tind").tp("Tind").f("data", DType::Int64, {3, 4}).xg("indices", {2, 4}, distinct_rows(3))
          .f("updates", DType::Int64, {2, 4}));
  add(B("Scatter").opset(10).x("data", {3, 4}).fg("indices", DType::Int64, {2, 4}, distinct_rows(3)).x("updates", {2, 4})
          .note("Scatter-9 (deprecated since opset 11; = ScatterElements)"));
  add(B("Scatter", "Tind, axis 1").opset(10).tp("Tind").f("data", DType::Int64, {4, 3}).xg("indices", {4, 1}, ints_in(-3, 2))
          .f("updates", DType::Int64, {4, 1}).i("axis", 1));
  add(B("ScatterND").x("data", {4, 3}).fg("indices", DType::Int64, {2, 1}, distinct_nd(4)).x("updates", {2, 3}));
  add(B("ScatterND", "add").x("data", {4, 3}).fg("indices", DType::Int64, {3, 1}, ints_in(-4, 3)).x("updates", {3, 3})
          .s("reduction", "add"));
  add(B("ScatterND", "mul").x("data", {4, 3}).fg("indices", DType::Int64, {3, 1}, ints_in(-4, 3)).x("updates", {3, 3}, Dom::Small)
          .s("reduction", "mul"));
  add(B("ScatterND", "element indices").x("data", {2, 3}).fg("indices", DType::Int64, {1, 2}, nd_indices({2, 3})).x("updates", {1}));

  add(B("Compress").x("input", {3, 4}).fg("condition", DType::Bool, {3}, fixed({1, 0, 1})).i("axis", 0)
          .note("a run-time condition: its values key the plan"));
  add(B("Compress", "flat, short condition").x("input", {2, 3}).k("condition", Tensor::from_vector<bool>({4}, {false, true, true, false})));
  add(B("TensorScatter").opset(24).without_schema(kAllTypes12).x("past_cache", {2, 1, 4, 3}).x("update", {2, 1, 2, 3})
          .fg("write_indices", DType::Int64, {2}, fixed({1, 2})).note("TensorScatter-24 (no schema in ONNX 1.12): every type"));
  add(B("TensorScatter", "write index 2^32+1 on replay").opset(24).without_schema(kAllTypes12).quick().x("past_cache", {2, 4, 3})
          .x("update", {2, 1, 3}).fg("write_indices", DType::Int64, {2}, fixed({1, 3})).i("axis", 1)
          .second_fails(fixed({(int64_t(1) << 32) + 1, 0}))
          .note("low word 1: a kernel reading only the low word would write at 1; both EPs must refuse it"));
  add(B("TensorScatter", "circular, axis 1, no indices").opset(24).without_schema(kAllTypes12).x("past_cache", {2, 3, 2})
          .x("update", {2, 2, 2}).i("axis", 1).s("mode", "circular").note("TensorScatter-24: write index 0"));
  add(B("TensorScatter", "circular, wraps").opset(24).without_schema(kAllTypes12).quick().x("past_cache", {2, 4, 3})
          .x("update", {2, 3, 3}).fg("write_indices", DType::Int64, {2}, fixed({3, 2})).s("mode", "circular").i("axis", 1)
          .second_fails(fixed({1, 4})).note("TensorScatter-24: positions wrap; a write index of max_seq on replay fails"));
  // Index 2^32 + 1 (low word 1) on the first replay: an error on the CPU, and must be one on the GPU
  // (a kernel that reads only the low word of an int64 index would return element 1).
  const std::vector<DType> kIdxQuick = {DType::Float32, DType::Int64};
  const int64_t kBeyond = (int64_t(1) << 32) + 1;
  add(B("Gather", "index 2^32+1 on replay").quick(kIdxQuick).x("data", {5, 4})
          .fg("indices", DType::Int64, {2, 3}, ints_in(-5, 4)).second_fails(ints_with(-5, 4, 4, kBeyond)));
  add(B("Gather", "index -(2^32)+1 on replay, axis 1").quick(kIdxQuick).x("data", {5, 4}).i("axis", 1)
          .fg("indices", DType::Int64, {2, 3}, ints_in(-4, 3)).second_fails(ints_with(-4, 3, 2, -kBeyond + 2)));
  add(B("GatherElements", "index 2^32+1 on replay").quick(kIdxQuick).x("data", {3, 4}).i("axis", 1)
          .fg("indices", DType::Int64, {3, 2}, ints_in(-4, 3)).second_fails(ints_with(-4, 3, 5, kBeyond)));
  add(B("GatherND", "index 2^32+1 on replay").quick(kIdxQuick).x("data", {2, 3, 4})
          .fg("indices", DType::Int64, {2, 2}, nd_indices({2, 3})).second_fails(ints_with(0, 1, 3, kBeyond)));
  add(B("ScatterElements", "index 2^32+1 on replay").quick(kIdxQuick).x("data", {3, 4})
          .fg("indices", DType::Int64, {2, 4}, distinct_rows(3)).second_fails(ints_with(-3, -3, 6, kBeyond)).x("updates", {2, 4}));
  add(B("ScatterND", "index 2^32+1 on replay").quick(kIdxQuick).x("data", {4, 3})
          .fg("indices", DType::Int64, {2, 1}, distinct_nd(4)).second_fails(ints_with(0, 0, 1, kBeyond)).x("updates", {2, 3}));

  // -- Generators ----------------------------------------------------------------------------------------------
  family = "generators";
  add(B("Range").xg("start", {}, range_gen(0)).xg("limit", {}, range_gen(1)).xg("delta", {}, range_gen(2))
          .note("runtime start/limit/delta (int64: 2^40 + k * -(2^33 + 1))"));
  add(B("Range", "constant").kx("start", {}, range_gen(0)).kx("limit", {}, range_gen(1)).kx("delta", {}, range_gen(2)).fold()
          .note("all inputs constant: folded at plan time"));
  auto cos_value = [](onnx::NodeProto& n, DType dt) {
    auto* a = attr(n, "value", onnx::AttributeProto_AttributeType_TENSOR);
    Tensor t = scalar_of(dt, {1}, (int64_t(1) << 40) + 7, (uint64_t(1) << 63) + 5, kI32Min + 3, -9, -1.25, true);
    auto* p = a->mutable_t();
    p->set_data_type(int32_t(dt));
    p->add_dims(1);
    p->set_raw_data(std::string(reinterpret_cast<const char*>(t.raw()), t.nbytes()));
  };
  add(B("ConstantOfShape").tp("T2").k("input", i64v({2, 3})).a(cos_value).fold().note("constant shape: folded at plan time"));
  add(B("ConstantOfShape", "runtime shape").tp("T2").fg("input", DType::Int64, {2}, fixed({2, 3})).a(cos_value));
  add(B("Trilu").x("input", {2, 3, 4}));
  add(B("Trilu", "lower, k=-1").x("input", {2, 3, 4}).k("k", Tensor::scalar<int64_t>(-1)).i("upper", 0));
  add(B("Trilu", "upper, k=2").x("input", {3, 5}).k("k", Tensor::scalar<int64_t>(2)));
  add(B("Trilu", "upper, k=2^32+1").quick({DType::Int64, DType::Float32}).x("input", {3, 4}).k("k", Tensor::scalar<int64_t>((int64_t(1) << 32) + 1))
          .note("low word 1: a kernel reading only the low word keeps elements; all must be zero"));
  add(B("Trilu", "lower, k=-(2^32)+1").quick({DType::Int64, DType::Float32}).x("input", {3, 4}).k("k", Tensor::scalar<int64_t>(-(int64_t(1) << 32) + 1)).i("upper", 0));
  auto one_hot_values = [](DType dt, const Shape& s, Rng& r) { return make_values(dt, s, Dom::Wide, r); };
  add(B("OneHot", "T3").tp("T3").fg("indices", DType::Int64, {2, 3}, ints_in(-5, 4)).k("depth", Tensor::scalar<int64_t>(5))
          .xg("values", {2}, one_hot_values));
  add(B("OneHot", "T1").tp("T1").xg("indices", {2, 3}, ints_in(-6, 5)).k("depth", Tensor::scalar<int64_t>(5))
          .f("values", DType::Int64, {2}).i("axis", 1).note("indices out of [-depth, depth-1] give all-off rows"));
  add(B("OneHot", "indices beyond 2^32").tp("T3").quick({DType::Int64, DType::Float32})
          .fg("indices", DType::Int64, {2, 3}, fixed({(int64_t(1) << 32) + 1, -(int64_t(1) << 32) + 2, 3, kI64Min + 1, -5, (int64_t(1) << 33) + 4}))
          .k("depth", Tensor::scalar<int64_t>(5)).xg("values", {2}, one_hot_values)
          .note("indices outside [-depth, depth-1] whose low word is inside give all-off rows"));
  add(B("OneHot", "T2").tp("T2").fg("indices", DType::Int64, {2, 3}, ints_in(-5, 4)).kx("depth", {}, fixed({5}))
          .f("values", DType::Float32, {2}));
  add(B("EyeLike").tp("T1").x("input", {3, 4}));
  add(B("EyeLike", "dtype T2, k=1").tp("T2").f("input", DType::Float32, {4, 3}).dtype_attr("dtype").i("k", 1));
  add(B("EyeLike", "k=-1").tp("T1").x("input", {4, 4}).i("k", -1));

  // -- Reductions ------------------------------------------------------------------------------------------------
  family = "reduce";
  const Shape R3{3, 4, 5};
  add(B("ReduceSum").x("data", R3).k("axes", i64v({1})));
  add(B("ReduceSum", "axes -1 0, keepdims 0").x("data", R3).k("axes", i64v({-1, 0})).i("keepdims", 0).quick());
  add(B("ReduceSum", "all axes").x("data", R3).quick());
  struct Red { const char* op; Dom dom; Gen gen; const char* note; };
  auto moderate = ints_in(-1000, 1000);
  const Red reds[] = {
      {"ReduceMean", Dom::Wide, {}, ""},
      {"ReduceMax", Dom::Wide, {}, ""},
      {"ReduceMin", Dom::Wide, {}, ""},
      {"ReduceProd", Dom::Wide, {}, ""},
      {"ReduceL1", Dom::Wide, {}, ""},
      {"ReduceL2", Dom::Wide, [moderate](DType dt, const Shape& s, Rng& r) {
         return dtype_is_integer(dt) ? (dt == DType::UInt32 || dt == DType::UInt64 ? ints_in(0, 1000)(dt, s, r) : moderate(dt, s, r))
                                     : make_values(dt, s, Dom::Wide, r);
       }, "integers in [-1000, 1000]: the sum of squares stays exact in f32 and sqrt is computed in floating point"},
      {"ReduceLogSum", Dom::Positive, [](DType dt, const Shape& s, Rng& r) {
         return dtype_is_integer(dt) ? ints_in(1, 20)(dt, s, r) : make_values(dt, s, Dom::Positive, r);
       }, "positive; integers in [1, 20] (log is computed in floating point)"},
      {"ReduceLogSumExp", Dom::Small, {}, "integers in [-4, 4] (exp and log in floating point)"},
      {"ReduceSumSquare", Dom::Wide, {}, ""},
  };
  for (const auto& rd : reds) {
    B b1(rd.op), b2(rd.op, "axes 0 -1, keepdims 0");
    if (rd.gen) b1.xg("data", R3, rd.gen), b2.xg("data", R3, rd.gen);
    else b1.x("data", R3, rd.dom), b2.x("data", R3, rd.dom);
    b1.ints("axes", {1}).tol(10).note(rd.note);
    b2.ints("axes", {0, -1}).i("keepdims", 0).tol(10).note(rd.note).quick();
    add(b1);
    add(b2);
  }
  family = "argminmax_cumsum";
  for (const char* op : {"ArgMax", "ArgMin"}) {
    add(B(op).x("data", R3, Dom::Tricky).i("axis", 1));
    add(B(op, "last index, axis -1, keepdims 0").x("data", R3, Dom::Tricky).i("axis", -1).i("keepdims", 0).i("select_last_index", 1).quick());
  }
  add(B("CumSum").x("x", {3, 4}).k("axis", Tensor::scalar<int64_t>(1)));
  add(B("CumSum", "exclusive reverse, int32 axis 0").x("x", {3, 4}).k("axis", Tensor::scalar<int32_t>(0)).i("exclusive", 1).i("reverse", 1).quick());
  const std::vector<DType> kCumProdTypes = {DType::Float32, DType::Float16, DType::Float64, DType::Int32,
                                            DType::UInt32, DType::Int64, DType::UInt64};
  add(B("CumProd").opset(26).without_schema(kCumProdTypes).x("x", {3, 4}, Dom::Small).k("axis", Tensor::scalar<int64_t>(1))
          .note("CumProd-26 (no schema in ONNX 1.12): dtypes from the spec; small values (products stay in range)"));
  add(B("CumProd", "exclusive reverse, axis 0").opset(26).without_schema(kCumProdTypes).quick()
          .x("x", {3, 4}).k("axis", Tensor::scalar<int32_t>(0)).i("exclusive", 1).i("reverse", 1)
          .note("wide values: integer products wrap as on the CPU"));
  add(B("CumSum", "T2").tp("T2").f("x", DType::Int64, {3, 4}).kx("axis", {}, fixed({-1})));
  add(B("CumSum", "run-time axis, 2^32+1 on replay").quick().x("x", {3, 4}).fg("axis", DType::Int64, {}, fixed({-1}))
          .second_fails(fixed({(int64_t(1) << 32) + 1}))
          .note("the axis is read on the GPU; 2^32+1 (low word 1) must be refused"));

  // -- Softmax family, TopK ----------------------------------------------------------------------------------------
  family = "softmax_topk";
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    add(B(op).x("input", S3).tol(10).note("exp: 10x tolerance"));
    add(B(op, "axis 1").x("input", S3).i("axis", 1).tol(10).note("exp: 10x tolerance"));
  }
  add(B("Hardmax").x("input", S3, Dom::Tricky).note("ties: the first maximum wins"));
  add(B("Hardmax", "axis 0").x("input", S3, Dom::Tricky).i("axis", 0));
  add(B("TopK").x("X", {3, 6}).k("K", i64v({3})).outs(2));
  add(B("TopK", "smallest, axis 0, ties").x("X", {4, 5}, Dom::Tricky).k("K", i64v({2})).i("axis", 0).i("largest", 0).outs(2).quick()
          .note("ties: the lower index first"));

  // -- MatMul, Gemm ---------------------------------------------------------------------------------------------------
  family = "matmul";
  add(B("MatMul").x("A", {2, 3, 4}).x("B", {4, 5}).tol(10).note("integers wrap like the CPU; floats: 10x tolerance (sums)"));
  add(B("MatMul", "vector x matrix").x("A", {4}).x("B", {2, 4, 3}).tol(10).quick());
  add(B("Gemm").x("A", {3, 4}).x("B", {4, 5}).x("C", {5}).tol(10));
  add(B("Gemm", "transA transB, C [3,1]").x("A", {4, 3}).x("B", {5, 4}).x("C", {3, 1}).i("transA", 1).i("transB", 1).tol(10).quick());  // the tiled float kernel compiles for seconds on SwiftShader
  add(B("Gemm", "alpha 2 beta 3").x("A", {3, 4}).x("B", {4, 5}).x("C", {3, 5}).fl("alpha", 2.0f).fl("beta", 3.0f).tol(10).quick({DType::Float32, DType::Int64})
          .note("integral alpha/beta so integer types are well defined"));
  add(B("Gemm", "no C").x("A", {3, 4}).x("B", {4, 5}).tol(10).quick({DType::Int64, DType::UInt64}));
  add(B("MatMulInteger").tp("T1").x("A", {2, 3, 4}).f("B", DType::UInt8, {4, 5}).kx("a_zero_point", {}, fixed({3}))
          .fg("b_zero_point", DType::UInt8, {5}, fixed({0, 1, 200, 7, 255})).note("per-column b zero points"));
  add(B("MatMulInteger", "T2, no zero points").tp("T2").f("A", DType::Int8, {3, 4}).x("B", {2, 4, 2}));
  add(B("QLinearMatMul").opset(21).without_schema({DType::Int8, DType::UInt8}).x("a", {2, 3, 4})
          .f("a_scale", DType::Float32, {}, Dom::Positive).kx("a_zero_point", {}, fixed({2})).x("b", {4, 5})
          .f("b_scale", DType::Float32, {}, Dom::Positive).kx("b_zero_point", {}, fixed({1}))
          .fg("y_scale", DType::Float32, {}, [](DType, const Shape& s, Rng& r) {
            return Tensor::scalar<float>(float(uniform_real(r, 50, 200))).reshaped(s);
          }).kx("y_zero_point", {}, fixed({5}))
          .note("QLinearMatMul-21 (libonnx's schema is QLinearMatMul-10): a, b and y of the varied type; y_scale "
                "large enough that the results spread over the type's range"));
  add(B("MatMulIntegerToFloat").ms().without_schema({DType::Int8, DType::UInt8}).x("A", {2, 3, 4}).x("B", {4, 5})
          .k("a_scale", Tensor::scalar<float>(0.02f)).k("b_scale", Tensor::from_vector<float>({5}, {0.01f, 0.02f, 0.03f, 0.015f, 0.025f}))
          .kx("a_zero_point", {}, fixed({3})).kx("b_zero_point", {5}, fixed({0, 1, 2, 3, 4}))
          .k("bias", Tensor::from_vector<float>({5}, {0.5f, -0.25f, 0.0f, 1.0f, -1.0f}))
          .note("ONNX Runtime's MatMulInteger with float outputs: per-column scales and zero points, a bias"));
  add(B("Det").x("X", {3, 4, 4}).tol(10).note("LU in f32 on the GPU, double on the CPU"));
  add(B("Einsum").x("A", {2, 3, 4}).x("B", {2, 4, 5}).s("equation", "bij,bjk->bik").tol(10));
  add(B("Einsum", "diagonal, ellipsis, broadcast").x("A", {3, 3, 1, 2}).x("B", {2, 5}).s("equation", "ii...,...j->i...j").tol(10).quick());
  add(B("Einsum", "implicit output: scalar").x("A", {3, 4}).x("B", {3, 4}).s("equation", "ij,ij").tol(10).quick());
  add(B("Einsum", "one input, transpose and sum").x("A", {2, 3, 4}).s("equation", "abc->ca").tol(10).quick());

  // -- Normalization --------------------------------------------------------------------------------------------------
  family = "normalization";
  add(B("LayerNormalization").x("X", S3).x("Scale", {4}).x("B", {4}).tol(10));
  add(B("LayerNormalization", "axis 1, mean and inv std").x("X", S3).x("Scale", {3, 4}).x("B", {3, 4}).i("axis", 1).outs(3).tol(10));
  add(B("BatchNormalization").x("X", {2, 3, 2, 2}).x("scale", {3}).x("B", {3}).x("input_mean", {3}).x("input_var", {3}, Dom::Positive).tol(10));
  add(B("BatchNormalization", "T1 T2 float32").x("X", {2, 3, 2, 2}).f("scale", DType::Float32, {3}).f("B", DType::Float32, {3})
          .f("input_mean", DType::Float32, {3}).f("input_var", DType::Float32, {3}, Dom::Positive).tol(10));
  // Training mode: the batch's statistics, the running averages (opset 15), and before opset 14 the batch's
  // mean and variance too (training told by the outputs the node has).
  add(B("BatchNormalization", "training mode").opset(15).x("X", {2, 3, 2, 2}).x("scale", {3}).x("B", {3})
          .x("input_mean", {3}).x("input_var", {3}, Dom::Positive).i("training_mode", 1).fl("momentum", 0.8f).outs(3).tol(10));
  add(B("BatchNormalization", "opset 9, five outputs").opset(9).x("X", {3, 2, 5}).x("scale", {2}).x("B", {2})
          .x("mean", {2}).x("var", {2}, Dom::Positive).outs(5).tol(10));
  add(B("InstanceNormalization").x("input", {2, 3, 2, 2}).x("scale", {3}).x("B", {3}).tol(10));
  // The transformer normalizations (com.microsoft; SimplifiedLayerNormalization is ONNX Runtime's, in
  // ai.onnx; RMSNormalization is opset 23). No schema in ONNX 1.12: dtypes from ONNX Runtime's schemas
  // and the opset-23 spec (bfloat16 is not among the tested dtypes).
  add(B("SkipLayerNormalization").ms().without_schema(kFloats).x("input", S3).x("skip", S3).x("gamma", {4}).x("beta", {4})
          .x("bias", {4}).fl("epsilon", 1e-5f).outs(4).tol(10));
  add(B("SkipLayerNormalization", "skip [S, H], no beta, sum only").ms().without_schema(kFloats).x("input", S3)
          .x("skip", {3, 4}).kxd("gamma", {4}, Dom::Positive).none().x("bias", {4}).outs(4).omit_outputs({1, 2}).tol(10));
  add(B("SkipSimplifiedLayerNormalization").ms().without_schema(kFloats).x("input", {6, 4}).x("skip", {6, 4})
          .x("gamma", {4}).x("bias", {4}).outs(4).tol(10));
  add(B("SimplifiedLayerNormalization").without_schema(kFloats).x("X", S3).x("scale", {3, 4}).i("axis", 1).outs(2).tol(10)
          .note("ONNX Runtime's op in the ONNX domain"));
  add(B("RMSNormalization").opset(23).without_schema(kFloats).x("X", S3).x("scale", {1, 4}).i("axis", -2).tol(10));
  add(B("GroupNormalization").opset(21).without_schema(kFloats).x("X", {2, 4, 2, 3}).x("scale", {4}).x("bias", {4})
          .i("num_groups", 2).tol(10).note("GroupNormalization-21 (no schema in ONNX 1.12): scale and bias per channel"));
  add(B("GroupNormalization", "opset 18, per group").opset(18).without_schema(kFloats).x("X", {2, 6, 3}).x("scale", {3})
          .x("bias", {3}).i("num_groups", 3).fl("epsilon", 1e-3f).tol(10)
          .note("GroupNormalization-18 (no schema in ONNX 1.12): scale and bias per group"));
  // MeanVarianceNormalization: the default axes (batch and spatial: rows not contiguous), the last axis, a
  // middle one and all of them.
  add(B("MeanVarianceNormalization").x("X", {2, 3, 2, 2}).tol(10));
  add(B("MeanVarianceNormalization", "axes -1").x("X", S3).ints("axes", {-1}).tol(10));
  add(B("MeanVarianceNormalization", "axes 1").x("X", {2, 5, 3}).ints("axes", {1}).tol(10));
  add(B("MeanVarianceNormalization", "every axis").x("X", S3).ints("axes", {0, 1, 2}).tol(10));
  add(B("LpNormalization").x("input", S3, Dom::NonZero).tol(10));
  add(B("LpNormalization", "p 1, axis 1").x("input", S3, Dom::NonZero).i("p", 1).i("axis", 1).tol(10));

  // -- RotaryEmbedding (com.microsoft, and ai.onnx from opset 23) ------------------------------------------
  // Positions are int64 GPU values read at run time; a position beyond the caches (2^32 + 1, whose low
  // word is a valid row) makes the replay fail on both EPs.
  family = "rotary";
  const int64_t kBeyondRow = (int64_t(1) << 32) + 1;
  add(B("RotaryEmbedding").ms().without_schema(kFloats).x("input", {2, 3, 8}).fg("position_ids", DType::Int64, {2, 3}, ints_in(0, 5))
          .x("cos_cache", {6, 2}).x("sin_cache", {6, 2}).i("num_heads", 2).tol(10).note("products: 10x tolerance"));
  add(B("RotaryEmbedding", "interleaved, position offset, rotary dim").ms().without_schema(kFloats).x("input", {1, 3, 12})
          .fg("position_ids", DType::Int64, {}, fixed({2})).x("cos_cache", {5, 2}).x("sin_cache", {5, 2}).i("num_heads", 2)
          .i("rotary_embedding_dim", 4).i("interleaved", 1).tol(10));
  add(B("RotaryEmbedding", "4-D, position 2^32+1 on replay").ms().without_schema(kFloats).quick({DType::Float32})
          .x("input", {2, 2, 3, 4}).fg("position_ids", DType::Int64, {2, 3}, ints_in(0, 3))
          .second_fails(ints_with(0, 3, 4, kBeyondRow)).x("cos_cache", {4, 2}).x("sin_cache", {4, 2}).tol(10));
  add(B("RotaryEmbedding", "opset 23, no position_ids").opset(23).without_schema(kFloats).x("X", {2, 2, 3, 8})
          .x("cos_cache", {2, 3, 4}).x("sin_cache", {2, 3, 4}).tol(10));
  add(B("RotaryEmbedding", "opset 23, 3-D, interleaved").opset(23).without_schema(kFloats).x("X", {2, 3, 8})
          .x("cos_cache", {7, 2}).x("sin_cache", {7, 2}).fg("position_ids", DType::Int64, {2, 3}, ints_in(0, 6))
          .i("num_heads", 2).i("interleaved", 1).tol(10));

  // -- Block-quantized weights (com.microsoft MatMulNBits, GatherBlockQuantized) -------------------------------
  // The packed uint8 data are initializers of random bytes (every code of the bit width) or, once, a graph
  // input; scales of the varied float type; M = 1 and 3 take the GPU's rows kernel, M = 7 its tiled one.
  // GatherBlockQuantized's int64 index 2^32 + 1 on replay (its low word a valid row) fails on both EPs.
  family = "block_quant";
  {
    const std::vector<DType> kNBitsTypes = {DType::Float32, DType::Float16, DType::BFloat16};
    auto bytes = [](Shape s, uint32_t seed) {
      std::mt19937 r(seed);
      Tensor t(DType::UInt8, std::move(s));
      for (auto& v : t.span<uint8_t>()) v = uint8_t(r() & 0xff);
      return t;
    };
    const Gen small_scales = [](DType dt, const Shape& s, Rng& r) {
      Tensor t = make_values(DType::Float32, s, Dom::Unit, r);
      for (float& v : t.span<float>()) v *= 0.1f;
      return t.cast(dt);
    };
    auto nbits = [&](B b, int64_t K, int64_t N, int64_t bits, int64_t block) {
      return b.ms().without_schema(kNBitsTypes).i("K", K).i("N", N)
          .i("bits", bits).i("block_size", block).tol(10).note("products: 10x tolerance");
    };
    add(nbits(B("MatMulNBits", "4 bits, block 16, packed zero points, M 1").x("A", {1, 40}).k("B", bytes({6, 3, 8}, 1))
                  .kx("scales", {6, 3}, small_scales).k("zero_points", bytes({6, 2}, 2)), 40, 6, 4, 16));
    add(nbits(B("MatMulNBits", "8 bits, block 32, 3-D A with M 7, bias, B a graph input").x("A", {1, 7, 40})
                  .f("B", DType::UInt8, {5, 2, 32}).kx("scales", {5, 2}, small_scales).none().none().kx("bias", {5}, small_scales),
              40, 5, 8, 32));
    add(nbits(B("MatMulNBits", "2 bits, block 16, float zero points, M 3").x("A", {3, 33}).k("B", bytes({4, 3, 4}, 3))
                  .kx("scales", {4, 3}, small_scales).kx("zero_points", {4, 3}, ints_in(0, 3)), 33, 4, 2, 16));
    add(B("GatherBlockQuantized", "4 bits, zero points, int64 index 2^32+1 on replay").ms().without_schema(kNBitsTypes)
            .k("data", bytes({5, 16}, 4)).fg("indices", DType::Int64, {2, 2}, ints_in(-5, 4))
            .second_fails(ints_with(-5, 4, 1, kBeyondRow)).x("scales", {5, 2}).k("zero_points", bytes({5, 1}, 5))
            .i("bits", 4).i("block_size", 16).i("quantize_axis", 1));
    add(B("GatherBlockQuantized", "8 bits, 3-D, int32 indices").ms().without_schema(kNBitsTypes).k("data", bytes({3, 2, 20}, 6))
            .fg("indices", DType::Int32, {4}, ints_in(-3, 2)).x("scales", {3, 2, 2}).i("bits", 8).i("block_size", 16)
            .i("quantize_axis", 2));
  }

  // -- QuantizeLinear, DequantizeLinear: per tensor, per axis, blocked --------------------------------------------
  // QuantizeLinear's output type varies (float32 x: the GPU kernel's; x an odd integer over scale 2 is a tie);
  // DequantizeLinear takes x - zero_point in 64 bits (int32 values beyond 2^31 apart), then times the scale.
  family = "quantize";
  add(B("QuantizeLinear").tp("T2").fg("x", DType::Float32, S3, ints_in(-300, 300)).k("y_scale", Tensor::scalar<float>(2.0f))
          .xg("y_zero_point", {}, ints_in(0, 5)));
  add(B("QuantizeLinear", "per axis").tp("T2").f("x", DType::Float32, S3).f("y_scale", DType::Float32, {3}, Dom::Positive)
          .xg("y_zero_point", {3}, ints_in(0, 5)));
  // Blocked (opset 21): libonnx's newest schemas are opset 13's, whose types these cases vary (the 16-bit
  // types run in ONNX 1.23's node tests and GpuQuantize).
  add(B("QuantizeLinear", "blocked").opset(21).tp("T2").f("x", DType::Float32, {2, 5, 4})
          .f("y_scale", DType::Float32, {2, 3, 4}, Dom::Positive).xg("y_zero_point", {2, 3, 4}, ints_in(0, 5))
          .i("axis", 1).i("block_size", 2));
  add(B("DequantizeLinear").tp("T").x("x", S3).f("x_scale", DType::Float32, {}, Dom::Positive).xg("x_zero_point", {}, ints_in(0, 5)));
  add(B("DequantizeLinear", "per axis, no zero point").tp("T").x("x", S3).f("x_scale", DType::Float32, {3}, Dom::Positive));
  add(B("DequantizeLinear", "blocked, float16 scales").opset(21).x("x", {2, 5, 4})
          .f("x_scale", DType::Float16, {2, 3, 4}, Dom::Positive).xg("x_zero_point", {2, 3, 4}, ints_in(0, 5))
          .i("axis", 1).i("block_size", 2));
  // com.microsoft's (ONNX Runtime's 16-bit QDQ models): ONNX's at opset 21, so the 16-bit types at any ai.onnx opset.
  const std::vector<DType> ms_quantized = {DType::UInt8, DType::Int8, DType::UInt16, DType::Int16};
  add(B("QuantizeLinear", "com.microsoft, per axis").ms().tp("T2").without_schema(ms_quantized).f("x", DType::Float32, S3)
          .f("y_scale", DType::Float32, {3}, Dom::Positive).xg("y_zero_point", {3}, ints_in(0, 5))
          .note("com.microsoft.QuantizeLinear (no schema in ONNX 1.12): ONNX Runtime's quantized types"));
  add(B("DequantizeLinear", "com.microsoft").ms().without_schema(ms_quantized).x("x", S3)
          .f("x_scale", DType::Float32, {}, Dom::Positive).xg("x_zero_point", {}, ints_in(0, 5))
          .note("com.microsoft.DequantizeLinear (no schema in ONNX 1.12): ONNX Runtime's quantized types"));
  // DynamicQuantizeLinear: the range in one workgroup, then the elements (its scale and zero point are outputs).
  add(B("DynamicQuantizeLinear").tp("T1").x("x", S3).outs(3));
  // -- GroupQueryAttention (com.microsoft) ---------------------------------------------------------------------
  // seqlens_k is an int32 GPU value read at run time; total_sequence_length sizes the present (a value
  // the plan reads). A sequence length beyond the present makes the replay fail on both EPs.
  family = "attention";
  const std::vector<DType> kAttentionFloats = {DType::Float32, DType::Float16};
  const char* kScoresNote = "softmax of products: 10x tolerance";
  const char* kNoExtremes = "products of extreme values overflow in float32 on the GPU and not in double on the CPU";
  add(B("GroupQueryAttention", "prompt, 2 heads per kv head").ms().without_schema(kAttentionFloats).x("query", {2, 5, 32})
          .x("key", {2, 5, 16}).x("value", {2, 5, 16}).none().none().fg("seqlens_k", DType::Int32, {2}, fixed({4, 4}))
          .fg("total_sequence_length", DType::Int32, {}, fixed({5})).i("num_heads", 4).i("kv_num_heads", 2).outs(3)
          .tol(10).note(kScoresNote).extremes(Extremes::None, kNoExtremes));
  add(B("GroupQueryAttention", "decode, static buffer, rotary, window, softcap").ms().without_schema(kAttentionFloats)
          .x("query", {2, 1, 64}).x("key", {2, 1, 32}).x("value", {2, 1, 32}).x("past_key", {2, 2, 9, 16})
          .x("past_value", {2, 2, 9, 16}).fg("seqlens_k", DType::Int32, {2}, fixed({3, 7}))
          .fg("total_sequence_length", DType::Int32, {}, fixed({8})).x("cos_cache", {10, 4}).x("sin_cache", {10, 4})
          .i("num_heads", 4).i("kv_num_heads", 2).i("do_rotary", 1).i("local_window_size", 5).fl("softcap", 2.0f).outs(3)
          .tol(10).note(kScoresNote).extremes(Extremes::None, kNoExtremes));
  // position_ids (int64, read on the GPU after the prompt): 2^32 + 1 on replay, its low word a valid
  // row of the caches, must fail on both EPs.
  add(B("GroupQueryAttention", "decode, rotary position_ids 2^32+1 on replay, attention bias, head sink").ms()
          .without_schema(kAttentionFloats).quick({DType::Float32}).x("query", {2, 1, 64}).x("key", {2, 1, 32})
          .x("value", {2, 1, 32}).x("past_key", {2, 2, 6, 16}).x("past_value", {2, 2, 6, 16})
          .fg("seqlens_k", DType::Int32, {2}, fixed({4, 2})).fg("total_sequence_length", DType::Int32, {}, fixed({5}))
          .x("cos_cache", {6, 8}).x("sin_cache", {6, 8}).fg("position_ids", DType::Int64, {2, 1}, fixed({5, 1}))
          .second_fails(fixed({(int64_t(1) << 32) + 1, 1})).x("attention_bias", {2, 1, 1, 5}).x("head_sink", {4})
          .i("num_heads", 4).i("kv_num_heads", 2).i("do_rotary", 1).outs(3).tol(10).note(kScoresNote)
          .extremes(Extremes::None, kNoExtremes));
  add(B("GroupQueryAttention", "packed, smooth softmax, seqlens_k beyond the present on replay").ms().without_schema(kAttentionFloats)
          .quick({DType::Float32}).x("query", {2, 1, 48}).none().none().x("past_key", {2, 1, 6, 8}).x("past_value", {2, 1, 6, 8})
          .fg("seqlens_k", DType::Int32, {2}, fixed({5, 2})).second_fails(fixed({5, 6}))
          .fg("total_sequence_length", DType::Int32, {}, fixed({6})).i("num_heads", 4).i("kv_num_heads", 1)
          .i("smooth_softmax", 1).outs(3).tol(10).note(kScoresNote).extremes(Extremes::None, kNoExtremes));

  // -- MultiHeadAttention (com.microsoft), Attention (ONNX, opset 23) ------------------------------------------
  add(B("MultiHeadAttention", "bias, key padding mask, attention bias").ms().without_schema(kAttentionFloats)
          .x("query", {2, 3, 16}).x("key", {2, 4, 16}).x("value", {2, 4, 16}).x("bias", {48})
          .fg("key_padding_mask", DType::Int32, {2, 4}, fixed({1, 1, 0, 1, 1, 1, 1, 0})).x("attention_bias", {1, 2, 3, 4})
          .i("num_heads", 2).tol(10).note(kScoresNote).extremes(Extremes::None, kNoExtremes));
  add(B("MultiHeadAttention", "past, unidirectional, key counts").ms().without_schema(kAttentionFloats).quick({DType::Float32})
          .x("query", {2, 2, 16}).x("key", {2, 2, 16}).x("value", {2, 2, 16}).none()
          .fg("key_padding_mask", DType::Int32, {2}, fixed({4, 3})).none().x("past_key", {2, 2, 2, 8})
          .x("past_value", {2, 2, 2, 8}).i("num_heads", 2).i("unidirectional", 1).outs(3).tol(10).note(kScoresNote)
          .extremes(Extremes::None, kNoExtremes));
  // nonpad_kv_seqlen is an int64 GPU value read at run time: the replay's 2^32 + 1 (more keys than there
  // are, its low word 1) must let every key through, as on the CPU.
  const int64_t kBeyondKeys = (int64_t(1) << 32) + 1;
  add(B("Attention", "4-D, GQA, bool mask, causal, past").opset(23).without_schema(kAttentionFloats).x("Q", {2, 4, 3, 8})
          .x("K", {2, 2, 3, 8}).x("V", {2, 2, 3, 8}).fg("attn_mask", DType::Bool, {3, 5}, fixed({1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0}))
          .x("past_key", {2, 2, 2, 8}).x("past_value", {2, 2, 2, 8}).i("is_causal", 1).outs(3).tol(10).note(kScoresNote)
          .extremes(Extremes::None, kNoExtremes));
  add(B("Attention", "3-D, float mask, softcap, qk_matmul_output softmax").opset(23).without_schema(kAttentionFloats)
          .quick({DType::Float32}).x("Q", {2, 3, 16}).x("K", {2, 4, 16}).x("V", {2, 4, 8}).x("attn_mask", {2, 1, 3, 4})
          .i("q_num_heads", 2).i("kv_num_heads", 2).fl("softcap", 2.0f).i("qk_matmul_output_mode", 3).outs(4)
          .omit_outputs({1, 2}).tol(10).note(kScoresNote).extremes(Extremes::None, kNoExtremes));
  add(B("Attention", "opset 24, nonpad_kv_seqlen 2^32+1 on replay, decode").opset(24).without_schema(kAttentionFloats)
          .quick({DType::Float32}).x("Q", {2, 4, 1, 8}).x("K", {2, 2, 6, 8}).x("V", {2, 2, 6, 8}).none().none().none()
          .fg("nonpad_kv_seqlen", DType::Int64, {2}, fixed({4, 6})).second(fixed({kBeyondKeys, 3})).i("is_causal", 1)
          .tol(10).note(kScoresNote).extremes(Extremes::None, kNoExtremes));

  // -- Losses --------------------------------------------------------------------------------------------------
  family = "loss";
  add(B("NegativeLogLikelihoodLoss").x("input", {2, 3, 4}).fg("target", DType::Int64, {2, 4}, ints_in(0, 2)).tol(10));
  add(B("NegativeLogLikelihoodLoss", "weight, sum, ignore_index, int32 target").x("input", {2, 3, 4})
          .fg("target", DType::Int32, {2, 4}, ints_in(0, 2)).x("weight", {3}, Dom::Positive).s("reduction", "sum").i("ignore_index", 1).tol(10));
  add(B("NegativeLogLikelihoodLoss", "Tind, none").tp("Tind").f("input", DType::Float32, {3, 4}).xg("target", {3}, ints_in(0, 3))
          .s("reduction", "none"));
  add(B("NegativeLogLikelihoodLoss", "ignore_index 2^32+1, int64 target").x("input", {2, 3, 4})
          .fg("target", DType::Int64, {2, 4}, fixed({kBeyond, 1, 0, 2, 1, kBeyond, 2, 0})).i("ignore_index", kBeyond).tol(10)
          .note("the ignored targets and target 1 share their low word"));
  add(B("NegativeLogLikelihoodLoss", "target 2^32+1 on replay").quick().x("input", {2, 3, 4}).s("reduction", "none")
          .fg("target", DType::Int64, {2, 4}, ints_in(0, 2)).second_fails(fixed({0, 1, kBeyond, 2, 1, 0, 2, 0})));
  add(B("SoftmaxCrossEntropyLoss").x("scores", {2, 3, 4}).fg("labels", DType::Int64, {2, 4}, ints_in(0, 2)).outs(2).tol(10));
  add(B("SoftmaxCrossEntropyLoss", "weights, none, ignore_index -1").x("scores", {2, 3}).fg("labels", DType::Int64, {2}, fixed({-1, 2}))
          .x("weights", {3}, Dom::Positive).s("reduction", "none").i("ignore_index", -1).tol(10));
  add(B("SoftmaxCrossEntropyLoss", "Tind, sum").tp("Tind").f("scores", DType::Float32, {3, 4}).xg("labels", {3}, ints_in(0, 3))
          .s("reduction", "sum").tol(10));

  // -- Conv, pooling, Resize ---------------------------------------------------------------------------------------
  family = "conv";
  add(B("Conv").x("X", {1, 2, 5, 5}).x("W", {3, 2, 3, 3}).x("B", {3}).ints("pads", {1, 1, 1, 1}).tol(10));
  add(B("Conv", "group 2, stride 2, dilation 2").x("X", {1, 4, 7, 7}).x("W", {4, 2, 2, 2}).i("group", 2)
          .ints("strides", {2, 2}).ints("dilations", {2, 2}).tol(10));
  add(B("Conv", "1-D").x("X", {2, 2, 7}).x("W", {3, 2, 3}).x("B", {3}).s("auto_pad", "SAME_UPPER").tol(10));
  // DeformConv: offsets in [-3, 3] move taps across pixels and out of the image (into the zeros).
  const std::vector<DType> deform_types = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64};
  const std::string deform_note = "DeformConv-22 (no schema in ONNX 1.12): float types; no overflowing extremes (the CPU "
                                  "sums the samples in double)";
  add(B("DeformConv", "padding").opset(22).without_schema(deform_types).x("X", {1, 2, 4, 5}).x("W", {3, 2, 2, 2})
          .x("offset", {1, 8, 5, 6}).ints("pads", {1, 1, 1, 1}).tol(10)
          .extremes(Extremes::NoOverflow, "samples summed in double on the CPU").note(deform_note));
  add(B("DeformConv", "bias, mask, groups, offset groups, stride, dilation").opset(22).without_schema(deform_types)
          .x("X", {2, 4, 6, 5}).x("W", {4, 2, 2, 3}).x("offset", {2, 24, 3, 2}).x("B", {4}).x("mask", {2, 12, 3, 2})
          .i("group", 2).i("offset_group", 2).ints("strides", {2, 2}).ints("dilations", {2, 1}).ints("pads", {0, 1, 1, 0})
          .tol(10).extremes(Extremes::NoOverflow, "samples summed in double on the CPU").note(deform_note));
  add(B("DeformConv", "several tiles: 40 channels, 90 columns, 54 taps").opset(22).without_schema(deform_types)
          .x("X", {1, 6, 9, 10}).x("W", {40, 6, 3, 3}).x("offset", {1, 18, 9, 10}).x("B", {40})
          .ints("pads", {1, 1, 1, 1}).tol(10).extremes(Extremes::NoOverflow, "samples summed in double on the CPU")
          .note(deform_note + "; the tile edges in every direction"));
  add(B("ConvTranspose").x("X", {1, 2, 3, 3}).x("W", {2, 3, 3, 3}).x("B", {3}).tol(10));
  add(B("ConvTranspose", "stride 2, pads, output_padding").x("X", {1, 2, 3, 3}).x("W", {2, 2, 3, 3})
          .ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}).ints("output_padding", {1, 1}).tol(10));
  add(B("ConvInteger").tp("T1").x("x", {1, 2, 5, 5}).f("w", DType::UInt8, {3, 2, 3, 3}).kx("x_zero_point", {}, fixed({3}))
          .k("w_zero_point", Tensor::scalar<uint8_t>(200)).ints("pads", {1, 1, 1, 1}));
  add(B("ConvInteger", "T2, no zero points").tp("T2").f("x", DType::UInt8, {1, 2, 5, 5}).x("w", {3, 2, 2, 2}).ints("strides", {2, 2}));
  // QLinearConv: y_scale large enough that the requantized sums spread over the output type's range.
  auto qconv_y_scale = [](DType, const Shape& s, Rng& r) { return Tensor::scalar<float>(float(uniform_real(r, 300, 1000))).reshaped(s); };
  add(B("QLinearConv").tp("T1").x("x", {1, 2, 5, 5}).f("x_scale", DType::Float32, {}, Dom::Positive).kx("x_zero_point", {}, fixed({3}))
          .f("w", DType::UInt8, {3, 2, 3, 3}).f("w_scale", DType::Float32, {3}, Dom::Positive)
          .fg("w_zero_point", DType::UInt8, {3}, fixed({0, 128, 255})).fg("y_scale", DType::Float32, {}, qconv_y_scale)
          .k("y_zero_point", Tensor::scalar<uint8_t>(5)).fg("B", DType::Int32, {3}, fixed({-1000, 0, 70000}))
          .ints("pads", {1, 1, 1, 1}).note("per-channel w scales and zero points, a bias"));
  add(B("QLinearConv", "T3, int8 weights, group 2, strides").tp("T3").f("x", DType::UInt8, {2, 4, 5, 6})
          .f("x_scale", DType::Float32, {}, Dom::Positive).k("x_zero_point", Tensor::scalar<uint8_t>(128))
          .f("w", DType::Int8, {4, 2, 2, 3}).f("w_scale", DType::Float32, {}, Dom::Positive).k("w_zero_point", Tensor::scalar<int8_t>(0))
          .fg("y_scale", DType::Float32, {}, qconv_y_scale).kx("y_zero_point", {}, fixed({2})).i("group", 2).ints("strides", {2, 1}));
  // ONNX Runtime's QOperator ops (com.microsoft): int8 / uint8 over their whole range. Scales and zero
  // points are initializers, as its quantizer writes them (the table ops need them constant); QLinearAdd's
  // A_scale and B_scale are graph inputs (its kernel binds scales it cannot make uniforms).
  family = "qlinear";
  const std::vector<DType> kQ{DType::Int8, DType::UInt8};
  auto qscale = [](double lo, double hi) {
    return [lo, hi](DType, const Shape& s, Rng& r) { return Tensor::scalar<float>(float(uniform_real(r, lo, hi))).reshaped(s); };
  };
  add(B("QLinearAdd").ms().without_schema(kQ).x("A", {2, 3, 4}).fg("A_scale", DType::Float32, {}, qscale(0.01, 0.05))
          .kx("A_zero_point", {}, fixed({3})).x("B", {3, 1}).fg("B_scale", DType::Float32, {}, qscale(0.01, 0.05))
          .kx("B_zero_point", {}, fixed({5})).k("C_scale", Tensor::scalar<float>(0.04f)).kx("C_zero_point", {}, fixed({1}))
          .note("broadcast B"));
  add(B("QLinearMul").ms().without_schema(kQ).x("A", {4, 6}).k("A_scale", Tensor::scalar<float>(0.03f))
          .kx("A_zero_point", {}, fixed({2})).x("B", {6}).k("B_scale", Tensor::scalar<float>(0.02f))
          .kx("B_zero_point", {}, fixed({7})).k("C_scale", Tensor::scalar<float>(0.11f)).kx("C_zero_point", {}, fixed({4})));
  for (const char* op : {"QLinearSigmoid", "QLinearLeakyRelu"})
    add(B(op).ms().without_schema(kQ).x("X", {2, 5, 7}).k("X_scale", Tensor::scalar<float>(0.05f)).kx("X_zero_point", {}, fixed({6}))
            .k("Y_scale", Tensor::scalar<float>(0.007f)).kx("Y_zero_point", {}, fixed({2})));
  add(B("QLinearSoftmax", "axis 1 of 3").ms().without_schema(kQ).x("X", {2, 6, 3}).k("X_scale", Tensor::scalar<float>(0.05f))
          .kx("X_zero_point", {}, fixed({6})).k("Y_scale", Tensor::scalar<float>(1.0f / 256)).kx("Y_zero_point", {}, fixed({0}))
          .i("opset", 13).i("axis", 1));
  add(B("QLinearGlobalAveragePool").ms().without_schema(kQ).x("X", {2, 3, 5, 4}).k("x_scale", Tensor::scalar<float>(0.05f))
          .kx("x_zero_point", {}, fixed({9})).k("y_scale", Tensor::scalar<float>(0.01f)).kx("y_zero_point", {}, fixed({3})));
  add(B("QLinearGlobalAveragePool", "channels_last").ms().without_schema(kQ).x("X", {2, 3, 4, 6})
          .k("x_scale", Tensor::scalar<float>(0.05f)).kx("x_zero_point", {}, fixed({9})).k("y_scale", Tensor::scalar<float>(0.01f))
          .kx("y_zero_point", {}, fixed({3})).i("channels_last", 1));
  add(B("QLinearAveragePool").ms().without_schema(kQ).x("X", {1, 3, 7, 6}).k("x_scale", Tensor::scalar<float>(0.05f))
          .kx("x_zero_point", {}, fixed({9})).k("y_scale", Tensor::scalar<float>(0.03f)).kx("y_zero_point", {}, fixed({3}))
          .ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}));
  add(B("QGemm").ms().without_schema(kQ).x("A", {3, 5}).k("a_scale", Tensor::scalar<float>(0.02f)).kx("a_zero_point", {}, fixed({3}))
          .f("B", DType::Int8, {4, 5}).k("b_scale", Tensor::from_vector<float>({4}, {0.01f, 0.02f, 0.015f, 0.03f}))
          .k("b_zero_point", Tensor::from_vector<int8_t>({4}, {0, 1, -2, 0})).k("C", Tensor::from_vector<int32_t>({4}, {-300, 0, 50, 900}))
          .k("y_scale", Tensor::scalar<float>(0.1f)).kx("y_zero_point", {}, fixed({5})).i("transB", 1)
          .note("A and Y of the varied type; int8 B per column, a bias"));
  add(B("QGemm", "float output, alpha").ms().without_schema(kQ).x("A", {4, 3}).k("a_scale", Tensor::scalar<float>(0.02f))
          .kx("a_zero_point", {}, fixed({3})).x("B", {4, 5}).k("b_scale", Tensor::scalar<float>(0.01f))
          .kx("b_zero_point", {}, fixed({1})).i("transA", 1).fl("alpha", 0.5f));
  add(B("QLinearConcat").ms().without_schema(kQ).k("Y_scale", Tensor::scalar<float>(0.03f)).kx("Y_zero_point", {}, fixed({4}))
          .x("X0", {2, 2, 3}).k("X0_scale", Tensor::scalar<float>(0.05f)).kx("X0_zero_point", {}, fixed({1}))
          .x("X1", {2, 4, 3}).k("X1_scale", Tensor::scalar<float>(0.03f)).kx("X1_zero_point", {}, fixed({4}))
          .i("axis", 1).note("X1 at Y's parameters: a copy"));

  family = "pool";
  add(B("AveragePool").x("X", {1, 2, 5, 5}).ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).tol(10));
  add(B("AveragePool", "pads, count_include_pad, ceil").x("X", {1, 2, 5, 5}).ints("kernel_shape", {3, 3}).ints("strides", {2, 2})
          .ints("pads", {1, 1, 1, 1}).i("count_include_pad", 1).i("ceil_mode", 1).tol(10));
  add(B("MaxPool").x("X", {1, 2, 5, 5}).ints("kernel_shape", {2, 2}).ints("strides", {2, 2}));
  add(B("MaxPool", "indices, pads, dilation").x("X", {1, 2, 6, 6}).ints("kernel_shape", {2, 2}).ints("pads", {1, 1, 1, 1})
          .ints("dilations", {2, 2}).outs(2));
  add(B("LpPool").x("X", {1, 2, 5, 5}).ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).i("p", 3).tol(10));
  add(B("GlobalLpPool").x("X", {2, 3, 4, 5}).tol(10));
  add(B("GlobalAveragePool").x("X", {2, 3, 4, 5}).tol(10));
  add(B("GlobalMaxPool").x("X", {2, 3, 4, 5}));
  add(B("LRN").x("X", {1, 5, 3, 3}).i("size", 3).fl("alpha", 0.01f).fl("beta", 0.6f).fl("bias", 1.5f).tol(10));
  // Boxes (x1, y1, x2, y2) inside and around a 6 x 6 image, some beyond its edges.
  Gen boxes = [](DType dt, const Shape& s, Rng& r) {
    Tensor t(DType::Float64, s);
    for (int64_t i = 0; i < s[0]; ++i) {
      double x1 = uniform_real(r, -1.5, 4), y1 = uniform_real(r, -1.5, 4);
      double* b = t.data<double>() + i * 4;
      b[0] = x1, b[1] = y1, b[2] = x1 + uniform_real(r, 0.5, 4), b[3] = y1 + uniform_real(r, 0.5, 4);
    }
    return t.cast(DType::Float32).cast(dt);
  };
  add(B("RoiAlign").opset(16).tp("T1").x("X", {2, 2, 6, 6}).xg("rois", {3, 4}, boxes).fg("batch_indices", DType::Int64, {3}, fixed({1, 0, 1}))
          .i("output_height", 2).i("output_width", 3).i("sampling_ratio", 2).fl("spatial_scale", 0.9f).tol(10));
  add(B("RoiAlign", "batch index 2^32 on replay").opset(16).tp("T1").quick({DType::Float32}).x("X", {2, 1, 6, 6})
          .xg("rois", {2, 4}, boxes).fg("batch_indices", DType::Int64, {2}, fixed({1, 0})).second_fails(fixed({int64_t(1) << 32, 1}))
          .i("output_height", 2).i("output_width", 2).tol(10).note("low word 0: a kernel reading only the low word would pool image 0"));
  add(B("RoiAlign", "max, output_half_pixel, adaptive").opset(16).tp("T1").x("X", {1, 1, 6, 6}).xg("rois", {2, 4}, boxes)
          .fg("batch_indices", DType::Int64, {2}, fixed({0, 0})).s("mode", "max").s("coordinate_transformation_mode", "output_half_pixel")
          .i("output_height", 3).i("output_width", 2).tol(10)
          .extremes(Extremes::None, "NaN: the CPU's std::max and WGSL's max keep different operands"));
  add(B("Col2Im").opset(18).without_schema(kFloats).x("input", {1, 8, 6}).k("image_shape", i64v({3, 4})).k("block_shape", i64v({2, 2}))
          .tol(10).note("Col2Im-18 (no schema in ONNX 1.12): float types"));
  add(B("Col2Im", "strides, pads, dilations").opset(18).without_schema(kFloats).x("input", {2, 4, 9}).k("image_shape", i64v({4, 5}))
          .k("block_shape", i64v({2, 2})).ints("strides", {2, 1}).ints("pads", {1, 0, 1, 0}).ints("dilations", {1, 2}).tol(10)
          .note("Col2Im-18 (no schema in ONNX 1.12): float types"));
  family = "resize";
  add(B("Resize", "nearest, scales").tp("T1").x("X", {1, 1, 2, 3}).none().k("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 1.5f})));
  add(B("Resize", "nearest, sizes, asymmetric floor").tp("T1").x("X", {1, 1, 3, 2}).none().none().k("sizes", i64v({1, 1, 5, 3}))
          .s("coordinate_transformation_mode", "asymmetric").s("nearest_mode", "floor"));
  add(B("Resize", "linear").tp("T1").only(kFloats).x("X", {1, 1, 2, 3}).none().k("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2}))
          .s("mode", "linear").tol(10).note("linear and cubic: float types only here (the nearest cases cover every type)"));
  add(B("Resize", "cubic, align_corners").tp("T1").only(kFloats).x("X", {1, 1, 3, 3}).none().k("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2}))
          .s("mode", "cubic").s("coordinate_transformation_mode", "align_corners").tol(10));
  add(B("Upsample").opset(9).x("X", {1, 1, 2, 3}).k("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 1.5f}))
          .note("Upsample-9 (deprecated since opset 10)"));
  add(B("Upsample", "linear").opset(9).only(kFloats).x("X", {1, 1, 2, 3}).k("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2}))
          .s("mode", "linear").tol(10).note("linear: float types only here (the nearest case covers every type)"));

  family = "grid";
  const std::string gs_note = "GridSample-22 (libonnx's schema is GridSample-16): float types; grid values in [-3, 3] "
                              "reach the padding; no overflowing extremes (the CPU sums taps in double)";
  add(B("GridSample").opset(22).tp("T1").without_schema(kFloats).x("X", {1, 2, 3, 4}).f("grid", DType::Float32, {1, 2, 3, 2})
          .tol(10).extremes(Extremes::NoOverflow, "taps summed in double on the CPU").note(gs_note));
  add(B("GridSample", "nearest, border, align_corners").opset(22).tp("T1").without_schema(kFloats).x("X", {2, 1, 3, 4})
          .f("grid", DType::Float32, {2, 3, 2, 2}).s("mode", "nearest").s("padding_mode", "border").i("align_corners", 1)
          .tol(10).extremes(Extremes::NoOverflow, "taps summed in double on the CPU").note(gs_note));
  add(B("GridSample", "cubic, reflection").opset(22).tp("T1").without_schema(kFloats).x("X", {1, 1, 4, 3})
          .f("grid", DType::Float16, {1, 2, 3, 2}).s("mode", "cubic").s("padding_mode", "reflection")
          .tol(10).extremes(Extremes::NoOverflow, "taps summed in double on the CPU").note(gs_note + "; a float16 grid"));
  add(B("GridSample", "3-D linear, reflection, align_corners").opset(22).tp("T1").without_schema(kFloats)
          .x("X", {1, 2, 2, 3, 2}).f("grid", DType::Float32, {1, 2, 2, 1, 3}).s("padding_mode", "reflection").i("align_corners", 1)
          .tol(10).extremes(Extremes::NoOverflow, "taps summed in double on the CPU").note(gs_note));
  add(B("AffineGrid").opset(20).without_schema(kFloats).x("theta", {2, 2, 3}).k("size", i64v({2, 3, 4, 5})).tol(10)
          .note("AffineGrid-20 (no schema in ONNX 1.12): float types"));
  add(B("AffineGrid", "3-D, align_corners").opset(20).without_schema(kFloats).x("theta", {1, 3, 4}).k("size", i64v({1, 1, 2, 3, 4}))
          .i("align_corners", 1).tol(10).note("AffineGrid-20 (no schema in ONNX 1.12): float types"));

  family = "spectral";
  add(B("DFT").opset(20).without_schema(kFloats).x("input", {2, 5, 3, 2}).none().k("axis", Tensor::scalar<int64_t>(1))
          .tol(10).extremes(Extremes::None, "sums of products: the CPU's double sums differ from f32 at the extremes")
          .note("DFT-20 (no schema in ONNX 1.12): float types; a complex signal along axis 1"));
  add(B("DFT", "inverse onesided, dft_length 6").opset(20).without_schema(kFloats).x("input", {1, 3, 4, 2})
          .k("dft_length", Tensor::scalar<int64_t>(6)).k("axis", Tensor::scalar<int64_t>(-2)).i("inverse", 1).i("onesided", 1)
          .tol(10).extremes(Extremes::None, "sums of products: the CPU's double sums differ from f32 at the extremes")
          .note("DFT-20: a Hermitian half-spectrum to a real signal"));
  add(B("DFT", "opset 17, real onesided, padded").opset(17).tp("T1").x("input", {2, 5, 1}).k("dft_length", Tensor::scalar<int64_t>(7))
          .i("axis", 1).i("onesided", 1).tol(10)
          .extremes(Extremes::None, "sums of products: the CPU's double sums differ from f32 at the extremes"));
  add(B("STFT").opset(17).tp("T1").x("signal", {2, 16, 1}).k("frame_step", Tensor::scalar<int64_t>(4)).x("window", {8}).tol(10)
          .extremes(Extremes::None, "sums of products: the CPU's double sums differ from f32 at the extremes"));
  add(B("STFT", "complex, frame_length, two-sided").opset(17).tp("T1").x("signal", {1, 12, 2}).k("frame_step", Tensor::scalar<int64_t>(3))
          .none().k("frame_length", Tensor::scalar<int64_t>(5)).i("onesided", 0).tol(10)
          .extremes(Extremes::None, "sums of products: the CPU's double sums differ from f32 at the extremes"));
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    add(B(op).opset(17).tp("T2").only(kFloats).fg("size", DType::Int64, {}, fixed({10})).dtype_attr("output_datatype").tol(10)
            .note("float outputs (integer ones truncate values in [0, 1], where f32 and double cos may fall on "
                  "either side of 1); the size a run-time value"));
    add(B(op, "symmetric").opset(17).tp("T2").only({DType::Float32}).fg("size", DType::Int32, {}, fixed({7}))
            .dtype_attr("output_datatype").i("periodic", 0).tol(10));
  }
  add(B("MelWeightMatrix").opset(17).tp("T3").only(kFloats).fg("num_mel_bins", DType::Int64, {}, fixed({6}))
          .fg("dft_length", DType::Int64, {}, fixed({32})).fg("sample_rate", DType::Int64, {}, fixed({16000}))
          .fg("lower_edge_hertz", DType::Float32, {}, [](DType, const Shape& s, Rng&) { return Tensor::scalar<float>(100.0f).reshaped(s); })
          .fg("upper_edge_hertz", DType::Float32, {}, [](DType, const Shape& s, Rng&) { return Tensor::scalar<float>(7000.0f).reshaped(s); })
          .dtype_attr("output_datatype").note("the bin edges from the known inputs on the host, the triangles on the GPU"));

  family = "rnn";
  add(B("RNN").x("X", {3, 2, 4}).x("W", {1, 5, 4}).x("R", {1, 5, 5}).x("B", {1, 10}).i("hidden_size", 5).outs(2).tol(10));
  add(B("GRU", "bidirectional, sequence_lens, linear_before_reset").x("X", {4, 2, 3}).x("W", {2, 12, 3}).x("R", {2, 12, 4})
          .x("B", {2, 24}).fg("sequence_lens", DType::Int32, {2}, fixed({4, 2})).x("initial_h", {2, 2, 4})
          .i("hidden_size", 4).s("direction", "bidirectional").i("linear_before_reset", 1).outs(2).tol(10)
          .note("steps past a row's length are zeros in Y"));
  add(B("GRU", "reverse").x("X", {3, 1, 2}).x("W", {1, 9, 2}).x("R", {1, 9, 3}).i("hidden_size", 3).s("direction", "reverse")
          .outs(2).tol(10).quick());
  add(B("LSTM", "layout 1, peepholes, clip").x("X", {2, 3, 3}).x("W", {1, 16, 3}).x("R", {1, 16, 4}).x("B", {1, 32}).none()
          .x("initial_h", {2, 1, 4}).x("initial_c", {2, 1, 4}).kxd("P", {1, 12}, Dom::Wide).i("hidden_size", 4).i("layout", 1)
          .fl("clip", 2.0f).outs(3).tol(10)
          .note("P an initializer: with every input and output the dispatch would bind 11 buffers, so P travels as uniforms"));
  add(B("LSTM", "activations, input_forget").x("X", {2, 1, 2}).x("W", {1, 12, 2}).x("R", {1, 12, 3}).i("hidden_size", 3)
          .i("input_forget", 1).a([](onnx::NodeProto& n, DType) {
            auto* a = attr(n, "activations", onnx::AttributeProto_AttributeType_STRINGS);
            for (const char* f : {"HardSigmoid", "LeakyRelu", "ScaledTanh"}) a->add_strings(f);
            auto* al = attr(n, "activation_alpha", onnx::AttributeProto_AttributeType_FLOATS);
            for (float v : {0.3f, 0.05f, 0.9f}) al->add_floats(v);
            auto* be = attr(n, "activation_beta", onnx::AttributeProto_AttributeType_FLOATS);
            for (float v : {0.4f, 1.1f}) be->add_floats(v);
          }).outs(3).tol(10).quick());

  // -- LinearAttention and CausalConvWithState (opset 25: no schema in ONNX 1.12) ------------------------------
  // Each update rule; decay per head and per key dimension, beta per head and shared, the erase gate, a past
  // state, grouped query heads, an explicit scale, 70 value columns (two column blocks, the second partial).
  // Keys and queries in (-0.95, 0.95), beta in [0.05, 0.4] and decays in [-1, 0] (log space) keep the delta
  // rule's state bounded, as in the models (normalized keys, beta a sigmoid).
  family = "linear_attention";
  {
    const std::vector<DType> kLaTypes = {DType::Float32, DType::Float16, DType::Float64};
    auto la = [&](std::string variant, std::string rule, int64_t hq, int64_t hkv, int64_t dk, int64_t dv, int64_t t) {
      B b("LinearAttention", std::move(variant));
      b.opset(25).without_schema(kLaTypes).x("query", {2, t, hq * dk}, Dom::Unit).x("key", {2, t, hkv * dk}, Dom::Unit)
          .x("value", {2, t, hkv * dv}).i("q_num_heads", hq).i("kv_num_heads", hkv).s("update_rule", rule).outs(2).tol(10)
          .extremes(Extremes::None, "a recurrence: extreme values overflow the state in float32 and not in the CPU's float64");
      return b;
    };
    add(la("", "gated_delta", 2, 2, 8, 4, 3).x("past_state", {2, 2, 8, 4}, Dom::Unit).xg("decay", {2, 3, 2}, reals_in(-1, 0))
            .xg("beta", {2, 3, 2}, reals_in(0.05, 0.4)).note("products over d_k: 10x tolerance"));
    add(la("gated_delta, decay per key dim, shared beta, erase gate, grouped heads", "gated_delta", 4, 2, 8, 4, 3).none()
            .xg("decay", {2, 3, 16}, reals_in(-1, 0)).xg("beta", {2, 3, 1}, reals_in(0.05, 0.4)).x("erase_gate", {2, 3, 16}, Dom::Unit)
            .quick({DType::Float32}));
    add(la("linear, scale", "linear", 2, 1, 4, 70, 4).fl("scale", 0.5f).quick({DType::Float32}));
    add(la("gated, decay per head, past", "gated", 1, 1, 16, 8, 2).x("past_state", {2, 1, 16, 8}, Dom::Unit)
            .xg("decay", {2, 2, 1}, reals_in(-1, 0)).quick({DType::Float32}));
    add(la("delta, no past", "delta", 2, 2, 4, 4, 5).none().none().xg("beta", {2, 5, 2}, reals_in(0.05, 0.4)).quick({DType::Float32}));
    add(la("no tokens: the past state passes through", "gated", 1, 1, 4, 4, 0).x("past_state", {2, 1, 4, 4})
            .xg("decay", {2, 0, 1}, reals_in(-1, 0)).quick({DType::Float32}));
    add(B("CausalConvWithState").opset(25).without_schema(kLaTypes).x("input", {2, 3, 5}).x("weight", {3, 1, 4}).x("bias", {3})
            .x("past_state", {2, 3, 3}).s("activation", "silu").outs(2).tol(10)
            .extremes(Extremes::NoOverflow, "sums of products: the CPU's float64 does not overflow where float32 does"));
    add(B("CausalConvWithState", "no bias, no past, longer than the state").opset(25).without_schema(kLaTypes).x("input", {1, 4, 2})
            .x("weight", {4, 1, 4}).outs(2).tol(10).quick({DType::Float32}));
    add(B("CausalConvWithState", "one tap").opset(25).without_schema(kLaTypes).x("input", {2, 2, 3}).x("weight", {2, 1, 1})
            .s("activation", "swish").outs(2).tol(10).quick({DType::Float32}));
  }

  // -- Larger shapes -----------------------------------------------------------------------------------------
  // Rows longer than a workgroup, outputs of many workgroups, tiles cut by the edges: the multi-pass
  // paths of the kernels, for float32 and the 64-bit integers (the pipelines are mostly the ones above:
  // sizes are uniforms).
  family = "large";
  const std::vector<DType> kBig = {DType::Float32, DType::Int64, DType::UInt64};
  add(B("Add", "large, broadcast").quick(kBig).x("A", {300, 257}).x("B", {257}));
  add(B("Where", "large").quick(kBig).f("condition", DType::Bool, {300, 1}).x("X", {300, 257}).x("Y", {257}));
  add(B("Cast", "large, to int64").tp("T1").quick({DType::Float32, DType::UInt64}).xg("input", {300, 257}, cast_input(DType::Int64))
          .i("to", int64_t(DType::Int64)));
  add(B("ReduceSum", "large rows").quick(kBig).x("data", {3, 1000}).k("axes", i64v({1})));
  add(B("ReduceSum", "large, all axes").quick(kBig).x("data", {40, 50, 3}));
  add(B("ReduceSum", "large, axis 0").quick(kBig).x("data", {999, 3}).k("axes", i64v({0})));
  add(B("ReduceMax", "large rows").quick(kBig).x("data", {3, 1000}).ints("axes", {1}));
  add(B("ReduceMin", "large, all axes").quick(kBig).x("data", {40, 50, 3}).i("keepdims", 0));
  add(B("ReduceMean", "large rows").quick(kBig).x("data", {4, 999}).ints("axes", {-1}).tol(10));
  add(B("ReduceSumSquare", "large rows").quick(kBig).x("data", {3, 1000}).ints("axes", {1}).tol(10));
  add(B("ArgMax", "large rows, ties").quick(kBig).x("data", {3, 1000}, Dom::Tricky).i("axis", 1));
  add(B("ArgMin", "large rows, last index").quick(kBig).x("data", {3, 1000}, Dom::Tricky).i("axis", 1).i("select_last_index", 1));
  add(B("ArgMax", "large, axis 0").quick(kBig).x("data", {700, 3}, Dom::Tricky));
  add(B("CumSum", "large rows").quick(kBig).x("x", {2, 700}).k("axis", Tensor::scalar<int64_t>(1)).tol(10));
  add(B("CumSum", "large, exclusive reverse, axis 0").quick(kBig).x("x", {700, 3}).k("axis", Tensor::scalar<int64_t>(0))
          .i("exclusive", 1).i("reverse", 1).tol(10));
  add(B("TopK", "large rows").quick(kBig).x("X", {2, 700}).k("K", i64v({7})).outs(2));
  add(B("TopK", "large, axis 0, smallest, ties").quick(kBig).x("X", {700, 2}, Dom::Tricky).k("K", i64v({5})).i("axis", 0)
          .i("largest", 0).outs(2));
  add(B("Softmax", "large rows").x("input", {2, 700}).tol(10).quick({DType::Float32, DType::Float16}));
  add(B("LogSoftmax", "large rows").x("input", {2, 700}).tol(10).quick({DType::Float32, DType::Float16}));
  add(B("Hardmax", "large rows, ties").x("input", {2, 700}, Dom::Tricky).quick({DType::Float32, DType::Float16}));
  add(B("LayerNormalization", "large rows").x("X", {2, 700}).x("Scale", {700}).x("B", {700}).tol(10)
          .quick({DType::Float32, DType::Float16}));
  add(B("InstanceNormalization", "large").x("input", {1, 3, 30, 30}).x("scale", {3}).x("B", {3}).tol(10)
          .quick({DType::Float32, DType::Float16}));
  add(B("SkipLayerNormalization", "large rows").ms().without_schema(kFloats).x("input", {2, 1100}).x("skip", {2, 1100})
          .x("gamma", {1100}).x("beta", {1100}).x("bias", {1100}).outs(4).tol(10).quick({DType::Float32, DType::Float16}));
  add(B("RMSNormalization", "large rows").opset(23).without_schema(kFloats).x("X", {2, 1100}).x("scale", {1100}).tol(10)
          .quick({DType::Float32, DType::Float16}));
  add(B("MatMul", "large, edge tiles").quick({DType::Float32, DType::Int64, DType::UInt64, DType::Int32}).x("A", {70, 40})
          .x("B", {40, 65}).tol(10));
  add(B("MatMul", "large, batched").quick({DType::Float32, DType::Int64}).x("A", {3, 17, 33}).x("B", {3, 33, 19}).tol(10));
  add(B("Gemm", "large, transB").quick({DType::Float32, DType::Int64}).x("A", {70, 40}).x("B", {65, 40}).x("C", {65})
          .i("transB", 1).tol(10));
  add(B("Conv", "16 output channels").x("X", {1, 4, 9, 9}).x("W", {16, 4, 3, 3}).x("B", {16}).ints("pads", {1, 1, 1, 1}).tol(10)
          .quick({DType::Float32, DType::Float16}).note("the implicit-GEMM kernel (>= 8 output channels per group)"));
  add(B("Conv", "pointwise 1x1").x("X", {2, 8, 5, 5}).x("W", {16, 8, 1, 1}).x("B", {16}).tol(10)
          .quick({DType::Float32, DType::Float16}).note("the implicit GEMM reading X as it lies"));
  add(B("Conv", "depthwise 3x3, stride 2").x("X", {1, 4, 7, 7}).x("W", {4, 1, 3, 3}).x("B", {4}).i("group", 4)
          .ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2}).tol(10).quick({DType::Float32, DType::Float16})
          .note("the depthwise kernel"));
  add(B("Conv", "split over K").x("X", {1, 128, 2, 2}).x("W", {16, 128, 3, 3}).ints("pads", {1, 1, 1, 1}).tol(10)
          .quick({DType::Float32}).note("the implicit GEMM with its K range split, then summed"));
  add(B("Conv", "32 output channels, stride 2").x("X", {2, 8, 11, 11}).x("W", {32, 8, 3, 3}).ints("strides", {2, 2}).tol(10)
          .quick({DType::Float32, DType::Float64}));
  add(B("MaxPool", "large").x("X", {1, 3, 40, 40}).ints("kernel_shape", {3, 3}).ints("strides", {2, 2})
          .quick({DType::Float32, DType::Int8}));
  add(B("GlobalAveragePool", "large").x("X", {1, 3, 40, 40}).tol(10).quick({DType::Float32, DType::Float16}));
  // Short rows share a workgroup (segments of 32 and 2 invocations): the last workgroup's rows partly past the end.
  add(B("GlobalAveragePool", "squeeze-excitation").x("X", {3, 37, 7, 7}).tol(10).quick({DType::Float32}));
  add(B("GlobalMaxPool", "short rows").x("X", {2, 70, 1, 3}).quick({DType::Float32}));
  add(B("Gather", "large").quick(kBig).x("data", {300, 5}).fg("indices", DType::Int64, {400}, ints_in(-300, 299)));
  add(B("GatherElements", "large").quick(kBig).x("data", {300, 4}).fg("indices", DType::Int64, {300, 4}, ints_in(-300, 299)));
  add(B("ScatterElements", "large").quick(kBig).x("data", {300, 4}).fg("indices", DType::Int64, {300, 4}, distinct_rows(300))
          .x("updates", {300, 4}));
  add(B("ScatterND", "large, add").quick(kBig).x("data", {300, 3}).fg("indices", DType::Int64, {500, 1}, ints_in(-300, 299))
          .x("updates", {500, 3}).s("reduction", "add"));
  add(B("Transpose", "large").quick(kBig).x("data", {33, 70, 3}).ints("perm", {1, 2, 0}));
  add(B("Concat", "large").quick(kBig).x("a", {200, 3}).x("b", {300, 3}).i("axis", 0));
  add(B("Pad", "large, reflect").quick(kBig).x("data", {100, 30}).k("pads", i64v({5, 7, 9, 11})).s("mode", "reflect"));
  add(B("Resize", "large, nearest").tp("T1").quick(kBig).x("X", {1, 1, 40, 50}).none().k("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2})));
  add(B("Expand", "large").quick(kBig).x("input", {300, 1}).k("shape", i64v({300, 257})));

  // Ops that sum many terms (products, moments, exponentials) take the extremes without the largest
  // finite magnitudes: the CPU reference accumulates in double, where 3e38 * 3e38 or exp(100) does not
  // overflow, so the two differ there by design and nowhere else.
  const std::set<std::string> accumulating = {"MatMul", "Gemm", "Conv", "ConvTranspose", "LayerNormalization",
                                              "SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
                                              "SimplifiedLayerNormalization", "RMSNormalization", "RotaryEmbedding", "MatMulNBits",
                                              "InstanceNormalization", "BatchNormalization", "LpPool", "GlobalLpPool",
                                              "Softmax", "LogSoftmax", "ReduceSumSquare", "ReduceL2", "ReduceLogSumExp",
                                              "ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceLogSum",
                                              "CumSum", "AveragePool", "GlobalAveragePool", "Einsum",
                                              "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "GroupNormalization",
                                              "LpNormalization", "LRN", "Col2Im", "RoiAlign", "CumProd", "RNN", "GRU",
                                              "LSTM", "MeanVarianceNormalization"};
  for (Case& c : v)
    if (accumulating.count(c.op) && c.extremes == Extremes::All) {
      c.extremes = Extremes::NoOverflow;
      c.extremes_note = "accumulates in double on the CPU";
    }
  return v;
}

}  // namespace

Tensor make_values(DType dtype, const Shape& shape, Dom dom, Rng& rng) {
  Tensor t(dtype, shape);
  visit_dtype(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = one_value<T>(dom, rng);
  });
  return t;
}

Tensor extreme_values(DType dtype, const Shape& shape, Extremes kind, Rng& rng) {
  if (!dtype_is_float(dtype)) return make_values(dtype, shape, Dom::Wide, rng);
  const double inf = std::numeric_limits<double>::infinity();
  // The largest finite magnitude and a subnormal of the dtype.
  const double big = dtype == DType::Float16 ? 65504.0 : dtype == DType::Float64 ? 1.0e300 : 3.0e38;
  const double sub = dtype == DType::Float16 ? 3.0e-6 : dtype == DType::Float64 ? 1.0e-310 : 1.0e-40;
  std::vector<double> edges = {std::numeric_limits<double>::quiet_NaN(), inf, -inf, 0.0, -0.0, 100.0, -100.0, 88.5, -88.5,
                               20.0, -20.0, sub, -sub, 1.0, -1.0};
  if (kind == Extremes::All) edges.insert(edges.end(), {big, -big, 1.0e4, -1.0e4});
  Tensor t(DType::Float64, shape);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = uniform(rng, 0, 3) == 0 ? uniform_real(rng, -3, 3) : edges[size_t(uniform(rng, 0, int64_t(edges.size()) - 1))];
  return t.cast(dtype);
}

Tensor flush_subnormals(const Tensor& t) {
  if (!dtype_is_float(t.dtype())) return t;
  Tensor r = t.cast(DType::Float64);
  const double smallest = t.dtype() == DType::Float16 ? 6.103515625e-05 : t.dtype() == DType::Float64 ? 2.2250738585072014e-308
                                                                                                        : 1.1754943508222875e-38;
  for (double& v : r.span<double>())
    if (v != 0 && std::fabs(v) < smallest) v = std::copysign(0.0, v);
  return r.cast(t.dtype());
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = build();
  return cases;
}

}  // namespace onnxgpu::gpu_op_cases
