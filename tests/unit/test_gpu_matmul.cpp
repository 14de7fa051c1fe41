// GPU MatMul, Gemm, LayerNormalization, BatchNormalization and InstanceNormalization against the CPU
// reference: one-node models run with ep=webgpu (capture, 3 runs, no CPU fallback) and ep=cpu; the
// products of a few rows (gemv.cpp), also in their fused forms.
// Needs a WebGPU adapter (here: SwiftShader, which the engine finds by itself;
// XDG_RUNTIME_DIR=/tmp); ONNXGPU_SKIP_GPU_TESTS=1 skips when there is none.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "loader/tensor_proto.h"
#include "model_builder.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"
#include "kernel_choice.h"
#include "one_node.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/row_norm.h"

namespace onnxgpu {
namespace {

using namespace onnxgpu::testing;

// Keeps one WebGPU session alive while the suite runs, so that sessions share one device and its
// pipeline cache (compiling a tiled kernel takes seconds on SwiftShader). Released when the tests end:
// SwiftShader crashes if a device outlives exit.
std::unique_ptr<Session> g_keepalive;
class KeepDeviceEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { g_keepalive.reset(); }
};
[[maybe_unused]] ::testing::Environment* const g_env = ::testing::AddGlobalTestEnvironment(new KeepDeviceEnvironment);

// check_gpu_vs_cpu, keeping the first GPU session alive for the whole suite.
void check_gpu_vs_cpu(const std::string& model, const std::vector<Operand>& inputs, double rtol = 1e-4,
                      double atol = 1e-4) {
  testing::expect_gpu_matches_cpu(model, inputs, rtol, atol, [](const std::string& m) {
    if (!g_keepalive) g_keepalive = std::make_unique<Session>(Session::from_bytes(m, testing::webgpu_options()));
  });
}

// ---------------------------------------------------------------------------------------------- MatMul

void check_matmul(DType t, const Shape& a, const Shape& b, uint32_t seed, bool b_initializer = false) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " " + shape_str(a) + " @ " + shape_str(b));
  std::vector<Operand> ins{{"A", random_float(t, a, seed)}, {"B", random_float(t, b, seed + 1), b_initializer}};
  double tol = t == DType::Float16 || t == DType::BFloat16 ? 2e-2 : 1e-4;
  check_gpu_vs_cpu(one_node_model("MatMul", ins, {"Y"}, 13), ins, tol, tol);
}

TEST(GpuMatMul, FloatShapesNotTileMultiples) {
  check_matmul(DType::Float32, {1, 7, 13}, {13, 5}, 1);
  check_matmul(DType::Float32, {2, 3, 65, 33}, {33, 70}, 2);
  check_matmul(DType::Float32, {2, 3, 65, 33}, {2, 3, 33, 70}, 3);
  check_matmul(DType::Float32, {1, 1}, {1, 1}, 4);
  check_matmul(DType::Float32, {5, 0}, {0, 3}, 5);  // K = 0: zeros
  check_matmul(DType::Float32, {130, 77}, {77, 129}, 6, true);
}

TEST(GpuMatMul, LargeTiles) {
  check_matmul(DType::Float32, {16, 200, 40}, {16, 40, 260}, 7);  // >= 256 tiles of 64 x 64
}

TEST(GpuMatMul, SplitK) {  // few output tiles, long K: the K range is split over workgroups
  check_matmul(DType::Float32, {3, 5, 1000}, {1000, 7}, 15);
  check_matmul(DType::Float32, {2, 5, 600}, {2, 600, 9}, 16);
  check_matmul(DType::Float32, {1000}, {1000, 3}, 17);
}

TEST(GpuMatMul, OneDimensional) {
  check_matmul(DType::Float32, {13}, {13, 5}, 10);
  check_matmul(DType::Float32, {7, 13}, {13}, 11);
  check_matmul(DType::Float32, {13}, {13}, 12);
  check_matmul(DType::Float32, {2, 3, 7, 13}, {13}, 13);
  check_matmul(DType::Float32, {13}, {2, 13, 6}, 14);
}

TEST(GpuMatMul, BroadcastBatch) {
  check_matmul(DType::Float32, {2, 1, 5, 6}, {3, 6, 4}, 20);
  check_matmul(DType::Float32, {1, 5, 6}, {4, 1, 6, 3}, 21);
  check_matmul(DType::Float32, {5, 6}, {2, 6, 9}, 22);
}

TEST(GpuMatMul, OtherFloatTypes) {
  check_matmul(DType::Float16, {3, 17, 9}, {9, 11}, 30);
  check_matmul(DType::BFloat16, {17, 9}, {9, 11}, 31);
  check_matmul(DType::Float64, {2, 17, 9}, {2, 9, 11}, 32);
}

// Integers: values beyond 2^32 whose small products sum exactly; compared bit for bit.
Tensor wide_ints(DType t, const Shape& shape, uint32_t seed, bool big) {
  std::mt19937_64 rng(seed);
  Tensor r(DType::Int64, shape);
  for (auto& v : r.span<int64_t>()) {
    int64_t small = int64_t(rng() % 19) - 9;
    v = big ? (int64_t(1) << 33) * int64_t(rng() % 5 + 1) * (rng() % 2 ? 1 : -1) + small : small;
  }
  if (t == DType::UInt32 || t == DType::UInt64)
    for (auto& v : r.span<int64_t>()) v = v < 0 ? -v : v;
  return t == DType::Int64 ? r : r.cast(t);
}

void check_int_matmul(DType t, const Shape& a, const Shape& b, uint32_t seed) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " " + shape_str(a) + " @ " + shape_str(b));
  bool wide = t == DType::Int64 || t == DType::UInt64;
  std::vector<Operand> ins{{"A", wide_ints(t, a, seed, wide)}, {"B", wide_ints(t, b, seed + 1, false)}};
  check_gpu_vs_cpu(one_node_model("MatMul", ins, {"Y"}, 13), ins, 0, 0);
}

TEST(GpuMatMul, IntegersExact) {
  check_int_matmul(DType::Int64, {2, 7, 13}, {13, 5}, 40);
  check_int_matmul(DType::Int64, {13}, {2, 13, 6}, 41);
  check_int_matmul(DType::UInt64, {7, 13}, {13, 5}, 42);
  check_int_matmul(DType::Int32, {3, 7, 13}, {3, 13, 5}, 43);
  check_int_matmul(DType::UInt32, {7, 13}, {13}, 44);
}

TEST(GpuMatMul, Int64ValuesBeyond32Bits) {
  // Each product is (k * 2^33 + s) * small: the sums need all 64 bits.
  Tensor a = Tensor::from_vector<int64_t>({2, 3}, {(int64_t(1) << 40) + 3, -(int64_t(1) << 35), 7,
                                                    int64_t(5000000000), -1, (int64_t(1) << 50)});
  Tensor b = Tensor::from_vector<int64_t>({3, 2}, {3, -2, 1, 4, -5, 6});
  std::vector<Operand> ins{{"A", a}, {"B", b}};
  std::string model = one_node_model("MatMul", ins, {"Y"}, 13);
  check_gpu_vs_cpu(model, ins, 0, 0);
  Session gpu = Session::from_bytes(model, testing::webgpu_options());
  Tensor y = gpu.run({{"A", a}, {"B", b}})[0];
  int64_t e00 = ((int64_t(1) << 40) + 3) * 3 + (-(int64_t(1) << 35)) * 1 + 7 * -5;
  int64_t e11 = int64_t(5000000000) * -2 + -1 * 4 + (int64_t(1) << 50) * 6;
  EXPECT_EQ(y.data<int64_t>()[0], e00);
  EXPECT_EQ(y.data<int64_t>()[3], e11);
}

