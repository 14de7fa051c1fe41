// onnxgpu decode MODEL --steps N --past-start P0 [--start-token T] [--prompt L] [engine flags] [--check] [--json]
//
// A greedy generation loop on a decode-step model with its KV cache as inputs and outputs, the same
// loop as ort_peer's --decode-loop (/work/shared/peer/README.md, "Decode loop"), so the two engines
// can be set side by side:
//   inputs  input_ids int64 [1, seq], position_ids int64 [1, seq] (optional), past_<x> [.., past_seq, D]
//   outputs logits (else the first output not named present_*), present_<x> [.., past_seq + seq, D]
// past_<x> pairs with present_<x>; the sequence axis is the past's rank - 2; other symbolic dims are 1.
// GenAI-style decoders (ONNX Runtime's model builder, bench/make_genai.py) are taken too: inputs input_ids,
// attention_mask int64 [1, total], past_key_values.<x> (pairs with present.<x>), and, where the model has it,
// position_ids. Their KV cache is a static buffer of --max-len M positions (default: the loop's last length),
// as GenAI runs it with graph capture: every past is [.., M, D] (step 0: zeros), every present as long, the
// step's token written at its position in the buffer (GroupQueryAttention's seqlens_k), and the mask is
// [1, M], ones for the first past + seq positions and zeros after. Every step thus has the same shapes and
// replays one recording; only input_ids and the mask (and position_ids) are uploaded per step.
// Step k feeds past length P0 + k at position P0 + k. Step 0's past is zeros of length P0, uploaded from
// the host; every later step's past is the previous step's presents, which stay on the GPU
// (Session::run_on_device: DeviceTensors fed back as device_feeds, never read to the host). Only the
// logits are read back, every step, for the greedy argmax that becomes the next input_ids.
// --prompt L first runs a prefill of L tokens (T, T+1, ... mod vocab) at positions P0..P0+L-1 from the
// zero past P0; its time is the first-token time, and the loop then starts from its presents.
// --prefills L1,L2,... runs before that prefills of these lengths, each a new conversation from the zero
// past P0 (the first plans, the later ones refresh that plan for their length: a prompt of a new length),
// reporting each one's time and host time planning or refreshing.
// A step's time covers run_on_device + the logits readback (ep cpu: Session::run), as ort_peer's covers its
// run and readback; the argmax and the record's copy of the last row come after it. Per step
// the plan report says whether it replayed a recording, and whether that recording was refreshed for the
// step's new sizes (a plan serving a shape family) or planned anew, with the host time spent planning.
// --check runs the same loop again, untimed, on a reference session (the CPU EP, or WebGPU without
// capture: --check-ref), fed the same tokens, and compares every step's logits and argmax; a mismatch
// is an error (exit 1) after the report.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "dawn_counters.h"

