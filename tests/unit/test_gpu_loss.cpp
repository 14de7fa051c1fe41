// GPU loss kernels (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) against the CPU reference:
// one-node models run on the WebGPU EP in capture mode (3 runs: a recording and two replays) with
// fail_loud, compared with a float tolerance (the GPU computes in f32, the CPU in double). Targets are
// int32 and int64, with and without weights and ignore_index, for every reduction; an out-of-range
// target must be an error naming the node.
// Needs a WebGPU adapter (here: SwiftShader, which the engine finds by itself;
// XDG_RUNTIME_DIR=/tmp); with ONNXGPU_SKIP_GPU_TESTS=1 the tests skip when there is none.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "loader/tensor_proto.h"
#include "one_node.h"
#include "onnxgpu/error.h"
#include "onnxgpu/session.h"

namespace onnxgpu {
namespace {

bool skip_gpu_tests() {
  const char* s = std::getenv("ONNXGPU_SKIP_GPU_TESTS");
  return s && std::string(s) == "1";
}

// One session kept for the whole suite keeps the shared device alive (see test_gpu_indexing.cpp).
std::unique_ptr<Session> g_keeper;

class Keeper : public ::testing::Environment {
 public:
  void TearDown() override { g_keeper.reset(); }
};
[[maybe_unused]] ::testing::Environment* const g_env = ::testing::AddGlobalTestEnvironment(new Keeper);

using In = testing::Operand;  // an undefined value: an omitted optional input
using testing::feeds_of;

struct Opts {
  std::string reduction = "mean";
  bool has_ignore = false;
  int64_t ignore = 0;
  bool log_prob = false;  // SCE: ask for the second output
};

std::string model(const std::string& op, const std::vector<In>& ins, DType out, const Opts& o) {
  std::vector<std::string> outs{"y"};
  if (o.log_prob) outs.push_back("lp");
  auto attrs = [&](onnx::NodeProto& n) {
    testing::set_string(n, "reduction", o.reduction);
    if (o.has_ignore) testing::set_int(n, "ignore_index", o.ignore);
  };
  return testing::one_node_model(op, ins, outs, 13, attrs, {"node", out, false});
}

Tensor random_floats(DType t, const Shape& shape, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor f(DType::Float64, shape);
  for (auto& v : f.span<double>()) v = u(rng);
  return f.cast(t);
}

// Classes in [0, c), with `ignore` sprinkled in when given.
Tensor random_targets(DType t, const Shape& shape, int64_t c, uint64_t seed, const int64_t* ignore = nullptr) {
  std::mt19937_64 rng(seed);
  Tensor x(DType::Int64, shape);
  for (auto& v : x.span<int64_t>()) v = (ignore && rng() % 4 == 0) ? *ignore : int64_t(rng() % uint64_t(c));
  return x.cast(t);
}

void keep_device() {
  if (g_keeper) return;
  std::vector<In> ins{{"x", Tensor::scalar<float>(1.0f)}};
  onnx::ModelProto m;
  SessionOptions o;
  o.ep = "webgpu";
  // An NLL model of one element is enough to start the device.
  std::vector<In> nin{{"x", random_floats(DType::Float32, {1, 2}, 1, -1, 1)},
                      {"t", Tensor::from_vector<int64_t>({1}, {1})}};
  g_keeper = std::make_unique<Session>(Session::from_bytes(model("NegativeLogLikelihoodLoss", nin, DType::Float32, {}), o));
  g_keeper->run(feeds_of(nin));
}

SessionOptions gpu_options() {
  SessionOptions o;
  o.ep = "webgpu";
  o.capture = true;
  o.int64.fail_loud = true;
  return o;
}

void expect_close(const Tensor& got, const Tensor& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  Tensor g = got.cast(DType::Float64), w = want.cast(DType::Float64);
  for (int64_t i = 0; i < g.numel(); ++i) {
    double a = g.data<double>()[i], b = w.data<double>()[i];
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(a)) << what << " [" << i << "]: GPU " << a << ", CPU NaN";
      continue;
    }
    EXPECT_NEAR(a, b, 1e-5 + rtol * std::fabs(b)) << what << " [" << i << "]";
  }
}

void check(const std::string& what, const std::string& m, const std::vector<In>& ins, double rtol) {
  try {
    keep_device();
  } catch (const std::exception& e) {
    if (testing::skip_gpu()) GTEST_SKIP() << "no WebGPU session: " << e.what();
    FAIL() << what << ": cannot create a WebGPU session: " << e.what();
  }
  testing::check_against_cpu(
      what, m, ins, gpu_options(),
      [&](const Tensor& got, const Tensor& want, const std::string& w) { expect_close(got, want, rtol, w); }, 1);
}

