#include "runtime/replay.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "core/switches.h"
#include "cpu/graph_runner.h"
#include "runtime/gpu_values.h"
#include "runtime/shared_device.h"
#include "webgpu/shader/program.h"

namespace onnxgpu::runtime {

namespace {

constexpr size_t kFirstChunk = 8;  // dispatches of a segment's first submit
constexpr uint64_t kReadWithRun = 4 << 20;  // run_on_device: output bytes read back with the run

// $ONNXGPU_CHUNKED_SUBMITS=0 submits each segment at once (for measuring what chunking buys).
bool chunked_submits() {
  static const bool on = switched_on("ONNXGPU_CHUNKED_SUBMITS");
  return on;
}

// $ONNXGPU_ENCODE_AHEAD=0: no encoding ahead (for measuring what it buys).
bool encoding_ahead() {
  static const bool on = switched_on("ONNXGPU_ENCODE_AHEAD");
  return on;
}

// $ONNXGPU_EARLY_START=0: a run encoded ahead is submitted whole in finish() (for measuring what
// Replay::start buys).
bool early_start() {
  static const bool on = switched_on("ONNXGPU_EARLY_START");
  return on;
}

// The message of a node's status record (shader::kStatusWords words).
std::string status_message(const uint32_t* record) {
  const uint32_t flags = record[0];
  std::string m;
  if (flags & webgpu::shader::kFlagIndex) {
    m += "an index is out of range";
    if (record[1]) m += " (index " + std::to_string(int64_t(uint64_t(record[2]) | uint64_t(record[3]) << 32)) + ")";
    m += "; ";
  }
  if (flags & webgpu::shader::kFlagDivZero) m += "integer division by zero; ";
  if (flags & webgpu::shader::kFlagOverflow) m += "an INT64 value does not fit in int32 (INT64 strategy cast_to_i32); ";
  if (m.size() >= 2) m.resize(m.size() - 2);
  return m;
}

}  // namespace

namespace {

// Encodes the segment's dispatches into `batch` in doubling chunks (kFirstChunk, twice that, ...):
// chunk_end(last) runs after each chunk's last dispatch, `last` for the segment's end.
template <typename ChunkEnd>
void encode_chunks(webgpu::CommandBatch& batch, const Step& segment, ChunkEnd&& chunk_end) {
  size_t chunk = kFirstChunk, next_end = kFirstChunk;
  const size_t n = segment.dispatches.size();
  for (size_t k = 0; k < n; ++k) {
    const RecordedDispatch& d = segment.dispatches[k];
    batch.dispatch(*d.pipeline, d.group.get(), d.x, d.y, d.z);
    if (k + 1 == next_end || k + 1 == n) {
      chunk_end(k + 1 == n);
      chunk *= 2;
      next_end += chunk;
    }
  }
}

EncodedAhead::Key key_of(const RecordedDispatch& d) { return {d.pipeline->get(), d.group.get(), d.x, d.y, d.z}; }

}  // namespace

webgpu::CommandBatch ChunkedEncoder::encode(Plan& plan, const Step& segment) {
  webgpu::Device& dev = *plan.device;
  webgpu::CommandBatch batch = dev.batch();
  const bool chunked = chunked_submits();
  encode_chunks(batch, segment, [&](bool last) {
    if (!last && chunked) dev.submit(batch);  // the last chunk goes back to the caller, unsubmitted
  });
  return batch;
}

void ChunkedEncoder::encode_ahead(Plan& plan, size_t step) {
  plan.ahead.clear();
  if (!chunked_submits() || !encoding_ahead()) return;
  webgpu::Device& dev = *plan.device;
  const Step& segment = plan.steps[step];
  webgpu::CommandBatch batch = dev.batch();
  encode_chunks(batch, segment, [&](bool) { plan.ahead.chunks.push_back(dev.finish(batch)); });
  plan.ahead.keys.reserve(segment.dispatches.size());
  for (const RecordedDispatch& d : segment.dispatches) plan.ahead.keys.push_back(key_of(d));
  plan.ahead.step = step;
}

namespace {
// Whether what was encoded ahead is still what the segment records.
bool still_recorded(const EncodedAhead& a, const Step& segment, size_t step) {
  bool same = !a.empty() && a.step == step && a.keys.size() == segment.dispatches.size();
  for (size_t k = 0; same && k < a.keys.size(); ++k) same = a.keys[k] == key_of(segment.dispatches[k]);
  return same;
}
}  // namespace

bool ChunkedEncoder::start_ahead(Plan& plan, size_t step) {
  EncodedAhead& a = plan.ahead;
  if (a.submitted || !still_recorded(a, plan.steps[step], step)) return false;
  plan.device->submit(std::move(a.chunks[0]));
  a.submitted = 1;
  return true;
}

bool ChunkedEncoder::submit_ahead(Plan& plan, size_t step) {
  EncodedAhead& a = plan.ahead;
  // Started: the plan has not changed since (start() and finish() of one run).
  const bool same = a.submitted ? a.step == step : still_recorded(a, plan.steps[step], step);
  // One submit a chunk, as encode() does: Dawn translates a command buffer at its submit, so the GPU
  // starts on the first chunk while the host translates the next.
  for (size_t c = a.submitted; same && c < a.chunks.size(); ++c) plan.device->submit(std::move(a.chunks[c]));
  a.clear();  // a command buffer is submitted once; stale ones are dropped
  return same;
}

void write_inputs(Plan& plan, const Int64Policy& policy, const std::unordered_map<std::string, Tensor>& host,
                  const std::unordered_map<std::string, DeviceTensor>& device) {
  webgpu::Device& dev = *plan.device;
  webgpu::CommandBatch batch = dev.batch();
  for (const auto& [name, slot] : plan.inputs) {
    if (plan.resident_at(slot)) continue;  // below
    auto h = host.find(name);
    if (h != host.end()) {
      plan.upload(slot, h->second, policy, name);
      continue;
    }
    copy_device_tensor(batch, device.at(name), plan.slots[size_t(slot)].buffer->get());
  }
  prepare_residents(plan, device, host, policy, batch);
  std::vector<uint32_t> zeros(plan.status->capacity / 4, 0);
  dev.write(plan.status->get(), zeros.data(), zeros.size() * 4);
  if (!batch.empty()) dev.submit(batch);
}

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
      held.push_back(plan.download(v.slot, v.dtype, v.shape, policy));
      t = &held.back();
    }
    if (i < s.explicit_inputs) ins.push_back(t);
    else if (t) scope.set(v.name, *t);
  }
  return cpu::run_node(*s.node, model.opsets, ins, &scope);
}

