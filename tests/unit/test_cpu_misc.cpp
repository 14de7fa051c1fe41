// CPU reference kernels of the misc families: RNN/GRU/LSTM, (De)QuantizeLinear, DynamicQuantizeLinear,
// NonMaxSuppression, TfIdfVectorizer. Hand-built nodes, hand-computed expectations.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cpu/kernel.h"
#include "ir/graph.h"
#include "onnxgpu/tensor.h"

using namespace onnxgpu;

namespace {

ir::Attribute attr_i(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Int;
  a.i = v;
  return a;
}
ir::Attribute attr_f(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Float;
  a.f = v;
  return a;
}
ir::Attribute attr_s(const std::string& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::String;
  a.s = v;
  return a;
}
ir::Attribute attr_ss(const std::vector<std::string>& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Strings;
  a.strings = v;
  return a;
}
ir::Attribute attr_fs(const std::vector<float>& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Floats;
  a.floats = v;
  return a;
}

// A node named "n" whose inputs are named in0, in1, ... ("" where the tensor is undefined).
ir::Node make_node(const std::string& op, size_t num_inputs, std::vector<std::string> outputs,
                   std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = "n";
  n.op_type = op;
  for (size_t i = 0; i < num_inputs; ++i) n.inputs.push_back("in" + std::to_string(i));
  n.outputs = std::move(outputs);
  n.attrs = std::move(attrs);
  return n;
}

std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& inputs, std::vector<std::string> outputs,
                        std::map<std::string, ir::Attribute> attrs = {}, int64_t opset = 17) {
  ir::Node n = make_node(op, inputs.size(), std::move(outputs), std::move(attrs));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) n.inputs[i] = "";
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  const cpu::Kernel* k = cpu::registry().find(op);
  if (!k) throw std::runtime_error("no kernel for " + op);
  cpu::KernelContext ctx(n, opset, ptrs);
  return (*k)(ctx);
}

Tensor F(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

void expect_near(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(t.dtype(), DType::Float32);
  ASSERT_EQ(t.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data<float>()[i], want[i], tol) << "element " << i;
}

float sigm(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

// ---------------------------------------------------------------------------------------------- LSTM

TEST(CpuMiscLstm, SingleStepMatchesHandComputation) {
  // input_size 2, hidden_size 1, batch 1, one step; W/R gate order i, o, f, c; P order i, o, f.
  const std::vector<float> x = {0.5f, -1.0f};
  const std::vector<float> W = {0.1f, 0.2f, /*o*/ 0.3f, -0.4f, /*f*/ -0.5f, 0.6f, /*c*/ 0.7f, 0.8f};
  const std::vector<float> R = {0.9f, -0.3f, 0.2f, 0.4f};
  const std::vector<float> B = {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f, 0.07f, 0.08f};
  const std::vector<float> P = {0.11f, -0.12f, 0.13f};
  const float h0 = 0.25f, c0 = -0.5f;
  auto pre = [&](int g) { return x[0] * W[g * 2] + x[1] * W[g * 2 + 1] + h0 * R[g] + B[g] + B[4 + g]; };
  const float i = sigm(pre(0) + P[0] * c0);
  const float f = sigm(pre(2) + P[2] * c0);
  const float cc = std::tanh(pre(3));
  const float c1 = f * c0 + i * cc;
  const float o = sigm(pre(1) + P[1] * c1);
  const float h1 = o * std::tanh(c1);

  auto outs = run("LSTM",
                  {F({1, 1, 2}, x), F({1, 4, 2}, W), F({1, 4, 1}, R), F({1, 8}, B), Tensor(), F({1, 1, 1}, {h0}),
                   F({1, 1, 1}, {c0}), F({1, 3}, P)},
                  {"Y", "Y_h", "Y_c"}, {{"hidden_size", attr_i(1)}});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0].shape(), (Shape{1, 1, 1, 1}));
  expect_near(outs[0], {h1});
  expect_near(outs[1], {h1});
  expect_near(outs[2], {c1});

  // input_forget couples the gates: f = 1 - i.
  const float c1b = (1 - i) * c0 + i * cc;
  const float h1b = sigm(pre(1) + P[1] * c1b) * std::tanh(c1b);
  outs = run("LSTM",
             {F({1, 1, 2}, x), F({1, 4, 2}, W), F({1, 4, 1}, R), F({1, 8}, B), Tensor(), F({1, 1, 1}, {h0}),
              F({1, 1, 1}, {c0}), F({1, 3}, P)},
             {"", "Y_h", "Y_c"}, {{"input_forget", attr_i(1)}});
  EXPECT_FALSE(outs[0].defined());
  expect_near(outs[1], {h1b});
  expect_near(outs[2], {c1b});
}

