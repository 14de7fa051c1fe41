// The WebGPU executor: runs a model on the GPU for a session. Each run's input signature finds its
// recorded plan in the cache (plan_cache.h) and replays it (replay.h); a run whose shapes differ only
// in sizes refreshes a plan of its family for them (planner.h) and replays it; otherwise the planner
// makes a plan, running the model as it goes. With fallback_per_op_not_whole_graph off, a signature whose plan needs the CPU
// runs whole on the CPU reference.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/session.h"
#include "runtime/plan_cache.h"
#include "runtime/planner.h"
#include "runtime/profiling.h"
#include "runtime/refresh_ahead.h"
#include "runtime/shared_device.h"

namespace onnxgpu::runtime {

class GpuExecutor {
 public:
  // `constants`: the uploaded weights, shared with other executors of the same session's models (branches.h);
  // null: its own.
  GpuExecutor(const ir::Model& model, const SessionOptions& options, std::shared_ptr<SessionConstants> constants = nullptr);
  ~GpuExecutor();

  std::vector<Tensor> run(const std::unordered_map<std::string, Tensor>& feeds);
  std::vector<DeviceTensor> run_on_device(const std::unordered_map<std::string, Tensor>& feeds,
                                          const std::unordered_map<std::string, DeviceTensor>& device_feeds);
  // Host tensors copied into GPU buffers of their own, as outputs kept on the device are (IO binding).
  std::vector<DeviceTensor> to_device(const std::vector<Tensor>& tensors);
  PlanReport last_report() const;  // a copy, taken under the device lock
  webgpu::Device& device() { return *device_; }
  std::shared_ptr<SessionConstants> constants() const { return constants_; }
  Profile profile() const;
  void reset_profile();

 private:
  // Out: Tensor (outputs read back) or DeviceTensor (outputs kept on the GPU).
  template <typename Out>
  std::vector<Out> run_impl(const std::unordered_map<std::string, Tensor>& feeds,
                            const std::unordered_map<std::string, DeviceTensor>& device_feeds);
  template <typename Out>
  std::vector<Out> plan_and_run(const std::string& signature, const std::unordered_map<std::string, Tensor>& feeds,
                                const std::unordered_map<std::string, DeviceTensor>& device_feeds);
  // A plan of this run's family refreshed for its sizes (planner.h), or null when none takes them.
  std::shared_ptr<Plan> refresh_for(const std::string& signature, const std::unordered_map<std::string, Tensor>& feeds,
                                    const std::unordered_map<std::string, DeviceTensor>& device_feeds);
  // Refreshing ahead (refresh_ahead.h): the refresh for the next run's predicted sizes, its decisions
  // started on the worker (null when the sizes cannot be fed), then, in this run's wait, applied to the
  // plan; true when the plan then serves the predicted signature.
  struct AheadRefresh;
  std::unique_ptr<AheadRefresh> start_refresh_ahead(const std::shared_ptr<Plan>& plan, const SizeTrend::Sizes& next,
                                                    const std::unordered_map<std::string, Tensor>& feeds,
                                                    const std::unordered_map<std::string, DeviceTensor>& device_feeds);
  bool finish_refresh_ahead(const std::shared_ptr<Plan>& plan, AheadRefresh& ahead);
  struct WorkerJoin {  // waits for the worker's task on the way out, errors included
    HostWorker* worker;
    ~WorkerJoin();
  };
  std::vector<Tensor> run_whole_graph_on_cpu(const std::unordered_map<std::string, Tensor>& feeds,
                                             const std::unordered_map<std::string, DeviceTensor>& device_feeds);

  const ir::Model& model_;
  SessionOptions options_;
  std::shared_ptr<webgpu::Device> device_;
  std::shared_ptr<SessionConstants> constants_;  // uploaded once, shared by every plan
  std::unique_ptr<Fusion> fusion_;               // the graph's fusable groups, found once
  PlanCache plans_;
  std::set<std::string> whole_graph_cpu_;  // signatures that fell back whole (fallback_per_op off)
  std::string whole_graph_reason_;
  PlanReport report_;
  ProfileSums profile_;
  std::unique_ptr<SegmentEncoder> encoder_;  // timed when profiling
  std::unique_ptr<HostWorker> worker_;       // refreshes ahead (made at the first)
};

}  // namespace onnxgpu::runtime
