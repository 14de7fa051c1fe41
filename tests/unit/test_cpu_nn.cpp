// CPU reference kernels of the NN family: MatMul, Gemm, Einsum, Det, Conv, pools, normalizations, Resize.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/kernel.h"
#include "ir_attributes.h"

using namespace onnxgpu;
using namespace onnxgpu::testing;

namespace {


ir::Node make_node(const std::string& op, size_t n_in, size_t n_out, std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = "n";
  n.op_type = op;
  for (size_t i = 0; i < n_in; ++i) n.inputs.push_back("x" + std::to_string(i));
  for (size_t i = 0; i < n_out; ++i) n.outputs.push_back("y" + std::to_string(i));
  n.attrs = std::move(attrs);
  return n;
}

std::vector<Tensor> run(const ir::Node& node, std::vector<const Tensor*> inputs, int64_t opset = 17) {
  const cpu::Kernel* k = cpu::registry().find(node.op_type);
  if (!k) throw std::runtime_error("no kernel for " + node.op_type);
  cpu::KernelContext ctx(node, opset, std::move(inputs));
  return (*k)(ctx);
}

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> d(-8, 8);
  std::vector<float> v(n);
  for (auto& x : v) x = float(d(g)) / 4;  // exact in float
  return v;
}

template <class T>
std::vector<T> values(const Tensor& t) {
  auto s = t.span<T>();
  return {s.begin(), s.end()};
}

}  // namespace

TEST(CpuNnMatMul, Broadcast3Dx2D) {
  Tensor A = Tensor::from_vector<float>({2, 3, 4}, random_values(24, 1));
  Tensor B = Tensor::from_vector<float>({4, 5}, random_values(20, 2));
  auto y = run(make_node("MatMul", 2, 1), {&A, &B});
  ASSERT_EQ(y[0].shape(), (Shape{2, 3, 5}));
  const float* a = A.data<float>();
  const float* b = B.data<float>();
  for (int bt = 0; bt < 2; ++bt)
    for (int m = 0; m < 3; ++m)
      for (int n = 0; n < 5; ++n) {
        float s = 0;
        for (int k = 0; k < 4; ++k) s += a[bt * 12 + m * 4 + k] * b[k * 5 + n];
        EXPECT_EQ(y[0].data<float>()[bt * 15 + m * 5 + n], s);
      }
  // Batch broadcast both ways: [2,1,3,4] x [3,4,2] -> [2,3,3,2]
  Tensor C = Tensor::from_vector<float>({2, 1, 3, 4}, random_values(24, 3));
  Tensor D = Tensor::from_vector<float>({3, 4, 2}, random_values(24, 4));
  auto z = run(make_node("MatMul", 2, 1), {&C, &D});
  ASSERT_EQ(z[0].shape(), (Shape{2, 3, 3, 2}));
  float s = 0;  // element [1, 2, 0, 1] = C[1,0,0,:] . D[2,:,1]
  for (int k = 0; k < 4; ++k) s += C.data<float>()[12 + k] * D.data<float>()[16 + k * 2 + 1];
  EXPECT_EQ(z[0].data<float>()[1 * 18 + 2 * 6 + 0 * 2 + 1], s);
}