TEST(CpuMiscLstm, ClipAndActivationsApplyToGateInputs) {
  // One step from zero state, hidden 1, input 1: every gate pre-activation is W*x, clipped to [-2.5, 2.5].
  const std::vector<float> W = {2.0f, 3.0f, -4.0f, -5.0f};  // i, o, f, c
  const float clip = 2.5f;
  auto cl = [&](float v) { return std::max(-clip, std::min(clip, v)); };
  // activation_alpha {0.3, 0.7} and activation_beta {0.5, 1.5} are consumed in order by the functions
  // taking them: f = HardSigmoid(0.3, 0.5), g = LeakyRelu(0.7), h = ScaledTanh(alpha default 1, beta 1.5).
  auto f = [](float v) { return std::max(0.0f, std::min(1.0f, 0.3f * v + 0.5f)); };
  auto g = [](float v) { return v >= 0 ? v : 0.7f * v; };
  auto h = [](float v) { return 1.0f * std::tanh(1.5f * v); };
  const float c = f(cl(W[0])) * g(cl(W[3]));  // c0 = 0, so the forget gate does not matter
  const float y = f(cl(W[1])) * h(c);
  auto outs = run("LSTM", {F({1, 1, 1}, {1.0f}), F({1, 4, 1}, W), F({1, 4, 1}, {0, 0, 0, 0})}, {"", "Y_h", "Y_c"},
                  {{"hidden_size", attr_i(1)},
                   {"clip", attr_f(clip)},
                   {"activations", attr_ss({"HardSigmoid", "leakyrelu", "ScaledTanh"})},
                   {"activation_alpha", attr_fs({0.3f, 0.7f})},
                   {"activation_beta", attr_fs({0.5f, 1.5f})}});
  expect_near(outs[1], {y});
  expect_near(outs[2], {c});
}

