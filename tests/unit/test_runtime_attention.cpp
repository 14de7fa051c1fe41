// The fused attention (runtime/fusion.h, webgpu/kernels/attention.cpp): MatMul -> [scale, mask] ->
// Softmax -> MatMul as one kernel, against the CPU reference, recorded and replayed; the shapes that
// must not fuse run node by node with the same results.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model_builder.h"
#include "one_node.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"

using namespace onnxgpu;
using onnxgpu::testing::ModelBuilder;

namespace {

void ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t x : v) a->add_ints(x);
}

Tensor floats(const Shape& shape, uint32_t seed, float scale = 1.0f) {
  Tensor t = onnxgpu::testing::random_float(DType::Float32, shape, seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= scale;
  return t;
}

struct Plan {
  int dispatches, fused_nodes;
};

// Runs the model on the GPU (3 runs: recorded, then replayed) against the CPU reference; returns the
// plan's dispatches and fused nodes. No node may fall back to the CPU.
Plan check(const std::string& what, const std::string& model, const std::unordered_map<std::string, Tensor>& feeds,
           double rtol = 1e-4, double atol = 1e-5) {
  SessionOptions cpu;
  cpu.ep = "cpu";
  auto want = Session::from_bytes(model, cpu).run(feeds);
  Session g = Session::from_bytes(model, onnxgpu::testing::webgpu_options());
  for (int run = 0; run < 3; ++run) {
    auto got = g.run(feeds);
    EXPECT_EQ(got.size(), want.size()) << what;
    for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
      auto c = runtime::compare_tensors(got[k], want[k], {rtol, atol});
      EXPECT_TRUE(c.passed) << what << " (run " << run + 1 << ", output " << k << "): " << c.message;
    }
  }
  EXPECT_EQ(g.last_plan().cpu_nodes, 0) << what;
  EXPECT_TRUE(g.last_plan().replayed) << what;
  return {g.last_plan().dispatches, g.last_plan().fused_nodes};
}

#define SKIP_WITHOUT_GPU() \
  if (onnxgpu::testing::skip_gpu()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1"

}  // namespace

// BERT's attention: q, k, v as [B, L, H, D] put into heads by Transposes, scores scaled (Div) and
// masked (Add of a [B, 1, 1, Lk] mask), Softmax, product with V, heads put back by a Transpose: one
// dispatch. Sizes that are no multiple of the kernel's tiles (13 queries, 100 keys, D 80, Dv 72), and a
// second shape signature through the same session.
TEST(RuntimeAttention, BertStyleAttentionRunsAsOneKernel) {
  SKIP_WITHOUT_GPU();
  const int64_t B = 2, H = 3, D = 80, Dv = 72;
  ModelBuilder b;
  b.input("q", DType::Float32, {B, -1, H, D}).input("k", DType::Float32, {B, -1, H, D});
  b.input("v", DType::Float32, {B, -1, H, Dv}).input("mask", DType::Float32, {B, 1, 1, -1});
  b.output("y", DType::Float32);
  b.initializer("scale", Tensor::from_vector<float>({}, {std::sqrt(float(D))}));
  ints(b.node("Transpose", {"q"}, {"qh"}), "perm", {0, 2, 1, 3});
  ints(b.node("Transpose", {"k"}, {"kt"}), "perm", {0, 2, 3, 1});
  ints(b.node("Transpose", {"v"}, {"vh"}), "perm", {0, 2, 1, 3});
  b.node("MatMul", {"qh", "kt"}, {"s"});
  b.node("Div", {"s", "scale"}, {"sd"});
  b.node("Add", {"sd", "mask"}, {"sm"});
  ModelBuilder::attr(b.node("Softmax", {"sm"}, {"p"}), "axis", -1);
  b.node("MatMul", {"p", "vh"}, {"o"});
  ints(b.node("Transpose", {"o"}, {"y"}), "perm", {0, 2, 1, 3});
  for (auto [lq, lk] : {std::pair<int64_t, int64_t>{13, 100}, {9, 7}}) {  // over 4 rows: no split
    Tensor mask = Tensor::from_vector<float>({B, 1, 1, lk}, std::vector<float>(size_t(B * lk), 0.0f));
    for (int64_t j = 0; j < lk; j += 3) mask.data<float>()[j] = -10000.0f;  // batch 0: every third key masked
    Plan p = check("bert " + std::to_string(lq) + "x" + std::to_string(lk), b.bytes(),
                   {{"q", floats({B, lq, H, D}, 1, 2.0f)}, {"k", floats({B, lk, H, D}, 2, 2.0f)},
                    {"v", floats({B, lk, H, Dv}, 3)}, {"mask", mask}});
    EXPECT_EQ(p.dispatches, 1);
    EXPECT_EQ(p.fused_nodes, 9);
  }
  // A decode step's shape: one query row over many keys splits the keys over workgroups (the
  // attention, then the combine of the chunks): 2 dispatches, the same results; so does one over a
  // single chunk's keys.
  const int64_t lk = 300;
  Tensor mask = Tensor::from_vector<float>({B, 1, 1, lk}, std::vector<float>(size_t(B * lk), 0.0f));
  for (int64_t j = 0; j < lk; j += 7) mask.data<float>()[j] = -10000.0f;
  Plan p = check("bert 1x300", b.bytes(),
                 {{"q", floats({B, 1, H, D}, 4, 2.0f)}, {"k", floats({B, lk, H, D}, 5, 2.0f)},
                  {"v", floats({B, lk, H, Dv}, 6)}, {"mask", mask}});
  EXPECT_EQ(p.dispatches, 2);
  EXPECT_EQ(p.fused_nodes, 9);
  Tensor short_mask = Tensor::from_vector<float>({B, 1, 1, 20}, std::vector<float>(size_t(B * 20), 0.0f));
  p = check("bert 1x20", b.bytes(),
            {{"q", floats({B, 1, H, D}, 7, 2.0f)}, {"k", floats({B, 20, H, D}, 8, 2.0f)},
             {"v", floats({B, 20, H, Dv}, 9)}, {"mask", short_mask}});
  EXPECT_EQ(p.dispatches, 2);
}

