// The generated GPU-kernel type test: every GPU kernel handles every dtype its ONNX type
// constraint admits, INT64 included, bit for bit with the CPU reference, in capture mode.
//
// For every case of tests/unit/gpu_op_cases.cpp whose op has a GPU kernel, and every dtype the op's
// schema (libonnx, at the case's opset) admits for the case's type parameter among float32, float16,
// float64, int8, uint8, int16, uint16, int32, uint32, int64, uint64 and bool, the test builds a one-node
// model, runs it on the CPU reference and on WebGPU (capture on, fail_loud: a CPU fallback is an error)
// three times -- record, replay with other input values, replay with the first values -- and compares
// every output: integers and bool bit for bit, floats within a tolerance. Float inputs get one more
// replay with extreme values (NaN, +-inf, huge, subnormal: gpu_op_cases.h). A fallback of an admitted
// dtype fails unless kAllowedFallbacks lists it with its reason (float64 arithmetic, which the GPU
// cannot do exactly, runs on the CPU: kFloat64Arithmetic).
// Every registered GPU kernel must have a case (GpuOps.EveryGpuKernelHasACase).
//
// Run: XDG_RUNTIME_DIR=/tmp build/tests/unit_tests --gtest_filter='GpuOps*'
// One gtest per group of cases (GpuOps/GpuOpsTypes.AdmittedDtypes/<family>, e.g. .../indexing), so
// ctest runs the groups in parallel. Environment:
//   ONNXGPU_GPU_OPS=Pow,Gather   only the cases whose name contains one of the strings
//   ONNXGPU_GPU_OPS_ALL=1        every admitted dtype also for the cases that default to a few (Case::quick:
//                                extra cases of kernels that take seconds to compile on SwiftShader)
//   ONNXGPU_GPU_OPS_TIMES=1      the record and replay time of every (case, dtype)
// Without a WebGPU adapter the GPU tests fail, naming why, unless ONNXGPU_SKIP_GPU_TESTS=1 (then they skip).
// The dtypes each case ran with are printed as a table at the end.
// Cases with Case::second_run_fails replay with an invalid second value set (an int64 index of 2^32 + 1):
// the CPU and the GPU replay must both fail, and the GPU session must run the first values afterwards.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu_op_cases.h"
#include "one_node.h"
#include "loader/tensor_proto.h"
#include "onnxgpu/error.h"
#include "onnxgpu/session.h"
#include "runtime/executor.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu {
namespace {

using namespace gpu_op_cases;

// ---- Allowed fallbacks -------------------------------------------------------------------------------
// Cases whose GPU kernel deliberately declines an admitted dtype, with the reason. Keep this short:
// every entry is a hole in "the GPU handles every admitted type".
struct AllowedFallback {
  std::string case_name;  // Case::name(), or the op for every case of it
  DType dtype;            // Undefined: every dtype
  std::string reason;
};
const std::vector<AllowedFallback> kAllowedFallbacks = {
    // Not yet on the GPU for integer inputs (the float kernels would not match the CPU's integer results).
    {"Erf", DType::Int8, "Erf on integers"}, {"Erf", DType::Int16, "Erf on integers"},
    {"Erf", DType::Int32, "Erf on integers"}, {"Erf", DType::Int64, "Erf on integers"},
    {"Erf", DType::UInt8, "Erf on integers"}, {"Erf", DType::UInt16, "Erf on integers"},
    {"Erf", DType::UInt32, "Erf on integers"}, {"Erf", DType::UInt64, "Erf on integers"},
    {"Shrink", DType::Int8, "Shrink on integers"}, {"Shrink", DType::Int16, "Shrink on integers"},
    {"Shrink", DType::Int32, "Shrink on integers"}, {"Shrink", DType::Int64, "Shrink on integers"},
    {"Shrink", DType::UInt8, "Shrink on integers"}, {"Shrink", DType::UInt16, "Shrink on integers"},
    {"Shrink", DType::UInt32, "Shrink on integers"}, {"Shrink", DType::UInt64, "Shrink on integers"},
    // pow in float64 then truncated (the CPU's rule); float32 would be wrong past 2^24.
    {"Pow[exponent T1, int64 base]", DType::Float32, "an integer base to a float exponent"},
    {"Pow[exponent T1, int64 base]", DType::Float16, "an integer base to a float exponent"},
    {"Pow[exponent T1, int64 base]", DType::Float64, "an integer base to a float exponent"},
    // alpha and beta are floats; integer Gemm scales by them only on the CPU.
    {"Gemm[alpha 2 beta 3]", DType::Int32, "integer Gemm with alpha or beta other than 1"},
    {"Gemm[alpha 2 beta 3]", DType::UInt32, "integer Gemm with alpha or beta other than 1"},
    {"Gemm[alpha 2 beta 3]", DType::Int64, "integer Gemm with alpha or beta other than 1"},
    {"Gemm[alpha 2 beta 3]", DType::UInt64, "integer Gemm with alpha or beta other than 1"},
};

// Float64 values the GPU cannot compute on exactly (it has no float64 arithmetic): a kernel that computes
// on them is refused by the shader layer and the node runs on the CPU; kernels that only move float64
// elements stay on the GPU and are checked bit for bit.
const AllowedFallback kFloat64Arithmetic{"", DType::Undefined, "float64 arithmetic runs on the CPU"};

const AllowedFallback* allowed_fallback(const Case& c, DType t, const std::string& reason) {
  if (reason.find(testing::kFloat64Reason) != std::string::npos) return &kFloat64Arithmetic;
  for (const auto& a : kAllowedFallbacks)
    if ((a.case_name == c.name() || a.case_name == c.op) && (a.dtype == DType::Undefined || a.dtype == t)) return &a;
  return nullptr;
}

bool all_dtypes() {
  const char* s = std::getenv("ONNXGPU_GPU_OPS_ALL");
  return s && std::string(s) == "1";
}

// ---- Device and report -----------------------------------------------------------------------------------

std::shared_ptr<webgpu::Device> g_device;  // kept alive across the cases (pipelines stay cached)
std::string g_device_error;
bool g_device_tried = false;

struct Row {
  std::string name;
  std::vector<std::pair<DType, std::string>> dtypes;  // status: "" ok, else FB / FAIL / fold / ...
  double seconds = 0;
  double record_s = 0, replay_s = 0;
  int not_run = 0;  // admitted dtypes left to ONNXGPU_GPU_OPS_ALL=1
};
std::vector<Row> g_rows;
int g_pairs = 0, g_ok = 0, g_fallbacks = 0, g_failures = 0;

const char* short_name(DType t) {
  switch (t) {
    case DType::Float32: return "f32";
    case DType::Float16: return "f16";
    case DType::Float64: return "f64";
    case DType::BFloat16: return "bf16";
    case DType::Int8: return "i8";
    case DType::UInt8: return "u8";
    case DType::Int16: return "i16";
    case DType::UInt16: return "u16";
    case DType::Int32: return "i32";
    case DType::UInt32: return "u32";
    case DType::Int64: return "i64";
    case DType::UInt64: return "u64";
    case DType::Bool: return "bool";
    default: return "?";
  }
}

class GpuOpsEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!g_rows.empty()) {
      double total = 0;
      std::printf("\n[GpuOps] dtypes run per case (plain: bit-exact / within tolerance; :FB falls back to the CPU; :fb allowed fallback; "
                  ":FAIL wrong or error; :fold folded at plan time; +N: N more dtypes with ONNXGPU_GPU_OPS_ALL=1)\n");
      int w = 0;
      for (const auto& r : g_rows) w = std::max(w, int(r.name.size()));
      for (const auto& r : g_rows) {
        std::string line;
        for (const auto& [t, st] : r.dtypes) line += std::string(" ") + short_name(t) + (st.empty() ? "" : ":" + st);
        if (r.not_run) line += " +" + std::to_string(r.not_run);
        std::printf("  %-*s %-56s %6.2fs  (GPU record %.2fs, replays %.0fms)\n", w, r.name.c_str(), line.c_str(), r.seconds,
                    r.record_s, r.replay_s * 1000);
        total += r.seconds;
      }
      std::printf("[GpuOps] %zu cases, %d (case, dtype) pairs: %d ok, %d fallbacks, %d failures; %.1fs\n\n", g_rows.size(),
                  g_pairs, g_ok, g_fallbacks, g_failures, total);
    }
    g_device.reset();  // destroy the device before exit (SwiftShader)
  }
};
[[maybe_unused]] ::testing::Environment* const g_env = ::testing::AddGlobalTestEnvironment(new GpuOpsEnvironment);