// Consistency: bidirectional = forward and reverse runs; layout 1 = transposed layout 0;
// sequence_lens = truncated runs with zero padding.
TEST(CpuMiscLstm, BidirectionalLayoutAndSequenceLens) {
  const int64_t S = 3, N = 2, I = 2, H = 2;
  auto ramp = [](int64_t n, float a, float b) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = std::sin(a * float(i) + b);
    return v;
  };
  const auto x = ramp(S * N * I, 0.7f, 0.1f);
  const auto w = ramp(2 * 4 * H * I, 0.3f, 0.2f), r = ramp(2 * 4 * H * H, 0.9f, 0.3f), b = ramp(2 * 8 * H, 0.5f, 0.4f);
  auto half = [](const std::vector<float>& v, int d) {
    return std::vector<float>(v.begin() + d * long(v.size() / 2), v.begin() + (d + 1) * long(v.size() / 2));
  };
  auto bi = run("LSTM", {F({S, N, I}, x), F({2, 4 * H, I}, w), F({2, 4 * H, H}, r), F({2, 8 * H}, b)},
                {"Y", "Y_h", "Y_c"}, {{"hidden_size", attr_i(H)}, {"direction", attr_s("bidirectional")}});
  ASSERT_EQ(bi[0].shape(), (Shape{S, 2, N, H}));
  for (int d = 0; d < 2; ++d) {
    auto one = run("LSTM",
                   {F({S, N, I}, x), F({1, 4 * H, I}, half(w, d)), F({1, 4 * H, H}, half(r, d)), F({1, 8 * H}, half(b, d))},
                   {"Y", "Y_h", "Y_c"}, {{"direction", attr_s(d == 0 ? "forward" : "reverse")}});
    for (int64_t t = 0; t < S; ++t)
      for (int64_t k = 0; k < N * H; ++k)
        EXPECT_FLOAT_EQ(bi[0].data<float>()[(t * 2 + d) * N * H + k], one[0].data<float>()[t * N * H + k]);
    for (int64_t k = 0; k < N * H; ++k) {
      EXPECT_FLOAT_EQ(bi[1].data<float>()[d * N * H + k], one[1].data<float>()[k]);
      EXPECT_FLOAT_EQ(bi[2].data<float>()[d * N * H + k], one[2].data<float>()[k]);
    }
  }

  // layout 1: X [N, S, I], Y [N, S, 2, H], Y_h [N, 2, H].
  std::vector<float> xt(x.size());
  for (int64_t t = 0; t < S; ++t)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < I; ++i) xt[size_t((n * S + t) * I + i)] = x[size_t((t * N + n) * I + i)];
  auto bt = run("LSTM", {F({N, S, I}, xt), F({2, 4 * H, I}, w), F({2, 4 * H, H}, r), F({2, 8 * H}, b)},
                {"Y", "Y_h", "Y_c"}, {{"direction", attr_s("bidirectional")}, {"layout", attr_i(1)}}, 14);
  ASSERT_EQ(bt[0].shape(), (Shape{N, S, 2, H}));
  ASSERT_EQ(bt[1].shape(), (Shape{N, 2, H}));
  for (int64_t t = 0; t < S; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          EXPECT_FLOAT_EQ(bt[0].data<float>()[((n * S + t) * 2 + d) * H + h],
                          bi[0].data<float>()[((t * 2 + d) * N + n) * H + h]);
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h)
        EXPECT_FLOAT_EQ(bt[1].data<float>()[(n * 2 + d) * H + h], bi[1].data<float>()[(d * N + n) * H + h]);

  // sequence_lens [2, 3]: batch 0 sees only steps 0..1 (reverse direction starts at step 1).
  auto sl = run("LSTM",
                {F({S, N, I}, x), F({2, 4 * H, I}, w), F({2, 4 * H, H}, r), F({2, 8 * H}, b),
                 Tensor::from_vector<int32_t>({N}, {2, 3})},
                {"Y", "Y_h"}, {{"direction", attr_s("bidirectional")}});
  std::vector<float> x0;  // batch 0 alone, two steps
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t i = 0; i < I; ++i) x0.push_back(x[size_t((t * N + 0) * I + i)]);
  auto tr = run("LSTM", {F({2, 1, I}, x0), F({2, 4 * H, I}, w), F({2, 4 * H, H}, r), F({2, 8 * H}, b)},
                {"Y", "Y_h"}, {{"direction", attr_s("bidirectional")}});
  for (int64_t t = 0; t < S; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t h = 0; h < H; ++h) {
        const float got = sl[0].data<float>()[((t * 2 + d) * N + 0) * H + h];
        const float want = t < 2 ? tr[0].data<float>()[(t * 2 + d) * H + h] : 0.0f;
        EXPECT_FLOAT_EQ(got, want) << t << " " << d << " " << h;
        // batch 1 (full length) matches the unrestricted run
        EXPECT_FLOAT_EQ(sl[0].data<float>()[((t * 2 + d) * N + 1) * H + h],
                        bi[0].data<float>()[((t * 2 + d) * N + 1) * H + h]);
      }
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t h = 0; h < H; ++h)
      EXPECT_FLOAT_EQ(sl[1].data<float>()[(d * N + 0) * H + h], tr[1].data<float>()[d * H + h]);
}

TEST(CpuMiscLstm, Float64AndFloat16) {
  auto run_t = [](DType t) {
    std::vector<Tensor> in = {F({1, 1, 1}, {0.5f}), F({1, 4, 1}, {0.1f, 0.2f, 0.3f, 0.4f}),
                              F({1, 4, 1}, {0.5f, 0.6f, 0.7f, 0.8f})};
    for (Tensor& x : in) x = x.cast(t);
    auto o = run("LSTM", in, {"", "Y_h"});
    EXPECT_EQ(o[1].dtype(), t);
    return o[1].cast(DType::Float32).data<float>()[0];
  };
  const float f32 = run_t(DType::Float32);
  EXPECT_NEAR(run_t(DType::Float64), f32, 1e-6);
  EXPECT_NEAR(run_t(DType::Float16), f32, 1e-3);
}

// ----------------------------------------------------------------------------------------------- GRU

