#include "runtime/planner.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "cpu/graph_runner.h"
#include "ir/fused_expr.h"
#include "runtime/gpu_values.h"
#include "webgpu/device.h"

namespace onnxgpu::runtime {

namespace {
bool same_value(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}
}  // namespace

std::string family_of(const std::unordered_map<std::string, Tensor>& feeds,
                      const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  std::map<std::string, std::string> sorted;
  for (const auto& [n, t] : feeds) sorted[n] = std::string(dtype_name(t.dtype())) + " rank " + std::to_string(t.shape().size());
  for (const auto& [n, t] : device_feeds)
    sorted[n] = std::string(dtype_name(t.dtype())) + " rank " + std::to_string(t.shape().size()) + " on the GPU";
  std::string s;
  for (const auto& [n, d] : sorted) s += (s.empty() ? "" : ", ") + n + ": " + d;
  return s;
}

Planner::Planner(const ir::Model& model, const SessionOptions& options, Plan& plan, SessionConstants& constants,
                 const Fusion& fusion, SegmentEncoder& encoder)
    : model_(model),
      g_(model.graph),
      options_(options),
      policy_(options.int64),
      plan_(plan),
      constants_(constants),
      replay_(plan, model, options.int64, encoder),
      fusion_(fusion) {}

size_t Planner::build(const std::unordered_map<std::string, Tensor>& feeds,
                      const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  webgpu::Device& dev = *plan_.device;
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
  plan_.status = std::make_shared<webgpu::Buffer>(dev.create_buffer(
      4 * webgpu::shader::kStatusWords * (g_.nodes.size() + 1), webgpu::kStorageUsage, "onnxgpu status"));
  for (const auto& [name, t] : g_.initializers) values_[name] = Value{t.dtype(), t.shape(), &t, -1};
  add_inputs(feeds, device_feeds);
  write_inputs(plan_, policy_, feeds, device_feeds);
  place_nodes();
  close_segment();
  finish_report();
  return executed_;
}

bool Planner::refresh(const std::unordered_map<std::string, Tensor>& feeds,
                      const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::string& why) {
  const Recording& rec = plan_.recording;
  if (!rec.not_refreshable.empty()) {
    why = rec.not_refreshable;
    return false;
  }
  refreshing_ = true;
  const PlanReport report = plan_.report;  // the walk counts nodes again: the plan's report stays
  try {
    for (const auto& o : g_.outputs) graph_outputs_.insert(o.name);
    for (const auto& [name, t] : g_.initializers) values_[name] = Value{t.dtype(), t.shape(), &t, -1};
    add_inputs(feeds, device_feeds);
    place_nodes();
    close_segment();
    if (staged_.slot_requests != rec.slot_requests.size() || staged_.kernels != rec.kernels.size() ||
        staged_.folds != rec.folds.size() || staged_.segments != plan_.steps.size())
      throw GuardFailed("the graph is placed another way for these sizes");
  } catch (const GuardFailed& e) {
    plan_.report = report;
    why = e.what();
    return false;
  }
  plan_.report = report;
  apply_refresh(feeds, device_feeds);
  return true;
}

// Applies what a refresh staged: buffers regrown, folded values rewritten (and uploaded where the GPU
// reads them), uniforms and workgroup counts of every dispatch, bind groups of regrown buffers, the
// outputs' shapes and the report. New buffers are taken first, so a failure leaves the plan intact.
void Planner::apply_refresh(const std::unordered_map<std::string, Tensor>& feeds,
                            const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  webgpu::Device& dev = *plan_.device;
  const uint64_t max_binding = dev.limits().max_storage_buffer_binding_size;
  std::map<int, webgpu::Buffer> regrown;
  for (const auto& [s, need] : staged_.need) {
    const uint64_t cap = plan_.slots[size_t(s)].buffer->capacity;
    if (need <= cap) continue;
    // Geometric growth: a value that grows by a row per run regrows its buffer log(n) times.
    uint64_t want = std::max<uint64_t>(need, std::min<uint64_t>(2 * cap, max_binding));
    regrown.emplace(s, dev.acquire(want));
  }
  for (auto& [s, buffer] : regrown) {
    Slot& slot = plan_.slots[size_t(s)];
    plan_.report.gpu_buffer_bytes += buffer.capacity - slot.buffer->capacity;
    if (slot.buffer.use_count() == 1) dev.recycle(std::move(*slot.buffer));
    slot.buffer = std::make_shared<webgpu::Buffer>(std::move(buffer));
    plan_.report.capacity_growths++;
  }
  for (auto& [n, r] : staged_.records) {
    for (auto& in : r.inputs)
      for (const auto& [recorded, fresh] : staged_.replaced)
        if (in.constant == fresh) in.constant = recorded;
    plan_.recording.kernels[n] = std::move(r);
  }
  for (auto& [recorded, fresh] : staged_.replaced) const_cast<Tensor&>(*recorded) = std::move(const_cast<Tensor&>(*fresh));
  for (const auto& [slot, value] : plan_.recording.constant_uploads) {
    bool changed = regrown.count(slot) != 0;
    for (const auto& r : staged_.replaced) changed |= r.first == value;
    if (changed) plan_.upload(slot, *value, policy_, "a folded value");
  }
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    Step& step = plan_.steps[s];
    dev.write(step.uniforms->get(), staged_.uniforms[s].data(), staged_.uniforms[s].size() * 4);
    for (size_t k = 0; k < step.dispatches.size(); ++k) {
      RecordedDispatch& d = step.dispatches[k];
      d.x = staged_.grids[s][k][0];
      d.y = staged_.grids[s][k][1];
      d.z = staged_.grids[s][k][2];
      if (std::any_of(d.slots.begin(), d.slots.end(), [&](int slot) { return regrown.count(slot) != 0; }))
        d.group = bind(step, d);
    }
  }
  for (size_t k = 0; k < g_.outputs.size(); ++k) {
    const Value& v = values_.at(g_.outputs[k].name);
    OutputSource& o = plan_.outputs[k];
    o.dtype = v.dtype;
    o.shape = v.shape;
  }
  // The report: the dims that took other sizes, the nodes whose kernel choice is guarded.
  std::set<std::string> dims(plan_.report.symbolic_dims.begin(), plan_.report.symbolic_dims.end());
  auto note_dims = [&](const std::string& name, const Shape& shape) {
    const Shape& first = plan_.input_shapes.at(name);
    for (size_t d = 0; d < shape.size() && d < first.size(); ++d)
      if (shape[d] != first[d]) dims.insert(name + "[" + std::to_string(d) + "]");
  };
  for (const auto& [name, t] : feeds) note_dims(name, t.shape());
  for (const auto& [name, t] : device_feeds) note_dims(name, t.shape());
  plan_.report.symbolic_dims.assign(dims.begin(), dims.end());
  std::set<std::string> guarded(plan_.report.guarded_nodes.begin(), plan_.report.guarded_nodes.end());
  guarded.insert(staged_.guarded.begin(), staged_.guarded.end());
  plan_.report.guarded_nodes.assign(guarded.begin(), guarded.end());
}

