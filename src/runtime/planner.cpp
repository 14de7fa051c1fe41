#include "runtime/planner.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/switches.h"
#include "cpu/graph_runner.h"
#include "ops/layout.h"
#include "runtime/gpu_values.h"
#include "webgpu/device.h"

namespace onnxgpu::runtime {

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
  readers_ = value_readers(g_);
  for (const AppendPair& p : append_pairs(g_)) {
    auto d = device_feeds.find(p.input);
    if (d != device_feeds.end() && webgpu::shader::storage_bits(d->second.dtype(), policy_) >= 32)
      appendable_[p.node].push_back(p);
  }
  for (auto it = appendable_.begin(); it != appendable_.end();) {  // GroupQueryAttention: both pasts or neither
    if (it->second.front().gqa && it->second.size() != 2) {
      it = appendable_.erase(it);
      continue;
    }
    for (const AppendPair& p : it->second) unplaced_.emplace(p.input, &device_feeds.at(p.input));
    ++it;
  }
  add_inputs(feeds, device_feeds);
  write_inputs(plan_, policy_, feeds, device_feeds);
  place_nodes();
  while (!unplaced_.empty()) materialize(unplaced_.begin()->first);  // read by no node: a slot still
  close_segment();
  finish_report();
  return executed_;
}

// A value of this type can live in a GPU buffer (every type but string); else an error naming `what`.
void Planner::gpu_storable(DType dtype, const std::string& what) const {
  try {
    webgpu::shader::storage_bits(dtype, policy_);
  } catch (const NotImplemented&) {
    throw NotImplemented(what + " is a " + std::string(dtype_name(dtype)) +
                         " tensor, which a WebGPU session cannot hold (strings run on the CPU execution provider)");
  }
}

void Planner::add_inputs(const std::unordered_map<std::string, Tensor>& feeds,
                         const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  auto add = [&](const std::string& name, DType dtype, const Shape& shape) {
    gpu_storable(dtype, "input '" + name + "'");
    int slot = alloc(gpu_bytes(dtype, shape, policy_), true);
    values_[name] = Value{dtype, shape, nullptr, slot};
    plan_.inputs.emplace_back(name, slot);
    plan_.input_shapes[name] = shape;
  };
  for (const auto& [name, t] : feeds) {
    add(name, t.dtype(), t.shape());
    values_[name].feed = &t;
  }
  for (const auto& [name, t] : device_feeds) {
    if (unplaced_.count(name)) {  // its slot comes with its Concat (make_resident) or when first bound
      gpu_storable(t.dtype(), "input '" + name + "'");
      values_[name] = Value{t.dtype(), t.shape(), nullptr, -1};
      plan_.input_shapes[name] = t.shape();
      continue;
    }
    add(name, t.dtype(), t.shape());
  }
}

// A past fed as a DeviceTensor whose Concat did not take it in place: a slot of its own, written now
// (and by write_inputs on later runs).
int Planner::materialize(const std::string& name) {
  const DeviceTensor* d = unplaced_.at(name);
  unplaced_.erase(name);
  Value& v = values_.at(name);
  v.slot = alloc(gpu_bytes(v.dtype, v.shape, policy_), true);
  plan_.inputs.emplace_back(name, v.slot);
  webgpu::CommandBatch batch = plan_.device->batch();
  copy_device_tensor(batch, *d, plan_.slots[size_t(v.slot)].buffer->get());
  plan_.device->submit(batch);
  return v.slot;
}