namespace onnxgpu::tools {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct DecodeFlags {
  std::string model;
  EngineFlags engine;
  int steps = 16;
  int64_t past_start = 1;
  int64_t start_token = 0;
  int64_t prompt = 0;
  std::vector<int64_t> prefills;  // --prefills: lengths of prefills run first, each from the zero past
  double time_limit_s = 0;  // 0: none
  bool check = false;
  std::string check_ref = "cpu";
  double rtol = 1e-3, atol = 1e-4;
  bool json = false;
  int64_t max_len = 0;  // GenAI-style: the static KV buffer's length (0: the loop's last length)
  int profile_steps = 0;  // > 0: every dispatch timed (GPU timestamps) over the loop's last N steps
  int profile_nodes = 15;
};

// Which inputs and outputs play which part (as ort_peer's decode_io).
struct DecodeIo {
  std::string ids, pos;             // pos "" when the model has no position_ids
  std::string mask;                 // GenAI-style: attention_mask (the static buffer's mask), else ""
  std::vector<std::string> pasts;   // past_<x>, in graph order
  std::vector<size_t> present_of;   // per past: index of present_<x> among the outputs
  size_t logits = 0;                // index among the outputs
  std::vector<Shape> past_shapes;   // with the sequence axis set per step
  std::vector<DType> past_dtypes;
  size_t seq_axis = 0;
};

DecodeIo decode_io(const Session& s) {
  DecodeIo d;
  const auto& outs = s.outputs();
  auto output_index = [&](const std::string& name) -> std::optional<size_t> {
    for (size_t j = 0; j < outs.size(); ++j)
      if (outs[j].name == name) return j;
    return std::nullopt;
  };
  for (const auto& in : s.inputs()) {
    if (in.name == "input_ids") {
      d.ids = in.name;
    } else if (in.name == "position_ids") {
      d.pos = in.name;
    } else if (in.name == "attention_mask") {
      d.mask = in.name;
      if (in.dtype != DType::Int64) throw InvalidArgument("decode: input 'attention_mask' must be int64");
    } else if (in.name.rfind("past_", 0) == 0) {
      const bool genai = in.name.rfind("past_key_values.", 0) == 0;
      std::string want = genai ? "present." + in.name.substr(16) : "present_" + in.name.substr(5);
      auto j = output_index(want);
      if (!j) throw InvalidArgument("decode: input '" + in.name + "' has no output '" + want + "'");
      if (!in.has_shape || in.shape.size() < 2)
        throw InvalidArgument("decode: input '" + in.name + "' must be a tensor of known rank >= 2");
      if (!d.pasts.empty() && in.shape.size() != d.past_shapes[0].size())
        throw InvalidArgument("decode: past inputs differ in rank ('" + in.name + "' and '" + d.pasts[0] + "')");
      d.pasts.push_back(in.name);
      d.present_of.push_back(*j);
      Shape shape = in.shape;
      for (auto& v : shape) v = v < 0 ? 1 : v;  // other symbolic dims (batch) are 1
      d.past_shapes.push_back(shape);
      d.past_dtypes.push_back(in.dtype);
    } else {
      throw InvalidArgument("decode: input '" + in.name + "' is not input_ids, position_ids, attention_mask or past_*");
    }
    if ((in.name == "input_ids" || in.name == "position_ids") && in.dtype != DType::Int64)
      throw InvalidArgument("decode: input '" + in.name + "' must be int64, the model declares " +
                            std::string(dtype_name(in.dtype)));
  }
  if (d.ids.empty()) throw InvalidArgument("decode: the model has no input 'input_ids'");
  if (d.pasts.empty()) throw InvalidArgument("decode: the model has no past_* inputs");
  if (!d.mask.empty() && d.pasts[0].rfind("past_key_values.", 0) != 0)
    throw InvalidArgument("decode: attention_mask is taken with GenAI-style pasts (past_key_values.N.key/value)");
  d.seq_axis = d.past_shapes[0].size() - 2;
  auto lg = output_index("logits");
  if (!lg)
    for (size_t j = 0; j < outs.size() && !lg; ++j)
      if (outs[j].name.rfind("present_", 0) != 0 && outs[j].name.rfind("present.", 0) != 0) lg = j;
  if (!lg) throw InvalidArgument("decode: the model has no logits output");
  d.logits = *lg;
  return d;
}

// Bytes of the model's initializers (the weights one token reads at least once), from the dims: no
// tensor data is decoded, and external data is counted without being read.
uint64_t initializer_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InvalidArgument("decode: cannot read model '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  onnx::ModelProto mp;
  if (!mp.ParseFromString(ss.str())) throw InvalidArgument("decode: '" + path + "' is not an ONNX model");
  uint64_t bytes = 0;
  for (const auto& t : mp.graph().initializer()) {
    uint64_t n = 1;
    for (auto d : t.dims()) n *= uint64_t(d);
    bytes += n * dtype_size(DType(t.data_type()));
  }
  return bytes;
}

// The last position's row of the logits [.., seq, vocab] as floats.
std::vector<float> last_logits_row(const Tensor& t, const std::string& name) {
  if (t.dtype() != DType::Float32)
    throw InvalidArgument("decode: logits '" + name + "' are " + std::string(dtype_name(t.dtype())) +
                          ", only float32 is read");
  if (t.rank() < 1 || t.numel() == 0) throw InvalidArgument("decode: logits '" + name + "' are empty");
  const int64_t v = t.dim(t.rank() - 1);
  const float* p = t.data<float>() + (t.numel() - v);
  return {p, p + v};
}

int64_t argmax(const std::vector<float>& row) {
  return int64_t(std::max_element(row.begin(), row.end()) - row.begin());  // first maximum, like ort_peer
}

struct StepRecord {
  double ms = 0;
  int64_t token = 0;     // fed at this step
  int64_t past = 0;      // past length fed
  int64_t seq = 0;       // tokens fed
  bool replayed = false, captured = false;
  bool refreshed = false;  // the plan was re-derived for this step's sizes (a shape family), then replayed
  double plan_ms = 0;      // host time the step spent planning or refreshing (0: a plain replay)
  bool refreshed_ahead = false;  // ... refreshed during the step before's wait (plan_ms 0), in that much time:
  double refresh_ahead_ms = 0;
  int appended_in_place = 0;  // presents fed back whose past the step found in place (no copy)
  int dispatches = 0;
  double wait_ms = 0;    // host time blocked in wgpuInstanceWaitAny (webgpu; the GPU work and the readback)
  double submit_ms = 0;  // host time in wgpuQueueSubmit (Dawn's translation of the commands)
  double write_ms = 0;   // host time writing inputs and uniforms
  // The step's timeline from its start (webgpu): its first submit, and the last wait's start and end.
  double first_submit_at = 0, wait_begin_at = 0, wait_end_at = 0;
  std::vector<float> logits;  // last position's row
};

struct LoopResult {
  std::vector<StepRecord> prefills;  // --prefills
  std::optional<StepRecord> prefill;
  std::vector<StepRecord> steps;
  bool time_limited = false;
  PlanReport last_plan;
  Shape present_shape;
  std::vector<EntryTime> dawn_before_timed;  // $ONNXGPU_COUNT_DAWN=1: Dawn's entry times before step 2
};

// GenAI-style: the static KV buffer's length, --max-len or the loop's last length.
int64_t static_max_len(const DecodeFlags& f) {
  int64_t need = f.past_start + f.prompt + f.steps;
  for (int64_t n : f.prefills) need = std::max(need, f.past_start + n);
  if (f.max_len > 0 && f.max_len < need)
    throw InvalidArgument("decode: --max-len " + std::to_string(f.max_len) + " is shorter than the loop's " +
                          std::to_string(need) + " positions (past start + prompt + steps)");
  return f.max_len > 0 ? f.max_len : need;
}

// One generation loop on `s`. forced: tokens to feed (a reference loop), else start token then argmax.
LoopResult run_loop(Session& s, const DecodeIo& d, const DecodeFlags& f, const LoopResult* forced) {
  const bool on_device = s.options().ep == "webgpu";
  LoopResult r;
  auto ids_tensor = [](const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>({1, int64_t(v.size())}, v); };
  auto pos_tensor = [](int64_t p0, int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = p0 + i;
    return Tensor::from_vector<int64_t>({1, n}, v);
  };
  // Step 0's past: zeros of length P0 (GenAI-style: the static buffer's M), from the host.
  const bool genai = !d.mask.empty();
  const int64_t max_len = genai ? static_max_len(f) : 0;
  std::unordered_map<std::string, Tensor> host_past;
  for (size_t k = 0; k < d.pasts.size(); ++k) {
    Shape shape = d.past_shapes[k];
    shape[d.seq_axis] = genai ? max_len : f.past_start;
    host_past[d.pasts[k]] = Tensor(d.past_dtypes[k], shape);  // zero-filled
  }
  // GenAI-style: the static mask [1, M], ones for the first `total` positions.
  auto mask_tensor = [max_len](int64_t total) {
    std::vector<int64_t> v(static_cast<size_t>(max_len), 0);
    for (int64_t i = 0; i < total && i < max_len; ++i) v[size_t(i)] = 1;
    return Tensor::from_vector<int64_t>({1, max_len}, v);
  };
  std::unordered_map<std::string, DeviceTensor> dev_past;  // webgpu: the previous presents
  std::unordered_map<std::string, Tensor> cpu_past;        // cpu: the previous presents
  bool first = true;
  auto t_loop = Clock::now();

  // One step: tokens at positions past..past+n-1; returns its record, and moves the presents into the pasts.
  auto step = [&](const std::vector<int64_t>& tokens, int64_t past) {
    StepRecord rec;
    rec.token = tokens.back();
    rec.past = past;
    rec.seq = int64_t(tokens.size());
    std::unordered_map<std::string, Tensor> feeds;
    const DawnCounters before = counted();
    mark_step();
    auto t0 = Clock::now();
    feeds[d.ids] = ids_tensor(tokens);
    if (!d.pos.empty()) feeds[d.pos] = pos_tensor(past, int64_t(tokens.size()));
    if (genai) {
      if (past + int64_t(tokens.size()) > max_len)
        throw InvalidArgument("decode: past " + std::to_string(past) + " + " + std::to_string(tokens.size()) +
                              " tokens exceed the static KV buffer's " + std::to_string(max_len) + " positions (--max-len)");
      feeds[d.mask] = mask_tensor(past + int64_t(tokens.size()));
    }
    Tensor logits;
    if (on_device) {
      if (first)
        for (const auto& [n, t] : host_past) feeds[n] = t;
      static const std::unordered_map<std::string, DeviceTensor> kNone;
      std::vector<DeviceTensor> outs = s.run_on_device(feeds, first ? kNone : dev_past);
      logits = outs[d.logits].to_host();
      for (size_t k = 0; k < d.pasts.size(); ++k) dev_past[d.pasts[k]] = outs[d.present_of[k]];
      r.present_shape = outs[d.present_of[0]].shape();
    } else {
      for (size_t k = 0; k < d.pasts.size(); ++k) feeds[d.pasts[k]] = first ? host_past[d.pasts[k]] : cpu_past[d.pasts[k]];
      std::vector<Tensor> outs = s.run(feeds);
      logits = outs[d.logits];
      for (size_t k = 0; k < d.pasts.size(); ++k) cpu_past[d.pasts[k]] = outs[d.present_of[k]];
      r.present_shape = outs[d.present_of[0]].shape();
    }
    rec.ms = ms_since(t0);
    rec.logits = last_logits_row(logits, s.outputs()[d.logits].name);
    rec.wait_ms = counted().wait_ms - before.wait_ms;
    rec.submit_ms = counted().submit_ms - before.submit_ms;
    rec.write_ms = counted().write_ms - before.write_ms;
    if (const DawnCounters& c = counted(); c.submitted && c.waited) {
      auto at = [&](Clock::time_point t) { return std::chrono::duration<double, std::milli>(t - t0).count(); };
      rec.first_submit_at = at(c.first_submit);
      rec.wait_begin_at = at(c.last_wait_begin);
      rec.wait_end_at = at(c.last_wait_end);
    }
    first = false;
    PlanReport plan = s.last_plan();
    rec.replayed = plan.replayed;
    rec.captured = plan.captured;
    rec.refreshed = plan.refreshed;
    rec.plan_ms = plan.plan_ms;
    rec.refreshed_ahead = plan.refreshed_ahead;
    rec.refresh_ahead_ms = plan.refresh_ahead_ms;
    rec.appended_in_place = plan.appended_in_place;
    rec.dispatches = plan.dispatches;
    r.last_plan = std::move(plan);
    return rec;
  };

  int64_t past = f.past_start;
  int64_t next = f.start_token;
  // A prompt of n tokens: start token, +1, ... modulo the vocabulary (the logits' last dim, when the model
  // declares it).
  const TensorInfo& lg = s.outputs()[d.logits];
  const int64_t vocab = lg.has_shape && !lg.shape.empty() && lg.shape.back() > 0 ? lg.shape.back()
                                                                                  : std::numeric_limits<int64_t>::max();
  auto prompt_of = [&](int64_t n) {
    std::vector<int64_t> prompt(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) prompt[size_t(i)] = (f.start_token + i) % vocab;
    return prompt;
  };
  for (int64_t n : f.prefills) {
    first = true;  // a new conversation: the zero past from the host
    r.prefills.push_back(step(prompt_of(n), past));
  }
  first = true;
  if (f.prompt > 0) {
    r.prefill = step(prompt_of(f.prompt), past);
    past += f.prompt;
    next = forced && !forced->steps.empty() ? forced->steps[0].token : argmax(r.prefill->logits);
  }
  for (int k = 0; k < f.steps; ++k) {
    if (!forced && f.profile_steps > 0 && k == std::max(0, f.steps - f.profile_steps)) s.reset_profile();
    if (forced) {
      if (size_t(k) >= forced->steps.size()) break;
      next = forced->steps[size_t(k)].token;
    } else if (k > 0 && f.time_limit_s > 0 && ms_since(t_loop) > f.time_limit_s * 1000.0) {
      r.time_limited = true;
      break;
    }
    if (k == 1) r.dawn_before_timed = dawn_entry_times();
    StepRecord rec = step({next}, past + k);
    next = argmax(rec.logits);
    r.steps.push_back(std::move(rec));
  }
  return r;
}

nlohmann::json stats(std::vector<double> v) {
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  size_t n = v.size();
  double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {{"median", median}, {"min", v.front()}, {"max", v.back()}, {"mean", sum / double(n)}, {"n", n}};
}

struct CheckResult {
  bool allclose = true, argmax_match = true;
  double max_abs = 0, max_rel = 0;
  int64_t n_mismatch = 0;
  int steps_compared = 0;
  int first_bad_step = -1;  // -1 prefill, 0.. steps; only meaningful when !allclose || !argmax_match
  std::string first_bad;
};

CheckResult compare_loops(const LoopResult& a, const LoopResult& ref, double atol, double rtol) {
  CheckResult c;
  auto one = [&](const StepRecord& x, const StepRecord& y, int k) {
    c.steps_compared++;
    bool ok = x.logits.size() == y.logits.size();
    for (size_t i = 0; ok && i < x.logits.size(); ++i) {
      double d = std::fabs(double(x.logits[i]) - double(y.logits[i]));
      bool bad = !(d <= atol + rtol * std::fabs(double(y.logits[i])));
      c.max_abs = std::max(c.max_abs, d);
      if (y.logits[i] != 0) c.max_rel = std::max(c.max_rel, d / std::fabs(double(y.logits[i])));
      if (bad) {
        c.n_mismatch++;
        if (c.allclose) {
          c.allclose = false;
          c.first_bad_step = k;
          std::ostringstream m;
          m << "step " << k << " (past " << x.past << "): logit " << i << " is " << x.logits[i] << ", the reference "
            << y.logits[i];
          c.first_bad = m.str();
        }
      }
    }
    if (!ok) {
      c.allclose = false;
      if (c.first_bad.empty()) c.first_bad = "step " + std::to_string(k) + ": logits of different sizes";
    }
    if (argmax(x.logits) != argmax(y.logits)) {
      if (c.argmax_match && c.allclose) {
        c.first_bad_step = k;
        c.first_bad = "step " + std::to_string(k) + ": argmax " + std::to_string(argmax(x.logits)) + ", the reference " +
                      std::to_string(argmax(y.logits));
      }
      c.argmax_match = false;
    }
  };
  if (a.prefill && ref.prefill) one(*a.prefill, *ref.prefill, -1);
  for (size_t k = 0; k < a.steps.size() && k < ref.steps.size(); ++k) one(a.steps[k], ref.steps[k], int(k));
  if (a.steps.size() != ref.steps.size()) {
    c.allclose = false;
    c.first_bad = "the reference ran " + std::to_string(ref.steps.size()) + " steps, the loop " + std::to_string(a.steps.size());
  }
  return c;
}

void decode_command(const DecodeFlags& f) {
  if (f.steps < 1) throw CLI::ValidationError("--steps", "must be >= 1");
  if (f.past_start < 0) throw CLI::ValidationError("--past-start", "must be >= 0");
  if (f.prompt < 0) throw CLI::ValidationError("--prompt", "must be >= 0");
  for (int64_t n : f.prefills)
    if (n < 1) throw CLI::ValidationError("--prefills", "lengths must be >= 1");
  SessionOptions options = f.engine.options();
  const bool gpu = options.ep == "webgpu";
  if (gpu) install_counting_hooks();
  if (f.profile_steps > 0) {
    if (!gpu) throw CLI::ValidationError("--profile", "needs the webgpu execution provider");
    options.profile = true;
  }

  auto t_create = Clock::now();
  Session session(f.model, options);
  const double load_ms = ms_since(t_create);
  const DecodeIo d = decode_io(session);
  const uint64_t weight_bytes = initializer_bytes(f.model);

  LoopResult r = run_loop(session, d, f, nullptr);

  // KV cache read per step: every past tensor, at the step's length (attention reads all of it at least once).
  uint64_t kv_bytes_per_position = 0;
  for (size_t k = 0; k < d.pasts.size(); ++k) {
    Shape shape = d.past_shapes[k];
    shape[d.seq_axis] = 1;
    kv_bytes_per_position += uint64_t(shape_numel(shape)) * dtype_size(d.past_dtypes[k]);
  }
  std::vector<double> timed, all_ms, wait_ms, host_ms, submit_ms, write_ms, first_submit_at, wait_begin_at, wait_end_at;
  double kv_sum = 0;
  int replayed = 0, captured = 0, refreshed = 0, in_place = 0, ahead = 0;
  double plan_ms_total = 0, ahead_ms_total = 0;
  for (size_t k = 0; k < r.steps.size(); ++k) {
    const auto& s = r.steps[k];
    all_ms.push_back(s.ms);
    replayed += s.replayed;
    captured += s.captured;
    refreshed += s.refreshed;
    in_place += s.appended_in_place > 0 && s.appended_in_place == int(r.last_plan.appended_outputs.size());
    if (k >= 1) plan_ms_total += s.plan_ms;
    if (k >= 1) ahead_ms_total += s.refresh_ahead_ms;
    ahead += s.refreshed_ahead;
    if (k >= 1) {  // steps 2..N, as ort_peer
      timed.push_back(s.ms);
      wait_ms.push_back(s.wait_ms);
      host_ms.push_back(s.ms - s.wait_ms);
      submit_ms.push_back(s.submit_ms);
      write_ms.push_back(s.write_ms);
      first_submit_at.push_back(s.first_submit_at);
      wait_begin_at.push_back(s.wait_begin_at);
      wait_end_at.push_back(s.wait_end_at);
      kv_sum += double(kv_bytes_per_position) * double(s.past);
    }
  }
  nlohmann::json st = stats(timed);
  const double median = timed.empty() ? r.steps[0].ms : st["median"].get<double>();
  const double kv_mean = timed.empty() ? double(kv_bytes_per_position) * double(r.steps[0].past) : kv_sum / double(timed.size());

  nlohmann::json j;
  j["harness"] = "onnxgpu decode";
  j["model"] = f.model;
  j["ep"] = options.ep;
  j["capture"] = gpu && options.capture;
  j["int64_strategy"] = r.last_plan.int64_strategy;
  j["load_ms"] = load_ms;
  j["session_create_ms"] = load_ms;  // the Session constructor (planning happens at the first step)
  j["inputs"] = {{"input_ids", d.ids}, {"position_ids", d.pos.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.pos)},
                 {"pasts", d.pasts.size()}, {"past_shape", d.past_shapes[0]}, {"seq_axis", d.seq_axis},
                 {"attention_mask", d.mask.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.mask)}};
  if (!d.mask.empty()) j["static_kv_buffer"] = static_max_len(f);
  nlohmann::json loop;
  loop["mode"] = d.mask.empty() ? "growing" : "static buffer";
  loop["steps"] = r.steps.size();
  loop["steps_requested"] = f.steps;
  loop["time_limited"] = r.time_limited;
  loop["past_start"] = f.past_start + f.prompt;
  loop["past_end"] = f.past_start + f.prompt + int64_t(r.steps.size()) - 1;
  loop["start_token"] = f.start_token;
  loop["prompt"] = f.prompt;
  loop["scope"] = gpu ? "run_on_device (input_ids/position_ids uploaded, the previous presents fed as device tensors) + "
                        "logits readback (the argmax after it, as ort_peer's)"
                      : "Session::run with host tensors (presents back to the host)";
  loop["ms_per_step"] = st;
  if (gpu) {
    loop["wait_ms_per_step"] = stats(wait_ms);  // blocked on the GPU's work and the logits' readback
    loop["host_ms_per_step"] = stats(host_ms);  // the rest: uploads, planning or refresh, encoding, submits
    loop["submit_ms_per_step"] = stats(submit_ms);  // of which in wgpuQueueSubmit
    // The step's timeline (ms from its start): the GPU gets its first commands, the host starts and
    // stops waiting for the results.
    loop["first_submit_at_ms"] = stats(first_submit_at);
    loop["wait_begin_at_ms"] = stats(wait_begin_at);
    loop["wait_end_at_ms"] = stats(wait_end_at);
    loop["write_ms_per_step"] = stats(write_ms);    // of which writing inputs and uniforms
  }
  loop["first_step_ms"] = r.steps[0].ms;
  loop["prefill"] = r.prefill ? nlohmann::json{{"tokens", f.prompt}, {"ms", r.prefill->ms}, {"replayed", r.prefill->replayed},
                                               {"past", r.prefill->past}}
                              : nlohmann::json(nullptr);
  loop["first_token_ms"] = r.prefill ? r.prefill->ms : r.steps[0].ms;
  nlohmann::json prefills = nlohmann::json::array();
  for (const StepRecord& p : r.prefills)
    prefills.push_back({{"tokens", p.seq}, {"ms", p.ms}, {"replayed", p.replayed}, {"refreshed", p.refreshed},
                        {"plan_ms", p.plan_ms}});
  loop["prefills"] = prefills;
  loop["tokens_per_s"] = median > 0 ? 1000.0 / median : 0.0;
  loop["replayed_steps"] = replayed;
  loop["captured_steps"] = captured;
  loop["planned_steps"] = int(r.steps.size()) - replayed;
  loop["refreshed_steps"] = refreshed;
  loop["appended_in_place_steps"] = in_place;  // every present's past found in place: no KV copy
  loop["appended_outputs"] = r.last_plan.appended_outputs;
  loop["rows_written_in_place"] = r.last_plan.rows_written_in_place;  // new rows written by their kernel
  loop["plan_ms_per_step_mean"] = timed.empty() ? 0.0 : plan_ms_total / double(timed.size());  // steps 2..N
  // Refreshes made during the step before's wait, off the step's path (runtime/refresh_ahead.h).
  loop["refreshed_ahead_steps"] = ahead;
  loop["refresh_ahead_ms_per_step_mean"] = timed.empty() ? 0.0 : ahead_ms_total / double(timed.size());
  std::vector<bool> rep, refr, refr_ahead;
  std::vector<double> plan_ms;
  std::vector<int64_t> tokens;
  for (const auto& s : r.steps) {
    rep.push_back(s.replayed);
    refr.push_back(s.refreshed);
    refr_ahead.push_back(s.refreshed_ahead);
    plan_ms.push_back(s.plan_ms);
    tokens.push_back(s.token);
  }
  loop["replayed"] = rep;
  loop["refreshed"] = refr;
  loop["refreshed_ahead"] = refr_ahead;
  loop["plan_ms"] = plan_ms;
  loop["step_ms"] = all_ms;
  loop["tokens"] = tokens;
  loop["last_argmax"] = argmax(r.steps.back().logits);
  loop["present_shape"] = r.present_shape;
  loop["dispatches_last_step"] = r.steps.back().dispatches;
  j["decode_loop"] = loop;
  if (f.profile_steps > 0) {
    j["profile"] = profile_summary(session.profile(), size_t(f.profile_nodes));
    j["profile"]["note"] = "every dispatch in a pass of its own between timestamps: the loop's times above are not "
                           "representative";
  }
  j["plan"] = plan_json(r.last_plan);
  j["plan_family"] = {{"refreshed", r.last_plan.refreshed},          {"symbolic_dims", r.last_plan.symbolic_dims},
                      {"guarded_nodes", r.last_plan.guarded_nodes},  {"capacity_growths", r.last_plan.capacity_growths},
                      {"refresh_refused", r.last_plan.refresh_refused}, {"plan_ms", r.last_plan.plan_ms}};
  j["weight_bytes"] = weight_bytes;
  j["kv_bytes_per_position"] = kv_bytes_per_position;
  j["bytes_per_token"] = {
      {"weights", weight_bytes},
      {"kv_cache_mean", kv_mean},
      {"total", double(weight_bytes) + kv_mean},
      {"scope", "every initializer once + the past KV cache once per step (mean over the timed steps): a lower bound "
                "on what one token reads"}};
  j["achieved_gb_per_s"] = median > 0 ? (double(weight_bytes) + kv_mean) / (median * 1e6) : 0.0;

  std::optional<CheckResult> check;
  if (f.check) {
    SessionOptions ro = options;
    if (f.check_ref == "cpu") {
      ro.ep = "cpu";
    } else {
      ro.ep = "webgpu";
      ro.capture = false;
    }
    Session ref(f.model, ro);
    LoopResult rr = run_loop(ref, d, f, &r);
    check = compare_loops(r, rr, f.atol, f.rtol);
    j["check"] = {{"reference", f.check_ref == "cpu" ? "ep cpu" : "ep webgpu, no capture"},
                  {"allclose", check->allclose},
                  {"argmax_match", check->argmax_match},
                  {"max_abs_diff", check->max_abs},
                  {"max_rel_diff", check->max_rel},
                  {"n_mismatch", check->n_mismatch},
                  {"steps_compared", check->steps_compared},
                  {"atol", f.atol},
                  {"rtol", f.rtol},
                  {"match", check->allclose && check->argmax_match}};
    if (!check->first_bad.empty()) j["check"]["first_mismatch"] = check->first_bad;
  }

  if (f.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("%s  ep=%s capture=%s  %zu steps, past %lld -> %lld%s\n", f.model.c_str(), options.ep.c_str(),
                j["capture"].get<bool>() ? "on" : "off", r.steps.size(), (long long)(f.past_start + f.prompt),
                (long long)(f.past_start + f.prompt + int64_t(r.steps.size()) - 1), r.time_limited ? " (time limit)" : "");
    for (const StepRecord& p : r.prefills)
      std::printf("prefill of %lld tokens (a new conversation): %.3f ms, %s, %.3f ms of it planning%s\n", (long long)p.seq,
                  p.ms, p.refreshed ? "refreshed" : p.replayed ? "replayed" : "planned", p.plan_ms,
                  p.refreshed ? " (the in-line refresh)" : "");
    if (r.prefill) std::printf("prefill of %lld tokens: %.3f ms\n", (long long)f.prompt, r.prefill->ms);
    std::printf("first step %.3f ms; ms per step (steps 2..N): median %.3f  min %.3f  max %.3f  -> %.1f tokens/s\n",
                r.steps[0].ms, median, timed.empty() ? median : st["min"].get<double>(),
                timed.empty() ? median : st["max"].get<double>(), loop["tokens_per_s"].get<double>());
    if (gpu && !timed.empty())
      std::printf("of which blocked on the GPU and the readback: median %.3f ms; host: median %.3f ms\n",
                  loop["wait_ms_per_step"]["median"].get<double>(), loop["host_ms_per_step"]["median"].get<double>());
    std::printf("steps replayed %d of %zu (refreshed for new sizes %d, %d of them during the step before's wait; "
                "captured %d); planning %.3f ms per step (mean, steps 2..N; refreshing ahead %.3f more, off the path)\n",
                replayed, r.steps.size(), refreshed, ahead, captured, loop["plan_ms_per_step_mean"].get<double>(),
                loop["refresh_ahead_ms_per_step_mean"].get<double>());
    if (gpu && !timed.empty())
      std::printf("timeline of a step (medians, ms from its start): first submit %.3f, waiting %.3f -> %.3f, end %.3f\n",
                  loop["first_submit_at_ms"]["median"].get<double>(), loop["wait_begin_at_ms"]["median"].get<double>(),
                  loop["wait_end_at_ms"]["median"].get<double>(), median);
    if (const std::vector<EntryTime> now = dawn_entry_times(); !now.empty() && timed.size() > 0) {
      // Host time inside Dawn per step (steps 2..N), by entry: the rest of the host's part is the engine's.
      std::vector<EntryTime> per;
      double total = 0;
      for (const EntryTime& e : now) {
        EntryTime d = e;
        for (const EntryTime& b : r.dawn_before_timed)
          if (b.name == e.name) d.calls -= b.calls, d.ms -= b.ms;
        if (!d.calls) continue;
        if (d.name != "InstanceWaitAny") total += d.ms;
        per.push_back(d);
      }
      std::sort(per.begin(), per.end(), [](const EntryTime& a, const EntryTime& b) { return a.ms > b.ms; });
      const double n = double(timed.size());
      std::printf("host time inside Dawn per step (steps 2..N, but the wait): %.3f ms; by entry:\n", total / n);
      for (size_t k = 0; k < per.size() && k < 16; ++k)
        std::printf("  %-40s %8.4f ms  %7.1f calls  %6.2f us a call\n", per[k].name.c_str(), per[k].ms / n,
                    double(per[k].calls) / n, 1000.0 * per[k].ms / double(per[k].calls));
    }
    if (!r.last_plan.refresh_refused.empty())
      std::printf("last refresh refused: %s\n", r.last_plan.refresh_refused.c_str());
    if (gpu)
      std::printf("KV cache appended in place (%zu presents, no copy; new rows written by their kernel for %zu) in %d of "
                  "%zu steps\n",
                  r.last_plan.appended_outputs.size(), r.last_plan.rows_written_in_place.size(), in_place, r.steps.size());
    std::printf("weights %.1f MB, KV cache read %.2f MB per token (mean): %.1f GB/s at the median\n",
                double(weight_bytes) / 1e6, kv_mean / 1e6, j["achieved_gb_per_s"].get<double>());
    std::printf("tokens:");
    for (size_t k = 0; k < tokens.size() && k < 32; ++k) std::printf(" %lld", (long long)tokens[k]);
    std::printf("%s\n", tokens.size() > 32 ? " ..." : "");
    if (j.contains("profile")) print_profile(j["profile"]);
    if (check)
      std::printf("check against %s: %s (max abs diff %g over %d steps%s%s)\n", j["check"]["reference"].get<std::string>().c_str(),
                  check->allclose && check->argmax_match ? "match" : "MISMATCH", check->max_abs, check->steps_compared,
                  check->first_bad.empty() ? "" : "; first: ", check->first_bad.c_str());
  }
  std::fflush(stdout);
  if (check && !(check->allclose && check->argmax_match))
    throw Error("decode --check: the loop differs from the reference (" + j["check"]["reference"].get<std::string>() +
                "): " + check->first_bad);
}

}  // namespace

