// How a recorded plan runs: this run's inputs written into the plan's input slots, the steps in
// order (a GPU segment is submitted as recorded; a CPU step reads its inputs back, runs the
// reference kernel and writes its outputs), and in the submit of the last segment the outputs and
// the nodes' status records read back (or the outputs copied into buffers of their own).
#pragma once
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/session.h"
#include "runtime/plan.h"

namespace onnxgpu::runtime {

// How a GPU segment's dispatches are encoded and submitted. It returns the batch that holds the
// segment's last dispatches, not yet submitted: the replay submits it, with the readbacks when it is
// the last segment of the run.
class SegmentEncoder {
 public:
  virtual ~SegmentEncoder() = default;
  virtual webgpu::CommandBatch encode(Plan& plan, const Step& segment) = 0;
  // Encoding ahead (an encoder may do without): encode_ahead() encodes plan.steps[step] for the next
  // run while the GPU runs this one; submit_ahead() submits what was encoded when the segment still
  // records exactly those dispatches, and tells whether it did. start_ahead() submits only the first
  // part of it (the rest goes with submit_ahead()), so that the GPU starts before the host's other work.
  virtual void encode_ahead(Plan&, size_t /*step*/) {}
  virtual bool start_ahead(Plan&, size_t /*step*/) { return false; }
  virtual bool submit_ahead(Plan&, size_t /*step*/) { return false; }
};

// The usual encoder: a long segment goes to the GPU in growing chunks (8, 16, 32, ... dispatches, a
// few submits in all), so that the GPU starts on the first while the host still encodes the rest.
// It encodes ahead too: a replay that the next run is likely to repeat (a captured loop) has its
// chunks encoded while the host waits for the GPU, and the next run only submits them.
class ChunkedEncoder final : public SegmentEncoder {
 public:
  webgpu::CommandBatch encode(Plan& plan, const Step& segment) override;
  void encode_ahead(Plan& plan, size_t step) override;
  bool start_ahead(Plan& plan, size_t step) override;
  bool submit_ahead(Plan& plan, size_t step) override;
};

// A CPU step's output changed shape with the data: the recorded plan no longer fits.
struct ReplanNeeded : Error {
  ReplanNeeded() : Error("replan") {}
};

// Writes this run's inputs into the plan's input slots (host tensors with queue writes, device
// tensors with GPU copies) and clears the status records.
void write_inputs(Plan& plan, const Int64Policy& policy, const std::unordered_map<std::string, Tensor>& host,
                  const std::unordered_map<std::string, DeviceTensor>& device);

// Runs a CPU step's node on the reference kernel: its inputs from the GPU or plan-time constants.
std::vector<Tensor> run_cpu_step(const Step& s, Plan& plan, const ir::Model& model, const Int64Policy& policy);

class Replay {
 public:
  Replay(Plan& plan, const ir::Model& model, const Int64Policy& policy, SegmentEncoder& encoder)
      : plan_(plan), model_(model), policy_(policy), encoder_(encoder) {}
  // A run started but not finished (an error between the two) drops the rest of what was encoded ahead.
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  // For a plan that is all one GPU segment: while the GPU runs this one, `next` readies the plan for
  // the next run (refresh_ahead.h) and tells whether that run likely replays it as it then is; if so,
  // the plan's GPU work is encoded for it (encoding ahead). The outputs this run hands out keep this
  // run's shapes whatever `next` changes in the plan.
  void prepare_next(std::function<bool()> next) { next_ = std::move(next); }
  bool submitted_ahead() const { return submitted_ahead_; }  // this run's commands were encoded ahead

  // For a plan that is all one GPU segment, encoded ahead for this run: its first chunk goes to the GPU
  // now (after write_inputs), so that the GPU works while the host readies the rest of the run.
  void start();

  // Runs steps [from, to) and reads nothing back (the planner runs what it has recorded before it
  // runs a CPU node).
  void run(size_t from, size_t to);
  // Run steps [from, end) and then give the outputs, read back to the host or kept on the GPU. An
  // error names the node whose status record a kernel set (an index out of range, say).
  std::vector<Tensor> finish_on_host(size_t from);
  std::vector<DeviceTensor> finish_on_device(size_t from);

 private:
  // Steps [from, end): the last submit also encodes `copies` and makes `reads` (the status records
  // are added to them); then the status records are checked.
  void finish(size_t from, const std::function<void(webgpu::CommandBatch&)>& copies,
              std::vector<webgpu::ReadRequest>& reads);
  void run_cpu(const Step& s);
  // The plan is all one GPU segment (what encoding ahead serves).
  bool one_gpu_segment() const { return plan_.steps.size() == 1 && !plan_.steps[0].cpu; }

  Plan& plan_;
  const ir::Model& model_;
  const Int64Policy& policy_;
  SegmentEncoder& encoder_;
  std::function<bool()> next_;
  bool submitted_ahead_ = false;
};

}  // namespace onnxgpu::runtime
