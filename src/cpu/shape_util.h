// Helpers shared by the data-moving CPU kernels (shape_ops, layout, generators, indexing).
// Data movement is type-generic: elements are copied as dtype_size() bytes (or as std::string for
// DType::String), never dispatched per C++ type.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/kernel.h"
#include "onnxgpu/tensor.h"
#include "ops/views.h"

namespace onnxgpu::cpu {

// Copies single elements, addressed by linear index, from `src` to `dst` (same dtype, any dtype).
class ElementCopier {
 public:
  ElementCopier(const Tensor& src, Tensor& dst) : is_string_(src.dtype() == DType::String) {
    if (src.dtype() != dst.dtype())
      throw Error("ElementCopier: dtype mismatch " + src.describe() + " -> " + dst.describe());
    if (is_string_) {
      src_str_ = &src.string_data();
      dst_str_ = &dst.string_data();
    } else {
      size_ = dtype_size(src.dtype());
      src_ = static_cast<const std::byte*>(src.raw());
      dst_ = static_cast<std::byte*>(dst.raw());
    }
  }
  void operator()(int64_t dst_i, int64_t src_i) const {
    if (is_string_) (*dst_str_)[size_t(dst_i)] = (*src_str_)[size_t(src_i)];
    else std::memcpy(dst_ + size_t(dst_i) * size_, src_ + size_t(src_i) * size_, size_);
  }
  // Copies `n` consecutive elements.
  void run(int64_t dst_i, int64_t src_i, int64_t n) const {
    if (n <= 0) return;
    if (is_string_) {
      for (int64_t k = 0; k < n; ++k) (*dst_str_)[size_t(dst_i + k)] = (*src_str_)[size_t(src_i + k)];
    } else {
      std::memcpy(dst_ + size_t(dst_i) * size_, src_ + size_t(src_i) * size_, size_t(n) * size_);
    }
  }

 private:
  bool is_string_;
  size_t size_ = 0;
  const std::byte* src_ = nullptr;
  std::byte* dst_ = nullptr;
  const std::vector<std::string>* src_str_ = nullptr;
  std::vector<std::string>* dst_str_ = nullptr;
};

// A new tensor of `shape` whose element i is src[src_index[i]].
inline Tensor take_elements(const Tensor& src, Shape shape, const std::vector<int64_t>& src_index) {
  Tensor out(src.dtype(), std::move(shape));
  if (int64_t(src_index.size()) != out.numel()) throw Error("take_elements: index count does not match shape");
  ElementCopier copy(src, out);
  for (size_t i = 0; i < src_index.size(); ++i) copy(int64_t(i), src_index[i]);
  return out;
}

// A new tensor of `shape` whose element at coordinates c is src[base + sum(c[d] * strides[d])]: a strided
// view made contiguous (transpose, slice, broadcast all reduce to this).
inline Tensor strided_copy(const Tensor& src, Shape shape, const std::vector<int64_t>& strides, int64_t base) {
  const bool str = src.dtype() == DType::String;
  // Every element is written below: no zero fill first (strings need constructed storage).
  Tensor out = str ? Tensor(src.dtype(), std::move(shape)) : Tensor::uninitialized(src.dtype(), std::move(shape));
  const Shape& s = out.shape();
  int64_t n = out.numel();
  if (n == 0) return out;
  ElementCopier copy(src, out);
  if (s.empty()) {
    copy(0, base);
    return out;
  }
  // Row by row along the last dim: one memcpy when it is contiguous in src, else a typed loop.
  const size_t last = s.size() - 1;
  const int64_t len = s[last], step = strides[last];
  const size_t esize = str ? 0 : dtype_size(src.dtype());
  auto copy_row = [&](int64_t dst_i, int64_t src_i) {
    if (str) {
      for (int64_t j = 0; j < len; ++j) copy(dst_i + j, src_i + j * step);
    } else if (step == 1) {
      copy.run(dst_i, src_i, len);
    } else {
      auto typed = [&]<class W>() {
        const W* in = static_cast<const W*>(src.raw()) + src_i;
        W* o = static_cast<W*>(out.raw()) + dst_i;
        for (int64_t j = 0; j < len; ++j) o[j] = in[j * step];
      };
      switch (esize) {
        case 1: typed.template operator()<uint8_t>(); break;
        case 2: typed.template operator()<uint16_t>(); break;
        case 4: typed.template operator()<uint32_t>(); break;
        case 8: typed.template operator()<uint64_t>(); break;
        default:
          for (int64_t j = 0; j < len; ++j) copy(dst_i + j, src_i + j * step);
      }
    }
  };
  std::vector<int64_t> c(last, 0);
  int64_t off = base;
  for (int64_t i = 0; i < n; i += len) {
    copy_row(i, off);
    for (int64_t d = int64_t(last) - 1; d >= 0; --d) {
      size_t k = size_t(d);
      if (++c[k] < s[k]) {
        off += strides[k];
        break;
      }
      off -= strides[k] * (s[k] - 1);
      c[k] = 0;
    }
  }
  return out;
}

// Calls f(coords) for every coordinate of `shape` in row-major order (not at all when it is empty).
template <class F>
void for_each_coord(const Shape& shape, F&& f) {
  int64_t n = shape_numel(shape);
  if (n == 0) return;
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(static_cast<const std::vector<int64_t>&>(c));
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++c[size_t(d)] < shape[size_t(d)]) break;
      c[size_t(d)] = 0;
    }
  }
}

// Reads a shape-like input (a scalar or 1-D integer tensor) as int64s.
inline std::vector<int64_t> int64_input(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (!dtype_is_integer(t.dtype()))
    ctx.fail("input " + std::to_string(i) + " ('" + what + "') must be an integer tensor, got " + t.describe());
  if (t.rank() > 1)
    ctx.fail("input " + std::to_string(i) + " ('" + what + "') must be a scalar or 1-D, got " + t.describe());
  return t.to_int64_vector();
}

// A single integer from a scalar or one-element input.
inline int64_t int64_scalar_input(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1)
    ctx.fail("input " + std::to_string(i) + " ('" + what + "') must hold exactly one value, got " + t.describe());
  if (!dtype_is_integer(t.dtype()))
    ctx.fail("input " + std::to_string(i) + " ('" + what + "') must be an integer tensor, got " + t.describe());
  return t.int_at(0);
}

// ops::normalize_axes through the kernel context: negatives wrap; out-of-range or repeated axes fail.
inline std::vector<int64_t> normalize_axes(const KernelContext& ctx, const std::vector<int64_t>& axes, int64_t rank) {
  return ops::normalize_axes(axes, rank, [&](const std::string& m) { ctx.fail(m); });
}

// For error messages: "[1,2,3]".
inline std::string ints_str(const std::vector<int64_t>& v) { return shape_str(v); }

}  // namespace onnxgpu::cpu
