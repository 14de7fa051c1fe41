#include "runtime/resident.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "ops/layout.h"
#include "runtime/gpu_values.h"
#include "runtime/plan.h"
#include "runtime/shared_device.h"

namespace onnxgpu::runtime {

namespace {

uint64_t prod(const Shape& s, size_t from, size_t to) {
  uint64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= uint64_t(s[d]);
  return p;
}

// Bytes of one element on the GPU.
uint64_t element_bytes(DType dtype, const Int64Policy& policy) { return gpu_bytes(dtype, Shape{1}, policy); }

// Where `t` lies in its storage, seen along `axis` (its storage's pitch axis when pitched).
RowLayout stored_layout(const DeviceTensor& t, int64_t axis) {
  const DeviceTensor::Storage& st = *t.storage();
  if (st.pitch_axis >= 0) return row_layout(t.shape(), st.pitch_axis, st.pitch_rows);
  return row_layout(t.shape(), axis, axis < 0 ? 0 : t.shape()[size_t(axis)]);
}

// Encodes the copy of a tensor laid out as `from` in `src` into `dst` laid out as `to` (same outer,
// used, inner): one copy when both are contiguous, else one per outer row.
void copy_rows(webgpu::CommandBatch& batch, WGPUBuffer src, const RowLayout& from, WGPUBuffer dst,
               const RowLayout& to, uint64_t esize) {
  const uint64_t row = from.used * from.inner * esize;
  if (row == 0 || from.outer == 0) return;
  if ((from.rows == from.used || from.outer == 1) && (to.rows == to.used || to.outer == 1)) {
    batch.copy(src, 0, dst, 0, (from.outer * row + 3) / 4 * 4);
    return;
  }
  for (uint64_t o = 0; o < from.outer; ++o)
    batch.copy(src, o * from.rows * from.inner * esize, dst, o * to.rows * to.inner * esize, row);
}

}  // namespace

RowLayout row_layout(const Shape& shape, int64_t axis, int64_t rows) {
  if (axis < 0) return RowLayout{1, uint64_t(shape_numel(shape)), uint64_t(shape_numel(shape)), 1};
  const size_t a = size_t(axis);
  return RowLayout{prod(shape, 0, a), uint64_t(shape[a]), uint64_t(rows), prod(shape, a + 1, shape.size())};
}

Tensor read_device_tensor(const DeviceTensor& t) {
  DeviceTensor::Storage& st = *t.storage();
  // The values read with the run go to the first reader as they are (a copy of a detector's 4 MB of
  // scores, into pages touched for the first time, cost the host more than the readback itself); a
  // later reader finds them in the buffer, which is never written after its run.
  if (st.host) return Tensor(*std::exchange(st.host, nullptr));
  const uint64_t bytes = gpu_bytes(t.dtype(), t.shape(), st.policy);
  if (st.pitch_axis < 0) {
    HostLanding l(t.dtype(), t.shape(), bytes, st.policy);
    if (bytes) st.device->read(st.buffer.get(), l.dst(), bytes);
    return l.host();
  }
  std::vector<std::byte> data(bytes);
  // Pitched: the rows read whole, then packed.
  const RowLayout l = stored_layout(t, st.pitch_axis);
  const uint64_t esize = element_bytes(t.dtype(), st.policy), row = l.used * l.inner * esize;
  const uint64_t span = ((l.outer - 1) * l.rows * l.inner * esize + row + 3) / 4 * 4;
  std::vector<std::byte> all(span);
  if (row && l.outer) st.device->read(st.buffer.get(), all.data(), span);
  for (uint64_t o = 0; row && o < l.outer; ++o)
    std::memcpy(data.data() + o * row, all.data() + o * l.rows * l.inner * esize, row);
  return from_gpu(data.data(), t.dtype(), t.shape(), st.policy);
}

std::vector<Tensor> read_device_tensors(std::span<const DeviceTensor> tensors) {
  std::vector<Tensor> out(tensors.size());
  std::vector<std::optional<HostLanding>> landing(tensors.size());  // the ones read together
  std::vector<webgpu::ReadRequest> reads;
  webgpu::Device* device = nullptr;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const DeviceTensor& t = tensors[i];
    const DeviceTensor::Storage& st = *t.storage();
    if (st.host || st.pitch_axis >= 0 || (device && device != st.device.get())) continue;  // alone, below
    device = st.device.get();
    const uint64_t bytes = gpu_bytes(t.dtype(), t.shape(), st.policy);
    landing[i].emplace(t.dtype(), t.shape(), bytes, st.policy);
    if (bytes) reads.push_back({st.buffer.get(), 0, bytes, landing[i]->dst()});
  }
  if (device && !reads.empty()) device->read(reads);
  for (size_t i = 0; i < tensors.size(); ++i) out[i] = landing[i] ? landing[i]->host() : read_device_tensor(tensors[i]);
  return out;
}

