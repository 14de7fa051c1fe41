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
  std::unordered_map<size_t, std::string> fused;  // node index -> the fused kernel placed there
};

// Encodes each dispatch in a pass of its own between two timestamps, runs the segment, waits for it
// and adds the GPU times to `sums`. Slower than the chunked encoder: used only when profiling.
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