// The node of `pair` took its past in place: one buffer for both, the past copied in. A Concat's has
// spare room along its axis; a GroupQueryAttention's is the static buffer as it is.
void Planner::make_resident(const AppendPair& pair, const ir::Node& node, const webgpu::GpuKernelContext& ctx) {
  Resident r;
  r.pair = pair;
  r.dtype = ctx.outputs.at(pair.node_output).dtype;
  const Shape& out = ctx.outputs[pair.node_output].shape;
  RowLayout layout;
  if (pair.gqa) {
    r.axis = 2;  // [batch, kv_heads, length, head_size]
    r.exact = true;
    layout = row_layout(out, r.axis, out[2]);
  } else {
    std::vector<Shape> shapes;
    for (const auto& in : node.inputs) shapes.push_back(values_.at(in).shape);
    r.axis = ops::concat_shape(node, model_.opset(""), shapes, ctx.fail_fn()).axis;
    layout = row_layout(out, r.axis, 0);
    layout.rows = uint64_t(resident_rows(*plan_.device, r, layout, out[size_t(r.axis)], policy_));
  }
  r.slot = int(plan_.slots.size());
  plan_.slots.emplace_back();
  refs_.push_back(1);
  give_buffer(plan_, r, layout, policy_);
  const DeviceTensor* past = unplaced_.at(r.pair.input);
  webgpu::CommandBatch batch = plan_.device->batch();
  copy_device_tensor(batch, *past, r.storage->buffer.get(), r.axis, int64_t(layout.rows));
  plan_.device->submit(batch);
  values_.at(r.pair.input).slot = r.slot;
  plan_.inputs.emplace_back(r.pair.input, r.slot);
  unplaced_.erase(r.pair.input);
  plan_.report.appended_outputs.push_back(r.pair.output);
  plan_.add_resident(std::move(r));
}

void Planner::place_nodes() {
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (fused_away_.count(i) || fusion_.deferred(i)) continue;  // computed by another node's kernel
    place_at(i);
    // What the nodes placed at i read is released only now, after the last of them: where a group's
    // kernel could not run, its members (deferred to i: they all read at i) run one by one, and a value
    // two of them read (GELU's x, read by its Div and its Mul; self-attention's x, its scores' and its
    // values' operand) keeps its buffer until both have run, so that no output in between is given it.
    for (size_t m : placed_here_) finish_values_of(i, g_.nodes[m]);
    placed_here_.clear();
  }
}

// Node i with what is deferred to it: the attention kernel placed there, or, when it cannot run, its
// parts; then i's own group, or its deferred nodes and itself one by one.
void Planner::place_at(size_t i) {
  if (std::vector<size_t> parts = fusion_.attention_parts(i); !parts.empty()) {
    if (try_fused(i, true)) return;
    for (size_t m : parts) run_group_or_nodes(m);  // the attention kernel could not run
  }
  run_group_or_nodes(i);
}