// ------------------------------------------------------------------------------------------------ Gemm

void check_gemm(DType t, int64_t M, int64_t K, int64_t N, bool ta, bool tb, float alpha, float beta,
                const Shape* c_shape, uint32_t seed) {
  SCOPED_TRACE("Gemm M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(N) +
               " transA=" + std::to_string(ta) + " transB=" + std::to_string(tb) +
               (c_shape ? " C " + shape_str(*c_shape) : std::string(" no C")));
  bool integer = !dtype_is_float(t);
  auto make = [&](const Shape& s, uint32_t sd, bool big) {
    return integer ? wide_ints(t, s, sd, big) : random_float(t, s, sd);
  };
  std::vector<Operand> ins{{"A", make(ta ? Shape{K, M} : Shape{M, K}, seed, t == DType::Int64)},
                           {"B", make(tb ? Shape{N, K} : Shape{K, N}, seed + 1, false)}};
  if (c_shape) ins.push_back({"C", make(*c_shape, seed + 2, t == DType::Int64)});
  std::string model = one_node_model("Gemm", ins, {"Y"}, 13, [&](onnx::NodeProto& n) {
    set_int(n, "transA", ta);
    set_int(n, "transB", tb);
    set_float(n, "alpha", alpha);
    set_float(n, "beta", beta);
  });
  check_gpu_vs_cpu(model, ins, integer ? 0 : 1e-4, integer ? 0 : 1e-4);
}

TEST(GpuGemm, TransposesAndBroadcastC) {
  Shape c_full{19, 37}, c_row{37}, c_col{19, 1}, c_scalar{}, c_one{1, 1};
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) check_gemm(DType::Float32, 19, 23, 37, ta, tb, 0.5f, 2.0f, &c_full, 50 + ta * 2 + tb);
  check_gemm(DType::Float32, 19, 23, 37, false, true, 1.0f, 1.0f, &c_row, 60);
  check_gemm(DType::Float32, 19, 23, 37, true, false, 1.5f, -1.0f, &c_col, 61);
  check_gemm(DType::Float32, 19, 23, 37, false, false, 1.0f, 3.0f, &c_scalar, 62);
  check_gemm(DType::Float32, 19, 23, 37, true, true, 1.0f, 1.0f, &c_one, 63);
  check_gemm(DType::Float32, 70, 65, 66, false, true, 1.0f, 1.0f, nullptr, 64);
  check_gemm(DType::Float32, 5, 3, 4, false, false, 1.0f, 0.0f, &c_scalar, 65);
  check_gemm(DType::Float16, 19, 23, 37, false, true, 1.0f, 1.0f, &c_row, 66);
  Shape c_small{5, 6};
  check_gemm(DType::Float32, 5, 1100, 6, true, true, 0.5f, 2.0f, &c_small, 67);  // split K
  check_gemm(DType::Float32, 5, 1100, 6, false, false, 1.0f, 1.0f, nullptr, 68);
}

TEST(GpuGemm, IntegersExact) {
  Shape c_row{9};
  check_gemm(DType::Int64, 7, 13, 9, false, false, 1.0f, 1.0f, &c_row, 70);
  check_gemm(DType::Int64, 7, 13, 9, true, true, 1.0f, 1.0f, nullptr, 71);
  check_gemm(DType::Int32, 7, 13, 9, false, true, 1.0f, 1.0f, &c_row, 72);
  check_gemm(DType::UInt64, 7, 13, 9, true, false, 1.0f, 1.0f, &c_row, 73);
}

// The tile by the grid: 32 x 64 up to 256 rows, and above where 64 x 64 tiles would make fewer than 1,024
// workgroups (SegFormer's [6272, 256] x [256, 64], a ViT's 394 rows); 64 x 64 where they fill the GPU alone
// (a long prompt's [2048, 768] x [768, 3072], or a batch of many matrices). Checked against the CPU at a
// shape of each kind.
TEST(GpuMatMul, TileByGrid) {
  auto tile_of = [](Shape a, Shape b) {
    ir::Node node;
    node.op_type = "MatMul";
    node.inputs = {"A", "B"};
    node.outputs = {"Y"};
    auto programs = kernel_programs(node, {{DType::Float32, a}, {DType::Float32, b}}, usual_limits());
    return programs.empty() ? std::string() : programs[0].first;
  };
  EXPECT_NE(tile_of({128, 768}, {768, 3072}).find("_32x64x16"), std::string::npos);
  EXPECT_NE(tile_of({6272, 256}, {256, 64}).find("_32x64x16"), std::string::npos);
  EXPECT_NE(tile_of({394, 256}, {256, 1024}).find("_32x64x16"), std::string::npos);
  EXPECT_NE(tile_of({2048, 768}, {768, 3072}).find("_64x64x16"), std::string::npos);
  EXPECT_NE(tile_of({64, 300, 256}, {64, 256, 256}).find("_64x64x16"), std::string::npos);  // 1,280 tiles
  {
    ScopedEnv env("ONNXGPU_MATMUL_WIDE_GRID", "0");  // as before: 64 x 64 above 256 rows
    EXPECT_NE(tile_of({6272, 256}, {256, 64}).find("_64x64x16"), std::string::npos);
  }
  check_matmul(DType::Float32, {2, 700, 96}, {96, 72}, 60);  // 32 x 64 tiles above 256 rows, edge tiles
  check_matmul(DType::Float32, {1100, 64}, {64, 3800}, 61);  // 64 x 64 (18 x 60 tiles)
}

// $ONNXGPU_MATMUL_BUFFERS=2: the tiles staged in two buffers, one barrier a K-slice. K of one slice,
// of an odd number of slices and not a multiple of the slice, K = 0, the K split, batches, Gemm's transposes.
TEST(GpuMatMul, TwoBuffersOfTiles) {
  ScopedEnv env("ONNXGPU_MATMUL_BUFFERS", "2");
  ir::Node node;
  node.op_type = "MatMul";
  node.inputs = {"A", "B"};
  node.outputs = {"Y"};
  auto programs = kernel_programs(node, {{DType::Float32, {130, 77}}, {DType::Float32, {77, 129}}}, usual_limits());
  ASSERT_EQ(programs.size(), 1u);
  EXPECT_NE(programs[0].first.find("_db"), std::string::npos) << programs[0].first;
  check_matmul(DType::Float32, {1, 7, 16}, {16, 5}, 50);
  check_matmul(DType::Float32, {130, 77}, {77, 129}, 51, true);
  check_matmul(DType::Float32, {40, 48}, {48, 70}, 52);
  check_matmul(DType::Float32, {5, 0}, {0, 3}, 53);
  check_matmul(DType::Float32, {3, 5, 1000}, {1000, 7}, 54);
  check_matmul(DType::Float32, {16, 200, 40}, {16, 40, 260}, 55);
  check_gemm(DType::Float32, 37, 45, 66, true, true, 0.5f, 2.0f, nullptr, 56);
}

// ------------------------------------------------------------------- Products of a few rows (gemv.cpp)

// Runs `body` with the default settings (a small B in one pass) and again with every product of the
// columns kernel split over workgroups where K allows ($ONNXGPU_GEMV=small=0: partial sums, then the
// sum pass), so that small shapes check both paths.
void for_both_paths(const std::function<void(bool split)>& body) {
  body(false);
  const char* before = std::getenv("ONNXGPU_GEMV");
  std::string saved = before ? before : "";
  ::setenv("ONNXGPU_GEMV", "small=0", 1);
  {
    SCOPED_TRACE("ONNXGPU_GEMV=small=0 (K split)");
    body(true);
  }
  if (before) ::setenv("ONNXGPU_GEMV", saved.c_str(), 1);
  else ::unsetenv("ONNXGPU_GEMV");
}

