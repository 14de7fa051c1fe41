// The guards of the WebGPU runtime: INT64 packing, per-node fallback inside a captured graph,
// fail-loud, whole-graph fallback, INT64 strategies, status errors, signatures and replays.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>
#include <tuple>

#include "core/parallel.h"
#include "model_builder.h"
#include "one_node.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"
#include "runtime/gpu_values.h"
#include "runtime/shared_device.h"

using namespace onnxgpu;
using onnxgpu::testing::ModelBuilder;

namespace {

const std::vector<int64_t> kBig = {0, 1, -1, 3000000000LL, -3000000001LL, (1LL << 40) + 3, -(1LL << 62),
                                   std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};

SessionOptions gpu(Int64Policy::Strategy s = Int64Policy::Strategy::BitcastToI32) {
  if (std::getenv("ONNXGPU_SKIP_GPU_TESTS")) return {};
  SessionOptions o;
  o.ep = "webgpu";
  o.capture = true;
  o.int64.strategy = s;
  return o;
}

SessionOptions cpu() {
  SessionOptions o;
  o.ep = "cpu";
  return o;
}

#define SKIP_WITHOUT_GPU() \
  if (std::getenv("ONNXGPU_SKIP_GPU_TESTS")) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS is set"

void expect_same(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-6) {
  auto c = runtime::compare_tensors(a, b, {rtol, atol});
  EXPECT_TRUE(c.passed) << c.message;
}

// GPT-2's tanh GELU of x as eight nodes (x read three times, Pow by 3) reading the constants half,
// three, k, s and one, which the caller provides; the intermediate values are prefix + a, p, c, d, e,
// f, g and the result is y.
void gelu_tanh_nodes(ModelBuilder& b, const std::string& x, const std::string& y, const std::string& prefix = "") {
  auto v = [&](const char* n) { return prefix + n; };
  b.node("Mul", {x, "half"}, {v("a")});
  b.node("Pow", {x, "three"}, {v("p")});
  b.node("Mul", {v("p"), "k"}, {v("c")});
  b.node("Add", {x, v("c")}, {v("d")});
  b.node("Mul", {v("d"), "s"}, {v("e")});
  b.node("Tanh", {v("e")}, {v("f")});
  b.node("Add", {v("f"), "one"}, {v("g")});
  b.node("Mul", {v("a"), v("g")}, {y});
}

}  // namespace

TEST(RuntimeInt64, PackingRoundTripsLosslessly) {
  Tensor t = Tensor::from_vector<int64_t>({int64_t(kBig.size())}, kBig);
  Int64Policy bitcast;
  runtime::GpuUpload u = runtime::to_gpu(t, bitcast, "t");
  ASSERT_EQ(u.bytes, kBig.size() * 8);
  // Two 32-bit words per element, low word first: the layout the WGSL helpers read.
  const auto* words = static_cast<const uint32_t*>(u.data);
  for (size_t i = 0; i < kBig.size(); ++i) {
    EXPECT_EQ(words[2 * i], uint32_t(uint64_t(kBig[i])));
    EXPECT_EQ(words[2 * i + 1], uint32_t(uint64_t(kBig[i]) >> 32));
  }
  Tensor back = runtime::from_gpu(u.data, DType::Int64, t.shape(), bitcast);
  for (size_t i = 0; i < kBig.size(); ++i) EXPECT_EQ(back.data<int64_t>()[i], kBig[i]);
}

TEST(RuntimeInt64, NarrowingChecksTheRangeAndNamesTheTensor) {
  Int64Policy cast;
  cast.strategy = Int64Policy::Strategy::CastToI32;
  Tensor ok = Tensor::from_vector<int64_t>({3}, {-5, 0, 2147483647});
  runtime::GpuUpload u = runtime::to_gpu(ok, cast, "ok");
  EXPECT_EQ(u.bytes, 12u);
  Tensor back = runtime::from_gpu(u.data, DType::Int64, {3}, cast);
  EXPECT_EQ(back.data<int64_t>()[0], -5);
  Tensor bad = Tensor::from_vector<int64_t>({2}, {1, 3000000000LL});
  try {
    runtime::to_gpu(bad, cast, "input_ids");
    FAIL() << "expected an error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'input_ids'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3000000000"), std::string::npos) << e.what();
  }
}

TEST(RuntimeInt64, GpuRoundTripAndArithmeticBeyond32Bits) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("a", DType::Int64, {-1}).input("b", DType::Int64, {-1});
  b.node("Add", {"a", "b"}, {"sum"});
  b.node("Mul", {"a", "b"}, {"prod"});
  b.node("Identity", {"a"}, {"same"});
  b.output("sum", DType::Int64).output("prod", DType::Int64).output("same", DType::Int64);
  Session g = Session::from_bytes(b.bytes(), gpu());
  Session c = Session::from_bytes(b.bytes(), cpu());
  std::vector<int64_t> bs(kBig.rbegin(), kBig.rend());
  std::unordered_map<std::string, Tensor> feeds{
      {"a", Tensor::from_vector<int64_t>({int64_t(kBig.size())}, kBig)},
      {"b", Tensor::from_vector<int64_t>({int64_t(bs.size())}, bs)}};
  auto want = c.run(feeds);
  for (int run = 0; run < 3; ++run) {
    auto got = g.run(feeds);
    ASSERT_EQ(got.size(), 3u);
    for (size_t k = 0; k < 3; ++k) expect_same(got[k], want[k]);
    EXPECT_EQ(g.last_plan().replayed, run > 0);
  }
  EXPECT_EQ(g.last_plan().cpu_nodes, 0);
  EXPECT_GE(g.last_plan().int64_on_gpu, 2);
}

// A node without a GPU kernel (MaxUnpool) runs on the CPU alone; the rest stays captured around it.
static std::string cpu_node_model() {
  ModelBuilder b;
  b.input("x", DType::Float32, {2, 3, 2, 2});
  b.initializer("where", Tensor::from_vector<int64_t>({2, 3, 2, 2}, [] {
    std::vector<int64_t> w(24);
    for (size_t i = 0; i < w.size(); ++i) w[i] = int64_t(i % 4) * 5;  // each value's place in its 4 x 4 plane
    return w;
  }()));
  b.node("Add", {"x", "x"}, {"twice"});
  onnx::NodeProto& unpool = b.node("MaxUnpool", {"twice", "where"}, {"unpooled"}, "the_unpool");
  ModelBuilder::attr(unpool, "kernel_shape", std::vector<int64_t>{2, 2});
  ModelBuilder::attr(unpool, "strides", std::vector<int64_t>{2, 2});
  b.node("Mul", {"unpooled", "unpooled"}, {"y"});
  b.output("y", DType::Float32);
  return b.bytes();
}

TEST(RuntimeCapture, OneCpuNodeSplitsTheCaptureInsteadOfDroppingIt) {
  SKIP_WITHOUT_GPU();
  Session g = Session::from_bytes(cpu_node_model(), gpu());
  Session c = Session::from_bytes(cpu_node_model(), cpu());
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 7) * 0.25f - 0.5f + (i % 4 == 0 ? 1.0f : 0.0f);
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({2, 3, 2, 2}, v)}};
  auto want = c.run(feeds);
  for (int run = 0; run < 3; ++run) expect_same(g.run(feeds).at(0), want.at(0));
  const PlanReport& p = g.last_plan();
  EXPECT_TRUE(p.captured);
  EXPECT_TRUE(p.replayed);
  EXPECT_FALSE(p.whole_graph_fallback);
  EXPECT_EQ(p.cpu_nodes, 1);
  EXPECT_EQ(p.gpu_nodes, 2);
  EXPECT_EQ(p.segments, 2);
  ASSERT_EQ(p.fallbacks.size(), 1u);
  EXPECT_EQ(p.fallbacks[0].op, "MaxUnpool");
  EXPECT_EQ(p.fallbacks[0].node, "the_unpool");
}

TEST(RuntimeCapture, FailLoudNamesNodeOpDtypesAndReason) {
  SKIP_WITHOUT_GPU();
  SessionOptions o = gpu();
  o.int64.fail_loud = true;
  Session g = Session::from_bytes(cpu_node_model(), o);
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor(DType::Float32, {2, 3, 2, 2})}};
  try {
    g.run(feeds);
    FAIL() << "expected fail_loud to refuse the CPU fallback";
  } catch (const Error& e) {
    std::string m = e.what();
    for (const char* part : {"fail_loud", "the_unpool", "MaxUnpool", "float32", "no GPU kernel"})
      EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
  }
}

TEST(RuntimeCapture, WholeGraphFallbackWhenPerOpFallbackIsOff) {
  SKIP_WITHOUT_GPU();
  SessionOptions o = gpu();
  o.int64.fallback_per_op_not_whole_graph = false;
  Session g = Session::from_bytes(cpu_node_model(), o);
  Session c = Session::from_bytes(cpu_node_model(), cpu());
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({2, 3, 2, 2}, std::vector<float>(24, 0.5f))}};
  expect_same(g.run(feeds).at(0), c.run(feeds).at(0));
  EXPECT_TRUE(g.last_plan().whole_graph_fallback);
}

TEST(RuntimeInt64, PerOpOptinReproducesOrtWebGpuFallbacks) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("a", DType::Int64, {4});
  b.node("Add", {"a", "a"}, {"y"});
  b.output("y", DType::Int64);
  std::unordered_map<std::string, Tensor> feeds{{"a", Tensor::from_vector<int64_t>({4}, {1, -2, 3000000000LL, 5})}};
  Session old = Session::from_bytes(b.bytes(), gpu(Int64Policy::Strategy::PerOpOptin));
  Session now = Session::from_bytes(b.bytes(), gpu());
  auto y_old = old.run(feeds), y_now = now.run(feeds);
  expect_same(y_old[0], y_now[0]);
  EXPECT_EQ(y_now[0].data<int64_t>()[2], 6000000000LL);
  EXPECT_EQ(now.last_plan().cpu_nodes, 0);
  ASSERT_EQ(old.last_plan().cpu_nodes, 1);
  EXPECT_NE(old.last_plan().fallbacks.at(0).reason.find("per_op_optin"), std::string::npos);
}

TEST(RuntimeInt64, CastToI32OverflowOnTheGpuIsAnErrorNotAWrongNumber) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("a", DType::Int64, {2});
  b.node("Mul", {"a", "a"}, {"y"}, "square");
  b.output("y", DType::Int64);
  Session g = Session::from_bytes(b.bytes(), gpu(Int64Policy::Strategy::CastToI32));
  // In range: exact.
  auto y = g.run({{"a", Tensor::from_vector<int64_t>({2}, {-40000, 3})}});
  EXPECT_EQ(y[0].data<int64_t>()[0], 1600000000LL);
  // 50000^2 does not fit in int32: the GPU flags it and the run fails naming the node.
  try {
    g.run({{"a", Tensor::from_vector<int64_t>({2}, {50000, 3})}});
    FAIL() << "expected an overflow error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("square"), std::string::npos) << m;
    EXPECT_NE(m.find("does not fit in int32"), std::string::npos) << m;
  }
}

// Integer Pow under cast_to_i32 (ipow_i64n): a result that fits is exact even where one more squaring
// of the base would not fit (65536^1, -2^31 = (-2)^31); a result beyond int32 is an overflow error.
TEST(RuntimeInt64, CastToI32PowFlagsOnlyResultsBeyondInt32) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("a", DType::Int64, {4});
  b.input("e", DType::Int64, {4});
  b.node("Pow", {"a", "e"}, {"y"}, "power");
  b.output("y", DType::Int64);
  Session g = Session::from_bytes(b.bytes(), gpu(Int64Policy::Strategy::CastToI32));
  auto y = g.run({{"a", Tensor::from_vector<int64_t>({4}, {65536, -2, 3, -1})},
                  {"e", Tensor::from_vector<int64_t>({4}, {1, 31, 19, -2147483647})}});
  const std::vector<int64_t> want{65536, -2147483648LL, 1162261467, -1};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y[0].data<int64_t>()[i], want[i]) << i;
  try {
    g.run({{"a", Tensor::from_vector<int64_t>({4}, {65536, -2, 3, -1})},
           {"e", Tensor::from_vector<int64_t>({4}, {2, 31, 19, 5})}});
    FAIL() << "expected an overflow error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("power"), std::string::npos) << m;
    EXPECT_NE(m.find("does not fit in int32"), std::string::npos) << m;
  }
}

TEST(RuntimeInt64, SliceWithInt64MaxEndsUnderEveryStrategy) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Int64, {-1});
  b.initializer("starts", Tensor::from_vector<int64_t>({1}, {1}));
  b.initializer("ends", Tensor::from_vector<int64_t>({1}, {std::numeric_limits<int64_t>::max()}));
  b.node("Slice", {"x", "starts", "ends"}, {"y"});
  b.output("y", DType::Int64);
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<int64_t>({4}, {7, -8, 9, 10})}};
  for (auto s : {Int64Policy::Strategy::BitcastToI32, Int64Policy::Strategy::CastToI32, Int64Policy::Strategy::PerOpOptin}) {
    Session g = Session::from_bytes(b.bytes(), gpu(s));
    for (int run = 0; run < 2; ++run) {
      auto y = g.run(feeds);
      ASSERT_EQ(y[0].shape(), (Shape{3})) << Int64Policy::strategy_name(s);
      EXPECT_EQ(y[0].data<int64_t>()[0], -8);
      EXPECT_EQ(y[0].data<int64_t>()[2], 10);
    }
  }
}

TEST(RuntimeStatus, IntegerDivisionByZeroOnTheGpuNamesTheNode) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("a", DType::Int64, {3}).input("b", DType::Int64, {3});
  b.node("Div", {"a", "b"}, {"y"}, "the_div");
  b.output("y", DType::Int64);
  Session g = Session::from_bytes(b.bytes(), gpu());
  auto ok = g.run({{"a", Tensor::from_vector<int64_t>({3}, {-7, 6000000000LL, 9})},
                   {"b", Tensor::from_vector<int64_t>({3}, {2, -3, 9})}});
  EXPECT_EQ(ok[0].data<int64_t>()[0], -3);  // truncation toward zero
  EXPECT_EQ(ok[0].data<int64_t>()[1], -2000000000LL);
  try {
    g.run({{"a", Tensor::from_vector<int64_t>({3}, {1, 2, 3})}, {"b", Tensor::from_vector<int64_t>({3}, {1, 0, 1})}});
    FAIL() << "expected a division-by-zero error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("the_div"), std::string::npos) << m;
    EXPECT_NE(m.find("division by zero"), std::string::npos) << m;
  }
}

