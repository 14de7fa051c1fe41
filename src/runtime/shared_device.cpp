#include "runtime/shared_device.h"

#include <cstdlib>

#include "runtime/gpu_values.h"
#include "runtime/resident.h"

namespace onnxgpu::runtime {

std::recursive_mutex& device_mutex() {
  static std::recursive_mutex m;
  return m;
}

// The device is kept for the life of the process once made, as a driver context is: making one per
// session cost each time (SwiftShader keeps thread-local keys and ~73 KB per device, so a process
// that made ~1,000 in turn ran out of keys and aborted). A lost device is replaced. It is released at
// exit, before the driver's own teardown: atexit handlers run in the reverse order of registration,
// and this one is registered after the driver's library was loaded.
std::shared_ptr<webgpu::Device> shared_device() {
  static std::mutex m;
  static std::shared_ptr<webgpu::Device>* kept = nullptr;  // never destroyed by static teardown: see above
  std::lock_guard<std::mutex> lock(m);
  if (!kept) {
    auto device = std::make_shared<webgpu::Device>();
    kept = new std::shared_ptr<webgpu::Device>(std::move(device));
    // Registered once the device (and with it the driver's library) exists, so that it runs first.
    std::atexit([] { kept->reset(); });
  }
  if ((*kept)->lost()) *kept = std::make_shared<webgpu::Device>();
  return *kept;
}

}  // namespace onnxgpu::runtime

namespace onnxgpu {

DeviceTensor::Storage::~Storage() {
  std::lock_guard<std::recursive_mutex> lock(runtime::device_mutex());
  device->recycle(std::move(buffer));
}

Tensor DeviceTensor::to_host() const {
  if (!storage_) throw InvalidArgument("DeviceTensor::to_host: the tensor is empty");
  std::lock_guard<std::recursive_mutex> lock(runtime::device_mutex());
  return runtime::read_device_tensor(*this);
}

std::vector<Tensor> DeviceTensor::to_host(std::span<const DeviceTensor> tensors) {
  for (const DeviceTensor& t : tensors)
    if (!t.storage_) throw InvalidArgument("DeviceTensor::to_host: a tensor is empty");
  std::lock_guard<std::recursive_mutex> lock(runtime::device_mutex());
  return runtime::read_device_tensors(tensors);
}

}  // namespace onnxgpu