TEST(CpuMiscGru, BothLinearBeforeResetValues) {
  // input 1, hidden 2, one step from a non-zero state; W/R gate order z, r, h.
  const float x = 0.8f;
  const std::vector<float> W = {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f};
  const std::vector<float> R = {0.1f, 0.2f, -0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.9f, 1.0f, 0.15f, -0.25f};
  std::vector<float> Bv(12);
  for (int i = 0; i < 12; ++i) Bv[size_t(i)] = 0.01f * float(i + 1);
  const std::vector<float> h0 = {0.3f, -0.7f};
  auto Rrow = [&](int row, const std::vector<float>& v) { return R[size_t(row * 2)] * v[0] + R[size_t(row * 2 + 1)] * v[1]; };
  for (int lbr = 0; lbr <= 1; ++lbr) {
    std::vector<float> want(2);
    float z[2], r[2];
    for (int j = 0; j < 2; ++j) {
      z[j] = sigm(x * W[size_t(j)] + Rrow(j, h0) + Bv[size_t(j)] + Bv[size_t(6 + j)]);
      r[j] = sigm(x * W[size_t(2 + j)] + Rrow(2 + j, h0) + Bv[size_t(2 + j)] + Bv[size_t(8 + j)]);
    }
    const std::vector<float> rh = {r[0] * h0[0], r[1] * h0[1]};
    for (int j = 0; j < 2; ++j) {
      const float xh = x * W[size_t(4 + j)] + Bv[size_t(4 + j)];
      const float hh = lbr ? std::tanh(xh + r[j] * (Rrow(4 + j, h0) + Bv[size_t(10 + j)]))
                           : std::tanh(xh + Rrow(4 + j, rh) + Bv[size_t(10 + j)]);
      want[size_t(j)] = (1 - z[j]) * hh + z[j] * h0[size_t(j)];
    }
    auto outs = run("GRU",
                    {F({1, 1, 1}, {x}), F({1, 6, 1}, W), F({1, 6, 2}, R), F({1, 12}, Bv), Tensor(), F({1, 1, 2}, h0)},
                    {"Y", "Y_h"}, {{"hidden_size", attr_i(2)}, {"linear_before_reset", attr_i(lbr)}});
    expect_near(outs[0], want);
    expect_near(outs[1], want);
  }
}

// ----------------------------------------------------------------------------------------------- RNN

TEST(CpuMiscRnn, TwoStepsWithReluAndReverse) {
  // hidden 1, input 1: h_t = f(w x_t + r h_{t-1} + wb + rb)
  const std::vector<float> xs = {1.0f, -2.0f, 3.0f};
  const float w = 0.5f, r = -0.8f, wb = 0.1f, rb = -0.05f;
  for (bool reverse : {false, true}) {
    float h = 0;
    std::vector<float> ys(3);
    for (int s = 0; s < 3; ++s) {
      const int t = reverse ? 2 - s : s;
      h = std::max(0.0f, w * xs[size_t(t)] + r * h + wb + rb);
      ys[size_t(t)] = h;
    }
    auto outs = run("RNN", {F({3, 1, 1}, xs), F({1, 1, 1}, {w}), F({1, 1, 1}, {r}), F({1, 2}, {wb, rb})}, {"Y", "Y_h"},
                    {{"activations", attr_ss({"Relu"})}, {"direction", attr_s(reverse ? "reverse" : "forward")}});
    expect_near(outs[0], ys);
    expect_near(outs[1], {h});
  }
}

// ---------------------------------------------------------------------------------------- Quantize

TEST(CpuMiscQuantize, RoundsHalfToEvenAndSaturates) {
  Tensor x = F({10}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 1000.0f, -1000.0f, 3.49f, NAN});
  auto q = run("QuantizeLinear", {x, Tensor::scalar<float>(1.0f), Tensor::scalar<int8_t>(0)}, {"y"});
  ASSERT_EQ(q[0].dtype(), DType::Int8);
  EXPECT_EQ(std::vector<int8_t>(q[0].span<int8_t>().begin(), q[0].span<int8_t>().end()),
            (std::vector<int8_t>{0, 2, 2, 0, -2, -2, 127, -128, 3, 0}));
  // uint8 (also the default without a zero point)
  auto u = run("QuantizeLinear", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(10)}, {"y"});
  ASSERT_EQ(u[0].dtype(), DType::UInt8);
  // x / 0.5 = 1, 3, 5, -1, -3, -5, 2000, -2000, 6.98, nan
  EXPECT_EQ(std::vector<uint8_t>(u[0].span<uint8_t>().begin(), u[0].span<uint8_t>().end()),
            (std::vector<uint8_t>{11, 13, 15, 9, 7, 5, 255, 0, 17, 0}));
  auto d = run("QuantizeLinear", {F({3}, {0.5f, 1.5f, -7.0f}), Tensor::scalar<float>(1.0f)}, {"y"}, {}, 10);
  ASSERT_EQ(d[0].dtype(), DType::UInt8);
  EXPECT_EQ(d[0].data<uint8_t>()[0], 0);
  EXPECT_EQ(d[0].data<uint8_t>()[1], 2);
  EXPECT_EQ(d[0].data<uint8_t>()[2], 0);
  // int32 input
  auto i = run("QuantizeLinear", {Tensor::from_vector<int32_t>({3}, {5, 7, -300}), Tensor::scalar<float>(2.0f),
                                  Tensor::scalar<int8_t>(1)}, {"y"});
  EXPECT_EQ(i[0].data<int8_t>()[0], 3);   // 2.5 -> 2, +1
  EXPECT_EQ(i[0].data<int8_t>()[1], 5);   // 3.5 -> 4, +1
  EXPECT_EQ(i[0].data<int8_t>()[2], -128);
}

