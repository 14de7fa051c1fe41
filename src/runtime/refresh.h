// A recorded plan re-derived for another input signature of its family (the same input names,
// dtypes and ranks, the same values of value-keyed inputs): what a decode step whose past grows by
// one position, or a prompt of another length, needs instead of a plan of its own.
//
// The recording (plan.h, Recording) lists the planner's decisions in order with the values each
// read. A refresh takes them again in that order and redoes only those that read a value whose size
// or content changed: a fold is computed again, a fusion decision made again, a kernel called again
// (it gives the new uniforms and workgroup counts). A kernel called again must choose the programs
// and bindings it recorded, and a fusion decision the group it recorded: those are the plan's guards.
// When one fails, the plan is left as it was and the run plans anew (the plan cache then keeps a
// plan per set of guards). Otherwise the changes are applied: uniforms, workgroup counts, folded
// values (uploaded where the GPU reads them), and buffer capacities, which grow geometrically so a
// value that grows by a row per run regrows its buffer only log(n) times.
#pragma once
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/session.h"
#include "runtime/fusion.h"
#include "runtime/plan.h"

namespace onnxgpu::runtime {

class Refresh {
 public:
  Refresh(const ir::Model& model, const SessionOptions& options, Plan& plan, const Fusion& fusion);

  // Re-derives the plan for these feeds. False, with `why` and the plan untouched, when a guard
  // fails or the plan cannot be refreshed. Writes no input: the caller writes them and replays.
  bool run(const std::unordered_map<std::string, Tensor>& feeds,
           const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::string& why);

 private:
  struct GuardFailed : Error {
    using Error::Error;
  };

  const PlanValue& value(int id) const;
  void change(int id, PlanValue v);
  bool any_changed(const std::vector<int>& ids) const;
  void refold(const FoldRecord& f);
  struct Fold {  // a fold this refresh computed: its node, inputs (or Shape's input shape), outputs
    const ir::Node* node;
    std::vector<const Tensor*> inputs;
    Shape shape;
    std::vector<Tensor> outputs;
  };
  const std::vector<Tensor>* folded_before(const ir::Node& node, const FoldRecord& f,
                                           const std::vector<const Tensor*>& ins) const;
  void redecide(const DecisionRecord& d);
  void recall(size_t n, const KernelRecord& k);
  void pitch(const KernelRecord& k, webgpu::GpuKernelContext& ctx) const;
  void apply(const std::unordered_map<std::string, Tensor>& feeds,
             const std::unordered_map<std::string, DeviceTensor>& device_feeds);

  const ir::Model& model_;
  const SessionOptions& options_;
  Plan& plan_;
  const Fusion& fusion_;
  const Recording& rec_;
  std::vector<char> changed_;                   // by value id
  std::unordered_map<int, PlanValue> values_;   // the changed values
  std::unordered_map<int, const Tensor*> feed_; // graph inputs' host values in this run, by id
  std::deque<Tensor> fresh_;                    // folded values that came out different
  std::vector<std::pair<const Tensor*, const Tensor*>> replaced_;  // recorded -> fresh
  std::deque<std::pair<size_t, KernelRecord>> kernels_;             // kernels called again, new records
  std::vector<std::string> guarded_;            // their nodes
  std::deque<Fold> folds_;                      // folds computed again
  std::map<int, RowLayout> relayout_;           // appended buffers that need another layout, by slot
};

}  // namespace onnxgpu::runtime
