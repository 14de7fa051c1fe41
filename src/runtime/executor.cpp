#include "runtime/executor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>

#include "cpu/graph_runner.h"
#include "runtime/fusion.h"
#include "runtime/gpu_values.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::runtime {

namespace wg = webgpu;

std::mutex& device_mutex() {
  static std::mutex m;
  return m;
}

// The device is kept for the life of the process once made, as a driver context is: making one per
// session cost each time (SwiftShader keeps thread-local keys and ~73 KB per device, so a process
// that made ~1,000 in turn ran out of keys and aborted). A lost device is replaced. It is released at
// exit, before the driver's own teardown: atexit handlers run in the reverse order of registration,
// and this one is registered after the driver's library was loaded.
std::shared_ptr<wg::Device> shared_device() {
  static std::mutex m;
  static std::shared_ptr<wg::Device>* kept = nullptr;  // never destroyed by static teardown: see above
  std::lock_guard<std::mutex> lock(m);
  if (!kept) {
    auto device = std::make_shared<wg::Device>();
    kept = new std::shared_ptr<wg::Device>(std::move(device));
    // Registered once the device (and with it the driver's library) exists, so that it runs first.
    std::atexit([] { kept->reset(); });
  }
  if ((*kept)->lost()) *kept = std::make_shared<wg::Device>();
  return *kept;
}

}  // namespace onnxgpu::runtime

namespace onnxgpu {

struct DeviceTensor::Storage {
  std::shared_ptr<webgpu::Device> device;
  webgpu::Buffer buffer;
  Int64Policy policy;
  ~Storage() {
    std::lock_guard<std::mutex> lock(runtime::device_mutex());
    device->recycle(std::move(buffer));
  }
};

Tensor DeviceTensor::to_host() const {
  if (!storage_) throw InvalidArgument("DeviceTensor::to_host: the tensor is empty");
  std::lock_guard<std::mutex> lock(runtime::device_mutex());
  std::vector<std::byte> bytes(runtime::gpu_bytes(dtype_, shape_, storage_->policy));
  if (!bytes.empty()) storage_->device->read(storage_->buffer.get(), bytes.data(), bytes.size());
  return runtime::from_gpu(bytes.data(), dtype_, shape_, storage_->policy);
}

}  // namespace onnxgpu

namespace onnxgpu::runtime {

// Every buffer and binding is at least this large: an empty tensor still binds, and arrays of
// 64-bit elements (vec2<u32>) need at least 8 bytes.
constexpr uint64_t kMinBinding = 16;

// ---- The recorded plan ---------------------------------------------------------------------------

struct Slot {
  std::shared_ptr<wg::Buffer> buffer;
  uint64_t bytes = 0;   // what the value needs
  bool pinned = false;  // graph inputs/outputs and weights: never reused
};

struct StepValue {
  std::string name;
  int slot = -1;                     // on the GPU
  const Tensor* constant = nullptr;  // or known at plan time
  DType dtype = DType::Undefined;
  Shape shape;
};

struct RecordedDispatch {
  const wg::Pipeline* pipeline;
  wg::BindGroupHandle group;
  uint32_t x, y, z;
  uint32_t node;  // index of the graph node it belongs to
};

struct Step {
  bool cpu = false;
  std::vector<RecordedDispatch> dispatches;  // GPU segment
  std::shared_ptr<wg::Buffer> uniforms;
  const ir::Node* node = nullptr;  // CPU node
  std::vector<StepValue> inputs;   // the node's inputs, then values its subgraphs read from outside
  size_t explicit_inputs = 0;
  std::vector<StepValue> outputs;
};

struct OutputSource {
  int slot = -1;
  const Tensor* constant = nullptr;
  DType dtype = DType::Undefined;
  Shape shape;
};

struct Plan {
  std::shared_ptr<wg::Device> device;
  std::vector<Slot> slots;
  std::vector<std::pair<std::string, int>> inputs;  // graph input -> slot
  std::vector<Step> steps;
  std::vector<OutputSource> outputs;
  std::shared_ptr<wg::Buffer> status;
  std::deque<Tensor> constants;       // folded values (stable addresses)
  // Graph inputs whose values a kernel read at plan time (shape-like inputs): the plan serves only
  // runs with these same values.
  std::vector<std::pair<std::string, Tensor>> value_keys;
  PlanReport report;
  // Profiling (SessionOptions::profile): timestamps for up to kTimedChunk dispatches per submit.
  wg::QuerySetHandle timestamps;
  std::shared_ptr<wg::Buffer> timestamp_buffer;

  bool serves(const std::unordered_map<std::string, Tensor>& feeds) const {
    for (const auto& [name, want] : value_keys) {
      auto it = feeds.find(name);
      if (it == feeds.end() || it->second.nbytes() != want.nbytes() ||
          std::memcmp(it->second.raw(), want.raw(), want.nbytes()) != 0)
        return false;
    }
    return true;
  }