TEST(CpuMiscQuantize, PerAxis) {
  // x [2, 3, 2], axis 1: scales 1, 2, 4 and zero points 0, 10, 100.
  std::vector<float> xv(12);
  for (int i = 0; i < 12; ++i) xv[size_t(i)] = float(i) * 2;
  Tensor scale = F({3}, {1, 2, 4});
  Tensor zp = Tensor::from_vector<uint8_t>({3}, {0, 10, 100});
  auto q = run("QuantizeLinear", {F({2, 3, 2}, xv), scale, zp}, {"y"});
  // x: 0 2 | 4 6 | 8 10 || 12 14 | 16 18 | 20 22 -> /s: 0 2 | 2 3 | 2 2.5 || 12 14 | 8 9 | 5 5.5
  const std::vector<uint8_t> want2 = {0, 2, 12, 13, 102, 102, 12, 14, 18, 19, 105, 106};
  EXPECT_EQ(std::vector<uint8_t>(q[0].span<uint8_t>().begin(), q[0].span<uint8_t>().end()), want2);
  auto d = run("DequantizeLinear", {q[0], scale, zp}, {"y"});
  expect_near(d[0], {0, 2, 4, 6, 8, 8, 12, 14, 16, 18, 20, 24});
  // negative axis
  auto d2 = run("DequantizeLinear", {Tensor::from_vector<int8_t>({2, 2}, {-3, 4, 5, -128}), F({2}, {0.5f, 2.0f}),
                                     Tensor::from_vector<int8_t>({2}, {1, -2})},
                {"y"}, {{"axis", attr_i(-1)}});
  expect_near(d2[0], {-2.0f, 12.0f, 2.0f, -252.0f});
}

TEST(CpuMiscQuantize, DequantizeInt32) {
  auto d = run("DequantizeLinear", {Tensor::from_vector<int32_t>({3}, {-2147483647 - 1, 0, 123456}), Tensor::scalar<float>(0.25f)},
               {"y"});
  expect_near(d[0], {-536870912.0f, 0.0f, 30864.0f});
}

TEST(CpuMiscQuantize, DynamicQuantizeLinearMatchesSpecExample) {
  auto o = run("DynamicQuantizeLinear", {F({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f})}, {"y", "y_scale", "y_zero_point"});
  ASSERT_EQ(o.size(), 3u);
  EXPECT_FLOAT_EQ(o[1].data<float>()[0], 5.0f / 255.0f);
  EXPECT_EQ(o[2].data<uint8_t>()[0], 153);
  EXPECT_EQ(std::vector<uint8_t>(o[0].span<uint8_t>().begin(), o[0].span<uint8_t>().end()),
            (std::vector<uint8_t>{153, 255, 0, 26, 221, 179}));
  // all zero: scale 0, zero point 0, y 0
  auto z = run("DynamicQuantizeLinear", {F({2}, {0, 0})}, {"y", "y_scale", "y_zero_point"});
  EXPECT_EQ(z[1].data<float>()[0], 0.0f);
  EXPECT_EQ(z[2].data<uint8_t>()[0], 0);
  EXPECT_EQ(z[0].data<uint8_t>()[1], 0);
}

// ------------------------------------------------------------------------------------------- NMS

