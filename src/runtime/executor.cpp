#include "runtime/executor.h"

#include <chrono>
#include <optional>
#include <type_traits>

#include "cpu/graph_runner.h"
#include "runtime/gpu_values.h"
#include "runtime/refresh.h"
#include "runtime/resident.h"
#include "runtime/replay.h"

namespace onnxgpu::runtime {

// A refresh for the next run's predicted sizes: decided on the worker, applied in the wait.
struct GpuExecutor::AheadRefresh {
  std::unordered_map<std::string, Tensor> host;
  std::unordered_map<std::string, DeviceTensor> device;
  std::string signature, why;
  std::optional<Refresh> refresh;
  bool decided = false;
  double decide_ms = 0;
};

GpuExecutor::GpuExecutor(const ir::Model& model, const SessionOptions& options, std::shared_ptr<SessionConstants> constants)
    : model_(model),
      options_(options),
      device_(shared_device()),
      constants_(constants ? std::move(constants) : std::make_shared<SessionConstants>()),
      fusion_(std::make_unique<Fusion>(model.graph, options.fusion, model.opset(""), &constants_->derived)) {
  if (options_.profile && !device_->features().timestamp_query)
    throw InvalidArgument("profiling (onnxgpu.profile) needs GPU timestamp queries, which " +
                          device_->adapter().summary() + " does not offer");
  if (options_.profile) encoder_ = std::make_unique<TimedEncoder>(profile_);
  else encoder_ = std::make_unique<ChunkedEncoder>();
}

GpuExecutor::~GpuExecutor() {
  std::lock_guard<std::recursive_mutex> lock(device_mutex());  // plans give their buffers back to the shared pool
  plans_.clear();
  constants_.reset();
}

Profile GpuExecutor::profile() const {
  std::lock_guard<std::recursive_mutex> lock(device_mutex());
  Profile p;
  p.runs = profile_.runs;
  if (p.runs == 0) return p;
  for (size_t i = 0; i < profile_.ns.size() && i < model_.graph.nodes.size(); ++i) {
    if (profile_.dispatches[i] == 0) continue;
    const ir::Node& n = model_.graph.nodes[i];
    double ms = double(profile_.ns[i]) / 1e6 / p.runs;
    auto fused = profile_.fused.find(i);
    p.nodes.push_back({n.name, fused == profile_.fused.end() ? n.op_type : fused->second,
                       (profile_.dispatches[i] + p.runs - 1) / p.runs, ms,
                       i < profile_.bytes.size() ? profile_.bytes[i] : 0, i < profile_.flops.size() ? profile_.flops[i] : 0});
    p.gpu_ms += ms;
  }
  return p;
}

void GpuExecutor::reset_profile() {
  std::lock_guard<std::recursive_mutex> lock(device_mutex());
  auto fused = std::move(profile_.fused);  // a property of the recorded plans, which stay
  profile_ = ProfileSums{};
  profile_.fused = std::move(fused);
}

PlanReport GpuExecutor::last_report() const {
  std::lock_guard<std::recursive_mutex> lock(device_mutex());
  return report_;
}

std::vector<Tensor> GpuExecutor::run(const std::unordered_map<std::string, Tensor>& feeds) {
  return run_impl<Tensor>(feeds, {});
}

std::vector<DeviceTensor> GpuExecutor::run_on_device(const std::unordered_map<std::string, Tensor>& feeds,
                                                     const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  return run_impl<DeviceTensor>(feeds, device_feeds);
}

namespace {
template <typename Out>
std::vector<Out> finish(Replay& replay, size_t from) {
  if constexpr (std::is_same_v<Out, Tensor>) return replay.finish_on_host(from);
  else return replay.finish_on_device(from);
}
}  // namespace

template <typename Out>
std::vector<Out> GpuExecutor::run_impl(const std::unordered_map<std::string, Tensor>& feeds,
                                       const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  std::lock_guard<std::recursive_mutex> lock(device_mutex());  // one GPU queue for every session of the process
  const std::string sig = signature_of(feeds, device_feeds);
  if (!whole_graph_cpu_.count(sig) && options_.capture) {
    const auto start = std::chrono::steady_clock::now();
    std::shared_ptr<Plan> plan = plans_.find(sig, feeds);
    const bool refreshed = !plan && (plan = refresh_for(sig, feeds, device_feeds));
    const double plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (plan) {
      try {
        write_inputs(*plan, options_.int64, feeds, device_feeds);
        Replay replay(*plan, model_, options_.int64, *encoder_);
        replay.start();  // the GPU starts on what was encoded ahead while the host readies the rest
        plan->trend.observe(feeds, device_feeds);
        PlanReport report = plan->report;  // taken before the wait may refresh the plan for the next run
        report.replayed = true;
        report.refreshed = refreshed;
        report.plan_ms = refreshed ? plan_ms : 0;
        if (!refreshed && plan->refreshed_ahead.signature == sig) {
          report.refreshed = report.refreshed_ahead = true;
          report.refresh_ahead_ms = plan->refreshed_ahead.ms;
        }
        plan->refreshed_ahead = {};
        // The next run's sizes, when the plan's last runs make a trend (refresh_ahead.h): the plan is
        // refreshed for them while this run's commands go to the GPU. Not when host outputs are read from
        // a resident buffer after the wait (the refresh may give it another).
        SizeTrend::Sizes next;
        const SizeTrend::Next trend = plan->trend.predict(next);
        std::unique_ptr<AheadRefresh> ahead;
        if (trend == SizeTrend::Next::Grows && refreshing_ahead() &&
            (std::is_same_v<Out, DeviceTensor> || plan->residents.empty()))
          ahead = start_refresh_ahead(plan, next, feeds, device_feeds);
        const WorkerJoin join{ahead ? worker_.get() : nullptr};
        replay.prepare_next([&] {
          if (trend == SizeTrend::Next::Same) return true;  // a loop of one signature: replayed as it is
          if (ahead) {
            const bool applied = finish_refresh_ahead(plan, *ahead);
            ahead.reset();  // its working state freed now, during the wait, rather than after the results
            return applied;
          }
          return !refreshed;
        });
        std::vector<Out> outputs = finish<Out>(replay, 0);
        if (options_.profile) profile_.runs++;
        report_ = std::move(report);
        report_.encoded_ahead = replay.submitted_ahead();
        return outputs;
      } catch (const ReplanNeeded&) {
        plans_.drop(plan.get());  // a CPU node's output shape changed with the data: plan again
      }
    }
  }
  if (!whole_graph_cpu_.count(sig)) {
    try {
      return plan_and_run<Out>(sig, feeds, device_feeds);
    } catch (const WholeGraphFallback& e) {
      whole_graph_cpu_.insert(sig);
      whole_graph_reason_ = e.what();
    }
  }
  std::vector<Tensor> outputs = run_whole_graph_on_cpu(feeds, device_feeds);
  if constexpr (std::is_same_v<Out, Tensor>) return outputs;
  else return to_device(outputs);
}

std::shared_ptr<Plan> GpuExecutor::refresh_for(const std::string& signature,
                                               const std::unordered_map<std::string, Tensor>& feeds,
                                               const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  for (const std::shared_ptr<Plan>& plan : plans_.family(family_of(feeds, device_feeds), feeds)) {
    Refresh refresh(model_, options_, *plan, *fusion_);
    std::string why;
    if (!refresh.run(feeds, device_feeds, why)) {
      plan->report.refresh_refused = why;
      continue;
    }
    plan->report.signature = signature;
    plan->report.refresh_refused.clear();
    plans_.touch(plan.get());
    return plan;
  }
  return nullptr;
}

GpuExecutor::WorkerJoin::~WorkerJoin() {
  if (!worker) return;
  try {
    worker->wait();
  } catch (...) {  // the refresh it made is dropped with it; the plan is as it was
  }
}

std::unique_ptr<GpuExecutor::AheadRefresh> GpuExecutor::start_refresh_ahead(
    const std::shared_ptr<Plan>& plan, const SizeTrend::Sizes& next, const std::unordered_map<std::string, Tensor>& feeds,
    const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  auto a = std::make_unique<AheadRefresh>();
  std::vector<std::string> keep;
  for (const auto& [name, value] : plan->value_keys) keep.push_back(name);
  if (!predicted_feeds(next, feeds, device_feeds, keep, a->host, a->device)) return nullptr;
  a->signature = signature_of(a->host, a->device);
  a->refresh.emplace(model_, options_, *plan, *fusion_);
  if (!worker_) worker_ = std::make_unique<HostWorker>();
  worker_->start([r = a.get()] {
    const auto start = std::chrono::steady_clock::now();
    r->decided = r->refresh->decide(r->host, r->device, r->why);
    r->decide_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  });
  return a;
}

bool GpuExecutor::finish_refresh_ahead(const std::shared_ptr<Plan>& plan, AheadRefresh& a) {
  try {
    worker_->wait();
  } catch (const std::exception&) {
    return false;  // decisions only: the plan is as it was, and the next run refreshes it
  }
  if (!a.decided) return false;
  const auto start = std::chrono::steady_clock::now();
  try {
    a.refresh->apply(a.host, a.device);
  } catch (const std::exception&) {
    plans_.drop(plan.get());  // a refresh that failed half-way leaves no plan to trust
    return false;
  }
  plan->report.signature = a.signature;
  plan->refreshed_ahead = {
      a.signature, a.decide_ms + std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()};
  return true;
}

template <typename Out>
std::vector<Out> GpuExecutor::plan_and_run(const std::string& signature,
                                           const std::unordered_map<std::string, Tensor>& feeds,
                                           const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  const auto start = std::chrono::steady_clock::now();
  auto plan = std::make_shared<Plan>();
  plan->device = device_;
  plan->family = family_of(feeds, device_feeds);
  Planner planner(model_, options_, *plan, *constants_, *fusion_, *encoder_);
  size_t ran = planner.build(feeds, device_feeds);
  Replay replay(*plan, model_, options_.int64, *encoder_);
  std::vector<Out> outputs = finish<Out>(replay, ran);
  if (options_.profile) {
    profile_.runs++;
    for (const auto& [node, kernel] : plan->fused_kernels) profile_.fused[node] = kernel;
  }
  plan->report.signature = signature;
  plan->report.captured = options_.capture;
  plan->trend.observe(feeds, device_feeds);
  report_ = plan->report;
  report_.plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (options_.capture) plans_.add(plan);
  return outputs;
}

std::vector<Tensor> GpuExecutor::run_whole_graph_on_cpu(const std::unordered_map<std::string, Tensor>& feeds,
                                                        const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  std::unordered_map<std::string, Tensor> all = feeds;
  for (const auto& [name, d] : device_feeds) all[name] = read_device_tensor(d);
  std::vector<Tensor> outs = cpu::run_graph(model_.graph, model_.opsets, all);
  report_ = PlanReport{};
  report_.ep = "webgpu";
  report_.adapter = device_->adapter().summary();
  report_.nodes = report_.cpu_nodes = int(model_.graph.nodes.size());
  report_.whole_graph_fallback = true;
  report_.int64_strategy = Int64Policy::strategy_name(options_.int64.strategy);
  report_.fallbacks.push_back({"", "", "whole graph on the CPU: " + whole_graph_reason_, {}});
  return outs;
}

std::vector<DeviceTensor> GpuExecutor::to_device(const std::vector<Tensor>& tensors) {
  std::lock_guard<std::recursive_mutex> lock(device_mutex());
  std::vector<DeviceTensor> on_device;
  for (const Tensor& t : tensors) {
    auto st = std::make_shared<DeviceTensor::Storage>();
    st->device = device_;
    st->policy = options_.int64;
    GpuUpload u = to_gpu(t, options_.int64, "output");
    st->buffer = device_->acquire(std::max<uint64_t>(u.bytes, kMinBinding));
    if (u.bytes) device_->write(st->buffer.get(), u.data, u.bytes);
    on_device.emplace_back(t.dtype(), t.shape(), st);
  }
  return on_device;
}

}  // namespace onnxgpu::runtime