  ~Plan() {  // buffers go back to the device's pool (weights stay with the session)
    for (auto& s : slots)
      if (s.buffer && s.buffer.use_count() == 1) device->recycle(std::move(*s.buffer));
  }
};

// ---- Running a plan ----------------------------------------------------------------------------

namespace {

struct RunState {
  Plan& plan;
  const ir::Model& model;
  const Int64Policy& policy;
};

Tensor download(Plan& plan, int slot, DType dtype, const Shape& shape, const Int64Policy& policy) {
  std::vector<std::byte> bytes(gpu_bytes(dtype, shape, policy));
  if (!bytes.empty()) plan.device->read(plan.slots[size_t(slot)].buffer->get(), bytes.data(), bytes.size());
  return from_gpu(bytes.data(), dtype, shape, policy);
}

void upload(Plan& plan, int slot, const Tensor& t, const Int64Policy& policy, const std::string& name) {
  GpuUpload u = to_gpu(t, policy, name);
  if (u.bytes) plan.device->write(plan.slots[size_t(slot)].buffer->get(), u.data, u.bytes);
}

// Runs one CPU step: reads its inputs (from the GPU or plan-time constants), runs the reference
// kernel, and returns the outputs.
std::vector<Tensor> run_cpu_step(const Step& s, Plan& plan, const ir::Model& model, const Int64Policy& policy) {
  std::vector<Tensor> held;
  held.reserve(s.inputs.size());
  cpu::Scope scope;
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const StepValue& v = s.inputs[i];
    const Tensor* t = nullptr;
    if (v.constant) t = v.constant;
    else if (v.slot >= 0) {
      held.push_back(download(plan, v.slot, v.dtype, v.shape, policy));
      t = &held.back();
    }
    if (i < s.explicit_inputs) ins.push_back(t);
    else if (t) scope.set(v.name, *t);
  }
  return cpu::run_node(*s.node, model.opsets, ins, &scope);
}

// A CPU node's output changed shape with the data: the recorded plan no longer fits.
struct ReplanNeeded : Error {
  ReplanNeeded() : Error("replan") {}
};

// The message of a node's status record (shader::kStatusWords words).
std::string status_message(const uint32_t* record) {
  const uint32_t flags = record[0];
  std::string m;
  if (flags & wg::shader::kFlagIndex) {
    m += "an index is out of range";
    if (record[1]) m += " (index " + std::to_string(int64_t(uint64_t(record[2]) | uint64_t(record[3]) << 32)) + ")";
    m += "; ";
  }
  if (flags & wg::shader::kFlagDivZero) m += "integer division by zero; ";
  if (flags & wg::shader::kFlagOverflow) m += "an INT64 value does not fit in int32 (INT64 strategy cast_to_i32); ";
  if (m.size() >= 2) m.resize(m.size() - 2);
  return m;
}

}  // namespace

// Writes this run's inputs into the plan's input buffers: host tensors with queue writes, device
// tensors with GPU copies; and clears the status words.
static void write_inputs(Plan& plan, const Int64Policy& policy, const std::unordered_map<std::string, Tensor>& host,
                         const std::unordered_map<std::string, DeviceTensor>& device) {
  wg::Device& dev = *plan.device;
  wg::CommandBatch batch = dev.batch();
  for (const auto& [name, slot] : plan.inputs) {
    auto h = host.find(name);
    if (h != host.end()) {
      upload(plan, slot, h->second, policy, name);
      continue;
    }
    const DeviceTensor& d = device.at(name);
    uint64_t bytes = gpu_bytes(d.dtype(), d.shape(), policy);
    if (bytes) batch.copy(d.storage()->buffer.get(), 0, plan.slots[size_t(slot)].buffer->get(), 0, (bytes + 3) / 4 * 4);
  }
  std::vector<uint32_t> zeros(plan.status->capacity / 4, 0);
  dev.write(plan.status->get(), zeros.data(), zeros.size() * 4);
  if (!batch.empty()) dev.submit(batch);
}

// Executes steps [from, to) of a plan. When `final` is set, also reads back the outputs and the
// status words in the same submit as the last segment.
// With `device_outputs`, the outputs are copied into new GPU buffers instead of being read back.
static constexpr uint32_t kTimedChunk = 1024;  // dispatches timed per submit when profiling
static constexpr size_t kFirstChunk = 8;        // dispatches of a segment's first submit

