#include "onnxgpu/session.h"

#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "cpu/graph_runner.h"
#include "ir/graph.h"
#include "loader/model_loader.h"
#include "runtime/branches.h"
#include "runtime/executor.h"
#include "runtime/options.h"
#include "runtime/shared_device.h"

namespace onnxgpu {

struct Session::Impl {
  ir::Model model;
  SessionOptions options;
  std::vector<TensorInfo> inputs, outputs;
  std::unique_ptr<runtime::GpuExecutor> gpu;  // null for the CPU reference
  // If nodes on flags (runtime/branches.h): per combination of the flags' values, the model with those
  // branches taken and its executor, sharing gpu's uploaded weights. A run whose flags are not all on the
  // host runs on gpu, its Ifs on the CPU.
  std::vector<std::string> flags;
  struct Taken {
    ir::Model model;
    std::unique_ptr<runtime::GpuExecutor> gpu;
    std::vector<std::string> branches;  // PlanReport::branches_taken
  };
  std::map<std::vector<bool>, std::unique_ptr<Taken>> taken;
  std::mutex taken_mutex;
  std::atomic<const Taken*> last_taken = nullptr;  // the last run's (null: it ran on gpu); last_plan, profile
  runtime::GpuExecutor& last_gpu() const {
    const Taken* t = last_taken.load();
    return t ? *t->gpu : *gpu;
  }
  PlanReport cpu_report;
  // Every graph input by name (the last declaration of a name), and whether a run must feed it (it
  // has no initializer); how many must.
  std::unordered_map<std::string, std::pair<const ir::ValueInfo*, bool>> input_decls;
  size_t required_inputs = 0;
};

namespace {

TensorInfo info_of(const ir::ValueInfo& v) {
  TensorInfo t;
  t.name = v.name;
  t.dtype = v.dtype;
  t.has_shape = v.has_shape;
  for (const auto& d : v.dims) {
    t.shape.push_back(d.concrete() ? d.value : -1);
    t.dim_params.push_back(d.param);
  }
  return t;
}

// `options` have had their config entries applied.
std::unique_ptr<Session::Impl> make_impl(ir::Model model, SessionOptions options) {
  auto impl = std::make_unique<Session::Impl>();
  impl->model = std::move(model);
  impl->options = std::move(options);
  if (impl->options.ep == "webgpu") {
    impl->gpu = std::make_unique<runtime::GpuExecutor>(impl->model, impl->options);
    impl->flags = runtime::branch_flags(impl->model);
  }
  impl->cpu_report.ep = "cpu";
  impl->cpu_report.nodes = impl->cpu_report.cpu_nodes = int(impl->model.graph.nodes.size());
  for (const auto& v : impl->model.graph.inputs)
    if (!impl->model.graph.is_initializer(v.name)) impl->inputs.push_back(info_of(v));
  for (const auto& v : impl->model.graph.outputs) impl->outputs.push_back(info_of(v));
  for (const auto& v : impl->model.graph.inputs) impl->input_decls[v.name] = {&v, !impl->model.graph.is_initializer(v.name)};
  for (const auto& [name, decl] : impl->input_decls) impl->required_inputs += decl.second;
  return impl;
}

// One feed against the model's declaration of it; whether the model requires it.
bool check_feed(const Session::Impl& impl, const std::string& name, DType dtype, const Shape& shape) {
  auto it = impl.input_decls.find(name);
  if (it == impl.input_decls.end()) {
    std::string known;
    for (const TensorInfo& t : impl.inputs) known += (known.empty() ? "" : ", ") + t.name;
    throw InvalidArgument("input '" + name + "' is not an input of the model (its inputs: " + known + ")");
  }
  const ir::ValueInfo* decl = it->second.first;
  if (decl->dtype != DType::Undefined && dtype != decl->dtype)
    throw InvalidArgument("input '" + name + "': expected " + std::string(dtype_onnx_name(decl->dtype)) + ", got " +
                          std::string(dtype_onnx_name(dtype)));
  if (decl->has_shape) {
    if (shape.size() != decl->dims.size())
      throw InvalidArgument("input '" + name + "': expected shape " + decl->shape_str() + " (rank " +
                            std::to_string(decl->dims.size()) + "), got " + shape_str(shape));
    for (size_t i = 0; i < decl->dims.size(); ++i)
      if (decl->dims[i].concrete() && decl->dims[i].value != shape[i])
        throw InvalidArgument("input '" + name + "': expected shape " + decl->shape_str() + ", got " + shape_str(shape) +
                              " (dimension " + std::to_string(i) + ")");
  }
  return it->second.second;
}

// The feeds (host, then device) against the model's inputs: each one declared, of its dtype and shape;
// none given twice; every required input given.
void check_feeds(const Session::Impl& impl, const std::unordered_map<std::string, Tensor>& feeds,
                 const std::unordered_map<std::string, DeviceTensor>& device_feeds = {}) {
  for (const auto& [n, t] : device_feeds)
    if (feeds.count(n)) throw InvalidArgument("input '" + n + "' is given twice (host and device)");
  size_t required = 0;
  for (const auto& [n, t] : feeds) required += check_feed(impl, n, t.dtype(), t.shape());
  for (const auto& [n, t] : device_feeds) required += check_feed(impl, n, t.dtype(), t.shape());
  if (required == impl.required_inputs) return;
  const ir::Graph& g = impl.model.graph;
  for (const auto& v : g.inputs)
    if (!g.is_initializer(v.name) && !feeds.count(v.name) && !device_feeds.count(v.name))
      throw InvalidArgument("input '" + v.name + "' (" + std::string(dtype_onnx_name(v.dtype)) + v.shape_str() +
                            ") is required but was not given");
}

// Each output's dtype against the model's declaration of it (a model that declares int64 and computes
// float32 is wrong; the caller would read its bytes as the declared type).
template <class T>
void check_outputs(const ir::Graph& g, const std::vector<T>& got) {
  for (size_t k = 0; k < got.size() && k < g.outputs.size(); ++k) {
    const ir::ValueInfo& decl = g.outputs[k];
    if (decl.dtype == DType::Undefined || got[k].dtype() == decl.dtype) continue;
    std::string producer;
    for (const auto& n : g.nodes)
      for (const auto& o : n.outputs)
        if (o == decl.name) producer = " by " + n.describe();
    throw InvalidArgument("output '" + decl.name + "': the model declares " + std::string(dtype_name(decl.dtype)) +
                          ", the graph computes " + std::string(dtype_name(got[k].dtype())) + producer);
  }
}

// The executor for these feeds: with the flags' values all on the host, the one of the model with those
// branches taken (made at the first run of the combination); else the model's own.
runtime::GpuExecutor& executor_for(Session::Impl& impl, const std::unordered_map<std::string, Tensor>& feeds) {
  std::vector<bool> key;
  for (const std::string& f : impl.flags) {
    auto it = feeds.find(f);
    if (it == feeds.end() || it->second.dtype() != DType::Bool || it->second.numel() != 1) {
      key.clear();  // the If itself reports a condition that is not one value
      break;
    }
    key.push_back(it->second.data<bool>()[0]);
  }
  if (key.empty()) {
    impl.last_taken = nullptr;
    return *impl.gpu;
  }
  std::lock_guard<std::mutex> lock(impl.taken_mutex);
  auto& t = impl.taken[key];
  if (!t) {
    std::map<std::string, bool> values;
    for (size_t i = 0; i < key.size(); ++i) values[impl.flags[i]] = key[i];
    auto made = std::make_unique<Session::Impl::Taken>();
    made->model = runtime::take_branches(impl.model, values, &made->branches);
    // The weights' buffers and the fusions' derived constants are shared: no run may use them meanwhile.
    std::lock_guard<std::recursive_mutex> device_lock(runtime::device_mutex());
    made->gpu = std::make_unique<runtime::GpuExecutor>(made->model, impl.options, impl.gpu->constants());
    t = std::move(made);
  }
  impl.last_taken = t.get();
  return *t->gpu;
}

}  // namespace

Session::Session(const std::string& model_path, SessionOptions options) {
  runtime::apply_config_entries(options);
  ir::Model model = loader::load_model(model_path, options.external_data_root);
  impl_ = make_impl(std::move(model), std::move(options));
}

Session Session::from_bytes(const std::string& model_bytes, SessionOptions options) {
  runtime::apply_config_entries(options);
  Session s;
  ir::Model model = loader::load_model_from_bytes(model_bytes, {"", options.external_data_root});
  s.impl_ = make_impl(std::move(model), std::move(options));
  return s;
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const std::vector<TensorInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->outputs; }
const SessionOptions& Session::options() const { return impl_->options; }

ModelMetadata Session::metadata() const {
  const ir::Model& m = impl_->model;
  return {m.producer_name, m.graph.name, m.domain, m.doc_string, m.graph.doc_string, m.model_version, m.metadata};
}

std::vector<Tensor> Session::run(const std::unordered_map<std::string, Tensor>& feeds) {
  check_feeds(*impl_, feeds);
  std::vector<Tensor> out =
      impl_->gpu ? executor_for(*impl_, feeds).run(feeds) : cpu::run_graph(impl_->model.graph, impl_->model.opsets, feeds);
  check_outputs(impl_->model.graph, out);
  return out;
}

std::vector<DeviceTensor> Session::run_on_device(const std::unordered_map<std::string, Tensor>& feeds,
                                                 const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  if (!impl_->gpu) throw InvalidArgument("run_on_device (IO binding) needs the webgpu execution provider");
  check_feeds(*impl_, feeds, device_feeds);
  std::vector<DeviceTensor> out = executor_for(*impl_, feeds).run_on_device(feeds, device_feeds);
  check_outputs(impl_->model.graph, out);
  return out;
}

DeviceTensor Session::to_device(const Tensor& tensor) {
  if (!impl_->gpu) throw InvalidArgument("to_device (IO binding) needs the webgpu execution provider");
  if (!tensor.defined()) throw InvalidArgument("to_device: the tensor is empty");
  return impl_->gpu->to_device({tensor}).front();
}

PlanReport Session::last_plan() const {
  if (!impl_->gpu) return impl_->cpu_report;
  const Session::Impl::Taken* t = impl_->last_taken.load();  // read once: the report and its branches agree
  PlanReport r = (t ? *t->gpu : *impl_->gpu).last_report();
  if (t) r.branches_taken = t->branches;
  return r;
}

Profile Session::profile() const { return impl_->gpu ? impl_->last_gpu().profile() : Profile{}; }

void Session::reset_profile() {
  if (impl_->gpu) impl_->last_gpu().reset_profile();
}

}  // namespace onnxgpu
