#include "runtime/gpu_values.h"

#include <cstring>
#include <limits>

#include "webgpu/shader/types.h"

namespace onnxgpu::runtime {

size_t gpu_bytes(DType dtype, const Shape& shape, const Int64Policy& policy) {
  return size_t(shape_numel(shape)) * webgpu::shader::gpu_element_size(dtype, policy);
}

GpuUpload to_gpu(const Tensor& t, const Int64Policy& policy, const std::string& name) {
  GpuUpload u;
  if (!policy.narrows(t.dtype())) {
    u.data = t.raw();
    u.bytes = t.nbytes();
    return u;
  }
  u.converted.resize(size_t(t.numel()) * 4);
  auto* dst = reinterpret_cast<int32_t*>(u.converted.data());
  const int64_t* src = t.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (src[i] < std::numeric_limits<int32_t>::min() || src[i] > std::numeric_limits<int32_t>::max())
      throw InvalidArgument("tensor '" + name + "': int64 value " + std::to_string(src[i]) + " at index " +
                            std::to_string(i) +
                            " does not fit in int32 (INT64 strategy cast_to_i32; use bitcast_to_i32 for exact 64-bit values)");
    dst[i] = int32_t(src[i]);
  }
  u.data = u.converted.data();
  u.bytes = u.converted.size();
  return u;
}

bool same_bytes_on_host(DType dtype, const Int64Policy& policy) { return !policy.narrows(dtype); }

HostLanding::HostLanding(DType dtype, const Shape& shape, uint64_t gpu_bytes, const Int64Policy& policy,
                         LandingMemory* memory, size_t output)
    : dtype_(dtype), shape_(shape), policy_(&policy) {
  if (same_bytes_on_host(dtype, policy) && dtype != DType::String &&
      uint64_t(shape_numel(shape)) * dtype_size(dtype) == gpu_bytes) {
    // Every byte comes from the GPU: no zero-filling.
    direct_ = memory && gpu_bytes ? Tensor::adopt(dtype, shape, memory->take(output, size_t(gpu_bytes)))
                                  : Tensor::uninitialized(dtype, shape);
    return;
  }
  staged_.resize(gpu_bytes);
}

std::shared_ptr<std::byte> LandingMemory::take(size_t output, size_t bytes) {
  if (output >= blocks_.size()) blocks_.resize(output + 1);
  Block& b = blocks_[output];
  if (!b.bytes || b.size != bytes || b.bytes.use_count() != 1) {  // new, resized, or still the caller's
    b.bytes = std::shared_ptr<std::byte>(new std::byte[bytes], std::default_delete<std::byte[]>());
    b.size = bytes;
  }
  return b.bytes;
}

Tensor HostLanding::host() {
  return direct_.defined() ? std::move(direct_) : from_gpu(staged_.data(), dtype_, shape_, *policy_);
}

Tensor from_gpu(const void* data, DType dtype, const Shape& shape, const Int64Policy& policy) {
  Tensor t(dtype, shape);
  if (!policy.narrows(dtype)) {
    if (t.nbytes()) std::memcpy(t.raw(), data, t.nbytes());
    return t;
  }
  const auto* src = static_cast<const int32_t*>(data);
  int64_t* dst = t.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = src[i];
  return t;
}

}  // namespace onnxgpu::runtime