void Planner::add_inputs(const std::unordered_map<std::string, Tensor>& feeds,
                         const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  auto add = [&](const std::string& name, DType dtype, const Shape& shape) {
    webgpu::shader::type_info(dtype, policy_);  // throws for types the GPU cannot hold
    int slot = alloc(gpu_bytes(dtype, shape, policy_), true);
    values_[name] = Value{dtype, shape, nullptr, slot};
    if (refreshing_) return;
    plan_.inputs.emplace_back(name, slot);
    plan_.input_shapes[name] = shape;
  };
  // In name order: a refresh requests the buffers in the order the recording did.
  std::map<std::string, const Tensor*> host;
  for (const auto& [name, t] : feeds) host[name] = &t;
  std::map<std::string, const DeviceTensor*> device;
  for (const auto& [name, t] : device_feeds) device[name] = &t;
  for (const auto& [name, t] : host) {
    add(name, t->dtype(), t->shape());
    values_[name].feed = t;
  }
  for (const auto& [name, t] : device) add(name, t->dtype(), t->shape());
}

void Planner::place_nodes() {
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (fused_away_.count(i) || fusion_.deferred(i)) continue;  // computed by another node's kernel
    if (std::vector<size_t> parts = fusion_.attention_parts(i); !parts.empty()) {
      if (try_fused(i, i, true)) continue;
      for (size_t m : parts) run_group_or_nodes(m, i);  // the attention kernel could not run
    }
    run_group_or_nodes(i, i);
  }
}