TEST(RuntimeCapture, SignaturesAreRecordedOnceAndReplayed) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {-1, 4});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::Float32);
  Session g = Session::from_bytes(b.bytes(), gpu());
  auto feed = [](int64_t rows, float v) {
    return std::unordered_map<std::string, Tensor>{{"x", Tensor::from_vector<float>({rows, 4}, std::vector<float>(size_t(rows) * 4, v))}};
  };
  EXPECT_EQ(g.run(feed(2, -1.0f))[0].data<float>()[0], 0.0f);
  EXPECT_FALSE(g.last_plan().replayed);
  EXPECT_EQ(g.run(feed(5, 2.0f))[0].shape(), (Shape{5, 4}));  // same family: the plan refreshed, replayed
  EXPECT_TRUE(g.last_plan().replayed && g.last_plan().refreshed);
  EXPECT_EQ(g.run(feed(5, 4.0f))[0].data<float>()[19], 4.0f);  // the signature it serves now: a plain replay
  EXPECT_TRUE(g.last_plan().replayed && !g.last_plan().refreshed);
  auto y = g.run(feed(2, 3.0f));  // the first signature again: refreshed back, replayed with new values
  EXPECT_TRUE(g.last_plan().replayed && g.last_plan().refreshed);
  EXPECT_EQ(y[0].shape(), (Shape{2, 4}));
  EXPECT_EQ(y[0].data<float>()[7], 3.0f);
}

// The plan report's signature: every input by name, "name:dtype[shape]", "@gpu" for a device feed.
TEST(RuntimeCapture, TheSignatureNamesEveryInputsDtypeAndShape) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {-1, 4}).input("a", DType::Int64, {-1});
  b.node("Relu", {"x"}, {"y"});
  b.node("Identity", {"a"}, {"z"});
  b.output("y", DType::Float32).output("z", DType::Int64);
  Session g = Session::from_bytes(b.bytes(), gpu());
  auto out = g.run_on_device({{"x", Tensor(DType::Float32, {2, 4})}, {"a", Tensor(DType::Int64, {3})}});
  EXPECT_EQ(g.last_plan().signature, "a:int64[3] x:float32[2,4]");
  g.run_on_device({{"a", Tensor(DType::Int64, {1000})}}, {{"x", out.at(0)}});
  EXPECT_EQ(g.last_plan().signature, "a:int64[1000] x:float32[2,4]@gpu");
}

// Outputs read back every run land in host memory that the next runs use again once the caller has let
// go of the tensor on it; a tensor the caller holds keeps its values.
TEST(RuntimeCapture, OutputsLandInHostMemoryUsedAgainOnceReleased) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {4});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::Float32);
  Session g = Session::from_bytes(b.bytes(), gpu());
  auto feed = [](float v) { return std::unordered_map<std::string, Tensor>{{"x", Tensor::from_vector<float>({4}, {v, v, v, v})}}; };
  Tensor first = g.run(feed(1.0f))[0];
  Tensor second = g.run(feed(2.0f))[0];  // `first` is held: elsewhere
  EXPECT_NE(first.data<float>(), second.data<float>());
  const float* where = second.data<float>();
  second = Tensor();
  auto decoy = std::make_unique<std::byte[]>(4 * sizeof(float));  // would take memory freed just now
  Tensor third = g.run(feed(3.0f))[0];  // `second` let go: its memory
  EXPECT_EQ(third.data<float>(), where);
  EXPECT_EQ(third.data<float>()[3], 3.0f);
  EXPECT_EQ(first.data<float>()[3], 1.0f);
  Tensor fourth = g.run_on_device(feed(4.0f)).at(0).to_host();  // read with the run, the same way
  EXPECT_NE(fourth.data<float>(), third.data<float>());
  EXPECT_EQ(fourth.data<float>()[0], 4.0f);
  EXPECT_EQ(third.data<float>()[0], 3.0f);
}

TEST(RuntimeErrors, WrongDtypeShapeAndMissingInputsAreClear) {
  ModelBuilder b;
  b.input("ids", DType::Int64, {-1, 8});
  b.node("Identity", {"ids"}, {"y"});
  b.output("y", DType::Int64);
  Session c = Session::from_bytes(b.bytes(), cpu());
  auto msg = [&](const std::unordered_map<std::string, Tensor>& f) {
    try {
      c.run(f);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({{"ids", Tensor(DType::Int32, {1, 8})}}).find("expected tensor(int64), got tensor(int32)"), std::string::npos);
  EXPECT_NE(msg({{"ids", Tensor(DType::Int64, {1, 7})}}).find("expected shape [d0,8]"), std::string::npos);
  EXPECT_NE(msg({}).find("input 'ids'"), std::string::npos);
  EXPECT_NE(msg({{"ids", Tensor(DType::Int64, {1, 8})}, {"nope", Tensor(DType::Int64, {1})}}).find("'nope'"), std::string::npos);
}

TEST(RuntimeIoBinding, OutputsStayOnTheGpuAndFeedTheNextRun) {
  SKIP_WITHOUT_GPU();
  // state' = state + step: a loop the host drives without reading the state back.
  ModelBuilder b;
  b.input("state", DType::Int64, {-1}).input("step", DType::Int64, {-1});
  b.node("Add", {"state", "step"}, {"next"});
  b.output("next", DType::Int64);
  Session g = Session::from_bytes(b.bytes(), gpu());
  Tensor step = Tensor::from_vector<int64_t>({3}, {1LL << 33, -1, 7});
  auto out = g.run_on_device({{"state", Tensor::from_vector<int64_t>({3}, {0, 0, 0})}, {"step", step}});
  for (int i = 0; i < 4; ++i) out = g.run_on_device({{"step", step}}, {{"state", out.at(0)}});
  EXPECT_TRUE(g.last_plan().replayed);
  Tensor host = out.at(0).to_host();
  EXPECT_EQ(host.data<int64_t>()[0], 5 * (1LL << 33));
  EXPECT_EQ(host.data<int64_t>()[1], -5);
  EXPECT_EQ(host.data<int64_t>()[2], 35);
  Session c = Session::from_bytes(b.bytes(), cpu());
  EXPECT_THROW(c.run_on_device({{"state", step}, {"step", step}}), InvalidArgument);
}

// A small output of run_on_device is read back in the run's own wait (its to_host() waits for
// nothing); a large one is read when asked. Both read the values of the run that made them, and what
// to_host() returns is the caller's own (the values read with the run go to the first to_host()).
TEST(RuntimeIoBinding, SmallOutputsAreReadWithTheRun) {
  SKIP_WITHOUT_GPU();
  const int64_t rows = (int64_t(4) << 20) / 16 + 1;  // [rows, 4] floats: over what a run reads with itself
  ModelBuilder b;
  b.input("x", DType::Float32, {4}).input("shape", DType::Int64, {2});
  b.node("Relu", {"x"}, {"small"});
  b.node("Expand", {"x", "shape"}, {"wide"});
  b.node("Reshape", {"wide", "flat"}, {"large"});
  b.initializer("flat", Tensor::from_vector<int64_t>({1}, {-1}));
  b.output("small", DType::Float32).output("large", DType::Float32);
  Session g = Session::from_bytes(b.bytes(), gpu());
  const Tensor shape = Tensor::from_vector<int64_t>({2}, {rows, 4});
  auto first = g.run_on_device({{"x", Tensor::from_vector<float>({4}, {-1, 2, -3, 4})}, {"shape", shape}});
  auto second = g.run_on_device({{"x", Tensor::from_vector<float>({4}, {5, -6, 7, -8})}, {"shape", shape}});
  EXPECT_TRUE(g.last_plan().replayed);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_NE(first[0].storage()->host, nullptr);   // read with its run
  EXPECT_EQ(first[1].storage()->host, nullptr);   // too large: read when asked
  Tensor a = first[0].to_host();
  EXPECT_EQ(first[0].storage()->host, nullptr);  // handed over, not copied: a later to_host() reads the buffer
  EXPECT_EQ(a.data<float>()[1], 2.0f);
  a.data<float>()[1] = 99.0f;  // the caller's own
  EXPECT_EQ(first[0].to_host().data<float>()[1], 2.0f);
  EXPECT_EQ(second[0].to_host().data<float>()[0], 5.0f);
  EXPECT_EQ(second[0].to_host().data<float>()[3], 0.0f);
  std::vector<Tensor> both = DeviceTensor::to_host(second);
  EXPECT_EQ(both[0].data<float>()[2], 7.0f);
  ASSERT_EQ(both[1].numel(), rows * 4);
  EXPECT_EQ(both[1].data<float>()[rows * 4 - 1], -8.0f);
  EXPECT_EQ(first[1].to_host().data<float>()[0], -1.0f);
}

// A replay repeated submits the commands encoded while the GPU ran the run before; where the plan's
// dispatches changed since (a refresh for other sizes: another grid, other buffers), they are dropped
// and the run encodes anew. Every run equals the CPU reference.
TEST(RuntimeCapture, RepeatedReplaysSubmitCommandsEncodedAhead) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {-1});
  b.initializer("two", Tensor::from_vector<float>({}, {2.0f}));
  b.node("Relu", {"x"}, {"r"});
  b.node("Mul", {"r", "two"}, {"m"});
  b.node("Sin", {"m"}, {"y"});
  b.output("y", DType::Float32);
  Session g = Session::from_bytes(b.bytes(), gpu());
  Session c = Session::from_bytes(b.bytes(), cpu());
  const std::vector<int64_t> sizes{5, 5, 5, 3000, 3000, 3000, 5, 5, 5};
  std::vector<bool> ahead;
  for (size_t run = 0; run < sizes.size(); ++run) {
    Tensor x = onnxgpu::testing::random_float(DType::Float32, {sizes[run]}, uint32_t(run + 1));
    auto got = g.run({{"x", x}});
    auto want = c.run({{"x", x}});
    auto cmp = runtime::compare_tensors(got[0], want[0], {1e-5, 1e-6});
    EXPECT_TRUE(cmp.passed) << "run " << run << ": " << cmp.message;
    ahead.push_back(g.last_plan().encoded_ahead);
  }
  EXPECT_FALSE(ahead[0]);  // planned
  EXPECT_FALSE(ahead[1]);  // the first replay encodes the next run's commands
  EXPECT_TRUE(ahead[2]);
  EXPECT_FALSE(ahead[3]);  // other sizes: other grids, the commands encoded ahead are dropped
  EXPECT_TRUE(ahead[5]);
  EXPECT_TRUE(ahead[8]);
}

TEST(RuntimeCapture, ShapeLikeGraphInputsKeyThePlanOnTheirValues) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {12}).input("shape", DType::Int64, {2});
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.node("Relu", {"y"}, {"z"});
  b.output("z", DType::Float32);
  SessionOptions o = gpu();
  o.int64.fail_loud = true;  // Reshape must stay on the GPU although its shape is a graph input
  Session g = Session::from_bytes(b.bytes(), o);
  Tensor x = Tensor::from_vector<float>({12}, {-1, 2, -3, 4, -5, 6, -7, 8, -9, 10, -11, 12});
  auto run = [&](std::vector<int64_t> s) { return g.run({{"x", x}, {"shape", Tensor::from_vector<int64_t>({2}, s)}})[0]; };
  EXPECT_EQ(run({2, 6}).shape(), (Shape{2, 6}));
  EXPECT_EQ(g.last_plan().value_keyed_inputs, std::vector<std::string>{"shape"});
  Tensor y = run({3, -1});
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  EXPECT_FALSE(g.last_plan().replayed);  // another value: planned again
  EXPECT_EQ(y.data<float>()[3], 4.0f);
  EXPECT_EQ(run({2, 6}).shape(), (Shape{2, 6}));
  EXPECT_TRUE(g.last_plan().replayed);  // the first value again: its recorded plan
}

TEST(RuntimeProfile, TimesEveryNodeWithoutChangingTheResults) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {-1, 4}).output("y", DType::Float32);
  b.initializer("w", Tensor::from_vector<float>({4, 4}, std::vector<float>(16, 0.25f)));
  b.node("MatMul", {"x", "w"}, {"h"}, "mm");
  b.node("Softmax", {"h"}, {"y"}, "softmax");  // (not an activation: the product's epilogue would take it)
  std::string why;
  std::optional<Session> made = onnxgpu::testing::profiling_session(b.bytes(), gpu(), why);
  if (!made) GTEST_SKIP() << "profiling cannot run on this adapter: " << why;
  Session& s = *made;
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({3, 4}, std::vector<float>(12, 2.0f))}};
  Tensor want = Session::from_bytes(b.bytes(), cpu()).run(feeds)[0];
  s.run(feeds);
  s.reset_profile();
  for (int i = 0; i < 3; ++i) expect_same(s.run(feeds)[0], want);
  Profile p = s.profile();
  EXPECT_EQ(p.runs, 3);
  ASSERT_EQ(p.nodes.size(), 2u);
  EXPECT_EQ(p.nodes[0].node, "mm");
  EXPECT_EQ(p.nodes[0].op, "MatMul");
  EXPECT_EQ(p.nodes[1].op, "Softmax");
  EXPECT_EQ(p.nodes[0].flops, 2u * 3 * 4 * 4);  // the product's multiply-adds, for its GFLOP/s
  EXPECT_EQ(p.nodes[1].flops, 0u);
  for (const auto& n : p.nodes) {
    EXPECT_GE(n.dispatches, 1) << n.node;
    EXPECT_GE(n.gpu_ms, 0.0) << n.node;
  }
  EXPECT_GT(p.gpu_ms, 0.0);
  EXPECT_TRUE(Session::from_bytes(b.bytes(), cpu()).profile().nodes.empty());
}