bool skip_gpu_tests() {
  const char* s = std::getenv("ONNXGPU_SKIP_GPU_TESTS");
  return s && std::string(s) == "1";
}

bool acquire_device(std::string& why) {
  if (!g_device_tried) {
    g_device_tried = true;
    try {
      g_device = runtime::shared_device();
    } catch (const std::exception& e) {
      g_device_error = e.what();
    }
  }
  why = g_device_error;
  return g_device != nullptr;
}

// ---- Dtypes of a case ---------------------------------------------------------------------------------------

const DType kTested[] = {DType::Float32, DType::Float16, DType::Float64, DType::Int8,  DType::UInt8,  DType::Int16,
                         DType::UInt16,  DType::Int32,   DType::UInt32,  DType::Int64, DType::UInt64, DType::Bool};

// The dtypes the schema admits for the case's type parameter (among kTested), or an error.
std::vector<DType> case_dtypes(const Case& c, std::string& error) {
  std::vector<DType> out;
  const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(c.op, c.opset, c.domain);
  // No schema, or libonnx's is older than the case's opset and the case lists the newer spec's dtypes
  // (BitShift-28 takes signed integers, BitShift-11 did not).
  if (!s || (!c.dtypes_without_schema.empty() && s->SinceVersion() < c.opset)) {
    if (c.dtypes_without_schema.empty()) error = "no ONNX schema for " + c.op + "-" + std::to_string(c.opset);
    return c.dtypes_without_schema;
  }
  bool found = false;
  for (const auto& tc : s->typeConstraintParams()) {
    if (tc.type_param_str != c.type_param) continue;
    found = true;
    for (DType t : kTested)
      for (const auto& str : tc.allowed_type_strs)
        if (str == dtype_onnx_name(t)) out.push_back(t);
  }
  if (!found) error = c.op + "-" + std::to_string(c.opset) + " has no type parameter '" + c.type_param + "'";
  if (!c.only.empty()) {
    std::vector<DType> kept;
    for (DType t : out)
      if (std::find(c.only.begin(), c.only.end(), t) != c.only.end()) kept.push_back(t);
    out = kept;
  }
  return out;
}