// GPT-2's attention: scores scaled by a Mul, the future masked by Where(causal condition, -inf or the
// lowest float, scores), K without a batch (broadcast to every head). A row whose every key is masked
// with -inf is NaN, as on the CPU. Scores that grow along the keys make the running maximum move every
// block (the online softmax's rescaling).
TEST(RuntimeAttention, CausalAttentionWithWhereRunsAsOneKernel) {
  SKIP_WITHOUT_GPU();
  const int64_t B = 1, H = 2, L = 70, D = 16, Dv = 20;
  for (float neg : {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::lowest()}) {
    for (bool masked_row : {false, true}) {
      ModelBuilder b;
      b.input("q", DType::Float32, {B, H, L, D}).input("kt", DType::Float32, {D, L}).input("v", DType::Float32, {B, H, L, Dv});
      b.output("y", DType::Float32);
      b.initializer("scale", Tensor::from_vector<float>({1}, {0.25f}));
      b.initializer("neg", Tensor::from_vector<float>({}, {neg}));
      std::vector<uint8_t> future(size_t(L * L));
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < L; ++j) future[size_t(i * L + j)] = j > i || (masked_row && i == 3);
      Tensor cond(DType::Bool, {L, L});
      std::copy(future.begin(), future.end(), static_cast<uint8_t*>(cond.raw()));
      b.initializer("future", cond);
      b.node("MatMul", {"q", "kt"}, {"s"});
      b.node("Mul", {"s", "scale"}, {"ss"});
      b.node("Where", {"future", "neg", "ss"}, {"sw"});
      b.node("Softmax", {"sw"}, {"p"});
      b.node("MatMul", {"p", "v"}, {"y"});
      Tensor kt = floats({D, L}, 5);
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < L; ++j) kt.data<float>()[d * L + j] += 0.2f * float(j);  // growing scores
      Plan p = check(std::string("causal ") + (std::isinf(neg) ? "-inf" : "lowest") + (masked_row ? " masked row" : ""),
                     b.bytes(), {{"q", floats({B, H, L, D}, 4, 0.5f)}, {"kt", kt}, {"v", floats({B, H, L, Dv}, 6)}});
      EXPECT_EQ(p.dispatches, 1);
      EXPECT_EQ(p.fused_nodes, 5);
    }
  }
}

