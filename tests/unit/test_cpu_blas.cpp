// The CPU kernels' library path (src/cpu/blas.h: oneDNN sgemm) against the reference kernels: every
// case runs the same node twice, library on and off, and compares. Odd shapes, transposes, Gemm's
// alpha / beta / broadcast C, batch-broadcast MatMul, grouped / strided / dilated / padded Conv.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/blas.h"
#include "cpu/kernel.h"
#include "ir_attributes.h"

using namespace onnxgpu;
using namespace onnxgpu::testing;

namespace {


ir::Node make_node(const std::string& op, size_t n_in, std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = "n";
  n.op_type = op;
  for (size_t i = 0; i < n_in; ++i) n.inputs.push_back("x" + std::to_string(i));
  n.outputs.push_back("y");
  n.attrs = std::move(attrs);
  return n;
}

Tensor run(const ir::Node& node, std::vector<const Tensor*> inputs) {
  const cpu::Kernel* k = cpu::registry().find(node.op_type);
  if (!k) throw std::runtime_error("no kernel for " + node.op_type);
  cpu::KernelContext ctx(node, 17, std::move(inputs));
  return (*k)(ctx).at(0);
}

// Uniform in [-1, 1): values whose products round, so the two paths differ by float rounding only.
Tensor random_tensor(DType dt, Shape shape, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> v(size_t(shape_numel(shape)));
  for (auto& x : v) x = d(g);
  if (dt == DType::Float64) return Tensor::from_vector<double>(shape, v);
  return Tensor::from_vector<float>(shape, std::vector<float>(v.begin(), v.end()));
}

// Sets the library path on or off for the life of the object (restores the previous setting).
struct LibraryPath {
  bool before = cpu::blas::enabled();
  explicit LibraryPath(bool on) { cpu::blas::set_enabled(on); }
  ~LibraryPath() { cpu::blas::set_enabled(before); }
};

// The node on both paths: same shape and dtype, values within float32 rounding of a sum of K terms.
void expect_paths_agree(const ir::Node& node, const std::vector<const Tensor*>& inputs, double tol = 2e-5) {
  Tensor ref, lib;
  {
    LibraryPath p(false);
    ref = run(node, inputs);
  }
  {
    LibraryPath p(true);
    lib = run(node, inputs);
  }
  ASSERT_EQ(lib.dtype(), ref.dtype());
  ASSERT_EQ(lib.shape(), ref.shape());
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double r = ref.double_at(i), l = lib.double_at(i);
    ASSERT_NEAR(l, r, tol * (1.0 + std::fabs(r))) << node.op_type << " element " << i;
  }
}

}  // namespace

TEST(CpuBlasMatMul, OddShapesAndBatchBroadcast) {
  struct Case { Shape a, b; };
  const Case cases[] = {
      {{3, 5}, {5, 7}},              // odd 2-D
      {{37, 129}, {129, 65}},        // larger than a register tile, odd
      {{2, 3, 4, 5}, {5, 6}},        // batch folded into the rows of one product (shared B)
      {{5, 6}, {2, 3, 6, 4}},        // shared A, per-batch B
      {{2, 1, 3, 4}, {3, 4, 2}},     // batch broadcast both ways
      {{4, 1, 2, 3}, {1, 5, 3, 2}},  // broadcast batch, A not packed in output order
      {{7}, {7, 3}},                 // 1-D x 2-D
      {{2, 4, 7}, {7}},              // N-D x 1-D
      {{9}, {9}},                    // dot product
      {{1, 16, 96}, {96, 288}},      // GPT-2 (width 96) projections
      {{3, 0}, {0, 4}},              // K = 0: zeros
      {{0, 3}, {3, 4}},              // M = 0: empty
  };
  unsigned seed = 1;
  for (const Case& c : cases) {
    Tensor A = random_tensor(DType::Float32, c.a, seed++), B = random_tensor(DType::Float32, c.b, seed++);
    SCOPED_TRACE(A.describe() + " x " + B.describe());
    expect_paths_agree(make_node("MatMul", 2), {&A, &B});
  }
}