TEST(CpuNnMatMul, OneDimensionalOperands) {
  Tensor v = Tensor::from_vector<float>({3}, {1, 2, 3});
  Tensor M = Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor Mt = Tensor::from_vector<float>({2, 3}, {1, 3, 5, 2, 4, 6});
  auto vm = run(make_node("MatMul", 2, 1), {&v, &M});
  EXPECT_EQ(vm[0].shape(), (Shape{2}));
  EXPECT_EQ(values<float>(vm[0]), (std::vector<float>{22, 28}));
  auto mv = run(make_node("MatMul", 2, 1), {&Mt, &v});
  EXPECT_EQ(mv[0].shape(), (Shape{2}));
  EXPECT_EQ(values<float>(mv[0]), (std::vector<float>{22, 28}));
  auto vv = run(make_node("MatMul", 2, 1), {&v, &v});
  EXPECT_EQ(vv[0].shape(), (Shape{}));
  EXPECT_EQ(vv[0].data<float>()[0], 14);
  Tensor B3 = Tensor::from_vector<float>({2, 3, 2}, {1, 2, 3, 4, 5, 6, 0, 1, 0, 1, 0, 1});
  auto vb = run(make_node("MatMul", 2, 1), {&v, &B3});
  EXPECT_EQ(vb[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(vb[0]), (std::vector<float>{22, 28, 0, 6}));
  Tensor bad = Tensor::from_vector<float>({2}, {1, 2});
  EXPECT_THROW(run(make_node("MatMul", 2, 1), {&v, &bad}), InvalidArgument);
}

TEST(CpuNnMatMul, Int64IsExact) {
  int64_t big = (int64_t(1) << 53) + 1;  // not representable in double
  Tensor A = Tensor::from_vector<int64_t>({2, 2}, {big, 1, -big, 7});
  Tensor B = Tensor::from_vector<int64_t>({2, 1}, {3, 5});
  auto y = run(make_node("MatMul", 2, 1), {&A, &B});
  EXPECT_EQ(values<int64_t>(y[0]), (std::vector<int64_t>{3 * big + 5, -3 * big + 35}));
  // Wrap-around like numpy int64.
  Tensor C = Tensor::from_vector<int64_t>({1, 1}, {INT64_MAX});
  Tensor D = Tensor::from_vector<int64_t>({1, 1}, {2});
  EXPECT_EQ(run(make_node("MatMul", 2, 1), {&C, &D})[0].data<int64_t>()[0], -2);
  Tensor U = Tensor::from_vector<uint64_t>({1, 2}, {UINT64_MAX, 1});
  Tensor V = Tensor::from_vector<uint64_t>({2}, {1, 1});
  EXPECT_EQ(run(make_node("MatMul", 2, 1), {&U, &V})[0].data<uint64_t>()[0], 0u);
  Tensor I = Tensor::from_vector<int32_t>({1, 2}, {-3, 4});
  Tensor J = Tensor::from_vector<int32_t>({2, 1}, {5, 6});
  EXPECT_EQ(run(make_node("MatMul", 2, 1), {&I, &J})[0].data<int32_t>()[0], 9);
}

TEST(CpuNnGemm, TransposesAlphaBetaAndBroadcastC) {
  // A^T is [2,3], B^T is [3,2].
  Tensor A = Tensor::from_vector<float>({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor B = Tensor::from_vector<float>({2, 3}, {1, 0, 1, 0, 1, 1});
  Tensor C = Tensor::from_vector<float>({2}, {10, 20});  // row vector broadcast
  auto y = run(make_node("Gemm", 3, 1, {{"transA", int1(1)}, {"transB", int1(1)}, {"alpha", flt(2)}, {"beta", flt(0.5)}}),
               {&A, &B, &C});
  // A^T B^T = [[1+3, 2+3], [4+6, 5+6]] = [[4,5],[10,11]]
  EXPECT_EQ(y[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{13, 20, 25, 32}));
  Tensor Cc = Tensor::from_vector<float>({2, 1}, {1, 2});  // column vector
  auto z = run(make_node("Gemm", 3, 1, {{"transA", int1(1)}, {"transB", int1(1)}}), {&A, &B, &Cc});
  EXPECT_EQ(values<float>(z[0]), (std::vector<float>{5, 6, 12, 13}));
  auto nc = run(make_node("Gemm", 2, 1, {{"transA", int1(1)}, {"transB", int1(1)}}), {&A, &B});
  EXPECT_EQ(values<float>(nc[0]), (std::vector<float>{4, 5, 10, 11}));
  Tensor badC = Tensor::from_vector<float>({3}, {1, 2, 3});
  EXPECT_THROW(run(make_node("Gemm", 3, 1, {{"transA", int1(1)}, {"transB", int1(1)}}), {&A, &B, &badC}),
               InvalidArgument);
  Tensor Ai = Tensor::from_vector<int64_t>({1, 1}, {(int64_t(1) << 60)});
  Tensor Bi = Tensor::from_vector<int64_t>({1, 1}, {3});
  Tensor Ci = Tensor::from_vector<int64_t>({1}, {1});
  EXPECT_EQ(run(make_node("Gemm", 3, 1), {&Ai, &Bi, &Ci})[0].data<int64_t>()[0], 3 * (int64_t(1) << 60) + 1);
}

TEST(CpuNnEinsum, CommonForms) {
  Tensor A = Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor B = Tensor::from_vector<double>({3, 2}, {1, 0, 0, 1, 1, 1});
  auto mm = run(make_node("Einsum", 2, 1, {{"equation", str("ij,jk->ik")}}), {&A, &B});
  EXPECT_EQ(values<double>(mm[0]), (std::vector<double>{4, 5, 10, 11}));
  auto implicit = run(make_node("Einsum", 2, 1, {{"equation", str("ij,jk")}}), {&A, &B});
  EXPECT_EQ(values<double>(implicit[0]), (std::vector<double>{4, 5, 10, 11}));
  auto tr = run(make_node("Einsum", 1, 1, {{"equation", str("ij->ji")}}), {&A});
  EXPECT_EQ(tr[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values<double>(tr[0]), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  Tensor S = Tensor::from_vector<double>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto diag = run(make_node("Einsum", 1, 1, {{"equation", str("...ii->...i")}}), {&S});
  EXPECT_EQ(values<double>(diag[0]), (std::vector<double>{1, 4, 5, 8}));
  auto trace = run(make_node("Einsum", 1, 1, {{"equation", str("bii")}}), {&S});  // implicit: b
  EXPECT_EQ(values<double>(trace[0]), (std::vector<double>{5, 13}));
  Tensor I = Tensor::from_vector<int64_t>({3}, {1, 2, 3});
  auto dot = run(make_node("Einsum", 2, 1, {{"equation", str("i,i")}}), {&I, &I});
  EXPECT_EQ(dot[0].shape(), (Shape{}));
  EXPECT_EQ(dot[0].data<int64_t>()[0], 14);
  EXPECT_THROW(run(make_node("Einsum", 2, 1, {{"equation", str("ij,jk->ik")}}), {&A, &A}), InvalidArgument);
}

TEST(CpuNnDet, BatchedDeterminants) {
  Tensor X = Tensor::from_vector<float>({2, 2, 2}, {0, 1, 2, 3, 4, 2, 1, 3});
  auto y = run(make_node("Det", 1, 1), {&X});
  EXPECT_EQ(y[0].shape(), (Shape{2}));
  EXPECT_FLOAT_EQ(y[0].data<float>()[0], -2);
  EXPECT_FLOAT_EQ(y[0].data<float>()[1], 10);
  Tensor Z = Tensor::from_vector<double>({3, 3}, {2, -1, 0, -1, 2, -1, 0, -1, 2});
  EXPECT_NEAR(run(make_node("Det", 1, 1), {&Z})[0].data<double>()[0], 4, 1e-12);
}

namespace {
// Naive Conv for checking: X [N,C,H,W], W [M,C/g,kh,kw].
std::vector<float> naive_conv2d(const Tensor& X, const Tensor& W, const std::vector<float>& bias, int64_t group,
                                std::array<int64_t, 2> s, std::array<int64_t, 4> pads, std::array<int64_t, 2> dil,
                                Shape& out) {
  int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), Wd = X.dim(3);
  int64_t M = W.dim(0), Cg = W.dim(1), KH = W.dim(2), KW = W.dim(3);
  int64_t OH = (H + pads[0] + pads[2] - ((KH - 1) * dil[0] + 1)) / s[0] + 1;
  int64_t OW = (Wd + pads[1] + pads[3] - ((KW - 1) * dil[1] + 1)) / s[1] + 1;
  out = {N, M, OH, OW};
  std::vector<float> y(size_t(N * M * OH * OW));
  const float* x = X.data<float>();
  const float* w = W.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      int64_t g = m / (M / group);
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias.empty() ? 0 : bias[size_t(m)];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t ih = oh * s[0] - pads[0] + kh * dil[0], iw = ow * s[1] - pads[1] + kw * dil[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= Wd) continue;
                acc += double(x[((n * C + g * Cg + c) * H + ih) * Wd + iw]) * w[((m * Cg + c) * KH + kh) * KW + kw];
              }
          y[size_t(((n * M + m) * OH + oh) * OW + ow)] = float(acc);
        }
    }
  return y;
}
}  // namespace

TEST(CpuNnConv, Conv2DPadsStridesGroupsMatchNaiveLoop) {
  Tensor X = Tensor::from_vector<float>({2, 4, 7, 6}, random_values(2 * 4 * 7 * 6, 10));
  Tensor W = Tensor::from_vector<float>({6, 2, 3, 2}, random_values(6 * 2 * 3 * 2, 11));
  std::vector<float> bias = {0.5f, -1, 2, 0.25f, 0, 1};
  Tensor B = Tensor::from_vector<float>({6}, bias);
  auto node = make_node("Conv", 3, 1,
                        {{"group", int1(2)}, {"strides", ints({2, 1})}, {"pads", ints({1, 0, 2, 1})},
                         {"dilations", ints({1, 2})}, {"kernel_shape", ints({3, 2})}});
  auto y = run(node, {&X, &W, &B});
  Shape want_shape;
  std::vector<float> want = naive_conv2d(X, W, bias, 2, {2, 1}, {1, 0, 2, 1}, {1, 2}, want_shape);
  ASSERT_EQ(y[0].shape(), want_shape);
  EXPECT_EQ(values<float>(y[0]), want);
  // No bias, auto_pad SAME_UPPER keeps ceil(in / stride).
  auto same = run(make_node("Conv", 2, 1, {{"group", int1(2)}, {"strides", ints({2, 2})}, {"auto_pad", str("SAME_UPPER")}}),
                  {&X, &W});
  EXPECT_EQ(same[0].shape(), (Shape{2, 6, 4, 3}));
  // A channel mismatch names both shapes.
  Tensor W3 = Tensor::from_vector<float>({6, 3, 3, 2}, random_values(6 * 3 * 3 * 2, 12));
  try {
    run(make_node("Conv", 2, 1, {{"group", int1(2)}}), {&X, &W3});
    FAIL() << "expected an error";
  } catch (const InvalidArgument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[2,4,7,6]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[6,3,3,2]"), std::string::npos) << msg;
  }
}

TEST(CpuNnConv, ConvTransposeUndoesStride) {
  // 1-D: x = [0,1,2], w = ones(1,2,3) -> each output channel = [0,1,3,3,2]
  Tensor X = Tensor::from_vector<float>({1, 1, 3}, {0, 1, 2});
  Tensor W = Tensor::from_vector<float>({1, 2, 3}, {1, 1, 1, 1, 1, 1});
  auto y = run(make_node("ConvTranspose", 2, 1), {&X, &W});
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 5}));
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{0, 1, 3, 3, 2, 0, 1, 3, 3, 2}));
  Tensor X2 = Tensor::from_vector<float>({1, 1, 2}, {1, 2});
  Tensor W2 = Tensor::from_vector<float>({1, 1, 2}, {1, 10});
  auto s = run(make_node("ConvTranspose", 2, 1, {{"strides", ints({2})}, {"output_padding", ints({1})}}), {&X2, &W2});
  EXPECT_EQ(values<float>(s[0]), (std::vector<float>{1, 10, 2, 20, 0}));
}