// $ONNXGPU_CHUNKED_SUBMITS=0 submits each segment at once (for measuring what chunking buys).
static bool chunked_submits() {
  static const bool on = [] {
    const char* e = std::getenv("ONNXGPU_CHUNKED_SUBMITS");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

// Runs a step's dispatches, each in a pass of its own between two timestamps, waits for them and adds
// their GPU times to `profile`.
static void execute_timed(Plan& plan, const Step& s, ProfileSums& profile) {
  wg::Device& dev = *plan.device;
  wg::CommandBatch batch = dev.batch();
  if (!plan.timestamps) {
    plan.timestamps = dev.timestamp_queries(2 * kTimedChunk);
    plan.timestamp_buffer = std::make_shared<wg::Buffer>(
        dev.create_buffer(16 * kTimedChunk, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc, "onnxgpu timestamps"));
  }
  for (size_t begin = 0; begin < s.dispatches.size(); begin += kTimedChunk) {
    size_t n = std::min<size_t>(kTimedChunk, s.dispatches.size() - begin);
    for (size_t k = 0; k < n; ++k) {
      const RecordedDispatch& d = s.dispatches[begin + k];
      batch.timed_dispatch(*d.pipeline, d.group.get(), d.x, d.y, d.z, plan.timestamps.get(), uint32_t(k));
    }
    batch.resolve(plan.timestamps.get(), 0, uint32_t(2 * n), plan.timestamp_buffer->get(), 0);
    std::vector<uint64_t> stamps(2 * n);
    wg::ReadRequest read{plan.timestamp_buffer->get(), 0, stamps.size() * 8, stamps.data()};
    dev.submit_and_read(batch, std::span(&read, 1));
    for (size_t k = 0; k < n; ++k) {
      const RecordedDispatch& d = s.dispatches[begin + k];
      if (profile.ns.size() <= d.node) {
        profile.ns.resize(d.node + 1, 0);
        profile.dispatches.resize(d.node + 1, 0);
      }
      if (stamps[2 * k + 1] > stamps[2 * k]) profile.ns[d.node] += stamps[2 * k + 1] - stamps[2 * k];
      profile.dispatches[d.node]++;
    }
    batch = dev.batch();
  }
}

static void execute(Plan& plan, const ir::Model& model, const Int64Policy& policy, size_t from, size_t to, bool final,
                    std::vector<Tensor>* outputs, std::vector<DeviceTensor>* device_outputs = nullptr,
                    ProfileSums* profile = nullptr) {
  wg::Device& dev = *plan.device;
  std::vector<uint32_t> status((model.graph.nodes.size() + 1) * wg::shader::kStatusWords, 0);  // a record per node
  std::vector<std::vector<std::byte>> out_bytes(plan.outputs.size());
  std::vector<wg::ReadRequest> reads;
  std::vector<std::shared_ptr<DeviceTensor::Storage>> kept;
  auto keep_outputs = [&](wg::CommandBatch& batch) {  // copies the output slots into buffers of their own
    for (const OutputSource& o : plan.outputs) {
      auto st = std::make_shared<DeviceTensor::Storage>();
      st->device = plan.device;
      st->policy = policy;
      uint64_t bytes = gpu_bytes(o.dtype, o.shape, policy);
      st->buffer = dev.acquire(std::max<uint64_t>(bytes, kMinBinding));
      if (o.constant) {
        GpuUpload u = to_gpu(*o.constant, policy, "output");
        if (u.bytes) dev.write(st->buffer.get(), u.data, u.bytes);
      } else if (bytes) {
        batch.copy(plan.slots[size_t(o.slot)].buffer->get(), 0, st->buffer.get(), 0, (bytes + 3) / 4 * 4);
      }
      kept.push_back(st);
    }
  };
  std::vector<Tensor> direct(plan.outputs.size());  // outputs read straight into their host tensors
  if (final) {
    for (size_t k = 0; k < plan.outputs.size() && !device_outputs; ++k) {
      const OutputSource& o = plan.outputs[k];
      if (o.slot < 0) continue;
      size_t bytes = gpu_bytes(o.dtype, o.shape, policy);
      void* dst = nullptr;
      if (same_bytes_on_host(o.dtype, policy)) {
        direct[k] = Tensor::uninitialized(o.dtype, o.shape);  // every byte comes from the GPU
        if (direct[k].nbytes() == bytes) dst = direct[k].raw();
        else direct[k] = Tensor();
      }
      if (!dst) {
        out_bytes[k].resize(bytes);
        dst = out_bytes[k].data();
      }
      if (bytes) reads.push_back({plan.slots[size_t(o.slot)].buffer->get(), 0, bytes, dst});
    }
    reads.push_back({plan.status->get(), 0, status.size() * 4, status.data()});
  }
  bool read_done = false;
  for (size_t i = from; i < to; ++i) {
    Step& s = plan.steps[i];
    if (!s.cpu) {
      bool last = final && i + 1 == to;
      if (profile) {
        execute_timed(plan, s, *profile);
        if (last) {
          wg::CommandBatch tail = dev.batch();
          if (device_outputs) keep_outputs(tail);
          dev.submit_and_read(tail, reads);
          read_done = true;
        }
        continue;
      }
      // A long segment goes to the GPU in growing chunks (8, 16, 32, ... dispatches, a few submits in
      // all): the GPU starts on the first while the host still encodes the rest.
      wg::CommandBatch batch = dev.batch();
      size_t chunk = kFirstChunk, next_submit = kFirstChunk;
      for (size_t k = 0; k < s.dispatches.size(); ++k) {
        const RecordedDispatch& d = s.dispatches[k];
        batch.dispatch(*d.pipeline, d.group.get(), d.x, d.y, d.z);
        if (k + 1 == next_submit && k + 1 < s.dispatches.size() && chunked_submits()) {
          dev.submit(batch);
          chunk *= 2;
          next_submit += chunk;
        }
      }
      if (last) {
        if (device_outputs) keep_outputs(batch);
        dev.submit_and_read(batch, reads);
        read_done = true;
      } else {
        dev.submit(batch);
      }
      continue;
    }
    std::vector<Tensor> outs = run_cpu_step(s, plan, model, policy);
    for (size_t k = 0; k < s.outputs.size(); ++k) {
      const StepValue& v = s.outputs[k];
      if (v.slot < 0) continue;
      if (k >= outs.size() || !outs[k].defined())
        throw Error(s.node->describe() + ": the CPU kernel did not produce output '" + v.name + "'");
      if (outs[k].dtype() != v.dtype || outs[k].shape() != v.shape)
        throw ReplanNeeded();
      upload(plan, v.slot, outs[k], policy, v.name);
    }
  }
  if (!final) return;
  if (!read_done) {
    wg::CommandBatch batch = dev.batch();
    if (device_outputs) keep_outputs(batch);
    dev.submit_and_read(batch, reads);
  }
  for (size_t d = 0; d < model.graph.nodes.size(); ++d)
    if (const uint32_t* record = &status[d * wg::shader::kStatusWords]; record[0]) {
      const ir::Node& n = model.graph.nodes[d];
      throw InvalidArgument(n.describe() + " on the GPU: " + status_message(record));
    }
  if (device_outputs) {
    device_outputs->clear();
    for (size_t k = 0; k < plan.outputs.size(); ++k)
      device_outputs->emplace_back(plan.outputs[k].dtype, plan.outputs[k].shape, kept[k]);
    return;
  }
  outputs->clear();
  for (size_t k = 0; k < plan.outputs.size(); ++k) {
    const OutputSource& o = plan.outputs[k];
    if (o.constant) outputs->push_back(o.constant->clone());
    else if (direct[k].defined()) outputs->push_back(std::move(direct[k]));
    else outputs->push_back(from_gpu(out_bytes[k].data(), o.dtype, o.shape, policy));
  }
}

// ---- Planning ----------------------------------------------------------------------------------

namespace {

struct WholeGraphFallback : Error {
  using Error::Error;
};

class Planner {
 public:
  Planner(const ir::Model& model, const SessionOptions& options, Plan& plan,
          std::unordered_map<std::string, std::shared_ptr<wg::Buffer>>& weights, std::map<std::string, Tensor>& derived,
          ProfileSums* profile)
      : model_(model),
        g_(model.graph),
        options_(options),
        policy_(options.int64),
        plan_(plan),
        weights_(weights),
        derived_(derived),
        profile_(profile),
        fusion_(model.graph, options.fusion, model.opset(""), &derived) {}

  void build(const std::unordered_map<std::string, Tensor>& feeds,
             const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::vector<Tensor>* outputs,
             std::vector<DeviceTensor>* device_outputs);

 private:
  struct Value {
    DType dtype = DType::Undefined;
    Shape shape;
    const Tensor* constant = nullptr;
    int slot = -1;
    bool from_cpu = false;          // produced by a CPU fallback node
    const Tensor* feed = nullptr;   // a graph input's host value in this run
  };

  int alloc(uint64_t bytes, bool pinned = false);
  void release(int slot);
  int slot_of(const std::string& name);  // uploads a constant on first GPU use
  bool fold(size_t index, const ir::Node& node);
  bool try_gpu(size_t index, const ir::Node& node, std::string& reason);
  bool try_fused(size_t index, size_t at, bool attention = false);
  void run_group_or_nodes(size_t index, size_t at);
  void place(size_t i, size_t at);
  void run_on_cpu(size_t index, const ir::Node& node);
  void close_segment();
  void finish_values_of(size_t index, const ir::Node& node);

  const ir::Model& model_;
  const ir::Graph& g_;
  const SessionOptions& options_;
  const Int64Policy& policy_;
  Plan& plan_;
  std::unordered_map<std::string, std::shared_ptr<wg::Buffer>>& weights_;
  std::map<std::string, Tensor>& derived_;  // constants the fusion pass made (the session's)
  ProfileSums* profile_;  // null unless SessionOptions::profile
  Fusion fusion_;
  std::set<size_t> fused_away_;  // nodes computed by an earlier node's fused kernel
  std::set<std::string> released_;  // values whose buffer went back to free_
  std::deque<ir::Node> fused_nodes_;
  std::unordered_map<std::string, Value> values_;
  std::vector<int> refs_;
  std::map<uint64_t, std::vector<int>> free_;
  std::unordered_map<std::string, size_t> last_use_;
  std::set<std::string> graph_outputs_;
  // Dispatches of the open segment, with the (slot, bytes) they bind: bytes are taken when the
  // dispatch is recorded, since a slot may be reused for a value of another size later.
  std::vector<std::pair<wg::DispatchSpec, std::vector<std::pair<int, uint64_t>>>> pending_;
  std::vector<size_t> pending_nodes_;
  size_t executed_ = 0;
};

int Planner::alloc(uint64_t bytes, bool pinned) {
  uint64_t cap = wg::BufferPool::bucket(std::max<uint64_t>(bytes, kMinBinding));
  if (!pinned) {
    auto it = free_.find(cap);
    if (it != free_.end() && !it->second.empty()) {
      int s = it->second.back();
      it->second.pop_back();
      plan_.slots[size_t(s)].bytes = bytes;
      refs_[size_t(s)] = 1;
      return s;
    }
  }
  Slot slot;
  slot.buffer = std::make_shared<wg::Buffer>(plan_.device->acquire(cap));
  slot.bytes = bytes;
  slot.pinned = pinned;
  plan_.report.gpu_buffer_bytes += cap;
  plan_.slots.push_back(std::move(slot));
  refs_.push_back(1);
  return int(plan_.slots.size() - 1);
}

void Planner::release(int slot) {
  if (slot < 0) return;
  Slot& s = plan_.slots[size_t(slot)];
  if (--refs_[size_t(slot)] > 0 || s.pinned) return;
  free_[s.buffer->capacity].push_back(slot);
}

int Planner::slot_of(const std::string& name) {
  Value& v = values_.at(name);
  if (v.slot >= 0) return v.slot;
  // A constant the GPU needs: weights are uploaded once per session, folded values once per plan.
  auto w = g_.initializers.find(name);
  auto dv = derived_.find(name);
  if ((w != g_.initializers.end() && &w->second == v.constant) || (dv != derived_.end() && &dv->second == v.constant)) {
    auto& buf = weights_[name];
    if (!buf) {
      GpuUpload u = to_gpu(*v.constant, policy_, name);
      buf = std::make_shared<wg::Buffer>(plan_.device->create_buffer(std::max<uint64_t>(u.bytes, kMinBinding), wg::kStorageUsage, name));
      if (u.bytes) plan_.device->write(buf->get(), u.data, u.bytes);
    }
    Slot slot{buf, buf->size, true};  // shared with the session's weights
    plan_.slots.push_back(slot);
    refs_.push_back(1);
    v.slot = int(plan_.slots.size() - 1);
    return v.slot;
  }
  v.slot = alloc(gpu_bytes(v.dtype, v.shape, policy_), true);
  upload(plan_, v.slot, *v.constant, policy_, name);
  return v.slot;
}

bool Planner::fold(size_t index, const ir::Node& node) {
  // Shape and Size need only the shape, which is known at plan time.
  bool shape_only = (node.op_type == "Shape" || node.op_type == "Size") && node.domain.empty();
  bool all_constant = !node.attrs.count("body") && !node.attrs.count("then_branch") && !node.attrs.count("else_branch");
  for (const auto& in : node.inputs)
    if (!in.empty() && !values_.at(in).constant) all_constant = false;
  if (!shape_only && !all_constant) return false;
  if (node.op_type == "RandomNormal" || node.op_type == "RandomUniform" || node.op_type == "RandomNormalLike" ||
      node.op_type == "RandomUniformLike" || node.op_type == "Multinomial" || node.op_type == "Bernoulli")
    return false;
  std::vector<Tensor> outs;
  if (shape_only) {
    const Value& x = values_.at(node.inputs.at(0));
    if (node.op_type == "Size") {
      outs.push_back(Tensor::scalar<int64_t>(shape_numel(x.shape)));
    } else {
      int64_t r = int64_t(x.shape.size());
      int64_t start = node.attr_int("start", 0), end = node.attr_int("end", r);
      if (start < 0) start += r;
      if (end < 0) end += r;
      start = std::clamp<int64_t>(start, 0, r);
      end = std::clamp<int64_t>(end, 0, r);
      std::vector<int64_t> dims(x.shape.begin() + start, x.shape.begin() + std::max(start, end));
      outs.push_back(Tensor::from_vector<int64_t>({int64_t(dims.size())}, dims));
    }
  } else {
    std::vector<const Tensor*> ins;
    for (const auto& in : node.inputs) ins.push_back(in.empty() ? nullptr : values_.at(in).constant);
    outs = cpu::run_node(node, model_.opsets, ins);
  }
  for (size_t k = 0; k < node.outputs.size() && k < outs.size(); ++k) {
    if (node.outputs[k].empty()) continue;
    plan_.constants.push_back(std::move(outs[k]));
    const Tensor& t = plan_.constants.back();
    values_[node.outputs[k]] = Value{t.dtype(), t.shape(), &t, -1};
  }
  plan_.report.folded_nodes++;
  return true;
}

bool Planner::try_gpu(size_t index, const ir::Node& node, std::string& reason) {
  const wg::GpuKernel* k = wg::gpu_registry().find(node.op_type, node.domain);
  if (!k) {
    reason = "no GPU kernel for op '" + node.op_type + "'";
    return false;
  }
  std::vector<wg::GpuValueInfo> infos;
  bool touches_int64 = false;
  for (const auto& in : node.inputs) {
    if (in.empty()) {
      infos.push_back({});
      continue;
    }
    const Value& v = values_.at(in);
    infos.push_back({v.dtype, v.shape, v.constant, v.feed});
    touches_int64 |= v.dtype == DType::Int64;
  }
  wg::GpuKernelContext ctx(node, model_.opset(node.domain), policy_, plan_.device->limits(), infos);
  try {
    (*k)(ctx);
  } catch (const wg::GpuUnsupported& e) {
    reason = e.what();
    return false;
  } catch (const NotImplemented& e) {
    reason = e.what();
    return false;
  }
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (!ctx.output_wanted(i)) continue;
    if (!ctx.outputs[i].set) throw Error(node.describe() + ": GPU kernel did not describe output " + std::to_string(i));
    touches_int64 |= ctx.outputs[i].dtype == DType::Int64;
  }
  if (policy_.strategy == Int64Policy::Strategy::PerOpOptin && touches_int64 && !Int64Policy::legacy_optin(node.op_type)) {
    reason = "INT64 is not opted in for op '" + node.op_type + "' (INT64 strategy per_op_optin)";
    return false;
  }
  for (size_t i : ctx.value_keyed_inputs) {
    const std::string& name = node.inputs[i];
    bool known = false;
    for (const auto& [n, t] : plan_.value_keys) known |= n == name;
    if (!known) {
      plan_.value_keys.emplace_back(name, values_.at(name).feed->clone());
      plan_.report.value_keyed_inputs.push_back(name);
    }
  }
  // Outputs: views share their input's buffer, the others get one.
  std::vector<int> out_slots(ctx.outputs.size(), -1);
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (!ctx.output_wanted(i)) continue;
    const auto& o = ctx.outputs[i];
    int slot;
    if (o.alias_of >= 0) {
      slot = slot_of(node.inputs[size_t(o.alias_of)]);
      refs_[size_t(slot)]++;
    } else {
      slot = alloc(gpu_bytes(o.dtype, o.shape, policy_), graph_outputs_.count(node.outputs[i]) != 0);
    }
    out_slots[i] = slot;
    values_[node.outputs[i]] = Value{o.dtype, o.shape, nullptr, slot};
  }
  // Outputs that only Shape/Size read (they fold from the shape): described, never computed.
  if (fusion_.read_for_shape_only(node)) ctx.dispatches.clear();
  std::vector<int> temp_slots;
  for (const auto& t : ctx.temps) temp_slots.push_back(alloc(gpu_bytes(t.dtype, t.shape, policy_)));
  for (auto& d : ctx.dispatches) {
    std::vector<std::pair<int, uint64_t>> bound;
    for (const auto& b : d.bindings) {
      int slot = -1;
      switch (b.kind) {
        case wg::ValueRef::Kind::Input: slot = slot_of(node.inputs.at(size_t(b.index))); break;
        case wg::ValueRef::Kind::Output:
          if (out_slots.at(size_t(b.index)) < 0) {  // an unwanted output the kernel writes anyway
            const auto& o = ctx.outputs.at(size_t(b.index));
            temp_slots.push_back(alloc(gpu_bytes(o.dtype, o.shape, policy_)));
            out_slots[size_t(b.index)] = temp_slots.back();
          }
          slot = out_slots[size_t(b.index)];
          break;
        case wg::ValueRef::Kind::Temp: slot = temp_slots.at(size_t(b.index)); break;
      }
      bound.emplace_back(slot, plan_.slots[size_t(slot)].bytes);
    }
    pending_.emplace_back(std::move(d), std::move(bound));
    pending_nodes_.push_back(index);
  }
  for (int t : temp_slots) release(t);
  plan_.report.gpu_nodes++;
  return true;
}

// Turns the pending dispatches into a recorded segment: pipelines, one uniform buffer, bind groups.
void Planner::close_segment() {
  if (pending_.empty()) return;
  wg::Device& dev = *plan_.device;
  const uint64_t align = std::max<uint32_t>(dev.limits().min_uniform_buffer_offset_alignment, 16);
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  for (auto& [d, slots] : pending_) {
    offsets.push_back(total);
    total += (d.uniforms.size() * 4 + align - 1) / align * align;
  }
  std::vector<uint32_t> data(total / 4, 0);
  for (size_t i = 0; i < pending_.size(); ++i) {
    auto& u = pending_[i].first.uniforms;
    u[0] = uint32_t(pending_nodes_[i]);  // the status word of this dispatch's node
    std::memcpy(data.data() + offsets[i] / 4, u.data(), u.size() * 4);
  }
  Step step;
  step.uniforms = std::make_shared<wg::Buffer>(dev.create_buffer(total, wg::kUniformUsage, "onnxgpu uniforms"));
  dev.write(step.uniforms->get(), data.data(), total);
  for (size_t i = 0; i < pending_.size(); ++i) {
    auto& [d, slots] = pending_[i];
    const wg::Pipeline& pipeline = dev.pipeline(d.source);
    std::vector<wg::BufferBinding> entries;
    entries.emplace_back(step.uniforms->get(), offsets[i], uint64_t((d.uniforms.size() * 4 + 15) / 16 * 16));
    entries.emplace_back(plan_.status->get(), 0, plan_.status->capacity);
    for (const auto& [s, bytes] : slots)
      entries.emplace_back(plan_.slots[size_t(s)].buffer->get(), 0, std::max<uint64_t>((bytes + 3) / 4 * 4, kMinBinding));
    step.dispatches.push_back({&pipeline, dev.bind_group(pipeline, entries), d.x, d.y, d.z, uint32_t(pending_nodes_[i])});
  }
  plan_.report.dispatches += int(pending_.size());
  plan_.report.segments++;
  plan_.steps.push_back(std::move(step));
  pending_.clear();
  pending_nodes_.clear();
}

// Runs node i alone: folded, on the GPU, or on the CPU. `at` is where the plan is (i, or the root of
// the fused group that deferred i): values i read are released once the plan has passed their last use.
void Planner::place(size_t i, size_t at) {
  const ir::Node& node = g_.nodes[i];
  if (fold(i, node)) {
    finish_values_of(at, node);
    return;
  }
  std::string reason;
  if (!try_gpu(i, node, reason)) {
    PlanFallback f{node.name, node.op_type, reason, {}};
    for (const auto& in : node.inputs) f.dtypes.push_back(in.empty() ? "" : std::string(dtype_name(values_.at(in).dtype)));
    if (policy_.fail_loud) {
      std::string types;
      for (const auto& t : f.dtypes) types += (types.empty() ? "" : ", ") + (t.empty() ? "-" : t);
      throw Error("fail_loud: " + node.describe() + " with input types [" + types + "] cannot run on the GPU: " + reason);
    }
    if (!policy_.fallback_per_op_not_whole_graph) throw WholeGraphFallback(reason);
    plan_.report.fallbacks.push_back(f);
    run_on_cpu(i, node);
  }
  finish_values_of(at, node);
}

// The fused group placed at node `index` (a MatMulAdd starting there, or the elementwise group whose
// root it is; with `attention`, the attention group placed there), as one GPU kernel, its reads
// finished at `at` (where the plan is). False (and nothing recorded) when no group is placed here or
// its kernel cannot run: the nodes then run alone.
bool Planner::try_fused(size_t index, size_t at, bool attention) {
  std::unordered_map<std::string, ValueFacts> known;
  auto facts = [&](const std::string& name) -> const ValueFacts* {
    auto it = values_.find(name);
    if (it == values_.end()) return nullptr;
    return &(known[name] = ValueFacts{it->second.dtype, it->second.shape, it->second.constant});
  };
  std::optional<FusedGroup> group = attention ? fusion_.attention_group(index, facts) : fusion_.group_at(index, facts);
  if (!group || !wg::gpu_registry().find(group->node.op_type, group->node.domain)) return false;
  for (const auto& in : group->node.inputs)  // constants the group made (sibling weights side by side)
    if (auto d = derived_.find(in); d != derived_.end() && !values_.count(in))
      values_[in] = Value{d->second.dtype(), d->second.shape(), &d->second, -1};
  // Constants only: the nodes fold at plan time one by one instead.
  if (std::all_of(group->node.inputs.begin(), group->node.inputs.end(), [&](const std::string& in) {
        return in.empty() || (values_.count(in) && values_.at(in).constant);
      }))
    return false;
  fused_nodes_.push_back(std::move(group->node));  // dispatches and errors refer to it: kept alive
  std::string reason;
  bool ok = false;
  try {
    ok = try_gpu(index, fused_nodes_.back(), reason);
  } catch (const InvalidArgument&) {
    ok = false;  // the nodes alone report it, under their own names
  }
  if (!ok) {
    fused_nodes_.pop_back();
    return false;
  }
  if (profile_) profile_->fused[index] = fused_nodes_.back().op_type + " (fused)";
  for (size_t j : group->members) {
    if (j > index) fused_away_.insert(j);
    finish_values_of(at, g_.nodes[j]);
  }
  finish_values_of(at, g_.nodes[index]);
  plan_.report.gpu_nodes += int(group->members.size());
  plan_.report.fused_nodes += int(group->members.size()) + 1;
  return true;
}

// Node `index` with the group placed there, or, when there is none or its kernel cannot run, the
// nodes deferred to it one by one and then itself. Reads finish at `at`.
void Planner::run_group_or_nodes(size_t index, size_t at) {
  if (fused_away_.count(index) || try_fused(index, at)) return;
  for (size_t m : fusion_.deferred_to(index)) place(m, at);
  place(index, at);
}

void Planner::run_on_cpu(size_t index, const ir::Node& node) {
  close_segment();
  Step step;
  step.cpu = true;
  step.node = &node;
  auto add_input = [&](const std::string& name) {
    StepValue sv;
    sv.name = name;
    if (!name.empty()) {
      const Value& v = values_.at(name);
      sv.dtype = v.dtype;
      sv.shape = v.shape;
      sv.constant = v.constant;
      sv.slot = v.constant ? -1 : v.slot;
    }
    step.inputs.push_back(sv);
  };
  for (const auto& in : node.inputs) add_input(in);
  step.explicit_inputs = step.inputs.size();
  for (const auto& name : node.implicit_inputs())
    if (values_.count(name)) add_input(name);
  // Run everything recorded so far, then this node, to learn its outputs' shapes.
  execute(plan_, model_, policy_, executed_, plan_.steps.size(), false, nullptr, nullptr, profile_);
  std::vector<Tensor> outs = run_cpu_step(step, plan_, model_, policy_);
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    StepValue sv;
    sv.name = node.outputs[k];
    if (!sv.name.empty() && k < outs.size() && outs[k].defined()) {
      sv.dtype = outs[k].dtype();
      sv.shape = outs[k].shape();
      wg::shader::type_info(sv.dtype, policy_);  // throws for types the GPU cannot hold
      sv.slot = alloc(gpu_bytes(sv.dtype, sv.shape, policy_), graph_outputs_.count(sv.name) != 0);
      upload(plan_, sv.slot, outs[k], policy_, sv.name);
      values_[sv.name] = Value{sv.dtype, sv.shape, nullptr, sv.slot, true};
    }
    step.outputs.push_back(sv);
  }
  plan_.steps.push_back(std::move(step));
  executed_ = plan_.steps.size();
  plan_.report.cpu_nodes++;
}

