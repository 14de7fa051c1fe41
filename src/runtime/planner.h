// How a plan is made for one input signature. Node by node, in graph order: a node whose inputs are
// all known folds into a constant; a fused group (fusion.h) placed at the node runs as one GPU kernel;
// otherwise the node's GPU kernel describes its outputs and dispatches, which join the open GPU
// segment; a node that no GPU kernel takes runs alone on the CPU (or, per Int64Policy, fails or sends
// the whole graph to the CPU). Buffers are taken from a free list by size as values die.
// Planning also runs the model on the run's inputs: a CPU node needs the values before it.
//
// A recorded plan serves a family of shapes: refresh() walks the graph again for a run whose input
// shapes differ only in sizes, taking every buffer request, fold and kernel call in the order the
// recording made them. A kernel whose inputs look the same as recorded is not called again; one that
// sees other sizes (or other folded values) runs again and must choose the same programs and
// bindings: those are the plan's guards. What changes is staged (uniforms, workgroup counts, folded
// values, buffer capacities) and applied only when every guard holds, so a refused refresh leaves
// the plan as it was and the run plans anew.
#pragma once
#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/session.h"
#include "runtime/fusion.h"
#include "runtime/plan.h"
#include "runtime/replay.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::runtime {

// The constants a session uploads once and every plan shares.
struct SessionConstants {
  std::unordered_map<std::string, std::shared_ptr<webgpu::Buffer>> buffers;  // by value name
  std::map<std::string, Tensor> derived;  // host copies of the constants fusion made, by name
};

// The family of an input signature: names, dtypes and ranks, and whether each input is on the GPU.
std::string family_of(const std::unordered_map<std::string, Tensor>& feeds,
                      const std::unordered_map<std::string, DeviceTensor>& device_feeds);

// fallback_per_op_not_whole_graph is off and a node needs the CPU: the whole graph runs there.
struct WholeGraphFallback : Error {
  using Error::Error;
};

class Planner {
 public:
  Planner(const ir::Model& model, const SessionOptions& options, Plan& plan, SessionConstants& constants,
          const Fusion& fusion, SegmentEncoder& encoder);

  // Records the plan for these feeds, writing them into the plan's input slots and running its steps
  // as needed. Returns how many steps have run: the caller finishes the run from there (Replay).
  size_t build(const std::unordered_map<std::string, Tensor>& feeds,
               const std::unordered_map<std::string, DeviceTensor>& device_feeds);

  // Re-derives the recorded plan for these feeds' sizes (same family). False, with the plan
  // untouched and `why` set, when a guard fails; then the run needs a plan of its own. Writes no
  // input: the caller writes them and replays the whole plan.
  bool refresh(const std::unordered_map<std::string, Tensor>& feeds,
               const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::string& why);

 private:
  struct Value {
    DType dtype = DType::Undefined;
    Shape shape;
    const Tensor* constant = nullptr;
    int slot = -1;
    bool from_cpu = false;          // produced by a CPU fallback node
    const Tensor* feed = nullptr;   // a graph input's host value in this run
  };

  void add_inputs(const std::unordered_map<std::string, Tensor>& feeds,
                  const std::unordered_map<std::string, DeviceTensor>& device_feeds);
  void place_nodes();
  void finish_report();

  struct GuardFailed : Error {
    using Error::Error;
  };
  // What a refresh stages, applied by apply_refresh() once the whole walk agrees with the recording.
  struct Staged {
    std::unordered_map<int, uint64_t> need;  // slot -> the most bytes a value puts in it
    std::deque<Tensor> values;               // folded values that came out different
    std::vector<std::pair<const Tensor*, const Tensor*>> replaced;  // recorded -> staged
    std::set<std::string> changed;           // names of values whose folded value changed
    std::vector<std::vector<uint32_t>> uniforms;  // per GPU step, the uniform buffer's words
    std::vector<std::vector<std::array<uint32_t, 3>>> grids;  // per GPU step, per dispatch
    std::vector<std::string> guarded;        // nodes whose kernel ran again
    std::vector<std::pair<size_t, KernelRecord>> records;  // their new records, by recording index
    size_t slot_requests = 0, kernels = 0, folds = 0, segments = 0;
  };

  int alloc(uint64_t bytes, bool pinned = false);
  int recorded_slot(uint64_t bytes);  // a refresh's buffer request: the recording's slot
  bool call_kernel(size_t index, const ir::Node& node, const std::vector<webgpu::GpuValueInfo>& infos,
                   webgpu::GpuKernelContext& ctx, const webgpu::GpuKernel& k, std::string& reason);
  void refold(size_t index, const ir::Node& node, bool shape_only, const std::function<std::vector<Tensor>()>& compute);
  webgpu::BindGroupHandle bind(const Step& step, const RecordedDispatch& d) const;
  void apply_refresh(const std::unordered_map<std::string, Tensor>& feeds,
                     const std::unordered_map<std::string, DeviceTensor>& device_feeds);
  void release(int slot);
  int slot_of(const std::string& name);  // uploads a constant on first GPU use
  bool fold(const ir::Node& node);
  std::vector<Tensor> fold_shape_op(const ir::Node& node) const;
  bool try_gpu(size_t index, const ir::Node& node, std::string& reason);
  void note_value_keys(const ir::Node& node, const webgpu::GpuKernelContext& ctx);
  std::vector<int> output_slots(const ir::Node& node, const webgpu::GpuKernelContext& ctx);
  void record_dispatches(size_t index, const ir::Node& node, webgpu::GpuKernelContext& ctx, std::vector<int>& out_slots);
  bool try_fused(size_t index, size_t at, bool attention = false);
  void run_group_or_nodes(size_t index, size_t at);
  void place(size_t i, size_t at);
  void run_on_cpu(const ir::Node& node);
  void close_segment();
  void finish_values_of(size_t index, const ir::Node& node);

  const ir::Model& model_;
  const ir::Graph& g_;
  const SessionOptions& options_;
  const Int64Policy& policy_;
  Plan& plan_;
  SessionConstants& constants_;
  Replay replay_;
  const Fusion& fusion_;
  bool refreshing_ = false;
  Staged staged_;
  std::set<size_t> fused_away_;  // nodes computed by an earlier node's fused kernel
  std::set<std::string> released_;  // values whose buffer went back to free_
  std::deque<ir::Node> fused_nodes_;
  std::unordered_map<std::string, Value> values_;
  std::vector<int> refs_;
  std::map<uint64_t, std::vector<int>> free_;
  std::unordered_map<std::string, size_t> last_use_;
  std::set<std::string> graph_outputs_;
  // Dispatches of the open segment, with the slots they bind.
  std::vector<std::pair<webgpu::DispatchSpec, std::vector<int>>> pending_;
  std::vector<size_t> pending_nodes_;
  size_t executed_ = 0;  // steps already run on this run's inputs
};

}  // namespace onnxgpu::runtime