TEST(CpuBlasMatMul, KZeroGivesZerosOnTheLibraryPath) {
  LibraryPath p(true);
  Tensor A(DType::Float32, {3, 0}), B(DType::Float32, {0, 4});
  Tensor y = run(make_node("MatMul", 2), {&A, &B});
  ASSERT_EQ(y.shape(), (Shape{3, 4}));
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data<float>()[i], 0.0f);
}

TEST(CpuBlasMatMul, ExactOnSmallIntegerValuedFloats) {
  // Sums of small integers are exact in float32: the library must give the reference's bits.
  LibraryPath p(true);
  Tensor A = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor B = Tensor::from_vector<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor y = run(make_node("MatMul", 2), {&A, &B});
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 4), (std::vector<float>{58, 64, 139, 154}));
}

TEST(CpuBlasMatMul, OtherTypesStayOnTheReference) {
  // float64 and the integers never go through the library: the same result either way, to the bit.
  Tensor A = random_tensor(DType::Float64, {5, 7}, 11), B = random_tensor(DType::Float64, {7, 3}, 12);
  Tensor ref, lib;
  {
    LibraryPath p(false);
    ref = run(make_node("MatMul", 2), {&A, &B});
  }
  {
    LibraryPath p(true);
    lib = run(make_node("MatMul", 2), {&A, &B});
  }
  for (int64_t i = 0; i < ref.numel(); ++i) EXPECT_EQ(ref.data<double>()[i], lib.data<double>()[i]);
  Tensor I = Tensor::from_vector<int64_t>({2, 2}, {int64_t(1) << 40, 3, -5, 7});
  Tensor J = Tensor::from_vector<int64_t>({2, 2}, {1 << 20, 2, 3, -4});
  LibraryPath p(true);
  Tensor y = run(make_node("MatMul", 2), {&I, &J});
  EXPECT_EQ(y.data<int64_t>()[0], (int64_t(1) << 60) + 9);
}

TEST(CpuBlasMatMul, ThreadCountsAgreeAndRepeatExactly) {
  Tensor A = random_tensor(DType::Float32, {1, 128, 96}, 21), B = random_tensor(DType::Float32, {96, 384}, 22);
  LibraryPath p(true);
  int before = cpu::blas::num_threads();
  cpu::blas::set_num_threads(1);
  EXPECT_EQ(cpu::blas::num_threads(), 1);
  Tensor one = run(make_node("MatMul", 2), {&A, &B});
  cpu::blas::set_num_threads(2);
  Tensor two = run(make_node("MatMul", 2), {&A, &B});
  Tensor two_again = run(make_node("MatMul", 2), {&A, &B});
  cpu::blas::set_num_threads(0);
  EXPECT_GE(cpu::blas::num_threads(), 1);  // the default: the number of cores
  cpu::blas::set_num_threads(before == cpu::blas::num_threads() ? 0 : before);
  for (int64_t i = 0; i < one.numel(); ++i) {
    EXPECT_NEAR(one.data<float>()[i], two.data<float>()[i], 1e-5);
    EXPECT_EQ(two.data<float>()[i], two_again.data<float>()[i]);  // a fixed thread count repeats exactly
  }
}

TEST(CpuBlasGemm, TransposesAlphaBetaAndBroadcastC) {
  const int64_t M = 5, K = 7, N = 3;
  unsigned seed = 100;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      Tensor A = random_tensor(DType::Float32, ta ? Shape{K, M} : Shape{M, K}, seed++);
      Tensor B = random_tensor(DType::Float32, tb ? Shape{N, K} : Shape{K, N}, seed++);
      const Shape c_shapes[] = {{}, {1}, {N}, {M, 1}, {1, N}, {M, N}};
      for (const Shape& cs : c_shapes) {
        Tensor C = random_tensor(DType::Float32, cs, seed++);
        SCOPED_TRACE("transA " + std::to_string(ta) + " transB " + std::to_string(tb) + " C " + C.describe());
        auto attrs = std::map<std::string, ir::Attribute>{
            {"transA", int1(ta)}, {"transB", int1(tb)}, {"alpha", flt(0.75f)}, {"beta", flt(-1.5f)}};
        expect_paths_agree(make_node("Gemm", 3, attrs), {&A, &B, &C});
      }
      SCOPED_TRACE("no C");
      expect_paths_agree(make_node("Gemm", 2, {{"transA", int1(ta)}, {"transB", int1(tb)}}), {&A, &B});
    }
}