void Planner::finish_values_of(size_t index, const ir::Node& node) {
  std::vector<std::string> used = node.inputs;
  for (const auto& in : node.implicit_inputs()) used.push_back(in);
  for (const auto& in : used) {
    if (in.empty() || !values_.count(in)) continue;
    auto it = last_use_.find(in);
    if (it == last_use_.end() || it->second != index || graph_outputs_.count(in)) continue;
    if (!released_.insert(in).second) continue;  // read twice (Mul(x, x), several fused nodes): once
    Value& v = values_.at(in);
    if (v.slot >= 0 && !v.constant) release(v.slot);
  }
}

void Planner::build(const std::unordered_map<std::string, Tensor>& feeds,
                    const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::vector<Tensor>* outputs,
                    std::vector<DeviceTensor>* device_outputs) {
  wg::Device& dev = *plan_.device;
  plan_.report.ep = "webgpu";
  plan_.report.adapter = dev.adapter().summary();
  plan_.report.nodes = int(g_.nodes.size());
  plan_.report.int64_strategy = Int64Policy::strategy_name(policy_.strategy);
  for (const auto& o : g_.outputs) graph_outputs_.insert(o.name);
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    size_t at = fusion_.placed_at(i);  // a deferred node reads its inputs when its group runs
    for (const auto& in : g_.nodes[i].inputs) last_use_[in] = std::max(last_use_[in], at);
    for (const auto& in : g_.nodes[i].implicit_inputs()) last_use_[in] = std::max(last_use_[in], at);
  }
  plan_.status = std::make_shared<wg::Buffer>(
      dev.create_buffer(4 * wg::shader::kStatusWords * (g_.nodes.size() + 1), wg::kStorageUsage, "onnxgpu status"));
  for (const auto& [name, t] : g_.initializers) values_[name] = Value{t.dtype(), t.shape(), &t, -1};
  auto add_input = [&](const std::string& name, DType dtype, const Shape& shape) {
    wg::shader::type_info(dtype, policy_);  // throws for types the GPU cannot hold
    int slot = alloc(gpu_bytes(dtype, shape, policy_), true);
    values_[name] = Value{dtype, shape, nullptr, slot};
    plan_.inputs.emplace_back(name, slot);
  };
  for (const auto& [name, t] : feeds) {
    add_input(name, t.dtype(), t.shape());
    values_[name].feed = &t;
  }
  for (const auto& [name, t] : device_feeds) add_input(name, t.dtype(), t.shape());
  write_inputs(plan_, policy_, feeds, device_feeds);

  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (fused_away_.count(i) || fusion_.deferred(i)) continue;  // computed by another node's kernel
    if (std::vector<size_t> parts = fusion_.attention_parts(i); !parts.empty()) {
      if (try_fused(i, i, true)) continue;
      for (size_t m : parts) run_group_or_nodes(m, i);  // the attention kernel could not run
    }
    run_group_or_nodes(i, i);
  }
  close_segment();
  for (const auto& o : g_.outputs) {
    const Value& v = values_.at(o.name);
    plan_.outputs.push_back(OutputSource{v.constant ? -1 : v.slot, v.constant, v.dtype, v.shape});
  }
  for (const auto& [name, v] : values_)
    if (v.dtype == DType::Int64 && !v.constant) {
      plan_.report.int64_tensors++;
      plan_.report.int64_on_gpu += v.from_cpu ? 0 : 1;
    }
  execute(plan_, model_, policy_, executed_, plan_.steps.size(), true, outputs, device_outputs, profile_);
}

}  // namespace

