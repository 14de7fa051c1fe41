// Host <-> GPU representation of tensors. The one place that applies Int64Policy to data:
// bitcast_to_i32 keeps int64 bytes as they are (two words per element); cast_to_i32 narrows each
// element to i32 on upload, with a range check that names the tensor, and widens on download.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "onnxgpu/int64_policy.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu::runtime {

size_t gpu_bytes(DType dtype, const Shape& shape, const Int64Policy& policy);

// The bytes to write to the GPU for `t` (points into `t` when no conversion is needed).
struct GpuUpload {
  const void* data = nullptr;
  size_t bytes = 0;
  std::vector<std::byte> converted;
};
GpuUpload to_gpu(const Tensor& t, const Int64Policy& policy, const std::string& name);

// A host tensor from the bytes read back from the GPU.
Tensor from_gpu(const void* data, DType dtype, const Shape& shape, const Int64Policy& policy);

// Whether a value's GPU bytes are its host bytes (every dtype but INT64 under cast_to_i32): then a
// readback can land in the host tensor itself.
bool same_bytes_on_host(DType dtype, const Int64Policy& policy);

}  // namespace onnxgpu::runtime
