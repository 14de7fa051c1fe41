#include "runtime/refresh.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "cpu/graph_runner.h"
#include "ir/fused_expr.h"
#include "runtime/gpu_values.h"
#include "runtime/planner.h"

namespace onnxgpu::runtime {

namespace {

bool same_value(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

bool same_attr(const ir::Attribute& a, const ir::Attribute& b) {
  return a.kind == b.kind && a.f == b.f && a.i == b.i && a.s == b.s && a.floats == b.floats && a.ints == b.ints &&
         a.strings == b.strings && a.g == b.g && a.graphs == b.graphs && a.tensors.empty() && b.tensors.empty() &&
         a.t.defined() == b.t.defined() && (!a.t.defined() || same_value(a.t, b.t));
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

// The kernel chose as recorded: the same programs over the same bindings, the same outputs' dtypes
// and views, the same temporaries' dtypes.
bool same_choices(const KernelRecord& r, const webgpu::GpuKernelContext& ctx) {
  if (r.results.size() != ctx.outputs.size() || r.temps.size() != ctx.temps.size() ||
      r.dispatches.size() != ctx.dispatches.size())
    return false;
  for (size_t i = 0; i < r.results.size(); ++i)
    if (r.results[i].dtype != ctx.outputs[i].dtype || r.results[i].alias_of != ctx.outputs[i].alias_of) return false;
  for (size_t i = 0; i < r.temps.size(); ++i)
    if (r.temps[i].dtype != ctx.temps[i].dtype) return false;
  for (size_t i = 0; i < r.dispatches.size(); ++i) {
    const webgpu::DispatchSpec &a = r.dispatches[i], &b = ctx.dispatches[i];
    if (a.uniforms.size() != b.uniforms.size() || a.bindings.size() != b.bindings.size() || !a.program.same_source(b.program))
      return false;
    for (size_t j = 0; j < a.bindings.size(); ++j)
      if (a.bindings[j].kind != b.bindings[j].kind || a.bindings[j].index != b.bindings[j].index) return false;
  }
  return true;
}

std::string node_label(const ir::Node& n) { return n.name.empty() ? n.describe() : n.name; }

// Two nodes compute the same function of their inputs: same op, attributes, fused expression, and the
// same inputs and wanted outputs by position (names aside: a model repeats its layers).
bool same_function(const ir::Node& a, const ir::Node& b) {
  if (&a == &b) return true;
  if (a.op_type != b.op_type || a.domain != b.domain || a.inputs.size() != b.inputs.size() ||
      a.outputs.size() != b.outputs.size() || a.attrs.size() != b.attrs.size() || bool(a.fused) != bool(b.fused) ||
      (a.fused && !(*a.fused == *b.fused)))
    return false;
  for (size_t i = 0; i < a.inputs.size(); ++i)
    if (a.inputs[i].empty() != b.inputs[i].empty()) return false;
  for (size_t i = 0; i < a.outputs.size(); ++i)
    if (a.outputs[i].empty() != b.outputs[i].empty()) return false;
  for (auto i = a.attrs.begin(), j = b.attrs.begin(); i != a.attrs.end(); ++i, ++j)
    if (i->first != j->first || !same_attr(i->second, j->second)) return false;
  return true;
}

// The same constant: the same tensor, or small ones of equal contents (the shape arithmetic a model
// repeats per layer); large ones only by identity, so no refresh compares weights.
bool same_constant(const Tensor* a, const Tensor* b) {
  if (a == b) return true;
  return a && b && a->nbytes() <= 65536 && same_value(*a, *b);
}

}  // namespace

Refresh::Refresh(const ir::Model& model, const SessionOptions& options, Plan& plan, const Fusion& fusion)
    : model_(model), options_(options), plan_(plan), fusion_(fusion), rec_(plan.recording) {}

const PlanValue& Refresh::value(int id) const {
  if (changed_[size_t(id)]) return values_.at(id);
  return rec_.values[size_t(id)];
}

void Refresh::change(int id, PlanValue v) {
  changed_[size_t(id)] = 1;
  values_[id] = std::move(v);
}

bool Refresh::any_changed(const std::vector<int>& ids) const {
  for (int id : ids)
    if (id >= 0 && changed_[size_t(id)]) return true;
  return false;
}

bool Refresh::run(const std::unordered_map<std::string, Tensor>& feeds,
                  const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::string& why) {
  if (!rec_.not_refreshable.empty()) {
    why = "the plan serves only its own sizes: " + rec_.not_refreshable;
    return false;
  }
  changed_.assign(rec_.values.size(), 0);
  for (const auto& [name, slot] : plan_.inputs) {
    auto id = rec_.ids.find(name);
    if (id == rec_.ids.end()) continue;  // an input no node reads
    auto h = feeds.find(name);
    if (h != feeds.end()) feed_[id->second] = &h->second;
    const Shape& shape = h != feeds.end() ? h->second.shape() : device_feeds.at(name).shape();
    const PlanValue& was = value(id->second);
    if (shape != was.shape) change(id->second, PlanValue{was.dtype, shape, nullptr, was.slot});
  }
  try {
    for (const Recording::Event& e : rec_.events) {
      switch (e.kind) {
        case Recording::Event::Kind::Fold:
          if (any_changed(rec_.folds[e.record].inputs)) refold(rec_.folds[e.record]);
          break;
        case Recording::Event::Kind::Decision:
          if (any_changed(rec_.decisions[e.record].queried)) redecide(rec_.decisions[e.record]);
          break;
        case Recording::Event::Kind::Kernel:
          if (any_changed(rec_.kernels[e.record].inputs)) recall(e.record, rec_.kernels[e.record]);
          break;
      }
    }
  } catch (const GuardFailed& e) {
    why = e.what();
    return false;
  }
  apply(feeds, device_feeds);
  return true;
}

// A fold that read a changed value, computed again; outputs that come out different change too.
void Refresh::refold(const FoldRecord& f) {
  const ir::Node& node = model_.graph.nodes[f.index];
  std::vector<const Tensor*> ins;
  for (int id : f.inputs) ins.push_back(id < 0 ? nullptr : value(id).constant);
  std::vector<Tensor> outs;
  if (const std::vector<Tensor>* same = folded_before(node, f, ins)) {
    for (const Tensor& t : *same) outs.push_back(t.clone());
  } else {
    if (f.shape_only) outs = fold_shape_op(node, value(f.inputs.at(0)).shape);
    else outs = cpu::run_node(node, model_.opsets, ins);
    Fold done{&node, f.shape_only ? std::vector<const Tensor*>{} : ins,
              f.shape_only ? value(f.inputs.at(0)).shape : Shape{}, {}};
    for (const Tensor& t : outs) done.outputs.push_back(t.clone());
    folds_.push_back(std::move(done));
  }
  for (size_t k = 0; k < f.outputs.size() && k < outs.size(); ++k) {
    const int id = f.outputs[k];
    if (id < 0) continue;
    const PlanValue& was = value(id);
    if (same_value(outs[k], *was.constant)) continue;
    fresh_.push_back(std::move(outs[k]));
    const Tensor& t = fresh_.back();
    replaced_.emplace_back(was.constant, &t);
    change(id, PlanValue{t.dtype(), t.shape(), &t, was.slot});
  }
}

// A fold this refresh has computed already: the same function of the same values (a model repeats
// its shape arithmetic in every layer), or null.
const std::vector<Tensor>* Refresh::folded_before(const ir::Node& node, const FoldRecord& f,
                                                  const std::vector<const Tensor*>& ins) const {
  for (const Fold& d : folds_) {
    if (!same_function(*d.node, node)) continue;
    if (f.shape_only) {
      if (d.shape == value(f.inputs.at(0)).shape) return &d.outputs;
      continue;
    }
    bool same = d.inputs.size() == ins.size();
    for (size_t i = 0; same && i < ins.size(); ++i) same = same_constant(d.inputs[i], ins[i]);
    if (same) return &d.outputs;
  }
  return nullptr;
}

// A fusion decision that read a changed value, made again: it must place the same group.
void Refresh::redecide(const DecisionRecord& d) {
  std::map<std::string, ValueFacts> known;
  auto facts = [&](const std::string& name) -> const ValueFacts* {
    auto id = rec_.ids.find(name);
    // Only the values the recording's decision saw: the others did not exist yet at that point.
    if (id == rec_.ids.end() || std::find(d.queried.begin(), d.queried.end(), id->second) == d.queried.end())
      return nullptr;
    const PlanValue& v = value(id->second);
    return &(known[name] = ValueFacts{v.dtype, v.shape, v.constant});
  };
  std::optional<FusedGroup> group =
      d.attention ? fusion_.attention_group(d.index, facts) : fusion_.group_at(d.index, facts);
  if (group.has_value() != d.found || (group && !same_fused(group->node, d.group)))
    throw GuardFailed("for these sizes the nodes fused at " + model_.graph.nodes[d.index].describe() +
                      " are not those recorded");
}

// The kernel's dispatches with their bindings in appended buffers pitched, as the planner did
// (record_dispatches), by the layouts this refresh gives those buffers.
void Refresh::pitch(const KernelRecord& k, webgpu::GpuKernelContext& ctx) const {
  const ResidentLayouts plan_layouts = resident_layouts(plan_);
  const ResidentLayouts layouts = [&](int slot) -> const RowLayout* {
    auto r = relayout_.find(slot);
    return r != relayout_.end() ? &r->second : plan_layouts(slot);
  };
  for (webgpu::DispatchSpec& d : ctx.dispatches) {
    std::vector<int> slots;
    std::vector<uint64_t> numel;
    for (const webgpu::ValueRef& b : d.bindings) {
      int slot = -1;
      const Shape* shape = nullptr;
      if (b.kind == webgpu::ValueRef::Kind::Input && k.inputs.at(size_t(b.index)) >= 0) {
        const PlanValue& v = value(k.inputs[size_t(b.index)]);
        slot = v.slot;
        shape = &v.shape;
      } else if (b.kind == webgpu::ValueRef::Kind::Output && size_t(b.index) < k.out_slots.size()) {
        slot = k.out_slots[size_t(b.index)];
        shape = &ctx.outputs.at(size_t(b.index)).shape;
      }
      slots.push_back(slot);
      numel.push_back(shape ? uint64_t(shape_numel(*shape)) : 0);
    }
    pitch_bindings(d, slots, numel, layouts);
  }
}

// A kernel that read a changed value, called again: it must choose as recorded (the guard); its
// outputs' shapes and its dispatches' uniforms and workgroup counts are the new ones.
void Refresh::recall(size_t n, const KernelRecord& k) {
  // A kernel that refused the node refuses it still or would now take it: either way its parts,
  // recorded after it, run alone as recorded, which is correct.
  if (!k.ok) return;
  const ir::Node& node = k.node ? *k.node : k.fused;
  const webgpu::GpuKernel* kernel = webgpu::gpu_registry().find(node.op_type, node.domain);
  std::vector<webgpu::GpuValueInfo> infos;
  for (int id : k.inputs) {
    if (id < 0) {
      infos.push_back({});
      continue;
    }
    const PlanValue& v = value(id);
    auto f = feed_.find(id);
    infos.push_back({v.dtype, v.shape, v.constant, f == feed_.end() ? nullptr : f->second});
  }
  webgpu::GpuKernelContext ctx(node, model_.opset(node.domain), options_.int64, plan_.device->limits(), infos);
  const Resident* resident = nullptr;  // the Concat appending in place (a GroupQueryAttention writing), resident.h
  std::vector<const Resident*> exact;  // a GroupQueryAttention's two static buffers
  if (k.node && (k.node->op_type == "Concat" || k.node->op_type == "GroupQueryAttention"))
    for (const Resident& r : plan_.residents)
      if (r.pair.node == k.index) {
        resident = &r;
        if (r.exact) exact.push_back(&r);
      }
  if (resident) ctx.in_place_input = resident->pair.gqa ? 3 : 0;
  auto resident_slot = [&](int slot) { return slot >= 0 && plan_.resident_at(slot) != nullptr; };
  std::string reason;
  // A kernel is a function of its node's op, attributes and inputs' facts: one this refresh called
  // already on the same (another layer's) gives the same choices without building its programs again.
  // (Bindings in an appended buffer alike too: they are pitched below, each with its own buffer's.)
  const KernelRecord* same = nullptr;
  for (const auto& [m, r] : kernels_) {
    const ir::Node& other = r.node ? *r.node : r.fused;
    if (!same_function(other, node) || r.inputs.size() != infos.size()) continue;
    bool alike = r.out_slots.size() == k.out_slots.size();
    for (size_t i = 0; alike && i < k.out_slots.size(); ++i) alike = resident_slot(r.out_slots[i]) == resident_slot(k.out_slots[i]);
    for (size_t i = 0; alike && i < infos.size(); ++i) {
      const PlanValue* v = r.inputs[i] < 0 ? nullptr : &value(r.inputs[i]);
      alike = v ? infos[i].dtype == v->dtype && infos[i].shape == v->shape && same_constant(infos[i].constant, v->constant) &&
                      !feed_.count(r.inputs[i]) && !feed_.count(k.inputs[i]) &&
                      resident_slot(v->slot) == resident_slot(value(k.inputs[i]).slot)
                : infos[i].dtype == DType::Undefined;
    }
    if (alike) {
      same = &r;
      break;
    }
  }
  if (same) {
    ctx.outputs = same->results;
    ctx.temps = same->temps;
    ctx.dispatches = same->dispatches;
    ctx.in_place_done = resident != nullptr;  // `same` appends in place too: its output is resident alike
  }
  if (!kernel || (!same && !run_kernel(*kernel, ctx, reason)) || (resident && !ctx.in_place_done))
    throw GuardFailed("for these sizes " + node.describe() + " chooses another program than recorded" +
                      (reason.empty() ? "" : " (" + reason + ")"));
  for (const Resident* r : exact)  // a static buffer is the present as it is: another shape plans anew
    if (const RowLayout w = row_layout(ctx.outputs.at(r->pair.node_output).shape, r->axis, int64_t(r->layout.rows));
        w.outer != r->layout.outer || w.inner != r->layout.inner || w.used != r->layout.rows)
      throw GuardFailed("for these sizes " + node.describe() + "'s present " + r->pair.output + " no longer fits its buffer");
  if (resident && exact.empty()) {  // the appended buffer: another layout when the present outgrows it or its shape moves
    RowLayout want = row_layout(ctx.outputs.at(0).shape, resident->axis, int64_t(resident->layout.rows));
    if (want.outer != resident->layout.outer || want.inner != resident->layout.inner || want.used > want.rows) {
      want.rows = uint64_t(resident_rows(*plan_.device, *resident, want, int64_t(want.used), options_.int64));
      relayout_[resident->slot] = want;
    }
  }
  if (k.dispatched) pitch(k, ctx);
  if (!same_choices(k, ctx))
    throw GuardFailed("for these sizes " + node.describe() + " chooses another program than recorded" +
                      (reason.empty() ? "" : " (" + reason + ")"));
  for (size_t i = 0; i < k.outputs.size() && i < ctx.outputs.size(); ++i) {
    const int id = k.outputs[i];
    if (id < 0) continue;
    const PlanValue& was = value(id);
    if (ctx.outputs[i].dtype != was.dtype || ctx.outputs[i].shape != was.shape)
      change(id, PlanValue{ctx.outputs[i].dtype, ctx.outputs[i].shape, nullptr, was.slot});
  }
  KernelRecord r;
  r.index = k.index;
  r.node = k.node;
  if (!k.node) r.fused = k.fused;
  r.inputs = k.inputs;
  r.outputs = k.outputs;
  r.ok = true;
  r.results = std::move(ctx.outputs);
  r.temps = std::move(ctx.temps);
  r.dispatches = std::move(ctx.dispatches);
  r.out_slots = k.out_slots;
  r.temp_slots = k.temp_slots;
  r.unwanted = k.unwanted;
  r.first_dispatch = k.first_dispatch;
  r.dispatched = k.dispatched;
  kernels_.emplace_back(n, std::move(r));
  guarded_.push_back(node_label(node));
}

// Applies the refresh: buffers regrown (taken first, so a failure leaves the plan as it was), the
// records, values and folded values replaced, folded values the GPU reads uploaded again, the
// changed kernels' uniforms and workgroup counts written, bind groups of regrown buffers made anew,
// the outputs' shapes and the report.
void Refresh::apply(const std::unordered_map<std::string, Tensor>& feeds,
                    const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  webgpu::Device& dev = *plan_.device;
  const Int64Policy& policy = options_.int64;
  std::vector<const KernelRecord*> kernels(rec_.kernels.size());
  for (size_t n = 0; n < kernels.size(); ++n) kernels[n] = &rec_.kernels[n];
  for (const auto& [n, r] : kernels_) kernels[n] = &r;
  auto fresh_of = [&](const Tensor* recorded) -> const Tensor* {
    for (const auto& [was, now] : replaced_)
      if (was == recorded) return now;
    return recorded;
  };

  // What each buffer must hold now: the most any value it serves needs.
  std::vector<uint64_t> need(plan_.slots.size(), 0);
  auto needs = [&](int slot, DType dtype, const Shape& shape) {
    if (slot >= 0) need[size_t(slot)] = std::max(need[size_t(slot)], gpu_bytes(dtype, shape, policy));
  };
  for (const auto& [name, slot] : plan_.inputs) {
    auto h = feeds.find(name);
    if (h != feeds.end()) needs(slot, h->second.dtype(), h->second.shape());
    else needs(slot, device_feeds.at(name).dtype(), device_feeds.at(name).shape());
  }
  for (const KernelRecord* k : kernels) {
    if (!k->ok) continue;
    for (size_t i = 0; i < k->out_slots.size(); ++i)
      if (k->results[i].alias_of < 0) needs(k->out_slots[i], k->results[i].dtype, k->results[i].shape);
    for (size_t t = 0; t < k->temps.size(); ++t) needs(k->temp_slots[t], k->temps[t].dtype, k->temps[t].shape);
    for (size_t u = 0; u < k->unwanted.size(); ++u) {
      const auto& o = k->results[k->unwanted[u]];
      needs(k->temp_slots[k->temps.size() + u], o.dtype, o.shape);
    }
  }
  for (const auto& [slot, t] : rec_.constant_uploads) needs(slot, t->dtype(), fresh_of(t)->shape());
  const uint64_t max_binding = dev.limits().max_storage_buffer_binding_size;
  std::map<int, webgpu::Buffer> regrown;
  for (size_t s = 0; s < need.size(); ++s) {
    const uint64_t cap = plan_.slots[s].buffer->capacity;
    if (need[s] <= cap || plan_.resident_at(int(s))) continue;  // appended buffers: relayout_ below
    regrown.emplace(int(s), dev.acquire(std::max<uint64_t>(need[s], std::min<uint64_t>(2 * cap, max_binding))));
  }

  Plan& p = plan_;
  Recording& rec = p.recording;
  for (auto& [s, buffer] : regrown) {
    Slot& slot = p.slots[size_t(s)];
    p.report.gpu_buffer_bytes += buffer.capacity - slot.buffer->capacity;
    if (slot.buffer.use_count() == 1) dev.recycle(std::move(*slot.buffer));
    slot.buffer = std::make_shared<webgpu::Buffer>(std::move(buffer));
    p.report.capacity_growths++;
  }
  for (const auto& [slot, layout] : relayout_)  // a new buffer: the next run copies the past in
    for (Resident& r : p.residents)
      if (r.slot == slot) {
        give_buffer(p, r, layout, policy);
        p.report.capacity_growths++;
      }
  for (auto& [id, v] : values_) {
    for (const auto& [was, now] : replaced_)
      if (v.constant == now) v.constant = was;  // the recorded tensor takes the fresh value below
    rec.values[size_t(id)] = std::move(v);
  }
  for (auto& [was, now] : replaced_) const_cast<Tensor&>(*was) = std::move(const_cast<Tensor&>(*now));
  for (const auto& [slot, t] : rec.constant_uploads) {
    bool again = regrown.count(slot) != 0;
    for (const auto& r : replaced_) again |= r.first == t;
    if (again) p.upload(slot, *t, policy, "a folded value");
  }
  if (!kernels_.empty()) {
    Step& step = p.steps.at(0);
    for (auto& [n, r] : kernels_) {
      for (size_t j = 0; r.dispatched && j < r.dispatches.size(); ++j) {
        RecordedDispatch& d = step.dispatches.at(r.first_dispatch + j);
        const std::vector<uint32_t>& u = r.dispatches[j].uniforms;
        std::memcpy(step.uniform_data.data() + d.uniform_offset / 4 + 1, u.data() + 1, (u.size() - 1) * 4);
        d.x = r.dispatches[j].x;
        d.y = r.dispatches[j].y;
        d.z = r.dispatches[j].z;
      }
      rec.kernels[n] = std::move(r);
    }
    dev.write(step.uniforms->get(), step.uniform_data.data(), step.uniform_data.size() * 4);
  }
  if (!regrown.empty())
    for (Step& step : p.steps)
      for (RecordedDispatch& d : step.dispatches)
        if (std::any_of(d.slots.begin(), d.slots.end(), [&](int s) { return regrown.count(s) != 0; }))
          d.group = bind_dispatch(p, step, d);
  for (size_t k = 0; k < model_.graph.outputs.size(); ++k) {
    auto id = rec.ids.find(model_.graph.outputs[k].name);
    if (id == rec.ids.end()) continue;
    p.outputs[k].dtype = rec.values[size_t(id->second)].dtype;
    p.outputs[k].shape = rec.values[size_t(id->second)].shape;
  }

  // The report: the input dims that took other sizes, the nodes whose kernel choice is guarded.
  std::set<std::string> dims(p.report.symbolic_dims.begin(), p.report.symbolic_dims.end());
  auto note_dims = [&](const std::string& name, const Shape& shape) {
    const Shape& first = p.input_shapes.at(name);
    for (size_t d = 0; d < shape.size() && d < first.size(); ++d)
      if (shape[d] != first[d]) dims.insert(name + "[" + std::to_string(d) + "]");
  };
  for (const auto& [name, t] : feeds) note_dims(name, t.shape());
  for (const auto& [name, t] : device_feeds) note_dims(name, t.shape());
  p.report.symbolic_dims.assign(dims.begin(), dims.end());
  std::set<std::string> guarded(p.report.guarded_nodes.begin(), p.report.guarded_nodes.end());
  guarded.insert(guarded_.begin(), guarded_.end());
  p.report.guarded_nodes.assign(guarded.begin(), guarded.end());
}

}  // namespace onnxgpu::runtime