// MatMul -> Softmax -> MatMul with nothing between (opset 11's Softmax, whose default axis 1 is the
// last axis of a 2-D input): one kernel.
TEST(RuntimeAttention, ScoresStraightIntoTheSoftmaxFuse) {
  SKIP_WITHOUT_GPU();
  ModelBuilder b(11);
  b.input("q", DType::Float32, {9, 24}).input("kt", DType::Float32, {24, 33}).input("v", DType::Float32, {33, 130});
  b.output("y", DType::Float32);
  b.node("MatMul", {"q", "kt"}, {"s"});
  b.node("Softmax", {"s"}, {"p"});
  b.node("MatMul", {"p", "v"}, {"y"});
  Plan p = check("2-D", b.bytes(), {{"q", floats({9, 24}, 7)}, {"kt", floats({24, 33}, 8)}, {"v", floats({33, 130}, 9)}});
  EXPECT_EQ(p.dispatches, 1);
  EXPECT_EQ(p.fused_nodes, 3);
}

// What must not become one kernel: a Softmax over another axis (a graph-level choice), the
// probabilities also a graph output, a mask that widens the scores (the kernel declines; the
// score product, the expression and the Softmax then run as their own groups). Same results.
TEST(RuntimeAttention, OtherShapesRunNodeByNode) {
  SKIP_WITHOUT_GPU();
  const int64_t H = 2, L = 6, D = 4;
  struct Case {
    const char* what;
    int64_t axis;
    bool expose;
    Shape mask;
    int min_dispatches;
  };
  for (const Case& c : {Case{"softmax over the queries", 1, false, {1, 1, L}, 3},
                        Case{"probabilities exposed", -1, true, {1, 1, L}, 3},
                        Case{"wider mask", -1, false, {2, 1, 1, L}, 4}}) {
    ModelBuilder b;
    b.input("q", DType::Float32, {H, L, D}).input("kt", DType::Float32, {H, D, L}).input("v", DType::Float32, {H, L, D});
    b.input("mask", DType::Float32, std::vector<int64_t>(c.mask.begin(), c.mask.end()));
    b.output("y", DType::Float32);
    if (c.expose) b.output("p", DType::Float32);
    b.initializer("scale", Tensor::from_vector<float>({}, {0.5f}));
    b.node("MatMul", {"q", "kt"}, {"s"});
    b.node("Mul", {"s", "scale"}, {"ss"});
    b.node("Add", {"ss", "mask"}, {"sm"});
    ModelBuilder::attr(b.node("Softmax", {"sm"}, {"p"}), "axis", c.axis);
    b.node("MatMul", {"p", "v"}, {"y"});
    Plan p = check(c.what, b.bytes(),
                   {{"q", floats({H, L, D}, 10)}, {"kt", floats({H, D, L}, 11)}, {"v", floats({H, L, D}, 12)},
                    {"mask", floats(c.mask, 13)}});
    EXPECT_GE(p.dispatches, c.min_dispatches) << c.what;
  }
}

// float16 attention: the kernel is float32 only and declines; the score product, the scale and the
// Softmax run as their own kernels, on the GPU, with the CPU's results (to float16 rounding).
TEST(RuntimeAttention, Float16AttentionRunsAsItsParts) {
  SKIP_WITHOUT_GPU();
  const int64_t H = 2, L = 9, D = 8;
  ModelBuilder b;
  b.input("q", DType::Float16, {H, L, D}).input("kt", DType::Float16, {H, D, L}).input("v", DType::Float16, {H, L, D});
  b.output("y", DType::Float16);
  b.node("MatMul", {"q", "kt"}, {"s"});
  b.node("Softmax", {"s"}, {"p"});
  b.node("MatMul", {"p", "v"}, {"y"});
  auto half = [](const Shape& shape, uint32_t seed) { return onnxgpu::testing::random_float(DType::Float16, shape, seed); };
  Plan p = check("float16", b.bytes(), {{"q", half({H, L, D}, 14)}, {"kt", half({H, D, L}, 15)}, {"v", half({H, L, D}, 16)}},
                 5e-3, 1e-3);
  EXPECT_EQ(p.dispatches, 3);
}