void Planner::finish_report() {
  if (refreshing_) return;
  for (const auto& o : g_.outputs) {
    const Value& v = values_.at(o.name);
    plan_.outputs.push_back(OutputSource{v.constant ? -1 : v.slot, v.constant, v.dtype, v.shape});
  }
  for (const auto& [name, v] : values_)
    if (v.dtype == DType::Int64 && !v.constant) {
      plan_.report.int64_tensors++;
      plan_.report.int64_on_gpu += v.from_cpu ? 0 : 1;
    }
}

// ---- Buffers -------------------------------------------------------------------------------------

int Planner::alloc(uint64_t bytes, bool pinned) {
  if (refreshing_) return recorded_slot(bytes);
  uint64_t cap = webgpu::BufferPool::bucket(std::max<uint64_t>(bytes, kMinBinding));
  if (!pinned) {
    auto it = free_.find(cap);
    if (it != free_.end() && !it->second.empty()) {
      int s = it->second.back();
      it->second.pop_back();
      plan_.slots[size_t(s)].bytes = bytes;
      refs_[size_t(s)] = 1;
      plan_.recording.slot_requests.push_back(s);
      return s;
    }
  }
  Slot slot;
  slot.buffer = std::make_shared<webgpu::Buffer>(plan_.device->acquire(cap));
  slot.bytes = bytes;
  slot.pinned = pinned;
  plan_.report.gpu_buffer_bytes += cap;
  plan_.slots.push_back(std::move(slot));
  refs_.push_back(1);
  plan_.recording.slot_requests.push_back(int(plan_.slots.size() - 1));
  return int(plan_.slots.size() - 1);
}

int Planner::recorded_slot(uint64_t bytes) {
  const std::vector<int>& order = plan_.recording.slot_requests;
  if (staged_.slot_requests >= order.size()) throw GuardFailed("these sizes need more buffers than recorded");
  int s = order[staged_.slot_requests++];
  uint64_t& need = staged_.need[s];
  need = std::max(need, std::max<uint64_t>(bytes, kMinBinding));
  return s;
}

void Planner::release(int slot) {
  if (slot < 0 || refreshing_) return;
  Slot& s = plan_.slots[size_t(slot)];
  if (--refs_[size_t(slot)] > 0 || s.pinned) return;
  free_[s.buffer->capacity].push_back(slot);
}

int Planner::slot_of(const std::string& name) {
  Value& v = values_.at(name);
  if (v.slot >= 0) return v.slot;
  // A constant the GPU needs: weights are uploaded once per session, folded values once per plan.
  auto w = g_.initializers.find(name);
  auto dv = constants_.derived.find(name);
  if ((w != g_.initializers.end() && &w->second == v.constant) ||
      (dv != constants_.derived.end() && &dv->second == v.constant)) {
    if (refreshing_) return v.slot = recorded_slot(0);
    auto& buf = constants_.buffers[name];
    if (!buf) {
      GpuUpload u = to_gpu(*v.constant, policy_, name);
      buf = std::make_shared<webgpu::Buffer>(
          plan_.device->create_buffer(std::max<uint64_t>(u.bytes, kMinBinding), webgpu::kStorageUsage, name));
      if (u.bytes) plan_.device->write(buf->get(), u.data, u.bytes);
    }
    Slot slot{buf, buf->size, true};  // shared with the session's constants
    plan_.slots.push_back(slot);
    refs_.push_back(1);
    v.slot = int(plan_.slots.size() - 1);
    plan_.recording.slot_requests.push_back(v.slot);
    return v.slot;
  }
  v.slot = alloc(gpu_bytes(v.dtype, v.shape, policy_), true);
  if (refreshing_) return v.slot;  // uploaded by apply_refresh when the value changed
  plan_.upload(v.slot, *v.constant, policy_, name);
  plan_.recording.constant_uploads.emplace_back(v.slot, v.constant);
  return v.slot;
}