// ---- Model and inputs --------------------------------------------------------------------------------------

uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

struct Built {
  std::string bytes;
  std::vector<DType> input_dtypes;
  // Value sets of the graph inputs: two ordinary ones and the extreme values (gpu_op_cases.h).
  std::unordered_map<std::string, Tensor> feeds[3];
  bool extremes = false;                             // feeds[2] differs from feeds[0]
  std::vector<Tensor> constants;                     // per input (undefined for graph inputs)
};

Built build(const Case& c, DType vt) {
  Built b;
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(c.opset);
  if (!c.domain.empty()) {
    auto* d = m.add_opset_import();
    d->set_domain(c.domain);
    d->set_version(1);
  }
  auto* g = m.mutable_graph();
  g->set_name(c.name());
  auto* n = g->add_node();
  n->set_op_type(c.op);
  n->set_domain(c.domain);
  n->set_name("node");
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const In& in = c.inputs[i];
    DType dt = in.dtype.value_or(vt);
    b.input_dtypes.push_back(dt);
    b.constants.emplace_back();
    n->add_input(in.name);
    if (in.name.empty()) continue;
    auto gen = [&](int run) {
      Rng rng(fnv(c.name() + "/" + std::string(dtype_name(vt)) + "/" + in.name + "/" + std::to_string(run)));
      return in.gen ? in.gen(dt, in.shape, rng) : make_values(dt, in.shape, in.dom, rng);
    };
    if (in.constant) {
      b.constants.back() = gen(0);
      loader::tensor_to_proto(b.constants.back(), in.name, *g->add_initializer());
      continue;
    }
    auto* vi = g->add_input();
    vi->set_name(in.name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(int32_t(dt));
    auto* shape = tt->mutable_shape();
    for (int64_t d : in.shape) shape->add_dim()->set_dim_value(d);
    b.feeds[0][in.name] = gen(0);
    if (in.second) {
      Rng rng(fnv(c.name() + "/" + std::string(dtype_name(vt)) + "/" + in.name + "/1"));
      b.feeds[1][in.name] = in.second(dt, in.shape, rng);
    } else {
      b.feeds[1][in.name] = gen(1);
    }
    if (!in.gen && !in.dtype && dtype_is_float(dt) && c.extremes != Extremes::None) {
      Rng rng(fnv(c.name() + "/" + std::string(dtype_name(vt)) + "/" + in.name + "/extremes"));
      b.feeds[2][in.name] = extreme_values(dt, in.shape, c.extremes, rng);
      b.extremes = true;
    } else {
      b.feeds[2][in.name] = b.feeds[0][in.name];
    }
  }
  for (int k = 0; k < c.outputs; ++k) {
    if (std::find(c.omitted_outputs.begin(), c.omitted_outputs.end(), k) != c.omitted_outputs.end()) {
      n->add_output("");
      continue;
    }
    std::string name = "y" + std::to_string(k);
    n->add_output(name);
    g->add_output()->set_name(name);
  }
  if (c.attrs) c.attrs(*n, vt);
  m.SerializeToString(&b.bytes);
  return b;
}