void Planner::finish_report() {
  Recording& rec = plan_.recording;
  rec.values.resize(rec.ids.size());
  for (const auto& [name, id] : rec.ids) {
    const Value& v = values_.at(name);
    rec.values[size_t(id)] = PlanValue{v.dtype, v.shape, v.constant, v.slot};
  }
  if (plan_.steps.size() > 1 && rec.not_refreshable.empty()) rec.not_refreshable = "its GPU work is split in segments";
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
  uint64_t cap = webgpu::BufferPool::bucket(std::max<uint64_t>(bytes, kMinBinding));
  if (!pinned) {
    auto it = free_.find(cap);
    if (it != free_.end() && !it->second.empty()) {
      int s = it->second.back();
      it->second.pop_back();
      refs_[size_t(s)] = 1;
      return s;
    }
  }
  Slot slot;
  slot.buffer = std::make_shared<webgpu::Buffer>(plan_.device->acquire(cap));
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
  if (unplaced_.count(name)) return materialize(name);
  // A constant the GPU needs: weights are uploaded once per session, folded values once per plan.
  auto w = g_.initializers.find(name);
  auto dv = constants_.derived.find(name);
  if ((w != g_.initializers.end() && &w->second == v.constant) ||
      (dv != constants_.derived.end() && &dv->second == v.constant)) {
    auto& buf = constants_.buffers[name];
    if (!buf) {
      GpuUpload u = to_gpu(*v.constant, policy_, name);
      buf = std::make_shared<webgpu::Buffer>(
          plan_.device->create_buffer(std::max<uint64_t>(u.bytes, kMinBinding), webgpu::kStorageUsage, name));
      if (u.bytes) plan_.device->write(buf->get(), u.data, u.bytes);
    }
    Slot slot{buf, true};  // shared with the session's constants
    plan_.slots.push_back(slot);
    refs_.push_back(1);
    v.slot = int(plan_.slots.size() - 1);
    return v.slot;
  }
  v.slot = alloc(gpu_bytes(v.dtype, v.shape, policy_), true);
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
std::vector<Tensor> fold_shape_op(const ir::Node& node, const Shape& shape) {
  if (node.op_type == "Size") return {Tensor::scalar<int64_t>(shape_numel(shape))};
  int64_t r = int64_t(shape.size());
  int64_t start = node.attr_int("start", 0), end = node.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<int64_t> dims(shape.begin() + start, shape.begin() + std::max(start, end));
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
  std::vector<Tensor> outs;
  if (shape_only) {
    outs = fold_shape_op(node, values_.at(node.inputs.at(0)).shape);
  } else {
    std::vector<const Tensor*> ins;
    for (const auto& in : node.inputs) ins.push_back(in.empty() ? nullptr : values_.at(in).constant);
    outs = cpu::run_node(node, model_.opsets, ins);
  }
  FoldRecord rec{size_t(&node - g_.nodes.data()), shape_only, ids_of(node.inputs), {}};
  for (size_t k = 0; k < node.outputs.size() && k < outs.size(); ++k) {
    if (node.outputs[k].empty()) continue;
    plan_.constants.push_back(std::move(outs[k]));
    const Tensor& t = plan_.constants.back();
    values_[node.outputs[k]] = Value{t.dtype(), t.shape(), &t, -1};
  }
  rec.outputs = ids_of(node.outputs);
  plan_.recording.events.push_back({Recording::Event::Kind::Fold, plan_.recording.folds.size()});
  plan_.recording.folds.push_back(std::move(rec));
  plan_.report.folded_nodes++;
  return true;
}

// The id of a value in the recording (-1 for an omitted one), made on first use.
int Planner::id_of(const std::string& name) {
  if (name.empty()) return -1;
  auto [it, fresh] = plan_.recording.ids.emplace(name, int(plan_.recording.ids.size()));
  return it->second;
}

std::vector<int> Planner::ids_of(const std::vector<std::string>& names) {
  std::vector<int> ids;
  for (const auto& n : names) ids.push_back(id_of(n));
  return ids;
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
  const std::vector<AppendPair>* pairs = nullptr;  // the node's KV caches that may append in place
  if (auto a = appendable_.find(index); &node == &g_.nodes[index] && a != appendable_.end()) {
    pairs = &a->second;
    for (const AppendPair& p : *pairs)
      if (!unplaced_.count(p.input)) pairs = nullptr;
  }
  const bool appendable = pairs != nullptr;
  if (appendable) ctx.in_place_input = pairs->front().gqa ? 3 : 0;
  // A Concat's new rows that their kernel can write at their place: the Concat copies nothing.
  std::optional<RowsProducer> rows;
  if (appendable && !pairs->front().gqa && node.inputs.size() == 2) rows = rows_producer(node.inputs[1]);
  ctx.rows_in_place = rows.has_value();
  // What the kernel chooses is recorded, taken or not, so that a refresh can check it chooses the same.
  Recording& recording = plan_.recording;
  recording.events.push_back({Recording::Event::Kind::Kernel, recording.kernels.size()});
  KernelRecord& rec = recording.kernels.emplace_back();
  rec.index = index;
  if (node.domain == webgpu::kFusedDomain) rec.fused = node;
  else rec.node = &node;
  rec.inputs = ids_of(node.inputs);
  rec.ok = run_kernel(*k, ctx, reason);
  rec.reason = reason;
  if (!rec.ok) return false;
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (!ctx.output_wanted(i)) continue;
    if (!ctx.outputs[i].set) throw Error(node.describe() + ": GPU kernel did not describe output " + std::to_string(i));
    touches_int64 |= ctx.outputs[i].dtype == DType::Int64;
  }
  if (touches_int64 && !policy_.gpu_takes_int64(node.op_type)) {
    reason = "INT64 is not opted in for op '" + node.op_type + "' (INT64 strategy per_op_optin)";
    rec.ok = false;
    rec.reason = reason;
    return false;
  }
  note_value_keys(node, ctx);
  if (appendable && ctx.in_place_done) {
    for (const AppendPair& p : *pairs) make_resident(p, node, ctx);
    if (rows) write_rows_in_place(*rows, plan_.residents.back());
  }
  rec.results = std::move(ctx.outputs);
  rec.temps = std::move(ctx.temps);
  rec.dispatches = std::move(ctx.dispatches);
  rec.out_slots = output_slots(node, rec.results);
  rec.outputs = ids_of(node.outputs);
  // Outputs that only Shape/Size read (they fold from the shape): described, never computed.
  rec.dispatched = !fusion_.read_for_shape_only(node);
  record_dispatches(node, rec);
  for (size_t i = 0; i < rec.out_slots.size(); ++i)
    if (rec.out_slots[i] >= 0) produced_by_[node.outputs[i]] = RowsProducer{recording.kernels.size() - 1, i};
  plan_.report.gpu_nodes++;
  return true;
}

