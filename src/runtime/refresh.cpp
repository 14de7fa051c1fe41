#include "runtime/refresh.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "cpu/graph_runner.h"
#include "ir/fused_expr.h"
#include "runtime/gpu_values.h"
#include "runtime/planner.h"

namespace onnxgpu::runtime {

namespace {

bool same_value(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || a.raw() == b.raw() || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
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
bool same_choices(const KernelRecord& r, const std::vector<webgpu::GpuKernelContext::OutputSpec>& outputs,
                  const std::vector<webgpu::TempSpec>& temps, const std::vector<webgpu::DispatchSpec>& dispatches) {
  if (r.results.size() != outputs.size() || r.temps.size() != temps.size() || r.dispatches.size() != dispatches.size())
    return false;
  for (size_t i = 0; i < r.results.size(); ++i)
    if (r.results[i].dtype != outputs[i].dtype || r.results[i].alias_of != outputs[i].alias_of) return false;
  for (size_t i = 0; i < r.temps.size(); ++i)
    if (r.temps[i].dtype != temps[i].dtype) return false;
  for (size_t i = 0; i < r.dispatches.size(); ++i) {
    const webgpu::DispatchSpec &a = r.dispatches[i], &b = dispatches[i];
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

// Constants above this size are weights: compared by identity, never by contents.
constexpr size_t kSmallConstant = 65536;

// The same constant: the same tensor, or small ones of equal contents (the shape arithmetic a model
// repeats per layer); large ones only by identity, so no refresh compares weights.
bool same_constant(const Tensor* a, const Tensor* b) {
  if (a == b) return true;
  return a && b && a->nbytes() <= kSmallConstant && same_value(*a, *b);
}

// Constants a kernel call is the same function of: the same constant, or two of one dtype and shape, of
// more than one element (a layer's weights and biases), whose values the call did not read (a kernel
// reads such an input's values only through GpuKernelContext::constant, which lists them:
// constants_read; a scalar it may read directly, so scalars are compared by value).
bool alike_constants(const Tensor* a, const Tensor* b, bool values_read) {
  return same_constant(a, b) ||
         (a && b && !values_read && a->numel() > 1 && a->dtype() == b->dtype() && a->shape() == b->shape());
}

}  // namespace

Refresh::Refresh(const ir::Model& model, const SessionOptions& options, Plan& plan, const Fusion& fusion)
    : model_(model), options_(options), plan_(plan), fusion_(fusion), rec_(plan.recording), changed_(plan.recording.changed),
      pending_(plan.recording.pending),
      values_(plan.recording.changed_values), changed_ids_(plan.recording.changed_ids), words_(plan.recording.words),
      fold_last_(plan.recording.fold_last) {}

// Records of the same function share a class: its first record's index; and each value's readers
// (Recording::readers). Both computed once per plan: the recording never changes.
void Refresh::classify() {
  Recording& rec = plan_.recording;
  if (rec.kernel_class.size() == rec.kernels.size() && rec.fold_class.size() == rec.folds.size() &&
      rec.reader_start.size() == rec.values.size() + 1)
    return;
  // Each event's reads, counted per value, then placed (in event order: each value's readers ascend).
  auto reads = [&](const Recording::Event& e, auto&& each) {
    auto all = [&](const std::vector<int>& ids) {
      for (int id : ids)
        if (id >= 0 && size_t(id) < rec.values.size()) each(id);
    };
    switch (e.kind) {
      case Recording::Event::Kind::Fold: all(rec.folds[e.record].inputs); break;
      case Recording::Event::Kind::Decision: all(rec.decisions[e.record].queried); break;
      case Recording::Event::Kind::Kernel:
        all(rec.kernels[e.record].inputs);
        all(rec.kernels[e.record].rows_of);
        break;
    }
  };
  rec.reader_start.assign(rec.values.size() + 1, 0);
  for (const Recording::Event& e : rec.events) reads(e, [&](int id) { rec.reader_start[size_t(id) + 1]++; });
  for (size_t v = 0; v < rec.values.size(); ++v) rec.reader_start[v + 1] += rec.reader_start[v];
  rec.readers.assign(rec.reader_start.back(), 0);
  std::vector<uint32_t> next(rec.reader_start.begin(), rec.reader_start.end() - 1);
  for (size_t n = 0; n < rec.events.size(); ++n)
    reads(rec.events[n], [&](int id) { rec.readers[next[size_t(id)]++] = uint32_t(n); });  // (twice if read twice)
  rec.pending.assign((rec.events.size() + 63) / 64, 0);
  auto classes = [](size_t n, auto node_of) {
    std::vector<int> out(n, -1);
    std::unordered_map<std::string, std::vector<int>> by_op;  // class representatives, by op
    for (size_t i = 0; i < n; ++i) {
      const ir::Node& node = node_of(i);
      std::vector<int>& reps = by_op[node.op_type];
      for (int r : reps)
        if (same_function(node_of(size_t(r)), node)) {
          out[i] = r;
          break;
        }
      if (out[i] < 0) {
        out[i] = int(i);
        reps.push_back(int(i));
      }
    }
    return out;
  };
  rec.kernel_class = classes(rec.kernels.size(), [&](size_t i) -> const ir::Node& {
    const KernelRecord& k = rec.kernels[i];
    return k.node ? *k.node : k.fused;
  });
  rec.fold_class = classes(rec.folds.size(), [&](size_t i) -> const ir::Node& { return model_.graph.nodes[rec.folds[i].index]; });
}

const PlanValue& Refresh::value(int id) const {
  return changed_[size_t(id)] ? values_[size_t(id)] : rec_.values[size_t(id)];
}

// A value that changed: its readers are visited (Recording::readers). (Assigned in place: the scratch
// keeps its shapes' storage from one refresh to the next.)
void Refresh::change(int id, DType dtype, const Shape& shape, const Tensor* constant, int slot) {
  if (!changed_[size_t(id)]) {
    changed_ids_.push_back(id);
    for (uint32_t r = rec_.reader_start[size_t(id)]; r < rec_.reader_start[size_t(id) + 1]; ++r)
      pending_[rec_.readers[r] / 64] |= uint64_t(1) << (rec_.readers[r] % 64);
  }
  changed_[size_t(id)] = 1;
  PlanValue& v = values_[size_t(id)];
  v.dtype = dtype;
  v.shape = shape;
  v.constant = constant;
  v.slot = slot;
}

bool Refresh::any_changed(const std::vector<int>& ids) const {
  for (int id : ids)
    if (id >= 0 && changed_[size_t(id)]) return true;
  return false;
}

bool Refresh::run(const std::unordered_map<std::string, Tensor>& feeds,
                  const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::string& why) {
  if (!decide(feeds, device_feeds, why)) return false;
  apply(feeds, device_feeds);
  return true;
}

bool Refresh::decide(const std::unordered_map<std::string, Tensor>& feeds,
                     const std::unordered_map<std::string, DeviceTensor>& device_feeds, std::string& why) {
  if (!rec_.not_refreshable.empty()) {
    why = "the plan serves only its own sizes: " + rec_.not_refreshable;
    return false;
  }
  classify();
  // The scratch as the last refresh left it, cleared where it wrote (most of it it never touches).
  if (changed_.size() != rec_.values.size()) changed_.assign(rec_.values.size(), 0);
  for (int id : changed_ids_) changed_[size_t(id)] = 0;
  changed_ids_.clear();
  if (fold_last_.size() != rec_.folds.size()) fold_last_.assign(rec_.folds.size(), -1);
  words_.clear();
  struct ClearFolds {  // (on every way out: a fold's entry points into this refresh's folds_)
    Refresh& r;
    ~ClearFolds() {
      for (const Fold& f : r.folds_) r.fold_last_[size_t(f.cls)] = -1;
    }
  } clear_folds{*this};
  std::fill(pending_.begin(), pending_.end(), 0);
  if (values_.size() < rec_.values.size()) values_.resize(rec_.values.size());
  for (const auto& [name, slot] : plan_.inputs) {
    auto id = rec_.ids.find(name);
    if (id == rec_.ids.end()) continue;  // an input no node reads
    auto h = feeds.find(name);
    if (h != feeds.end()) feed_[id->second] = &h->second;
    const Shape& shape = h != feeds.end() ? h->second.shape() : device_feeds.at(name).shape();
    const PlanValue& was = value(id->second);
    if (shape != was.shape) change(id->second, was.dtype, shape, nullptr, was.slot);
  }
  try {
    // The events that read a changed value, in order (each visit may add later ones).
    for (size_t w = 0; w < pending_.size(); ++w)
      while (pending_[w]) {
        const int bit = std::countr_zero(pending_[w]);
        visit(rec_.events[w * 64 + size_t(bit)]);
        pending_[w] &= bit == 63 ? 0 : ~((uint64_t(2) << bit) - 1);  // (none before it is visited again)
      }
  } catch (const GuardFailed& e) {
    why = e.what();
    return false;
  }
  return true;
}

// A recorded event one of whose values changed: the decision redone where what it read changed.
void Refresh::visit(const Recording::Event& e) {
  switch (e.kind) {
    case Recording::Event::Kind::Fold:
      if (any_changed(rec_.folds[e.record].inputs)) refold(rec_.folds[e.record]);
      break;
    case Recording::Event::Kind::Decision:
      if (decision_changed(rec_.decisions[e.record])) redecide(rec_.decisions[e.record]);
      break;
    case Recording::Event::Kind::Kernel:
      // (A kernel writing a KV cache's new rows in place: also when the past's length moved them.)
      if (any_changed(rec_.kernels[e.record].inputs)) recall(e.record, rec_.kernels[e.record]);
      else if (any_changed(rec_.kernels[e.record].rows_of)) repitch(e.record, rec_.kernels[e.record]);
      break;
  }
}

// A fold that read a changed value, computed again; outputs that come out different change too.
void Refresh::refold(const FoldRecord& f) {
  const ir::Node& node = model_.graph.nodes[f.index];
  std::vector<const Tensor*>& ins = fold_ins_;
  ins.clear();
  for (int id : f.inputs) ins.push_back(id < 0 ? nullptr : value(id).constant);
  const std::vector<Tensor>* outs = folded_before(node, f, ins);
  if (!outs) {
    const int cls = rec_.fold_class[size_t(&f - rec_.folds.data())];
    Fold& done = folds_.emplace_back(Fold{&node, cls, fold_last_[size_t(cls)], f.shape_only ? std::vector<const Tensor*>{} : ins,
                                          f.shape_only ? value(f.inputs.at(0)).shape : Shape{}, {}});
    fold_last_[size_t(cls)] = int(folds_.size() - 1);
    done.outputs = f.shape_only ? fold_shape_op(node, done.shape) : cpu::run_node(node, model_.opsets, ins);
    outs = &done.outputs;
  }
  // Outputs that came out different replace the recorded values (the memo's tensors: a value repeated
  // by every layer is held once until apply() copies it, sharing its storage; folded values are never
  // written in place).
  for (size_t k = 0; k < f.outputs.size() && k < outs->size(); ++k) {
    const int id = f.outputs[k];
    if (id < 0) continue;
    const PlanValue& was = value(id);
    const Tensor& t = (*outs)[k];
    if (same_value(t, *was.constant)) continue;
    replaced_.emplace_back(was.constant, &t);
    change(id, t.dtype(), t.shape(), &t, was.slot);
  }
}

// A fold this refresh has computed already: the same function of the same values (a model repeats
// its shape arithmetic in every layer), or null.
const std::vector<Tensor>* Refresh::folded_before(const ir::Node& node, const FoldRecord& f,
                                                  const std::vector<const Tensor*>& ins) const {
  const int cls = rec_.fold_class[size_t(&f - rec_.folds.data())];
  for (int at = fold_last_[size_t(cls)]; at >= 0; at = folds_[size_t(at)].prev) {
    const Fold& d = folds_[size_t(at)];
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

// Whether a fusion decision must be made again: it read the sizes or contents of a changed value, or
// only the kind (dtype, rank) of one whose kind changed.
bool Refresh::decision_changed(const DecisionRecord& d) const {
  for (size_t q = 0; q < d.queried.size(); ++q) {
    const int id = d.queried[q];
    if (id < 0 || !changed_[size_t(id)]) continue;
    if (q >= d.read_all.size() || d.read_all[q]) return true;
    const PlanValue &now = value(id), &was = rec_.values[size_t(id)];
    if (now.dtype != was.dtype || now.shape.size() != was.shape.size()) return true;
  }
  return false;
}

// A fusion decision that read a changed value, made again: it must place the same group.
void Refresh::redecide(const DecisionRecord& d) {
  std::map<std::string, ValueFacts> known, kinds;
  auto facts = [&](const std::string& name, Fusion::Read read) -> const ValueFacts* {
    auto id = rec_.ids.find(name);
    // Only the values the recording's decision saw: the others did not exist yet at that point.
    if (id == rec_.ids.end() || std::find(d.queried.begin(), d.queried.end(), id->second) == d.queried.end())
      return nullptr;
    const PlanValue& v = value(id->second);
    if (read == Fusion::Read::All) return &(known[name] = ValueFacts{v.dtype, v.shape, v.constant});
    return &(kinds[name] = ValueFacts{v.dtype, Shape(v.shape.size(), 0), nullptr});
  };
  std::optional<FusedGroup> group =
      d.attention ? fusion_.attention_group(d.index, facts) : fusion_.group_at(d.index, facts);
  if (group.has_value() != d.found || (group && !same_fused(group->node, d.group)))
    throw GuardFailed("for these sizes the nodes fused at " + model_.graph.nodes[d.index].describe() +
                      " are not those recorded");
}

const RowLayout* Refresh::layout_of(int slot) const {
  auto r = relayout_.find(slot);
  if (r != relayout_.end()) return &r->second;
  const Resident* res = plan_.resident_at(slot);
  return res && !res->exact ? &res->layout : nullptr;  // a static buffer is bound as it is, never pitched
}

// The slot a dispatch binding reads or writes and its value's shape (-1 and null for constants, temps
// and uniforms): a kernel input's value, or its output as `outputs` shapes it.
std::pair<int, const Shape*> Refresh::bound_at(const KernelRecord& k, const webgpu::ValueRef& b,
                                               const std::vector<webgpu::GpuKernelContext::OutputSpec>& outputs) const {
  if (b.kind == webgpu::ValueRef::Kind::Input && k.inputs.at(size_t(b.index)) >= 0) {
    const PlanValue& v = value(k.inputs[size_t(b.index)]);
    return {v.slot, &v.shape};
  }
  if (b.kind == webgpu::ValueRef::Kind::Output && size_t(b.index) < k.out_slots.size())
    return {k.out_slots[size_t(b.index)], &outputs.at(size_t(b.index)).shape};
  return {-1, nullptr};
}

// The kernel's dispatches with their bindings in appended buffers pitched, as the planner did
// (record_dispatches), by the layouts this refresh gives those buffers.
void Refresh::pitch(const KernelRecord& k, webgpu::GpuKernelContext& ctx) {
  const ResidentLayouts layouts = [this](int slot) { return layout_of(slot); };
  for (webgpu::DispatchSpec& d : ctx.dispatches) {
    std::vector<int> slots;
    std::vector<uint64_t> numel, starts;
    for (const webgpu::ValueRef& b : d.bindings) {
      const auto [slot, shape] = bound_at(k, b, ctx.outputs);
      slots.push_back(slot);
      numel.push_back(shape ? uint64_t(shape_numel(*shape)) : 0);
      starts.push_back(shape ? rows_start(k, b, slot, *shape) : 0);
    }
    pitch_bindings(d, slots, numel, layouts, starts);
  }
}

// Where binding `b` of record k starts in each row of its pitched buffer: after the past, for new rows
// its kernel writes in place (KernelRecord::rows_of), else 0. The buffer's layout for this run is
// settled first (fit), as the Concat's recall, later in the record order, would.
uint64_t Refresh::rows_start(const KernelRecord& k, const webgpu::ValueRef& b, int slot, const Shape& shape) {
  if (b.kind != webgpu::ValueRef::Kind::Output || size_t(b.index) >= k.rows_of.size() || k.rows_of[size_t(b.index)] < 0)
    return 0;
  const Resident* r = plan_.resident_at(slot);
  if (!r) return 0;
  const Shape& past = value(k.rows_of[size_t(b.index)]).shape;
  const size_t axis = size_t(r->axis);
  Shape present = past;
  uint64_t others = 1;  // elements per position along the axis
  for (size_t d = 0; d < past.size(); ++d)
    if (d != axis) others *= uint64_t(past[d]);
  if (others) present[axis] += int64_t(uint64_t(shape_numel(shape)) / others);
  fit(*r, present);
  return uint64_t(past[axis]) * layout_of(slot)->inner;
}

// The appended buffer's layout for a present of this shape: another one (relayout_) when the present
// outgrows the buffer or its shape moves.
void Refresh::fit(const Resident& r, const Shape& present) {
  RowLayout want = row_layout(present, r.axis, int64_t(r.layout.rows));
  if (want.outer != r.layout.outer || want.inner != r.layout.inner || want.used > want.rows) {
    want.rows = uint64_t(resident_rows(*plan_.device, r, want, int64_t(want.used), options_.int64));
    relayout_[r.slot] = want;
  }
}

// Bindings in an appended buffer: pitched for record k's own buffers, where d's program keeps the
// pitches (pitch_bindings' words).
void Refresh::pitched_words(const KernelRecord& k, const webgpu::DispatchSpec& d,
                            const std::vector<webgpu::GpuKernelContext::OutputSpec>& results) {
  const size_t first = words_.size();  // (this dispatch's words)
  words_.insert(words_.end(), d.uniforms.begin(), d.uniforms.end());
  if (!k.dispatched) return;
  for (size_t b = 0; b < d.bindings.size(); ++b) {
    const auto [slot, shape] = bound_at(k, d.bindings[b], results);
    const uint64_t start = shape ? rows_start(k, d.bindings[b], slot, *shape) : 0;  // (settles the layout)
    const RowLayout* l = slot >= 0 ? layout_of(slot) : nullptr;
    if (!l) continue;
    const int at = d.program.tensors().at(b).pitch;
    if (at < 0) {
      const ir::Node& node = k.node ? *k.node : k.fused;
      throw GuardFailed("for these sizes " + node.describe() + " binds an appended buffer that its program does not pitch");
    }
    const std::array<uint32_t, 3> words = pitch_of(*l, uint64_t(shape_numel(*shape)), start);
    std::copy(words.begin(), words.end(), words_.begin() + std::ptrdiff_t(first) + at);
  }
}

void Refresh::repitch(size_t n, const KernelRecord& k) {
  if (!k.ok) return;
  Recalled& out = kernels_.emplace_back();
  out.n = n;
  out.self = &k;
  out.words = words_.size();
  for (const webgpu::DispatchSpec& d : k.dispatches) pitched_words(k, d, k.results);
}

// A kernel that read a changed value, called again: it must choose as recorded (the guard); its
// outputs' shapes and its dispatches' uniforms and workgroup counts are the new ones.
void Refresh::recall(size_t n, const KernelRecord& k) {
  // A kernel that refused the node refuses it still or would now take it: either way its parts,
  // recorded after it, run alone as recorded, which is correct.
  if (!k.ok) return;
  const ir::Node& node = k.node ? *k.node : k.fused;
  const Resident* resident = nullptr;  // the Concat appending in place (a GroupQueryAttention writing), resident.h
  std::vector<const Resident*> exact;  // a GroupQueryAttention's two static buffers
  if (k.node && (k.node->op_type == "Concat" || k.node->op_type == "GroupQueryAttention"))
    for (const Resident& r : plan_.residents)
      if (r.pair.node == k.index) {
        resident = &r;
        if (r.exact) exact.push_back(&r);
      }
  auto resident_slot = [&](int slot) { return slot >= 0 && plan_.resident_at(slot) != nullptr; };
  auto rows_in_place = [&](const KernelRecord& r) {  // a Concat whose new rows their kernel writes
    for (const Resident& res : plan_.residents)
      if (res.pair.node == r.index && res.rows_in_place) return true;
    return false;
  };
  auto fail = [&](const std::string& reason) {
    throw GuardFailed("for these sizes " + node.describe() + " chooses another program than recorded" +
                      (reason.empty() ? "" : " (" + reason + ")"));
  };
  // A kernel is a function of its node's op, attributes and inputs' facts: one this refresh called
  // already on the same (another layer's: a record of the same class) gives the same choices, taken
  // without calling the kernel or copying its programs. (Bindings in an appended buffer alike too:
  // they are pitched below, each with its own buffer's.)
  const int cls = rec_.kernel_class[n];
  const Recalled* same = nullptr;
  for (const Recalled* c : own_calls_) {
    const KernelRecord& r = rec_.kernels[c->n];
    if (rec_.kernel_class[c->n] != cls || r.inputs.size() != k.inputs.size() || r.dispatched != k.dispatched ||
        r.out_slots.size() != k.out_slots.size())
      continue;
    bool alike = rows_in_place(r) == rows_in_place(k);
    for (size_t i = 0; alike && i < k.out_slots.size(); ++i) alike = resident_slot(r.out_slots[i]) == resident_slot(k.out_slots[i]);
    for (size_t i = 0; alike && i < k.inputs.size(); ++i) {
      if (r.inputs[i] < 0 || k.inputs[i] < 0) {
        alike = r.inputs[i] < 0 && k.inputs[i] < 0;
        continue;
      }
      const PlanValue &v = value(r.inputs[i]), &mine = value(k.inputs[i]);
      // (Host feeds alike too where the call read neither's value: GpuKernelContext::value_keyed_inputs.)
      const bool read = std::find(c->values_read.begin(), c->values_read.end(), i) != c->values_read.end();
      const bool fed = feed_.count(r.inputs[i]) != 0;
      alike = mine.dtype == v.dtype && mine.shape == v.shape && alike_constants(mine.constant, v.constant, read) &&
              fed == (feed_.count(k.inputs[i]) != 0) && !(fed && read) && resident_slot(v.slot) == resident_slot(mine.slot);
    }
    if (alike) {
      same = c;
      break;
    }
  }

  Recalled& out = kernels_.emplace_back();
  out.n = n;
  std::optional<webgpu::GpuKernelContext> ctx;
  if (same) {
    // The same choices as `same`'s call, which matched its own record: this record must match that one
    // (programs whose texts are shared compare at once).
    const KernelRecord& r = rec_.kernels[same->n];
    if (!same_choices(k, r.results, r.temps, r.dispatches)) fail("");
    out.like = same;
  } else {
    const webgpu::GpuKernel* kernel = webgpu::gpu_registry().find(node.op_type, node.domain);
    std::vector<webgpu::GpuValueInfo> infos;
    infos.reserve(k.inputs.size());
    for (int id : k.inputs) {
      if (id < 0) {
        infos.push_back({});
        continue;
      }
      const PlanValue& v = value(id);
      auto f = feed_.find(id);
      infos.push_back({v.dtype, v.shape, v.constant, f == feed_.end() ? nullptr : f->second});
    }
    ctx.emplace(node, model_.opset(node.domain), options_.int64, plan_.device->limits(), std::move(infos));
    for (const webgpu::DispatchSpec& d : k.dispatches) ctx->recorded.push_back(&d.program);  // their texts reused
    if (resident) {
      ctx->in_place_input = resident->pair.gqa ? 3 : 0;
      ctx->rows_in_place = resident->rows_in_place;
    }
    std::string reason;
    if (!kernel || !run_kernel(*kernel, *ctx, reason) || (resident && !ctx->in_place_done)) fail(reason);
  }
  const auto& results = ctx ? ctx->outputs : same->results;
  for (const Resident* r : exact)  // a static buffer is the present as it is: another shape plans anew
    if (const RowLayout w = row_layout(results.at(r->pair.node_output).shape, r->axis, int64_t(r->layout.rows));
        w.outer != r->layout.outer || w.inner != r->layout.inner || w.used != r->layout.rows)
      throw GuardFailed("for these sizes " + node.describe() + "'s present " + r->pair.output + " no longer fits its buffer");
  if (resident && exact.empty()) fit(*resident, results.at(0).shape);  // the appended buffer
  if (ctx) {
    if (k.dispatched) pitch(k, *ctx);
    if (!same_choices(k, ctx->outputs, ctx->temps, ctx->dispatches)) fail("");
    out.results = std::move(ctx->outputs);
    out.temps = std::move(ctx->temps);
    out.dispatches = std::move(ctx->dispatches);
    out.values_read = std::move(ctx->constants_read);
    out.values_read.insert(out.values_read.end(), ctx->value_keyed_inputs.begin(), ctx->value_keyed_inputs.end());
    own_calls_.push_back(&out);
  } else {
    out.words = words_.size();
    for (const webgpu::DispatchSpec& d : same->dispatches) pitched_words(k, d, same->results);
  }
  const auto& outputs = out.outputs();
  for (size_t i = 0; i < k.outputs.size() && i < outputs.size(); ++i) {
    const int id = k.outputs[i];
    if (id < 0) continue;
    const PlanValue& was = value(id);
    if (outputs[i].dtype != was.dtype || outputs[i].shape != was.shape)
      change(id, outputs[i].dtype, outputs[i].shape, nullptr, was.slot);
  }
  guarded_.push_back(n);
}

// Applies the refresh: buffers regrown (taken first, so a failure leaves the plan as it was), the
// records, values and folded values replaced, folded values the GPU reads uploaded again, the
// changed kernels' uniforms and workgroup counts written, bind groups of regrown buffers made anew,
// the outputs' shapes and the report.
void Refresh::apply(const std::unordered_map<std::string, Tensor>& feeds,
                    const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  webgpu::Device& dev = *plan_.device;
  const Int64Policy& policy = options_.int64;
  // Recorded folded value -> this refresh's, sorted for lookups.
  std::vector<std::pair<const Tensor*, const Tensor*>> fresh = replaced_;
  std::sort(fresh.begin(), fresh.end());
  auto fresh_of = [&](const Tensor* recorded) -> const Tensor* {
    auto f = std::lower_bound(fresh.begin(), fresh.end(), std::pair<const Tensor*, const Tensor*>{recorded, nullptr});
    return f != fresh.end() && f->first == recorded ? f->second : nullptr;
  };

  // What each buffer must hold now: the most any value it serves needs. Only the values this refresh
  // gave other sizes can need more than a buffer holds (capacities only grow): the inputs, the kernels
  // called again, the folded values computed anew.
  std::vector<uint64_t> need(plan_.slots.size(), 0);
  auto needs = [&](int slot, DType dtype, const Shape& shape) {
    if (slot >= 0) need[size_t(slot)] = std::max(need[size_t(slot)], gpu_bytes(dtype, shape, policy));
  };
  for (const auto& [name, slot] : plan_.inputs) {
    auto h = feeds.find(name);
    if (h != feeds.end()) needs(slot, h->second.dtype(), h->second.shape());
    else needs(slot, device_feeds.at(name).dtype(), device_feeds.at(name).shape());
  }
  for (const Recalled& r : kernels_) {
    const KernelRecord& k = rec_.kernels[r.n];
    const auto& results = r.outputs();
    const auto& temps = r.temporaries();
    for (size_t i = 0; i < k.out_slots.size(); ++i)
      if (results[i].alias_of < 0) needs(k.out_slots[i], results[i].dtype, results[i].shape);
    for (size_t t = 0; t < temps.size(); ++t) needs(k.temp_slots[t], temps[t].dtype, temps[t].shape);
    for (size_t u = 0; u < k.unwanted.size(); ++u) {
      const auto& o = results[k.unwanted[u]];
      needs(k.temp_slots[temps.size() + u], o.dtype, o.shape);
    }
  }
  for (const auto& [slot, t] : rec_.constant_uploads)
    if (const Tensor* f = fresh_of(t)) needs(slot, t->dtype(), f->shape());
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
  for (int id : changed_ids_) {
    PlanValue& v = values_[size_t(id)];
    // A folded value that came out different: the recorded tensor (this id's) takes the fresh value below.
    if (v.constant) v.constant = rec.values[size_t(id)].constant;
    std::swap(rec.values[size_t(id)], v);  // (the scratch keeps the storage)
  }
  for (auto& [was, now] : replaced_) const_cast<Tensor&>(*was) = *now;
  for (const auto& [slot, t] : rec.constant_uploads)
    if (regrown.count(slot) || fresh_of(t)) p.upload(slot, *t, policy, "a folded value");
  // The records take the new sizes, uniforms and workgroup counts; their programs stay (the guards
  // found them the same). A record whose choices were taken from another's adopts that one's
  // programs once, so that their texts are shared and the next refreshes compare them at once. A
  // profiled session's records take the new programs, whose tensors' sizes the profile reads.
  if (!kernels_.empty()) {
    Step& step = p.steps.at(0);
    for (Recalled& r : kernels_) {
      KernelRecord& k = rec.kernels[r.n];
      size_t at = r.words;  // (taken or re-pitched: the next dispatch's words)
      for (size_t j = 0; j < k.dispatches.size(); ++j) {
        webgpu::DispatchSpec& spec = k.dispatches[j];
        const webgpu::DispatchSpec& now = r.dispatch(j);
        const size_t size = now.uniforms.size();
        const uint32_t* u = r.like || r.self ? words_.data() + at : now.uniforms.data();
        at += size;
        if (k.dispatched) {
          RecordedDispatch& d = step.dispatches.at(k.first_dispatch + j);
          std::memcpy(step.uniform_data.data() + d.uniform_offset / 4 + 1, u + 1, (size - 1) * 4);
          d.x = now.x;
          d.y = now.y;
          d.z = now.z;
        }
        spec.uniforms.assign(u, u + size);
        spec.x = now.x;
        spec.y = now.y;
        spec.z = now.z;
        if (options_.profile) spec.program = now.program;
        else if (r.like) {
          const webgpu::DispatchSpec& theirs = rec.kernels[r.like->n].dispatches[j];
          if (!spec.program.shares_text(theirs.program)) spec.program = theirs.program;
        }
      }
      k.results = r.outputs();
      k.temps = r.temporaries();
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

  // The report: the input dims that took other sizes (kept sorted; most refreshes find none new), the
  // nodes whose kernel choice is guarded.
  std::vector<std::string>& dims = p.report.symbolic_dims;
  const size_t known = dims.size();
  auto note_dims = [&](const std::string& name, const Shape& shape) {
    const Shape& first = p.input_shapes.at(name);
    for (size_t d = 0; d < shape.size() && d < first.size(); ++d) {
      if (shape[d] == first[d]) continue;
      std::string dim = name + "[" + std::to_string(d) + "]";
      if (!std::binary_search(dims.begin(), dims.begin() + std::ptrdiff_t(known), dim)) dims.push_back(std::move(dim));
    }
  };
  for (const auto& [name, t] : feeds) note_dims(name, t.shape());
  for (const auto& [name, t] : device_feeds) note_dims(name, t.shape());
  if (dims.size() > known) {
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  }
  rec.guarded.resize(rec.kernels.size(), 0);
  std::vector<std::string> fresh_guards;
  for (size_t n : guarded_)
    if (!rec.guarded[n]) {
      rec.guarded[n] = 1;
      const KernelRecord& k = rec.kernels[n];
      fresh_guards.push_back(node_label(k.node ? *k.node : k.fused));
    }
  if (!fresh_guards.empty()) {
    std::set<std::string> guarded(p.report.guarded_nodes.begin(), p.report.guarded_nodes.end());
    guarded.insert(fresh_guards.begin(), fresh_guards.end());
    p.report.guarded_nodes.assign(guarded.begin(), guarded.end());
  }
}

}  // namespace onnxgpu::runtime