// Runs `g` twice (record, replay) and compares every output with the CPU reference of `model`.
// (rtol: float sums in another order, e.g. split-K over a long K, differ in the last bits.)
void recorded_and_replayed_match_cpu(Session& g, const std::string& model,
                                     const std::unordered_map<std::string, Tensor>& feeds, double rtol = 1e-5,
                                     double atol = 1e-6) {
  auto want = Session::from_bytes(model, cpu()).run(feeds);
  for (int run = 0; run < 2; ++run) {
    auto got = g.run(feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) expect_same(got[k], want[k], rtol, atol);
  }
}

// MatMul followed by an Add of a constant row runs as one kernel; other shapes of Add, or a MatMul
// output that something else reads, keep the two nodes apart. Results match the CPU either way.
TEST(RuntimeFusion, MatMulBiasRunsAsOneKernelOnlyWhenSafe) {
  SKIP_WITHOUT_GPU();
  auto model = [](const std::vector<int64_t>& bias_shape, bool expose_product, bool bias_first) {
    ModelBuilder b;
    b.input("x", DType::Float32, {-1, 5, 6}).output("y", DType::Float32);
    if (expose_product) b.output("h", DType::Float32);
    std::vector<float> w(42), c(size_t(shape_numel(bias_shape)));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * float(int(i % 7) - 3);
    for (size_t i = 0; i < c.size(); ++i) c[i] = 0.5f * float(i) - 1.0f;
    b.initializer("w", Tensor::from_vector<float>({6, 7}, w));
    b.initializer("c", Tensor::from_vector<float>(bias_shape, c));
    b.node("MatMul", {"x", "w"}, {"h"}, "mm");
    b.node("Add", bias_first ? std::vector<std::string>{"c", "h"} : std::vector<std::string>{"h", "c"}, {"y"}, "bias");
    return b.bytes();
  };
  std::vector<float> xs(60);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(int(i % 11) - 5) * 0.25f;
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({2, 5, 6}, xs)}};
  struct Case {
    std::vector<int64_t> bias;
    bool expose, bias_first;
    int fused;
  };
  for (const Case& c : {Case{{7}, false, false, 2}, Case{{1, 1, 7}, false, true, 2}, Case{{5, 7}, false, false, 0},
                        Case{{7}, true, false, 0}}) {
    std::string m = model(c.bias, c.expose, c.bias_first);
    Session g = Session::from_bytes(m, gpu());
    recorded_and_replayed_match_cpu(g, m, feeds);
    EXPECT_EQ(g.last_plan().fused_nodes, c.fused) << shape_str(c.bias) << (c.expose ? " exposed" : "");
    EXPECT_EQ(g.last_plan().dispatches, c.fused ? 1 : 2);
    EXPECT_EQ(g.last_plan().gpu_nodes, 2);
  }
}

// GPT-2's GELU (eight nodes, x read three times, Pow by 3 on negative values) runs as one kernel;
// an intermediate value that the graph also outputs keeps its node out of the group.
TEST(RuntimeFusion, ElementwiseChainsRunAsOneKernel) {
  SKIP_WITHOUT_GPU();
  auto gelu = [](bool expose_tanh, bool int_exponent) {
    ModelBuilder b;
    b.input("x", DType::Float32, {-1, 6}).output("y", DType::Float32);
    if (expose_tanh) b.output("f", DType::Float32);
    b.initializer("half", Tensor::scalar<float>(0.5f));
    if (int_exponent) b.initializer("three", Tensor::scalar<int64_t>(3));
    else b.initializer("three", Tensor::scalar<float>(3.0f));
    b.initializer("k", Tensor::scalar<float>(0.044715f));
    b.initializer("s", Tensor::scalar<float>(0.7978845608f));
    b.initializer("one", Tensor::scalar<float>(1.0f));
    gelu_tanh_nodes(b, "x", "y");
    return b.bytes();
  };
  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(int(i) - 12) * 0.37f;
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({4, 6}, xs)}};
  struct Case {
    bool expose, int_exponent;
    int fused, dispatches;
  };
  for (const Case& c : {Case{false, false, 8, 1}, Case{false, true, 8, 1}, Case{true, false, 8, 2}}) {
    std::string m = gelu(c.expose, c.int_exponent);
    Session g = Session::from_bytes(m, gpu());
    recorded_and_replayed_match_cpu(g, m, feeds);
    EXPECT_EQ(g.last_plan().fused_nodes, c.fused) << c.expose;
    EXPECT_EQ(g.last_plan().dispatches, c.dispatches) << c.expose;
    EXPECT_EQ(g.last_plan().gpu_nodes, 8);
  }
}

// Float16 and bfloat16 groups run as one kernel that computes in f32 and rounds each step's value to the
// type, as the nodes alone store it: bit for bit the nodes' results, the unfused plan's (an x * x past
// float16's range is inf there, and stays inf through the Div that would bring it back in f32), and
// the CPU reference's within the type's precision.
TEST(RuntimeFusion, Float16GroupsRoundEachStepAsTheNodesWould) {
  SKIP_WITHOUT_GPU();
  for (DType t : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    ModelBuilder b;
    b.input("x", t, {-1}).output("y", t);
    b.initializer("k", Tensor::scalar<float>(1000.0f).cast(t));
    b.node("Mul", {"x", "x"}, {"a"});
    b.node("Div", {"a", "k"}, {"d"});
    b.node("Sub", {"d", "x"}, {"c"});
    b.node("Tanh", {"c"}, {"h"});
    b.node("Mul", {"h", "d"}, {"y"});
    std::vector<float> xs{300.0f, -300.0f, 1.5f, -2.0f, 0.25f, 0.001f, 3.14159f, 255.9f, -0.7f, 60.0f};
    std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({10}, xs).cast(t)}};
    SessionOptions off = gpu();
    off.add_config_entry("onnxgpu.fusion", "0");
    Session unfused = Session::from_bytes(b.bytes(), off);
    Session fused = Session::from_bytes(b.bytes(), gpu());
    recorded_and_replayed_match_cpu(fused, b.bytes(), feeds, 1e-2, 1e-2);
    const Tensor want = unfused.run(feeds)[0];
    expect_same(fused.run(feeds)[0], want, 0, 0);
    EXPECT_EQ(fused.last_plan().dispatches, 1);
    EXPECT_EQ(unfused.last_plan().dispatches, 5);
    if (t == DType::Float16) {
      EXPECT_TRUE(std::isinf(want.cast(DType::Float32).data<float>()[0]));
    }
  }
}

// Node by node, a value two members read keeps its buffer until both have run. An elementwise group
// over int64 values (the fused kernel computes float32: it refuses, and its members run one by one): n,
// made by its first member, is read by its second and its last. Released after the second, its buffer
// went to the next output (the same size), which the last then read as n, or bound twice (a WebGPU
// validation error: a float16 GELU in a Swin-T converted to float16 stopped on it). Values beyond 2^32.
TEST(RuntimeFusion, AGroupRunNodeByNodeKeepsWhatItsMembersRead) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Int64, {-1, 96}).output("y", DType::Int64);
  b.initializer("three", Tensor::scalar<int64_t>(3));
  b.initializer("big", Tensor::scalar<int64_t>(int64_t(1) << 35));
  b.node("Neg", {"x"}, {"n"});
  b.node("Mul", {"n", "three"}, {"d"});
  b.node("Abs", {"d"}, {"e"});
  b.node("Add", {"e", "big"}, {"e1"});
  b.node("Sub", {"n", "e1"}, {"y"});
  std::vector<int64_t> xs(size_t(40 * 96));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = (int64_t(i % 61) - 30) * ((int64_t(1) << 33) + 7);
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<int64_t>({40, 96}, xs)}};
  Session g = Session::from_bytes(b.bytes(), gpu());
  recorded_and_replayed_match_cpu(g, b.bytes(), feeds, 0, 0);
  EXPECT_EQ(g.last_plan().cpu_nodes, 0);
  EXPECT_EQ(g.last_plan().fused_nodes, 0);
  EXPECT_EQ(g.last_plan().dispatches, 5);
  // Self-attention over a computed h (its queries, keys and values) in float16, which the attention
  // kernel does not take: its parts run, the score product as a group of its own, and h keeps its
  // buffer for the product with the probabilities (whose size, L = D, is h's).
  ModelBuilder a;
  a.input("x", DType::Float16, {2, 32, 32}).output("y", DType::Float16);
  a.node("Neg", {"x"}, {"h"});
  auto& t = a.node("Transpose", {"h"}, {"ht"});
  auto* perm = t.add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t v : {0, 2, 1}) perm->add_ints(v);
  a.node("MatMul", {"h", "ht"}, {"s"});
  a.node("Softmax", {"s"}, {"p"});
  a.node("MatMul", {"p", "h"}, {"y"});
  std::vector<float> vs(size_t(2 * 32 * 32));
  for (size_t i = 0; i < vs.size(); ++i) vs[i] = 0.03f * float(int(i % 37) - 18);
  std::unordered_map<std::string, Tensor> attention_feeds{{"x", Tensor::from_vector<float>({2, 32, 32}, vs).cast(DType::Float16)}};
  Session ga = Session::from_bytes(a.bytes(), gpu());
  recorded_and_replayed_match_cpu(ga, a.bytes(), attention_feeds, 2e-3, 2e-3);
  EXPECT_EQ(ga.last_plan().cpu_nodes, 0);
}

// x + (MatMul(x, W) + b), the residual of a transformer block, runs as one kernel with the bias and
// the residual in the epilogue, with and without split-K (long K, few rows).
TEST(RuntimeFusion, ResidualAddJoinsTheMatMulEpilogue) {
  SKIP_WITHOUT_GPU();
  for (int64_t k : {6, 1024}) {
    ModelBuilder b;
    b.input("x", DType::Float32, {-1, 3, k}).output("y", DType::Float32);
    std::vector<float> w(static_cast<size_t>(k * k)), c(static_cast<size_t>(k));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * float(int(i % 13) - 6);
    for (size_t i = 0; i < c.size(); ++i) c[i] = 0.25f * float(int(i % 5) - 2);
    b.initializer("w", Tensor::from_vector<float>({k, k}, w));
    b.initializer("c", Tensor::from_vector<float>({k}, c));
    b.node("MatMul", {"x", "w"}, {"h"});
    b.node("Add", {"c", "h"}, {"hb"});
    b.node("Add", {"x", "hb"}, {"y"});
    std::vector<float> xs(size_t(2 * 3 * k));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(int(i % 17) - 8) * 0.125f;
    std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({2, 3, k}, xs)}};
    Session g = Session::from_bytes(b.bytes(), gpu());
    recorded_and_replayed_match_cpu(g, b.bytes(), feeds);
    EXPECT_EQ(g.last_plan().fused_nodes, 3) << k;
    EXPECT_EQ(g.last_plan().gpu_nodes, 3) << k;
  }
}

// A product without bias and the residual Add after it (T5's and Llama's output projections) is one
// kernel too: one row (the one-row kernel), six rows, and a K long enough to split (the summing pass
// adds the residual); either operand order of the Add.
TEST(RuntimeFusion, ResidualAddWithoutBiasJoinsTheMatMulEpilogue) {
  SKIP_WITHOUT_GPU();
  for (int64_t k : {6, 1024})
    for (bool x_first : {true, false})
      for (int64_t rows : {1, 3}) {
        SCOPED_TRACE("k " + std::to_string(k) + (x_first ? " x + h" : " h + x") + " rows " + std::to_string(rows));
        ModelBuilder b;
        b.input("x", DType::Float32, {-1, -1, k}).output("y", DType::Float32);
        std::vector<float> w(static_cast<size_t>(k * k));
        for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * float(int(i % 13) - 6);
        b.initializer("w", Tensor::from_vector<float>({k, k}, w));
        b.node("MatMul", {"x", "w"}, {"h"});
        b.node("Add", x_first ? std::vector<std::string>{"x", "h"} : std::vector<std::string>{"h", "x"}, {"y"});
        std::vector<float> xs(size_t(2 * rows * k));
        for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(int(i % 17) - 8) * 0.125f;
        const int64_t batch = rows == 1 ? 1 : 2;
        xs.resize(size_t(batch * rows * k));
        std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({batch, rows, k}, xs)}};
        Session g = Session::from_bytes(b.bytes(), gpu());
        recorded_and_replayed_match_cpu(g, b.bytes(), feeds);
        EXPECT_EQ(g.last_plan().fused_nodes, 2);
        EXPECT_EQ(g.last_plan().gpu_nodes, 2);
      }
}

