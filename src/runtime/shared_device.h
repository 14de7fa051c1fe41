// The process-wide GPU device and what lives on it beyond one run: the storage of a DeviceTensor.
#pragma once
#include <memory>
#include <mutex>

#include "onnxgpu/int64_policy.h"
#include "onnxgpu/session.h"
#include "webgpu/device.h"

namespace onnxgpu::runtime {

// The process-wide device (created on first use, shared by every session, kept until exit), and the lock that
// serialises its use (sessions may run from several threads). Recursive: a plan destroyed under it may
// release the last hold on a DeviceTensor's storage (an appended KV cache), whose destructor takes it.
std::shared_ptr<webgpu::Device> shared_device();
std::recursive_mutex& device_mutex();

}  // namespace onnxgpu::runtime

namespace onnxgpu {

// A DeviceTensor's buffer: given back to the device's pool when the last DeviceTensor holding it goes.
// A pitched storage (an appended KV cache, runtime/resident.h) has room for `pitch_rows` positions
// along axis `pitch_axis`: a tensor of shape s in it lies as [prod(s[:axis]), pitch_rows, prod(s[axis+1:])]
// elements, its first s[axis] positions filled. Several DeviceTensors (the presents of successive
// runs) share it; `filled` is the length of the newest, the only one a run may append to in place.
struct DeviceTensor::Storage {
  std::shared_ptr<webgpu::Device> device;
  webgpu::Buffer buffer;
  Int64Policy policy;
  int64_t pitch_axis = -1;  // -1: contiguous
  int64_t pitch_rows = 0;
  int64_t filled = -1;
  // The values, read back with the run that made the tensor (a small output such as a decode step's
  // logits: its to_host() then waits for nothing). The first to_host() takes them (no copy); later ones
  // read the buffer, which is never written after its run.
  std::shared_ptr<const Tensor> host;
  ~Storage();
};

}  // namespace onnxgpu
