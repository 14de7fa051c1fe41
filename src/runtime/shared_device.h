// The process-wide GPU device and what lives on it beyond one run: the storage of a DeviceTensor.
#pragma once
#include <memory>
#include <mutex>

#include "onnxgpu/int64_policy.h"
#include "onnxgpu/session.h"
#include "webgpu/device.h"

namespace onnxgpu::runtime {

// The process-wide device (created on first use, shared by every session, kept until exit), and the lock that
// serialises its use (sessions may run from several threads).
std::shared_ptr<webgpu::Device> shared_device();
std::mutex& device_mutex();

}  // namespace onnxgpu::runtime

namespace onnxgpu {

// A DeviceTensor's buffer: given back to the device's pool when the last DeviceTensor holding it goes.
struct DeviceTensor::Storage {
  std::shared_ptr<webgpu::Device> device;
  webgpu::Buffer buffer;
  Int64Policy policy;
  ~Storage();
};

}  // namespace onnxgpu
