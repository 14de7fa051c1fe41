// The fused attention (runtime/fusion.h, webgpu/kernels/attention.cpp): MatMul -> [scale, mask] ->
// Softmax -> MatMul as one kernel, against the CPU reference, recorded and replayed; the shapes that
// must not fuse run node by node with the same results.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <tuple>

#include "model_builder.h"
#include "kernel_choice.h"
#include "one_node.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

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
// BERT's attention in plain ops: q, k, v [B, len, H, D] (v's D = Dv) put into heads by Transposes,
// scores scaled by 1 / sqrt(D) plus an additive key mask [B, 1, 1, keys], Softmax, P V, the heads put
// back. `q_len`: the queries' length (-1: symbolic).
ModelBuilder bert_attention(int64_t B, int64_t H, int64_t D, int64_t Dv, int64_t q_len) {
  ModelBuilder b;
  b.input("q", DType::Float32, {B, q_len, H, D}).input("k", DType::Float32, {B, -1, H, D});
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
  return b;
}

namespace {
// BERT's attention over more rows than a split takes (13 x 100, 9 x 7): one dispatch.
void check_bert_rows() {
  const int64_t B = 2, H = 3, D = 80, Dv = 72;
  ModelBuilder b = bert_attention(B, H, D, Dv, -1);
  for (auto [lq, lk] : {std::pair<int64_t, int64_t>{13, 100}, {9, 7}}) {  // over 4 rows: no split
    Tensor mask = Tensor::from_vector<float>({B, 1, 1, lk}, std::vector<float>(size_t(B * lk), 0.0f));
    for (int64_t j = 0; j < lk; j += 3) mask.data<float>()[j] = -10000.0f;  // batch 0: every third key masked
    Plan p = check("bert " + std::to_string(lq) + "x" + std::to_string(lk), b.bytes(),
                   {{"q", floats({B, lq, H, D}, 1, 2.0f)}, {"k", floats({B, lk, H, D}, 2, 2.0f)},
                    {"v", floats({B, lk, H, Dv}, 3)}, {"mask", mask}});
    EXPECT_EQ(p.dispatches, 1);
    EXPECT_EQ(p.fused_nodes, 9);
  }
}
}  // namespace