TEST(CpuBlasGemm, ZeroAlphaOrBetaKeepNaNPropagation) {
  // ONNX multiplies by alpha and beta: 0 * inf is NaN. A BLAS skips the term, so these stay on the reference.
  LibraryPath p(true);
  Tensor A = Tensor::from_vector<float>({1, 2}, {INFINITY, 1});
  Tensor B = Tensor::from_vector<float>({2, 1}, {1, 1});
  Tensor C = Tensor::from_vector<float>({1}, {NAN});
  Tensor y = run(make_node("Gemm", 3, {{"beta", flt(0.0f)}}), {&A, &B, &C});
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  Tensor z = run(make_node("Gemm", 2, {{"alpha", flt(0.0f)}}), {&A, &B});
  EXPECT_TRUE(std::isnan(z.data<float>()[0]));
}

TEST(CpuBlasConv, GroupedStridedDilatedPadded) {
  struct Case {
    Shape x, w;
    std::map<std::string, ir::Attribute> attrs;
    bool bias;
  };
  const Case cases[] = {
      {{1, 3, 9, 11}, {4, 3, 3, 3}, {}, true},
      {{2, 4, 10, 9}, {6, 2, 3, 2}, {{"group", int1(2)}, {"pads", ints({1, 0, 2, 1})}}, true},
      {{1, 6, 12, 12}, {6, 1, 3, 3}, {{"group", int1(6)}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}, false},
      {{1, 2, 13, 14}, {3, 2, 3, 3}, {{"dilations", ints({2, 3})}, {"strides", ints({1, 2})}}, true},
      {{1, 3, 8, 7}, {5, 3, 4, 3}, {{"auto_pad", str("SAME_UPPER")}}, true},
      {{1, 3, 8, 7}, {5, 3, 2, 2}, {{"auto_pad", str("SAME_LOWER")}, {"strides", ints({2, 2})}}, false},
      {{2, 8, 5, 6}, {4, 8, 1, 1}, {}, true},                                   // 1x1: the input is the columns
      {{1, 8, 5, 6}, {4, 8, 1, 1}, {{"strides", ints({2, 2})}}, false},         // 1x1 strided: im2col
      {{2, 3, 17}, {4, 3, 5}, {{"pads", ints({2, 1})}, {"strides", ints({3})}}, true},   // 1-D
      {{1, 2, 5, 6, 4}, {3, 2, 3, 2, 2}, {{"pads", ints({1, 0, 1, 1, 1, 0})}}, true},    // 3-D
      {{1, 64, 14, 14}, {32, 64, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true},        // a CNN layer
  };
  unsigned seed = 200;
  for (const Case& c : cases) {
    Tensor X = random_tensor(DType::Float32, c.x, seed++), W = random_tensor(DType::Float32, c.w, seed++);
    Tensor B = random_tensor(DType::Float32, {c.w[0]}, seed++);
    SCOPED_TRACE(X.describe() + " conv " + W.describe());
    if (c.bias) expect_paths_agree(make_node("Conv", 3, c.attrs), {&X, &W, &B});
    else expect_paths_agree(make_node("Conv", 2, c.attrs), {&X, &W});
  }
}

TEST(CpuBlasConv, PaddingMultipliesTheWeights) {
  // Padding is zeros that multiply the weights: an infinite weight over padding gives NaN on both paths.
  Tensor X = Tensor::from_vector<float>({1, 1, 2}, {1, 2});
  Tensor W = Tensor::from_vector<float>({1, 1, 2}, {INFINITY, 1});
  LibraryPath p(true);
  Tensor y = run(make_node("Conv", 2, {{"pads", ints({1, 0})}}), {&X, &W});
  ASSERT_EQ(y.shape(), (Shape{1, 1, 2}));
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_EQ(y.data<float>()[1], INFINITY);
}