// A normalization that reads a product's result joins the product's group (post-normalization): BERT's
// LayerNormalization of x + (x W + b), and a pre-norm block's (h = x + x W, read by the normalization and
// by the residual after it: h is stored too) LayerNormalization or RMS norm in plain ops. Rows of 1 (the
// one-row kernel), 6 and 3 with a K long enough to split (the summing pass normalizes), and widths past
// the row kernel's registers, unsplit and split; recorded and replayed equal to the CPU.
TEST(RuntimeFusion, ANormalizationOfTheProductJoinsItsGroup) {
  SKIP_WITHOUT_GPU();
  enum class Form { PostLayerNorm, PreLayerNorm, PreRms };
  for (Form form : {Form::PostLayerNorm, Form::PreLayerNorm, Form::PreRms})
    for (auto [k, n, rows] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{6, 6, 1}, {6, 6, 6}, {1024, 1024, 3}, {40, 1100, 6}, {1024, 1100, 6}}) {
      const bool residual = k == n;
      SCOPED_TRACE("form " + std::to_string(int(form)) + " k " + std::to_string(k) + " n " + std::to_string(n) + " rows " +
                   std::to_string(rows));
      ModelBuilder b(18);
      b.input("x", DType::Float32, {-1, -1, k}).output("y", DType::Float32);
      std::vector<float> w(static_cast<size_t>(k * n)), c(static_cast<size_t>(n)), g(static_cast<size_t>(n)), sh(static_cast<size_t>(n));
      for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * float(int(i % 13) - 6);
      for (size_t i = 0; i < c.size(); ++i) c[i] = 0.25f * float(int(i % 5) - 2);
      for (size_t i = 0; i < g.size(); ++i) g[i] = 0.5f + 0.05f * float(int(i % 9) - 4);
      for (size_t i = 0; i < sh.size(); ++i) sh[i] = 0.1f * float(int(i % 7) - 3);
      b.initializer("w", Tensor::from_vector<float>({k, n}, w));
      b.initializer("c", Tensor::from_vector<float>({n}, c));
      b.initializer("g", Tensor::from_vector<float>({n}, g));
      b.initializer("sh", Tensor::from_vector<float>({n}, sh));
      b.node("MatMul", {"x", "w"}, {"p"});
      b.node("Add", {"p", "c"}, {"pb"});
      std::string h = "pb";
      if (residual) {
        b.node("Add", {"x", "pb"}, {"h"});
        h = "h";
      }
      int fused = residual ? 4 : 3;
      if (form == Form::PreRms) {
        b.initializer("two", Tensor::scalar<float>(2.0f));
        b.initializer("eps", Tensor::scalar<float>(1e-5f));
        b.initializer("axes", Tensor::from_vector<int64_t>({1}, {-1}));
        b.node("Pow", {h, "two"}, {"sq"});
        b.node("ReduceMean", {"sq", "axes"}, {"ms"});
        b.node("Add", {"ms", "eps"}, {"var"});
        b.node("Sqrt", {"var"}, {"root"});
        b.node("Div", {h, "root"}, {"nrm"});
        b.node("Mul", {"nrm", "g"}, {"normed"});
        fused += 5;
      } else {
        b.node("LayerNormalization", {h, "g", "sh"}, {"normed"});
      }
      if (form == Form::PostLayerNorm) {
        b.node("Identity", {"normed"}, {"y"});
      } else {
        b.node("Add", {h, "normed"}, {"y"});  // h read after the normalization too: stored as well
      }
      std::vector<float> xs(size_t(2 * rows * k));
      for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(int(i % 17) - 8) * 0.125f;
      const int64_t batch = rows == 1 ? 1 : 2;
      xs.resize(size_t(batch * rows * k));
      std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({batch, rows, k}, xs)}};
      const std::string m = b.bytes();
      Session s = Session::from_bytes(m, gpu());
      recorded_and_replayed_match_cpu(s, m, feeds, 1e-4, 1e-5);
      EXPECT_EQ(s.last_plan().fused_nodes, fused);
      EXPECT_EQ(s.last_plan().fallbacks.size(), 0u);
      // The product and its normalization: the partial products, then their sum normalized (split), or the
      // product, then a pass over its rows; (pre-norm) the Add after.
      EXPECT_EQ(s.last_plan().dispatches, form == Form::PostLayerNorm ? 2 : 3);
      // The product's kernel makes both dispatches (unfused, the normalization would be a node of its own).
      std::string why;
      std::optional<Session> profiled = onnxgpu::testing::profiling_session(m, gpu(), why);
      if (!profiled) continue;  // (profiling cannot run on this adapter; the counts above still hold)
      profiled->run(feeds);
      const Profile p = profiled->profile();
      ASSERT_EQ(p.nodes.size(), form == Form::PostLayerNorm ? 1u : 2u);
      EXPECT_EQ(p.nodes[0].op, "MatMul (fused)");
      EXPECT_EQ(p.nodes[0].dispatches, 2);
    }
}

// A LayerNormalization between two products (a pre-norm block: h = x + x W1 + c1, then LN(h) W2) joins the
// product after it as its prologue on rows few enough for the one-row kernels (a decode step: no dispatch
// of its own), and the product before it as its post-normalization on more rows; equal to the CPU either way.
TEST(RuntimeFusion, ANormalizationBetweenProductsGoesWhereItCostsLeast) {
  SKIP_WITHOUT_GPU();
  const int64_t k = 64, n = 48;
  ModelBuilder b(18);
  b.input("x", DType::Float32, {1, -1, k}).output("out", DType::Float32).output("h", DType::Float32);
  std::vector<float> w1(static_cast<size_t>(k * k)), w2(static_cast<size_t>(k * n)), c(static_cast<size_t>(k)),
      g(static_cast<size_t>(k));
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.02f * float(int(i % 11) - 5);
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.03f * float(int(i % 7) - 3);
  for (size_t i = 0; i < c.size(); ++i) c[i] = 0.25f * float(int(i % 5) - 2);
  for (size_t i = 0; i < g.size(); ++i) g[i] = 0.5f + 0.05f * float(int(i % 9) - 4);
  b.initializer("w1", Tensor::from_vector<float>({k, k}, w1));
  b.initializer("w2", Tensor::from_vector<float>({k, n}, w2));
  b.initializer("c", Tensor::from_vector<float>({k}, c));
  b.initializer("g", Tensor::from_vector<float>({k}, g));
  b.node("MatMul", {"x", "w1"}, {"p"}, "mm1");
  b.node("Add", {"p", "c"}, {"pb"}, "bias");
  b.node("Add", {"x", "pb"}, {"h"}, "residual");
  b.node("LayerNormalization", {"h", "g"}, {"y"}, "ln");
  b.node("MatMul", {"y", "w2"}, {"out"}, "mm2");
  const std::string m = b.bytes();
  for (int64_t rows : {1, 6}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    std::vector<float> xs(static_cast<size_t>(rows * k));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(int(i % 17) - 8) * 0.125f;
    std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({1, rows, k}, xs)}};
    Session s = Session::from_bytes(m, gpu());
    recorded_and_replayed_match_cpu(s, m, feeds, 1e-4, 1e-5);
    EXPECT_EQ(s.last_plan().fallbacks.size(), 0u);
    std::string why;
    std::optional<Session> profiled = onnxgpu::testing::profiling_session(m, gpu(), why);
    if (!profiled) GTEST_SKIP() << "profiling cannot run on this adapter: " << why;
    profiled->run(feeds);
    // Where the normalization runs: its own place (the prologue group is placed at it), or inside mm1's group.
    const Profile p = profiled->profile();
    const bool at_ln = std::any_of(p.nodes.begin(), p.nodes.end(), [](const NodeTiming& t) { return t.node == "ln"; });
    EXPECT_EQ(at_ln, rows <= 4);
    ASSERT_FALSE(p.nodes.empty());
    EXPECT_EQ(p.nodes[0].node, "mm1");
    EXPECT_EQ(p.nodes[0].op, "MatMul (fused)");
  }
}

// Scale then mask (attention scores): Div and Where with a bool mask and a scalar fill run as one kernel.
TEST(RuntimeFusion, WhereWithABoolMaskJoinsAnElementwiseGroup) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("s", DType::Float32, {2, 4, 4}).input("mask", DType::Bool, {1, 4, 4}).output("y", DType::Float32);
  b.initializer("scale", Tensor::scalar<float>(8.0f));
  b.initializer("fill", Tensor::scalar<float>(-1e4f));
  b.node("Div", {"s", "scale"}, {"d"});
  b.node("Where", {"mask", "d", "fill"}, {"y"});
  std::vector<float> s(32);
  for (size_t i = 0; i < s.size(); ++i) s[i] = float(i) - 10.0f;
  Tensor mask(DType::Bool, {1, 4, 4});
  for (int64_t i = 0; i < 16; ++i) mask.data<bool>()[i] = (i % 4) <= (i / 4);
  std::unordered_map<std::string, Tensor> feeds{{"s", Tensor::from_vector<float>({2, 4, 4}, s)}, {"mask", mask}};
  Session g = Session::from_bytes(b.bytes(), gpu());
  recorded_and_replayed_match_cpu(g, b.bytes(), feeds);
  EXPECT_EQ(g.last_plan().fused_nodes, 2);
  EXPECT_EQ(g.last_plan().dispatches, 1);
}

// A node whose value only Shape reads is described (its output shape), never dispatched.
TEST(RuntimeFusion, ValuesReadOnlyForTheirShapeAreNotComputed) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {-1, 3}).output("y", DType::Float32).output("s", DType::Int64);
  auto& t = b.node("Transpose", {"x"}, {"xt"});
  auto* perm = t.add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto_AttributeType_INTS);
  perm->add_ints(1);
  perm->add_ints(0);
  b.node("Shape", {"xt"}, {"s"});
  b.node("Relu", {"x"}, {"y"});
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({2, 3}, {1, -2, 3, -4, 5, -6})}};
  Session g = Session::from_bytes(b.bytes(), gpu());
  recorded_and_replayed_match_cpu(g, b.bytes(), feeds);
  EXPECT_EQ(g.last_plan().dispatches, 1);
}

// Attention's layout: q = Transpose(x, 0213), k^T = Transpose(y, 0231), v = Transpose(z, 0213) read in
// place by the products (no Transpose dispatch), also with split-K (long K) and a 2-D transposed B.
TEST(RuntimeFusion, TransposesFoldIntoTheProductsThatReadThem) {
  SKIP_WITHOUT_GPU();
  auto perm_attr = [](onnx::NodeProto& n, std::vector<int64_t> perm) {
    auto* a = n.add_attribute();
    a->set_name("perm");
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t d : perm) a->add_ints(d);
  };
  for (int64_t d : {8, 600}) {
    ModelBuilder b;
    b.input("q", DType::Float32, {1, 5, 3, d}).input("k", DType::Float32, {1, 5, 3, d});
    b.input("v", DType::Float32, {1, 5, 3, 4}).output("o", DType::Float32).output("w", DType::Float32);
    perm_attr(b.node("Transpose", {"q"}, {"qt"}), {0, 2, 1, 3});
    perm_attr(b.node("Transpose", {"k"}, {"kt"}), {0, 2, 3, 1});
    perm_attr(b.node("Transpose", {"v"}, {"vt"}), {0, 2, 1, 3});
    b.node("MatMul", {"qt", "kt"}, {"s"});  // [1, 3, 5, 5]
    b.node("MatMul", {"s", "vt"}, {"o"});   // [1, 3, 5, 4]
    b.initializer("m", Tensor::from_vector<float>({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
    perm_attr(b.node("Transpose", {"m"}, {"mt"}), {1, 0});
    b.node("MatMul", {"o", "mt"}, {"w"});   // B a transposed constant
    auto fill = [](Shape s, float step) {
      std::vector<float> v(size_t(shape_numel(s)));
      for (size_t i = 0; i < v.size(); ++i) v[i] = step * float(int(i % 23) - 11);
      return Tensor::from_vector<float>(s, v);
    };
    std::unordered_map<std::string, Tensor> feeds{
        {"q", fill({1, 5, 3, d}, 0.05f)}, {"k", fill({1, 5, 3, d}, 0.03f)}, {"v", fill({1, 5, 3, 4}, 0.5f)}};
    Session g = Session::from_bytes(b.bytes(), gpu());
    recorded_and_replayed_match_cpu(g, b.bytes(), feeds, 1e-4);
    // All four Transposes (the constant's too: read in place instead of folded) and the three products.
    EXPECT_EQ(g.last_plan().fused_nodes, 7) << d;
    EXPECT_EQ(g.last_plan().dispatches, d == 8 ? 3 : 4) << d;  // split-K adds a sum pass to the long product
  }
}

// The product written transposed (attention's heads back to [batch, seq, heads, d]), with and
// without split-K.
TEST(RuntimeFusion, AnOutputTransposeIsWrittenInPlace) {
  SKIP_WITHOUT_GPU();
  for (int64_t k : {8, 900}) {
    ModelBuilder b;
    b.input("a", DType::Float32, {1, 3, 5, k}).input("b", DType::Float32, {1, 3, k, 4}).output("y", DType::Float32);
    b.node("MatMul", {"a", "b"}, {"p"});
    auto& t = b.node("Transpose", {"p"}, {"y"});
    auto* perm = t.add_attribute();
    perm->set_name("perm");
    perm->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t d : {0, 2, 1, 3}) perm->add_ints(d);
    auto fill = [](Shape s, float step) {
      std::vector<float> v(size_t(shape_numel(s)));
      for (size_t i = 0; i < v.size(); ++i) v[i] = step * float(int(i % 19) - 9);
      return Tensor::from_vector<float>(s, v);
    };
    std::unordered_map<std::string, Tensor> feeds{{"a", fill({1, 3, 5, k}, 0.1f)}, {"b", fill({1, 3, k, 4}, 0.07f)}};
    Session g = Session::from_bytes(b.bytes(), gpu());
    recorded_and_replayed_match_cpu(g, b.bytes(), feeds, 1e-4);
    EXPECT_EQ(g.last_plan().fused_nodes, 2) << k;
    EXPECT_EQ(g.run(feeds)[0].shape(), (Shape{1, 5, 3, 4}));
  }
}

// A group whose inputs are all constants folds at plan time: no dispatch.
TEST(RuntimeFusion, ConstantGroupsFoldInstead) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {2, 2}).output("y", DType::Float32);
  b.initializer("w", Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}));
  b.initializer("u", Tensor::from_vector<float>({2, 2}, {0.5f, -1, 2, 0.25f}));
  auto& t = b.node("Transpose", {"w"}, {"wt"});
  auto* perm = t.add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto_AttributeType_INTS);
  perm->add_ints(1);
  perm->add_ints(0);
  b.node("MatMul", {"wt", "u"}, {"c"});  // constants only: folded
  b.node("Add", {"x", "c"}, {"y"});
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({2, 2}, {1, 1, 1, 1})}};
  Session g = Session::from_bytes(b.bytes(), gpu());
  recorded_and_replayed_match_cpu(g, b.bytes(), feeds);
  EXPECT_EQ(g.last_plan().folded_nodes, 2);
  EXPECT_EQ(g.last_plan().dispatches, 1);
}