// Releases the buffers of the values `node` reads whose last use is at `index`.
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

// ---- Placing nodes -------------------------------------------------------------------------------

// Ops whose output is random: never folded, so that each run draws anew.
static bool random_op(const std::string& op) {
  return op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" || op == "RandomUniformLike" ||
         op == "Multinomial" || op == "Bernoulli";
}

// Shape and Size from the input's known shape.
std::vector<Tensor> Planner::fold_shape_op(const ir::Node& node) const {
  const Value& x = values_.at(node.inputs.at(0));
  if (node.op_type == "Size") return {Tensor::scalar<int64_t>(shape_numel(x.shape))};
  int64_t r = int64_t(x.shape.size());
  int64_t start = node.attr_int("start", 0), end = node.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<int64_t> dims(x.shape.begin() + start, x.shape.begin() + std::max(start, end));
  return {Tensor::from_vector<int64_t>({int64_t(dims.size())}, dims)};
}

// A node computed at plan time: every input a constant (and no subgraph), or Shape/Size, which need
// only the shape.
bool Planner::fold(const ir::Node& node) {
  bool shape_only = (node.op_type == "Shape" || node.op_type == "Size") && node.domain.empty();
  bool all_constant = !node.attrs.count("body") && !node.attrs.count("then_branch") && !node.attrs.count("else_branch");
  for (const auto& in : node.inputs)
    if (!in.empty() && !values_.at(in).constant) all_constant = false;
  if ((!shape_only && !all_constant) || random_op(node.op_type)) return false;
  auto compute = [&] {
    if (shape_only) return fold_shape_op(node);
    std::vector<const Tensor*> ins;
    for (const auto& in : node.inputs) ins.push_back(in.empty() ? nullptr : values_.at(in).constant);
    return cpu::run_node(node, model_.opsets, ins);
  };
  const size_t index = size_t(&node - g_.nodes.data());
  if (refreshing_) {
    refold(index, node, shape_only, compute);
    return true;
  }
  std::vector<Tensor> outs = compute();
  FoldRecord rec{index, {}};
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    rec.outputs.push_back(nullptr);
    if (node.outputs[k].empty() || k >= outs.size()) continue;
    plan_.constants.push_back(std::move(outs[k]));
    const Tensor& t = plan_.constants.back();
    values_[node.outputs[k]] = Value{t.dtype(), t.shape(), &t, -1};
    rec.outputs.back() = &t;
  }
  plan_.recording.folds.push_back(std::move(rec));
  plan_.report.folded_nodes++;
  return true;
}

// A fold in a refresh: the recorded values, unless the node reads a shape or a value that changed;
// then it is computed again, and a value that comes out different is staged.
void Planner::refold(size_t index, const ir::Node& node, bool shape_only,
                     const std::function<std::vector<Tensor>()>& compute) {
  const std::vector<FoldRecord>& folds = plan_.recording.folds;
  if (staged_.folds >= folds.size() || folds[staged_.folds].index != index)
    throw GuardFailed("for these sizes " + node.describe() + " folds where the recording did not");
  const FoldRecord& rec = folds[staged_.folds++];
  bool again = shape_only;
  for (const auto& in : node.inputs) again |= !in.empty() && staged_.changed.count(in) != 0;
  std::vector<Tensor> outs;
  if (again) outs = compute();
  for (size_t k = 0; k < node.outputs.size() && k < rec.outputs.size(); ++k) {
    const Tensor* recorded = rec.outputs[k];
    if (!recorded) continue;
    const Tensor* t = recorded;
    if (again && k < outs.size() && !same_value(outs[k], *recorded)) {
      staged_.values.push_back(std::move(outs[k]));
      t = &staged_.values.back();
      staged_.replaced.emplace_back(recorded, t);
      staged_.changed.insert(node.outputs[k]);
    }
    values_[node.outputs[k]] = Value{t->dtype(), t->shape(), t, -1};
  }
}