bool run_kernel(const webgpu::GpuKernel& k, webgpu::GpuKernelContext& ctx, std::string& reason) {
  try {
    k(ctx);
  } catch (const webgpu::GpuUnsupported& e) {
    reason = e.what();
    return false;
  } catch (const NotImplemented& e) {
    reason = e.what();
    return false;
  }
  return true;
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

// The kernel output that a Concat's new rows `rows` are, through views only (Reshape, a Transpose that
// moves axes of size 1: outputs that alias their input), when that kernel can write them into the
// Concat's appended buffer instead (resident.h): every value on the way read by its one next node only
// and no graph output, the kernel's dispatches still in the open segment (not yet recorded).
// $ONNXGPU_ROWS_IN_PLACE=0: never (the Concat copies them; for measuring on a device).
std::optional<Planner::RowsProducer> Planner::rows_producer(const std::string& rows) const {
  if (!switched_on("ONNXGPU_ROWS_IN_PLACE")) return std::nullopt;
  std::string v = rows;
  for (;;) {
    auto r = readers_.find(v);
    auto p = produced_by_.find(v);
    if (r == readers_.end() || r->second != 1 || graph_outputs_.count(v) || p == produced_by_.end()) return std::nullopt;
    const KernelRecord& k = plan_.recording.kernels[p->second.record];
    const auto& out = k.results.at(p->second.output);
    if (out.alias_of >= 0) {  // a view: on to the value it shows
      const ir::Node& n = k.node ? *k.node : k.fused;
      v = n.inputs.at(size_t(out.alias_of));
      continue;
    }
    if (!k.ok || !k.dispatched || k.dispatches.empty() || k.first_dispatch + k.dispatches.size() > pending_.size())
      return std::nullopt;
    for (size_t j = 0; j < k.dispatches.size(); ++j)
      if (pending_[k.first_dispatch + j].first != &k.dispatches[j]) return std::nullopt;
    return p->second;
  }
}

// The kernel of `p` writes its output into resident `r`'s buffer, at the new rows' place: the output
// bound in the buffer, pitched to start at the past's length in each row.
void Planner::write_rows_in_place(const RowsProducer& p, const Resident& r) {
  KernelRecord& k = plan_.recording.kernels[p.record];
  k.out_slots[p.output] = r.slot;  // its own buffer stays with the value, released as it dies
  k.rows_of.resize(k.out_slots.size(), -1);
  k.rows_of[p.output] = id_of(r.pair.input);
  const uint64_t start = uint64_t(values_.at(r.pair.input).shape[size_t(r.axis)]) * r.layout.inner;
  const uint64_t numel = uint64_t(shape_numel(k.results[p.output].shape));
  const ResidentLayouts layouts = resident_layouts(plan_);
  for (size_t j = 0; j < k.dispatches.size(); ++j) {
    webgpu::DispatchSpec& d = k.dispatches[j];
    std::vector<int>& bound = pending_[k.first_dispatch + j].second;
    std::vector<int> slots(bound.size(), -1);
    std::vector<uint64_t> counts(bound.size(), 0), starts(bound.size(), 0);
    for (size_t b = 0; b < d.bindings.size(); ++b)
      if (d.bindings[b].kind == webgpu::ValueRef::Kind::Output && size_t(d.bindings[b].index) == p.output) {
        bound[b] = slots[b] = r.slot;
        counts[b] = numel;
        starts[b] = start;
      }
    pitch_bindings(d, slots, counts, layouts, starts);
  }
  for (Resident& res : plan_.residents)
    if (res.slot == r.slot) res.rows_in_place = true;
  plan_.report.rows_written_in_place.push_back(r.pair.output);
}

// Slots for the kernel's wanted outputs: a view shares its input's, the others get one.
std::vector<int> Planner::output_slots(const ir::Node& node, const std::vector<webgpu::GpuKernelContext::OutputSpec>& outputs) {
  std::vector<int> out_slots(outputs.size(), -1);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i >= node.outputs.size() || node.outputs[i].empty()) continue;
    const auto& o = outputs[i];
    int slot;
    const Resident* resident = nullptr;
    if (!plan_.residents.empty() && (node.op_type == "Concat" || node.op_type == "GroupQueryAttention"))
      for (const Resident& r : plan_.residents)
        if (r.pair.output == node.outputs[i]) resident = &r;
    if (resident) {  // the Concat appending in place (GroupQueryAttention writing in place): its past's buffer
      slot = resident->slot;
      refs_[size_t(slot)]++;
    } else if (o.alias_of >= 0) {
      slot = slot_of(node.inputs[size_t(o.alias_of)]);
      refs_[size_t(slot)]++;
    } else {
      slot = alloc(gpu_bytes(o.dtype, o.shape, policy_), graph_outputs_.count(node.outputs[i]) != 0);
    }
    out_slots[i] = slot;
    values_[node.outputs[i]] = Value{o.dtype, o.shape, nullptr, slot};
  }
  return out_slots;
}