// MatMul -> Transpose -> MatMul: the Transpose is read in place by the second product (not also
// written by the first), and the results match.
TEST(RuntimeFusion, ATransposeBetweenTwoProductsIsFoldedOnce) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("a", DType::Float32, {2, 3, 4}).input("b", DType::Float32, {2, 4, 3}).output("y", DType::Float32);
  b.node("MatMul", {"a", "b"}, {"p"});  // [2, 3, 3]
  auto& t = b.node("Transpose", {"p"}, {"pt"});
  auto* perm = t.add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t d : {0, 2, 1}) perm->add_ints(d);
  b.node("MatMul", {"pt", "a"}, {"y"});  // [2, 3, 4]
  std::vector<float> av(24), bv(24);
  for (size_t i = 0; i < 24; ++i) {
    av[i] = 0.5f * float(int(i % 7) - 3);
    bv[i] = 0.25f * float(int(i % 5) - 2);
  }
  std::unordered_map<std::string, Tensor> feeds{{"a", Tensor::from_vector<float>({2, 3, 4}, av)},
                                                {"b", Tensor::from_vector<float>({2, 4, 3}, bv)}};
  Session g = Session::from_bytes(b.bytes(), gpu());
  recorded_and_replayed_match_cpu(g, b.bytes(), feeds);
  EXPECT_EQ(g.last_plan().dispatches, 2);
}

// onnxgpu.fusion = 0 (Python: ORT_DISABLE_ALL) runs every node alone, with the same results.
TEST(RuntimeFusion, CanBeTurnedOff) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {2, 3}).output("y", DType::Float32);
  b.initializer("w", Tensor::from_vector<float>({3, 3}, {1, 0, 2, 0, 1, 0, -1, 0, 1}));
  b.initializer("c", Tensor::from_vector<float>({3}, {0.5f, -0.5f, 1}));
  b.node("MatMul", {"x", "w"}, {"h"});
  b.node("Add", {"h", "c"}, {"a"});
  b.node("Tanh", {"a"}, {"t"});
  b.node("Neg", {"t"}, {"y"});
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({2, 3}, {1, -2, 3, 0.5f, 0, -1})}};
  SessionOptions off = gpu();
  off.add_config_entry("onnxgpu.fusion", "0");
  Session g = Session::from_bytes(b.bytes(), off);
  recorded_and_replayed_match_cpu(g, b.bytes(), feeds);
  EXPECT_EQ(g.last_plan().fused_nodes, 0);
  EXPECT_EQ(g.last_plan().dispatches, 4);
  Session on = Session::from_bytes(b.bytes(), gpu());
  recorded_and_replayed_match_cpu(on, b.bytes(), feeds);
  EXPECT_EQ(on.last_plan().fused_nodes, 4);
  EXPECT_EQ(on.last_plan().dispatches, 1);  // Tanh and Neg in the product's epilogue
}

// MatMul [+ bias] -> Split of the last axis (GPT-2's q, k, v from one product): the product writes
// each column into its part; no Split dispatch. With and without split-K, sizes from the input or
// equal parts. A Split of another axis stays a node of its own.
TEST(RuntimeFusion, ASplitOfTheProductIsWrittenInParts) {
  SKIP_WITHOUT_GPU();
  struct Case {
    int64_t k;
    bool bias, sizes_input;
    int64_t axis;
    int fused, dispatches;
  };
  for (const Case& c : {Case{8, true, true, 2, 3, 1}, Case{900, true, true, -1, 3, 2}, Case{8, false, false, 2, 2, 1},
                        Case{900, false, true, 2, 2, 2}, Case{8, true, true, 1, 2, 4}}) {
    ModelBuilder b;
    b.input("x", DType::Float32, {-1, 3, c.k});
    for (const char* o : {"q", "k", "v"}) b.output(o, DType::Float32);
    std::vector<float> w(size_t(c.k) * 12), bias(12);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * float(int(i % 13) - 6);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.25f * float(i) - 1.0f;
    b.initializer("w", Tensor::from_vector<float>({c.k, 12}, w));
    b.initializer("c", Tensor::from_vector<float>({12}, bias));
    b.initializer("sizes", Tensor::from_vector<int64_t>({3}, c.axis == 1 ? std::vector<int64_t>{1, 1, 1}
                                                                           : std::vector<int64_t>{5, 4, 3}));
    b.node("MatMul", {"x", "w"}, {"h"});
    if (c.bias) b.node("Add", {"c", "h"}, {"hb"});
    auto& s = b.node("Split", c.sizes_input ? std::vector<std::string>{c.bias ? "hb" : "h", "sizes"}
                                            : std::vector<std::string>{c.bias ? "hb" : "h"},
                     {"q", "k", "v"});
    auto* axis = s.add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto_AttributeType_INT);
    axis->set_i(c.axis);
    std::vector<float> xs(size_t(2 * 3 * c.k));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.1f * float(int(i % 17) - 8);
    std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({2, 3, c.k}, xs)}};
    Session g = Session::from_bytes(b.bytes(), gpu());
    recorded_and_replayed_match_cpu(g, b.bytes(), feeds, 1e-4);
    std::string what = "k " + std::to_string(c.k) + " axis " + std::to_string(c.axis) + (c.bias ? " bias" : "");
    EXPECT_EQ(g.last_plan().fused_nodes, c.fused) << what;
    EXPECT_EQ(g.last_plan().dispatches, c.dispatches) << what;
    auto out = g.run(feeds);
    EXPECT_EQ(out[0].shape(), c.axis == 1 ? (Shape{2, 1, 12}) : (Shape{2, 3, c.sizes_input ? 5 : 4})) << what;
  }
}

// Products that read one A with constant Bs of the same K (BERT's q, k, v projections) run as one
// product with the Bs side by side, each sibling's bias added and its columns written to its output;
// a sibling with another K, without the bias the first one has, or with a bias that widens its output
// ([1, 1, N]: the Add's output has rank 3) stays alone.
TEST(RuntimeFusion, SiblingProductsRunAsOne) {
  SKIP_WITHOUT_GPU();
  struct Case {
    bool third_bias;
    int64_t third_k;
    int dispatches;
    bool wide_bias = false;
  };
  for (const Case& c : {Case{true, 6, 1}, Case{false, 6, 2}, Case{true, 4, 2}, Case{true, 6, 3, true}}) {
    ModelBuilder b;
    b.input("x", DType::Float32, {-1, 6}).input("x4", DType::Float32, {-1, 4});
    for (const char* o : {"q", "k", "v"}) b.output(o, DType::Float32);
    const int64_t n[3] = {5, 3, 7};
    for (int s = 0; s < 3; ++s) {
      int64_t k = s == 2 ? c.third_k : 6;
      std::vector<float> w(size_t(k * n[s])), bias(size_t(n[s]));
      for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * float(int((i * (s + 2)) % 9) - 4);
      for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.5f * float(i) - float(s);
      std::string id = std::to_string(s);
      b.initializer("w" + id, Tensor::from_vector<float>({k, n[s]}, w));
      b.initializer("b" + id, Tensor::from_vector<float>(s == 2 && c.wide_bias ? Shape{1, 1, n[s]} : Shape{n[s]}, bias));
      bool with_bias = s < 2 || c.third_bias;
      b.node("MatMul", {k == 6 ? "x" : "x4", "w" + id}, {with_bias ? "p" + id : std::string(s == 0 ? "q" : s == 1 ? "k" : "v")});
      if (with_bias) b.node("Add", {"p" + id, "b" + id}, {s == 0 ? "q" : s == 1 ? "k" : "v"});
    }
    std::vector<float> xs(18), x4(12);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.3f * float(int(i % 7) - 3);
    for (size_t i = 0; i < x4.size(); ++i) x4[i] = 0.2f * float(int(i % 5) - 2);
    std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({3, 6}, xs)},
                                                  {"x4", Tensor::from_vector<float>({3, 4}, x4)}};
    Session g = Session::from_bytes(b.bytes(), gpu());
    recorded_and_replayed_match_cpu(g, b.bytes(), feeds, 1e-5);
    EXPECT_EQ(g.last_plan().dispatches, c.dispatches) << c.third_bias << " " << c.third_k;
    auto out = g.run(feeds);
    EXPECT_EQ(out[2].shape(), c.wide_bias ? (Shape{1, 3, 7}) : (Shape{3, 7}));
  }
}

// Sibling weights large enough to be put side by side in parts, a few threads each taking a range of
// K's rows (an odd K: parts of unequal rows), equal the CPU reference in every sibling's columns.
TEST(RuntimeFusion, LargeSiblingWeightsPutSideBySideInParts) {
  SKIP_WITHOUT_GPU();
  const int64_t k = 1023, n[3] = {1040, 520, 1564};
  ASSERT_GE(copy_parts(size_t(k) * size_t(n[0] + n[1] + n[2]) * 4), 2u) << "one part: nothing here is put in parts";
  ModelBuilder b;
  b.input("x", DType::Float32, {-1, k});
  for (const char* o : {"q", "k", "v"}) b.output(o, DType::Float32);
  for (int s = 0; s < 3; ++s) {
    std::vector<float> w(size_t(k * n[s])), bias(size_t(n[s]));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * float(int((i * (s + 3) + i / 97) % 13) - 6);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.25f * float(i % 5) - float(s);
    const std::string id = std::to_string(s);
    b.initializer("w" + id, Tensor::from_vector<float>({k, n[s]}, w));
    b.initializer("b" + id, Tensor::from_vector<float>({n[s]}, bias));
    b.node("MatMul", {"x", "w" + id}, {"p" + id});
    b.node("Add", {"p" + id, "b" + id}, {s == 0 ? "q" : s == 1 ? "k" : "v"});
  }
  std::vector<float> xs(size_t(2 * k));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.1f * float(int(i % 7) - 3);
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({2, k}, xs)}};
  Session g = Session::from_bytes(b.bytes(), gpu());
  recorded_and_replayed_match_cpu(g, b.bytes(), feeds, 1e-4);
  EXPECT_EQ(g.last_plan().dispatches, 1);
}

// An elementwise group that alone reads a product's result and otherwise only constant scalars (GPT-2's
// tanh GELU after the bias, its constants as Constant nodes placed after the product) is applied in the
// product's epilogue, with and without split-K; a group that also reads another tensor stays a kernel
// of its own. (40 rows: the tiled kernel; products of a few rows are test_gpu_matmul's GpuGemv cases.)
TEST(RuntimeFusion, AnActivationJoinsTheProductsEpilogue) {
  SKIP_WITHOUT_GPU();
  auto constant = [](ModelBuilder& b, const std::string& name, float v) {
    auto& c = b.node("Constant", {}, {name});
    auto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    loader::tensor_to_proto(Tensor::scalar<float>(v), name, *a->mutable_t());
  };
  for (int64_t k : {8, 900})
    for (bool other_tensor : {false, true}) {
      ModelBuilder b;
      b.input("x", DType::Float32, {-1, k}).input("g", DType::Float32, {-1, 5}).output("y", DType::Float32);
      std::vector<float> w(size_t(k) * 5), c(5);
      for (size_t i = 0; i < w.size(); ++i) w[i] = 0.02f * float(int(i % 11) - 5);
      for (size_t i = 0; i < c.size(); ++i) c[i] = 0.3f * float(i) - 0.6f;
      b.initializer("w", Tensor::from_vector<float>({k, 5}, w));
      b.initializer("c", Tensor::from_vector<float>({5}, c));
      b.node("MatMul", {"x", "w"}, {"h"});
      b.node("Add", {"c", "h"}, {"hb"});
      constant(b, "half", 0.5f);
      constant(b, "three", 3.0f);
      constant(b, "k", 0.044715f);
      constant(b, "s", 0.7978845608f);
      constant(b, "one", 1.0f);
      gelu_tanh_nodes(b, "hb", other_tensor ? "m" : "y", "gelu_");
      if (other_tensor) b.node("Mul", {"m", "g"}, {"y"});  // reads another tensor: not an epilogue
      std::vector<float> xs(size_t(40 * k)), gs(200);
      for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.1f * float(int(i % 23) - 11);
      for (size_t i = 0; i < gs.size(); ++i) gs[i] = 0.5f + 0.01f * float(i);
      std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({40, k}, xs)},
                                                    {"g", Tensor::from_vector<float>({40, 5}, gs)}};
      Session s = Session::from_bytes(b.bytes(), gpu());
      // K = 900: sums of terms up to ~0.1 in another order (split-K, and the CPU's oneDNN) differ by
      // ~1e-6, which the GELU passes on near zero, where a relative tolerance alone cannot hold.
      recorded_and_replayed_match_cpu(s, b.bytes(), feeds, 1e-5, k == 8 ? 1e-6 : 1e-5);
      int product = k == 8 ? 1 : 2;  // split-K adds a sum pass
      EXPECT_EQ(s.last_plan().dispatches, other_tensor ? product + 1 : product) << k << " " << other_tensor;
    }
}

// A lone elementwise node that alone reads a product's result (T5's Relu between its MLP products, a
// scale by a constant) joins the epilogue too, with or without a bias, with and without split-K; one
// whose product is also a graph output stays a kernel of its own.
TEST(RuntimeFusion, ALoneActivationJoinsTheProductsEpilogue) {
  SKIP_WITHOUT_GPU();
  struct Case {
    const char* op;
    bool bias, product_out;
  };
  for (int64_t k : {8, 900})
    for (Case c : {Case{"Relu", false, false}, Case{"Relu", true, false}, Case{"Mul", false, false}, Case{"Relu", false, true}}) {
      SCOPED_TRACE(std::string(c.op) + (c.bias ? " after a bias" : "") + (c.product_out ? ", product an output" : "") +
                   " K " + std::to_string(k));
      ModelBuilder b;
      b.input("x", DType::Float32, {-1, k}).output("y", DType::Float32);
      if (c.product_out) b.output("h", DType::Float32);
      std::vector<float> w(size_t(k) * 6);
      for (size_t i = 0; i < w.size(); ++i) w[i] = 0.02f * float(int(i % 13) - 6);
      b.initializer("w", Tensor::from_vector<float>({k, 6}, w));
      b.initializer("c", Tensor::from_vector<float>({6}, {0.3f, -0.2f, 0.1f, -0.4f, 0.0f, 0.25f}));
      b.initializer("scale", Tensor::scalar<float>(-1.5f));
      b.node("MatMul", {"x", "w"}, {"h"});
      std::string in = "h";
      if (c.bias) {
        b.node("Add", {"h", "c"}, {"hb"});
        in = "hb";
      }
      if (std::string(c.op) == "Mul") b.node("Mul", {in, "scale"}, {"y"});
      else b.node(c.op, {in}, {"y"});
      std::vector<float> xs(size_t(40 * k));
      for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.1f * float(int(i % 23) - 11);
      std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({40, k}, xs)}};
      Session s = Session::from_bytes(b.bytes(), gpu());
      recorded_and_replayed_match_cpu(s, b.bytes(), feeds, 1e-5, k == 8 ? 1e-6 : 1e-5);
      int product = k == 8 ? 1 : 2;  // split-K adds a sum pass
      EXPECT_EQ(s.last_plan().dispatches, c.product_out ? product + 1 : product);
    }
}