void copy_device_tensor(webgpu::CommandBatch& batch, const DeviceTensor& t, WGPUBuffer dst, int64_t axis, int64_t rows) {
  const DeviceTensor::Storage& st = *t.storage();
  const uint64_t esize = element_bytes(t.dtype(), st.policy);
  const int64_t src_axis = st.pitch_axis;
  if (axis < 0 && src_axis < 0) {  // contiguous to contiguous (any element size)
    const uint64_t bytes = gpu_bytes(t.dtype(), t.shape(), st.policy);
    if (bytes) batch.copy(st.buffer.get(), 0, dst, 0, (bytes + 3) / 4 * 4);
    return;
  }
  if (axis >= 0 && src_axis >= 0 && axis != src_axis) {
    // Pitched along another axis (a present fed as another pair's past): through the host, rarely.
    Tensor h = read_device_tensor(t);
    GpuUpload u = to_gpu(h, st.policy, "a pitched DeviceTensor");
    const RowLayout to = row_layout(t.shape(), axis, rows);
    const uint64_t row = to.used * to.inner * esize;
    for (uint64_t o = 0; row && o < to.outer; ++o)
      st.device->write(dst, static_cast<const std::byte*>(u.data) + o * row, row, o * to.rows * to.inner * esize);
    return;
  }
  const int64_t a = axis >= 0 ? axis : src_axis;
  const RowLayout to = axis >= 0 ? row_layout(t.shape(), a, rows) : row_layout(t.shape(), a, t.shape()[size_t(a)]);
  copy_rows(batch, st.buffer.get(), stored_layout(t, a), dst, to, esize);
}

std::unordered_map<std::string, int> value_readers(const ir::Graph& g) {
  std::unordered_map<std::string, int> readers;
  for (const auto& n : g.nodes) {
    const bool shape_only = n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size");
    for (const auto& in : n.inputs)
      if (!in.empty() && !shape_only) readers[in]++;
    for (const auto& in : n.implicit_inputs()) readers[in]++;
  }
  return readers;
}

std::vector<AppendPair> append_pairs(const ir::Graph& g) {
  std::set<std::string> inputs;
  for (const auto& i : g.inputs)
    if (!g.initializers.count(i.name)) inputs.insert(i.name);
  std::unordered_map<std::string, size_t> output_index;
  for (size_t k = 0; k < g.outputs.size(); ++k) output_index.emplace(g.outputs[k].name, k);
  std::unordered_map<std::string, int> readers = value_readers(g);
  std::vector<AppendPair> pairs;
  std::set<std::string> taken;
  // `past` (a graph input that only this node reads) and `present` (a graph output, once: two names of
  // one buffer would alias on the way out).
  auto pairable = [&](const std::string& past, const std::string& present) {
    auto out = output_index.find(present);
    return !past.empty() && !present.empty() && out != output_index.end() && inputs.count(past) && readers[past] == 1 &&
           !output_index.count(past) && !taken.count(past) &&
           std::count_if(g.outputs.begin(), g.outputs.end(), [&](const ir::ValueInfo& o) { return o.name == present; }) == 1;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (n.op_type == "Concat" && n.domain.empty() && n.inputs.size() >= 2 && n.outputs.size() == 1) {
      if (!pairable(n.inputs[0], n.outputs[0])) continue;
      taken.insert(n.inputs[0]);
      pairs.push_back(AppendPair{i, n.inputs[0], n.outputs[0], output_index.at(n.outputs[0]), false, 0});
    } else if (n.op_type == "GroupQueryAttention" && n.domain == ir::kMsDomain && n.inputs.size() >= 5 &&
               n.outputs.size() >= 3) {
      // Both or neither: the kernel writes the two presents in place together.
      if (!pairable(n.inputs[3], n.outputs[1]) || !pairable(n.inputs[4], n.outputs[2]) || n.inputs[3] == n.inputs[4]) continue;
      for (size_t k : {size_t(1), size_t(2)}) {
        taken.insert(n.inputs[k + 2]);
        pairs.push_back(AppendPair{i, n.inputs[k + 2], n.outputs[k], output_index.at(n.outputs[k]), true, k});
      }
    }
  }
  return pairs;
}

int64_t resident_rows(const webgpu::Device& dev, const Resident& r, const RowLayout& layout, int64_t needed,
                      const Int64Policy& policy) {
  const uint64_t per_row = std::max<uint64_t>(layout.outer * layout.inner, 1);  // elements per position
  const uint64_t esize = element_bytes(r.dtype, policy);
  const uint64_t max_binding = dev.limits().max_storage_buffer_binding_size;
  uint64_t most = (uint64_t(1) << 32) / per_row;  // 32-bit element indices
  if (max_binding) most = std::min<uint64_t>(most, max_binding / (per_row * esize));
  if (uint64_t(needed) > most)
    throw InvalidArgument("graph output '" + r.pair.output + "' needs " + std::to_string(needed) +
                          " positions along axis " + std::to_string(r.axis) + ", more than a GPU buffer of " +
                          dev.adapter().summary() + " can hold (" + std::to_string(most) + ")");
  return int64_t(std::min<uint64_t>(std::bit_ceil(uint64_t(std::max<int64_t>(needed, 16))), most));
}