// ---- The executor --------------------------------------------------------------------------------

struct GpuExecutor::Weights {
  std::unordered_map<std::string, std::shared_ptr<wg::Buffer>> buffers;
  std::map<std::string, Tensor> derived;  // host copies of the constants fusion made, by name
};

GpuExecutor::GpuExecutor(const ir::Model& model, const SessionOptions& options)
    : model_(model), options_(options), device_(shared_device()), weights_(std::make_unique<Weights>()) {
  if (options_.profile && !device_->features().timestamp_query)
    throw InvalidArgument("profiling (onnxgpu.profile) needs GPU timestamp queries, which " +
                          device_->adapter().summary() + " does not offer");
}

GpuExecutor::~GpuExecutor() {
  std::lock_guard<std::mutex> lock(device_mutex());  // plans give their buffers back to the shared pool
  plans_.clear();
  weights_.reset();
}

Profile GpuExecutor::profile() const {
  std::lock_guard<std::mutex> lock(device_mutex());
  Profile p;
  p.runs = profile_.runs;
  if (p.runs == 0) return p;
  for (size_t i = 0; i < profile_.ns.size() && i < model_.graph.nodes.size(); ++i) {
    if (profile_.dispatches[i] == 0) continue;
    const ir::Node& n = model_.graph.nodes[i];
    double ms = double(profile_.ns[i]) / 1e6 / p.runs;
    auto fused = profile_.fused.find(i);
    p.nodes.push_back({n.name, fused == profile_.fused.end() ? n.op_type : fused->second,
                       (profile_.dispatches[i] + p.runs - 1) / p.runs, ms});
    p.gpu_ms += ms;
  }
  return p;
}