TEST(CpuMiscNms, SuppressByIouAndScoresAndClasses) {
  // The ONNX suppress_by_IOU example, with a second class whose scores are reversed.
  const std::vector<float> boxes = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f,
                                    0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101};
  const std::vector<float> scores = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f, 0.3f, 0.5f, 0.95f, 0.6f, 0.75f, 0.9f};
  auto o = run("NonMaxSuppression",
               {F({1, 6, 4}, boxes), F({1, 2, 6}, scores), Tensor::scalar<int64_t>(3), F({1}, {0.5f}), F({1}, {0.0f})},
               {"selected"});
  ASSERT_EQ(o[0].dtype(), DType::Int64);
  ASSERT_EQ(o[0].shape(), (Shape{6, 3}));
  EXPECT_EQ(std::vector<int64_t>(o[0].span<int64_t>().begin(), o[0].span<int64_t>().end()),
            (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0, 5, 0, 1, 2, 0, 1, 5, 0, 1, 4}));
  // score threshold 0.4 drops box 5 of class 0 (0.3); max 2 per class.
  o = run("NonMaxSuppression",
          {F({1, 6, 4}, boxes), F({1, 2, 6}, scores), Tensor::scalar<int64_t>(2), F({1}, {0.5f}), F({1}, {0.4f})},
          {"selected"});
  EXPECT_EQ(std::vector<int64_t>(o[0].span<int64_t>().begin(), o[0].span<int64_t>().end()),
            (std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 1, 2, 0, 1, 5}));
  // Without max_output_boxes_per_class nothing is selected.
  o = run("NonMaxSuppression", {F({1, 6, 4}, boxes), F({1, 2, 6}, scores)}, {"selected"});
  EXPECT_EQ(o[0].shape(), (Shape{0, 3}));
}