// ---- Comparison -------------------------------------------------------------------------------------------------

std::string value_str(const Tensor& t, int64_t i) {
  std::ostringstream o;
  o.precision(9);
  visit_dtype(t.dtype(), [&]<class T>() {
    T v = t.data<T>()[i];
    if constexpr (std::is_same_v<T, bool>) o << (v ? "true" : "false");
    else if constexpr (is_float_v<T>) o << double(float(v));
    else if constexpr (sizeof(T) == 1) o << int(v);
    else o << v;
  });
  return o.str();
}

std::string tensor_str(const Tensor& t, int64_t max_values = 60) {
  std::string s = t.describe() + " {";
  for (int64_t i = 0; i < t.numel() && i < max_values; ++i) s += (i ? ", " : "") + value_str(t, i);
  if (t.numel() > max_values) s += ", ...";
  return s + "}";
}

std::string index_str(const Shape& s, int64_t flat) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  std::string r = "[";
  for (size_t d = 0; d < idx.size(); ++d) r += (d ? "," : "") + std::to_string(idx[d]);
  return r + "]";
}

// "" when equal: integers and bool bit for bit, floats within tolerance (NaN equals NaN). With `flushed`
// (the reference computed on the inputs with subnormals flushed to zero), an element may match either.
std::string compare(const Tensor& want, const Tensor& got, double tol_scale, double extra_atol, const Tensor* flushed) {
  if (want.dtype() != got.dtype()) return "dtype " + got.describe() + ", expected " + want.describe();
  if (want.shape() != got.shape()) return "shape " + got.describe() + ", expected " + want.describe();
  double rtol = 0, atol = 0;
  if (want.dtype() == DType::Float32) rtol = 1e-4, atol = 1e-5;
  if (want.dtype() == DType::Float16) rtol = 1e-2, atol = 1e-3;
  if (want.dtype() == DType::Float64) rtol = 1e-5, atol = 1e-6;
  rtol *= tol_scale;
  atol *= tol_scale;
  if (dtype_is_float(want.dtype())) atol += extra_atol;
  std::string out;
  int bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    auto same = [&](const Tensor& ref) {
      if (dtype_is_float(ref.dtype())) {
        double w = ref.double_at(i), g = got.double_at(i);
        return (std::isnan(w) && std::isnan(g)) || w == g ||
               (std::isfinite(w) && std::isfinite(g) && std::fabs(w - g) <= atol + rtol * std::fabs(w));
      }
      size_t es = dtype_size(ref.dtype());
      return std::memcmp(static_cast<const char*>(ref.raw()) + i * es, static_cast<const char*>(got.raw()) + i * es, es) == 0;
    };
    if (same(want) || (flushed && flushed->shape() == want.shape() && flushed->dtype() == want.dtype() && same(*flushed)))
      continue;
    if (++bad <= 4)
      out += "\n      at " + index_str(want.shape(), i) + ": expected " + value_str(want, i) + ", got " + value_str(got, i);
  }
  if (bad) out = std::to_string(bad) + " of " + std::to_string(want.numel()) + " elements differ:" + out;
  return out;
}

