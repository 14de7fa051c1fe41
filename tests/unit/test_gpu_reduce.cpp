// GPU kernels of the reduce, softmax and sort families (Reduce*, ArgMax/ArgMin, CumSum, Softmax,
// LogSoftmax, Hardmax, TopK), each checked against the CPU reference on one-node models: integers bit
// for bit, floats within a tolerance, in capture mode over 3 runs (the later runs are replays), with
// fail_loud so that a pass means the GPU kernel ran. INT64 inputs carry values beyond 2^32.
// Run with XDG_RUNTIME_DIR=/tmp (SwiftShader, found by the engine, where there is no GPU); without a
// WebGPU adapter these tests fail unless ONNXGPU_SKIP_GPU_TESTS=1 (then they skip).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "loader/tensor_proto.h"
#include "one_node.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"

namespace onnxgpu {
namespace gpu_reduce_test {

// ---- one-node models -------------------------------------------------------------------------------

using AttrValue = std::variant<int64_t, float, std::vector<int64_t>>;

struct NodeInput {
  std::string name;
  Tensor value;
  bool initializer = false;  // a constant of the model (known at plan time) or a fed input
};

struct OneNode {
  std::string op;
  int64_t opset = 17;
  std::vector<NodeInput> inputs;
  std::vector<std::pair<std::string, AttrValue>> attrs;
  std::vector<DType> outputs;  // output dtypes
};

std::string model_bytes(const OneNode& n) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(n.opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* node = g->add_node();
  node->set_op_type(n.op);
  node->set_name(n.op + "_0");
  for (const auto& in : n.inputs) {
    node->add_input(in.name);
    if (in.initializer) {
      loader::tensor_to_proto(in.value, in.name, *g->add_initializer());
    } else {
      auto* vi = g->add_input();
      vi->set_name(in.name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(int(in.value.dtype()));
      auto* shape = tt->mutable_shape();
      for (int64_t d : in.value.shape()) shape->add_dim()->set_dim_value(d);
    }
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    std::string name = "y" + std::to_string(i);
    node->add_output(name);
    auto* vi = g->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(int(n.outputs[i]));
  }
  for (const auto& [name, v] : n.attrs) {
    auto* a = node->add_attribute();
    a->set_name(name);
    if (auto* i = std::get_if<int64_t>(&v)) {
      a->set_type(onnx::AttributeProto_AttributeType_INT);
      a->set_i(*i);
    } else if (auto* f = std::get_if<float>(&v)) {
      a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
      a->set_f(*f);
    } else {
      a->set_type(onnx::AttributeProto_AttributeType_INTS);
      for (int64_t x : std::get<std::vector<int64_t>>(v)) a->add_ints(x);
    }
  }
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

std::unordered_map<std::string, Tensor> feeds_of(const OneNode& n) {
  std::unordered_map<std::string, Tensor> f;
  for (const auto& in : n.inputs)
    if (!in.initializer) f[in.name] = in.value;
  return f;
}

bool skip_gpu_tests() {
  const char* s = std::getenv("ONNXGPU_SKIP_GPU_TESTS");
  return s && std::string(s) == "1";
}

SessionOptions gpu_options(Int64Policy::Strategy strategy = Int64Policy::Strategy::BitcastToI32) {
  SessionOptions o;
  o.ep = "webgpu";
  o.capture = true;
  o.int64.strategy = strategy;
  o.int64.fail_loud = true;  // a CPU fallback is an error: a pass means the GPU kernel ran
  return o;
}

// A WebGPU session kept alive while a suite runs holds the shared device, so pipelines compiled for one
// model serve the next (SwiftShader compiles slowly). Released after the suite: a device alive at exit
// crashes SwiftShader, and other suites get a fresh device.
class GpuFamilyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    try {
      OneNode n{"ReduceSum", 13, {{"x", Tensor::from_vector<float>({2}, {1, 2})}}, {}, {DType::Float32}};
      keep_ = std::make_unique<Session>(Session::from_bytes(model_bytes(n), gpu_options()));
      keep_->run(feeds_of(n));
      why_ = "";
    } catch (const std::exception& e) {
      keep_.reset();
      why_ = e.what();
    }
  }
  static void TearDownTestSuite() { keep_.reset(); }
  static inline std::unique_ptr<Session> keep_;
  static inline std::string why_;
};
class GpuReduce : public GpuFamilyTest {};
class GpuArg : public GpuFamilyTest {};
class GpuCumSum : public GpuFamilyTest {};
class GpuSoftmax : public GpuFamilyTest {};
class GpuTopK : public GpuFamilyTest {};

// Fails the test when there is no WebGPU device (skips it with ONNXGPU_SKIP_GPU_TESTS=1).
#define REQUIRE_GPU()                                                                                   \
  do {                                                                                                  \
    if (!keep_) {                                                                                       \
      if (skip_gpu_tests()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1 and no WebGPU device: " << why_;  \
      FAIL() << "no WebGPU device (set ONNXGPU_SKIP_GPU_TESTS=1 to skip GPU tests): " << why_;          \
    }                                                                                                   \
  } while (0)

// Runs `n` on the CPU reference and 3 times on the GPU, comparing every run; returns the GPU outputs of
// the last run (or the CPU's when the GPU session fails, after recording the failure).
std::vector<Tensor> run_both(const OneNode& n, runtime::Tolerance tol = {},
                             Int64Policy::Strategy strategy = Int64Policy::Strategy::BitcastToI32) {
  std::string bytes = model_bytes(n);
  auto feeds = feeds_of(n);
  SessionOptions cpu_opts;
  cpu_opts.ep = "cpu";
  Session cpu = Session::from_bytes(bytes, cpu_opts);
  std::vector<Tensor> want = cpu.run(feeds);
  std::optional<Session> gpu;
  try {
    gpu.emplace(Session::from_bytes(bytes, gpu_options(strategy)));
  } catch (const std::exception& e) {
    ADD_FAILURE() << n.op << ": no WebGPU session: " << e.what();
    return want;
  }
  std::vector<Tensor> got;
  for (int run = 0; run < 3; ++run) {
    try {
      got = gpu->run(feeds);
    } catch (const std::exception& e) {
      // Float64 arithmetic runs on the CPU by design (an error under fail_loud): check that path.
      auto relaxed = testing::without_fail_loud_for_float64(gpu_options(strategy), e.what());
      if (run > 0 || !relaxed) {
        ADD_FAILURE() << n.op << " (run " << run + 1 << "): " << e.what();
        return want;
      }
      gpu.emplace(Session::from_bytes(bytes, *relaxed));
      got = gpu->run(feeds);
    }
    const PlanReport& plan = gpu->last_plan();
    bool float64_on_cpu = false;
    for (const auto& f : plan.fallbacks) {
      EXPECT_TRUE(testing::float64_fallback(f)) << n.op << ": a node fell back to the CPU: " << f.reason;
      float64_on_cpu = true;
    }
    if (run > 0 && !float64_on_cpu) {
      EXPECT_TRUE(plan.replayed) << n.op << ": run " << run + 1 << " was not a replay";
    }
    EXPECT_EQ(got.size(), want.size());
    for (size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
      runtime::CompareResult c = runtime::compare_tensors(got[k], want[k], tol);
      EXPECT_TRUE(c.passed) << n.op << " output " << k << " (run " << run + 1 << ", " << want[k].describe()
                            << "): " << c.message;
    }
  }
  return got;
}

// ---- inputs ----------------------------------------------------------------------------------------

std::mt19937_64& rng() {
  static std::mt19937_64 r(20240611);
  return r;
}

template <class T>
Tensor random_tensor(const Shape& shape, double lo, double hi) {
  std::vector<T> v(static_cast<size_t>(shape_numel(shape)));
  std::uniform_real_distribution<double> d(lo, hi);
  for (auto& x : v) {
    if constexpr (is_float_v<T>) x = T(float(d(rng())));
    else x = static_cast<T>(std::llround(d(rng())));
  }
  return Tensor::from_vector<T>(shape, v);
}

// int64 values spread over [-2^52, 2^52] (both words matter), with some repeats for ties.
Tensor wide_int64(const Shape& shape, int64_t span = int64_t(1) << 52) {
  std::vector<int64_t> v(static_cast<size_t>(shape_numel(shape)));
  std::uniform_int_distribution<int64_t> d(-span, span);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i % 7 == 3 && i > 0) ? v[i - 2] : d(rng());
  return Tensor::from_vector<int64_t>(shape, v);
}

Tensor wide_uint64(const Shape& shape) {
  std::vector<uint64_t> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = rng()();
  return Tensor::from_vector<uint64_t>(shape, v);
}

Tensor i64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({int64_t(v.size())}, v); }

// A Reduce* node: axes as an attribute (opset 13; ReduceSum from 13 takes an input) or as a constant input.
OneNode reduce_node(const std::string& op, const Tensor& x, const std::optional<std::vector<int64_t>>& axes,
                    int64_t keepdims, int64_t opset = 18, int64_t noop = 0) {
  OneNode n{op, opset, {{"x", x}}, {{"keepdims", keepdims}}, {x.dtype()}};
  bool axes_input = op == "ReduceSum" ? opset >= 13 : opset >= 18;
  if (axes) {
    if (axes_input) n.inputs.push_back({"axes", i64(*axes), true});
    else n.attrs.push_back({"axes", *axes});
  }
  if (noop) n.attrs.push_back({"noop_with_empty_axes", noop});
  return n;
}

const char* const kReduceOps[] = {"ReduceSum",  "ReduceMean",   "ReduceMax",       "ReduceMin",      "ReduceProd",
                                  "ReduceL1",   "ReduceL2",     "ReduceLogSum",    "ReduceLogSumExp", "ReduceSumSquare"};

// ---- Reduce* ---------------------------------------------------------------------------------------

// Each case compiles its own pipelines on the test device, so the cases are chosen to cover the
// shader variants (kinds, dtypes, axis layouts, flags) without repeating them.

TEST_F(GpuReduce, EveryKindOverAxisLayouts) {
  REQUIRE_GPU();
  Tensor x = random_tensor<float>({3, 4, 70}, 0.2, 1.5);  // positive: LogSum is defined
  for (const char* op : kReduceOps) {
    runtime::Tolerance tol{std::string(op) == "ReduceProd" ? 1e-3 : 1e-4, 1e-5};
    SCOPED_TRACE(op);
    run_both(reduce_node(op, x, std::vector<int64_t>{-1}, 1), tol);   // trailing axis
    run_both(reduce_node(op, x, std::vector<int64_t>{0, 2}, 0), tol);  // general index map
    run_both(reduce_node(op, x, std::nullopt, 0), tol);                // everything
  }
  // The remaining axis sets, once.
  for (const auto& axes : std::vector<std::vector<int64_t>>{{0}, {1}, {1, 2}, {0, 1}}) {
    SCOPED_TRACE("ReduceSum over " + std::to_string(axes.size()) + " axes starting at " + std::to_string(axes[0]));
    run_both(reduce_node("ReduceSum", x, axes, axes.size() == 1 ? 0 : 1));
  }
}

TEST_F(GpuReduce, AttributeAxesBeforeOpset18AndLongRows) {
  REQUIRE_GPU();
  Tensor x = random_tensor<float>({2, 1000}, -3, 3);
  run_both(reduce_node("ReduceMean", x, std::vector<int64_t>{1}, 0, 13));
  run_both(reduce_node("ReduceLogSumExp", x, std::vector<int64_t>{0}, 1, 13));
  run_both(reduce_node("ReduceMax", x, std::vector<int64_t>{1}, 1, 13));
  run_both(reduce_node("ReduceSum", x, std::vector<int64_t>{-1}, 0, 11));
}

TEST_F(GpuReduce, NoopWithEmptyAxesAndScalars) {
  REQUIRE_GPU();
  Tensor x = random_tensor<float>({2, 3}, 0.5, 2);
  for (const char* op : {"ReduceSum", "ReduceL2", "ReduceLogSum"}) {
    SCOPED_TRACE(op);
    run_both(reduce_node(op, x, std::vector<int64_t>{}, 1, 18, 1));
    run_both(reduce_node(op, Tensor::scalar<float>(1.75f), std::nullopt, 0, 18));
  }
}

TEST_F(GpuReduce, ExactInt64BeyondTwoTo32) {
  REQUIRE_GPU();
  const int64_t big = int64_t(1) << 40;
  // Hand-checked: sums, products, extremes and means whose words interact (carries, borrows, signs).
  Tensor x = Tensor::from_vector<int64_t>({2, 3}, {big + 1, big + 3, -5, -(big * 4), int64_t(0xffffffff), 7});
  auto one = [&](const char* op) {
    return run_both(reduce_node(op, x, std::vector<int64_t>{1}, 0)).at(0).to_int64_vector();
  };
  EXPECT_EQ(one("ReduceSum"), (std::vector<int64_t>{2 * big - 1, -(big * 4) + int64_t(0xffffffff) + 7}));
  EXPECT_EQ(one("ReduceMax"), (std::vector<int64_t>{big + 3, int64_t(0xffffffff)}));
  EXPECT_EQ(one("ReduceMin"), (std::vector<int64_t>{-5, -(big * 4)}));
  EXPECT_EQ(one("ReduceMean"), (std::vector<int64_t>{(2 * big - 1) / 3, (-(big * 4) + int64_t(0xffffffff) + 7) / 3}));
  EXPECT_EQ(one("ReduceL1"), (std::vector<int64_t>{2 * big + 9, big * 4 + int64_t(0xffffffff) + 7}));
  Tensor p = Tensor::from_vector<int64_t>({1, 3}, {100000, -300000, 5000007});
  EXPECT_EQ(run_both(reduce_node("ReduceProd", p, std::vector<int64_t>{1}, 0)).at(0).to_int64_vector(),
            (std::vector<int64_t>{int64_t(100000) * -300000 * 5000007}));
  // Random wide values over long rows and a general axis set, against the CPU bit for bit.
  Tensor w = wide_int64({3, 5, 300});
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
    SCOPED_TRACE(op);
    run_both(reduce_node(op, w, std::vector<int64_t>{2}, 1));
    run_both(reduce_node(op, w, std::vector<int64_t>{0, 2}, 0));
  }
  Tensor small = wide_int64({3, 40}, 1 << 12);  // products and squares that wrap modulo 2^64
  for (const char* op : {"ReduceProd", "ReduceSumSquare"}) {
    SCOPED_TRACE(op);
    run_both(reduce_node(op, small, std::vector<int64_t>{1}, 0));
  }
}

TEST_F(GpuReduce, OtherIntegerTypes) {
  REQUIRE_GPU();
  Tensor u = wide_uint64({4, 33});
  run_both(reduce_node("ReduceSum", u, std::vector<int64_t>{1}, 0));
  run_both(reduce_node("ReduceMean", u, std::vector<int64_t>{1}, 0));
  run_both(reduce_node("ReduceMax", u, std::vector<int64_t>{0}, 1));
  Tensor i32 = random_tensor<int32_t>({5, 17}, -2e9, 2e9);  // int32 sums wrap, means do not
  Tensor u32 = random_tensor<uint32_t>({5, 17}, 0, 4e9);
  run_both(reduce_node("ReduceSum", i32, std::vector<int64_t>{0}, 1));
  run_both(reduce_node("ReduceMean", i32, std::vector<int64_t>{1}, 0));
  run_both(reduce_node("ReduceMean", u32, std::vector<int64_t>{1}, 0));
  run_both(reduce_node("ReduceMin", u32, std::vector<int64_t>{1}, 0));
  run_both(reduce_node("ReduceMax", random_tensor<int8_t>({6, 9}, -128, 127), std::vector<int64_t>{1}, 0));
  run_both(reduce_node("ReduceMin", random_tensor<uint8_t>({6, 9}, 0, 255), std::vector<int64_t>{0}, 1));
}

TEST_F(GpuReduce, HalfAndDoubleFloats) {
  REQUIRE_GPU();
  runtime::Tolerance tol{5e-3, 5e-3};
  Tensor h = random_tensor<Float16>({3, 50}, -2, 2);
  Tensor d = random_tensor<double>({3, 50}, 0.1, 2);
  run_both(reduce_node("ReduceSum", h, std::vector<int64_t>{1}, 1), tol);
  run_both(reduce_node("ReduceMax", h, std::vector<int64_t>{0}, 0), tol);
  run_both(reduce_node("ReduceMean", d, std::vector<int64_t>{1}, 0), tol);
  run_both(reduce_node("ReduceLogSumExp", d, std::vector<int64_t>{1}, 0), tol);
}

TEST_F(GpuReduce, NaNAndInfinities) {
  REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_vector<float>({4, 3}, {1, nan, 3, -inf, -inf, -inf, 2, inf, 1, nan, nan, nan});
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    run_both(reduce_node(op, x, std::vector<int64_t>{1}, 0));
  }
}

TEST_F(GpuReduce, ZeroSizeReductionsGiveIdentities) {
  REQUIRE_GPU();
  Tensor x(DType::Float32, {3, 0, 2});
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSum",
                         "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    run_both(reduce_node(op, x, std::vector<int64_t>{1}, 1));
  }
  Tensor xi(DType::Int64, {2, 0});
  for (const char* op : {"ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean"}) {
    SCOPED_TRACE(op);
    auto got = run_both(reduce_node(op, xi, std::vector<int64_t>{1}, 0));
    ASSERT_EQ(got.size(), 1u);
    int64_t want = std::string(op) == "ReduceProd" ? 1
                   : std::string(op) == "ReduceMax" ? std::numeric_limits<int64_t>::min()
                   : std::string(op) == "ReduceMin" ? std::numeric_limits<int64_t>::max()
                                                     : 0;
    EXPECT_EQ(got[0].to_int64_vector(), (std::vector<int64_t>{want, want}));
  }
  // An empty output: nothing to dispatch.
  run_both(reduce_node("ReduceSum", Tensor(DType::Float32, {0, 4}), std::vector<int64_t>{1}, 0));
}

