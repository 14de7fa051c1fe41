// MatMulNBits and GatherBlockQuantized on the GPU beyond the ONNX Runtime cases (tests/data/contrib):
// larger products against the CPU reference, covering both kernels' loops (several workgroups, K loops
// of several iterations and K-slices, tails of K, N and M), every bit width and zero-point form; and the
// weights staying packed in GPU memory.
//
// Run: XDG_RUNTIME_DIR=/tmp build/tests/unit_tests --gtest_filter='GpuBlockQuant*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "model_builder.h"
#include "one_node.h"
#include "onnxgpu/error.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"
#include "runtime/shared_device.h"
#include "webgpu/device.h"

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
    if (r > 0 && rows[r] == rows[r - 1]) {
      EXPECT_TRUE(gpu.last_plan().replayed) << what << " run " << r + 1;
    }
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

// ---- The normalization prologue: the row normalization before MatMulNBits in the product's kernel ------

enum class Norm { Simplified, Skip, Rms };
enum class Sum { None, Read, Output };  // the Skip form's residual sum: absent, read by a later node, a graph output

struct NormCase {
  Norm norm;
  int64_t M, K, N, bits, block;
  bool pair = false;                // the normalized value read by a gate / up pair (SwiGLU), else by one product
  bool norm_bias = false;           // the Skip form's bias
  Sum sum = Sum::None;
  bool also_read = false;           // a Neg reads the normalized value too: no prologue
  Zp zp = Zp::None;                 // the products' zero points
  std::string name() const {
    const char* n[] = {"Simplified", "Skip", "RMSNormalization"};
    const char* r[] = {"", " sum read", " sum an output"};
    return std::string(n[int(norm)]) + (norm_bias ? "+bias" : "") + r[int(sum)] + (pair ? " -> pair" : " -> product") +
           " M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N) + " bits " +
           std::to_string(bits) + " block " + std::to_string(block) + (zp == Zp::Packed ? " packed zp" : "") +
           (also_read ? " also read" : "");
  }
  // The storage buffers the fused kernel binds: X, each product's B, scales (and zero points), Y, the
  // skip, the scale, the bias, the residual sum and the status words.
  uint32_t bindings() const {
    const uint32_t products = pair ? 2 : 1;
    return 1 + products * (zp == Zp::None ? 2 : 3) + 1 + (norm == Norm::Skip ? 1 : 0) + 1 + (norm_bias ? 1 : 0) +
           (sum != Sum::None ? 1 : 0) + 1;
  }
  // Dispatches per run: the normalization, the products and the SwiGLU's elementwise group (a pair of at
  // most 4 rows: one dispatch), the Neg readers. The prologue where it is on, A has at most 4 rows,
  // nothing else reads the normalized value and the device binds all the kernel's buffers.
  int dispatches(bool prologue) const {
    const bool rows = M <= 4;
    const uint32_t most = runtime::shared_device()->limits().max_storage_buffers_per_shader_stage;
    int d = pair ? (rows ? 1 : 3) : 1;
    if (!(prologue && rows && !also_read && bindings() <= most)) d += 1;  // the normalization's own
    return d + (sum == Sum::Read ? 1 : 0) + (also_read ? 1 : 0);
  }
};

Tensor around_one(const Shape& s, uint32_t seed) {
  Tensor t = testing::random_float(DType::Float32, s, seed);
  for (float& v : t.span<float>()) v = 1.0f + 0.5f * v;
  return t;
}