// The kernel's dispatches, their bindings resolved to slots (temporaries taken for the node's time).
void Planner::record_dispatches(const ir::Node& node, KernelRecord& rec) {
  std::vector<int>& temp_slots = rec.temp_slots;
  std::vector<int> out_slots = rec.out_slots;
  for (const auto& t : rec.temps) temp_slots.push_back(alloc(gpu_bytes(t.dtype, t.shape, policy_)));
  rec.first_dispatch = pending_.size();
  const ResidentLayouts layouts = resident_layouts(plan_);
  for (auto& d : rec.dispatches) {
    if (!rec.dispatched) break;
    std::vector<int> bound;
    std::vector<uint64_t> numel;
    for (const auto& b : d.bindings) {
      int slot = -1;
      switch (b.kind) {
        case webgpu::ValueRef::Kind::Input: slot = slot_of(node.inputs.at(size_t(b.index))); break;
        case webgpu::ValueRef::Kind::Output:
          if (out_slots.at(size_t(b.index)) < 0) {  // an unwanted output the kernel writes anyway
            const auto& o = rec.results.at(size_t(b.index));
            temp_slots.push_back(alloc(gpu_bytes(o.dtype, o.shape, policy_)));
            rec.unwanted.push_back(size_t(b.index));
            out_slots[size_t(b.index)] = temp_slots.back();
          }
          slot = out_slots[size_t(b.index)];
          break;
        case webgpu::ValueRef::Kind::Temp: slot = temp_slots.at(size_t(b.index)); break;
      }
      bound.push_back(slot);
      const Shape* shape = b.kind == webgpu::ValueRef::Kind::Input    ? &values_.at(node.inputs[size_t(b.index)]).shape
                           : b.kind == webgpu::ValueRef::Kind::Output ? &rec.results[size_t(b.index)].shape
                                                                      : nullptr;
      numel.push_back(shape ? uint64_t(shape_numel(*shape)) : 0);
    }
    pitch_bindings(d, bound, numel, layouts);
    pending_.emplace_back(&d, std::move(bound));
    pending_nodes_.push_back(rec.index);
  }
  for (int t : temp_slots) release(t);
}