// One row (a decode step's products): K and N neither multiples of 4 nor of a workgroup, K short and
// long, B a weight or an input.
TEST(GpuGemv, OneRow) {
  for_both_paths([](bool) {
    uint32_t seed = 200;
    for (int64_t k : {1, 3, 37, 768, 3072})
      for (int64_t n : {1, 5, 50, 769}) {
        ++seed;
        check_matmul(DType::Float32, {1, k}, {k, n}, seed, seed % 2 == 0);
      }
    check_matmul(DType::Float32, {1, 1, 768}, {768, 2304}, 230, true);  // GPT-2's q, k, v projection
    check_matmul(DType::Float32, {768}, {768, 50}, 231);                // A 1-D
  });
}

// N a multiple of 4: the columns kernel reads B as vec4s (four neighbouring columns an invocation); the
// same shapes with $ONNXGPU_GEMV=vec=0 take the scalar loads. Few rows, batches of B (broadcast too),
// K odd, one vec4 of columns, the K split.
TEST(GpuGemv, VectorLoads) {
  for (const char* vec : {"", "vec=0"}) {
    SCOPED_TRACE(std::string("ONNXGPU_GEMV=") + vec);
    ::setenv("ONNXGPU_GEMV", vec, 1);
    uint32_t seed = 700;
    for (int64_t k : {1, 37, 770})
      for (int64_t n : {4, 52, 772}) {
        ++seed;
        check_matmul(DType::Float32, {1, k}, {k, n}, seed, seed % 2 == 0);
      }
    check_matmul(DType::Float32, {3, 1, 37}, {3, 37, 52}, 720);        // one product per batch element
    check_matmul(DType::Float32, {2, 1, 1, 33}, {3, 33, 8}, 721);      // broadcast batch, K odd
    check_matmul(DType::Float32, {4, 1, 768}, {768, 2304}, 722, true);  // M = 4
    check_matmul(DType::Float32, {1, 2048}, {2048, 4100}, 723, true);  // K split, the sum pass
  }
  ::unsetenv("ONNXGPU_GEMV");
}

// Overrides that make columns per invocation not a power of two: the column invocations stay a power of
// two, so the sum over the k lanes covers every lane (with cpi=3 and ct=128, ct was 256 / 3 = 85).
TEST(GpuGemv, ColumnsPerInvocationNotAPowerOfTwo) {
  for (const char* over : {"cpi=3,ct=128", "cpi=5,ct=64,small=0", "cpi=7,ct=256"}) {
    SCOPED_TRACE(std::string("ONNXGPU_GEMV=") + over);
    ::setenv("ONNXGPU_GEMV", over, 1);
    check_matmul(DType::Float32, {1, 300}, {300, 1000}, 730, true);
    check_matmul(DType::Float32, {2, 1, 37}, {37, 21}, 731);
  }
  ::unsetenv("ONNXGPU_GEMV");
}

// A weight over the one-pass bound (8M elements): 64-column workgroups, K split, the sum pass.
TEST(GpuGemv, LargeWeight) {
  check_matmul(DType::Float32, {1, 1, 2048}, {2048, 4100}, 232, true);
}

// A few rows (A's batch folded into M when B has none), B's batch in the grid, broadcast batch dims.
TEST(GpuGemv, FewRowsAndBatches) {
  for_both_paths([](bool) {
    check_matmul(DType::Float32, {2, 1, 37}, {37, 50}, 240);          // M = 2 (a batch of two rows)
    check_matmul(DType::Float32, {3, 770}, {770, 33}, 241);           // M = 3
    check_matmul(DType::Float32, {4, 1, 768}, {768, 5}, 242, true);   // M = 4
    check_matmul(DType::Float32, {3, 1, 37}, {3, 37, 50}, 243);       // one product per batch element
    check_matmul(DType::Float32, {2, 1, 1, 769}, {3, 769, 5}, 244);   // broadcast batch
    check_matmul(DType::Float32, {1, 12, 1, 64}, {1, 12, 64, 129}, 245);  // attention's scores of one query
    check_matmul(DType::Float32, {5, 64}, {64, 70}, 246);             // M = 5: the tiled kernel
  });
}

TEST(GpuGemv, OtherFloatTypes) {
  check_matmul(DType::Float16, {1, 768}, {768, 50}, 250, true);
  check_matmul(DType::Float16, {2, 37}, {37, 769}, 251);
  check_matmul(DType::BFloat16, {1, 37}, {37, 5}, 252);
  check_matmul(DType::Float64, {1, 37}, {37, 5}, 253);  // on the CPU by design: the GPU would round it
}

// Gemm: B transposed (rows contiguous along k: the rows kernel, which splits a long K over workgroups
// when the rows are few), A transposed, alpha, beta and C of each broadcast shape.
TEST(GpuGemv, GemmTransposes) {
  for_both_paths([](bool) {
    Shape c_row{50}, c_full{1, 769}, c_col{3, 1}, c_scalar{}, c_n5{5};
    check_gemm(DType::Float32, 1, 768, 50, false, true, 1.0f, 1.0f, &c_row, 260);
    check_gemm(DType::Float32, 1, 37, 769, false, true, 0.5f, 2.0f, &c_full, 261);
    check_gemm(DType::Float32, 1, 3072, 5, true, true, 1.0f, 1.0f, &c_n5, 262);  // A transposed, K split
    check_gemm(DType::Float32, 3, 1000, 7, false, true, 1.5f, -1.0f, &c_col, 263);  // M = 3
    check_gemm(DType::Float32, 1, 3, 1, false, true, 1.0f, 1.0f, &c_scalar, 264);
    check_gemm(DType::Float32, 1, 768, 50, false, false, 0.5f, 2.0f, &c_row, 265);
    check_gemm(DType::Float32, 1, 1, 769, true, false, 1.0f, 1.0f, nullptr, 266);
    check_gemm(DType::Float32, 1, 4100, 5, false, true, 1.0f, 1.0f, &c_n5, 267);  // rows kernel, K split
  });
}

// A model of a few nodes on the GPU (recorded, then replayed) against the CPU reference; returns the
// GPU plan, for its fusion and dispatch counts.
PlanReport check_model(const std::string& model, const std::unordered_map<std::string, Tensor>& feeds,
                       double tol = 1e-4) {
  std::vector<Operand> ins;
  for (const auto& [name, t] : feeds) ins.push_back({name, t});
  check_gpu_vs_cpu(model, ins, tol, tol);
  if (skip_gpu()) return {};
  Session g = Session::from_bytes(model, testing::webgpu_options());
  g.run(feeds);
  return g.last_plan();
}

Tensor weights(const Shape& s, uint32_t seed, float scale = 0.1f) {
  Tensor t = random_float(DType::Float32, s, seed);
  for (auto& v : t.span<float>()) v *= scale;
  return t;
}

// x + (x W + b) on one row, the residual of a transformer block (one kernel: bias and residual in the
// epilogue), with and without K split; then an activation (Tanh, Neg) in the epilogue.
TEST(GpuGemv, FusedBiasResidualActivation) {
  for_both_paths([](bool) {
    for (int64_t k : {37, 768}) {
      SCOPED_TRACE("K = " + std::to_string(k));
      testing::ModelBuilder b;
      b.input("x", DType::Float32, {1, 1, k}).output("y", DType::Float32).output("t", DType::Float32);
      b.initializer("w", weights({k, k}, 300));
      b.initializer("c", weights({k}, 301, 1.0f));
      b.initializer("w2", weights({k, 50}, 302));
      b.initializer("c2", weights({50}, 303, 1.0f));
      b.node("MatMul", {"x", "w"}, {"h"});
      b.node("Add", {"c", "h"}, {"hb"});
      b.node("Add", {"x", "hb"}, {"y"});
      b.node("MatMul", {"y", "w2"}, {"h2"});
      b.node("Add", {"h2", "c2"}, {"a2"});
      b.node("Tanh", {"a2"}, {"t2"});
      b.node("Neg", {"t2"}, {"t"});
      PlanReport p = check_model(b.bytes(), {{"x", random_float(DType::Float32, {1, 1, k}, 304)}});
      EXPECT_EQ(p.fused_nodes, 7);
    }
  });
}