TEST(CpuNnPool, MaxPoolIndices) {
  Tensor X = Tensor::from_vector<float>({1, 2, 3, 3}, {1, 9, 2, 3, 4, 5, 8, 6, 7,   // channel 0
                                                       0, 0, 0, 0, -1, 3, 2, 0, 0});  // channel 1
  auto node = make_node("MaxPool", 1, 2, {{"kernel_shape", ints({2, 2})}, {"strides", ints({1, 1})}});
  auto y = run(node, {&X});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{9, 9, 8, 7, 0, 3, 2, 3}));
  // Row-major flat indices including the channel offset; ties take the first element.
  EXPECT_EQ(values<int64_t>(y[1]), (std::vector<int64_t>{1, 1, 6, 8, 9, 14, 15, 14}));
  node.attrs["storage_order"] = int1(1);
  auto c = run(node, {&X});
  // Column-major: index = h + w * H within the channel.
  EXPECT_EQ(values<int64_t>(c[1]), (std::vector<int64_t>{3, 3, 2, 8, 9, 16, 11, 16}));
  // Pads are never selected; ceil_mode adds a partial window.
  auto p = run(make_node("MaxPool", 1, 2, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})},
                                           {"ceil_mode", int1(1)}}), {&X});
  EXPECT_EQ(p[0].shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(values<float>(p[0]), (std::vector<float>{9, 5, 8, 7, 0, 3, 2, 0}));
  EXPECT_EQ(values<int64_t>(p[1]), (std::vector<int64_t>{1, 5, 6, 8, 9, 14, 15, 17}));
}