// A scalar of higher rank than the product ([1, 1, 1] against [3, 5]) widens the activation's output:
// that group stays out of the epilogue, and the result keeps its rank.
TEST(RuntimeFusion, AWideningScalarKeepsTheActivationOut) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {3, 8}).output("y", DType::Float32);
  std::vector<float> w(40);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * float(int(i % 9) - 4);
  b.initializer("w", Tensor::from_vector<float>({8, 5}, w));
  b.initializer("c", Tensor::from_vector<float>({1, 1, 1}, {2.0f}));
  b.initializer("one", Tensor::scalar<float>(1.0f));
  b.node("MatMul", {"x", "w"}, {"h"});
  b.node("Mul", {"h", "c"}, {"m"});
  b.node("Add", {"m", "one"}, {"y"});
  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.2f * float(int(i % 7) - 3);
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({3, 8}, xs)}};
  Session s = Session::from_bytes(b.bytes(), gpu());
  recorded_and_replayed_match_cpu(s, b.bytes(), feeds, 1e-5);
  EXPECT_EQ(s.last_plan().dispatches, 2);
  EXPECT_EQ(s.run(feeds)[0].shape(), (Shape{1, 3, 5}));
}

// ---- RMS norms written in plain ops (runtime/fusion.h's RMS norm group) --------------------------

namespace {

// An RMS norm of x [-1, 3, d] as torch exports it, in the forms real exports take: the square as
// Pow(x, 2) or Mul(x, x); 1 / sqrt as Sqrt -> Div(x, .) ("div"), Sqrt -> Reciprocal -> Mul(x, .)
// ("reciprocal"), Sqrt -> Div(1, .) -> Mul(., x) ("one_over", torch's rsqrt) or Pow(., -0.5) -> Mul
// ("pow"); the weight [d] after it on either side or none; a Cast to float before and after (Llama's
// float32 round trip); the ReduceMean's axes as attribute (opset 13) or input (opset 18). The knobs
// `axis`, `keepdims`, `eps_input` (eps a graph input) and `expose` (the mean square also an output)
// make forms that are not an RMS norm of the last axis, or not alone.
struct RmsForm {
  bool pow_square = true;
  std::string inv = "div";
  int weight = 1;  // 0: none, 1: Mul(n, w), -1: Mul(w, n)
  bool casts = false;
  int64_t opset = 13;
  int64_t axis = -1, keepdims = 1;
  bool eps_input = false, expose = false;
  bool weight_input = false;  // w a graph input: its Mul is not the norm's weight
  DType dtype = DType::Float32;
  int64_t batch = 2, d = 40;  // x [batch, 3, d]
  // The chain's nodes: the square, ReduceMean, Add, the inverse root's one or two, the product with x,
  // the weight's Mul, the Casts.
  int nodes() const {
    return 5 + (inv == "reciprocal" || inv == "one_over" ? 1 : 0) + (weight ? 1 : 0) + (casts ? 2 : 0);
  }
};

std::string rms_model(const RmsForm& f) {
  ModelBuilder b(f.opset);
  b.input("x", f.dtype, {-1, 3, f.d}).output("y", f.dtype);
  if (f.eps_input) b.input("eps", DType::Float32, {});
  if (f.expose) b.output("ms", DType::Float32);
  b.initializer("two", Tensor::scalar<float>(2.0f));
  if (!f.eps_input) b.initializer("eps", Tensor::scalar<float>(1e-5f));
  b.initializer("one", Tensor::scalar<float>(1.0f));
  b.initializer("minus_half", Tensor::scalar<float>(-0.5f));
  std::vector<float> w(size_t(f.d));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + 0.05f * float(int(i % 9) - 4);
  if (f.weight_input) b.input("w", DType::Float32, {f.d});
  else b.initializer("w", Tensor::from_vector<float>({f.d}, w));
  std::string x = "x";
  if (f.casts) {
    ModelBuilder::attr(b.node("Cast", {"x"}, {"xf"}), "to", int64_t(DType::Float32));
    x = "xf";
  }
  if (f.pow_square) b.node("Pow", {x, "two"}, {"sq"});
  else b.node("Mul", {x, x}, {"sq"});
  std::vector<std::string> rm_in{"sq"};
  if (f.opset >= 18) {
    b.initializer("axes", Tensor::from_vector<int64_t>({1}, {f.axis}));
    rm_in.push_back("axes");
  }
  auto& rm = b.node("ReduceMean", rm_in, {"ms"});
  if (f.opset < 18) ModelBuilder::attr(rm, "axes", std::vector<int64_t>{f.axis});
  ModelBuilder::attr(rm, "keepdims", f.keepdims);
  b.node("Add", {"ms", "eps"}, {"var"});
  if (f.inv == "pow") {
    b.node("Pow", {"var", "minus_half"}, {"inv"});
  } else {
    b.node("Sqrt", {"var"}, {"root"});
    if (f.inv == "div") b.node("Div", {x, "root"}, {"n"});
    else if (f.inv == "reciprocal") b.node("Reciprocal", {"root"}, {"inv"});
    else b.node("Div", {"one", "root"}, {"inv"});
  }
  if (f.inv != "div") b.node("Mul", f.inv == "one_over" ? std::vector<std::string>{"inv", x} : std::vector<std::string>{x, "inv"}, {"n"});
  std::string n = "n";
  if (f.casts) {
    ModelBuilder::attr(b.node("Cast", {"n"}, {"nc"}), "to", int64_t(f.dtype));
    n = "nc";
  }
  if (f.weight == 0) b.node("Identity", {n}, {"y"});
  else b.node("Mul", f.weight > 0 ? std::vector<std::string>{n, "w"} : std::vector<std::string>{"w", n}, {"y"});
  return b.bytes();
}

std::unordered_map<std::string, Tensor> rms_feeds(const RmsForm& f) {
  std::vector<float> xs(size_t(f.batch * 3 * f.d));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(int(i % 29) - 14) * 0.21f + (i / size_t(f.d) == 4 ? 30.0f : 0.0f);
  std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({f.batch, 3, f.d}, xs).cast(f.dtype)}};
  if (f.eps_input) feeds["eps"] = Tensor::scalar<float>(1e-5f);
  if (f.weight_input) {
    std::vector<float> w(size_t(f.d));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 1.5f - 0.03f * float(i);
    feeds["w"] = Tensor::from_vector<float>({f.d}, w);
  }
  return feeds;
}

}  // namespace

// Every form of the RMS norm runs as one dispatch of the SimplifiedLayerNormalization kernel, recorded
// and replayed, and matches the CPU reference of the unfused graph.
TEST(RuntimeFusion, RmsNormsInPlainOpsRunAsOneKernel) {
  SKIP_WITHOUT_GPU();
  std::vector<RmsForm> forms;
  for (bool pow_square : {true, false})
    for (const char* inv : {"div", "reciprocal", "one_over", "pow"})
      for (int weight : {1, -1, 0}) {
        RmsForm f;
        f.pow_square = pow_square;
        f.inv = inv;
        f.weight = weight;
        forms.push_back(f);
      }
  for (int64_t opset : {13, 18})
    for (bool casts : {false, true})
      for (int64_t axis : {-1, 2}) {
        RmsForm f;
        f.opset = opset;
        f.casts = casts;
        f.axis = axis;
        forms.push_back(f);
      }
  RmsForm wide;  // rows longer than the kernel's registers hold (4 values per invocation)
  wide.d = 1100;
  forms.push_back(wide);
  for (const RmsForm& f : forms) {
    const std::string what = std::string(f.pow_square ? "Pow" : "Mul") + " " + f.inv + " weight " +
                             std::to_string(f.weight) + " opset " + std::to_string(f.opset) + (f.casts ? " casts" : "") +
                             " axis " + std::to_string(f.axis) + " d " + std::to_string(f.d);
    std::string m = rms_model(f);
    Session g = Session::from_bytes(m, gpu());
    recorded_and_replayed_match_cpu(g, m, rms_feeds(f), 1e-5, 1e-6);
    EXPECT_EQ(g.last_plan().fused_nodes, f.nodes()) << what;
    EXPECT_EQ(g.last_plan().dispatches, 1) << what;
    EXPECT_EQ(g.last_plan().fallbacks.size(), 0u) << what;
  }
  // A Mul by a tensor computed at run time after the norm is no weight: the norm fuses, the Mul runs alone.
  RmsForm f;
  f.weight_input = true;
  std::string m = rms_model(f);
  Session g = Session::from_bytes(m, gpu());
  recorded_and_replayed_match_cpu(g, m, rms_feeds(f), 1e-5, 1e-6);
  EXPECT_EQ(g.last_plan().fused_nodes, f.nodes() - 1);
  EXPECT_EQ(g.last_plan().dispatches, 2);
}

// Not an RMS norm of the last axis alone, or not only read inside the chain: no group (the Pow and
// the ReduceMean run as their own dispatches), and the results stay those of the CPU.
TEST(RuntimeFusion, RmsNormLookalikesRunUnfused) {
  SKIP_WITHOUT_GPU();
  std::vector<std::pair<std::string, RmsForm>> cases;
  RmsForm f;
  f.expose = true;
  cases.push_back({"the mean square also an output", f});
  f = RmsForm{};
  f.axis = 1;
  cases.push_back({"another axis", f});
  f.opset = 18;
  cases.push_back({"another axis, opset 18", f});
  f = RmsForm{};
  f.keepdims = 0;
  f.batch = f.d = 3;  // [3, 3, 3] / [3, 3]: the Div broadcasts along the last axis, not the rows
  cases.push_back({"keepdims 0", f});
  f = RmsForm{};
  f.eps_input = true;
  cases.push_back({"eps a graph input", f});
  f = RmsForm{};
  f.casts = true;
  f.dtype = DType::Float16;  // float16 rows cast to float and back: the dtypes do not stay float32
  f.weight = 0;
  cases.push_back({"float16 round trip", f});
  for (const auto& [what, c] : cases) {
    std::string m = rms_model(c);
    Session g = Session::from_bytes(m, gpu());
    recorded_and_replayed_match_cpu(g, m, rms_feeds(c), c.dtype == DType::Float16 ? 1e-3 : 1e-5, 1e-6);
    EXPECT_GE(g.last_plan().dispatches, 3) << what;
    EXPECT_EQ(g.last_plan().fallbacks.size(), 0u) << what;
  }
}

// ---- Shape families: one recorded plan refreshed for other sizes (runtime/refresh.h) -------------

namespace {

// y = x + Range(0, n) and its prefix sums, where n = Shape(x)[0]: a shape chain folded at plan time
// (Shape -> Gather -> Range), re-evaluated by each refresh, on INT64 values beyond 32 bits.
std::string int64_shape_chain_model() {
  ModelBuilder b;
  b.input("x", DType::Int64, {-1});
  b.initializer("zero", Tensor::scalar<int64_t>(0));
  b.initializer("one", Tensor::scalar<int64_t>(1));
  b.initializer("step", Tensor::scalar<int64_t>(3000000000LL));
  b.node("Shape", {"x"}, {"shape"});
  b.node("Gather", {"shape", "zero"}, {"n"});
  b.node("Mul", {"n", "step"}, {"limit"});
  b.node("Range", {"zero", "limit", "step"}, {"r"});
  b.node("Add", {"x", "r"}, {"y"});
  b.node("CumSum", {"y", "zero"}, {"z"});
  b.output("y", DType::Int64);
  b.output("z", DType::Int64);
  return b.bytes();
}

// The constants row_column reads.
void row_column_constants(ModelBuilder& b) {
  b.initializer("zero", Tensor::scalar<int64_t>(0));
  b.initializer("one", Tensor::scalar<int64_t>(1));
  b.initializer("axis1", Tensor::from_vector<int64_t>({1}, {1}));
}

// `col` = x's row indices as a float32 column [n, 1], n = Shape(x)[0]: a shape chain (Shape -> Gather
// -> Range -> Cast -> Unsqueeze) that a refresh folds again for other row counts.
void row_column(ModelBuilder& b, const std::string& x, const std::string& col) {
  b.node("Shape", {x}, {col + "_shape"});
  b.node("Gather", {col + "_shape", "zero"}, {col + "_n"});
  b.node("Range", {"zero", col + "_n", "one"}, {col + "_r"});
  ModelBuilder::attr(b.node("Cast", {col + "_r"}, {col + "_rf"}), "to", int64_t(DType::Float32));
  b.node("Unsqueeze", {col + "_rf", "axis1"}, {col});
}

Tensor int64_values(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(kBig[size_t(i) % 4] + i);
  return Tensor::from_vector<int64_t>({n}, v);
}

}  // namespace

TEST(RuntimeFamily, SizesOfOneFamilyRefreshOnePlan) {
  SKIP_WITHOUT_GPU();
  Session g = Session::from_bytes(int64_shape_chain_model(), gpu());
  Session c = Session::from_bytes(int64_shape_chain_model(), cpu());
  int k = 0;
  for (int64_t n : {5, 9, 3, 9, 40, 2}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::unordered_map<std::string, Tensor> feeds{{"x", int64_values(n)}};
    auto got = g.run(feeds), want = c.run(feeds);
    expect_same(got[0], want[0]);
    expect_same(got[1], want[1]);
    const PlanReport p = g.last_plan();
    if (k++ == 0) {
      EXPECT_FALSE(p.replayed);
      continue;
    }
    EXPECT_TRUE(p.replayed);
    EXPECT_TRUE(p.refreshed) << "n = " << n << ": " << p.refresh_refused;
    EXPECT_EQ(p.symbolic_dims, std::vector<std::string>{"x[0]"});
  }
  EXPECT_GT(g.last_plan().capacity_growths, 0) << "n = 40 outgrew the buffers recorded for n = 5";
}