// ---- Running one (case, dtype) --------------------------------------------------------------------------------

struct Outcome {
  std::string status;  // "" ok, "FB" fallback, "fb" allowed fallback, "FAIL", "fold"
  std::string message; // for failures and fallbacks
  double record_s = 0, replay_s = 0;  // GPU time of the first run (plan, compile, run) and of the 2 replays
};

std::string inputs_str(const Case& c, const Built& b, int set) {
  std::string s;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const In& in = c.inputs[i];
    if (in.name.empty()) continue;
    const Tensor& t = in.constant ? b.constants[i] : b.feeds[set].at(in.name);
    s += "\n      " + in.name + (in.constant ? " (initializer)" : "") + " = " + tensor_str(t);
  }
  return s;
}

Outcome classify(const Case& c, DType vt, const Built& b, const std::string& cpu_error, const std::string& gpu_error,
                 const std::string& mismatch, bool folded);

Outcome run_case(const Case& c, DType vt) {
  Built b = build(c, vt);
  std::vector<Tensor> ref[3];
  std::vector<Tensor> ref_flushed;  // the extreme values' reference with subnormal inputs flushed to zero
  std::string cpu_error;
  try {
    SessionOptions o;
    o.ep = "cpu";
    Session cpu = Session::from_bytes(b.bytes, o);
    ref[0] = cpu.run(b.feeds[0]);
    if (c.second_run_fails) {
      std::string err;
      try {
        cpu.run(b.feeds[1]);
      } catch (const std::exception& e) {
        err = e.what();
      }
      if (err.empty()) cpu_error = "the CPU reference accepts the second value set, which the case expects to fail";
    } else {
      ref[1] = cpu.run(b.feeds[1]);
    }
    if (b.extremes) {
      try {
        ref[2] = cpu.run(b.feeds[2]);
        std::unordered_map<std::string, Tensor> flushed;
        for (const auto& [name, t] : b.feeds[2]) flushed[name] = flush_subnormals(t);
        ref_flushed = cpu.run(flushed);
      } catch (const std::exception& e) {
        throw Error(std::string("on the extreme values (give the case extremes() with a reason if it cannot take "
                                "them): ") + e.what());
      }
    }
  } catch (const std::exception& e) {
    cpu_error = e.what();
  }

  SessionOptions o;
  o.ep = "webgpu";
  o.capture = true;
  o.int64.fail_loud = true;
  std::string gpu_error;
  std::string mismatch;
  bool folded = false;
  double times[2] = {0, 0};
  try {
    Session gpu = Session::from_bytes(b.bytes, o);
    // Record, replay with other values, [replay with the extreme values,] replay with the first values.
    std::vector<int> sets = b.extremes ? std::vector<int>{0, 1, 2, 0} : std::vector<int>{0, 1, 0};
    for (int run = 0; run < int(sets.size()); ++run) {
      int set = sets[run];
      auto t0 = std::chrono::steady_clock::now();
      if (set == 1 && c.second_run_fails) {
        std::string err;
        try {
          gpu.run(b.feeds[1]);
        } catch (const std::exception& e) {
          err = e.what();
        }
        times[1] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (err.empty() || err.rfind("fail_loud:", 0) == 0)
          mismatch += "\n    run 2 (replay) with invalid values " + (err.empty() ? std::string("succeeded") : "fell back: " + err) +
                      "; the CPU fails" + "\n    inputs:" + inputs_str(c, b, 1);
        if (!mismatch.empty()) break;
        continue;
      }
      std::vector<Tensor> got = gpu.run(b.feeds[set]);
      times[run == 0 ? 0 : 1] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const PlanReport& plan = gpu.last_plan();
      if (run == 0 && plan.gpu_nodes == 0) {
        folded = plan.folded_nodes > 0;
        if (!folded) mismatch += "\n    the node did not run on the GPU (plan: " + std::to_string(plan.cpu_nodes) + " CPU nodes)";
        else if (!c.may_fold) mismatch += "\n    the node was folded at plan time: the GPU kernel did not run (make an input a graph input)";
      }
      if (!folded && run > 0 && !plan.replayed && !c.second_run_fails) mismatch += "\n    run " + std::to_string(run + 1) + " was not a replay";
      if (!cpu_error.empty()) continue;
      if (got.size() != ref[set].size()) {
        mismatch += "\n    run " + std::to_string(run + 1) + ": " + std::to_string(got.size()) + " outputs, expected " +
                    std::to_string(ref[set].size());
        continue;
      }
      for (size_t k = 0; k < got.size(); ++k) {
        std::string d = compare(ref[set][k], got[k], c.tol, c.atol, set == 2 ? &ref_flushed[k] : nullptr);
        if (d.empty()) continue;
        mismatch += "\n    run " + std::to_string(run + 1) + (run == 0 ? " (record)" : set == 2 ? " (replay, extreme values)" : " (replay)") + ", output y" +
                    std::to_string(k) + ": " + d + "\n    inputs:" + inputs_str(c, b, set);
        break;
      }
      if (!mismatch.empty()) break;
    }
  } catch (const std::exception& e) {
    gpu_error = e.what();
  }

  Outcome r = classify(c, vt, b, cpu_error, gpu_error, mismatch, folded);
  r.record_s = times[0];
  r.replay_s = times[1];
  return r;
}