void GpuExecutor::reset_profile() {
  std::lock_guard<std::mutex> lock(device_mutex());
  auto fused = std::move(profile_.fused);  // a property of the recorded plans, which stay
  profile_ = ProfileSums{};
  profile_.fused = std::move(fused);
}

PlanReport GpuExecutor::last_report() const {
  std::lock_guard<std::mutex> lock(device_mutex());
  return report_;
}

static std::string signature_of(const std::unordered_map<std::string, Tensor>& feeds,
                                const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  std::map<std::string, std::string> sorted;
  for (const auto& [n, t] : feeds) sorted[n] = t.describe();
  for (const auto& [n, t] : device_feeds) sorted[n] = std::string(dtype_name(t.dtype())) + shape_str(t.shape());
  std::string s;
  for (const auto& [n, d] : sorted) s += (s.empty() ? "" : " ") + n + ":" + d;
  return s;
}

std::vector<Tensor> GpuExecutor::run(const std::unordered_map<std::string, Tensor>& feeds) {
  std::vector<Tensor> outputs;
  run_impl(feeds, {}, &outputs, nullptr);
  return outputs;
}

std::vector<DeviceTensor> GpuExecutor::run_on_device(const std::unordered_map<std::string, Tensor>& feeds,
                                                     const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  std::vector<DeviceTensor> outputs;
  run_impl(feeds, device_feeds, nullptr, &outputs);
  return outputs;
}

