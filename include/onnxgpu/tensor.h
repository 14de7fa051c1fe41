// A host tensor: dtype, concrete shape, and contiguous row-major storage shared by copies.
#pragma once
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "onnxgpu/dtype.h"
#include "onnxgpu/error.h"

namespace onnxgpu {

using Shape = std::vector<int64_t>;

namespace detail {
// A tensor's storage. Large blocks (8 MiB and more: weights made at plan time, outputs read back) are
// aligned to 2 MiB and advised for transparent huge pages, where the system offers them on request:
// each fresh 4 KiB page costs a page fault at its first write, and a plan that puts a large model's
// sibling weights side by side writes gigabytes of fresh pages (1.9 GB for a 0.85B Llama).
void* allocate_bytes(size_t n);
void free_bytes(void* p, size_t n) noexcept;

// Leaves the bytes of a resized vector uninitialized (Tensor::uninitialized); zeros are asked for explicitly.
template <class T>
struct NoInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <class U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_bytes(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { free_bytes(p, n * sizeof(T)); }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
}  // namespace detail

int64_t shape_numel(const Shape& s);           // product of dims (1 for a scalar)
std::string shape_str(const Shape& s);          // "[2,3]"
std::vector<int64_t> shape_strides(const Shape& s);  // row-major element strides

class Tensor {
 public:
  Tensor() = default;  // an "empty" tensor: dtype Undefined, no storage (used for missing optionals)
  Tensor(DType dtype, Shape shape);  // zero-filled
  // Storage left uninitialized, for a caller that overwrites every byte at once (a GPU readback of
  // tens of MB, where zero-filling first would cost as much as the copy). Not for strings.
  static Tensor uninitialized(DType dtype, Shape shape);
  // For DType::String.
  static Tensor strings(Shape shape, std::vector<std::string> values);
  // The tensor of dtype x shape whose nbytes() bytes are at `data`, kept alive by it (an aliasing
  // shared_ptr into a buffer the caller owns): no copy. The bytes are the tensor's, as if allocated.
  static Tensor adopt(DType dtype, Shape shape, std::shared_ptr<std::byte> data);

  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values) {
    Tensor t(dtype_of<T>(), std::move(shape));
    if (int64_t(values.size()) != t.numel()) throw InvalidArgument("Tensor::from_vector: value count does not match shape");
    for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
    return t;
  }
  template <class T>
  static Tensor scalar(T v) {
    Tensor t(dtype_of<T>(), {});
    t.data<T>()[0] = v;
    return t;
  }

  bool defined() const { return dtype_ != DType::Undefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return int64_t(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_.at(size_t(i)); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return size_t(numel_) * dtype_size(dtype_); }

  void* raw() { return bytes_.get(); }
  const void* raw() const { return bytes_.get(); }
  std::span<std::byte> bytes() { return {static_cast<std::byte*>(raw()), nbytes()}; }
  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(raw()), nbytes()}; }

  template <class T>
  T* data() {
    check_type(dtype_of<T>());
    return static_cast<T*>(raw());
  }
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>());
    return static_cast<const T*>(raw());
  }
  template <class T>
  std::span<T> span() { return {data<T>(), size_t(numel_)}; }
  template <class T>
  std::span<const T> span() const { return {data<T>(), size_t(numel_)}; }

  std::vector<std::string>& string_data();
  const std::vector<std::string>& string_data() const;

  // Same storage, new shape (numel must match). Cheap: storage is shared.
  Tensor reshaped(Shape shape) const;
  // A deep copy with its own storage.
  Tensor clone() const;
  // Element i converted to int64 / double (any numeric or bool dtype). For shape-like inputs.
  int64_t int_at(int64_t i) const;
  double double_at(int64_t i) const;
  // All elements as int64 (for 'shape', 'axes', 'pads'... inputs). Throws for non-integer dtypes.
  std::vector<int64_t> to_int64_vector() const;
  // Converts to another dtype with C++ static_cast semantics (float->int truncates, ->bool is != 0).
  Tensor cast(DType to) const;

  std::string describe() const;  // "float32[2,3]"

 private:
  void check_type(DType want) const;
  DType dtype_ = DType::Undefined;
  Shape shape_;
  int64_t numel_ = 0;
  using Bytes = std::vector<std::byte, detail::NoInitAllocator<std::byte>>;
  std::shared_ptr<std::byte> bytes_;  // the first byte, owning what holds them (a Bytes, or an adopted buffer)
  Tensor(DType dtype, Shape shape, bool zero);
  std::shared_ptr<std::vector<std::string>> strings_;
};

}  // namespace onnxgpu