// Node `index` (a graph node, or a fused node placed there) on its GPU kernel: false with `reason` when
// no kernel takes it; otherwise its outputs get slots and its dispatches join the open segment.
bool Planner::try_gpu(size_t index, const ir::Node& node, std::string& reason) {
  const webgpu::GpuKernel* k = webgpu::gpu_registry().find(node.op_type, node.domain);
  if (!k) {
    reason = "no GPU kernel for op '" + node.op_type + "'";
    return false;
  }
  std::vector<webgpu::GpuValueInfo> infos;
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
  webgpu::GpuKernelContext ctx(node, model_.opset(node.domain), policy_, plan_.device->limits(), infos);
  if (!call_kernel(index, node, infos, ctx, *k, reason)) return false;
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (!ctx.output_wanted(i)) continue;
    if (!ctx.outputs[i].set) throw Error(node.describe() + ": GPU kernel did not describe output " + std::to_string(i));
    touches_int64 |= ctx.outputs[i].dtype == DType::Int64;
  }
  if (touches_int64 && !policy_.gpu_takes_int64(node.op_type)) {
    reason = "INT64 is not opted in for op '" + node.op_type + "' (INT64 strategy per_op_optin)";
    return false;
  }
  if (!refreshing_) note_value_keys(node, ctx);
  std::vector<int> out_slots = output_slots(node, ctx);
  // Outputs that only Shape/Size read (they fold from the shape): described, never computed.
  if (fusion_.read_for_shape_only(node)) ctx.dispatches.clear();
  record_dispatches(index, node, ctx, out_slots);
  plan_.report.gpu_nodes++;
  return true;
}

namespace {

bool same_inputs(const std::vector<webgpu::GpuValueInfo>& a, const std::vector<webgpu::GpuValueInfo>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dtype != b[i].dtype || a[i].shape != b[i].shape || a[i].constant != b[i].constant) return false;
  return true;
}

bool same_attr(const ir::Attribute& a, const ir::Attribute& b) {
  return a.kind == b.kind && a.f == b.f && a.i == b.i && a.s == b.s && a.floats == b.floats && a.ints == b.ints &&
         a.strings == b.strings && a.t.defined() == b.t.defined() && a.g == b.g && a.tensors.empty() &&
         b.tensors.empty() && a.graphs == b.graphs && (!a.t.defined() || same_value(a.t, b.t));
}

// Two fused nodes compute the same thing: same op, inputs, outputs, attributes and expression.
bool same_fused(const ir::Node& a, const ir::Node& b) {
  if (a.op_type != b.op_type || a.domain != b.domain || a.inputs != b.inputs || a.outputs != b.outputs ||
      a.attrs.size() != b.attrs.size() || bool(a.fused) != bool(b.fused) || (a.fused && !(*a.fused == *b.fused)))
    return false;
  for (auto i = a.attrs.begin(), j = b.attrs.begin(); i != a.attrs.end(); ++i, ++j)
    if (i->first != j->first || !same_attr(i->second, j->second)) return false;
  return true;
}

