// Host <-> GPU representation of tensors. The one place that applies Int64Policy to data:
// bitcast_to_i32 keeps int64 bytes as they are (two words per element); cast_to_i32 narrows each
// element to i32 on upload, with a range check that names the tensor, and widens on download.
#pragma once
#include <memory>
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

// Where a readback of a value lands: straight in its host tensor when the GPU's bytes are the host's
// (no staging, no second copy: a detector's 4.8 MB of outputs), else in staged bytes that host()
// converts (from_gpu). The policy must outlive it. With `memory`, a direct landing takes its bytes
// from there (LandingMemory::take for output `output`).
class LandingMemory;
class HostLanding {
 public:
  HostLanding(DType dtype, const Shape& shape, uint64_t gpu_bytes, const Int64Policy& policy,
              LandingMemory* memory = nullptr, size_t output = 0);
  void* dst() { return direct_.defined() ? direct_.raw() : static_cast<void*>(staged_.data()); }
  Tensor host();  // once the bytes are read

 private:
  DType dtype_;
  Shape shape_;
  const Int64Policy* policy_;
  Tensor direct_;
  std::vector<std::byte> staged_;
};

// Host memory for the outputs a plan reads back every run, one block per output, used again once the
// caller holds no tensor on it: fresh memory costs a page fault per 4 KiB at its first write (~25 us
// for a decode step's 200 KB of logits on the H200 machine's host), recycled memory none. While the
// caller keeps the last run's tensor, the next run lands in a new block.
class LandingMemory {
 public:
  std::shared_ptr<std::byte> take(size_t output, size_t bytes);

 private:
  struct Block {
    std::shared_ptr<std::byte> bytes;
    size_t size = 0;
  };
  std::vector<Block> blocks_;
};

}  // namespace onnxgpu::runtime