TEST(CpuMiscNms, CenterPointBoxAndIdenticalScores) {
  // center format: [xc, yc, w, h]; boxes 0 and 1 overlap with IoU 0.9/1.1 = 0.82.
  const std::vector<float> boxes = {0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 0.5f, 5.5f, 1, 1};
  auto o = run("NonMaxSuppression",
               {F({1, 3, 4}, boxes), F({1, 1, 3}, {0.5f, 0.5f, 0.5f}), Tensor::scalar<int64_t>(10),
                Tensor::scalar<float>(0.6f)},
               {"selected"}, {{"center_point_box", attr_i(1)}});
  // Equal scores: lower index first; box 1 is suppressed by box 0.
  EXPECT_EQ(std::vector<int64_t>(o[0].span<int64_t>().begin(), o[0].span<int64_t>().end()),
            (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
  o = run("NonMaxSuppression",
          {F({1, 3, 4}, boxes), F({1, 1, 3}, {0.5f, 0.5f, 0.5f}), Tensor::scalar<int64_t>(10),
           Tensor::scalar<float>(0.85f)},
          {"selected"}, {{"center_point_box", attr_i(1)}});
  EXPECT_EQ(o[0].shape(), (Shape{3, 3}));
}

// ---------------------------------------------------------------------------------- error messages

namespace {

// Runs `f`, expecting an InvalidArgument whose message contains every one of `parts`.
template <class Fn>
void expect_error(Fn f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning " << parts.front();
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

}  // namespace

TEST(CpuMiscErrors, RecurrentOpsNameNodeAndInput) {
  const Tensor X = F({2, 1, 3}, std::vector<float>(6, 0.1f));
  const Tensor W = F({1, 8, 3}, std::vector<float>(24, 0.1f)), R = F({1, 8, 2}, std::vector<float>(16, 0.1f));
  expect_error([&] { run("LSTM", {X, F({1, 8, 2}, std::vector<float>(16)), R}, {"Y"}); },
               {"node 'n' (LSTM)", "'W'", "in1", "[1,8,2]", "expected [1,8,3]"});
  expect_error([&] { run("LSTM", {X, W, R, Tensor(), Tensor::from_vector<int32_t>({1}, {3})}, {"Y"}); },
               {"node 'n' (LSTM)", "'sequence_lens'", "in4", "3"});
  expect_error([&] { run("LSTM", {X, W, R, Tensor(), Tensor::from_vector<int64_t>({1}, {2})}, {"Y"}); },
               {"node 'n' (LSTM)", "'sequence_lens'", "int32"});
  expect_error([&] { run("LSTM", {X.cast(DType::Int32), W, R}, {"Y"}); }, {"node 'n' (LSTM)", "'X'", "in0", "int32"});
  expect_error([&] { run("LSTM", {X, W.cast(DType::Float64), R}, {"Y"}); }, {"node 'n' (LSTM)", "'W'", "float64"});
  expect_error([&] { run("LSTM", {X, W, R, Tensor(), Tensor(), Tensor(), Tensor(), F({1, 2}, {0, 0})}, {"Y"}); },
               {"node 'n' (LSTM)", "'P'", "in7", "expected [1,6]"});
  expect_error([&] { run("LSTM", {X, W, R, Tensor(), Tensor(), F({1, 1, 3}, {0, 0, 0})}, {"Y"}); },
               {"node 'n' (LSTM)", "'initial_h'", "in5"});
  expect_error([&] { run("GRU", {X, F({1, 6, 3}, std::vector<float>(18)), F({1, 6, 2}, std::vector<float>(12))}, {"Y"},
                         {{"activations", attr_ss({"Sigmoid", "Swish"})}}); },
               {"node 'n' (GRU)", "'activations'", "Swish"});
  expect_error([&] { run("RNN", {X, F({1, 2, 3}, std::vector<float>(6)), F({1, 2, 2}, std::vector<float>(4))}, {"Y"},
                         {{"direction", attr_s("sideways")}}); },
               {"node 'n' (RNN)", "'direction'", "sideways"});
  expect_error([&] { run("RNN", {Tensor(), F({1, 2, 3}, std::vector<float>(6)), F({1, 2, 2}, std::vector<float>(4))}, {"Y"}); },
               {"node 'n' (RNN)", "input 0"});
}

TEST(CpuMiscErrors, QuantizeOpsNameNodeAndInput) {
  const Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_error([&] { run("QuantizeLinear", {x, F({2}, {1, 1}), Tensor::from_vector<uint8_t>({2}, {0, 0})}, {"y"}); },
               {"node 'n' (QuantizeLinear)", "'y_scale'", "in1", "expected 3"});
  expect_error([&] { run("QuantizeLinear", {x, F({3}, {1, 1, 1})}, {"y"}, {}, 10); },
               {"node 'n' (QuantizeLinear)", "'y_scale'", "opset 13"});
  expect_error([&] { run("QuantizeLinear", {x, Tensor::scalar<float>(1), Tensor::scalar<int32_t>(0)}, {"y"}); },
               {"node 'n' (QuantizeLinear)", "'y_zero_point'", "in2", "int32"});
  expect_error([&] { run("QuantizeLinear", {x, Tensor::scalar<float>(1), Tensor::from_vector<uint8_t>({2}, {0, 0})}, {"y"}); },
               {"node 'n' (QuantizeLinear)", "'y_zero_point'", "[2]"});
  expect_error([&] { run("QuantizeLinear", {x.cast(DType::Float64), Tensor::scalar<float>(1)}, {"y"}); },
               {"node 'n' (QuantizeLinear)", "'x'", "in0", "float64"});
  expect_error([&] { run("QuantizeLinear", {x, F({3}, {1, 1, 1})}, {"y"}, {{"axis", attr_i(2)}}); },
               {"node 'n' (QuantizeLinear)", "axis 2"});
  const Tensor q = Tensor::from_vector<uint8_t>({2}, {1, 2});
  expect_error([&] { run("DequantizeLinear", {q, Tensor::scalar<float>(1), Tensor::scalar<int8_t>(0)}, {"y"}); },
               {"node 'n' (DequantizeLinear)", "'x_zero_point'", "in2", "int8"});
  expect_error([&] { run("DequantizeLinear", {q, Tensor::scalar<double>(1)}, {"y"}); },
               {"node 'n' (DequantizeLinear)", "'x_scale'", "in1", "float64"});
  expect_error([&] { run("DequantizeLinear", {x, Tensor::scalar<float>(1)}, {"y"}); },
               {"node 'n' (DequantizeLinear)", "'x'", "in0", "float32"});
  expect_error([&] { run("DynamicQuantizeLinear", {x.cast(DType::Float16)}, {"y", "s", "z"}); },
               {"node 'n' (DynamicQuantizeLinear)", "'x'", "in0", "float16"});
}

TEST(CpuMiscErrors, NonMaxSuppressionNamesNodeAndInput) {
  const Tensor boxes = F({1, 2, 4}, {0, 0, 1, 1, 0, 0, 2, 2});
  const Tensor scores = F({1, 1, 2}, {0.5f, 0.6f});
  expect_error([&] { run("NonMaxSuppression", {F({1, 2, 3}, std::vector<float>(6)), scores}, {"s"}); },
               {"node 'n' (NonMaxSuppression)", "'boxes'", "in0", "[1,2,3]"});
  expect_error([&] { run("NonMaxSuppression", {boxes, F({1, 1, 3}, {0, 0, 0})}, {"s"}); },
               {"node 'n' (NonMaxSuppression)", "'scores'", "in1", "[1,1,3]"});
  expect_error([&] { run("NonMaxSuppression", {boxes, scores, Tensor::scalar<int32_t>(3)}, {"s"}); },
               {"node 'n' (NonMaxSuppression)", "'max_output_boxes_per_class'", "in2", "int32"});
  expect_error([&] { run("NonMaxSuppression", {boxes, scores, Tensor::scalar<int64_t>(3), Tensor::scalar<float>(1.5f)}, {"s"}); },
               {"node 'n' (NonMaxSuppression)", "'iou_threshold'", "in3", "[0, 1]"});
  expect_error([&] { run("NonMaxSuppression", {boxes, scores, Tensor::scalar<int64_t>(3), Tensor(), F({2}, {0, 0})}, {"s"}); },
               {"node 'n' (NonMaxSuppression)", "'score_threshold'", "in4", "scalar"});
  expect_error([&] { run("NonMaxSuppression", {boxes, scores}, {"s"}, {{"center_point_box", attr_i(2)}}); },
               {"node 'n' (NonMaxSuppression)", "'center_point_box'"});
}

// ---------------------------------------------------------------------------------------------- TfIdfVectorizer

namespace {
ir::Attribute attr_is(const std::vector<int64_t>& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Ints;
  a.ints = v;
  return a;
}
// Pool: unigrams 1 and 5000000000 (beyond 32 bits), bigrams (1, 2) and (1, 3); columns 0 to 3.
std::map<std::string, ir::Attribute> tfidf_attrs(const std::string& mode, std::vector<float> weights = {}) {
  std::map<std::string, ir::Attribute> a{{"mode", attr_s(mode)},
                                         {"min_gram_length", attr_i(1)},
                                         {"max_gram_length", attr_i(2)},
                                         {"max_skip_count", attr_i(1)},
                                         {"ngram_counts", attr_is({0, 2})},
                                         {"ngram_indexes", attr_is({0, 1, 2, 3})},
                                         {"pool_int64s", attr_is({1, 5000000000LL, 1, 2, 1, 3})}};
  if (!weights.empty()) a["weights"] = attr_fs(weights);
  return a;
}
}  // namespace

TEST(CpuMiscTfIdf, CountsSkippedBigramsAndUnigramsOnce) {
  // 705032704 is 5000000000's low 32 bits: it must not count as the pool's unigram.
  Tensor x = Tensor::from_vector<int64_t>({6}, {1, 2, 3, 1, 5000000000LL, 705032704});
  // Unigram 1 twice and 5000000000 once (at skip 1 only); bigram (1, 2) at skip 1, (1, 3) at skip 2.
  expect_near(run("TfIdfVectorizer", {x}, {"y"}, tfidf_attrs("TF"))[0], {2, 1, 1, 1});
  expect_near(run("TfIdfVectorizer", {x}, {"y"}, tfidf_attrs("TFIDF", {0.5f, 2, 3, 4}))[0], {1, 2, 3, 4});
}

TEST(CpuMiscTfIdf, BatchRowsAndIdfWeights) {
  Tensor x = Tensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 1, 7, 9});
  Tensor y = run("TfIdfVectorizer", {x}, {"y"}, tfidf_attrs("IDF", {0.5f, 2, 3, 4}))[0];
  ASSERT_EQ(y.shape(), (Shape{2, 4}));
  expect_near(y, {0.5f, 0, 3, 4, 0.5f, 0, 0, 0});
  expect_near(run("TfIdfVectorizer", {x}, {"y"}, tfidf_attrs("IDF"))[0], {1, 0, 1, 1, 1, 0, 0, 0});
}

TEST(CpuMiscTfIdf, BadPoolIsAClearError) {
  auto a = tfidf_attrs("TF");
  a["ngram_counts"] = attr_is({0, 3});  // 3 ids left for bigrams: not whole bigrams
  Tensor x = Tensor::from_vector<int64_t>({2}, {1, 2});
  try {
    run("TfIdfVectorizer", {x}, {"y"}, a);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("attribute 'ngram_counts' [0,3]: ids 3 to 6 of the pool (6 ids) are not whole 2-grams"), std::string::npos) << e.what();
  }
}

TEST(CpuMiscTfIdf, SkipCountBeyondTheRowEndsAtTheRow) {
  // A max_skip_count of 10^12 (a malformed or careless model) counts what the row's width allows, at once.
  Tensor x = Tensor::from_vector<int64_t>({5}, {1, 2, 9, 9, 3});
  auto huge = tfidf_attrs("TF");
  huge["max_skip_count"] = attr_i(1000000000000LL);
  auto wide = tfidf_attrs("TF");
  wide["max_skip_count"] = attr_i(4);
  // Unigram 1; bigram (1, 2) at skip 1; (1, 3) at skip 4.
  expect_near(run("TfIdfVectorizer", {x}, {"y"}, huge)[0], {1, 0, 1, 1});
  expect_near(run("TfIdfVectorizer", {x}, {"y"}, wide)[0], {1, 0, 1, 1});
}