// The kernel made the same choices as recorded: the same programs over the same bindings.
bool same_choices(const KernelRecord& r, const webgpu::GpuKernelContext& ctx) {
  if (r.outputs.size() != ctx.outputs.size() || r.temps.size() != ctx.temps.size() ||
      r.dispatches.size() != ctx.dispatches.size())
    return false;
  for (size_t i = 0; i < r.outputs.size(); ++i)
    if (r.outputs[i].dtype != ctx.outputs[i].dtype || r.outputs[i].alias_of != ctx.outputs[i].alias_of) return false;
  for (size_t i = 0; i < r.temps.size(); ++i)
    if (r.temps[i].dtype != ctx.temps[i].dtype) return false;
  for (size_t i = 0; i < r.dispatches.size(); ++i) {
    const webgpu::DispatchSpec &a = r.dispatches[i], &b = ctx.dispatches[i];
    if (a.source != b.source || a.uniforms.size() != b.uniforms.size() || a.bindings.size() != b.bindings.size())
      return false;
    for (size_t j = 0; j < a.bindings.size(); ++j)
      if (a.bindings[j].kind != b.bindings[j].kind || a.bindings[j].index != b.bindings[j].index) return false;
  }
  return true;
}

}  // namespace

// Calls the node's kernel (false with `reason` when it cannot take the node) and records what it
// chose. In a refresh, a kernel whose inputs look as recorded is not called: its recorded choices
// are taken; one that sees other sizes or values runs, and must choose as recorded (the guard).
bool Planner::call_kernel(size_t index, const ir::Node& node, const std::vector<webgpu::GpuValueInfo>& infos,
                          webgpu::GpuKernelContext& ctx, const webgpu::GpuKernel& k, std::string& reason) {
  const KernelRecord* rec = nullptr;
  if (refreshing_) {
    const std::vector<KernelRecord>& kernels = plan_.recording.kernels;
    size_t n = staged_.kernels++;
    rec = n < kernels.size() ? &kernels[n] : nullptr;
    if (!rec || rec->index != index || (rec->node ? rec->node != &node : !same_fused(rec->fused, node)))
      throw GuardFailed("for these sizes the plan reaches " + node.describe() + " another way");
    if (same_inputs(rec->inputs, infos)) {
      reason = rec->reason;
      ctx.outputs = rec->outputs;
      ctx.temps = rec->temps;
      ctx.dispatches = rec->dispatches;
      return rec->ok;
    }
  }
  bool ok = true;
  try {
    k(ctx);
  } catch (const webgpu::GpuUnsupported& e) {
    reason = e.what();
    ok = false;
  } catch (const NotImplemented& e) {
    reason = e.what();
    ok = false;
  }
  if (rec) {
    if (ok != rec->ok || (ok && !same_choices(*rec, ctx)))
      throw GuardFailed("for these sizes " + node.describe() + " chooses another program than recorded");
    staged_.guarded.push_back(node.name.empty() ? node.describe() : node.name);
  }
  KernelRecord r;
  r.index = index;
  if (node.domain == webgpu::kFusedDomain) r.fused = node;
  else r.node = &node;
  r.inputs = infos;
  for (auto& in : r.inputs) in.runtime_value = nullptr;  // the run's values: not kept
  r.ok = ok;
  r.reason = reason;
  if (ok) {
    r.outputs = ctx.outputs;
    r.temps = ctx.temps;
    r.dispatches = ctx.dispatches;
  }
  // A refresh's record replaces the recorded one when the refresh applies: the recording always
  // describes the sizes the plan serves now.
  if (rec) staged_.records.emplace_back(staged_.kernels - 1, std::move(r));
  else plan_.recording.kernels.push_back(std::move(r));
  return ok;
}

// The graph inputs whose values the kernel read at plan time: the plan serves only runs with them.
void Planner::note_value_keys(const ir::Node& node, const webgpu::GpuKernelContext& ctx) {
  for (size_t i : ctx.value_keyed_inputs) {
    const std::string& name = node.inputs[i];
    bool known = false;
    for (const auto& [n, t] : plan_.value_keys) known |= n == name;
    if (!known) {
      plan_.value_keys.emplace_back(name, values_.at(name).feed->clone());
      plan_.report.value_keyed_inputs.push_back(name);
    }
  }
}

