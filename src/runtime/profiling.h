// Profiling (SessionOptions::profile): every dispatch of a run timed on the GPU with timestamp
// queries, the nanoseconds summed per graph node over the profiled runs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/replay.h"

namespace onnxgpu::runtime {

struct ProfileSums {
  int runs = 0;
  std::vector<uint64_t> ns;          // by node index
  std::vector<int> dispatches;       // by node index, the last run's
  std::vector<uint64_t> bytes;       // by node index, the last run's: the bytes of the tensors its dispatches declare
  std::vector<uint64_t> flops;       // by node index, the last run's: its dispatches' floating-point operations
  std::unordered_map<size_t, std::string> fused;  // node index -> the fused kernel placed there
};

// Encodes each dispatch in a pass of its own between two timestamps, runs the segment, waits for it
// and adds the GPU times to `sums`, with each node's bytes: the sizes of the tensors its dispatches
// declare (each dispatch reads or writes each of them once, at least: a product's operands and
// result), from which the profile tells a node's achieved bandwidth. Slower than the chunked encoder: used only when profiling.
class TimedEncoder final : public SegmentEncoder {
 public:
  explicit TimedEncoder(ProfileSums& sums) : sums_(sums) {}
  webgpu::CommandBatch encode(Plan& plan, const Step& segment) override;

 private:
  static constexpr uint32_t kChunk = 1024;  // dispatches timed per submit
  ProfileSums& sums_;
  webgpu::QuerySetHandle timestamps_;
  std::shared_ptr<webgpu::Buffer> stamps_buffer_;
};

}  // namespace onnxgpu::runtime