// q, k, v from one row: one product whose output is split into three (MatMul + bias -> Split), and
// sibling products reading one row with their weights side by side; with and without K split.
TEST(GpuGemv, FusedSplitAndSiblings) {
  for_both_paths([](bool split_path) {
    for (int64_t k : {8, 900}) {
      SCOPED_TRACE("K = " + std::to_string(k));
      testing::ModelBuilder b;
      b.input("x", DType::Float32, {1, 1, k}).input("x2", DType::Float32, {1, 1, k});
      for (const char* o : {"q", "k", "v", "q2", "k2", "v2"}) b.output(o, DType::Float32);
      b.initializer("w", weights({k, 12}, 310));
      b.initializer("c", weights({12}, 311, 1.0f));
      b.initializer("sizes", Tensor::from_vector<int64_t>({3}, {5, 4, 3}));
      b.node("MatMul", {"x", "w"}, {"h"});
      b.node("Add", {"c", "h"}, {"hb"});
      auto& s = b.node("Split", {"hb", "sizes"}, {"q", "k", "v"});
      testing::ModelBuilder::attr(s, "axis", 2);
      const int64_t n[3] = {5, 3, 7};
      for (int j = 0; j < 3; ++j) {
        std::string id = std::to_string(j);
        b.initializer("w" + id, weights({k, n[j]}, 320 + j));
        b.initializer("b" + id, weights({n[j]}, 330 + j, 1.0f));
        b.node("MatMul", {"x2", "w" + id}, {"p" + id});
        b.node("Add", {"p" + id, "b" + id}, {std::string(j == 0 ? "q2" : j == 1 ? "k2" : "v2")});
      }
      PlanReport p = check_model(b.bytes(), {{"x", random_float(DType::Float32, {1, 1, k}, 340)},
                                             {"x2", random_float(DType::Float32, {1, 1, k}, 341)}});
      EXPECT_EQ(p.fused_nodes, 9);
      EXPECT_EQ(p.dispatches, split_path && k == 900 ? 4 : 2);  // K split: partial sums, then the sum pass
    }
  });
}

// Transposes folded into a one-row product: B = W^T read in place (the rows kernel, through strides),
// attention's heads read and written through strides.
TEST(GpuGemv, FusedTransposes) {
  for_both_paths([](bool) {
    auto perm = [](onnx::NodeProto& n, std::vector<int64_t> p) { set_ints(n, "perm", p); };
    for (int64_t k : {37, 768}) {
      SCOPED_TRACE("K = " + std::to_string(k));
      testing::ModelBuilder b;
      b.input("x", DType::Float32, {1, k}).input("h", DType::Float32, {1, 1, 3, k}).input("v", DType::Float32, {1, 3, k, 5});
      b.output("y", DType::Float32).output("o", DType::Float32);
      b.initializer("wt", weights({769, k}, 350));
      perm(b.node("Transpose", {"wt"}, {"w"}), {1, 0});
      b.node("MatMul", {"x", "w"}, {"y"});  // [1, 769]
      perm(b.node("Transpose", {"h"}, {"ht"}), {0, 2, 1, 3});  // [1, 3, 1, k]
      b.node("MatMul", {"ht", "v"}, {"p"});                    // [1, 3, 1, 5]
      perm(b.node("Transpose", {"p"}, {"o"}), {0, 2, 1, 3});   // [1, 1, 3, 5]
      PlanReport p = check_model(b.bytes(), {{"x", random_float(DType::Float32, {1, k}, 351)},
                                             {"h", random_float(DType::Float32, {1, 1, 3, k}, 352)},
                                             {"v", random_float(DType::Float32, {1, 3, k, 5}, 353)}});
      EXPECT_EQ(p.fused_nodes, 5);
    }
  });
}

// A decode step's products over a growing past (scores of one query, then their product with V): one
// recorded plan refreshed for each size, the K split and the workgroup counts following K.
TEST(GpuGemv, RefreshedForOtherSizes) {
  testing::ModelBuilder b;
  b.input("q", DType::Float32, {1, 4, 1, 64}).input("kt", DType::Float32, {1, 4, 64, -1});
  b.input("v", DType::Float32, {1, 4, -1, 64}).output("o", DType::Float32);
  b.node("MatMul", {"q", "kt"}, {"s"});  // [1, 4, 1, T]
  b.node("MatMul", {"s", "v"}, {"o"});   // [1, 4, 1, 64], K = T
  std::string model = b.bytes();
  if (skip_gpu()) GTEST_SKIP();
  Session g = Session::from_bytes(model, testing::webgpu_options());
  SessionOptions cpu;
  cpu.ep = "cpu";
  Session c = Session::from_bytes(model, cpu);
  int refreshed = 0;
  uint32_t seed = 360;
  for (int64_t t : {5, 6, 300, 301, 2000, 7}) {
    SCOPED_TRACE("T = " + std::to_string(t));
    std::unordered_map<std::string, Tensor> feeds{{"q", random_float(DType::Float32, {1, 4, 1, 64}, seed++)},
                                                  {"kt", random_float(DType::Float32, {1, 4, 64, t}, seed++)},
                                                  {"v", random_float(DType::Float32, {1, 4, t, 64}, seed++)}};
    auto got = g.run(feeds), want = c.run(feeds);
    auto cmp = runtime::compare_tensors(got.at(0), want.at(0), {1e-4, 1e-4});
    EXPECT_TRUE(cmp.passed) << cmp.message;
    refreshed += g.last_plan().refreshed;
  }
  EXPECT_GE(refreshed, 2);  // 6 after 5 and 301 after 300 at least
}

using onnxgpu::kernel_programs;  // (kernel_choice.h's, beside the overload below)

// ... of a MatMul, or a Gemm (transA, transB), of A and B.
std::vector<std::pair<std::string, uint32_t>> kernel_programs(const std::string& op, Shape a, Shape b, int trans_b,
                                                              const webgpu::Limits& l, DType t = DType::Float32,
                                                              int trans_a = 0) {
  ir::Node node;
  node.name = "p";
  node.op_type = op;
  node.inputs = {"a", "b"};
  node.outputs = {"y"};
  if (op == "Gemm") {
    for (auto [name, v] : {std::pair<const char*, int>{"transA", trans_a}, {"transB", trans_b}}) {
      ir::Attribute at;
      at.kind = ir::Attribute::Kind::Int;
      at.i = v;
      node.attrs[name] = at;
    }
  }
  return kernel_programs(node, {{t, std::move(a)}, {t, std::move(b)}}, l);
}