// Slots for the kernel's wanted outputs: a view shares its input's, the others get one.
std::vector<int> Planner::output_slots(const ir::Node& node, const webgpu::GpuKernelContext& ctx) {
  std::vector<int> out_slots(ctx.outputs.size(), -1);
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (!ctx.output_wanted(i)) continue;
    const auto& o = ctx.outputs[i];
    int slot;
    if (o.alias_of >= 0) {
      slot = slot_of(node.inputs[size_t(o.alias_of)]);
      if (!refreshing_) refs_[size_t(slot)]++;
    } else {
      slot = alloc(gpu_bytes(o.dtype, o.shape, policy_), graph_outputs_.count(node.outputs[i]) != 0);
    }
    out_slots[i] = slot;
    values_[node.outputs[i]] = Value{o.dtype, o.shape, nullptr, slot};
  }
  return out_slots;
}

// The kernel's dispatches, their bindings resolved to slots (temporaries taken for the node's time).
void Planner::record_dispatches(size_t index, const ir::Node& node, webgpu::GpuKernelContext& ctx,
                                std::vector<int>& out_slots) {
  std::vector<int> temp_slots;
  for (const auto& t : ctx.temps) temp_slots.push_back(alloc(gpu_bytes(t.dtype, t.shape, policy_)));
  for (auto& d : ctx.dispatches) {
    std::vector<int> bound;
    for (const auto& b : d.bindings) {
      int slot = -1;
      switch (b.kind) {
        case webgpu::ValueRef::Kind::Input: slot = slot_of(node.inputs.at(size_t(b.index))); break;
        case webgpu::ValueRef::Kind::Output:
          if (out_slots.at(size_t(b.index)) < 0) {  // an unwanted output the kernel writes anyway
            const auto& o = ctx.outputs.at(size_t(b.index));
            temp_slots.push_back(alloc(gpu_bytes(o.dtype, o.shape, policy_)));
            out_slots[size_t(b.index)] = temp_slots.back();
          }
          slot = out_slots[size_t(b.index)];
          break;
        case webgpu::ValueRef::Kind::Temp: slot = temp_slots.at(size_t(b.index)); break;
      }
      bound.push_back(slot);
    }
    pending_.emplace_back(std::move(d), std::move(bound));
    pending_nodes_.push_back(index);
  }
  for (int t : temp_slots) release(t);
}

// Turns the pending dispatches into a recorded segment: pipelines, one uniform buffer, bind groups.
// In a refresh, the segment's uniforms and workgroup counts are staged instead, the recorded one's
// programs and bindings being the same.
void Planner::close_segment() {
  if (pending_.empty()) return;
  webgpu::Device& dev = *plan_.device;
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
    u[0] = uint32_t(pending_nodes_[i]);  // the status record of this dispatch's node
    std::memcpy(data.data() + offsets[i] / 4, u.data(), u.size() * 4);
  }
  if (refreshing_) {
    const size_t n = staged_.segments++;
    if (n >= plan_.steps.size() || plan_.steps[n].cpu || plan_.steps[n].dispatches.size() != pending_.size() ||
        plan_.steps[n].uniforms->size != total)
      throw GuardFailed("for these sizes the GPU work splits another way");
    std::vector<std::array<uint32_t, 3>> grids;
    for (size_t i = 0; i < pending_.size(); ++i) {
      const RecordedDispatch& r = plan_.steps[n].dispatches[i];
      if (r.slots != pending_[i].second || r.node != pending_nodes_[i])
        throw GuardFailed("for these sizes a dispatch binds other buffers");
      grids.push_back({pending_[i].first.x, pending_[i].first.y, pending_[i].first.z});
    }
    staged_.uniforms.push_back(std::move(data));
    staged_.grids.push_back(std::move(grids));
    pending_.clear();
    pending_nodes_.clear();
    return;
  }
  Step step;
  step.uniforms = std::make_shared<webgpu::Buffer>(dev.create_buffer(total, webgpu::kUniformUsage, "onnxgpu uniforms"));
  dev.write(step.uniforms->get(), data.data(), total);
  for (size_t i = 0; i < pending_.size(); ++i) {
    auto& [d, slots] = pending_[i];
    RecordedDispatch r{&dev.pipeline(d.source), {}, d.x, d.y, d.z, uint32_t(pending_nodes_[i]), slots, offsets[i],
                       uint64_t((d.uniforms.size() * 4 + 15) / 16 * 16)};
    r.group = bind(step, r);
    step.dispatches.push_back(std::move(r));
  }
  plan_.report.dispatches += int(pending_.size());
  plan_.report.segments++;
  plan_.steps.push_back(std::move(step));
  pending_.clear();
  pending_nodes_.clear();
}