void add_decode_command(CLI::App& app) {
  auto f = std::make_shared<DecodeFlags>();
  auto* cmd = app.add_subcommand("decode", "greedy generation loop on a KV-cache decode-step model, the cache kept on the GPU");
  cmd->add_option("model", f->model, "model.onnx (inputs input_ids, position_ids, past_*; outputs logits, present_*)")
      ->required();
  f->engine.add_to(cmd);
  cmd->add_option("--steps", f->steps, "decode steps (default 16)")->check(CLI::PositiveNumber);
  cmd->add_option("--past-start", f->past_start, "past length of the first step (zeros; default 1)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--start-token", f->start_token, "input_ids of the first step (default 0)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--prompt", f->prompt, "first a prefill of this many tokens (start token, +1, ...): the first-token time")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--prefills", f->prefills,
                  "first prefills of these lengths (L1,L2,...), each a new conversation from the zero past: a "
                  "plan, then refreshes of it for other prompt lengths")
      ->delimiter(',');
  cmd->add_option("--time-limit", f->time_limit_s, "stop the loop after this many seconds (>= 1 step)");
  cmd->add_flag("--check", f->check, "run the loop again on a reference session, fed the same tokens; compare every step");
  cmd->add_option("--check-ref", f->check_ref, "the reference of --check: cpu (default) or no-capture (webgpu)")
      ->check(CLI::IsMember({"cpu", "no-capture"}));
  cmd->add_option("--rtol", f->rtol, "relative tolerance of --check (default 1e-3)");
  cmd->add_option("--atol", f->atol, "absolute tolerance of --check (default 1e-4)");
  cmd->add_option("--max-len", f->max_len,
                  "GenAI-style models (attention_mask, past_key_values.*): the static KV buffer's length (default: "
                  "past start + prompt + steps)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--profile", f->profile_steps,
                  "time every GPU dispatch over the loop's last N steps (GPU timestamps; slows the loop): time per op")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--profile-nodes", f->profile_nodes, "how many of the slowest nodes the profile lists (default 15)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", f->json, "JSON output");
  cmd->callback([f] { decode_command(*f); });
}

}  // namespace onnxgpu::tools