// Which kernel a product gets, from the device's limits and the product's shape (no device needed):
// few rows -> gemv (columns or rows kernel by which axis of B is contiguous), more -> tiled; the
// workgroup size follows the limits.
TEST(GpuGemv, KernelChoice) {
  const webgpu::Limits limits = usual_limits();
  auto programs = [](const std::string& op, Shape a, Shape b, int trans_b, const webgpu::Limits& l) {
    return kernel_programs(op, std::move(a), std::move(b), trans_b, l);
  };
  auto starts = [](const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; };
  // A decode step's product (B of at most 8M elements): one pass, 8 columns per workgroup.
  auto one = programs("MatMul", {1, 1, 768}, {768, 3072}, 0, limits);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(starts(one[0].first, "MatMul.gemv_vcols_2x4x128_u2_m1")) << one[0].first;
  // A larger B: 64 columns per workgroup, K split (partial sums, then their sum with the epilogue).
  auto large = programs("MatMul", {1, 4096}, {4096, 4096}, 0, limits);
  ASSERT_EQ(large.size(), 2u);
  EXPECT_TRUE(starts(large[0].first, "MatMul.gemv_vcols_16x4x16_u4_m1")) << large[0].first;
  EXPECT_NE(large[0].first.find("_split"), std::string::npos) << large[0].first;
  EXPECT_TRUE(starts(large[1].first, "MatMul.split_sum")) << large[1].first;
  auto wide = programs("MatMul", {1, 768}, {768, 50257}, 0, limits);  // the grid is full without a split
  ASSERT_EQ(wide.size(), 1u);
  EXPECT_TRUE(starts(wide[0].first, "MatMul.gemv_cols_16x4x16")) << wide[0].first;  // N odd: scalar loads
  auto narrow = programs("MatMul", {1, 37}, {37, 1}, 0, limits);  // one column invocation is enough
  ASSERT_EQ(narrow.size(), 1u);
  EXPECT_TRUE(starts(narrow[0].first, "MatMul.gemv_cols_1x4x256")) << narrow[0].first;
  auto rows = programs("Gemm", {1, 768}, {50, 768}, 1, limits);
  ASSERT_FALSE(rows.empty());
  EXPECT_TRUE(starts(rows[0].first, "Gemm.gemv_rows_256x1")) << rows[0].first;
  auto four = programs("MatMul", {4, 768}, {768, 768}, 0, limits);
  EXPECT_NE(four[0].first.find("_m4"), std::string::npos) << four[0].first;
  auto five = programs("MatMul", {5, 768}, {768, 768}, 0, limits);
  EXPECT_TRUE(starts(five[0].first, "MatMul.tiled")) << five[0].first;
  webgpu::Limits small = limits;  // a device of 64 invocations per workgroup
  small.max_compute_invocations_per_workgroup = 64;
  auto s = programs("MatMul", {1, 768}, {768, 3072}, 0, small);
  EXPECT_EQ(s[0].second, 64u) << s[0].first;
}

// -------------------------------------------------- The tiled kernel's vec4 loads ($ONNXGPU_MATMUL_VEC)

// $ONNXGPU_MATMUL_VEC for a scope (nullptr: unset, the default).
struct MatMulVecEnv : ScopedEnv {
  explicit MatMulVecEnv(const char* value) : ScopedEnv("ONNXGPU_MATMUL_VEC", value) {}
};

// Runs `body` with the tiled kernel's vec4 loads (the default) and with $ONNXGPU_MATMUL_VEC=0 (four
// scalar loads each), so that every shape checks both.
void for_both_loads(const std::function<void()>& body) {
  for (const char* v : {static_cast<const char*>(nullptr), "0"}) {
    SCOPED_TRACE(v ? "ONNXGPU_MATMUL_VEC=0" : "ONNXGPU_MATMUL_VEC unset");
    MatMulVecEnv env(v);
    body();
  }
}

// More than 4 rows (the tiled kernel) with K and / or N multiples of 4: A's and B's quads read as vec4s.
// Partial tiles (the last quad of a row inside, the next one outside), A's batch folded into M, a
// matrix per batch element, broadcast batches, only one operand aligned, K split (parts ending inside a
// K-slice, the sum pass), Gemm's transposes and C.
TEST(GpuMatMul, VectorLoads) {
  const DType f = DType::Float32;
  for_both_loads([f] {
    check_matmul(f, {5, 64}, {64, 68}, 800);                 // A and B; N: a tile and one quad
    check_matmul(f, {5, 4}, {4, 4}, 801);                    // one quad each
    check_matmul(f, {70, 12}, {12, 132}, 802, true);         // partial tiles along m and n, K < TK
    check_matmul(f, {2, 3, 65, 36}, {36, 72}, 803);          // A's batch folded into M
    check_matmul(f, {2, 3, 65, 36}, {2, 3, 36, 72}, 804);    // a matrix per batch element
    check_matmul(f, {2, 1, 9, 8}, {3, 8, 12}, 805);          // broadcast batch (A's)
    check_matmul(f, {1, 9, 8}, {4, 1, 8, 12}, 806);          // broadcast batch (B's)
    check_matmul(f, {7, 64}, {64, 70}, 807);                 // K % 4 == 0, N % 4 != 0: A only
    check_matmul(f, {7, 66}, {66, 68}, 808);                 // N % 4 == 0, K % 4 != 0: B only
    check_matmul(f, {8, 4096}, {4096, 8}, 809, true);        // long K: split, the sum pass
    check_matmul(f, {3, 6, 1000}, {1000, 12}, 810);          // split, K ending inside a K-slice
    check_matmul(f, {2, 5, 600}, {2, 600, 8}, 811);          // split, a matrix per batch element
    Shape c_full{19, 36}, c_row{36}, c_col{24, 1};
    check_gemm(f, 19, 24, 36, false, false, 0.5f, 2.0f, &c_full, 812);  // A and B
    check_gemm(f, 19, 24, 36, false, true, 1.0f, 1.0f, &c_row, 813);    // B transposed: A only
    check_gemm(f, 24, 23, 36, true, false, 1.5f, -1.0f, &c_row, 814);   // A transposed: B only
    check_gemm(f, 24, 1100, 8, false, false, 1.0f, 1.0f, &c_col, 815);  // split K, C after the sum
  });
}

// The fused forms over the vec4 loads (M = 7, K and N multiples of 4): bias, residual and activation
// in the epilogue, the output in Split parts, A or B read through a folded Transpose (scalar loads for
// that operand), the output written transposed; K short and long (split).
TEST(GpuMatMul, VectorLoadsFused) {
  auto perm = [](onnx::NodeProto& n, std::vector<int64_t> p) { set_ints(n, "perm", p); };
  for_both_loads([&] {
    for (int64_t k : {64, 1000}) {
      SCOPED_TRACE("K = " + std::to_string(k));
      testing::ModelBuilder b;
      // (Each product reads its own A: sibling products of one A would run as one.)
      for (const char* x : {"x", "x2", "x3"}) b.input(x, DType::Float32, {1, 7, k});
      b.input("h", DType::Float32, {1, 7, 2, k}).input("g", DType::Float32, {1, 2, 7, k});
      for (const char* o : {"y", "t", "q", "v", "u", "o", "z"}) b.output(o, DType::Float32);
      b.initializer("w", weights({k, k}, 820));
      b.initializer("c", weights({k}, 821, 1.0f));
      b.node("MatMul", {"x", "w"}, {"m"});
      b.node("Add", {"c", "m"}, {"mb"});
      b.node("Add", {"x", "mb"}, {"y"});  // bias and residual
      b.initializer("w2", weights({k, 12}, 822));
      b.initializer("c2", weights({12}, 823, 1.0f));
      b.node("MatMul", {"y", "w2"}, {"m2"});
      b.node("Add", {"m2", "c2"}, {"a2"});
      b.node("Tanh", {"a2"}, {"t2"});
      b.node("Neg", {"t2"}, {"t"});  // bias and activation
      b.initializer("w3", weights({k, 12}, 824));
      b.initializer("sizes", Tensor::from_vector<int64_t>({2}, {4, 8}));
      b.node("MatMul", {"x2", "w3"}, {"m3"});
      testing::ModelBuilder::attr(b.node("Split", {"m3", "sizes"}, {"q", "v"}), "axis", 2);  // in parts
      b.initializer("wt", weights({8, k}, 825));
      perm(b.node("Transpose", {"wt"}, {"w4"}), {1, 0});
      b.node("MatMul", {"x3", "w4"}, {"u"});  // B through strides: A's vec4s only
      perm(b.node("Transpose", {"h"}, {"ht"}), {0, 2, 1, 3});  // [1, 2, 7, k]
      b.node("MatMul", {"ht", "w3"}, {"p"});                   // A through strides: B's vec4s only
      perm(b.node("Transpose", {"p"}, {"o"}), {0, 2, 1, 3});   // [1, 7, 2, 12]: written transposed
      b.initializer("w5", weights({2, k, 8}, 826));
      b.node("MatMul", {"g", "w5"}, {"p5"});                   // a matrix per batch element
      perm(b.node("Transpose", {"p5"}, {"z"}), {0, 2, 1, 3});  // [1, 7, 2, 8]
      std::unordered_map<std::string, Tensor> feeds;
      uint32_t seed = 827;
      for (const char* x : {"x", "x2", "x3"}) feeds[x] = random_float(DType::Float32, {1, 7, k}, seed++);
      feeds["h"] = random_float(DType::Float32, {1, 7, 2, k}, seed++);
      feeds["g"] = random_float(DType::Float32, {1, 2, 7, k}, seed++);
      PlanReport p = check_model(b.bytes(), feeds);
      EXPECT_EQ(p.fused_nodes, 16);  // every node in a product's kernel
      EXPECT_EQ(p.dispatches, k == 64 ? 6 : 12);  // K = 1000: each product split, then its sum pass
    }
  });
}

