// The WebGPU executor: plans a model for one input-shape signature (constant folding, placement of
// every node on a GPU kernel or, alone, on the CPU), records its GPU work once and replays it on
// later runs with the same signature. A small LRU keeps several signatures, so dynamic shapes keep
// the benefit of capture.
#pragma once
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/session.h"

namespace onnxgpu::webgpu {
class Device;
}

namespace onnxgpu::runtime {

struct Plan;

// GPU nanoseconds per node, summed over profiled runs (SessionOptions::profile).
struct ProfileSums {
  int runs = 0;
  std::vector<uint64_t> ns;          // by node index
  std::vector<int> dispatches;       // by node index, the last run's
  std::unordered_map<size_t, std::string> fused;  // node index -> the fused kernel placed there
};

class GpuExecutor {
 public:
  GpuExecutor(const ir::Model& model, const SessionOptions& options);
  ~GpuExecutor();

  std::vector<Tensor> run(const std::unordered_map<std::string, Tensor>& feeds);
  std::vector<DeviceTensor> run_on_device(const std::unordered_map<std::string, Tensor>& feeds,
                                          const std::unordered_map<std::string, DeviceTensor>& device_feeds);
  PlanReport last_report() const;  // a copy, taken under the device lock
  webgpu::Device& device() { return *device_; }
  Profile profile() const;
  void reset_profile();

 private:
  void run_impl(const std::unordered_map<std::string, Tensor>& feeds,
                const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::vector<Tensor>* outputs,
                std::vector<DeviceTensor>* device_outputs);
  void run_whole_graph_on_cpu(const std::unordered_map<std::string, Tensor>& feeds,
                              const std::unordered_map<std::string, DeviceTensor>& device_feeds,
                              std::vector<Tensor>* outputs, std::vector<DeviceTensor>* device_outputs);

  static constexpr size_t kMaxPlans = 8;  // signatures kept recorded
  struct Weights;

  const ir::Model& model_;
  SessionOptions options_;
  std::shared_ptr<webgpu::Device> device_;
  std::unique_ptr<Weights> weights_;  // initializers uploaded once, shared by every plan
  std::set<std::string> whole_graph_cpu_;  // signatures that fell back whole (fallback_per_op off)
  std::string whole_graph_reason_;
  std::list<std::pair<std::string, std::shared_ptr<Plan>>> plans_;  // most recent first
  PlanReport report_;
  ProfileSums profile_;
};

// The process-wide device (created on first use, shared by every session, kept until exit), and the lock that
// serialises its use (sessions may run from several threads).
std::shared_ptr<webgpu::Device> shared_device();
std::mutex& device_mutex();

}  // namespace onnxgpu::runtime