TEST(CpuNnPool, AveragePoolCountIncludePad) {
  Tensor X = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto ex = run(make_node("AveragePool", 1, 1, {{"kernel_shape", ints({2, 2})}, {"pads", ints({1, 1, 0, 0})}}), {&X});
  EXPECT_EQ(values<float>(ex[0]), (std::vector<float>{1, 1.5f, 2, 2.5f}));
  auto in = run(make_node("AveragePool", 1, 1, {{"kernel_shape", ints({2, 2})}, {"pads", ints({1, 1, 0, 0})},
                                                {"count_include_pad", int1(1)}}), {&X});
  EXPECT_EQ(values<float>(in[0]), (std::vector<float>{0.25f, 0.75f, 1, 2.5f}));
  auto g = run(make_node("GlobalAveragePool", 1, 1), {&X});
  EXPECT_EQ(g[0].shape(), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(g[0].data<float>()[0], 2.5f);
}

TEST(CpuNnNorm, LayerNormalization) {
  Tensor X = Tensor::from_vector<float>({2, 2, 2}, {1, 2, 3, 4, -1, -1, 5, 5});
  Tensor S = Tensor::from_vector<float>({2}, {1, 2});
  Tensor B = Tensor::from_vector<float>({2}, {0, 1});
  auto y = run(make_node("LayerNormalization", 3, 3, {{"epsilon", flt(0)}}), {&X, &S, &B});
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[1].shape(), (Shape{2, 2, 1}));
  EXPECT_EQ(values<float>(y[1]), (std::vector<float>{1.5f, 3.5f, -1, 5}));
  std::vector<float> want = {-1, 3, -1, 3, NAN, NAN, NAN, NAN};  // zero variance, eps 0: 0/0
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[0].data<float>()[i], want[size_t(i)]);
  EXPECT_FLOAT_EQ(y[2].data<float>()[0], 2);
  // axis = 1 normalizes over the last two dims; Scale broadcast to [2,2].
  auto z = run(make_node("LayerNormalization", 2, 1, {{"axis", int1(1)}}), {&X, &S});
  EXPECT_EQ(z[0].shape(), (Shape{2, 2, 2}));
  double mean = 2.5, var = 1.25, inv = 1 / std::sqrt(var + 1e-5);
  EXPECT_NEAR(z[0].data<float>()[0], (1 - mean) * inv * 1, 1e-6);
  EXPECT_NEAR(z[0].data<float>()[3], (4 - mean) * inv * 2, 1e-6);
}