// Sizes that grow by the same step each run (a decode loop's past): while the GPU runs one, the plan is
// refreshed for the next (runtime/refresh_ahead.h), which then spends no host time refreshing. A size
// that breaks the trend (9 after 6: the plan was refreshed for 7) is refreshed from the guessed sizes;
// two equal steps (9, 10, 11) make the trend again. Every run equals the CPU reference.
TEST(RuntimeFamily, GrowingSizesAreRefreshedAhead) {
  SKIP_WITHOUT_GPU();
  Session g = Session::from_bytes(int64_shape_chain_model(), gpu());
  Session c = Session::from_bytes(int64_shape_chain_model(), cpu());
  struct Want {
    int64_t n;
    bool ahead;
  };
  for (Want want : {Want{2, false}, Want{3, false}, Want{4, false}, Want{5, true}, Want{6, true}, Want{9, false},
                    Want{10, false}, Want{11, false}, Want{12, true}, Want{13, true}, Want{13, false}}) {
    SCOPED_TRACE("n = " + std::to_string(want.n));
    std::unordered_map<std::string, Tensor> feeds{{"x", int64_values(want.n)}};
    auto got = g.run(feeds), want_out = c.run(feeds);
    expect_same(got[0], want_out[0]);
    expect_same(got[1], want_out[1]);
    const PlanReport p = g.last_plan();
    EXPECT_EQ(p.refreshed_ahead, want.ahead);
    if (want.ahead) {
      EXPECT_TRUE(p.replayed && p.refreshed);
      EXPECT_EQ(p.plan_ms, 0.0) << "refreshed during the run before's wait";
      EXPECT_GT(p.refresh_ahead_ms, 0.0);
      EXPECT_TRUE(p.encoded_ahead) << "the refreshed plan's commands were encoded ahead too";
    }
  }
}

// Three "layers" of the same functions (Shape -> Gather -> Range -> Cast -> Unsqueeze, then
// Softmax(v + r)): a refresh computes each fold and kernel once per distinct facts and takes that call
// for the other layers (runtime/refresh.cpp, Recalled::like), but a layer whose facts differ (c is
// 6 wide, a and b 4) gets its own call. Every refresh's outputs equal the CPU reference's.
TEST(RuntimeFamily, RepeatedLayersTakeOneCallPerDistinctFacts) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  row_column_constants(b);
  for (const char* v : {"a", "b", "c"}) {
    const std::string n(v);
    b.input(n, DType::Float32, {-1, n == "c" ? 6 : 4});
    row_column(b, n, n + "_col");
    b.node("Add", {n, n + "_col"}, {n + "_sum"});
    b.node("Softmax", {n + "_sum"}, {n + "_y"});
    b.output(n + "_y", DType::Float32);
  }
  Session g = Session::from_bytes(b.bytes(), gpu());
  Session c = Session::from_bytes(b.bytes(), cpu());
  int k = 0;
  for (int64_t n : {5, 9, 3, 9, 40, 2, 41}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::unordered_map<std::string, Tensor> feeds;
    for (const char* v : {"a", "b", "c"}) {
      const int64_t w = std::string(v) == "c" ? 6 : 4;
      std::vector<float> x(size_t(n * w));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % 11) - 5) * (v[0] == 'b' ? 0.25f : 0.5f);
      feeds[v] = Tensor::from_vector<float>({n, w}, x);
    }
    auto got = g.run(feeds), want = c.run(feeds);
    for (size_t o = 0; o < 3; ++o) expect_same(got[o], want[o]);
    if (k++ > 0) {
      EXPECT_TRUE(g.last_plan().replayed && g.last_plan().refreshed) << g.last_plan().refresh_refused;
    }
  }
}

// Layers of other weights: three products of one shape whose weights and biases differ take one
// kernel call in a refresh, since the kernel reads none of their values; two Compress nodes whose
// conditions differ each get their own (the kernel reads its condition: GpuKernelContext::constant),
// their outputs of other widths. Every refresh's outputs equal the CPU reference's.
TEST(RuntimeFamily, LayersOfOtherWeightsShareACallUnlessItReadsThem) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {-1, 128});
  constexpr int64_t kWide = 65600;  // a condition of more than 64 KiB
  b.input("v", DType::Float32, {-1, kWide});
  b.node("Relu", {"v"}, {"v_relu"});  // (a graph input fed from the host is never taken as alike)
  for (int k = 0; k < 3; ++k) {
    std::vector<float> w(128 * 160);
    for (size_t i = 0; i < w.size(); ++i) w[i] = float(int((i * (3 + 2 * k)) % 17) - 8) * 0.03125f;
    const std::string n = std::to_string(k);
    b.initializer("w" + n, Tensor::from_vector<float>({128, 160}, w));
    std::vector<float> bias(160);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = float(int(i % 7) - 3 + k) * 0.5f;
    b.initializer("bias" + n, Tensor::from_vector<float>({160}, bias));
    b.node("MatMul", {"x", "w" + n}, {"p" + n});
    b.node("Add", {"p" + n, "bias" + n}, {"y" + n});
    b.output("y" + n, DType::Float32);
  }
  for (int k = 0; k < 2; ++k) {
    std::vector<uint8_t> c(static_cast<size_t>(kWide));
    for (size_t i = 0; i < c.size(); ++i) c[i] = (i % size_t(17 + 2 * k)) == 0;  // (at most 4096 kept: uniforms)
    const std::string n = std::to_string(k);
    b.initializer("c" + n, Tensor::from_vector<uint8_t>({kWide}, c).cast(DType::Bool));
    auto& node = b.node("Compress", {"v_relu", "c" + n}, {"z" + n});
    ModelBuilder::attr(node, "axis", int64_t(1));
    b.output("z" + n, DType::Float32);
  }
  Session g = Session::from_bytes(b.bytes(), gpu());
  Session c = Session::from_bytes(b.bytes(), cpu());
  int k = 0;
  for (int64_t m : {6, 8, 7, 8}) {
    SCOPED_TRACE("M = " + std::to_string(m));
    std::vector<float> x(size_t(m * 128)), v(size_t(m * kWide));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 11) - 5) * 0.25f;
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i % 13) - 6);
    std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({m, 128}, x)},
                                                  {"v", Tensor::from_vector<float>({m, kWide}, v)}};
    auto got = g.run(feeds), want = c.run(feeds);
    ASSERT_EQ(got.size(), 5u);
    for (size_t o = 0; o < 5; ++o) expect_same(got[o], want[o]);
    EXPECT_NE(got[3].shape(), got[4].shape()) << "the two conditions keep other columns";
    if (k++ > 0) {
      EXPECT_TRUE(g.last_plan().replayed && g.last_plan().refreshed) << g.last_plan().refresh_refused;
    }
  }
}

// A scalar folded from the sizes (x's row count, cast to float) is a literal in the fused elementwise
// kernel's WGSL: a refresh for another row count must not take the recorded program's text (its key
// holds the literals: FusedSteps::key). Every run equals the CPU reference.
TEST(RuntimeFamily, AFoldedScalarInTheWgslIsNotTakenFromTheRecord) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {-1, 4});
  b.initializer("zero", Tensor::scalar<int64_t>(0));
  b.initializer("one", Tensor::scalar<float>(1.0f));
  b.node("Shape", {"x"}, {"shape"});
  b.node("Gather", {"shape", "zero"}, {"n"});
  auto& cast = b.node("Cast", {"n"}, {"nf"});
  ModelBuilder::attr(cast, "to", int64_t(DType::Float32));
  b.node("Mul", {"x", "nf"}, {"scaled"});
  b.node("Add", {"scaled", "one"}, {"y"});
  b.output("y", DType::Float32);
  Session g = Session::from_bytes(b.bytes(), gpu());
  Session c = Session::from_bytes(b.bytes(), cpu());
  for (int64_t rows : {2, 3, 5, 3}) {
    SCOPED_TRACE("rows = " + std::to_string(rows));
    std::vector<float> x(size_t(rows * 4));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 7) - 3);
    std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({rows, 4}, x)}};
    expect_same(g.run(feeds).at(0), c.run(feeds).at(0));
  }
}

// Inputs fed from the host whose values a kernel reads (Reshape's shape: value-keyed) are never alike:
// two Reshapes of equal inputs but other fed shapes each get their own call in a refresh.
TEST(RuntimeFamily, FedValuesAKernelReadsAreNotShared) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {-1, 4});
  b.input("s1", DType::Int64, {2});
  b.input("s2", DType::Int64, {2});
  b.node("Relu", {"x"}, {"r1"});
  b.node("Neg", {"x"}, {"r2"});
  b.node("Reshape", {"r1", "s1"}, {"a"});
  b.node("Reshape", {"r2", "s2"}, {"b"});
  b.node("Relu", {"a"}, {"ya"});
  b.node("Relu", {"b"}, {"yb"});
  b.output("ya", DType::Float32);
  b.output("yb", DType::Float32);
  Session g = Session::from_bytes(b.bytes(), gpu());
  Session c = Session::from_bytes(b.bytes(), cpu());
  int k = 0;
  for (int64_t rows : {2, 4, 6}) {
    SCOPED_TRACE("rows = " + std::to_string(rows));
    std::vector<float> x(size_t(rows * 4));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 5) - 2);
    std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({rows, 4}, x)},
                                                  {"s1", Tensor::from_vector<int64_t>({2}, {-1, 2})},
                                                  {"s2", Tensor::from_vector<int64_t>({2}, {-1, 8})}};
    auto got = g.run(feeds), want = c.run(feeds);
    expect_same(got[0], want[0]);
    expect_same(got[1], want[1]);
    if (k++ > 0) {
      EXPECT_TRUE(g.last_plan().replayed && g.last_plan().refreshed) << g.last_plan().refresh_refused;
    }
  }
}

// A product whose kernel depends on M (webgpu/kernels/matmul.cpp: a smaller tile for M <= 256, the gemv
// kernels for M <= 4): a run past such a bound fails the plan's guard and is planned anew; the plans
// then serve their sizes. (Above 256 rows this small product keeps the smaller tile unless
// $ONNXGPU_MATMUL_WIDE_GRID is 0, which the tests set to have a bound at 256.)
namespace {

// x [-1, 64] and the product p = x @ w ([64, 48]), whose tile choice changes with x's rows.
void product_of_rows(ModelBuilder& b) {
  b.input("x", DType::Float32, {-1, 64});
  std::vector<float> w(64 * 48);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 13) - 6) * 0.0625f;
  b.initializer("w", Tensor::from_vector<float>({64, 48}, w));
  b.node("MatMul", {"x", "w"}, {"p"}, "product");
}

// Runs of the model on x of m rows each, on the GPU and the CPU reference: each output equal to the
// reference's, and whether the run replayed a plan and refreshed it as expected.
struct RowsRun {
  int64_t m;
  bool replayed, refreshed;
};
void expect_runs_of_rows(const std::string& model, std::initializer_list<RowsRun> runs) {
  Session g = Session::from_bytes(model, gpu());
  Session c = Session::from_bytes(model, cpu());
  for (RowsRun want : runs) {
    SCOPED_TRACE("M = " + std::to_string(want.m));
    std::vector<float> x(size_t(want.m * 64));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 7) - 3) * 0.5f;
    std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({want.m, 64}, x)}};
    expect_same(g.run(feeds).at(0), c.run(feeds).at(0));
    EXPECT_EQ(g.last_plan().replayed, want.replayed);
    EXPECT_EQ(g.last_plan().refreshed, want.refreshed);
  }
}

}  // namespace

TEST(RuntimeFamily, AnotherKernelChoicePlansAgain) {
  SKIP_WITHOUT_GPU();
  onnxgpu::testing::ScopedEnv wide("ONNXGPU_MATMUL_WIDE_GRID", "0");  // the tile changes above 256 rows
  ModelBuilder b;
  product_of_rows(b);
  b.output("p", DType::Float32);
  expect_runs_of_rows(b.bytes(), {{6, false, false}, {8, true, true}, {300, false, false}, {280, true, true},
                                  {6, true, true}, {280, true, false}, {1, false, false}, {8, true, true},
                                  {1, true, false}});
}

// A refresh refused part-way (the product's tile changes at 300 rows, after the shape chain's folds
// were computed again) leaves the plan's scratch (runtime/plan.h, Recording: the changed values, the
// fold classes) to the next refresh of that plan, which clears what it wrote: the later refreshes of
// the first plan (7 and 9 rows) equal the CPU reference.
TEST(RuntimeFamily, ARefusedRefreshLeavesNothingToTheNext) {
  SKIP_WITHOUT_GPU();
  onnxgpu::testing::ScopedEnv wide("ONNXGPU_MATMUL_WIDE_GRID", "0");  // the tile changes above 256 rows
  ModelBuilder b;
  row_column_constants(b);
  row_column(b, "x", "r");
  product_of_rows(b);
  b.node("Add", {"p", "r"}, {"y"});
  b.output("y", DType::Float32);
  expect_runs_of_rows(b.bytes(), {{6, false, false}, {8, true, true}, {300, false, false}, {7, true, true},
                                  {280, true, true}, {9, true, true}});
}

// A model that reads an input's values at plan time (Reshape's shape fed as an input) is keyed on
// them: a run with other values is never served by a refresh of the first plan.
TEST(RuntimeFamily, ValueKeyedInputsAreNotRefreshed) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b;
  b.input("x", DType::Float32, {-1});
  b.input("shape", DType::Int64, {2});
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y", DType::Float32);
  Session g = Session::from_bytes(b.bytes(), gpu());
  auto run = [&](int64_t rows, int64_t cols) {
    std::vector<float> x(size_t(rows * cols));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
    auto y = g.run({{"x", Tensor::from_vector<float>({rows * cols}, x)},
                    {"shape", Tensor::from_vector<int64_t>({2}, {rows, cols})}});
    EXPECT_EQ(y.at(0).shape(), (Shape{rows, cols}));
    EXPECT_EQ(y.at(0).data<float>()[rows * cols - 1], float(rows * cols - 1));
  };
  run(2, 3);
  run(3, 2);
  EXPECT_FALSE(g.last_plan().refreshed);
  run(2, 3);
  EXPECT_TRUE(g.last_plan().replayed);
  EXPECT_FALSE(g.last_plan().refreshed);
}

