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
#include "runtime/gpu_values.h"
#include "runtime/refresh_ahead.h"
#include "runtime/resident.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::runtime {

// Every buffer and binding is at least this large: an empty tensor still binds, and arrays of
// 64-bit elements (vec2<u32>) need at least 8 bytes.
constexpr uint64_t kMinBinding = 16;

struct Slot {
  std::shared_ptr<webgpu::Buffer> buffer;  // bound whole: a slot holds values of several sizes
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
  std::vector<uint32_t> uniform_data;  // what `uniforms` holds
  const ir::Node* node = nullptr;  // CPU node
  std::vector<StepValue> inputs;   // the node's inputs, then values its subgraphs read from outside
  size_t explicit_inputs = 0;
  std::vector<StepValue> outputs;
};

// What the planner decided, in the order it decided it, with the values each decision read (by id),
// so that a refresh (refresh.h) can redo only the decisions whose values changed size or content.
struct PlanValue {  // a value as the plan has it now
  DType dtype = DType::Undefined;
  Shape shape;
  const Tensor* constant = nullptr;  // a weight, or a folded value in Plan::constants
  int slot = -1;
};
struct KernelRecord {  // one call of a GPU kernel (a node's, or a fused group's)
  size_t index = 0;                // the graph node it is placed at
  const ir::Node* node = nullptr;  // a graph node; null for a fused node (then `fused`)
  ir::Node fused;
  std::vector<int> inputs;         // value ids of the node's inputs (-1: omitted)
  std::vector<int> outputs;        // value ids of its outputs (-1: not wanted)
  bool ok = false;                 // the kernel took the node
  std::string reason;              // why not
  std::vector<webgpu::GpuKernelContext::OutputSpec> results;
  std::vector<webgpu::TempSpec> temps;
  std::vector<webgpu::DispatchSpec> dispatches;
  std::vector<int> out_slots;      // per output: its buffer (-1: none; a view's is its input's)
  std::vector<int> temp_slots;     // the temporaries', then those of outputs written though unwanted
  std::vector<size_t> unwanted;    // the output index of each of the latter
  size_t first_dispatch = 0;       // where its dispatches start in the plan's GPU step
  bool dispatched = false;         // false: described only (outputs read only for their shapes)
  // Per output (empty: none): the value id of the past whose appended buffer it is written into as
  // the new rows (resident.h; out_slots has the buffer's slot), -1 for the others.
  std::vector<int> rows_of;
};
struct FoldRecord {  // a node computed at plan time
  size_t index = 0;
  bool shape_only = false;  // Shape / Size
  std::vector<int> inputs, outputs;
};
struct DecisionRecord {  // which fused group is placed at a node (fusion.h), decided on values' facts
  size_t index = 0;
  bool attention = false;
  std::vector<int> queried;     // the values whose facts the decision read
  std::vector<char> read_all;   // per queried value: their sizes and contents too (Fusion::Read::All),
                                // else only whether they are known, their dtype and rank
  bool found = false;
  ir::Node group;            // the fused node, when found
};
struct Recording {
  std::vector<PlanValue> values;
  std::unordered_map<std::string, int> ids;
  struct Event {
    enum class Kind { Fold, Decision, Kernel } kind;
    size_t record;
  };
  std::vector<Event> events;  // in plan order
  std::vector<FoldRecord> folds;
  std::vector<DecisionRecord> decisions;
  std::deque<KernelRecord> kernels;  // never moved: the planner's open segment points into them
  std::vector<std::pair<int, const Tensor*>> constant_uploads;  // folded values the GPU reads, by slot
  std::string not_refreshable;  // why the plan cannot serve other sizes ("" when it can)
  // Made by the first refresh, for the next ones: per kernel and fold record, the first record of
  // the same function (same op, attributes, fused expression; inputs and outputs by position), so
  // that a refresh finds another layer's call among those of one class; and a scratch of which
  // values changed, kept to spare an allocation per run.
  std::vector<int> kernel_class, fold_class;
  // Also made once: per value id, the events that read it (a fold's inputs, a decision's queried values,
  // a kernel's inputs and rows_of), ascending, in one array (value v's: readers[reader_start[v]] up to
  // readers[reader_start[v + 1]]), so that a refresh visits only the events that read a value it changed;
  // and a scratch of which events those are (a bit per event).
  std::vector<uint32_t> reader_start, readers;
  std::vector<uint64_t> pending;
  std::vector<char> changed;
  std::vector<int> changed_ids;           // the ids it set in `changed` (the next refresh clears just those)
  std::vector<PlanValue> changed_values;  // a refresh's scratch too: the values it changed, by id
  std::vector<int> fold_last;             // and by fold class, the last fold it computed (-1: none)
  std::vector<uint32_t> words;            // and the uniforms of the kernel calls it took or re-pitched
  std::vector<char> guarded;  // by kernel record: its node is in the report's guarded_nodes
};

