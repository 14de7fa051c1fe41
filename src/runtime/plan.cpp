#include "runtime/plan.h"

#include "runtime/gpu_values.h"

#include <algorithm>

namespace onnxgpu::runtime {

Tensor Plan::download(int slot, DType dtype, const Shape& shape, const Int64Policy& policy) {
  if (const Resident* r = resident_at(slot)) return read_device_tensor(DeviceTensor(dtype, shape, r->storage));
  std::vector<std::byte> bytes(gpu_bytes(dtype, shape, policy));
  if (!bytes.empty()) device->read(slots[size_t(slot)].buffer->get(), bytes.data(), bytes.size());
  return from_gpu(bytes.data(), dtype, shape, policy);
}

void Plan::upload(int slot, const Tensor& t, const Int64Policy& policy, const std::string& name) {
  if (resident_at(slot)) throw Error("internal: a host value written into the appended buffer of '" + name + "'");
  GpuUpload u = to_gpu(t, policy, name);
  if (u.bytes) device->write(slots[size_t(slot)].buffer->get(), u.data, u.bytes);
}

webgpu::BindGroupHandle bind_dispatch(const Plan& plan, const Step& step, const RecordedDispatch& d) {
  // (whole vec4s: a tensor read as vec4s, shader::Program::vec4, must reach its last element)
  const uint64_t max_binding = plan.device->limits().max_storage_buffer_binding_size / 16 * 16;
  std::vector<webgpu::BufferBinding> entries;
  entries.emplace_back(step.uniforms->get(), d.uniform_offset, d.uniform_bytes);
  entries.emplace_back(plan.status->get(), 0, plan.status->capacity);
  for (int s : d.slots) {
    const webgpu::Buffer& b = *plan.slots[size_t(s)].buffer;
    entries.emplace_back(b.get(), 0, max_binding ? std::min(b.capacity, max_binding) : b.capacity);
  }
  return plan.device->bind_group(*d.pipeline, entries);
}

Plan::~Plan() {
  // A resident buffer goes with its storage, when the presents handed out are gone too.
  for (const Resident& r : residents) slots.at(size_t(r.slot)).buffer.reset();
  for (auto& s : slots)
    if (s.buffer && s.buffer.use_count() == 1) device->recycle(std::move(*s.buffer));
}

}  // namespace onnxgpu::runtime
