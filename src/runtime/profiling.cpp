#include "runtime/profiling.h"

#include <algorithm>

namespace onnxgpu::runtime {

webgpu::CommandBatch TimedEncoder::encode(Plan& plan, const Step& segment) {
  webgpu::Device& dev = *plan.device;
  if (!timestamps_) {
    timestamps_ = dev.timestamp_queries(2 * kChunk);
    stamps_buffer_ = std::make_shared<webgpu::Buffer>(dev.create_buffer(
        16 * kChunk, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc, "onnxgpu timestamps"));
  }
  for (const KernelRecord& k : plan.recording.kernels) {
    if (!k.ok || !k.dispatched) continue;
    if (sums_.bytes.size() <= k.index) {
      sums_.bytes.resize(k.index + 1, 0);
      sums_.flops.resize(k.index + 1, 0);
    }
    uint64_t bytes = 0, flops = 0;
    for (const webgpu::DispatchSpec& d : k.dispatches) {
      for (const auto& t : d.program.tensors()) bytes += uint64_t(shape_numel(t.shape)) * uint64_t(t.type.storage_bits) / 8;
      flops += d.flops;
    }
    sums_.bytes[k.index] = bytes;
    sums_.flops[k.index] = flops;
  }
  const auto& dispatches = segment.dispatches;
  for (size_t begin = 0; begin < dispatches.size(); begin += kChunk) {
    webgpu::CommandBatch batch = dev.batch();
    size_t n = std::min<size_t>(kChunk, dispatches.size() - begin);
    for (size_t k = 0; k < n; ++k) {
      const RecordedDispatch& d = dispatches[begin + k];
      batch.timed_dispatch(*d.pipeline, d.group.get(), d.x, d.y, d.z, timestamps_.get(), uint32_t(k));
    }
    batch.resolve(timestamps_.get(), 0, uint32_t(2 * n), stamps_buffer_->get(), 0);
    std::vector<uint64_t> stamps(2 * n);
    webgpu::ReadRequest read{stamps_buffer_->get(), 0, stamps.size() * 8, stamps.data()};
    dev.submit_and_read(batch, std::span(&read, 1));
    for (size_t k = 0; k < n; ++k) {
      const RecordedDispatch& d = dispatches[begin + k];
      if (sums_.ns.size() <= d.node) {
        sums_.ns.resize(d.node + 1, 0);
        sums_.dispatches.resize(d.node + 1, 0);
      }
      if (stamps[2 * k + 1] > stamps[2 * k]) sums_.ns[d.node] += stamps[2 * k + 1] - stamps[2 * k];
      sums_.dispatches[d.node]++;
    }
  }
  return dev.batch();  // everything is submitted: the caller's readbacks go in a batch of their own
}

}  // namespace onnxgpu::runtime