// Where a graph output is found after a run.
struct OutputSource {
  int slot = -1;
  const Tensor* constant = nullptr;
  DType dtype = DType::Undefined;
  Shape shape;
};

// A GPU segment's dispatches encoded ahead, while the GPU ran the run before (replay.h,
// ChunkedEncoder): the command buffers of its chunks and what each dispatch was (pipeline, bind group,
// grid), so that a run whose segment still records exactly those dispatches submits them as they are.
struct EncodedAhead {
  struct Key {
    WGPUComputePipeline pipeline;
    WGPUBindGroup group;
    uint32_t x, y, z;
    bool operator==(const Key&) const = default;
  };
  size_t step = SIZE_MAX;  // the segment's index in Plan::steps
  std::vector<Key> keys;
  std::vector<webgpu::CommandBufferHandle> chunks;
  size_t submitted = 0;  // chunks already submitted (the run's first, by Replay::start)
  bool empty() const { return chunks.empty(); }
  void clear() {
    step = SIZE_MAX;
    keys.clear();
    chunks.clear();
    submitted = 0;
  }
};

struct Plan {
  std::shared_ptr<webgpu::Device> device;
  std::vector<Slot> slots;
  std::vector<std::pair<std::string, int>> inputs;  // graph input -> slot
  std::vector<Step> steps;
  std::vector<OutputSource> outputs;
  LandingMemory landings;                  // host memory the outputs read back each run land in
  std::shared_ptr<webgpu::Buffer> status;  // a status record per node (webgpu::shader::kStatusWords)
  std::deque<Tensor> constants;            // folded values (stable addresses)
  // Graph inputs whose values a kernel read at plan time (shape-like inputs): the plan serves only
  // runs with these same values.
  std::vector<std::pair<std::string, Tensor>> value_keys;
  std::unordered_map<size_t, std::string> fused_kernels;  // node index -> the fused kernel placed there
  PlanReport report;
  // The family of input signatures the plan can serve (plan_cache.h); the signature it serves now is
  // report.signature.
  std::string family;
  std::map<std::string, Shape> input_shapes;  // as recorded: the dims that differ later are symbolic
  Recording recording;
  std::vector<Resident> residents;  // KV caches appended in place (resident.h)
  std::vector<int> resident_of_slot;  // by slot: its index in `residents`, or -1 (add_resident keeps it)
  EncodedAhead ahead;  // the next run's commands, when the last run was a replay
  SizeTrend trend;     // the input sizes of its last runs (refresh_ahead.h)
  // A refresh made during the last run's wait for the sizes its trend predicted: the signature it
  // serves since, and the host time it took ("" when the last run made none).
  struct {
    std::string signature;
    double ms = 0;
  } refreshed_ahead;

  bool serves(const std::unordered_map<std::string, Tensor>& feeds) const {
    for (const auto& [name, want] : value_keys) {
      auto it = feeds.find(name);
      if (it == feeds.end() || it->second.nbytes() != want.nbytes() ||
          std::memcmp(it->second.raw(), want.raw(), want.nbytes()) != 0)
        return false;
    }
    return true;
  }

  // The resident whose buffer is slot `slot`, or null.
  const Resident* resident_at(int slot) const {
    if (slot < 0 || size_t(slot) >= resident_of_slot.size() || resident_of_slot[size_t(slot)] < 0) return nullptr;
    return &residents[size_t(resident_of_slot[size_t(slot)])];
  }
  void add_resident(Resident r) {
    if (resident_of_slot.size() <= size_t(r.slot)) resident_of_slot.resize(size_t(r.slot) + 1, -1);
    resident_of_slot[size_t(r.slot)] = int(residents.size());
    residents.push_back(std::move(r));
  }

  // A slot's value read back to the host (packed, from a resident buffer too), and a host tensor
  // written into a slot.
  Tensor download(int slot, DType dtype, const Shape& shape, const Int64Policy& policy);
  void upload(int slot, const Tensor& t, const Int64Policy& policy, const std::string& name);

  ~Plan();  // buffers go back to the device's pool (weights stay with the session)
};

// A recorded dispatch's bind group: its uniforms, the status records, then each bound slot's whole
// buffer (a refresh may put a larger value there: kernels index by the sizes in their uniforms).
webgpu::BindGroupHandle bind_dispatch(const Plan& plan, const Step& step, const RecordedDispatch& d);

}  // namespace onnxgpu::runtime