TEST_F(GpuReduce, CastToI32Int64Strategy) {
  REQUIRE_GPU();
  Tensor x = random_tensor<int64_t>({4, 30}, -1e6, 1e6);
  for (const char* op : {"ReduceSum", "ReduceMean"}) {
    SCOPED_TRACE(op);
    run_both(reduce_node(op, x, std::vector<int64_t>{1}, 0), {}, Int64Policy::Strategy::CastToI32);
  }
}

// ---- ArgMax / ArgMin -------------------------------------------------------------------------------

OneNode arg_node(const std::string& op, const Tensor& x, int64_t axis, int64_t keepdims, int64_t last) {
  return {op, 13, {{"x", x}}, {{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", last}}, {DType::Int64}};
}

TEST_F(GpuArg, FloatWithTiesAndNaN) {
  REQUIRE_GPU();
  // Many ties and a few NaN, in long rows (the last axis) and in short strided ones.
  auto make = [](const Shape& shape) {
    std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(rng()() % 9));
    for (size_t i = 17; i < v.size(); i += 131) v[i] = std::numeric_limits<float>::quiet_NaN();
    return Tensor::from_vector<float>(shape, v);
  };
  Tensor x = make({3, 4, 300}), y = make({3, 5, 20});
  for (const char* op : {"ArgMax", "ArgMin"}) {
    SCOPED_TRACE(op);
    run_both(arg_node(op, x, -1, 0, 0));
    run_both(arg_node(op, x, 2, 1, 1));
    run_both(arg_node(op, y, 0, 1, 0));
    run_both(arg_node(op, y, 1, 0, 1));
  }
}

TEST_F(GpuArg, ExactInt64AndOtherTypes) {
  REQUIRE_GPU();
  // Values that differ only in the high word, or only in a low word with its top bit set.
  const int64_t h = int64_t(1) << 32;
  Tensor x = Tensor::from_vector<int64_t>({2, 4}, {h + 0x7fffffff, h + 0x80000000LL, h + 0x80000000LL, 5,
                                                   -h, -h - 1, -1, -h - 1});
  auto idx = [&](const char* op, int64_t last) {
    return run_both(arg_node(op, x, 1, 0, last)).at(0).to_int64_vector();
  };
  EXPECT_EQ(idx("ArgMax", 0), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(idx("ArgMax", 1), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(idx("ArgMin", 0), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(idx("ArgMin", 1), (std::vector<int64_t>{3, 3}));
  Tensor w = wide_int64({3, 7, 300});
  run_both(arg_node("ArgMax", w, 2, 1, 0));
  run_both(arg_node("ArgMin", w, 1, 0, 1));
  run_both(arg_node("ArgMax", wide_uint64({7, 90}), 1, 0, 0));
  run_both(arg_node("ArgMin", random_tensor<int16_t>({7, 90}, -300, 300), 0, 1, 1));
  run_both(arg_node("ArgMax", random_tensor<Float16>({7, 90}, -5, 5), 1, 1, 0));
  run_both(arg_node("ArgMax", wide_int64({4, 50}, 1 << 30), 1, 0, 0), {}, Int64Policy::Strategy::CastToI32);
}

// ---- CumSum ----------------------------------------------------------------------------------------

OneNode cumsum_node(const Tensor& x, int64_t axis, bool axis_constant, int64_t exclusive, int64_t reverse) {
  return {"CumSum", 14, {{"x", x}, {"axis", Tensor::scalar<int64_t>(axis), axis_constant}},
          {{"exclusive", exclusive}, {"reverse", reverse}}, {x.dtype()}};
}

TEST_F(GpuCumSum, ExactInt64EveryMode) {
  REQUIRE_GPU();
  Tensor w = wide_int64({3, 4, 600}), v = wide_int64({3, 4, 50});
  for (int64_t ex : {0, 1})
    for (int64_t rev : {0, 1}) {
      SCOPED_TRACE("exclusive " + std::to_string(ex) + " reverse " + std::to_string(rev));
      run_both(cumsum_node(w, -1, true, ex, rev));           // a constant axis
      run_both(cumsum_node(v, ex ? 0 : 1, false, ex, rev));  // an axis read at run time
    }
  const int64_t big = int64_t(1) << 33;
  Tensor x = Tensor::from_vector<int64_t>({4}, {big, big + 1, -3 * big, 0xffffffffLL});
  EXPECT_EQ(run_both(cumsum_node(x, 0, true, 0, 0)).at(0).to_int64_vector(),
            (std::vector<int64_t>{big, 2 * big + 1, -big + 1, -big + 1 + 0xffffffffLL}));
  EXPECT_EQ(run_both(cumsum_node(x, 0, false, 1, 1)).at(0).to_int64_vector(),
            (std::vector<int64_t>{-2 * big + 1 + 0xffffffffLL, -3 * big + 0xffffffffLL, 0xffffffffLL, 0}));
}

TEST_F(GpuCumSum, FloatAndOtherTypes) {
  REQUIRE_GPU();
  runtime::Tolerance tol{1e-4, 1e-4};
  Tensor f = random_tensor<float>({5, 2000}, -1, 1);
  run_both(cumsum_node(f, 1, true, 0, 0), tol);
  run_both(cumsum_node(f, 0, true, 1, 1), tol);
  run_both(cumsum_node(random_tensor<double>({3, 10}, -1, 1), 1, false, 0, 0), tol);
  run_both(cumsum_node(random_tensor<int32_t>({3, 10}, -2e9, 2e9), 1, true, 1, 0));
  run_both(cumsum_node(random_tensor<uint32_t>({3, 10}, 0, 4e9), 0, false, 0, 1));
  run_both(cumsum_node(wide_uint64({3, 10}), 1, true, 0, 0));
  run_both(cumsum_node(Tensor(DType::Float32, {0, 3}), 1, true, 0, 0));
}

// ---- Softmax, LogSoftmax, Hardmax ------------------------------------------------------------------

OneNode softmax_node(const std::string& op, const Tensor& x, int64_t opset, std::optional<int64_t> axis) {
  OneNode n{op, opset, {{"x", x}}, {}, {x.dtype()}};
  if (axis) n.attrs.push_back({"axis", *axis});
  return n;
}

TEST_F(GpuSoftmax, SingleAxisAndTwoDCoercion) {
  REQUIRE_GPU();
  Tensor x = random_tensor<float>({3, 4, 300}, -20, 20), y = random_tensor<float>({3, 40, 6}, -20, 20);
  runtime::Tolerance tol{1e-4, 1e-5};
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    SCOPED_TRACE(op);
    run_both(softmax_node(op, x, 13, std::nullopt), tol);  // last axis
    run_both(softmax_node(op, y, 13, 1), tol);             // a middle axis: strided rows
    run_both(softmax_node(op, x, 11, 1), tol);             // coerced to [3, 1200]
    run_both(softmax_node(op, x, 11, std::nullopt), tol);  // default axis 1 before opset 13
  }
  run_both(softmax_node("Softmax", Tensor::scalar<float>(3.0f), 13, std::nullopt));
  run_both(softmax_node("LogSoftmax", random_tensor<Float16>({2, 40}, -4, 4), 13, std::nullopt), {5e-3, 5e-3});
  run_both(softmax_node("Softmax", random_tensor<double>({2, 40}, -4, 4), 13, 0), {1e-4, 1e-6});
  run_both(softmax_node("Hardmax", Tensor(DType::Float32, {0, 5}), 13, std::nullopt));
}

TEST_F(GpuSoftmax, LargeValuesTiesAndInfinities) {
  REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_vector<float>({5, 4}, {1000, 1000, 999, -1000,  // large: needs the shift
                                                 2, 7, 7, 1,              // Hardmax: first of the ties
                                                 -inf, -inf, -inf, -inf,  // all -inf
                                                 1, inf, 2, 3,            // +inf
                                                 nan, 1, 5, 5});
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    SCOPED_TRACE(op);
    run_both(softmax_node(op, x, 13, -1));
  }
}

// ---- Rows shorter than a workgroup: several rows per workgroup, the last workgroup partly idle ------

OneNode topk_node(const Tensor& x, int64_t k, int64_t axis, int64_t largest, int64_t opset = 11);

TEST_F(GpuSoftmax, ManyShortRowsShareWorkgroups) {
  REQUIRE_GPU();
  Tensor x = random_tensor<float>({1001, 3}, -2, 2);
  Tensor w = wide_int64({333, 5});
  run_both(reduce_node("ReduceSum", x, std::vector<int64_t>{1}, 0));
  run_both(reduce_node("ReduceLogSumExp", x, std::vector<int64_t>{1}, 1));
  run_both(reduce_node("ReduceMax", w, std::vector<int64_t>{1}, 0));
  run_both(arg_node("ArgMin", w, 1, 0, 1));
  run_both(softmax_node("Softmax", x, 13, -1));
  run_both(softmax_node("Hardmax", x, 13, -1));
  run_both(cumsum_node(w, 1, true, 1, 0));
  run_both(topk_node(w, 3, 1, 1));
}

// ---- TopK ------------------------------------------------------------------------------------------

OneNode topk_node(const Tensor& x, int64_t k, int64_t axis, int64_t largest, int64_t opset) {
  OneNode n{"TopK", opset, {{"x", x}}, {{"axis", axis}}, {x.dtype(), DType::Int64}};
  if (opset >= 10) n.inputs.push_back({"k", i64({k}), true});
  else n.attrs.push_back({"k", k});
  if (opset >= 11) n.attrs.push_back({"largest", largest});
  return n;
}

TEST_F(GpuTopK, StableTiesBothDirections) {
  REQUIRE_GPU();
  std::vector<float> v(static_cast<size_t>(3 * 4 * 400));
  for (auto& f : v) f = float(int(rng()() % 50)) * 0.5f;  // many ties: lower index first
  v[5] = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({3, 4, 400}, v);
  Tensor y = Tensor::from_vector<float>({3, 4, 10}, std::vector<float>(v.begin(), v.begin() + 120));
  for (int64_t largest : {1, 0}) {
    SCOPED_TRACE("largest " + std::to_string(largest));
    run_both(topk_node(x, 7, -1, largest));
    run_both(topk_node(y, 4, 1, largest));  // strided rows, k = n
    run_both(topk_node(y, 2, 0, largest));
  }
  run_both(topk_node(random_tensor<float>({2, 30}, -1, 1), 30, 1, 1));  // a full sort
  run_both(topk_node(x, 3, -1, 1, 1));  // k as an attribute (opset 1)
  run_both(topk_node(x, 0, -1, 1));     // empty outputs
}

TEST_F(GpuTopK, ExactInt64AndOtherTypes) {
  REQUIRE_GPU();
  const int64_t h = int64_t(1) << 32;
  Tensor x = Tensor::from_vector<int64_t>({1, 6}, {h + 0x7fffffff, -h, h + 0x80000000LL, 3, h + 0x80000000LL, -h - 1});
  auto got = run_both(topk_node(x, 4, 1, 1));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].to_int64_vector(), (std::vector<int64_t>{h + 0x80000000LL, h + 0x80000000LL, h + 0x7fffffff, 3}));
  EXPECT_EQ(got[1].to_int64_vector(), (std::vector<int64_t>{2, 4, 0, 3}));
  got = run_both(topk_node(x, 2, 1, 0));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].to_int64_vector(), (std::vector<int64_t>{-h - 1, -h}));
  EXPECT_EQ(got[1].to_int64_vector(), (std::vector<int64_t>{5, 1}));
  run_both(topk_node(wide_int64({5, 300}), 20, 1, 1));
  run_both(topk_node(wide_uint64({4, 50}), 10, 1, 0));
  run_both(topk_node(random_tensor<int32_t>({4, 50}, -100, 100), 10, 1, 1));
  run_both(topk_node(random_tensor<uint8_t>({4, 50}, 0, 20), 50, 1, 0));
  run_both(topk_node(random_tensor<Float16>({4, 50}, -3, 3), 3, 0, 1));
}

}  // namespace gpu_reduce_test
}  // namespace onnxgpu