// Which loads the tiled kernel takes (no device needed): vec4s for A where K % 4 == 0 and for B where
// N % 4 == 0, both float32 and read row-major in place; the program's name says which (_va, _vb), so a
// plan refreshed for sizes that choose otherwise is planned anew. $ONNXGPU_MATMUL_VEC=0 turns both
// off, "a" / "b" keeps one.
TEST(GpuMatMul, VectorLoadChoice) {
  const webgpu::Limits limits = usual_limits();
  auto name = [&](const std::string& op, Shape a, Shape b, int tb = 0, DType t = DType::Float32, int ta = 0) {
    auto r = kernel_programs(op, std::move(a), std::move(b), tb, limits, t, ta);
    return r.empty() ? std::string() : r[0].first;
  };
  auto has = [](const std::string& s, const char* part) { return s.find(part) != std::string::npos; };
  {
    MatMulVecEnv env(nullptr);
    std::string both = name("MatMul", {5, 64}, {64, 68});
    EXPECT_TRUE(has(both, "MatMul.tiled_va_vb_")) << both;
    std::string batched = name("MatMul", {2, 1, 9, 8}, {3, 8, 12});
    EXPECT_TRUE(has(batched, "_va_vb_")) << batched;
    std::string a_only = name("MatMul", {7, 64}, {64, 70});
    EXPECT_TRUE(has(a_only, "_va_") && !has(a_only, "_vb")) << a_only;
    std::string b_only = name("MatMul", {7, 66}, {66, 68});
    EXPECT_TRUE(has(b_only, "_vb_") && !has(b_only, "_va")) << b_only;
    std::string neither = name("MatMul", {7, 66}, {66, 70});
    EXPECT_TRUE(has(neither, "MatMul.tiled_") && !has(neither, "_va") && !has(neither, "_vb")) << neither;
    std::string tb = name("Gemm", {7, 64}, {68, 64}, 1);
    EXPECT_TRUE(has(tb, "_tb_va_") && !has(tb, "_vb")) << tb;
    std::string ta = name("Gemm", {64, 7}, {64, 68}, 0, DType::Float32, 1);
    EXPECT_TRUE(has(ta, "_ta_vb_") && !has(ta, "_va")) << ta;
    std::string half = name("MatMul", {5, 64}, {64, 68}, 0, DType::Float16);
    EXPECT_TRUE(has(half, "MatMul.tiled_") && !has(half, "_va") && !has(half, "_vb")) << half;
    std::string empty_k = name("MatMul", {5, 0}, {0, 8});  // K = 0: nothing to read as vec4s
    EXPECT_FALSE(has(empty_k, "_va") || has(empty_k, "_vb")) << empty_k;
    auto split = kernel_programs("MatMul", {8, 4096}, {4096, 8}, 0, limits);
    ASSERT_EQ(split.size(), 2u);
    EXPECT_TRUE(has(split[0].first, "_va_vb_split_")) << split[0].first;
    EXPECT_TRUE(has(split[1].first, "MatMul.split_sum")) << split[1].first;
    // Four rows or fewer: the gemv kernels, which choose their own loads.
    std::string four = name("MatMul", {4, 64}, {64, 68});
    EXPECT_TRUE(has(four, "MatMul.gemv_")) << four;
  }
  // The fused MatMul: a Transpose folded into B or A (read through strides: scalar loads for it), the
  // output in parts or written transposed, a bias.
  auto fused = [&](std::vector<webgpu::GpuValueInfo> ins, size_t outputs,
                   const std::vector<std::pair<std::string, std::vector<int64_t>>>& attrs) {
    ir::Node node;
    node.name = "f";
    node.op_type = "MatMul";
    node.domain = webgpu::kFusedDomain;
    for (size_t i = 0; i < ins.size(); ++i) node.inputs.push_back(ins[i].dtype == DType::Undefined ? "" : "in" + std::to_string(i));
    for (size_t i = 0; i < outputs; ++i) node.outputs.push_back("y" + std::to_string(i));
    for (const auto& [key, v] : attrs) {
      ir::Attribute at;
      at.kind = ir::Attribute::Kind::Ints;
      at.ints = v;
      node.attrs[key] = at;
    }
    auto r = kernel_programs(node, ins, limits);
    return r.empty() ? std::string() : r[0].first;
  };
  const DType f = DType::Float32;
  {
    MatMulVecEnv env(nullptr);
    std::string sb = fused({{f, {7, 64}}, {f, {68, 64}}}, 1, {{"perm_b", {1, 0}}});  // B: [68, 64] transposed
    EXPECT_TRUE(has(sb, "_sb") && has(sb, "_va") && !has(sb, "_vb")) << sb;
    std::string sa = fused({{f, {64, 7}}, {f, {64, 68}}}, 1, {{"perm_a", {1, 0}}});
    EXPECT_TRUE(has(sa, "_sa") && has(sa, "_vb") && !has(sa, "_va")) << sa;
    std::string parts = fused({{f, {7, 64}}, {f, {64, 12}}, {f, {12}}}, 2, {{"split", {4, 8}}});
    EXPECT_TRUE(has(parts, "_parts2_va_vb_c_")) << parts;
    std::string sy = fused({{f, {1, 3, 5, 8}}, {f, {1, 3, 8, 4}}}, 1, {{"perm_y", {0, 2, 1, 3}}});
    EXPECT_TRUE(has(sy, "_sy_va_vb_")) << sy;
    std::string res = fused({{f, {7, 64}}, {f, {64, 64}}, {}, {f, {7, 64}}}, 1, {});
    EXPECT_TRUE(has(res, "_va_vb_r_")) << res;
  }
  for (const auto& [value, va, vb] : {std::tuple<const char*, bool, bool>{"0", false, false}, {"a", true, false},
                                      {"b", false, true}, {"1", true, true}}) {
    MatMulVecEnv env(value);
    std::string n = name("MatMul", {5, 64}, {64, 68});
    EXPECT_EQ(has(n, "_va"), va) << "ONNXGPU_MATMUL_VEC=" << value << ": " << n;
    EXPECT_EQ(has(n, "_vb"), vb) << "ONNXGPU_MATMUL_VEC=" << value << ": " << n;
  }
}

