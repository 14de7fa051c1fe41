#include "runtime/plan.h"

#include "runtime/gpu_values.h"

namespace onnxgpu::runtime {

Tensor Plan::download(int slot, DType dtype, const Shape& shape, const Int64Policy& policy) {
  std::vector<std::byte> bytes(gpu_bytes(dtype, shape, policy));
  if (!bytes.empty()) device->read(slots[size_t(slot)].buffer->get(), bytes.data(), bytes.size());
  return from_gpu(bytes.data(), dtype, shape, policy);
}

void Plan::upload(int slot, const Tensor& t, const Int64Policy& policy, const std::string& name) {
  GpuUpload u = to_gpu(t, policy, name);
  if (u.bytes) device->write(slots[size_t(slot)].buffer->get(), u.data, u.bytes);
}

Plan::~Plan() {
  for (auto& s : slots)
    if (s.buffer && s.buffer.use_count() == 1) device->recycle(std::move(*s.buffer));
}

}  // namespace onnxgpu::runtime