Outcome classify(const Case& c, DType vt, const Built& b, const std::string& cpu_error, const std::string& gpu_error,
                 const std::string& mismatch, bool folded) {
  const std::string what = c.name() + " " + std::string(dtype_name(vt));
  const std::string fl = "cannot run on the GPU: ";
  if (!gpu_error.empty() && gpu_error.rfind("fail_loud:", 0) == 0) {
    size_t p = gpu_error.find(fl);
    std::string reason = p == std::string::npos ? gpu_error : gpu_error.substr(p + fl.size());
    if (const AllowedFallback* a = allowed_fallback(c, vt, reason))
      return {"fb", c.name() + " " + std::string(dtype_name(vt)) + " falls back (allowed: " + a->reason + "): " + reason};
    return {"FB", "op " + c.op + " dtype " + std::string(dtype_name(vt)) + " falls back (" + c.name() + "): " + reason +
                      (cpu_error.empty() ? "" : "\n    (the CPU reference fails too: " + cpu_error + ")")};
  }
  if (!cpu_error.empty()) {
    return {"FAIL", what + ": the CPU reference fails: " + cpu_error +
                        (gpu_error.empty() ? " (the GPU ran it)" : "\n    GPU: " + gpu_error) + "\n    inputs:" + inputs_str(c, b, 0)};
  }
  if (!gpu_error.empty()) return {"FAIL", what + ": GPU error: " + gpu_error + "\n    inputs:" + inputs_str(c, b, 0)};
  if (!mismatch.empty()) return {"FAIL", what + ":" + mismatch};
  return {folded ? "fold" : "", ""};
}