// ---- The LayerNormalization prologue: the normalization before a one-row product in the product's kernel --

enum class LnForm {
  Plain,         // MatMul
  Bias,          // MatMul + Add(bias)
  Residual,      // MatMul + Add(bias) + Add(x): the residual, X itself
  SplitQkv,      // MatMul + Add(bias) + Split into q, k, v (GPT-2's c_attn), Y's shape read by a Shape too
  Siblings,      // three MatMuls with their bias Adds reading Y (q, k, v projections)
  Activation,    // MatMul + Add(bias) + Tanh: an activation in the epilogue (GPT-2's fc and GELU)
  TransposedB,   // MatMul by Transpose(W^T) (GPT-2's tied lm head): the rows kernel
};

struct LnCase {
  LnForm form;
  int64_t M, K, N;
  bool shift = true;       // the LayerNormalization's B
  bool also_read = false;  // a Neg reads Y too: no prologue
  std::string name() const {
    const char* f[] = {"plain", "bias", "residual", "split q/k/v", "siblings", "activation", "transposed B"};
    return std::string(f[int(form)]) + " M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N) +
           (shift ? "" : " no B") + (also_read ? " Y also read" : "");
  }
};

// X [1, M, K] -> LayerNormalization (last axis, epsilon 1e-5) -> Y -> the form's product(s). M symbolic
// when `rows_symbolic`.
std::string ln_model(const LnCase& c, bool rows_symbolic = false) {
  testing::ModelBuilder b(17);
  b.input("x", DType::Float32, {1, rows_symbolic ? -1 : c.M, c.K});
  Tensor gamma = random_float(DType::Float32, {c.K}, 400);
  for (float& v : gamma.span<float>()) v = 1.0f + 0.5f * v;
  b.initializer("gamma", gamma);
  std::vector<std::string> ln_in{"x", "gamma"};
  if (c.shift) {
    b.initializer("beta", random_float(DType::Float32, {c.K}, 401));
    ln_in.push_back("beta");
  }
  onnx::NodeProto& ln = b.node("LayerNormalization", ln_in, {"y"}, "ln");
  set_int(ln, "axis", -1);
  set_float(ln, "epsilon", 1e-5f);
  if (c.also_read) {
    b.node("Neg", {"y"}, {"yn"});
    b.output("yn", DType::Float32);
  }
  auto linear = [&](const std::string& id, int64_t n, const std::string& out, bool bias) {
    b.initializer("w" + id, weights({c.K, n}, 410 + uint32_t(id.empty() ? 0 : id[0])));
    b.node("MatMul", {"y", "w" + id}, {bias ? "h" + id : out});
    if (!bias) return;
    b.initializer("c" + id, weights({n}, 420 + uint32_t(id.empty() ? 0 : id[0]), 1.0f));
    b.node("Add", {"h" + id, "c" + id}, {out});
  };
  switch (c.form) {
    case LnForm::Plain: linear("", c.N, "out", false); break;
    case LnForm::Bias: linear("", c.N, "out", true); break;
    case LnForm::Residual:
      linear("", c.K, "hb", true);
      b.node("Add", {"x", "hb"}, {"out"});
      break;
    case LnForm::SplitQkv: {
      linear("", 3 * c.N, "qkv", true);
      testing::ModelBuilder::attr(b.node("Split", {"qkv"}, {"q", "k", "v"}), "axis", 2);
      b.node("Shape", {"y"}, {"ys"});
      for (const char* o : {"q", "k", "v", "ys"}) b.output(o, o[0] == 'y' ? DType::Int64 : DType::Float32);
      break;
    }
    case LnForm::Siblings:
      for (const char* id : {"q", "k", "v"}) {
        linear(id, c.N, id, true);
        b.output(id, DType::Float32);
      }
      break;
    case LnForm::Activation:
      linear("", c.N, "a", true);
      b.node("Tanh", {"a"}, {"out"});
      break;
    case LnForm::TransposedB:
      b.initializer("wt", weights({c.N, c.K}, 430));
      set_ints(b.node("Transpose", {"wt"}, {"w"}), "perm", {1, 0});
      b.node("MatMul", {"y", "w"}, {"out"});
      break;
  }
  if (c.form != LnForm::SplitQkv && c.form != LnForm::Siblings) b.output("out", DType::Float32);
  return b.bytes();
}

// The case against the CPU reference on the GPU (recorded, then replayed: check_model), with the
// prologue and with $ONNXGPU_NORM_PROLOGUE=0; returns the two plans' dispatches (on, off).
std::pair<int, int> run_ln(const LnCase& c) {
  SCOPED_TRACE(c.name());
  Tensor x = random_float(DType::Float32, {1, c.M, c.K}, 440);
  for (float& v : x.span<float>()) v = 3.0f * v + 1.5f;  // a mean and variance away from 0 and 1
  const std::string model = ln_model(c);
  PlanReport on = check_model(model, {{"x", x}});
  ::setenv("ONNXGPU_NORM_PROLOGUE", "0", 1);  // (read when a session is made)
  PlanReport off = check_model(model, {{"x", x}});
  ::unsetenv("ONNXGPU_NORM_PROLOGUE");
  EXPECT_EQ(on.cpu_nodes, 0);
  return {on.dispatches, off.dispatches};
}