// Turns the pending dispatches into a recorded segment: pipelines, one uniform buffer, bind groups.
void Planner::close_segment() {
  if (pending_.empty()) return;
  webgpu::Device& dev = *plan_.device;
  const uint64_t align = std::max<uint32_t>(dev.limits().min_uniform_buffer_offset_alignment, 16);
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  for (auto& [d, slots] : pending_) {
    offsets.push_back(total);
    total += (d->uniforms.size() * 4 + align - 1) / align * align;
  }
  Step step;
  step.uniform_data.assign(total / 4, 0);
  for (size_t i = 0; i < pending_.size(); ++i) {
    const auto& u = pending_[i].first->uniforms;
    std::memcpy(step.uniform_data.data() + offsets[i] / 4, u.data(), u.size() * 4);
    step.uniform_data[offsets[i] / 4] = uint32_t(pending_nodes_[i]);  // uniform 0: the status record of its node
  }
  step.uniforms = std::make_shared<webgpu::Buffer>(dev.create_buffer(total, webgpu::kUniformUsage, "onnxgpu uniforms"));
  dev.write(step.uniforms->get(), step.uniform_data.data(), total);
  // The segment's new pipelines are compiled together (in parallel), then looked up one by one.
  std::vector<std::string> sources;
  sources.reserve(pending_.size());
  for (auto& [d, slots] : pending_) sources.push_back(d->source());
  dev.make_pipelines(sources);
  for (size_t i = 0; i < pending_.size(); ++i) {
    auto& [d, slots] = pending_[i];
    RecordedDispatch r{&dev.pipeline(sources[i]), {}, d->x, d->y, d->z, uint32_t(pending_nodes_[i]), slots, offsets[i],
                       uint64_t((d->uniforms.size() * 4 + 15) / 16 * 16)};
    r.group = bind_dispatch(plan_, step, r);
    step.dispatches.push_back(std::move(r));
  }
  plan_.report.dispatches += int(pending_.size());
  plan_.report.segments++;
  plan_.steps.push_back(std::move(step));
  pending_.clear();
  pending_nodes_.clear();
}

// Runs node i alone: folded, on the GPU, or on the CPU. The values i reads are released by place_nodes
// once every node placed where the plan is (i, or the root of the fused group that deferred i) has run.
void Planner::place(size_t i) {
  const ir::Node& node = g_.nodes[i];
  placed_here_.push_back(i);
  if (fold(node)) return;
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
}

// The fused group placed at node `index` (a MatMul group starting there, or the elementwise group
// whose root it is; with `attention`, the attention group placed there), as one GPU kernel. False (and
// nothing recorded) when no group is placed here or its kernel cannot run: the nodes then run alone.
bool Planner::try_fused(size_t index, bool attention) {
  std::unordered_map<std::string, ValueFacts> known, kinds;  // as read whole, and as read for their kind
  DecisionRecord decision{index, attention, {}, {}, false, {}};
  auto facts = [&](const std::string& name, Fusion::Read read) -> const ValueFacts* {
    auto it = values_.find(name);
    if (it == values_.end()) return nullptr;
    decision.queried.push_back(id_of(name));
    decision.read_all.push_back(read == Fusion::Read::All);
    if (read == Fusion::Read::All) return &(known[name] = ValueFacts{it->second.dtype, it->second.shape, it->second.constant});
    return &(kinds[name] = ValueFacts{it->second.dtype, Shape(it->second.shape.size(), 0), nullptr});
  };
  std::optional<FusedGroup> group = attention ? fusion_.attention_group(index, facts) : fusion_.group_at(index, facts);
  decision.found = group.has_value();
  if (group) decision.group = group->node;
  plan_.recording.events.push_back({Recording::Event::Kind::Decision, plan_.recording.decisions.size()});
  plan_.recording.decisions.push_back(std::move(decision));
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
    placed_here_.push_back(j);
  }
  placed_here_.push_back(index);
  plan_.report.gpu_nodes += int(group->members.size());
  plan_.report.fused_nodes += int(group->members.size()) + 1;
  return true;
}

// Node `index` with the group placed there, or, when there is none or its kernel cannot run, the
// nodes deferred to it one by one and then itself.
void Planner::run_group_or_nodes(size_t index) {
  if (fused_away_.count(index) || try_fused(index)) return;
  for (size_t m : fusion_.deferred_to(index)) place(m);
  place(index);
}

// A node no GPU kernel takes: the steps recorded so far run, then the node on the CPU, which tells
// its outputs' shapes; the outputs are uploaded into slots of their own.
void Planner::run_on_cpu(const ir::Node& node) {
  plan_.recording.not_refreshable = node.describe() + " runs on the CPU";
  close_segment();
  Step step;
  step.cpu = true;
  step.node = &node;
  auto add_input = [&](const std::string& name) {
    StepValue sv;
    sv.name = name;
    if (unplaced_.count(name)) materialize(name);
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
      gpu_storable(sv.dtype, node.describe() + ": output '" + sv.name + "'");
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
