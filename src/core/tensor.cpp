#include "onnxgpu/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <sstream>

#include "core/switches.h"

namespace onnxgpu {

namespace detail {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kHugeFrom = size_t(8) << 20;  // smaller blocks come from operator new
}  // namespace

// ($ONNXGPU_HUGE_PAGES=0 leaves the advice out, for measuring what it buys.)
void* allocate_bytes(size_t n) {
  if (n < kHugeFrom) return ::operator new(n);
  const size_t size = (n + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, size);
  if (!p) throw std::bad_alloc();
  static const bool advise = switched_on("ONNXGPU_HUGE_PAGES");
  if (advise) ::madvise(p, size, MADV_HUGEPAGE);  // (advice: no effect where huge pages are off)
  return p;
}

void free_bytes(void* p, size_t n) noexcept {
  if (n < kHugeFrom) ::operator delete(p);
  else std::free(p);
}

}  // namespace detail

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) throw InvalidArgument("negative dimension in shape " + shape_str(s));
    if (__builtin_mul_overflow(n, d, &n)) throw InvalidArgument("shape " + shape_str(s) + " has too many elements");
  }
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::vector<int64_t> shape_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = int64_t(s.size()) - 2; i >= 0; --i) st[size_t(i)] = st[size_t(i) + 1] * s[size_t(i) + 1];
  return st;
}

Tensor::Tensor(DType dtype, Shape shape) : Tensor(dtype, std::move(shape), true) {}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  if (dtype == DType::String) return Tensor(dtype, std::move(shape));
  return Tensor(dtype, std::move(shape), false);
}

Tensor::Tensor(DType dtype, Shape shape, bool zero) : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = shape_numel(shape_);
  if (dtype_ == DType::String) {
    strings_ = std::make_shared<std::vector<std::string>>(size_t(numel_));
    return;
  }
  if (dtype_size(dtype_) == 0) throw_unsupported_dtype(dtype_, "tensor storage");
  constexpr int64_t kMaxBytes = int64_t(1) << 40;
  if (numel_ > kMaxBytes / int64_t(dtype_size(dtype_)))
    throw InvalidArgument("tensor of shape " + shape_str(shape_) + " is too large");
  size_t n = size_t(numel_) * dtype_size(dtype_);
  auto b = zero ? std::make_shared<Bytes>(n, std::byte{0}) : std::make_shared<Bytes>(n);
  bytes_ = std::shared_ptr<std::byte>(b, b->data());
}

Tensor Tensor::adopt(DType dtype, Shape shape, std::shared_ptr<std::byte> data) {
  if (dtype == DType::String || dtype_size(dtype) == 0) throw_unsupported_dtype(dtype, "adopted tensor storage");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  if (t.numel_ > 0 && !data) throw InvalidArgument("Tensor::adopt: no bytes for " + t.describe());
  t.bytes_ = std::move(data);
  return t;
}

Tensor Tensor::strings(Shape shape, std::vector<std::string> values) {
  Tensor t(DType::String, std::move(shape));
  if (int64_t(values.size()) != t.numel_) throw InvalidArgument("Tensor::strings: value count does not match shape");
  *t.strings_ = std::move(values);
  return t;
}

std::vector<std::string>& Tensor::string_data() {
  check_type(DType::String);
  return *strings_;
}
const std::vector<std::string>& Tensor::string_data() const {
  check_type(DType::String);
  return *strings_;
}

void Tensor::check_type(DType want) const {
  if (dtype_ != want)
    throw Error("tensor element type is " + std::string(dtype_name(dtype_)) + ", accessed as " +
                std::string(dtype_name(want)));
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel_)
    throw InvalidArgument("cannot reshape " + describe() + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = *this;
  if (bytes_) {
    auto b = std::make_shared<Bytes>(bytes_.get(), bytes_.get() + nbytes());
    t.bytes_ = std::shared_ptr<std::byte>(b, b->data());
  }
  if (strings_) t.strings_ = std::make_shared<std::vector<std::string>>(*strings_);
  return t;
}

int64_t Tensor::int_at(int64_t i) const {
  return visit_dtype(dtype_, [&]<class T>() -> int64_t {
    if constexpr (is_float_v<T>) return int64_t(float(data<T>()[i]));
    else return int64_t(data<T>()[i]);
  }, kAllTypes, "int_at");
}

double Tensor::double_at(int64_t i) const {
  return visit_dtype(dtype_, [&]<class T>() -> double {
    if constexpr (std::is_same_v<T, double>) return data<T>()[i];
    else if constexpr (is_float_v<T>) return double(float(data<T>()[i]));
    else return double(data<T>()[i]);
  }, kAllTypes, "double_at");
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  if (!dtype_is_integer(dtype_))
    throw InvalidArgument("expected an integer tensor, got " + describe());
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[size_t(i)] = int_at(i);
  return v;
}

Tensor Tensor::cast(DType to) const {
  Tensor out(to, shape_);
  visit_dtype(dtype_, [&]<class S>() {
    const S* src = data<S>();
    visit_dtype(to, [&]<class D>() {
      D* dst = out.data<D>();
      for (int64_t i = 0; i < numel_; ++i) {
        if constexpr (std::is_same_v<D, bool>) {
          if constexpr (is_float_v<S>) dst[i] = float(src[i]) != 0.0f;
          else dst[i] = src[i] != S(0);
        } else if constexpr (is_float_v<S> && !std::is_same_v<S, double>) {
          dst[i] = D(float(src[i]));
        } else {
          dst[i] = D(src[i]);
        }
      }
    });
  });
  return out;
}

std::string Tensor::describe() const {
  if (!defined()) return "<none>";
  return std::string(dtype_name(dtype_)) + shape_str(shape_);
}

}  // namespace onnxgpu