// The LayerNormalization before a product of at most 4 rows runs in the product's one-row kernel: one
// dispatch fewer than with $ONNXGPU_NORM_PROLOGUE=0, the same values as the CPU reference's
// normalization then product, recorded and replayed; each epilogue form (bias, residual, Split parts
// with Y's shape also read, siblings, activation, B transposed), the normalization with and without
// B; K 300 and 900 are no multiple of the workgroup (256); M 1 and 3, each with and without the K split
// ($ONNXGPU_GEMV=small=0). M 8 (the tiled kernel) and a Y another node reads run as unfused.
TEST(GpuGemv, LayerNormPrologueMatchesTheCpu) {
  if (skip_gpu()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1";
  const std::vector<LnCase> cases = {
      {LnForm::Bias, 1, 300, 70},
      {LnForm::Bias, 3, 900, 33, false},
      {LnForm::Plain, 1, 300, 70, false},
      {LnForm::Residual, 3, 300, 300},
      {LnForm::SplitQkv, 1, 300, 20},
      {LnForm::SplitQkv, 3, 900, 8},
      {LnForm::Siblings, 1, 300, 17},
      {LnForm::Siblings, 3, 300, 17, false},
      {LnForm::Activation, 3, 300, 70},
      {LnForm::TransposedB, 1, 300, 101},
      {LnForm::TransposedB, 3, 900, 50},
      {LnForm::Bias, 8, 300, 70},                // the tiled kernel: unfused
      {LnForm::SplitQkv, 8, 300, 20},
      {LnForm::Bias, 1, 300, 70, true, true},    // Y also read: unfused
      {LnForm::Siblings, 3, 300, 17, true, true},
  };
  for_both_paths([&](bool) {
    for (const LnCase& c : cases) {
      const auto [on, off] = run_ln(c);
      const bool fused = c.M <= 4 && !c.also_read;
      EXPECT_EQ(on + (fused ? 1 : 0), off) << c.name();
    }
  });
}

// One session, A's rows varying (a prompt, decode steps, a few rows, a prompt again), for the q, k, v form:
// the prologue on every run of at most 4 rows, the normalization and the product's group as unfused on a
// prompt's, each plan recorded, refreshed or replayed as the sizes come; every run against the CPU.
TEST(GpuGemv, LayerNormPrologueFollowsThePromptAndTheSteps) {
  if (skip_gpu()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1";
  const LnCase c{LnForm::SplitQkv, 1, 300, 20};
  const std::string model = ln_model(c, true);
  SessionOptions cpu_options;
  cpu_options.ep = "cpu";
  Session cpu = Session::from_bytes(model, cpu_options);
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;
  Session on = Session::from_bytes(model, o);
  ::setenv("ONNXGPU_NORM_PROLOGUE", "0", 1);
  Session off = Session::from_bytes(model, o);
  ::unsetenv("ONNXGPU_NORM_PROLOGUE");
  const std::vector<int64_t> rows = {7, 1, 1, 3, 7, 1};
  for (size_t r = 0; r < rows.size(); ++r) {
    SCOPED_TRACE("rows " + std::to_string(rows[r]) + " run " + std::to_string(r + 1));
    Tensor x = random_float(DType::Float32, {1, rows[r], c.K}, uint32_t(450 + r));
    for (float& v : x.span<float>()) v = 3.0f * v + 1.5f;
    std::vector<Tensor> want = cpu.run({{"x", x}}), got = on.run({{"x", x}}), got_off = off.run({{"x", x}});
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      auto cmp = runtime::compare_tensors(got[k], want[k], {1e-4, 1e-4});
      EXPECT_TRUE(cmp.passed) << "output " << k << ": " << cmp.message;
      cmp = runtime::compare_tensors(got_off[k], want[k], {1e-4, 1e-4});
      EXPECT_TRUE(cmp.passed) << "ONNXGPU_NORM_PROLOGUE=0: output " << k << ": " << cmp.message;
    }
    EXPECT_EQ(on.last_plan().cpu_nodes, 0);
    if (r > 0 && rows[r] == rows[r - 1]) {
      EXPECT_TRUE(on.last_plan().replayed);
    }
    EXPECT_EQ(on.last_plan().dispatches + (rows[r] <= 4 ? 1 : 0), off.last_plan().dispatches);
  }
}

// -------------------------------------------------------------------------------------- Normalizations

void check_layer_norm(DType t, const Shape& x, int64_t axis, bool bias, bool stats, uint32_t seed,
                      const Shape* scale_shape = nullptr) {
  SCOPED_TRACE("LayerNormalization " + shape_str(x) + " axis " + std::to_string(axis));
  int64_t a = axis < 0 ? axis + int64_t(x.size()) : axis;
  Shape ps = scale_shape ? *scale_shape : Shape(x.begin() + a, x.end());
  Tensor xv = random_float(DType::Float32, x, seed);
  for (auto& v : xv.span<float>()) v = v * 3.0f + 1.5f;  // a mean and variance away from 0 / 1
  std::vector<Operand> ins{{"X", t == DType::Float32 ? xv : xv.cast(t)}, {"Scale", random_float(t, ps, seed + 1)}};
  if (bias) ins.push_back({"B", random_float(t, ps, seed + 2), true});
  std::vector<std::string> outs{"Y"};
  if (stats) outs = {"Y", "Mean", "InvStdDev"};
  std::string model = one_node_model("LayerNormalization", ins, outs, 17, [&](onnx::NodeProto& n) {
    set_int(n, "axis", axis);
    set_float(n, "epsilon", 1e-3f);
  });
  double tol = t == DType::Float16 || t == DType::BFloat16 ? 3e-2 : 1e-4;
  check_gpu_vs_cpu(model, ins, tol, tol);
}

TEST(GpuLayerNorm, MatchesCpu) {
  check_layer_norm(DType::Float32, {2, 3, 65}, -1, true, true, 80);
  check_layer_norm(DType::Float32, {2, 3, 65}, 1, true, true, 81);
  check_layer_norm(DType::Float32, {4, 768}, -1, true, false, 82);
  check_layer_norm(DType::Float32, {3, 1000}, 1, false, true, 83);
  check_layer_norm(DType::Float32, {5, 7}, 0, true, true, 84);
  check_layer_norm(DType::Float16, {3, 5, 33}, -1, true, true, 85);
  check_layer_norm(DType::Float64, {3, 5, 33}, -2, true, true, 86);
  Shape last{4}, one{1};
  check_layer_norm(DType::Float32, {2, 3, 4}, 1, true, true, 87, &last);  // scale broadcast over dim 1
  check_layer_norm(DType::Float32, {2, 3, 4}, -1, true, false, 88, &one);
}

// The row kernels take their workgroup from the row's length (row_norm::workgroup): 32 invocations for
// rows of up to 128 (ConvNeXt's 96 channels), 64, 128, then 256, which read rows past 1024 in a second
// loop; and a workgroup forced smaller than the row ($ONNXGPU_ROW_WG) reads it in that loop too.
TEST(GpuLayerNorm, WorkgroupsByRowLength) {
  EXPECT_EQ(webgpu::row_norm::workgroup(usual_limits(), 96), 32u);
  EXPECT_EQ(webgpu::row_norm::workgroup(usual_limits(), 129), 64u);
  EXPECT_EQ(webgpu::row_norm::workgroup(usual_limits(), 768), 256u);
  EXPECT_EQ(webgpu::row_norm::workgroup(usual_limits(), 5000), 256u);
  EXPECT_EQ(webgpu::row_norm::workgroup(usual_limits(), 0), 256u);
  check_layer_norm(DType::Float32, {7, 96}, -1, true, true, 120);
  check_layer_norm(DType::Float32, {3, 129}, -1, true, false, 121);
  check_layer_norm(DType::Float32, {2, 1500}, -1, true, true, 122);
  ScopedEnv small("ONNXGPU_ROW_WG", "32");
  EXPECT_EQ(webgpu::row_norm::workgroup(usual_limits(), 768), 32u);
  check_layer_norm(DType::Float32, {3, 700}, -1, true, true, 123);
}

TEST(GpuBatchNorm, Inference) {
  for (auto [x, opset] : std::vector<std::pair<Shape, int>>{{{2, 3, 4, 5}, 15}, {{3, 4}, 15}, {{2, 5, 7}, 9}}) {
    SCOPED_TRACE("BatchNormalization " + shape_str(x));
    Shape c{x[1]};
    Tensor var = random_float(DType::Float32, c, 93);
    for (auto& v : var.span<float>()) v = v * v + 0.1f;
    std::vector<Operand> ins{{"X", random_float(DType::Float32, x, 90)}, {"scale", random_float(DType::Float32, c, 91)},
                             {"B", random_float(DType::Float32, c, 92)}, {"mean", random_float(DType::Float32, c, 94)},
                             {"var", var}};
    std::string model = one_node_model("BatchNormalization", ins, {"Y"}, opset,
                                       [&](onnx::NodeProto& n) { set_float(n, "epsilon", 1e-2f); });
    check_gpu_vs_cpu(model, ins);
  }
}

TEST(GpuInstanceNorm, MatchesCpu) {
  for (auto x : std::vector<Shape>{{2, 3, 4, 5}, {1, 4, 300}, {2, 2, 1}}) {
    SCOPED_TRACE("InstanceNormalization " + shape_str(x));
    Shape c{x[1]};
    std::vector<Operand> ins{{"X", random_float(DType::Float32, x, 100)}, {"scale", random_float(DType::Float32, c, 101)},
                             {"B", random_float(DType::Float32, c, 102)}};
    std::string model = one_node_model("InstanceNormalization", ins, {"Y"}, 6,
                                       [&](onnx::NodeProto& n) { set_float(n, "epsilon", 1e-3f); });
    check_gpu_vs_cpu(model, ins);
  }
}

}  // namespace
}  // namespace onnxgpu