// X [rows, K] (and skip S) -> the normalization -> MatMulNBits (or the gate / up pair and SwiGLU) -> y;
// the residual sum and the other readers as the case says. Rows symbolic when `rows_symbolic`.
std::string norm_model(const NormCase& c, bool rows_symbolic = false) {
  const int64_t blocks = (c.K + c.block - 1) / c.block, rows = rows_symbolic ? -1 : c.M;
  testing::ModelBuilder b(c.norm == Norm::Rms ? 23 : 17);
  b.input("X", DType::Float32, {rows, c.K});
  if (c.norm == Norm::Skip) b.input("S", DType::Float32, {rows, c.K});
  b.output("y", DType::Float32);
  b.initializer("gamma", around_one({c.K}, 40));
  auto epsilon = [](onnx::NodeProto& n, float v) {
    auto* a = n.add_attribute();
    a->set_name("epsilon");
    a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
    a->set_f(v);
  };
  if (c.norm == Norm::Skip) {
    std::vector<std::string> in{"X", "S", "gamma"};
    if (c.norm_bias) {
      b.initializer("nbias", testing::random_float(DType::Float32, {c.K}, 41));
      in.push_back("nbias");
    }
    std::vector<std::string> out{"h"};
    if (c.sum != Sum::None) out = {"h", "", "", "sum"};
    onnx::NodeProto& n = b.node("SkipSimplifiedLayerNormalization", in, out, "norm");
    n.set_domain("com.microsoft");
    epsilon(n, 1e-5f);
  } else {
    onnx::NodeProto& n = b.node(c.norm == Norm::Rms ? "RMSNormalization" : "SimplifiedLayerNormalization", {"X", "gamma"},
                                {"h"}, "norm");
    testing::ModelBuilder::attr(n, "axis", -1);
    epsilon(n, 1e-6f);
  }
  if (c.sum == Sum::Output) b.output("sum", DType::Float32);
  if (c.sum == Sum::Read) {
    b.node("Neg", {"sum"}, {"r"});
    b.output("r", DType::Float32);
  }
  if (c.also_read) {
    b.node("Neg", {"h"}, {"hn"});
    b.output("hn", DType::Float32);
  }
  auto product = [&](const std::string& w, const std::string& out, uint32_t seed) {
    b.initializer(w + "_B", random_bytes({c.N, blocks, c.block * c.bits / 8}, seed));
    // (Scales of 8-bit weights 16 times smaller: products of the size of the 4-bit ones, whose SwiGLU
    // stays within the tolerance where its terms cancel.)
    Tensor scales = random_scales(DType::Float32, {c.N, blocks}, seed + 1);
    for (float& v : scales.span<float>()) v /= float(1 << (c.bits - 4));
    b.initializer(w + "_scales", scales);
    std::vector<std::string> in{"h", w + "_B", w + "_scales"};
    if (c.zp == Zp::Packed) {
      b.initializer(w + "_zp", random_bytes({c.N, (blocks * c.bits + 7) / 8}, seed + 2));
      in.push_back(w + "_zp");
    }
    onnx::NodeProto& n = b.node("MatMulNBits", in, {out}, w);
    n.set_domain("com.microsoft");
    testing::ModelBuilder::attr(n, "K", c.K);
    testing::ModelBuilder::attr(n, "N", c.N);
    testing::ModelBuilder::attr(n, "bits", c.bits);
    testing::ModelBuilder::attr(n, "block_size", c.block);
  };
  if (c.pair) {
    product("gate", "g", 10);
    product("up", "u", 20);
    b.node("Sigmoid", {"g"}, {"s"});
    b.node("Mul", {"g", "s"}, {"silu"});
    b.node("Mul", {"silu", "u"}, {"y"});
  } else {
    product("proj", "y", 30);
  }
  onnx::ModelProto m;
  m.ParseFromString(b.bytes());
  auto* d = m.add_opset_import();
  d->set_domain("com.microsoft");
  d->set_version(1);
  return m.SerializeAsString();
}

// Runs `model` on the CPU and on the GPU (fail-loud, graph capture) with X (and S) of `rows` rows, for
// each entry of `rows` in turn in one session; compares every output and returns the GPU plans'
// dispatches. A run with the rows of the one before replays its recording.
std::vector<int> run_norm(const NormCase& c, const std::string& model, const std::vector<int64_t>& rows) {
  SessionOptions cpu_options;
  cpu_options.ep = "cpu";
  Session cpu = Session::from_bytes(model, cpu_options);
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;
  Session gpu = Session::from_bytes(model, o);
  std::vector<int> dispatches;
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::string what = c.name() + " rows " + std::to_string(rows[r]) + " run " + std::to_string(r + 1);
    std::unordered_map<std::string, Tensor> feeds{
        {"X", testing::random_float(DType::Float32, {rows[r], c.K}, uint32_t(200 + r))}};
    if (c.norm == Norm::Skip) feeds["S"] = testing::random_float(DType::Float32, {rows[r], c.K}, uint32_t(300 + r));
    std::vector<Tensor> want = cpu.run(feeds), got = gpu.run(feeds);
    EXPECT_EQ(got.size(), want.size()) << what;
    for (size_t k = 0; k < std::min(got.size(), want.size()); ++k)
      expect_close(got[k], want[k], what + " output " + std::to_string(k));
    EXPECT_EQ(gpu.last_plan().cpu_nodes, 0) << what;
    if (r > 0 && rows[r] == rows[r - 1]) {
      EXPECT_TRUE(gpu.last_plan().replayed) << what;
    }
    dispatches.push_back(gpu.last_plan().dispatches);
  }
  return dispatches;
}