// A dispatch's bind group: its uniforms, the status records, then each bound slot's whole buffer (a
// refresh may put a larger value there; the kernels index by the sizes in their uniforms).
webgpu::BindGroupHandle Planner::bind(const Step& step, const RecordedDispatch& d) const {
  const uint64_t max_binding = plan_.device->limits().max_storage_buffer_binding_size;
  std::vector<webgpu::BufferBinding> entries;
  entries.emplace_back(step.uniforms->get(), d.uniform_offset, d.uniform_bytes);
  entries.emplace_back(plan_.status->get(), 0, plan_.status->capacity);
  for (int s : d.slots) {
    const webgpu::Buffer& b = *plan_.slots[size_t(s)].buffer;
    entries.emplace_back(b.get(), 0, max_binding ? std::min(b.capacity, max_binding / 4 * 4) : b.capacity);
  }
  return plan_.device->bind_group(*d.pipeline, entries);
}

// Runs node i alone: folded, on the GPU, or on the CPU. `at` is where the plan is (i, or the root of
// the fused group that deferred i): values i read are released once the plan has passed their last use.
void Planner::place(size_t i, size_t at) {
  const ir::Node& node = g_.nodes[i];
  if (fold(node)) {
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
    run_on_cpu(node);
  }
  finish_values_of(at, node);
}

// The fused group placed at node `index` (a MatMul group starting there, or the elementwise group
// whose root it is; with `attention`, the attention group placed there), as one GPU kernel, its reads
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
  if (!group || !webgpu::gpu_registry().find(group->node.op_type, group->node.domain)) return false;
  for (const auto& in : group->node.inputs)  // constants the group made (sibling weights side by side)
    if (auto d = constants_.derived.find(in); d != constants_.derived.end() && !values_.count(in))
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
  plan_.fused_kernels[index] = fused_nodes_.back().op_type + " (fused)";
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

// A node no GPU kernel takes: the steps recorded so far run, then the node on the CPU, which tells
// its outputs' shapes; the outputs are uploaded into slots of their own.
void Planner::run_on_cpu(const ir::Node& node) {
  if (refreshing_) throw GuardFailed("for these sizes " + node.describe() + " runs on the CPU");
  plan_.recording.not_refreshable = node.describe() + " runs on the CPU";
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
  replay_.run(executed_, plan_.steps.size());
  std::vector<Tensor> outs = run_cpu_step(step, plan_, model_, policy_);
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    StepValue sv;
    sv.name = node.outputs[k];
    if (!sv.name.empty() && k < outs.size() && outs[k].defined()) {
      sv.dtype = outs[k].dtype();
      sv.shape = outs[k].shape();
      webgpu::shader::type_info(sv.dtype, policy_);  // throws for types the GPU cannot hold
      sv.slot = alloc(gpu_bytes(sv.dtype, sv.shape, policy_), graph_outputs_.count(sv.name) != 0);
      plan_.upload(sv.slot, outs[k], policy_, sv.name);
      values_[sv.name] = Value{sv.dtype, sv.shape, nullptr, sv.slot, true};
    }
    step.outputs.push_back(sv);
  }
  plan_.steps.push_back(std::move(step));
  executed_ = plan_.steps.size();
  plan_.report.cpu_nodes++;
}

}  // namespace onnxgpu::runtime