void Replay::run_cpu(const Step& s) {
  std::vector<Tensor> outs = run_cpu_step(s, plan_, model_, policy_);
  for (size_t k = 0; k < s.outputs.size(); ++k) {
    const StepValue& v = s.outputs[k];
    if (v.slot < 0) continue;
    if (k >= outs.size() || !outs[k].defined())
      throw Error(s.node->describe() + ": the CPU kernel did not produce output '" + v.name + "'");
    if (outs[k].dtype() != v.dtype || outs[k].shape() != v.shape) throw ReplanNeeded();
    plan_.upload(v.slot, outs[k], policy_, v.name);
  }
}

Replay::~Replay() {
  if (plan_.ahead.submitted) plan_.ahead.clear();
}

void Replay::start() {
  if (early_start() && one_gpu_segment()) encoder_.start_ahead(plan_, 0);
}

void Replay::run(size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) {
    const Step& s = plan_.steps[i];
    if (s.cpu) {
      run_cpu(s);
      continue;
    }
    webgpu::CommandBatch batch = encoder_.encode(plan_, s);
    plan_.device->submit(batch);
  }
}

void Replay::finish(size_t from, const std::function<void(webgpu::CommandBatch&)>& copies,
                    std::vector<webgpu::ReadRequest>& reads) {
  webgpu::Device& dev = *plan_.device;
  const size_t nodes = model_.graph.nodes.size();
  std::vector<uint32_t> status((nodes + 1) * webgpu::shader::kStatusWords, 0);  // a record per node
  reads.push_back({plan_.status->get(), 0, status.size() * 4, status.data()});
  // The last step, when it is a GPU segment, carries the copies and readbacks in its own submit.
  const size_t end = plan_.steps.size();
  const bool gpu_last = end > from && !plan_.steps[end - 1].cpu;
  run(from, gpu_last ? end - 1 : end);
  // A whole plan that is one GPU segment may have been encoded ahead, during the last run's wait.
  const bool one_segment = from == 0 && one_gpu_segment();
  webgpu::CommandBatch batch = dev.batch();
  submitted_ahead_ = one_segment && encoder_.submit_ahead(plan_, 0);
  if (gpu_last && !submitted_ahead_) batch = encoder_.encode(plan_, plan_.steps[end - 1]);
  copies(batch);
  std::function<void()> ahead;
  if (one_segment && next_)
    ahead = [this] {
      if (next_()) encoder_.encode_ahead(plan_, 0);
    };
  dev.submit_and_read(batch, reads, ahead);
  for (size_t d = 0; d < nodes; ++d)
    if (const uint32_t* record = &status[d * webgpu::shader::kStatusWords]; record[0])
      throw InvalidArgument(model_.graph.nodes[d].describe() + " on the GPU: " + status_message(record));
}