void GpuExecutor::run_impl(const std::unordered_map<std::string, Tensor>& feeds,
                           const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::vector<Tensor>* outputs,
                           std::vector<DeviceTensor>* device_outputs) {
  std::lock_guard<std::mutex> lock(device_mutex());  // one GPU queue for every session of the process
  std::string sig = signature_of(feeds, device_feeds);
  if (whole_graph_cpu_.count(sig)) {
    run_whole_graph_on_cpu(feeds, device_feeds, outputs, device_outputs);
    return;
  }
  if (options_.capture) {
    for (auto it = plans_.begin(); it != plans_.end(); ++it) {
      if (it->first != sig || !it->second->serves(feeds)) continue;
      std::shared_ptr<Plan> plan = it->second;
      plans_.splice(plans_.begin(), plans_, it);
      try {
        write_inputs(*plan, options_.int64, feeds, device_feeds);
        execute(*plan, model_, options_.int64, 0, plan->steps.size(), true, outputs, device_outputs,
                options_.profile ? &profile_ : nullptr);
        if (options_.profile) profile_.runs++;
        report_ = plan->report;
        report_.replayed = true;
        return;
      } catch (const ReplanNeeded&) {
        plans_.erase(plans_.begin());  // a CPU node's output shape changed with the data: plan again
        break;
      }
    }
  }
  auto plan = std::make_shared<Plan>();
  plan->device = device_;
  try {
    Planner planner(model_, options_, *plan, weights_->buffers, weights_->derived, options_.profile ? &profile_ : nullptr);
    planner.build(feeds, device_feeds, outputs, device_outputs);
    if (options_.profile) profile_.runs++;
  } catch (const WholeGraphFallback& e) {
    whole_graph_cpu_.insert(sig);
    whole_graph_reason_ = e.what();
    run_whole_graph_on_cpu(feeds, device_feeds, outputs, device_outputs);
    return;
  }
  plan->report.signature = sig;
  plan->report.captured = options_.capture;
  report_ = plan->report;
  if (options_.capture) {
    plans_.emplace_front(sig, plan);
    if (plans_.size() > kMaxPlans) plans_.pop_back();
  }
}