void give_buffer(Plan& plan, Resident& r, const RowLayout& layout, const Int64Policy& policy) {
  webgpu::Device& dev = *plan.device;
  auto st = std::make_shared<DeviceTensor::Storage>();
  st->device = plan.device;
  st->policy = policy;
  st->pitch_axis = r.axis;
  st->pitch_rows = int64_t(layout.rows);
  st->buffer = dev.acquire(std::max<uint64_t>(layout.outer * layout.rows * layout.inner * element_bytes(r.dtype, policy), kMinBinding));
  const uint64_t was = r.storage ? r.storage->buffer.capacity : 0;
  r.storage = st;
  r.layout = layout;
  plan.report.gpu_buffer_bytes += st->buffer.capacity - std::min(was, st->buffer.capacity);
  Slot& slot = plan.slots.at(size_t(r.slot));
  slot.buffer = std::shared_ptr<webgpu::Buffer>(st, &st->buffer);  // held with the storage
  slot.pinned = true;
  for (Step& step : plan.steps)
    for (RecordedDispatch& d : step.dispatches)
      if (std::find(d.slots.begin(), d.slots.end(), r.slot) != d.slots.end()) d.group = bind_dispatch(plan, step, d);
}

ResidentLayouts resident_layouts(const Plan& plan) {
  return [&plan](int slot) -> const RowLayout* {
    const Resident* r = plan.resident_at(slot);
    return r && !r->exact ? &r->layout : nullptr;
  };
}

std::array<uint32_t, 3> pitch_of(const RowLayout& l, uint64_t numel, uint64_t start) {
  // A value in the buffer is [outer, n, inner] for its own n (a view of one too: same elements).
  return {uint32_t(l.outer ? numel / l.outer : 0), uint32_t(l.rows * l.inner), uint32_t(start)};
}

void pitch_bindings(webgpu::DispatchSpec& d, const std::vector<int>& slots, const std::vector<uint64_t>& numel,
                    const ResidentLayouts& layouts, const std::vector<uint64_t>& starts) {
  bool any = false;
  for (size_t j = 0; j < slots.size(); ++j) {
    const RowLayout* l = slots[j] >= 0 ? layouts(slots[j]) : nullptr;
    if (!l) continue;
    const auto [len, stride, start] = pitch_of(*l, numel[j], j < starts.size() ? starts[j] : 0);
    d.program.pitch(j, len, stride, start);
    any = true;
  }
  if (any) d.uniforms = d.program.uniform_data();  // (word 0, the status slot, is the runtime's to set)
}

void prepare_residents(Plan& plan, const std::unordered_map<std::string, DeviceTensor>& device,
                       const std::unordered_map<std::string, Tensor>& host, const Int64Policy& policy,
                       webgpu::CommandBatch& batch) {
  plan.report.appended_in_place = 0;
  for (Resident& r : plan.residents) {
    const Shape& present = plan.outputs.at(r.pair.output_index).shape;
    const RowLayout want = row_layout(present, r.axis, int64_t(r.layout.rows));
    if (want.outer != r.layout.outer || want.inner != r.layout.inner || want.used > r.layout.rows)
      throw Error("graph output '" + r.pair.output + "' " + shape_str(present) + " does not fit its appended buffer");
    auto d = device.find(r.pair.input);
    const bool in_place = d != device.end() && d->second.storage() == r.storage &&
                          d->second.shape().size() == present.size() && r.storage->filled >= 0 &&
                          d->second.shape()[size_t(r.axis)] == r.storage->filled;
    if (in_place) {
      plan.report.appended_in_place++;
      continue;
    }
    // Copied in. Presents handed out hold the buffer (beyond this resident and its slot): a new one.
    if (r.storage.use_count() > 2) give_buffer(plan, r, r.layout, policy);
    r.storage->filled = -1;
    if (d != device.end()) {
      copy_device_tensor(batch, d->second, r.storage->buffer.get(), r.axis, int64_t(r.layout.rows));
      continue;
    }
    const Tensor& t = host.at(r.pair.input);
    GpuUpload u = to_gpu(t, policy, r.pair.input);
    const RowLayout from = row_layout(t.shape(), r.axis, t.shape()[size_t(r.axis)]);
    const uint64_t esize = element_bytes(r.dtype, policy), row = from.used * from.inner * esize;
    for (uint64_t o = 0; row && o < from.outer; ++o)
      plan.device->write(r.storage->buffer.get(), static_cast<const std::byte*>(u.data) + o * row, row,
                         o * r.layout.rows * r.layout.inner * esize);
  }
}

}  // namespace onnxgpu::runtime