double rtol_of(DType t) { return t == DType::Float16 ? 4e-3 : t == DType::BFloat16 ? 2e-2 : 1e-4; }

// Every combination of shape, target type, weights, ignore_index and reduction for one op.
void sweep(const std::string& op, const std::vector<DType>& types) {
  const std::vector<Shape> shapes{{6, 5}, {3, 4, 2, 3}, {2, 300}};
  uint64_t seed = 1;
  for (DType t : types)
    for (const Shape& xs : shapes)
      for (DType tt : {DType::Int32, DType::Int64})
        for (bool weighted : {false, true})
          for (int ig = 0; ig < 3; ++ig)  // none, an in-range class, a negative value
            for (const char* red : {"none", "sum", "mean"}) {
              int64_t c = xs[1];
              Shape ts{xs[0]};
              for (size_t i = 2; i < xs.size(); ++i) ts.push_back(xs[i]);
              Opts o;
              o.reduction = red;
              o.has_ignore = ig > 0;
              o.ignore = ig == 1 ? 2 : -100;
              o.log_prob = op == "SoftmaxCrossEntropyLoss" && (seed % 2 == 0);
              std::vector<In> ins{{"x", random_floats(t, xs, seed++, -4, 4)},
                                  {"t", random_targets(tt, ts, c, seed++, o.has_ignore ? &o.ignore : nullptr)}};
              if (weighted) ins.push_back({"w", random_floats(t, {c}, seed++, 0.1, 2)});
              std::string what = op + " " + std::string(dtype_name(t)) + " x" + shape_str(xs) + " target " +
                                 std::string(dtype_name(tt)) + (weighted ? " weighted" : "") +
                                 (o.has_ignore ? " ignore " + std::to_string(o.ignore) : "") + " " + red +
                                 (o.log_prob ? " +log_prob" : "");
              check(what, model(op, ins, t, o), ins, rtol_of(t));
            }
}

TEST(GpuLoss, NegativeLogLikelihoodLoss) {
  sweep("NegativeLogLikelihoodLoss", {DType::Float32, DType::Float16, DType::Float64});
}

TEST(GpuLoss, SoftmaxCrossEntropyLoss) {
  sweep("SoftmaxCrossEntropyLoss", {DType::Float32, DType::Float16, DType::Float64});
}

TEST(GpuLoss, WeightInitializerAndEveryTargetIgnored) {
  // Weights as an initializer; all targets ignored: 'mean' is 0/0 on both.
  Opts o;
  o.has_ignore = true;
  o.ignore = 1;
  std::vector<In> ins{{"x", random_floats(DType::Float32, {4, 3}, 5, -2, 2)},
                      {"t", Tensor::from_vector<int64_t>({4}, {1, 1, 1, 1})},
                      {"w", random_floats(DType::Float32, {3}, 6, 0.5, 1.5), true}};
  check("all ignored, mean", model("NegativeLogLikelihoodLoss", ins, DType::Float32, o), ins, 1e-4);
  o.reduction = "sum";
  check("all ignored, sum", model("SoftmaxCrossEntropyLoss", ins, DType::Float32, o), ins, 1e-4);
}

TEST(GpuLoss, TargetOutOfRange) {
  // A class beyond C, and an int64 class whose low word is in range: errors naming the node, every run.
  for (int64_t bad : {int64_t(3), (int64_t(1) << 32) + 1, int64_t(-1)})
    for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
      Opts o;
      o.reduction = "sum";
      std::vector<In> ins{{"x", random_floats(DType::Float32, {2, 3}, 7, -2, 2)},
                          {"t", Tensor::from_vector<int64_t>({2}, {0, bad})}};
      std::string m = model(op, ins, DType::Float32, o);
      auto feeds = feeds_of(ins);
      SessionOptions cpu_opts;
      cpu_opts.ep = "cpu";
      EXPECT_THROW(Session::from_bytes(m, cpu_opts).run(feeds), Error);
      std::unique_ptr<Session> gpu;
      try {
        keep_device();
        gpu = std::make_unique<Session>(Session::from_bytes(m, gpu_options()));
      } catch (const std::exception& e) {
        if (skip_gpu_tests()) GTEST_SKIP() << "no WebGPU session: " << e.what();
        FAIL() << "cannot create a WebGPU session: " << e.what();
      }
      for (int run = 0; run < 3; ++run) {
        try {
          gpu->run(feeds);
          ADD_FAILURE() << op << " target " << bad << " (run " << run + 1 << "): no error";
        } catch (const std::exception& e) {
          EXPECT_NE(std::string(e.what()).find("'node'"), std::string::npos) << e.what();
        }
      }
    }
}

}  // namespace
}  // namespace onnxgpu