std::vector<Tensor> Replay::finish_on_host(size_t from) {
  const std::vector<OutputSource> sources = plan_.outputs;  // this run's (the wait may refresh the plan)
  const size_t n = sources.size();
  std::vector<std::optional<HostLanding>> landing(n);  // where each output's bytes are read to
  std::vector<webgpu::ReadRequest> reads;
  for (size_t k = 0; k < n; ++k) {
    const OutputSource& o = sources[k];
    if (o.slot < 0 || plan_.resident_at(o.slot)) continue;  // a resident buffer is read packed, after
    size_t bytes = gpu_bytes(o.dtype, o.shape, policy_);
    landing[k].emplace(o.dtype, o.shape, bytes, policy_, &plan_.landings, k);
    if (bytes) reads.push_back({plan_.slots[size_t(o.slot)].buffer->get(), 0, bytes, landing[k]->dst()});
  }
  finish(from, [](webgpu::CommandBatch&) {}, reads);
  std::vector<Tensor> outputs;
  for (size_t k = 0; k < n; ++k) {
    const OutputSource& o = sources[k];
    if (o.constant) outputs.push_back(o.constant->clone());
    else if (plan_.resident_at(o.slot)) outputs.push_back(plan_.download(o.slot, o.dtype, o.shape, policy_));
    else outputs.push_back(landing[k]->host());
  }
  return outputs;
}

std::vector<DeviceTensor> Replay::finish_on_device(size_t from) {
  webgpu::Device& dev = *plan_.device;
  const std::vector<OutputSource> sources = plan_.outputs;  // this run's (the wait may refresh the plan)
  // Each appended buffer's newest present: this run's, set on the buffer it writes.
  std::vector<std::pair<std::shared_ptr<DeviceTensor::Storage>, int64_t>> filled;
  for (const Resident& r : plan_.residents)
    filled.emplace_back(r.storage, sources.at(r.pair.output_index).shape.at(size_t(r.axis)));
  std::vector<std::shared_ptr<DeviceTensor::Storage>> kept;
  // Small outputs are also read back in the run's own wait (with the status records), so that reading
  // one (a decode step's logits) costs no second round trip; up to kReadWithRun bytes in all.
  std::vector<webgpu::ReadRequest> reads;
  std::vector<std::pair<size_t, HostLanding>> read_with_run;  // (output, where its bytes are read to)
  read_with_run.reserve(plan_.outputs.size());
  uint64_t read_bytes = 0;
  auto copy_outputs = [&](webgpu::CommandBatch& batch) {  // each output into a buffer of its own
    for (const OutputSource& o : sources) {
      if (const Resident* r = plan_.resident_at(o.slot)) {  // handed out as it lies: no copy
        kept.push_back(r->storage);
        continue;
      }
      auto st = std::make_shared<DeviceTensor::Storage>();
      st->device = plan_.device;
      st->policy = policy_;
      uint64_t bytes = gpu_bytes(o.dtype, o.shape, policy_);
      st->buffer = dev.acquire(std::max<uint64_t>(bytes, kMinBinding));
      if (o.constant) {
        GpuUpload u = to_gpu(*o.constant, policy_, "output");
        if (u.bytes) dev.write(st->buffer.get(), u.data, u.bytes);
      } else if (bytes) {
        WGPUBuffer slot = plan_.slots[size_t(o.slot)].buffer->get();
        batch.copy(slot, 0, st->buffer.get(), 0, (bytes + 3) / 4 * 4);
        if (read_bytes + bytes <= kReadWithRun) {
          read_bytes += bytes;
          auto& [k, landing] = read_with_run.emplace_back(
              kept.size(), HostLanding(o.dtype, o.shape, bytes, policy_, &plan_.landings, kept.size()));
          reads.push_back({slot, 0, bytes, landing.dst()});
        }
      }
      kept.push_back(st);
    }
  };
  finish(from, copy_outputs, reads);
  for (auto& [k, landing] : read_with_run) kept[k]->host = std::make_shared<const Tensor>(landing.host());
  for (auto& [storage, rows] : filled) storage->filled = rows;
  std::vector<DeviceTensor> outputs;
  for (size_t k = 0; k < sources.size(); ++k) outputs.emplace_back(sources[k].dtype, sources[k].shape, kept[k]);
  return outputs;
}

}  // namespace onnxgpu::runtime
