// MatMulNBits and GatherBlockQuantized on the GPU beyond the ONNX Runtime cases (tests/data/contrib):
// larger products against the CPU reference, covering both kernels' loops (several workgroups, K loops
// of several iterations and K-slices, tails of K, N and M), every bit width and zero-point form; and the
// weights staying packed in GPU memory.
//
// Run: XDG_RUNTIME_DIR=/tmp build/tests/unit_tests --gtest_filter='GpuBlockQuant*'
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "model_builder.h"
#include "one_node.h"
#include "onnxgpu/error.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"

namespace onnxgpu {
namespace {

using testing::Operand;

Tensor random_bytes(const Shape& s, uint32_t seed) {
  std::mt19937 r(seed);
  Tensor t(DType::UInt8, s);
  for (auto& v : t.span<uint8_t>()) v = uint8_t(r() & 0xff);
  return t;
}

// Scales of both signs, small enough that the products stay near 1.
Tensor random_scales(DType t, const Shape& s, uint32_t seed) {
  Tensor f = testing::random_float(DType::Float32, s, seed);
  for (float& v : f.span<float>()) v *= 0.05f;
  return f.cast(t);
}

enum class Zp { None, Packed, Float };

struct NBits {
  int64_t M, K, N, bits, block;
  Zp zp = Zp::None;
  bool bias = false;
  DType t = DType::Float32;
  std::string name() const {
    return "M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N) + " bits " + std::to_string(bits) +
           " block " + std::to_string(block) + (zp == Zp::Packed ? " packed zp" : zp == Zp::Float ? " float zp" : "") +
           (bias ? " bias" : "") + " " + std::string(dtype_name(t));
  }
};

std::string nbits_model(const NBits& c, std::vector<Operand>& in) {
  const int64_t blocks = (c.K + c.block - 1) / c.block;
  in = {{"A", testing::random_float(c.t, {c.M, c.K}, 1)},
        {"B", random_bytes({c.N, blocks, c.block * c.bits / 8}, 2), true},
        {"scales", random_scales(c.t, {c.N, blocks}, 3), true}};
  if (c.zp == Zp::Packed) in.push_back({"zero_points", random_bytes({c.N, (blocks * c.bits + 7) / 8}, 4), true});
  if (c.zp == Zp::Float) {
    Tensor z = testing::random_float(DType::Float32, {c.N, blocks}, 4);
    for (float& v : z.span<float>()) v = (v + 1.0f) * float(1 << (c.bits - 1));
    in.push_back({"zero_points", z.cast(c.t), true});
  }
  if (c.bias) {
    while (in.size() < 5) in.push_back({"", Tensor()});
    in.push_back({"bias", testing::random_float(c.t, {c.N}, 5), true});
  }
  testing::ModelOptions mo;
  mo.node_name = "n0";
  std::string bytes = testing::one_node_model("MatMulNBits", in, {"Y"}, 17, [&](onnx::NodeProto& n) {
    testing::set_int(n, "K", c.K);
    testing::set_int(n, "N", c.N);
    testing::set_int(n, "bits", c.bits);
    testing::set_int(n, "block_size", c.block);
  }, mo);
  onnx::ModelProto m;
  m.ParseFromString(bytes);
  m.mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
  auto* d = m.add_opset_import();
  d->set_domain("com.microsoft");
  d->set_version(1);
  return m.SerializeAsString();
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  runtime::Tolerance tol{1e-4, 1e-4};
  if (want.dtype() != DType::Float32) tol = {8e-3, 8e-3};
  auto r = runtime::compare_tensors(got, want, tol);
  EXPECT_TRUE(r.passed) << what << ": " << r.message;
}

// Each case on the GPU (fail-loud: no CPU node) against the CPU reference, recorded and replayed.
void check_nbits_cases(const std::vector<NBits>& cases) {
  for (const NBits& c : cases) {
    std::vector<Operand> in;
    const std::string model = nbits_model(c, in);
    SessionOptions o = testing::webgpu_options();
    o.int64.fail_loud = true;
    testing::check_against_cpu(c.name(), model, in, o, expect_close, 1);
  }
}

TEST(GpuBlockQuant, ProductsMatchTheCpu) {
  // M <= 4: the rows kernel; M > 4: the tiled one. K 300 is no multiple of any block; N 70 leaves a
  // partial workgroup of rows and a partial tile; K 4100 at 8 bits takes the rows kernel's loop twice.
  const std::vector<NBits> cases = {
      {1, 300, 70, 4, 16, Zp::Packed},         {4, 300, 70, 4, 64, Zp::None, true},
      {3, 300, 70, 2, 32, Zp::Float},          {2, 300, 70, 8, 256, Zp::Packed, true},
      {1, 4100, 8, 8, 32, Zp::Packed},         {1, 4100, 8, 4, 128, Zp::None, false, DType::Float16},
      {37, 300, 70, 4, 32, Zp::Packed, true},  {5, 300, 70, 8, 16, Zp::Float},
      {37, 300, 70, 2, 128, Zp::None},         {9, 300, 70, 4, 256, Zp::Float, true, DType::Float16},
  };
  check_nbits_cases(cases);
}

// The rows kernel's edges (M <= 4; its shape comes from the sizes and the device's workgroup memory,
// 32 KiB on SwiftShader, 16 KiB at the least): several K-slices with a last one of a single word (K
// 4100: 1025 words at 8 bits, 513 at 4), K shorter than one block (20 at block 16), K no multiple of
// the block or the word, 2 columns per invocation with the last workgroup partial (N 515, 1030 and 4099
// take 2, 4 and 16 columns per workgroup), a row shared by 256, 128, 32 and fewer invocations (one or
// two levels of partial sums), M 1..4 with every bit width and zero-point form, bias, float16 A.
TEST(GpuBlockQuant, RowsKernelEdgesMatchTheCpu) {
  const std::vector<NBits> cases = {
      {2, 4100, 515, 8, 16, Zp::Packed, true},    {1, 4100, 1030, 4, 32, Zp::None, true},
      {1, 1100, 4099, 4, 64, Zp::Float},          {4, 700, 45, 2, 16, Zp::Packed, true},
      {3, 20, 33, 4, 16, Zp::Float},              {4, 2048, 301, 4, 128, Zp::None, false, DType::Float16},
      {2, 1000, 71, 8, 256, Zp::Float, true},     {3, 530, 130, 2, 64, Zp::None},
  };
  check_nbits_cases(cases);
}

// The plan's buffers hold A and Y, never the dequantized weights: B's 4-bit blob (128 KB here) is bound
// as it was uploaded, where a float32 copy would take 1 MB.
TEST(GpuBlockQuant, WeightsStayPacked) {
  if (testing::skip_gpu()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1";
  for (int64_t M : {1, 16}) {
    const NBits c{M, 1024, 256, 4, 32, Zp::Packed};
    std::vector<Operand> in;
    const std::string model = nbits_model(c, in);
    Session s = Session::from_bytes(model, testing::webgpu_options());
    s.run(testing::feeds_of(in));
    const PlanReport& plan = s.last_plan();
    EXPECT_EQ(plan.gpu_nodes, 1);
    EXPECT_EQ(plan.dispatches, 1) << "M " << M;
    EXPECT_LT(plan.gpu_buffer_bytes, uint64_t(c.N * c.K * 4 / 4)) << "M " << M << ": the plan allocated "
                                                                  << plan.gpu_buffer_bytes << " bytes";
  }
}

// A prompt, then decode steps: one model, A's rows varying (the tiled kernel, then the rows kernel).
TEST(GpuBlockQuant, PromptThenDecodeSteps) {
  if (testing::skip_gpu()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1";
  const NBits c{1, 96, 40, 4, 32, Zp::Packed, true};
  std::vector<Operand> in;
  std::string model = nbits_model(c, in);
  // A with a symbolic row count.
  onnx::ModelProto m;
  m.ParseFromString(model);
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("rows");
  model = m.SerializeAsString();
  SessionOptions cpu_options;
  cpu_options.ep = "cpu";
  Session cpu = Session::from_bytes(model, cpu_options);
  Session gpu = Session::from_bytes(model, testing::webgpu_options());
  for (int64_t rows : {7, 1, 1, 2, 7}) {
    std::unordered_map<std::string, Tensor> feeds{{"A", testing::random_float(DType::Float32, {rows, 96}, uint32_t(rows + 10))}};
    expect_close(gpu.run(feeds)[0], cpu.run(feeds)[0], "rows " + std::to_string(rows));
    EXPECT_EQ(gpu.last_plan().cpu_nodes, 0);
  }
}

// ---- The fused pair: two MatMulNBits over one A combined by an elementwise expression ----------------

// The expression over the products g and u (runtime/fusion.h's NBits pair).
enum class Combine {
  SwiGlu,      // Sigmoid(g) * g * u: a decoder MLP's SiLU gate (three nodes, an elementwise group)
  Product,     // g * u: a lone node
  WithScalar,  // Tanh(u) - g * c, c a constant scalar initializer
};

struct Pair {
  int64_t M, K, N, block;
  Zp zp_gate, zp_up;
  bool bias_up = false;
  Combine combine = Combine::SwiGlu;
  bool gate_is_output = false;  // g also a graph output: no pair
  std::string name() const {
    auto zp = [](Zp z) { return z == Zp::Packed ? "packed" : z == Zp::Float ? "float" : "none"; };
    return "M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N) + " block " +
           std::to_string(block) + " zp " + zp(zp_gate) + "/" + zp(zp_up) + (bias_up ? " up bias" : "") + " combine " +
           std::to_string(int(combine)) + (gate_is_output ? " g an output" : "");
  }
};

// The pair's model at 4 bits, A [M, K] (M symbolic when `rows_symbolic`); outputs y (and g).
std::string pair_model(const Pair& c, bool rows_symbolic = false) {
  const int64_t bits = 4, blocks = (c.K + c.block - 1) / c.block;
  testing::ModelBuilder b;
  b.input("A", DType::Float32, {rows_symbolic ? -1 : c.M, c.K}).output("y", DType::Float32);
  if (c.gate_is_output) b.output("g", DType::Float32);
  auto product = [&](const std::string& w, Zp zp, bool bias, uint32_t seed) {
    b.initializer(w + "_B", random_bytes({c.N, blocks, c.block * bits / 8}, seed));
    b.initializer(w + "_scales", random_scales(DType::Float32, {c.N, blocks}, seed + 1));
    std::vector<std::string> in{"A", w + "_B", w + "_scales"};
    if (zp == Zp::Packed) b.initializer(w + "_zp", random_bytes({c.N, (blocks * bits + 7) / 8}, seed + 2));
    if (zp == Zp::Float) {
      Tensor z = testing::random_float(DType::Float32, {c.N, blocks}, seed + 2);
      for (float& v : z.span<float>()) v = (v + 1.0f) * 8.0f;
      b.initializer(w + "_zp", z);
    }
    if (zp != Zp::None || bias) in.push_back(zp != Zp::None ? w + "_zp" : "");
    if (bias) {
      in.push_back("");
      b.initializer(w + "_bias", testing::random_float(DType::Float32, {c.N}, seed + 3));
      in.push_back(w + "_bias");
    }
    onnx::NodeProto& n = b.node("MatMulNBits", in, {w == "gate" ? "g" : "u"}, w);
    n.set_domain("com.microsoft");
    testing::ModelBuilder::attr(n, "K", c.K);
    testing::ModelBuilder::attr(n, "N", c.N);
    testing::ModelBuilder::attr(n, "bits", bits);
    testing::ModelBuilder::attr(n, "block_size", c.block);
  };
  product("gate", c.zp_gate, false, 10);
  product("up", c.zp_up, c.bias_up, 20);
  switch (c.combine) {
    case Combine::SwiGlu:
      b.node("Sigmoid", {"g"}, {"s"});
      b.node("Mul", {"g", "s"}, {"silu"});
      b.node("Mul", {"silu", "u"}, {"y"});
      break;
    case Combine::Product: b.node("Mul", {"g", "u"}, {"y"}); break;
    case Combine::WithScalar:
      b.initializer("c", Tensor::scalar<float>(0.75f));
      b.node("Tanh", {"u"}, {"t"});
      b.node("Mul", {"g", "c"}, {"gc"});
      b.node("Sub", {"t", "gc"}, {"y"});
      break;
  }
  onnx::ModelProto m;
  m.ParseFromString(b.bytes());
  auto* d = m.add_opset_import();
  d->set_domain("com.microsoft");
  d->set_version(1);
  return m.SerializeAsString();
}

// Runs `model` on the CPU and on the GPU (graph capture: recorded, then replayed) with A of `rows`
// rows, for each entry of `rows` in turn in one session; compares and returns the GPU plans' dispatches.
std::vector<int> run_pair(const std::string& what, const std::string& model, int64_t K, const std::vector<int64_t>& rows) {
  SessionOptions cpu_options;
  cpu_options.ep = "cpu";
  Session cpu = Session::from_bytes(model, cpu_options);
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;
  Session gpu = Session::from_bytes(model, o);
  std::vector<int> dispatches;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::unordered_map<std::string, Tensor> feeds{
        {"A", testing::random_float(DType::Float32, {rows[r], K}, uint32_t(100 + r))}};
    std::vector<Tensor> want = cpu.run(feeds), got = gpu.run(feeds);
    EXPECT_EQ(got.size(), want.size()) << what;
    for (size_t k = 0; k < std::min(got.size(), want.size()); ++k)
      expect_close(got[k], want[k], what + " rows " + std::to_string(rows[r]) + " output " + std::to_string(k));
    EXPECT_EQ(gpu.last_plan().cpu_nodes, 0) << what;
    if (r > 0 && rows[r] == rows[r - 1]) EXPECT_TRUE(gpu.last_plan().replayed) << what << " run " << r + 1;
    dispatches.push_back(gpu.last_plan().dispatches);
  }
  return dispatches;
}

// A decoder MLP's gate and up projections and the expression of their products run as one dispatch
// of the rows kernel when A has at most 4 rows (2 dispatches fewer than the products and the
// expression's kernel), for any expression of the two and constant scalars, every zero-point form on
// either product and a bias; a prompt (7 rows) and a pair whose gate is also a graph output run as
// unfused. K 300 is no multiple of the block (32) nor of a slice; N 70 leaves a partial workgroup.
// Each run is recorded, then replayed.
TEST(GpuBlockQuant, GateAndUpPairRunsAsOneDispatch) {
  if (testing::skip_gpu()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1";
  const std::vector<Pair> cases = {
      {1, 300, 70, 32, Zp::None, Zp::None},
      {3, 300, 70, 32, Zp::Packed, Zp::Packed},
      {7, 300, 70, 32, Zp::Packed, Zp::Packed},
      {7, 300, 70, 32, Zp::None, Zp::None},
      {1, 300, 70, 32, Zp::Float, Zp::Packed, true},
      {2, 300, 70, 16, Zp::None, Zp::None, false, Combine::Product},
      {4, 300, 70, 64, Zp::Packed, Zp::None, false, Combine::WithScalar},
      {1, 300, 70, 32, Zp::Packed, Zp::Packed, false, Combine::SwiGlu, true},
      {3, 300, 70, 32, Zp::None, Zp::None, false, Combine::SwiGlu, true},
  };
  for (const Pair& c : cases) {
    const bool fused = c.M <= 4 && !c.gate_is_output;
    // Unfused: the two products and the expression (an elementwise group, or its lone node).
    const int unfused = 3;
    const std::vector<int> dispatches = run_pair(c.name(), pair_model(c), c.K, {c.M, c.M, c.M});
    for (int d : dispatches) EXPECT_EQ(d, fused ? unfused - 2 : unfused) << c.name();
    // The plan reports the pair's nodes as fused (the SwiGLU: 2 products + 3 elementwise nodes).
    if (c.combine == Combine::SwiGlu) {
      SessionOptions o = testing::webgpu_options();
      Session s = Session::from_bytes(pair_model(c), o);
      s.run({{"A", testing::random_float(DType::Float32, {c.M, c.K}, 7)}});
      EXPECT_EQ(s.last_plan().fused_nodes, fused ? 5 : 3) << c.name();
      EXPECT_EQ(s.last_plan().gpu_nodes, 5) << c.name();
    }
  }
}

// One session, A's rows varying (a prompt, decode steps, a few rows, a prompt again): the pair runs
// fused on every run of at most 4 rows and as unfused on a prompt's, each plan recorded, refreshed or
// replayed as the sizes come.
TEST(GpuBlockQuant, GateAndUpPairFollowsThePromptAndTheSteps) {
  if (testing::skip_gpu()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1";
  const Pair c{1, 300, 70, 32, Zp::Packed, Zp::Packed};
  const std::vector<int64_t> rows = {7, 1, 1, 3, 7, 1};
  const std::vector<int> dispatches = run_pair("rows varying", pair_model(c, true), c.K, rows);
  for (size_t r = 0; r < rows.size(); ++r) EXPECT_EQ(dispatches[r], rows[r] <= 4 ? 1 : 3) << "rows " << rows[r];
}

}  // namespace
}  // namespace onnxgpu
