// onnxgpu bench MODEL [run's engine and input flags] [--warmup N] [--runs N] [--time-limit S] [--json]
//
// Times whole Session::run calls (input upload, GPU work, output readback); with --io bind, runs on
// inputs copied to the GPU beforehand (run_on_device + one readback), as ONNX Runtime's IO binding
// (ort_peer's --io bind) is timed. Besides the latency it reports what one run costs in WebGPU calls,
// from the counting wrappers of dawn_counters.h.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "commands.h"
#include "common.h"
#include "dawn_counters.h"
#include "runtime/compare.h"
#include "runtime/executor.h"
#include "runtime/shared_device.h"
#include "webgpu/dawn.h"
#include "webgpu/device.h"

namespace onnxgpu::tools {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// CPU time the process has used so far (all threads), in ms.
double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

// ---- Statistics ------------------------------------------------------------------------------

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * double(v.size() - 1);
  size_t lo = size_t(std::floor(pos)), hi = size_t(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

nlohmann::json stats(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  double sum = 0;
  for (double x : v) sum += x;
  return {{"min", *std::min_element(v.begin(), v.end())},
          {"median", quantile(v, 0.5)},
          {"mean", sum / double(v.size())},
          {"p90", quantile(v, 0.9)},
          {"max", *std::max_element(v.begin(), v.end())}};
}

// The process's peak resident set: VmHWM (ru_maxrss would also count the parent's peak before exec).
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

// Median time to read every output back on its own: one copy into a staging buffer per output, one
// submit, one map, on the session's device (the same path as the read at the end of a run). Run
// minus this is the run's device-side part (plus upload and host work).
double readback_only_ms(const std::vector<Tensor>& outs, int repeats) {
  auto dev = runtime::shared_device();
  std::vector<webgpu::Buffer> bufs;
  std::vector<std::vector<std::byte>> host;
  std::vector<webgpu::ReadRequest> reads;
  for (const auto& t : outs) {
    uint64_t bytes = std::max<uint64_t>(t.nbytes(), 4);
    bufs.push_back(dev->acquire(bytes));
    host.emplace_back(bytes);
  }
  for (size_t i = 0; i < bufs.size(); ++i) reads.push_back({bufs[i].get(), 0, host[i].size(), host[i].data()});
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
    dev->read(reads);
    ms.push_back(ms_since(t0));
  }
  for (auto& b : bufs) dev->recycle(std::move(b));
  return quantile(ms, 0.5);
}

struct BenchFlags {
  std::string model;
  EngineFlags engine;
  InputFlags in;
  int warmup = 3;
  int runs = 10;
  int readback_repeats = 20;
  double time_limit_s = 0;  // 0: none
  bool json = false;
  int profile_runs = 0;  // > 0: a second session times every dispatch (GPU timestamps)
  int profile_nodes = 15;  // the slowest nodes listed
  double rtol = 1e-3, atol = 1e-5;
  std::string io = "host";  // host: Session::run; bind: inputs on the GPU once, run_on_device + readback
};

// GPU time per op type and the slowest nodes, from a second session with SessionOptions::profile.
nlohmann::json profile_json(const std::string& model, SessionOptions options,
                            const std::unordered_map<std::string, Tensor>& feeds, int runs, size_t top) {
  options.profile = true;
  Session session(model, options);
  session.run(feeds);  // plans and records; not counted
  session.reset_profile();
  for (int i = 0; i < runs; ++i) session.run(feeds);
  return profile_summary(session.profile(), top);
}

void bench_command(const BenchFlags& f) {
  SessionOptions options = f.engine.options();
  const bool gpu = options.ep == "webgpu";
  if (gpu) install_counting_hooks();

  auto t_create = Clock::now();
  Session session(f.model, options);
  double load_ms = ms_since(t_create);
  auto feeds = f.in.feeds(session);
  // --io bind measures what ONNX Runtime's IO binding does: the inputs are copied to the GPU once,
  // and a run is run_on_device on them + one readback of every output.
  const bool bind = f.io == "bind";
  if (bind && !gpu) throw InvalidArgument("--io bind needs the webgpu execution provider");
  std::unordered_map<std::string, DeviceTensor> bound;
  if (bind)
    for (const auto& [name, t] : feeds) bound[name] = session.to_device(t);
  auto run = [&] { return bind ? DeviceTensor::to_host(session.run_on_device({}, bound)) : session.run(feeds); };
  auto t_first = Clock::now();
  std::vector<Tensor> outs = run();
  double first_run_ms = ms_since(t_first);
  const double session_create_ms = load_ms + first_run_ms;  // load + plan + first run (input generation excluded)
  PlanReport first_plan = session.last_plan();

  // --time-limit: warmup and timed runs stop once it is spent (at least one timed run is kept).
  auto t_loop = Clock::now();
  auto over_time = [&] { return f.time_limit_s > 0 && ms_since(t_loop) > f.time_limit_s * 1000.0; };
  int warmup_done = 0;
  for (; warmup_done < f.warmup && !over_time(); ++warmup_done) outs = run();

  std::vector<double> ms, wait_ms, host_ms, submit_ms, write_ms, submits, dispatches, write_bytes;
  bool time_limited = warmup_done < f.warmup;
  const double cpu0 = process_cpu_ms();
  for (int i = 0; i < std::max(1, f.runs); ++i) {
    if (i > 0 && over_time()) {
      time_limited = true;
      break;
    }
    DawnCounters before = counted();
    auto t0 = Clock::now();
    outs = run();
    double run_ms = ms_since(t0);
    ms.push_back(run_ms);
    double w = counted().wait_ms - before.wait_ms;
    wait_ms.push_back(w);
    host_ms.push_back(run_ms - w);
    submit_ms.push_back(counted().submit_ms - before.submit_ms);
    write_ms.push_back(counted().write_ms - before.write_ms);
    submits.push_back(double(counted().submits - before.submits));
    dispatches.push_back(double(counted().dispatches - before.dispatches));
    write_bytes.push_back(double(counted().write_bytes - before.write_bytes));
  }
  // CPU time of the whole process (every thread: ours, Dawn's, the driver's) per timed run: the host
  // cost of a run measured as the peer harness measures it.
  const double cpu_per_run = (process_cpu_ms() - cpu0) / double(ms.size());
  const PlanReport& plan = session.last_plan();

  nlohmann::json j;
  j["harness"] = "onnxgpu bench";
  j["model"] = f.model;
  j["ep"] = options.ep;
  j["capture"] = gpu && options.capture;
  j["int64_strategy"] = plan.int64_strategy;
  j["inputs"] = nlohmann::json::array();
  for (const auto& info : session.inputs()) {
    const Tensor& t = feeds.at(info.name);
    j["inputs"].push_back({{"name", info.name}, {"dtype", std::string(dtype_name(t.dtype()))}, {"shape", t.shape()}});
  }
  j["warmup"] = warmup_done;
  j["runs"] = ms.size();
  j["runs_requested"] = f.runs;
  j["time_limited"] = time_limited;
  j["io"] = f.io;
  j["latency_scope"] = bind ? "run_on_device on inputs copied to the GPU before the runs (IO binding), GPU work, "
                              "one readback of every output into host tensors"
                            : "Session::run: input upload, GPU work (or CPU reference), output readback into host tensors";
  j["latency_ms"] = stats(ms);
  j["process_cpu_ms_per_run"] = cpu_per_run;
  j["run_ms"] = ms;
  j["load_ms"] = load_ms;
  j["first_run_ms"] = first_run_ms;
  j["session_create_ms"] = session_create_ms;
  j["dispatches_per_run"] = gpu ? plan.dispatches : 0;
  j["submits_per_run"] = gpu ? quantile(submits, 0.5) : 0;
  j["plan"] = plan_json(plan);
  j["first_plan_replayed"] = first_plan.replayed;
  j["peak_rss_mb"] = peak_rss_mb();
  if (gpu) {  // the persistent pipeline cache: what this process found in it and added
    const webgpu::BlobCache* cache = runtime::shared_device()->blob_cache();
    j["pipeline_cache"] = cache ? nlohmann::json{{"folder", cache->folder().string()}, {"hits", cache->hits()},
                                                 {"stores", cache->stores()}}
                                : nlohmann::json(nullptr);
  }
  j["gpu_buffer_bytes"] = gpu ? plan.gpu_buffer_bytes : 0;
  if (gpu) {
    double rb = readback_only_ms(outs, f.readback_repeats);
    j["readback_only_ms_median"] = rb;
    j["device_ms_median"] = quantile(ms, 0.5) - rb;
    j["counted"] = {
        {"submits_per_run", quantile(submits, 0.5)},
        {"dispatches_per_run", quantile(dispatches, 0.5)},
        {"upload_bytes_per_run", quantile(write_bytes, 0.5)},
        {"wait_ms", stats(wait_ms)},
        {"host_ms", stats(host_ms)},
        {"submit_ms", stats(submit_ms)},
        {"write_ms", stats(write_ms)},
        {"buffers_created", counted().buffers_created},
        {"buffer_bytes_created", counted().buffer_bytes_created},
    };
  } else {
    j["readback_only_ms_median"] = nullptr;
    j["device_ms_median"] = nullptr;
  }
  j["outputs"] = nlohmann::json::array();
  for (size_t i = 0; i < outs.size(); ++i) j["outputs"].push_back(tensor_summary(session.outputs()[i].name, outs[i]));
  std::vector<Tensor> expected = f.in.expected_outputs();
  if (!expected.empty()) {
    bool passed = expected.size() == outs.size();
    double max_abs = 0;
    std::string why = passed ? "" : "the data set has " + std::to_string(expected.size()) + " outputs, the model " +
                                        std::to_string(outs.size());
    for (size_t k = 0; k < expected.size() && k < outs.size(); ++k) {
      auto c = runtime::compare_tensors(outs[k], expected[k], {f.rtol, f.atol});
      max_abs = std::max(max_abs, c.max_abs_diff);
      if (!c.passed && passed) {
        passed = false;
        why = "output '" + session.outputs()[k].name + "': " + c.message;
      }
    }
    j["compare"] = {{"passed", passed}, {"max_abs_diff", max_abs}};
    if (!passed) j["compare"]["reason"] = why;
  }

  if (gpu && f.profile_runs > 0) {
    try {
      j["profile"] = profile_json(f.model, options, feeds, f.profile_runs, size_t(f.profile_nodes));
    } catch (const Error& e) {
      j["profile"] = {{"skipped", e.what()}};
    }
  }

  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  auto st = j["latency_ms"];
  std::printf("%s  ep=%s capture=%s  runs=%zu warmup=%d%s\n", f.model.c_str(), options.ep.c_str(),
              j["capture"].get<bool>() ? "on" : "off", ms.size(), warmup_done, time_limited ? " (time limit)" : "");
  std::printf("latency ms: median %.3f  min %.3f  max %.3f\n", st["median"].get<double>(), st["min"].get<double>(),
              st["max"].get<double>());
  std::printf("session create %.1f ms (load %.1f, first run %.1f)  peak RSS %.1f MB\n", session_create_ms, load_ms,
              first_run_ms, j["peak_rss_mb"].get<double>());
  std::printf("plan: %d nodes, %d gpu, %d cpu, %d folded, %d segments, %d dispatches, captured %s\n", plan.nodes,
              plan.gpu_nodes, plan.cpu_nodes, plan.folded_nodes, plan.segments, plan.dispatches,
              plan.captured ? "yes" : "no");
  if (gpu)
    std::printf("per run: %.0f submits, %.0f dispatches counted, %.3f ms waiting, readback alone %.3f ms\n",
                quantile(submits, 0.5), quantile(dispatches, 0.5), quantile(wait_ms, 0.5),
                j["readback_only_ms_median"].get<double>());
  if (j.contains("profile") && j["profile"].contains("skipped")) {
    std::printf("profile skipped: %s\n", j["profile"]["skipped"].get<std::string>().c_str());
  } else if (j.contains("profile")) {
    print_profile(j["profile"]);
  }
  if (j.contains("compare"))
    std::printf("compare with the data set: %s (max abs diff %g)\n", j["compare"]["passed"].get<bool>() ? "passed" : "FAILED",
                j["compare"]["max_abs_diff"].get<double>());
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  auto* cmd = app.add_subcommand("bench", "time whole runs of a model (upload, GPU work, readback)");
  cmd->add_option("model", f->model, "model.onnx")->required();
  f->engine.add_to(cmd);
  f->in.add_to(cmd);
  cmd->add_option("--warmup", f->warmup, "untimed runs after the first run")->check(CLI::NonNegativeNumber);
  cmd->add_option("--runs", f->runs, "timed runs")->check(CLI::PositiveNumber);
  cmd->add_option("--io", f->io, "host: Session::run (inputs uploaded every run); bind: inputs copied to the GPU "
                                 "once, runs on them (IO binding, as ort_peer's --io bind)")
      ->check(CLI::IsMember({"host", "bind"}));
  cmd->add_option("--readback-repeats", f->readback_repeats, "repeats of the readback-only measurement")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--time-limit", f->time_limit_s, "stop warmup and timed runs after this many seconds (>= 1 timed run)");
  cmd->add_option("--rtol", f->rtol, "relative tolerance when comparing with --data-set outputs");
  cmd->add_option("--atol", f->atol, "absolute tolerance when comparing with --data-set outputs");
  cmd->add_flag("--json", f->json, "JSON output");
  cmd->add_option("--profile", f->profile_runs,
                  "then time every GPU dispatch over N runs of a second session (GPU timestamps): time per op type")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--profile-nodes", f->profile_nodes, "how many of the slowest nodes the profile lists (default 15)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([f] { bench_command(*f); });
}

}  // namespace onnxgpu::tools