// ---- The tests ---------------------------------------------------------------------------------------------------

bool has_gpu_kernel(const Case& c) { return webgpu::gpu_registry().find(c.op, c.domain) != nullptr; }

// The case groups (families) with at least one case whose op has a GPU kernel: one gtest each.
std::vector<std::string> registered_families() {
  std::vector<std::string> r;
  for (const auto& c : all_cases())
    if (has_gpu_kernel(c) && std::find(r.begin(), r.end(), c.family) == r.end()) r.push_back(c.family);
  return r;
}

// ONNXGPU_GPU_OPS=Pow,Cast[to int64] runs only the cases whose name contains one of the strings.
bool selected(const Case& c) {
  const char* env = std::getenv("ONNXGPU_GPU_OPS");
  if (!env || !*env) return true;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty() && c.name().find(item) != std::string::npos) return true;
  return false;
}

class GpuOpsTypes : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuOpsTypes, AdmittedDtypes) {
  std::string why;
  if (!acquire_device(why)) {
    if (skip_gpu_tests()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1 and no WebGPU device: " << why;
    FAIL() << "no WebGPU device (set ONNXGPU_SKIP_GPU_TESTS=1 to skip GPU tests): " << why;
  }
  for (const Case& c : all_cases()) {
    if (c.family != GetParam() || !has_gpu_kernel(c) || !selected(c)) continue;
    std::string error;
    std::vector<DType> dtypes = case_dtypes(c, error);
    if (!error.empty() || dtypes.empty()) {
      ADD_FAILURE() << c.name() << ": " << (error.empty() ? "no dtype to test" : error);
      continue;
    }
    Row row;
    row.name = c.name();
    if (!c.quick.empty() && !all_dtypes()) {
      std::vector<DType> kept;
      for (DType t : dtypes)
        if (std::find(c.quick.begin(), c.quick.end(), t) != c.quick.end()) kept.push_back(t);
      row.not_run = int(dtypes.size() - kept.size());
      dtypes = kept;
    }
    auto t0 = std::chrono::steady_clock::now();
    for (DType t : dtypes) {
      Outcome r = run_case(c, t);
      row.dtypes.emplace_back(t, r.status);
      row.record_s += r.record_s;
      if (std::getenv("ONNXGPU_GPU_OPS_TIMES"))
        std::printf("  %s %s: record %.0fms, replays %.0fms\n", c.name().c_str(), short_name(t), r.record_s * 1000, r.replay_s * 1000);
      row.replay_s += r.replay_s;
      ++g_pairs;
      if (r.status.empty() || r.status == "fold") {
        ++g_ok;
      } else if (r.status == "fb") {
        ++g_fallbacks;
      } else {
        (r.status == "FB" ? g_fallbacks : g_failures)++;
        ADD_FAILURE() << r.message;
      }
    }
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    g_rows.push_back(row);
  }
}

INSTANTIATE_TEST_SUITE_P(GpuOps, GpuOpsTypes, ::testing::ValuesIn(registered_families()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(GpuOps, EveryGpuKernelHasACase) {
  std::set<std::string> covered;
  for (const auto& c : all_cases()) covered.insert(c.qualified_op());
  for (const auto& op : webgpu::gpu_registry().op_types())
    EXPECT_TRUE(covered.count(op)) << "GPU kernel '" << op << "' has no case in the generated dtype test: "
                                   << "add a case to tests/unit/gpu_op_cases.cpp (run by tests/unit/test_gpu_ops.cpp)";
}

// Every case is well formed: its type parameter exists at its opset, and the CPU reference runs it for
// every dtype (also for ops without a GPU kernel yet, so their cases are ready when the kernel lands).
TEST(GpuOps, CasesRunOnTheCpu) {
  int runs = 0;
  for (const auto& c : all_cases()) {
    std::string error;
    std::vector<DType> dtypes = case_dtypes(c, error);
    if (!error.empty()) {
      ADD_FAILURE() << c.name() << ": " << error;
      continue;
    }
    EXPECT_FALSE(dtypes.empty()) << c.name() << ": no dtype to test";
    for (DType t : dtypes) {
      Built b = build(c, t);
      try {
        SessionOptions o;
        o.ep = "cpu";
        Session cpu = Session::from_bytes(b.bytes, o);
        auto outs = cpu.run(b.feeds[0]);
        EXPECT_EQ(int(outs.size()), c.outputs - int(c.omitted_outputs.size())) << c.name() << " " << dtype_name(t);
        if (c.second_run_fails) {
          EXPECT_ANY_THROW(cpu.run(b.feeds[1])) << c.name() << " " << dtype_name(t) << ": the second value set should fail";
        } else {
          cpu.run(b.feeds[1]);
        }
        ++runs;
      } catch (const std::exception& e) {
        ADD_FAILURE() << c.name() << " " << dtype_name(t) << ": the CPU reference fails: " << e.what()
                      << "\n    inputs:" << inputs_str(c, b, 0);
      }
    }
  }
  std::printf("[GpuOps] %zu cases, %d (case, dtype) pairs run on the CPU\n", all_cases().size(), runs);
}

// Casts float32 `values` to each of `targets` on the GPU (captured, with replays) and compares the bytes
// with the CPU reference's.
void check_casts_match_the_cpu(const std::vector<float>& values, const std::vector<DType>& targets) {
  const std::vector<testing::Operand> in{{"x", Tensor::from_vector<float>({int64_t(values.size())}, values)}};
  for (DType to : targets) {
    const std::string model = testing::one_node_model("Cast", in, {"y"}, 21, [to](onnx::NodeProto& n) {
      testing::set_int(n, "to", int64_t(to));
    });
    testing::check_against_cpu("Cast to " + std::string(dtype_name(to)), model, in, testing::webgpu_options(),
                               [](const Tensor& got, const Tensor& want, const std::string& what) {
                                 ASSERT_EQ(got.nbytes(), want.nbytes()) << what;
                                 EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0)
                                     << what << ": got " << tensor_str(got) << ", want " << tensor_str(want);
                               });
  }
}

// ONNX leaves a float cast to an integer type it cannot hold to the implementation; a negative float into an
// unsigned type keeps the low bits of its integer part on both providers (the CPU reference casts through
// int64, as ONNX Runtime's CPU EP does), where the GPU's own conversion would clamp it to 0.
TEST(GpuOps, NegativeFloatsCastToUnsignedWrapAsOnTheCpu) {
  check_casts_match_the_cpu({-9.f, -1.5f, -0.5f, 0.f, 3.7f, 200.f, -200.f, -70000.f},
                            {DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt4, DType::UInt2});
}

// Floats no target type can hold (beyond 32 bits, beyond int64, NaN, infinities) follow ops/cast.h's one
// rule on both providers, for every integer target (float16 and bfloat16 inputs take the same path).
TEST(GpuOps, FloatsBeyondTheTargetCastAlikeOnBothProviders) {
  const float big = 9223372036854775808.0f;  // 2^63
  check_casts_match_the_cpu({3e9f, -3e9f, 1e20f, -1e20f, NAN, INFINITY, -INFINITY, 300.7f, -9.5f, big, -big, 1.8e19f,
                             -2147483648.0f, 2147483648.0f, -0.5f, 4294967296.0f, 1.5e12f, -1.5e12f, 16777217.0f, -70000.f},
                            {DType::Int8, DType::UInt8, DType::Int16, DType::UInt16, DType::Int32, DType::UInt32,
                             DType::Int64, DType::UInt64});
}

}  // namespace
}  // namespace onnxgpu
