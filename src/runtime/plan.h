// What a recorded plan is: the GPU work of one model for one input signature, kept to be replayed.
// A plan is a list of steps, each a GPU segment (dispatches with their pipelines and bind groups,
// recorded once) or one node that runs on the CPU; values live in slots (GPU buffers). The planner
// (planner.h) makes plans, the replay (replay.h) runs them, the plan cache (plan_cache.h) keeps them.
#pragma once
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/session.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::runtime {

// Every buffer and binding is at least this large: an empty tensor still binds, and arrays of
// 64-bit elements (vec2<u32>) need at least 8 bytes.
constexpr uint64_t kMinBinding = 16;

struct Slot {
  std::shared_ptr<webgpu::Buffer> buffer;
  uint64_t bytes = 0;   // what the value needs
  bool pinned = false;  // graph inputs/outputs and weights: never reused
};

// A value a CPU step reads or writes: in a slot, or a constant known at plan time.
struct StepValue {
  std::string name;
  int slot = -1;
  const Tensor* constant = nullptr;
  DType dtype = DType::Undefined;
  Shape shape;
};

struct RecordedDispatch {
  const webgpu::Pipeline* pipeline;
  webgpu::BindGroupHandle group;
  uint32_t x, y, z;
  uint32_t node;            // index of the graph node it belongs to
  std::vector<int> slots;   // the slots it binds, in binding order (after the uniforms and status)
  uint64_t uniform_offset;  // where its uniforms start in the segment's uniform buffer, and their size
  uint64_t uniform_bytes;
};

struct Step {
  bool cpu = false;
  std::vector<RecordedDispatch> dispatches;  // GPU segment
  std::shared_ptr<webgpu::Buffer> uniforms;
  const ir::Node* node = nullptr;  // CPU node
  std::vector<StepValue> inputs;   // the node's inputs, then values its subgraphs read from outside
  size_t explicit_inputs = 0;
  std::vector<StepValue> outputs;
};

// What the planner decided, in the order it decided it, so that a refresh (planner.h) can walk the
// graph again for other sizes and check that every decision comes out the same.
struct KernelRecord {  // one call of a GPU kernel (a node's, or a fused group's)
  size_t index = 0;    // the graph node it is placed at
  const ir::Node* node = nullptr;  // a graph node; null for a fused node (compared by fused_same)
  ir::Node fused;                  // the fused node, when it is one
  std::vector<webgpu::GpuValueInfo> inputs;  // what the kernel saw (runtime values left out)
  bool ok = false;                 // the kernel took the node
  std::string reason;              // why not
  std::vector<webgpu::GpuKernelContext::OutputSpec> outputs;
  std::vector<webgpu::TempSpec> temps;
  std::vector<webgpu::DispatchSpec> dispatches;
};
struct FoldRecord {  // one node computed at plan time
  size_t index = 0;
  std::vector<const Tensor*> outputs;  // in Plan::constants (a refresh rewrites them in place)
};
struct Recording {
  std::vector<int> slot_requests;  // the slot each buffer request got, in order
  std::vector<KernelRecord> kernels;
  std::vector<FoldRecord> folds;
  std::vector<std::pair<int, const Tensor*>> constant_uploads;  // folded values the GPU reads, by slot
  std::string not_refreshable;  // why the plan cannot serve other sizes ("" when it can)
};

// Where a graph output is found after a run.
struct OutputSource {
  int slot = -1;
  const Tensor* constant = nullptr;
  DType dtype = DType::Undefined;
  Shape shape;
};

struct Plan {
  std::shared_ptr<webgpu::Device> device;
  std::vector<Slot> slots;
  std::vector<std::pair<std::string, int>> inputs;  // graph input -> slot
  std::vector<Step> steps;
  std::vector<OutputSource> outputs;
  std::shared_ptr<webgpu::Buffer> status;  // a status record per node (webgpu::shader::kStatusWords)
  std::deque<Tensor> constants;            // folded values (stable addresses)
  // Graph inputs whose values a kernel read at plan time (shape-like inputs): the plan serves only
  // runs with these same values.
  std::vector<std::pair<std::string, Tensor>> value_keys;
  std::unordered_map<size_t, std::string> fused_kernels;  // node index -> the fused kernel placed there
  PlanReport report;
  // The family of input signatures the plan can serve (names, dtypes, ranks: planner.h, refresh), the
  // signature it serves now, and the signature it was recorded for.
  std::string family, signature;
  std::map<std::string, Shape> input_shapes;  // as recorded: the dims that differ later are symbolic
  Recording recording;

  bool serves(const std::unordered_map<std::string, Tensor>& feeds) const {
    for (const auto& [name, want] : value_keys) {
      auto it = feeds.find(name);
      if (it == feeds.end() || it->second.nbytes() != want.nbytes() ||
          std::memcmp(it->second.raw(), want.raw(), want.nbytes()) != 0)
        return false;
    }
    return true;
  }

  // A slot's value read back to the host, and a host tensor written into a slot.
  Tensor download(int slot, DType dtype, const Shape& shape, const Int64Policy& policy);
  void upload(int slot, const Tensor& t, const Int64Policy& policy, const std::string& name);

  ~Plan();  // buffers go back to the device's pool (weights stay with the session)
};

}  // namespace onnxgpu::runtime
