// One-node ONNX models for the GPU kernel tests, and the check every such test makes: the model on
// the GPU (recorded, then replayed) against the CPU reference, output by output.
#pragma once
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "loader/tensor_proto.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"

namespace onnxgpu::testing {

struct Operand {
  std::string name;
  Tensor value;  // undefined: an omitted optional input ("")
  bool initializer = false;
};

using Attrs = std::function<void(onnx::NodeProto&)>;

struct ModelOptions {
  std::string node_name;                    // "" = "<op>_0"
  DType output_dtype = DType::Undefined;    // declared on every output when set
  bool input_shapes = true;                 // declare the graph inputs' shapes (else: dtype only, any shape)
};

// A one-node model: inputs (feeds or initializers), `outputs` names ("" = omitted), attributes set by `attrs`.
inline std::string one_node_model(const std::string& op, const std::vector<Operand>& inputs,
                                  const std::vector<std::string>& outputs, int opset, const Attrs& attrs = {},
                                  const ModelOptions& options = {}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("test");
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(options.node_name.empty() ? op + "_0" : options.node_name);
  for (const auto& in : inputs) {
    n->add_input(in.value.defined() ? in.name : "");
    if (!in.value.defined()) continue;
    if (in.initializer) {
      loader::tensor_to_proto(in.value, in.name, *g->add_initializer());
      continue;
    }
    auto* vi = g->add_input();
    vi->set_name(in.name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(int(in.value.dtype()));
    if (!options.input_shapes) continue;
    auto* sh = tt->mutable_shape();
    for (int64_t d : in.value.shape()) sh->add_dim()->set_dim_value(d);
  }
  for (const auto& o : outputs) {
    n->add_output(o);
    if (o.empty()) continue;
    auto* vo = g->add_output();
    vo->set_name(o);
    if (options.output_dtype != DType::Undefined)
      vo->mutable_type()->mutable_tensor_type()->set_elem_type(int32_t(options.output_dtype));
  }
  if (attrs) attrs(*n);
  return m.SerializeAsString();
}

inline onnx::AttributeProto* new_attr(onnx::NodeProto& n, const std::string& name, onnx::AttributeProto::AttributeType t) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(t);
  return a;
}
inline void set_int(onnx::NodeProto& n, const std::string& name, int64_t v) { new_attr(n, name, onnx::AttributeProto::INT)->set_i(v); }
inline void set_float(onnx::NodeProto& n, const std::string& name, float v) { new_attr(n, name, onnx::AttributeProto::FLOAT)->set_f(v); }
inline void set_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  new_attr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}
inline void set_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = new_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void set_floats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  auto* a = new_attr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}

// ONNXGPU_SKIP_GPU_TESTS=1: a missing WebGPU device skips the GPU tests instead of failing them.
// An environment variable set (or, value nullptr, unset) for a scope; what was there is restored after.
// For the engine's knobs read at each call ($ONNXGPU_MATMUL_VEC ...).
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const char* value) : name_(std::move(name)) {
    const char* before = std::getenv(name_.c_str());
    had_ = before != nullptr;
    if (had_) saved_ = before;
    set(value);
  }
  ~ScopedEnv() { set(had_ ? saved_.c_str() : nullptr); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const char* v) const {
    if (v) ::setenv(name_.c_str(), v, 1);
    else ::unsetenv(name_.c_str());
  }
  std::string name_;
  bool had_ = false;
  std::string saved_;
};

inline bool skip_gpu() {
  const char* s = std::getenv("ONNXGPU_SKIP_GPU_TESTS");
  return s && std::string(s) == "1";
}

// Random floats in [-1, 1] of the given float dtype.
inline Tensor random_float(DType t, const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  Tensor f(DType::Float32, shape);
  for (auto& v : f.span<float>()) v = d(rng);
  return t == DType::Float32 ? f : f.cast(t);
}

inline std::unordered_map<std::string, Tensor> feeds_of(const std::vector<Operand>& inputs) {
  std::unordered_map<std::string, Tensor> feeds;
  for (const auto& in : inputs)
    if (in.value.defined() && !in.initializer) feeds[in.name] = in.value;
  return feeds;
}

// Options for the WebGPU EP (graph capture as `capture` says).
inline SessionOptions webgpu_options(bool capture = true) {
  SessionOptions o;
  o.ep = "webgpu";
  o.capture = capture;
  return o;
}

// A session of `model` that profiles its runs (config onnxgpu.profile); nullopt, with the reason in `why`,
// when the adapter cannot (no timestamp queries): the caller skips.
inline std::optional<Session> profiling_session(const std::string& model, SessionOptions o, std::string& why) {
  o.add_config_entry("onnxgpu.profile", "1");
  try {
    return Session::from_bytes(model, o);
  } catch (const InvalidArgument& e) {
    if (std::string(e.what()).find("timestamp queries") == std::string::npos) throw;
    why = e.what();
    return std::nullopt;
  }
}

