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
#include <cstdint>
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
  // run() in its two parts: decide() redoes the decisions on the host alone (no GPU call, the plan
  // untouched: another thread may do it while the plan's GPU work is submitted), and when it returns
  // true, apply() puts them in the plan and on the GPU (the same feeds).
  bool decide(const std::unordered_map<std::string, Tensor>& feeds,
              const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::string& why);
  void apply(const std::unordered_map<std::string, Tensor>& feeds,
             const std::unordered_map<std::string, DeviceTensor>& device_feeds);

 private:
  struct GuardFailed : Error {
    using Error::Error;
  };

  const PlanValue& value(int id) const;
  void change(int id, DType dtype, const Shape& shape, const Tensor* constant, int slot);
  bool any_changed(const std::vector<int>& ids) const;
  void refold(const FoldRecord& f);
  struct Fold {  // a fold this refresh computed: its node, inputs (or Shape's input shape), outputs
    const ir::Node* node;
    int cls;   // its record's class (Recording::fold_class)
    int prev;  // the one before of that class, in folds_ (-1: none)
    std::vector<const Tensor*> inputs;
    Shape shape;
    std::vector<Tensor> outputs;
  };
  const std::vector<Tensor>* folded_before(const ir::Node& node, const FoldRecord& f,
                                           const std::vector<const Tensor*>& ins) const;
  void visit(const Recording::Event& e);
  bool decision_changed(const DecisionRecord& d) const;
  void redecide(const DecisionRecord& d);
  void recall(size_t n, const KernelRecord& k);
  void pitch(const KernelRecord& k, webgpu::GpuKernelContext& ctx);
  uint64_t rows_start(const KernelRecord& k, const webgpu::ValueRef& b, int slot, const Shape& shape);
  void fit(const Resident& r, const Shape& present);
  const RowLayout* layout_of(int slot) const;
  std::pair<int, const Shape*> bound_at(const KernelRecord& k, const webgpu::ValueRef& b,
                                       const std::vector<webgpu::GpuKernelContext::OutputSpec>& outputs) const;
  void classify();
  // A kernel called again, or taken from the call of another record of the same function on the same
  // facts (a model repeats its layers): what changes in its record.
  struct Recalled {
    size_t n = 0;  // its record
    std::vector<webgpu::GpuKernelContext::OutputSpec> results;  // own call only (`like` has them otherwise)
    std::vector<webgpu::TempSpec> temps;
    std::vector<webgpu::DispatchSpec> dispatches;  // own call: the programs, uniforms and workgroup counts
    std::vector<size_t> values_read;               // own call: the inputs whose values it read (constant or fed)
    const Recalled* like = nullptr;                // taken from this call
    const KernelRecord* self = nullptr;            // or its own record's choices kept, only re-pitched
    size_t words = 0;  // taken or re-pitched: where its dispatches' uniforms, pitched for its own buffers,
                       // start in words_ (back to back)
    const std::vector<webgpu::GpuKernelContext::OutputSpec>& outputs() const {
      return like ? like->results : self ? self->results : results;
    }
    const std::vector<webgpu::TempSpec>& temporaries() const { return like ? like->temps : self ? self->temps : temps; }
    const webgpu::DispatchSpec& dispatch(size_t j) const {
      return like ? like->dispatches[j] : self ? self->dispatches[j] : dispatches[j];
    }
  };
  // A kernel whose inputs did not change but whose output's new rows moved (KernelRecord::rows_of): its
  // record's choices with the pitches of this run.
  void repitch(size_t n, const KernelRecord& k);
  // Appends dispatch d's uniforms (of record k, its outputs `results`) to words_, their pitch words set
  // for the buffers and layouts of this run.
  void pitched_words(const KernelRecord& k, const webgpu::DispatchSpec& d,
                     const std::vector<webgpu::GpuKernelContext::OutputSpec>& results);

  const ir::Model& model_;
  const SessionOptions& options_;
  Plan& plan_;
  const Fusion& fusion_;
  const Recording& rec_;
  std::vector<char>& changed_;                  // by value id (the recording's scratch)
  std::vector<uint64_t>& pending_;              // by event: to visit (the recording's scratch)
  std::vector<PlanValue>& values_;              // by value id: the changed ones (the recording's scratch)
  std::vector<int>& changed_ids_;               // which, in the order they changed (the recording's scratch)
  std::vector<const Tensor*> fold_ins_;         // a fold's inputs
  std::unordered_map<int, const Tensor*> feed_; // graph inputs' host values in this run, by id
  std::vector<std::pair<const Tensor*, const Tensor*>> replaced_;  // recorded folded value -> fresh (in folds_)
  std::deque<Recalled> kernels_;                // kernels called again or taken, in plan order
  std::vector<uint32_t>& words_;                // uniforms of the taken and re-pitched (the recording's scratch)
  std::vector<const Recalled*> own_calls_;      // those called again (the ones others may take)
  std::vector<size_t> guarded_;                 // their records
  std::deque<Fold> folds_;                      // folds computed again
  std::vector<int>& fold_last_;                 // by fold class: the last of folds_ (-1: none; the recording's scratch)
  std::map<int, RowLayout> relayout_;           // appended buffers that need another layout, by slot
};

}  // namespace onnxgpu::runtime