TEST(RuntimeAttention, BertStyleAttentionRunsAsOneKernel) {
  SKIP_WITHOUT_GPU();
  check_bert_rows();
  const int64_t B = 2, H = 3, D = 80, Dv = 72;
  ModelBuilder b = bert_attention(B, H, D, Dv, -1);
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

// The profile counts the fused attention's work (its two products, every query row against every key:
// 2 x rows x keys x (D + Dv) per head), for its GFLOP/s; split over the keys (a decode step's shape: two
// dispatches) the same.
TEST(RuntimeAttention, TheProfileCountsItsFlops) {
  SKIP_WITHOUT_GPU();
  const int64_t B = 2, H = 3, D = 80, Dv = 72;
  ModelBuilder b = bert_attention(B, H, D, Dv, -1);
  std::string why;
  std::optional<Session> made = onnxgpu::testing::profiling_session(b.bytes(), onnxgpu::testing::webgpu_options(), why);
  if (!made) GTEST_SKIP() << "profiling cannot run on this adapter: " << why;
  for (auto [lq, lk] : {std::pair<int64_t, int64_t>{13, 100}, {1, 300}}) {
    SCOPED_TRACE(std::to_string(lq) + " x " + std::to_string(lk));
    Tensor mask = Tensor::from_vector<float>({B, 1, 1, lk}, std::vector<float>(size_t(B * lk), 0.0f));
    std::unordered_map<std::string, Tensor> feeds{{"q", floats({B, lq, H, D}, 1)}, {"k", floats({B, lk, H, D}, 2)},
                                                  {"v", floats({B, lk, H, Dv}, 3)}, {"mask", mask}};
    made->run(feeds);
    made->reset_profile();
    made->run(feeds);
    Profile p = made->profile();
    ASSERT_EQ(p.nodes.size(), 1u);
    EXPECT_EQ(p.nodes[0].flops, uint64_t(2 * B * H * lq * lk * (D + Dv)));
  }
}

// GPT-2's attention: scores scaled by a Mul, the future masked by Where(causal condition, -inf or the
// lowest float, scores), K without a batch (broadcast to every head). A row whose every key is masked
// with -inf is NaN, as on the CPU. Scores that grow along the keys make the running maximum move every
// block (the online softmax's rescaling).
namespace {
void check_causal_rows() {
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
}  // namespace

TEST(RuntimeAttention, CausalAttentionWithWhereRunsAsOneKernel) {
  SKIP_WITHOUT_GPU();
  check_causal_rows();
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

// torch's exported scaled_dot_product_attention guards its probabilities, Where(IsNaN(p), 0, p), before
// the product with V (wav2vec2, Whisper, BART as torch.export writes them): still one kernel, whose rows
// with a NaN softmax give zeros as the guard makes them. The mask holds a row of -inf (every key
// masked: 0 / 0), a NaN score and a +inf one (NaN rows in the reference too), and ordinary rows; over
// more rows than a split takes and over one (a decode step's split, its combine). Without the guard
// those rows stay NaN, as the CPU's (the split's combine once left a chunk of NaN sum out).
TEST(RuntimeAttention, NanGuardedAttentionRunsAsOneKernel) {
  SKIP_WITHOUT_GPU();
  const int64_t H = 2, D = 16;
  auto model = [&](bool guarded) {
    ModelBuilder b;
    b.input("q", DType::Float32, {H, -1, D}).input("kt", DType::Float32, {H, D, -1}).input("v", DType::Float32, {H, -1, D});
    b.input("mask", DType::Float32, {H, -1, -1});
    b.output("y", DType::Float32);
    b.initializer("zero", Tensor::from_vector<float>({}, {0.0f}));
    b.node("MatMul", {"q", "kt"}, {"s"});
    b.node("Add", {"s", "mask"}, {"sm"});
    ModelBuilder::attr(b.node("Softmax", {"sm"}, {"p"}), "axis", -1);
    if (guarded) {
      b.node("IsNaN", {"p"}, {"bad"});
      b.node("Where", {"bad", "zero", "p"}, {"pg"});
    }
    b.node("MatMul", {guarded ? "pg" : "p", "v"}, {"y"});
    return b.bytes();
  };
  const float inf = std::numeric_limits<float>::infinity();
  for (auto [lq, lk] : {std::pair<int64_t, int64_t>{9, 40}, {1, 300}})
    for (bool guarded : {true, false}) {
      SCOPED_TRACE(std::to_string(lq) + " x " + std::to_string(lk) + (guarded ? ", guarded" : ", not guarded"));
      Tensor mask = floats({H, lq, lk}, 4);
      for (int64_t j = 0; j < lk; ++j) mask.data<float>()[j] = -inf;  // head 0, row 0: every key masked
      mask.data<float>()[lq * lk + 3] = std::nanf("");               // head 1, row 0: a NaN score
      if (lq > 2) mask.data<float>()[2 * lk + 5] = inf;              // head 0, row 2: a +inf score
      Plan p = check("nan rows", model(guarded),
                     {{"q", floats({H, lq, D}, 1)}, {"kt", floats({H, D, lk}, 2)}, {"v", floats({H, lk, D}, 3)}, {"mask", mask}});
      EXPECT_EQ(p.dispatches, lq == 1 ? 2 : 1);
      EXPECT_EQ(p.fused_nodes, guarded ? 6 : 4);
    }
  // A mask that widens the scores (a batch axis of its own): the kernel declines, and the parts, the guard
  // included, run as their own kernels with the CPU's results.
  ModelBuilder b;
  b.input("q", DType::Float32, {H, 5, D}).input("kt", DType::Float32, {H, D, 7}).input("v", DType::Float32, {H, 7, D});
  b.input("mask", DType::Float32, {2, H, 5, 7});
  b.output("y", DType::Float32);
  b.initializer("zero", Tensor::from_vector<float>({}, {0.0f}));
  b.node("MatMul", {"q", "kt"}, {"s"});
  b.node("Add", {"s", "mask"}, {"sm"});
  ModelBuilder::attr(b.node("Softmax", {"sm"}, {"p"}), "axis", -1);
  b.node("IsNaN", {"p"}, {"bad"});
  b.node("Where", {"bad", "zero", "p"}, {"pg"});
  b.node("MatMul", {"pg", "v"}, {"y"});
  Tensor mask = floats({2, H, 5, 7}, 5);
  for (int64_t j = 0; j < 7; ++j) mask.data<float>()[j] = -inf;
  Plan p = check("wider mask", b.bytes(), {{"q", floats({H, 5, D}, 1)}, {"kt", floats({H, D, 7}, 2)}, {"v", floats({H, 7, D}, 3)},
                                           {"mask", mask}});
  EXPECT_GE(p.dispatches, 4);
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

// ---- Decode steps: the split's kernel (attention_core.cpp's decode kernel, or the general tile with
// ONNXGPU_ATTENTION_DECODE=0) over key counts that grow in one session (each recorded or refreshed,
// then replayed): a single key, counts below, at and past a pass (32 keys) or a chunk, chunks of
// several passes (5000 keys: 53 chunks of 96), D = 80 and Dv = 48, score inputs, key ranges, rows
// without keys, NaN and inf.

namespace {

using Feeds = std::unordered_map<std::string, Tensor>;

struct Step {
  std::string what;
  Feeds feeds;
};

// One GPU session runs every step twice against the CPU reference; no node may fall back to the CPU.
void check_steps(const std::string& what, const std::string& model, const std::vector<Step>& steps, double rtol = 1e-4,
                 double atol = 1e-5) {
  SessionOptions cpu;
  cpu.ep = "cpu";
  Session c = Session::from_bytes(model, cpu);
  Session g = Session::from_bytes(model, onnxgpu::testing::webgpu_options());
  for (const Step& s : steps) {
    auto want = c.run(s.feeds);
    for (int run = 0; run < 2; ++run) {
      auto got = g.run(s.feeds);
      ASSERT_EQ(got.size(), want.size()) << what << " " << s.what;
      for (size_t k = 0; k < got.size(); ++k) {
        auto r = runtime::compare_tensors(got[k], want[k], {rtol, atol});
        EXPECT_TRUE(r.passed) << what << " " << s.what << " (run " << run + 1 << ", output " << k << "): " << r.message;
      }
      EXPECT_EQ(g.last_plan().cpu_nodes, 0) << what << " " << s.what;
    }
    EXPECT_TRUE(g.last_plan().replayed) << what << " " << s.what;
  }
}

// The key counts of the decode tests.
const std::vector<int64_t> kDecodeKeys{1, 20, 32, 33, 100, 1000, 5000};

Tensor bools(const Shape& shape, uint32_t seed, int false_in) {
  Tensor t(DType::Bool, shape);
  std::mt19937 rng(seed);
  auto* b = static_cast<uint8_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) b[i] = rng() % uint32_t(false_in) != 0;
  return t;
}

}  // namespace

// The fused attention of plain ops (BERT's shape above, one query row): K read along D (a Transpose
// folded), a mask as a score input (every 7th key at -10000), batch 1's last head over V rows of +inf at
// key 8, batch 0 fully masked (-inf: NaN rows, as on the CPU) at 100 keys, a NaN in V at 1000 keys (a NaN
// in K, a NaN score, is not tested: SwiftShader loses it in both the decode kernel and the general tile).
TEST(RuntimeAttention, DecodeStepsOverGrowingKeys) {
  SKIP_WITHOUT_GPU();
  const int64_t B = 2, H = 3, D = 80, Dv = 48;
  ModelBuilder b = bert_attention(B, H, D, Dv, 1);
  std::vector<Step> steps;
  for (int64_t lk : kDecodeKeys) {
    Tensor mask = Tensor::from_vector<float>({B, 1, 1, lk}, std::vector<float>(size_t(B * lk), 0.0f));
    for (int64_t j = 0; j < lk; j += 7) mask.data<float>()[j] = -10000.0f;
    if (lk == 100)
      for (int64_t j = 0; j < lk; ++j) mask.data<float>()[j] = -std::numeric_limits<float>::infinity();
    Tensor k = floats({B, lk, H, D}, uint32_t(lk), 2.0f), v = floats({B, lk, H, Dv}, uint32_t(lk) + 1);
    if (lk == 1000) v.data<float>()[((0 * lk + 500) * H + 1) * Dv + 0] = std::nanf("");
    if (lk > 8)
      for (int64_t c = 0; c < Dv; ++c) v.data<float>()[((1 * lk + 8) * H + 2) * Dv + c] = std::numeric_limits<float>::infinity();
    steps.push_back({std::to_string(lk) + " keys",
                     {{"q", floats({B, 1, H, D}, uint32_t(lk) + 2, 2.0f)}, {"k", k}, {"v", v}, {"mask", mask}}});
  }
  check_steps("fused", b.bytes(), steps);
}

// GPT-2's layout: K as [D, keys] (keys contiguous), V transposed in place (keys contiguous too), a
// scale and a causal Where over a bool condition broadcast from [keys] (a bool score input).
TEST(RuntimeAttention, DecodeStepsKeysContiguous) {
  SKIP_WITHOUT_GPU();
  const int64_t H = 2, D = 80, Dv = 48;
  ModelBuilder b;
  b.input("q", DType::Float32, {1, H, 1, D}).input("kt", DType::Float32, {1, H, D, -1});
  b.input("vt", DType::Float32, {1, H, Dv, -1}).input("future", DType::Bool, {-1});
  b.output("y", DType::Float32);
  b.initializer("scale", Tensor::from_vector<float>({1}, {0.125f}));
  b.initializer("neg", Tensor::from_vector<float>({}, {std::numeric_limits<float>::lowest()}));
  ints(b.node("Transpose", {"vt"}, {"v"}), "perm", {0, 1, 3, 2});
  b.node("MatMul", {"q", "kt"}, {"s"});
  b.node("Mul", {"s", "scale"}, {"ss"});
  b.node("Where", {"future", "neg", "ss"}, {"sw"});
  b.node("Softmax", {"sw"}, {"p"});
  b.node("MatMul", {"p", "v"}, {"y"});
  std::vector<Step> steps;
  for (int64_t lk : kDecodeKeys) {
    Tensor kt = floats({1, H, D, lk}, uint32_t(lk) + 3);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < lk; ++j) kt.data<float>()[(h * D + d) * lk + j] += 0.01f * float(j % 300);  // moving maxima
    steps.push_back({std::to_string(lk) + " keys",
                     {{"q", floats({1, H, 1, D}, uint32_t(lk) + 4)}, {"kt", kt}, {"vt", floats({1, H, Dv, lk}, uint32_t(lk) + 5)},
                      {"future", bools({lk}, uint32_t(lk), 5)}}});
  }
  check_steps("keys contiguous", b.bytes(), steps);
}

// GroupQueryAttention decode steps: the 4 query heads of a KV head as the rows (Lq 4), head size 80,
// a past growing in one session, batch 1's sequence shorter (seqlens_k; a single key at first). With a
// local window (a key range that starts inside a chunk), softcap and smooth softmax (a sink); or with an
// attention bias (a score input per row) and head sinks.
TEST(RuntimeAttention, DecodeStepsGroupQueryAttention) {
  SKIP_WITHOUT_GPU();
  const int64_t B = 2, N = 8, Nkv = 2, H = 80;
  for (bool bias : {false, true}) {
    ModelBuilder b;
    b.input("query", DType::Float32, {B, 1, N * H}).input("key", DType::Float32, {B, 1, Nkv * H});
    b.input("value", DType::Float32, {B, 1, Nkv * H}).input("past_key", DType::Float32, {B, Nkv, -1, H});
    b.input("past_value", DType::Float32, {B, Nkv, -1, H}).input("seqlens_k", DType::Int32, {B});
    b.input("total_sequence_length", DType::Int32, {});
    std::vector<std::string> in{"query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length"};
    if (bias) {
      b.input("attention_bias", DType::Float32, {B, N, 1, -1}).input("head_sink", DType::Float32, {N});
      in.insert(in.end(), {"", "", "", "attention_bias", "head_sink"});
    }
    b.output("output", DType::Float32);
    auto& n = b.node("GroupQueryAttention", in, {"output"});
    n.set_domain("com.microsoft");
    ModelBuilder::attr(n, "num_heads", N);
    ModelBuilder::attr(n, "kv_num_heads", Nkv);
    if (!bias) {
      ModelBuilder::attr(n, "local_window_size", 40);
      ModelBuilder::attr(n, "smooth_softmax", 1);
      auto* a = n.add_attribute();
      a->set_name("softcap");
      a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
      a->set_f(2.0f);
    }
    std::vector<Step> steps;
    for (int64_t past : {1, 31, 64, 200, 1200, 2100}) {
      const int64_t total = past + 1;
      Feeds f{{"query", floats({B, 1, N * H}, uint32_t(past))},
              {"key", floats({B, 1, Nkv * H}, uint32_t(past) + 1)},
              {"value", floats({B, 1, Nkv * H}, uint32_t(past) + 2)},
              {"past_key", floats({B, Nkv, past, H}, uint32_t(past) + 3)},
              {"past_value", floats({B, Nkv, past, H}, uint32_t(past) + 4)},
              {"seqlens_k", Tensor::from_vector<int32_t>({B}, {int32_t(past), int32_t(past / 3)})},
              {"total_sequence_length", Tensor::from_vector<int32_t>({}, {int32_t(total)})}};
      if (bias) {
        f["attention_bias"] = floats({B, N, 1, total}, uint32_t(past) + 5, 3.0f);
        f["head_sink"] = floats({N}, uint32_t(past) + 6);
      }
      steps.push_back({"past " + std::to_string(past), f});
    }
    check_steps(bias ? "gqa bias, sinks" : "gqa window, softcap, smooth", onnxgpu::testing::in_domain_import(b.bytes(), "com.microsoft"), steps,
                1e-4, 1e-4);
  }
}

// ONNX Attention (opset 24) decode steps: 4 query heads over 2 KV heads (Lq 4), D 80, Dv 48, a bool
// mask per head and key (a score input; some rows lose every key: 0), nonpad_kv_seqlen read at run time
// (batch 0: no key at all, its rows 0; batch 1: all but the last 3 keys).
TEST(RuntimeAttention, DecodeStepsOnnxAttention) {
  SKIP_WITHOUT_GPU();
  const int64_t B = 2, Nq = 4, Nkv = 2, D = 80, Dv = 48;
  ModelBuilder b(24);
  b.input("Q", DType::Float32, {B, Nq, 1, D}).input("K", DType::Float32, {B, Nkv, -1, D});
  b.input("V", DType::Float32, {B, Nkv, -1, Dv}).input("attn_mask", DType::Bool, {B, Nq, 1, -1});
  b.input("nonpad_kv_seqlen", DType::Int64, {B});
  b.output("Y", DType::Float32);
  b.node("Attention", {"Q", "K", "V", "attn_mask", "", "", "nonpad_kv_seqlen"}, {"Y"});
  std::vector<Step> steps;
  for (int64_t lk : kDecodeKeys) {
    steps.push_back({std::to_string(lk) + " keys",
                     {{"Q", floats({B, Nq, 1, D}, uint32_t(lk) + 7)},
                      {"K", floats({B, Nkv, lk, D}, uint32_t(lk) + 8)},
                      {"V", floats({B, Nkv, lk, Dv}, uint32_t(lk) + 9)},
                      {"attn_mask", bools({B, Nq, 1, lk}, uint32_t(lk) + 10, lk < 40 ? 2 : 4)},
                      {"nonpad_kv_seqlen", Tensor::from_vector<int64_t>({B}, {0, std::max<int64_t>(lk - 3, 1)})}}});
  }
  check_steps("onnx attention", b.bytes(), steps, 1e-4, 1e-4);
}

// MultiHeadAttention (com.microsoft) decode steps: one query row per head, Dv 48 (its own head size),
// a key padding mask of int32 values (a score input) that hides batch 1's last keys.
TEST(RuntimeAttention, DecodeStepsMultiHeadAttention) {
  SKIP_WITHOUT_GPU();
  const int64_t B = 2, N = 2, H = 80, Hv = 48;
  ModelBuilder b;
  b.input("query", DType::Float32, {B, 1, N * H}).input("key", DType::Float32, {B, -1, N * H});
  b.input("value", DType::Float32, {B, -1, N * Hv}).input("key_padding_mask", DType::Int32, {B, -1});
  b.output("output", DType::Float32);
  auto& n = b.node("MultiHeadAttention", {"query", "key", "value", "", "key_padding_mask"}, {"output"});
  n.set_domain("com.microsoft");
  ModelBuilder::attr(n, "num_heads", N);
  std::vector<Step> steps;
  for (int64_t lk : kDecodeKeys) {
    std::vector<int32_t> m(size_t(B * lk), 1);
    for (int64_t j = lk / 2 + 1; j < lk; ++j) m[size_t(lk + j)] = 0;
    steps.push_back({std::to_string(lk) + " keys",
                     {{"query", floats({B, 1, N * H}, uint32_t(lk) + 11)},
                      {"key", floats({B, lk, N * H}, uint32_t(lk) + 12)},
                      {"value", floats({B, lk, N * Hv}, uint32_t(lk) + 13)},
                      {"key_padding_mask", Tensor::from_vector<int32_t>({B, lk}, m)}}});
  }
  check_steps("mha", onnxgpu::testing::in_domain_import(b.bytes(), "com.microsoft"), steps, 1e-4, 1e-4);
}

namespace {
// A MultiHeadAttention node of `heads` heads over inputs q, k, v (no device needed to call its kernel).
ir::Node mha_node(int64_t heads) {
  ir::Node node;
  node.name = "mha";
  node.op_type = "MultiHeadAttention";
  node.domain = ir::kMsDomain;
  node.inputs = {"q", "k", "v"};
  node.outputs = {"y"};
  ir::Attribute n;
  n.kind = ir::Attribute::Kind::Int;
  n.i = heads;
  node.attrs["num_heads"] = n;
  return node;
}
}  // namespace

// $ONNXGPU_ATTENTION_QUADS=1: each invocation of the general tile takes neighbouring keys and output
// columns, read from workgroup memory as vectors. The program says so; BERT's and GPT-2's attentions
// (D of two stages, Dv of two column blocks and short of them, masks, masked rows) match the CPU.
TEST(RuntimeAttention, NeighbouringKeysAndColumnsPerInvocation) {
  onnxgpu::testing::ScopedEnv env("ONNXGPU_ATTENTION_QUADS", "1");
  const ir::Node node = mha_node(2);
  Int64Policy policy;
  webgpu::GpuKernelContext ctx(node, 17, policy, usual_limits(),
                               {{DType::Float32, {1, 40, 2 * 64}}, {DType::Float32, {1, 40, 2 * 64}},
                                {DType::Float32, {1, 40, 2 * 64}}});
  (*webgpu::gpu_registry().find("MultiHeadAttention", ir::kMsDomain))(ctx);
  ASSERT_EQ(ctx.dispatches.size(), 1u);
  EXPECT_NE(ctx.dispatches[0].program.name().find("_quads"), std::string::npos) << ctx.dispatches[0].program.name();
  SKIP_WITHOUT_GPU();
  check_bert_rows();
  check_causal_rows();
}

// Which kernels a split gets, from the device's limits and the shapes (no device needed): the decode
// kernel and its combine (256 invocations, or 128 where the device allows no more or its workgroup
// memory is short), the general tile with the decode kernel's combine where the decode kernel does not
// fit (D > 512).
TEST(RuntimeAttention, DecodeKernelChoice) {
  if (std::getenv("ONNXGPU_ATTENTION_DECODE")) GTEST_SKIP() << "ONNXGPU_ATTENTION_DECODE is set";
  webgpu::Limits limits = usual_limits();
  // MultiHeadAttention of `heads` heads of D (and Dv): `rows` query rows over `keys` keys.
  auto programs = [&](int64_t rows, int64_t keys, int64_t heads, int64_t d, int64_t dv, const webgpu::Limits& l) {
    const ir::Node node = mha_node(heads);
    Int64Policy policy;
    webgpu::GpuKernelContext ctx(node, 17, policy, l,
                                 {{DType::Float32, {1, rows, heads * d}},
                                  {DType::Float32, {1, keys, heads * d}},
                                  {DType::Float32, {1, keys, heads * dv}}});
    (*webgpu::gpu_registry().find("MultiHeadAttention", ir::kMsDomain))(ctx);
    std::vector<std::tuple<std::string, uint32_t, uint32_t>> r;  // name, workgroup size, workgroups
    for (const auto& x : ctx.dispatches) r.push_back({x.program.name(), x.program.workgroup_size(), x.x * x.y * x.z});
    return r;
  };
  auto has = [](const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; };
  // GPT-2's decode step: 12 heads of 64 over 1000 keys: 32 chunks of 32 keys per head.
  auto gpt2 = programs(1, 1000, 12, 64, 64, limits);
  ASSERT_EQ(gpt2.size(), 2u);
  EXPECT_TRUE(has(std::get<0>(gpt2[0]), "_decode")) << std::get<0>(gpt2[0]);
  EXPECT_EQ(std::get<1>(gpt2[0]), 256u);
  EXPECT_EQ(std::get<2>(gpt2[0]), 12u * 32u);
  EXPECT_TRUE(has(std::get<0>(gpt2[1]), "_merge")) << std::get<0>(gpt2[1]);
  EXPECT_EQ(std::get<2>(gpt2[1]), 12u);  // a workgroup per (head, row, 64 columns)
  // 8 rows of 256: too much workgroup memory for 256 invocations, fits 128.
  auto wide = programs(8, 300, 2, 256, 256, limits);
  ASSERT_EQ(wide.size(), 2u);
  EXPECT_TRUE(has(std::get<0>(wide[0]), "_decode")) << std::get<0>(wide[0]);
  EXPECT_EQ(std::get<1>(wide[0]), 128u);
  EXPECT_EQ(std::get<2>(wide[1]), 2u * 8u * 4u);
  webgpu::Limits small = limits;
  small.max_compute_invocations_per_workgroup = 128;
  auto narrow = programs(1, 1000, 12, 64, 64, small);
  ASSERT_EQ(narrow.size(), 2u);
  EXPECT_TRUE(has(std::get<0>(narrow[0]), "_decode")) << std::get<0>(narrow[0]);
  EXPECT_EQ(std::get<1>(narrow[0]), 128u);
  EXPECT_EQ(std::get<1>(narrow[1]), 128u);
  // Heads of 600: the general tile (its split), then the decode kernel's combine.
  auto big = programs(1, 100, 1, 600, 64, limits);
  ASSERT_EQ(big.size(), 2u);
  EXPECT_TRUE(has(std::get<0>(big[0]), "_split")) << std::get<0>(big[0]);
  EXPECT_TRUE(has(std::get<0>(big[1]), "_merge")) << std::get<0>(big[1]);
  // More rows than a split takes: the general tile alone.
  auto prompt = programs(9, 100, 2, 64, 64, limits);
  ASSERT_EQ(prompt.size(), 1u);
  EXPECT_FALSE(has(std::get<0>(prompt[0]), "_decode") || has(std::get<0>(prompt[0]), "_split")) << std::get<0>(prompt[0]);
}

// A kernel called again for other sizes (a refresh) with the programs it recorded: a program of the
// same name and key takes the recorded one's WGSL instead of building it (shader::Program::keyed), and
// that WGSL is the one it would build; other choices (more rows: another program) build their own.
TEST(RuntimeAttention, ACallForOtherSizesTakesTheRecordedText) {
  const ir::Node node = mha_node(4);
  Int64Policy policy;
  const webgpu::Limits limits = usual_limits();
  auto call = [&](int64_t rows, int64_t keys, const std::vector<webgpu::DispatchSpec>* recorded) {
    auto ctx = std::make_unique<webgpu::GpuKernelContext>(
        node, 17, policy, limits,
        std::vector<webgpu::GpuValueInfo>{
            {DType::Float32, {1, rows, 64}}, {DType::Float32, {1, keys, 64}}, {DType::Float32, {1, keys, 64}}});
    if (recorded)
      for (const webgpu::DispatchSpec& d : *recorded) ctx->recorded.push_back(&d.program);
    (*webgpu::gpu_registry().find("MultiHeadAttention", ir::kMsDomain))(*ctx);
    return ctx;
  };
  const auto first = call(1, 100, nullptr);
  const auto again = call(1, 101, &first->dispatches), fresh = call(1, 101, nullptr);
  ASSERT_EQ(again->dispatches.size(), 2u);
  ASSERT_EQ(fresh->dispatches.size(), 2u);
  for (size_t j = 0; j < 2; ++j) {
    const webgpu::shader::Program& p = again->dispatches[j].program;
    SCOPED_TRACE(p.name());
    EXPECT_FALSE(p.key().empty());
    EXPECT_TRUE(p.same_source(first->dispatches[j].program));
    EXPECT_EQ(p.source(), fresh->dispatches[j].program.source());
    EXPECT_EQ(again->dispatches[j].uniforms, fresh->dispatches[j].uniforms) << "this call's sizes";
  }
  const auto prompt = call(12, 101, &first->dispatches), prompt_fresh = call(12, 101, nullptr);
  ASSERT_EQ(prompt->dispatches.size(), 1u);
  EXPECT_TRUE(prompt->dispatches[0].program.builds_text());
  EXPECT_EQ(prompt->dispatches[0].program.source(), prompt_fresh->dispatches[0].program.source());
}

// The program level: a key that matches a recorded program gives its text and declare() / body() are
// ignored; with the check (the tests' $ONNXGPU_CHECK_WGSL_KEYS=1) the text is built and a key that
// misses a choice (here the body) fails loudly at dispatch, naming the program and the key.
TEST(RuntimeAttention, AKeyThatMissesAChoiceFailsTheCheck) {
  Int64Policy policy;
  const webgpu::Limits limits = usual_limits();
  ir::Node node;
  node.name = "n";
  node.op_type = "Identity";
  node.inputs = {"x"};
  node.outputs = {"y"};
  auto build = [&](const std::vector<const webgpu::shader::Program*>& recorded, bool check, const std::string& body) {
    webgpu::shader::Program p("Identity.copy", policy);
    p.keyed("copy", recorded, check);
    p.input("x", DType::Float32, {8});
    p.output("y", DType::Float32, {8});
    p.set_threads(8);
    p.body(body);
    return p;
  };
  const webgpu::shader::Program recorded = build({}, false, "  y_store(gi, x_load(gi));");
  EXPECT_TRUE(recorded.builds_text());
  const webgpu::shader::Program taken = build({&recorded}, false, "  y_store(gi, 2.0 * x_load(gi));");
  EXPECT_FALSE(taken.builds_text());
  EXPECT_EQ(taken.source(), recorded.source()) << "the body given was ignored: the key said it was the same";
  webgpu::GpuKernelContext ctx(node, 13, policy, limits, {{DType::Float32, {8}}});
  const webgpu::shader::Program same = build({&recorded}, true, "  y_store(gi, x_load(gi));");
  EXPECT_TRUE(same.builds_text());
  ctx.dispatch(same, {ctx.in(0), ctx.out(0)});
  const webgpu::shader::Program other = build({&recorded}, true, "  y_store(gi, 2.0 * x_load(gi));");
  try {
    ctx.dispatch(other, {ctx.in(0), ctx.out(0)});
    FAIL() << "a checked key that misses a choice must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Identity.copy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("key 'copy'"), std::string::npos) << e.what();
  }
  ASSERT_EQ(ctx.dispatches.size(), 1u);
  EXPECT_EQ(ctx.dispatches[0].program.checked_against(), nullptr) << "a recorded program keeps no pointer";
}