namespace {

// A decode step's KV caches in miniature: present = Concat(past, new) along the sequence axis, a float
// cache read by a product (as A, and as B of a one-row product: the GEMV's vec4 loads of a pitched
// tensor) and a Transpose + ReduceSum, an INT64 one (values beyond 32 bits) read by Add.
std::string appending_model() {
  ModelBuilder b;
  b.input("past", DType::Float32, {1, 3, -1, 4}).input("x", DType::Float32, {1, 3, -1, 4});
  b.input("ipast", DType::Int64, {2, -1}).input("ix", DType::Int64, {2, -1});
  b.initializer("two", Tensor::scalar<float>(2.0f));
  std::vector<float> w(20);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 7) - 3) * 0.25f;
  b.initializer("w", Tensor::from_vector<float>({4, 5}, w));
  b.initializer("ibig", Tensor::from_vector<int64_t>({2, 1}, {3000000000LL, -(1LL << 40)}));
  b.node("Mul", {"x", "two"}, {"k"});
  ModelBuilder::attr(b.node("Concat", {"past", "k"}, {"present"}), "axis", 2);
  b.node("MatMul", {"present", "w"}, {"y"});
  b.node("Transpose", {"present"}, {"t"});
  b.node("ReduceSum", {"t"}, {"s"});
  b.initializer("last", Tensor::from_vector<int64_t>({1}, {-1}));
  b.node("ReduceSum", {"present", "last"}, {"rs"});  // [1, 3, T, 1]
  ModelBuilder::attr(b.node("Transpose", {"rs"}, {"q"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  b.node("MatMul", {"q", "present"}, {"z"});  // [1, 3, 1, T] @ [1, 3, T, 4]
  ModelBuilder::attr(b.node("Concat", {"ipast", "ix"}, {"ipresent"}), "axis", -1);
  b.node("Add", {"ipresent", "ibig"}, {"iy"});
  b.output("present", DType::Float32).output("y", DType::Float32).output("s", DType::Float32);
  b.output("ipresent", DType::Int64).output("iy", DType::Int64).output("z", DType::Float32);
  return b.bytes();
}

// Step k's new rows (n of them).
std::unordered_map<std::string, Tensor> appending_feeds(int k, int64_t n) {
  std::vector<float> x(size_t(12 * n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((int(i) * 5 + k * 3) % 11 - 5) * 0.125f;
  std::vector<int64_t> ix(size_t(2 * n));
  for (size_t i = 0; i < ix.size(); ++i) ix[i] = (int64_t(k) << 33) + int64_t(i) - 7;
  return {{"x", Tensor::from_vector<float>({1, 3, n, 4}, x)}, {"ix", Tensor::from_vector<int64_t>({2, n}, ix)}};
}

}  // namespace

// KV caches appended in place (runtime/resident.h): the presents fed back as the pasts are kept in a
// buffer with spare room, handed out without a copy, and the next run writes only the new rows. Every
// output of every step matches the CPU; every present handed out keeps its values while later runs
// append (and regrow) the buffer; feeding an older present (a branch) copies and is right too.
TEST(RuntimeAppend, PresentsFedBackAppendInPlace) {
  SKIP_WITHOUT_GPU();
  Session g = Session::from_bytes(appending_model(), gpu());
  Session c = Session::from_bytes(appending_model(), cpu());
  std::unordered_map<std::string, Tensor> host = appending_feeds(0, 2);
  host["past"] = Tensor(DType::Float32, {1, 3, 2, 4});
  host["ipast"] = Tensor::from_vector<int64_t>({2, 2}, {1LL << 35, -3, 5, -(1LL << 50)});
  std::vector<Tensor> want = c.run(host);
  std::vector<DeviceTensor> got = g.run_on_device(host);
  std::vector<std::vector<DeviceTensor>> held{got};  // every step's outputs, kept
  std::vector<std::vector<Tensor>> wanted{want};
  auto check = [&](const std::vector<DeviceTensor>& d, const std::vector<Tensor>& w) {
    for (size_t o = 0; o < w.size(); ++o) expect_same(d.at(o).to_host(), w[o]);
  };
  check(got, want);
  // Step k feeds step `from`'s presents.
  auto step = [&](int k, int64_t n, size_t from) {
    std::unordered_map<std::string, Tensor> feeds = appending_feeds(k, n), cfeeds = feeds;
    cfeeds["past"] = wanted[from][0];
    cfeeds["ipast"] = wanted[from][3];
    want = c.run(cfeeds);
    got = g.run_on_device(feeds, {{"past", held[from][0]}, {"ipast", held[from][3]}});
    check(got, want);
    held.push_back(got);
    wanted.push_back(want);
  };
  // In place every step but those that plan anew (a kernel's guard: new buffers, the pasts copied in)
  // or outgrow the buffers (a larger one, the pasts copied in).
  int in_place = 0, growths = 0;
  for (int k = 1; k <= 24; ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    step(k, k == 9 ? 2 : 1, held.size() - 1);
    const PlanReport p = g.last_plan();
    EXPECT_EQ(p.appended_outputs, (std::vector<std::string>{"present", "ipresent"}));
    // The Mul writes present's new rows in place; ipresent's are a graph input's, copied.
    EXPECT_EQ(p.rows_written_in_place, (std::vector<std::string>{"present"}));
    const bool grew = p.capacity_growths > growths;
    growths = p.capacity_growths;
    if (k >= 2 && p.replayed && !grew) {
      EXPECT_EQ(p.appended_in_place, 2) << "the presents fed back were not found in place";
    }
    in_place += p.appended_in_place == 2;
  }
  EXPECT_GE(in_place, 18);
  EXPECT_GT(g.last_plan().capacity_growths, 0) << "26 positions outgrew the 16 first made";
  // A branch: an older present fed again is copied (the newer ones hold the buffer), then appends in place.
  step(25, 1, 10);
  EXPECT_EQ(g.last_plan().appended_in_place, 0);
  step(26, 1, held.size() - 1);
  EXPECT_EQ(g.last_plan().appended_in_place, 2);
  for (size_t s = 0; s < held.size(); ++s) {
    SCOPED_TRACE("presents of step " + std::to_string(s));
    expect_same(held[s][0].to_host(), wanted[s][0]);
    expect_same(held[s][3].to_host(), wanted[s][3]);
  }
  // The presents feed the host path (packed) and a session without capture alike.
  std::unordered_map<std::string, Tensor> feeds = appending_feeds(30, 1);
  feeds["past"] = held.back()[0].to_host();
  feeds["ipast"] = held.back()[3].to_host();
  std::vector<Tensor> host_out = g.run(feeds), cpu_out = c.run(feeds);
  for (size_t o = 0; o < host_out.size(); ++o) expect_same(host_out[o], cpu_out[o]);
  SessionOptions off = gpu();
  off.capture = false;
  Session u = Session::from_bytes(appending_model(), off);
  std::vector<DeviceTensor> prev = held.back();
  std::vector<Tensor> cprev = wanted.back();
  for (int k = 31; k < 34; ++k) {
    std::unordered_map<std::string, Tensor> f = appending_feeds(k, 1), cf = f;
    cf["past"] = cprev[0];
    cf["ipast"] = cprev[3];
    cprev = c.run(cf);
    prev = u.run_on_device(f, {{"past", prev[0]}, {"ipast", prev[3]}});
    for (size_t o = 0; o < cprev.size(); ++o) expect_same(prev[o].to_host(), cprev[o]);
  }
}

namespace {

// A decode step's attention inputs in miniature: q, k, v from one product with a bias and a Split (the
// product writes them as parts), each Reshape'd to [1, S, 2, 4] and Transposed to [1, 2, S, 4]; k and
// v appended to their caches along the sequence axis. k's rows are read by nothing else, so the
// product (for S = 1, when the Transpose moves only an axis of size 1) or the Transpose (S > 1) writes
// them straight into the cache; v's are also summed (vs), so the Concat copies them. The presents are
// read by a product each (y, z) and q by a sum. An INT64 cache too (values beyond 32 bits): its new rows
// ix + big, written by the Add.
std::string rows_model() {
  ModelBuilder b;
  b.input("x", DType::Float32, {1, -1, 8});
  b.input("past_k", DType::Float32, {1, 2, -1, 4}).input("past_v", DType::Float32, {1, 2, -1, 4});
  b.input("ix", DType::Int64, {2, -1}).input("ipast", DType::Int64, {2, -1});
  b.initializer("big", Tensor::from_vector<int64_t>({2, 1}, {3000000000LL, -(1LL << 40)}));
  b.node("Add", {"ix", "big"}, {"ixb"});
  ModelBuilder::attr(b.node("Concat", {"ipast", "ixb"}, {"ipresent"}), "axis", 1);
  std::vector<float> w(8 * 24), c(24), w2(4 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * float(int(i % 13) - 6);
  for (size_t i = 0; i < c.size(); ++i) c[i] = 0.125f * float(i) - 1.0f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.25f * float(int(i % 5) - 2);
  b.initializer("w", Tensor::from_vector<float>({8, 24}, w)).initializer("c", Tensor::from_vector<float>({24}, c));
  b.initializer("w2", Tensor::from_vector<float>({4, 3}, w2));
  b.initializer("heads", Tensor::from_vector<int64_t>({4}, {1, -1, 2, 4}));
  b.node("MatMul", {"x", "w"}, {"h"});
  b.node("Add", {"h", "c"}, {"hb"});
  auto& s = b.node("Split", {"hb"}, {"q", "k", "v"});
  auto* axis = s.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto_AttributeType_INT);
  axis->set_i(2);
  for (const std::string n : {"k", "v"}) {
    b.node("Reshape", {n, "heads"}, {n + "4"});
    ModelBuilder::attr(b.node("Transpose", {n + "4"}, {n + "t"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
    ModelBuilder::attr(b.node("Concat", {"past_" + n, n + "t"}, {"present_" + n}), "axis", 2);
  }
  b.node("MatMul", {"present_k", "w2"}, {"y"});
  b.node("MatMul", {"present_v", "w2"}, {"z"});
  b.node("ReduceSum", {"q"}, {"qs"});
  b.node("ReduceSum", {"vt"}, {"vs"});
  for (const char* o : {"present_k", "present_v", "y", "z", "qs", "vs"}) b.output(o, DType::Float32);
  b.output("ipresent", DType::Int64);
  return b.bytes();
}

}  // namespace

// The new rows of a KV cache appended in place written by the kernel that computes them (resident.h):
// the Concat copies nothing for k and the INT64 cache, and still copies v (read elsewhere too). Decode steps of one row, a
// few prompts of several rows between them (the Transpose's kernel then writes k's rows), the buffers
// regrowing: every output of every step matches the CPU, and every present handed out keeps its values.
TEST(RuntimeAppend, NewRowsWrittenByTheirKernel) {
  SKIP_WITHOUT_GPU();
  Session g = Session::from_bytes(rows_model(), gpu());
  Session c = Session::from_bytes(rows_model(), cpu());
  std::unordered_map<std::string, Tensor> cpast{{"past_k", Tensor(DType::Float32, {1, 2, 3, 4})},
                                               {"past_v", Tensor(DType::Float32, {1, 2, 3, 4})},
                                               {"ipast", Tensor::from_vector<int64_t>({2, 2}, {1LL << 35, -3, 5, -(1LL << 50)})}};
  for (auto& [n, t] : cpast)
    for (int64_t i = 0; n != "ipast" && i < t.numel(); ++i) t.data<float>()[i] = 0.01f * float(i) - (n == "past_k" ? 0.1f : 0.0f);
  std::unordered_map<std::string, DeviceTensor> gpast;
  std::vector<std::vector<DeviceTensor>> held;
  std::vector<std::vector<Tensor>> wanted;
  int written = 0, replayed = 0;
  for (int step = 0; step < 30; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const int64_t rows = step == 7 || step == 19 ? 3 : 1;
    std::vector<float> x(size_t(rows * 8));
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(int((i * 7 + size_t(step) * 3) % 17) - 8);
    std::vector<int64_t> ix(size_t(2 * rows));
    for (size_t i = 0; i < ix.size(); ++i) ix[i] = (int64_t(step) << 33) + int64_t(i) - 7;
    std::unordered_map<std::string, Tensor> feeds{{"x", Tensor::from_vector<float>({1, rows, 8}, x)},
                                                  {"ix", Tensor::from_vector<int64_t>({2, rows}, ix)}},
                                            cfeeds = feeds;
    for (const auto& [n, t] : cpast) cfeeds[n] = t;
    if (step == 0) feeds.insert(cpast.begin(), cpast.end());
    std::vector<Tensor> want = c.run(cfeeds);
    std::vector<DeviceTensor> got = g.run_on_device(feeds, gpast);
    for (size_t o = 0; o < want.size(); ++o) expect_same(got.at(o).to_host(), want[o]);
    const PlanReport p = g.last_plan();
    if (step >= 1) {
      EXPECT_EQ(p.appended_outputs, (std::vector<std::string>{"ipresent", "present_k", "present_v"}));
      written += p.rows_written_in_place == std::vector<std::string>{"ipresent", "present_k"};
    }
    replayed += p.replayed;
    gpast = {{"past_k", got[0]}, {"past_v", got[1]}, {"ipast", got[6]}};
    cpast = {{"past_k", want[0]}, {"past_v", want[1]}, {"ipast", want[6]}};
    held.push_back(got);
    wanted.push_back(want);
  }
  EXPECT_EQ(written, 29) << "k's rows written by their kernel in every step with the past on the GPU";
  EXPECT_GE(replayed, 20);
  EXPECT_GT(g.last_plan().capacity_growths, 0) << "36 positions outgrew the 16 first made";
  for (size_t s = 0; s < held.size(); ++s) {
    SCOPED_TRACE("presents of step " + std::to_string(s));
    for (size_t o : {0, 1, 6}) expect_same(held[s][o].to_host(), wanted[s][o]);
  }
}