// A node that computes on float64 runs on the CPU by design: the GPU has no exact float64 arithmetic
// and the shader layer refuses to round it to float32 (kernels that only move float64 stay on the GPU).
inline constexpr const char* kFloat64Reason = "which the GPU would round to float32";
inline bool float64_fallback(const PlanFallback& f) { return f.reason.find(kFloat64Reason) != std::string::npos; }

// When `error` is fail-loud refusing float64 arithmetic, the options to run the model with that node
// on the CPU (fail_loud off); else nullopt.
inline std::optional<SessionOptions> without_fail_loud_for_float64(const SessionOptions& o, const std::string& error) {
  if (!o.int64.fail_loud || error.find(kFloat64Reason) == std::string::npos) return std::nullopt;
  SessionOptions relaxed = o;
  relaxed.int64.fail_loud = false;
  return relaxed;
}

// Compares one GPU output with the CPU reference's (`what` names it in failures).
using CompareFn = std::function<void(const Tensor& got, const Tensor& want, const std::string& what)>;

// Runs `model` on the CPU reference and on the GPU with `gpu_options` (3 runs: recorded, then
// replayed) and compares every output with `compare`. The GPU plan must keep every node on the GPU
// (no fallback but float64 arithmetic; exactly `gpu_nodes` GPU nodes when >= 0) and replay after
// the first run. Without a
// device the test fails, or skips where ONNXGPU_SKIP_GPU_TESTS=1. `made` (if set) runs once the GPU
// session exists.
inline void check_against_cpu(const std::string& what, const std::string& model, const std::vector<Operand>& inputs,
                              const SessionOptions& gpu_options, const CompareFn& compare, int gpu_nodes = -1,
                              const std::function<void()>& made = {}) {
  auto feeds = feeds_of(inputs);
  std::vector<Tensor> want;
  SessionOptions cpu;
  cpu.ep = "cpu";
  try {
    want = Session::from_bytes(model, cpu).run(feeds);
  } catch (const std::exception& e) {
    FAIL() << what << ": the CPU reference failed: " << e.what();
  }
  std::unique_ptr<Session> gpu;
  try {
    gpu = std::make_unique<Session>(Session::from_bytes(model, gpu_options));
  } catch (const std::exception& e) {
    if (skip_gpu()) GTEST_SKIP() << "no WebGPU session: " << e.what();
    FAIL() << what << ": cannot create a WebGPU session: " << e.what();
  }
  if (made) made();
  for (int run = 0; run < 3; ++run) {
    std::vector<Tensor> got;
    try {
      got = gpu->run(feeds);
    } catch (const std::exception& e) {
      // Under fail_loud, float64 arithmetic is an error by design: the same model without it must run
      // those nodes on the CPU (checked below) and everything else on the GPU.
      auto relaxed = without_fail_loud_for_float64(gpu_options, e.what());
      if (run > 0 || !relaxed) FAIL() << what << " (run " << run + 1 << "): " << e.what();
      gpu = std::make_unique<Session>(Session::from_bytes(model, *relaxed));
      got = gpu->run(feeds);
    }
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t k = 0; k < got.size(); ++k)
      compare(got[k], want[k], what + " output " + std::to_string(k) + " (run " + std::to_string(run + 1) + ")");
    const PlanReport& plan = gpu->last_plan();
    // Float64 arithmetic is the one fallback by design (the GPU would round it to float32).
    int float64_nodes = 0;
    for (const auto& f : plan.fallbacks) {
      if (float64_fallback(f)) ++float64_nodes;
      else ADD_FAILURE() << what << ": " << f.node << " falls back: " << f.reason;
    }
    EXPECT_EQ(plan.cpu_nodes, float64_nodes) << what;
    if (gpu_nodes >= 0 && float64_nodes == 0) {
      EXPECT_EQ(plan.gpu_nodes, gpu_nodes) << what;
    }
    if (plan.gpu_nodes > 0) {
      EXPECT_EQ(plan.replayed, run > 0) << what;
    }
  }
}

// check_against_cpu with graph capture and a tolerance (runtime::compare_tensors).
inline void expect_gpu_matches_cpu(const std::string& model, const std::vector<Operand>& inputs, double rtol = 1e-4,
                                   double atol = 1e-4, const std::function<void(const std::string&)>& made = {}) {
  check_against_cpu(
      "model", model, inputs, webgpu_options(),
      [&](const Tensor& got, const Tensor& want, const std::string& what) {
        auto c = runtime::compare_tensors(got, want, {rtol, atol});
        ASSERT_TRUE(c.passed) << what << ": " << c.message;
      },
      -1, made ? std::function<void()>([&] { made(model); }) : std::function<void()>{});
}

}  // namespace onnxgpu::testing