TEST(CpuNnNorm, BatchAndInstanceNormalization) {
  Tensor X = Tensor::from_vector<float>({1, 2, 1, 2}, {1, 3, 2, 6});
  Tensor s = Tensor::from_vector<float>({2}, {1, 2});
  Tensor b = Tensor::from_vector<float>({2}, {0, 1});
  Tensor m = Tensor::from_vector<float>({2}, {1, 2});
  Tensor v = Tensor::from_vector<float>({2}, {4, 16});
  auto y = run(make_node("BatchNormalization", 5, 1, {{"epsilon", flt(0)}}), {&X, &s, &b, &m, &v}, 15);
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{0, 1, 1, 3}));
  auto in = run(make_node("InstanceNormalization", 3, 1, {{"epsilon", flt(0)}}), {&X, &s, &b}, 6);
  EXPECT_EQ(values<float>(in[0]), (std::vector<float>{-1, 1, -1, 3}));
}

TEST(CpuNnResize, NearestAndLinear) {
  Tensor X = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = Tensor::from_vector<float>({4}, {1, 1, 2, 2});
  Tensor none;
  auto n = run(make_node("Resize", 3, 1, {{"mode", str("nearest")}}), {&X, &none, &scales}, 13);
  EXPECT_EQ(n[0].shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(values<float>(n[0]), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  auto l = run(make_node("Resize", 3, 1, {{"mode", str("linear")}}), {&X, &none, &scales}, 13);
  EXPECT_EQ(values<float>(l[0]), (std::vector<float>{1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f,
                                                     3.5f, 3, 3.25f, 3.75f, 4}));
  auto ac = run(make_node("Resize", 3, 1, {{"mode", str("linear")}, {"coordinate_transformation_mode", str("align_corners")}}),
                {&X, &none, &scales}, 13);
  EXPECT_FLOAT_EQ(ac[0].data<float>()[1], 1 + 1.0f / 3);
  // sizes instead of scales; integer data keeps nearest exact.
  Tensor Xi = Tensor::from_vector<int64_t>({1, 3}, {10, 20, 30});
  Tensor sizes = Tensor::from_vector<int64_t>({2}, {1, 6});
  auto ni = run(make_node("Resize", 4, 1, {{"coordinate_transformation_mode", str("asymmetric")}, {"nearest_mode", str("floor")}}),
                {&Xi, &none, &none, &sizes}, 13);
  EXPECT_EQ(values<int64_t>(ni[0]), (std::vector<int64_t>{10, 10, 20, 20, 30, 30}));
  EXPECT_THROW(run(make_node("Resize", 4, 1), {&Xi, &none, &scales, &sizes}, 13), InvalidArgument);
  // Upsample-9.
  Tensor us = Tensor::from_vector<float>({4}, {1, 1, 2, 3});
  auto u = run(make_node("Upsample", 2, 1), {&X, &us}, 9);
  EXPECT_EQ(u[0].shape(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(u[0].data<float>()[5], 2);
}

TEST(CpuNnResize, AntialiasMatchesPyTorch) {
  // Expected values from torch.nn.functional.interpolate(antialias=True, align_corners=False) (opset 18).
  std::vector<double> xv(24);
  for (size_t i = 0; i < 24; ++i) xv[i] = double(i);
  xv[8] = 30;
  Tensor X = Tensor::from_vector<double>({1, 1, 4, 6}, xv);
  Tensor none;
  Tensor s1 = Tensor::from_vector<int64_t>({4}, {1, 1, 2, 3});
  auto l = run(make_node("Resize", 4, 1, {{"mode", str("linear")}, {"antialias", int1(1)}, {"exclude_outside", int1(1)}}),
               {&X, &none, &none, &s1}, 18);
  std::vector<double> want_l = {6.346938775510203, 10.321428571428571, 8.571428571428571,
                                14.877551020408161, 17.39285714285714, 18.0};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(l[0].data<double>()[i], want_l[i], 1e-12) << i;
  Tensor s2 = Tensor::from_vector<int64_t>({4}, {1, 1, 3, 2});
  auto c = run(make_node("Resize", 4, 1, {{"mode", str("cubic")}, {"antialias", int1(1)}, {"exclude_outside", int1(1)},
                                          {"cubic_coeff_a", flt(-0.5f)}}),
               {&X, &none, &none, &s2}, 18);
  std::vector<double> want_c = {4.121281464530893, 5.800915331807779, 13.385038566243194,
                                14.262760889292197, 17.64422497892328, 20.579790437191377};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(c[0].data<double>()[i], want_c[i], 1e-12) << i;
  // axes + keep_aspect_ratio_policy: sizes for the last two axes, not_larger keeps the aspect ratio.
  Tensor s3 = Tensor::from_vector<int64_t>({2}, {2, 2});
  auto k = run(make_node("Resize", 4, 1, {{"axes", ints({2, 3})}, {"keep_aspect_ratio_policy", str("not_larger")}}),
               {&X, &none, &none, &s3}, 18);
  EXPECT_EQ(k[0].shape(), (Shape{1, 1, 1, 2}));
}

TEST(CpuNnTypes, HalfIntegerAndDoubleVariants) {
  // Conv in float16 equals float32 rounded to float16 (small exact values).
  std::vector<float> xv = random_values(1 * 2 * 4 * 4, 20), wv = random_values(3 * 2 * 2 * 2, 21);
  Tensor X = Tensor::from_vector<float>({1, 2, 4, 4}, xv), W = Tensor::from_vector<float>({3, 2, 2, 2}, wv);
  std::vector<Float16> xh(xv.begin(), xv.end()), wh(wv.begin(), wv.end());
  Tensor Xh = Tensor::from_vector<Float16>({1, 2, 4, 4}, xh), Wh = Tensor::from_vector<Float16>({3, 2, 2, 2}, wh);
  auto yf = run(make_node("Conv", 2, 1), {&X, &W});
  auto yh = run(make_node("Conv", 2, 1), {&Xh, &Wh});
  ASSERT_EQ(yh[0].dtype(), DType::Float16);
  for (int64_t i = 0; i < yf[0].numel(); ++i) EXPECT_EQ(float(yh[0].data<Float16>()[i]), yf[0].data<float>()[i]);
  // MaxPool on int8 and uint8.
  Tensor Xi = Tensor::from_vector<int8_t>({1, 1, 2, 2}, {-128, -5, -7, -100});
  auto mi = run(make_node("MaxPool", 1, 1, {{"kernel_shape", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}), {&Xi});
  EXPECT_EQ(values<int8_t>(mi[0]), (std::vector<int8_t>{-128, -5, -5, -7, -5, -5, -7, -7, -100}));
  // Linear Resize of uint8 rounds to nearest.
  Tensor Xu = Tensor::from_vector<uint8_t>({1, 2}, {0, 3});
  Tensor none, sc = Tensor::from_vector<float>({2}, {1, 2});
  auto ru = run(make_node("Resize", 3, 1, {{"mode", str("linear")}}), {&Xu, &none, &sc}, 13);
  EXPECT_EQ(values<uint8_t>(ru[0]), (std::vector<uint8_t>{0, 1, 2, 3}));  // 0, 0.75, 2.25, 3
  // Gemm in float64 and bfloat16.
  Tensor A = Tensor::from_vector<double>({1, 2}, {0.1, 0.2}), B = Tensor::from_vector<double>({2, 1}, {3, 4});
  EXPECT_DOUBLE_EQ(run(make_node("Gemm", 2, 1), {&A, &B})[0].data<double>()[0], 0.1 * 3 + 0.2 * 4);
  Tensor Ab = Tensor::from_vector<BFloat16>({1, 2}, {BFloat16(1.5f), BFloat16(2)});
  Tensor Bb = Tensor::from_vector<BFloat16>({2, 1}, {BFloat16(2), BFloat16(4)});
  EXPECT_EQ(float(run(make_node("MatMul", 2, 1), {&Ab, &Bb})[0].data<BFloat16>()[0]), 11.0f);
  // Types outside a schema are errors, not crashes.
  Tensor Xl = Tensor::from_vector<int64_t>({1, 1, 2, 2}, {1, 2, 3, 4});
  EXPECT_THROW(run(make_node("AveragePool", 1, 1, {{"kernel_shape", ints({2, 2})}}), {&Xl}), Error);
  EXPECT_THROW(run(make_node("Conv", 2, 1), {&Xl, &Xl}), Error);
}

TEST(CpuNnErrors, BadInputsFailCleanly) {
  Tensor X = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor X2 = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  EXPECT_THROW(run(make_node("Conv", 2, 1), {&X2, &X2}), InvalidArgument);                        // rank 2
  EXPECT_THROW(run(make_node("MaxPool", 1, 1), {&X}), InvalidArgument);                           // no kernel_shape
  EXPECT_THROW(run(make_node("MaxPool", 1, 1, {{"kernel_shape", ints({3, 3})}}), {&X}), InvalidArgument);  // too big
  EXPECT_THROW(run(make_node("AveragePool", 1, 1, {{"kernel_shape", ints({2})}}), {&X}), InvalidArgument);
  Tensor none, sc = Tensor::from_vector<float>({4}, {1, 1, 2, 2});
  EXPECT_THROW(run(make_node("Resize", 3, 1, {{"mode", str("bicubic")}}), {&X, &none, &sc}, 13), InvalidArgument);
  Tensor sc3 = Tensor::from_vector<float>({3}, {1, 2, 2});
  EXPECT_THROW(run(make_node("Resize", 3, 1), {&X, &none, &sc3}, 13), InvalidArgument);
  Tensor s = Tensor::from_vector<float>({3}, {1, 1, 1});
  EXPECT_THROW(run(make_node("InstanceNormalization", 3, 1), {&X, &s, &s}, 6), InvalidArgument);
  EXPECT_THROW(run(make_node("BatchNormalization", 5, 1), {&X, &s, &s, &s, &s}, 15), InvalidArgument);
  EXPECT_THROW(run(make_node("Einsum", 1, 1, {{"equation", str("ij->k")}}), {&X2}), InvalidArgument);
  EXPECT_THROW(run(make_node("Einsum", 1, 1, {{"equation", str("ijk")}}), {&X2}), InvalidArgument);
  EXPECT_THROW(run(make_node("Det", 1, 1), {&sc3}), InvalidArgument);
  Tensor I = Tensor::from_vector<int64_t>({1, 1, 2, 2}, {0, 1, 2, 99});
  EXPECT_THROW(run(make_node("MaxUnpool", 2, 1, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}), {&X, &I}),
               InvalidArgument);
}

namespace {

// The first `from`..`to` tokens of a [B, T, D] tensor.
Tensor tokens(const Tensor& x, int64_t from, int64_t to) {
  const int64_t b = x.dim(0), t = x.dim(1), d = x.dim(2);
  std::vector<float> v;
  for (int64_t i = 0; i < b; ++i)
    for (int64_t s = from; s < to; ++s)
      for (int64_t k = 0; k < d; ++k) v.push_back(x.data<float>()[(i * t + s) * d + k]);
  return Tensor::from_vector<float>({b, to - from, d}, v);
}

Tensor random_of(const Shape& s, unsigned seed, float scale = 1) {
  std::vector<float> v = random_values(size_t(shape_numel(s)), seed);
  for (auto& x : v) x *= scale;
  return Tensor::from_vector<float>(s, v);
}

void expect_near(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4 * (1 + std::fabs(want.data<float>()[i]))) << what << " element " << i;
}

}  // namespace

// LinearAttention and CausalConvWithState carry a state: a prompt of 5 tokens in one call equals 3 tokens,
// then 2 fed with the first call's present_state (a prefill then decode steps), for every update rule,
// grouped heads and decay per head or per key dimension. Their errors name the input at fault.
TEST(CpuLinearAttention, StateCarriesAcrossCalls) {
  const int64_t b = 2, t = 5, hq = 4, hkv = 2, dk = 3, dv = 2;
  Tensor q = random_of({b, t, hq * dk}, 1), k = random_of({b, t, hkv * dk}, 2, 0.5f), v = random_of({b, t, hkv * dv}, 3);
  Tensor decay_head = random_of({b, t, hkv}, 4, 0.25f), decay_key = random_of({b, t, hkv * dk}, 5, 0.25f), beta = random_of({b, t, hkv}, 6, 0.5f);
  Tensor none;
  for (const char* rule : {"linear", "gated", "delta", "gated_delta"})
    for (const Tensor* decay : {&decay_head, &decay_key}) {
      SCOPED_TRACE(std::string(rule) + (decay == &decay_head ? " decay per head" : " decay per key dimension"));
      const bool gated = std::string(rule).find("gated") != std::string::npos, delta = std::string(rule).find("delta") != std::string::npos;
      ir::Node node = make_node("LinearAttention", 6, 2, {{"q_num_heads", int1(hq)}, {"kv_num_heads", int1(hkv)}, {"update_rule", str(rule)}});
      auto call = [&](int64_t from, int64_t to, const Tensor* past) {
        Tensor qs = tokens(q, from, to), ks = tokens(k, from, to), vs = tokens(v, from, to);
        Tensor ds = tokens(*decay, from, to), bs = tokens(beta, from, to);
        return run(node, {&qs, &ks, &vs, past ? past : &none, gated ? &ds : &none, delta ? &bs : &none});
      };
      std::vector<Tensor> whole = call(0, t, nullptr), first = call(0, 3, nullptr), rest = call(3, t, &first[1]);
      expect_near(rest[1], whole[1], "present_state");
      expect_near(rest[0], tokens(whole[0], 3, t), "output of the last two tokens");
      expect_near(first[0], tokens(whole[0], 0, 3), "output of the first three tokens");
    }
  for (const char* act : {"none", "silu"}) {
    SCOPED_TRACE(act);
    Tensor x = random_of({2, 3, 7}, 7), w = random_of({3, 1, 4}, 8), bias = random_of({3}, 9);
    ir::Node node = make_node("CausalConvWithState", 4, 2, {{"activation", str(act)}});
    auto call = [&](int64_t from, int64_t to, const Tensor* past) {
      // (the convolution's time is axis 2, where tokens() slices axis 1)
      std::vector<float> vals;
      for (int64_t i = 0; i < 2 * 3; ++i)
        for (int64_t s = from; s < to; ++s) vals.push_back(x.data<float>()[i * 7 + s]);
      Tensor xs = Tensor::from_vector<float>({2, 3, to - from}, vals);
      return run(node, {&xs, &w, &bias, past ? past : &none});
    };
    std::vector<Tensor> whole = call(0, 7, nullptr), first = call(0, 2, nullptr), rest = call(2, 7, &first[1]);
    expect_near(rest[1], whole[1], "present_state");
    for (int64_t i = 0; i < 2 * 3; ++i)
      for (int64_t s = 0; s < 5; ++s)
        ASSERT_NEAR(rest[0].data<float>()[i * 5 + s], whole[0].data<float>()[i * 7 + 2 + s], 1e-4) << "output " << i << ", " << s;
  }
  // Errors: a decay the rule does not take, heads that do not divide, a past state of another shape.
  ir::Node lin = make_node("LinearAttention", 6, 2, {{"q_num_heads", int1(hq)}, {"kv_num_heads", int1(hkv)}, {"update_rule", str("linear")}});
  EXPECT_THROW(run(lin, {&q, &k, &v, &none, &decay_head, &none}), InvalidArgument);
  ir::Node odd = make_node("LinearAttention", 6, 2, {{"q_num_heads", int1(3)}, {"kv_num_heads", int1(2)}});
  EXPECT_THROW(run(odd, {&q, &k, &v, &none, &decay_head, &beta}), InvalidArgument);
  Tensor past_bad = random_of({b, hkv, dk + 1, dv}, 10);
  ir::Node gd = make_node("LinearAttention", 6, 2, {{"q_num_heads", int1(hq)}, {"kv_num_heads", int1(hkv)}});
  EXPECT_THROW(run(gd, {&q, &k, &v, &past_bad, &decay_head, &beta}), InvalidArgument);
  Tensor x = random_of({2, 3, 7}, 7), w_bad = random_of({4, 1, 4}, 8);
  EXPECT_THROW(run(make_node("CausalConvWithState", 2, 2), {&x, &w_bad}), InvalidArgument);
}