// fallback_per_op_not_whole_graph = false and a node needed the CPU: the whole graph runs there.
void GpuExecutor::run_whole_graph_on_cpu(const std::unordered_map<std::string, Tensor>& feeds,
                                         const std::unordered_map<std::string, DeviceTensor>& device_feeds,
                                         std::vector<Tensor>* outputs, std::vector<DeviceTensor>* device_outputs) {
  std::unordered_map<std::string, Tensor> all = feeds;
  for (const auto& [name, d] : device_feeds) {
    std::vector<std::byte> bytes(gpu_bytes(d.dtype(), d.shape(), options_.int64));
    if (!bytes.empty()) device_->read(d.storage()->buffer.get(), bytes.data(), bytes.size());
    all[name] = from_gpu(bytes.data(), d.dtype(), d.shape(), options_.int64);
  }
  std::vector<Tensor> outs = cpu::run_graph(model_.graph, model_.opsets, all);
  report_ = PlanReport{};
  report_.ep = "webgpu";
  report_.adapter = device_->adapter().summary();
  report_.nodes = report_.cpu_nodes = int(model_.graph.nodes.size());
  report_.whole_graph_fallback = true;
  report_.int64_strategy = Int64Policy::strategy_name(options_.int64.strategy);
  report_.fallbacks.push_back({"", "", "whole graph on the CPU: " + whole_graph_reason_, {}});
  if (!device_outputs) {
    *outputs = std::move(outs);
    return;
  }
  device_outputs->clear();
  for (const Tensor& t : outs) {
    auto st = std::make_shared<DeviceTensor::Storage>();
    st->device = device_;
    st->policy = options_.int64;
    GpuUpload u = to_gpu(t, options_.int64, "output");
    st->buffer = device_->acquire(std::max<uint64_t>(u.bytes, kMinBinding));
    if (u.bytes) device_->write(st->buffer.get(), u.data, u.bytes);
    device_outputs->emplace_back(t.dtype(), t.shape(), st);
  }
}

}  // namespace onnxgpu::runtime