// The normalization before a MatMulNBits (or a gate / up pair) runs in the product's rows kernel when A
// has at most 4 rows: one dispatch fewer, the same values as the CPU reference's normalization then
// product, recorded then replayed. Each form (SimplifiedLayerNormalization, RMSNormalization,
// SkipSimplifiedLayerNormalization with and without bias, its residual sum read by a later node or a
// graph output), bits 4 and 8, zero points; K 300 and 700 are no multiple of the block nor of the
// workgroup (256), K 4100 takes several K-slices; M 1 and 3 (M 8: the members run unfused, as before).
TEST(GpuBlockQuant, NormalizationPrologueMatchesTheCpu) {
  if (testing::skip_gpu()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1";
  const std::vector<NormCase> cases = {
      {Norm::Simplified, 1, 300, 70, 4, 32},
      {Norm::Simplified, 3, 300, 70, 8, 16},
      {Norm::Rms, 1, 700, 45, 4, 64},
      {Norm::Skip, 1, 300, 70, 4, 32, false, false, Sum::Read},
      {Norm::Skip, 3, 300, 70, 8, 32, false, true, Sum::Output},
      {Norm::Skip, 1, 4100, 33, 8, 128, false, true, Sum::Read, false, Zp::Packed},
      {Norm::Skip, 3, 700, 70, 4, 32, true, false, Sum::Read},
      {Norm::Skip, 1, 300, 70, 8, 32, true, true, Sum::Output},
      {Norm::Skip, 3, 300, 70, 4, 16, true, true, Sum::None, false, Zp::Packed},
      {Norm::Simplified, 1, 300, 70, 4, 32, true},
      {Norm::Skip, 8, 300, 70, 4, 32, true, true, Sum::Read},
      {Norm::Simplified, 8, 300, 70, 8, 32},
  };
  for (const NormCase& c : cases) {
    const std::vector<int> dispatches = run_norm(c, norm_model(c), {c.M, c.M, c.M});
    for (int d : dispatches) EXPECT_EQ(d, c.dispatches(true)) << c.name();
  }
}

// No prologue where the normalized value has another reader (a Neg, here), nor with
// $ONNXGPU_NORM_PROLOGUE=0: the normalization runs as its own dispatch, the values the same.
TEST(GpuBlockQuant, NormalizationPrologueOnlyForProductsAlone) {
  if (testing::skip_gpu()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1";
  for (const NormCase& c : {NormCase{Norm::Skip, 1, 300, 70, 4, 32, false, false, Sum::Read, true},
                            NormCase{Norm::Simplified, 2, 300, 70, 4, 32, true, false, Sum::None, true}}) {
    for (int d : run_norm(c, norm_model(c), {c.M, c.M})) EXPECT_EQ(d, c.dispatches(true)) << c.name();
  }
  const NormCase c{Norm::Skip, 1, 300, 70, 4, 32, true, true, Sum::Read};
  setenv("ONNXGPU_NORM_PROLOGUE", "0", 1);
  const std::vector<int> off = run_norm(c, norm_model(c), {1, 1});
  unsetenv("ONNXGPU_NORM_PROLOGUE");
  for (int d : off) EXPECT_EQ(d, c.dispatches(false)) << c.name() << " with ONNXGPU_NORM_PROLOGUE=0";
}

// One session, the rows varying (a prompt, decode steps, a few rows, a prompt again): the prologue on
// every run of at most 4 rows, the normalization and the pair as unfused on a prompt's, each plan
// recorded, refreshed or replayed as the sizes come.
TEST(GpuBlockQuant, NormalizationPrologueFollowsThePromptAndTheSteps) {
  if (testing::skip_gpu()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1";
  NormCase c{Norm::Skip, 1, 300, 70, 4, 32, true, true, Sum::Read};
  const std::vector<int64_t> rows = {7, 1, 1, 3, 7, 1};
  const std::vector<int> dispatches = run_norm(c, norm_model(c, true), rows);
  for (size_t r = 0; r < rows.size(); ++r) {
    c.M = rows[r];
    EXPECT_EQ(dispatches[r], c.dispatches(true)) << "rows " << rows[r];
  }
}

}  // namespace
}  // namespace onnxgpu
