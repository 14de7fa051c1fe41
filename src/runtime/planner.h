// How a plan is made for one input signature. Node by node, in graph order: a node whose inputs are
// all known folds into a constant; a fused group (fusion.h) placed at the node runs as one GPU kernel;
// otherwise the node's GPU kernel describes its outputs and dispatches, which join the open GPU
// segment; a node that no GPU kernel takes runs alone on the CPU (or, per Int64Policy, fails or sends
// the whole graph to the CPU). Buffers are taken from a free list by size as values die.
// Planning also runs the model on the run's inputs: a CPU node needs the values before it.
// The planner records each decision with the values it read (plan.h, Recording): a refresh
// (refresh.h) redoes only those whose values changed when a run's shapes differ only in sizes.
#pragma once
#include <deque>
#include <map>
#include <memory>
#include <optional>
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

// Shape or Size of a value of this shape, folded at plan time.
std::vector<Tensor> fold_shape_op(const ir::Node& node, const Shape& shape);

// Calls a GPU kernel: false, with `reason`, when it cannot take the node.
bool run_kernel(const webgpu::GpuKernel& k, webgpu::GpuKernelContext& ctx, std::string& reason);

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

 private:
  struct Value {
    DType dtype = DType::Undefined;
    Shape shape;
    const Tensor* constant = nullptr;
    int slot = -1;
    bool from_cpu = false;          // produced by a CPU fallback node
    const Tensor* feed = nullptr;   // a graph input's host value in this run
  };

  void gpu_storable(DType dtype, const std::string& what) const;
  void add_inputs(const std::unordered_map<std::string, Tensor>& feeds,
                  const std::unordered_map<std::string, DeviceTensor>& device_feeds);
  void place_nodes();
  void finish_report();

  int alloc(uint64_t bytes, bool pinned = false);
  void release(int slot);
  int slot_of(const std::string& name);  // uploads a constant on first GPU use
  bool fold(const ir::Node& node);
  bool try_gpu(size_t index, const ir::Node& node, std::string& reason);
  void note_value_keys(const ir::Node& node, const webgpu::GpuKernelContext& ctx);
  std::vector<int> output_slots(const ir::Node& node, const std::vector<webgpu::GpuKernelContext::OutputSpec>& outputs);
  void record_dispatches(const ir::Node& node, KernelRecord& rec);
  int id_of(const std::string& name);
  std::vector<int> ids_of(const std::vector<std::string>& names);
  bool try_fused(size_t index, bool attention = false);
  int materialize(const std::string& name);
  void make_resident(const AppendPair& pair, const ir::Node& node, const webgpu::GpuKernelContext& ctx);
  struct RowsProducer {
    size_t record, output;  // the kernel record and its output that holds a Concat's new rows
  };
  std::optional<RowsProducer> rows_producer(const std::string& rows) const;
  void write_rows_in_place(const RowsProducer& p, const Resident& r);
  void run_group_or_nodes(size_t index);
  void place_at(size_t i);
  void place(size_t i);
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
  std::set<size_t> fused_away_;  // nodes computed by an earlier node's fused kernel
  std::set<std::string> released_;  // values whose buffer went back to free_
  std::vector<size_t> placed_here_;  // the nodes placed at place_nodes' current node, their reads not yet released
  std::deque<ir::Node> fused_nodes_;
  std::unordered_map<std::string, Value> values_;
  std::vector<int> refs_;
  std::map<uint64_t, std::vector<int>> free_;
  std::unordered_map<std::string, size_t> last_use_;
  std::set<std::string> graph_outputs_;
  // Dispatches of the open segment (in their kernel records), with the slots they bind.
  std::vector<std::pair<const webgpu::DispatchSpec*, std::vector<int>>> pending_;
  std::vector<size_t> pending_nodes_;
  size_t executed_ = 0;  // steps already run on this run's inputs
  // KV caches that may append in place (resident.h): the Concats and GroupQueryAttentions, by node index
  // (a GroupQueryAttention has two pairs), and the pasts fed as DeviceTensors that have no slot yet (the
  // node's buffer becomes theirs, or one of their own).
  std::unordered_map<size_t, std::vector<AppendPair>> appendable_;
  std::unordered_map<std::string, const DeviceTensor*> unplaced_;
  // Which kernel record (and output of it) produced each GPU value, and how many nodes read each value
  // other than for its shape: where a Concat's new rows come from (rows_producer).
  std::unordered_map<std::string, RowsProducer> produced_by_;
  std::unordered_map<std::string, int> readers_;
};

}  // namespace onnxgpu::runtime
