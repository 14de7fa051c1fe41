#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cpu/kernel.h"

using namespace onnxgpu;

namespace {

ir::Attribute int_attr(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Int;
  a.i = v;
  return a;
}
ir::Attribute float_attr(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Float;
  a.f = v;
  return a;
}
ir::Attribute string_attr(const std::string& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::String;
  a.s = v;
  return a;
}

// Runs one node of `op` on `inputs` (an undefined Tensor marks an omitted optional input).
std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& inputs,
                        std::map<std::string, ir::Attribute> attrs = {}, int64_t opset = 17) {
  ir::Node node;
  node.name = "n0";
  node.op_type = op;
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back(inputs[i].defined() ? "x" + std::to_string(i) : "");
    ptrs.push_back(&inputs[i]);
  }
  node.outputs = {"y"};
  node.attrs = std::move(attrs);
  const cpu::Kernel* k = cpu::registry().find(op);
  if (!k) throw std::runtime_error("no CPU kernel for " + op);
  cpu::KernelContext ctx(node, opset, ptrs);
  return (*k)(ctx);
}

Tensor run1(const std::string& op, const std::vector<Tensor>& inputs, std::map<std::string, ir::Attribute> attrs = {},
            int64_t opset = 17) {
  auto outs = run(op, inputs, std::move(attrs), opset);
  EXPECT_EQ(outs.size(), 1u);
  return outs.at(0);
}

template <class T>
std::vector<T> values(const Tensor& t) {
  auto s = t.span<T>();
  return {s.begin(), s.end()};
}

template <class T>
Tensor vec(std::vector<T> v) {
  return Tensor::from_vector<T>({int64_t(v.size())}, v);
}

constexpr int64_t kBig = int64_t(1) << 40;  // well beyond 2^32

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Unary

TEST(CpuElementwiseUnary, FloatMath) {
  Tensor x = vec<float>({-1.5f, 0.0f, 2.5f, 4.0f});
  EXPECT_EQ(values<float>(run1("Abs", {x})), (std::vector<float>{1.5f, 0.0f, 2.5f, 4.0f}));
  EXPECT_EQ(values<float>(run1("Neg", {x})), (std::vector<float>{1.5f, -0.0f, -2.5f, -4.0f}));
  EXPECT_EQ(values<float>(run1("Ceil", {x})), (std::vector<float>{-1.0f, 0.0f, 3.0f, 4.0f}));
  EXPECT_EQ(values<float>(run1("Floor", {x})), (std::vector<float>{-2.0f, 0.0f, 2.0f, 4.0f}));
  EXPECT_EQ(values<float>(run1("Round", {x})), (std::vector<float>{-2.0f, 0.0f, 2.0f, 4.0f}));  // half to even
  EXPECT_EQ(values<float>(run1("Round", {vec<float>({0.5f, 1.5f, -0.5f, 2.4f})})),
            (std::vector<float>{0.0f, 2.0f, -0.0f, 2.0f}));
  EXPECT_EQ(values<float>(run1("Sqrt", {vec<float>({4.0f, 9.0f})})), (std::vector<float>{2.0f, 3.0f}));
  EXPECT_EQ(values<float>(run1("Reciprocal", {vec<float>({4.0f, -0.5f})})), (std::vector<float>{0.25f, -2.0f}));
  EXPECT_EQ(values<float>(run1("Sign", {x})), (std::vector<float>{-1.0f, 0.0f, 1.0f, 1.0f}));
  EXPECT_NEAR(run1("Exp", {vec<float>({1.0f})}).data<float>()[0], 2.7182818f, 1e-6);
  EXPECT_NEAR(run1("Sigmoid", {vec<float>({0.0f})}).data<float>()[0], 0.5f, 1e-7);
  EXPECT_NEAR(run1("Erf", {vec<float>({1.0f})}).data<float>()[0], 0.8427008f, 1e-6);
  EXPECT_NEAR(run1("Acosh", {vec<double>({2.0})}).data<double>()[0], std::acosh(2.0), 1e-15);
}

TEST(CpuElementwiseUnary, Float16ComputesInFloat) {
  Tensor x = Tensor::from_vector<Float16>({2}, {Float16(2.0f), Float16(-3.0f)});
  Tensor y = run1("Sqrt", {x});
  ASSERT_EQ(y.dtype(), DType::Float16);
  EXPECT_EQ(float(y.data<Float16>()[0]), float(Float16(std::sqrt(2.0f))));
  Tensor b = Tensor::from_vector<BFloat16>({1}, {BFloat16(-3.0f)});
  EXPECT_EQ(float(run1("Abs", {b}).data<BFloat16>()[0]), 3.0f);
}

TEST(CpuElementwiseUnary, IntegerAbsNegWrap) {
  int64_t mn = std::numeric_limits<int64_t>::min();
  Tensor x = vec<int64_t>({-kBig - 3, kBig + 1, mn, 0});
  EXPECT_EQ(values<int64_t>(run1("Abs", {x})), (std::vector<int64_t>{kBig + 3, kBig + 1, mn, 0}));
  EXPECT_EQ(values<int64_t>(run1("Neg", {x})), (std::vector<int64_t>{kBig + 3, -kBig - 1, mn, 0}));
  EXPECT_EQ(values<int64_t>(run1("Sign", {x})), (std::vector<int64_t>{-1, 1, -1, 0}));
  EXPECT_EQ(values<int64_t>(run1("Relu", {x})), (std::vector<int64_t>{0, kBig + 1, 0, 0}));
  EXPECT_THROW(run1("Neg", {vec<uint8_t>({1})}), Error);  // not admitted by the schema
}

TEST(CpuElementwiseUnary, ActivationsWithAttributes) {
  Tensor x = vec<float>({-2.0f, -0.25f, 0.25f, 2.0f});
  auto lr = values<float>(run1("LeakyRelu", {x}, {{"alpha", float_attr(0.5f)}}));
  EXPECT_EQ(lr, (std::vector<float>{-1.0f, -0.125f, 0.25f, 2.0f}));
  auto tr = values<float>(run1("ThresholdedRelu", {x}, {{"alpha", float_attr(0.5f)}}));
  EXPECT_EQ(tr, (std::vector<float>{0.0f, 0.0f, 0.0f, 2.0f}));
  auto hs = values<float>(run1("HardSigmoid", {x}));
  EXPECT_NEAR(hs[0], 0.1f, 1e-7);
  EXPECT_NEAR(hs[3], 0.9f, 1e-7);
  auto sh = values<float>(run1("Shrink", {x}, {{"lambd", float_attr(0.5f)}, {"bias", float_attr(1.0f)}}));
  EXPECT_EQ(sh, (std::vector<float>{-1.0f, 0.0f, 0.0f, 1.0f}));
  auto elu = values<float>(run1("Elu", {x}));
  EXPECT_NEAR(elu[0], std::exp(-2.0f) - 1.0f, 1e-6);
  EXPECT_EQ(elu[3], 2.0f);
  auto g = values<float>(run1("Gelu", {vec<float>({1.0f})}));
  EXPECT_NEAR(g[0], 0.8413447f, 1e-6);
  auto gt = values<float>(run1("Gelu", {vec<float>({1.0f})}, {{"approximate", string_attr("tanh")}}));
  EXPECT_NEAR(gt[0], 0.8411920f, 1e-6);
  EXPECT_THROW(run1("Gelu", {x}, {{"approximate", string_attr("fast")}}), InvalidArgument);
  auto shi = values<int64_t>(run1("Shrink", {vec<int64_t>({-kBig, 0, kBig})}, {{"lambd", float_attr(1.0f)}, {"bias", float_attr(2.0f)}}));
  EXPECT_EQ(shi, (std::vector<int64_t>{-kBig + 2, 0, kBig - 2}));
}

TEST(CpuElementwiseUnary, Predicates) {
  float inf = std::numeric_limits<float>::infinity();
  Tensor x = vec<float>({NAN, inf, -inf, 1.0f});
  EXPECT_EQ(values<bool>(run1("IsNaN", {x})), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values<bool>(run1("IsInf", {x})), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values<bool>(run1("IsInf", {x}, {{"detect_negative", int_attr(0)}})), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(values<bool>(run1("Not", {vec<bool>({true, false})})), (std::vector<bool>{false, true}));
}

// ---------------------------------------------------------------------------------------------------
// Binary

TEST(CpuElementwiseBinary, BroadcastAdd) {
  Tensor a = Tensor::from_vector<float>({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<float>({2, 1}, {10, 20});
  Tensor y = run1("Add", {a, b});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{11, 12, 13, 21, 22, 23, 14, 15, 16, 24, 25, 26}));
  Tensor s = run1("Mul", {a, Tensor::scalar<float>(2.0f)});
  EXPECT_EQ(s.shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(values<float>(s), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  EXPECT_THROW(run1("Add", {a, Tensor::from_vector<float>({4}, {1, 2, 3, 4})}), InvalidArgument);
  EXPECT_THROW(run1("Add", {a, Tensor::scalar<double>(1.0)}), InvalidArgument);  // mixed types
}

TEST(CpuElementwiseBinary, LegacyBroadcastAttribute) {
  Tensor a(DType::Float32, {2, 3, 4});
  Tensor b = Tensor::from_vector<float>({3}, {1, 2, 3});
  Tensor y = run1("Add", {a, b}, {{"broadcast", int_attr(1)}, {"axis", int_attr(1)}}, 6);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(y.data<float>()[4], 2.0f);
  EXPECT_THROW(run1("Add", {a, b}, {}, 6), InvalidArgument);  // broadcast=0 needs equal shapes
}

TEST(CpuElementwiseBinary, Int64ExactBeyond32Bits) {
  Tensor a = vec<int64_t>({kBig + 7, -kBig - 7, kBig * 3 + 1, -(kBig * 5) - 3});
  Tensor b = vec<int64_t>({-kBig, 3, -7, kBig});
  EXPECT_EQ(values<int64_t>(run1("Add", {a, b})), (std::vector<int64_t>{7, -kBig - 4, kBig * 3 - 6, -(kBig * 4) - 3}));
  EXPECT_EQ(values<int64_t>(run1("Sub", {a, b})), (std::vector<int64_t>{2 * kBig + 7, -kBig - 10, kBig * 3 + 8, -(kBig * 6) - 3}));
  EXPECT_EQ(values<int64_t>(run1("Mul", {vec<int64_t>({kBig + 1, -3}), vec<int64_t>({-3, kBig + 1})})),
            (std::vector<int64_t>{-3 * kBig - 3, -3 * kBig - 3}));
  // Division truncates toward zero.
  EXPECT_EQ(values<int64_t>(run1("Div", {a, b})), (std::vector<int64_t>{-1, (-kBig - 7) / 3, (kBig * 3 + 1) / -7, -5}));
  EXPECT_EQ((-kBig - 7) / 3, -366503875927);
  // Mod: sign of the divisor (fmod=0), sign of the dividend (fmod=1).
  Tensor m0 = run1("Mod", {vec<int64_t>({kBig + 5, -kBig - 5, kBig + 5, -kBig - 5}), vec<int64_t>({-kBig, kBig, kBig, -kBig})});
  EXPECT_EQ(values<int64_t>(m0), (std::vector<int64_t>{-kBig + 5, kBig - 5, 5, -5}));
  Tensor m1 = run1("Mod", {vec<int64_t>({kBig + 5, -kBig - 5, 7, -7}), vec<int64_t>({-kBig, kBig, -3, 3})}, {{"fmod", int_attr(1)}});
  EXPECT_EQ(values<int64_t>(m1), (std::vector<int64_t>{5, -5, 1, -1}));
  // Two's complement wrap-around, no detour through double.
  int64_t mx = std::numeric_limits<int64_t>::max(), mn = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(values<int64_t>(run1("Add", {vec<int64_t>({mx}), vec<int64_t>({1})})), (std::vector<int64_t>{mn}));
  EXPECT_EQ(values<int64_t>(run1("Add", {vec<int64_t>({(int64_t(1) << 53) + 1}), vec<int64_t>({2})})),
            (std::vector<int64_t>{(int64_t(1) << 53) + 3}));
  EXPECT_EQ(values<int64_t>(run1("Div", {vec<int64_t>({mn}), vec<int64_t>({-1})})), (std::vector<int64_t>{mn}));
}

TEST(CpuElementwiseBinary, SmallIntegerTypesWrap) {
  EXPECT_EQ(values<uint8_t>(run1("Add", {vec<uint8_t>({250}), vec<uint8_t>({10})})), (std::vector<uint8_t>{4}));
  EXPECT_EQ(values<int8_t>(run1("Sub", {vec<int8_t>({-128}), vec<int8_t>({1})})), (std::vector<int8_t>{127}));
  EXPECT_EQ(values<uint16_t>(run1("Mul", {vec<uint16_t>({65535}), vec<uint16_t>({65535})})), (std::vector<uint16_t>{1}));
  EXPECT_EQ(values<int32_t>(run1("Mod", {vec<int32_t>({-7, 7}), vec<int32_t>({3, -3})})), (std::vector<int32_t>{2, -2}));
}

TEST(CpuElementwiseBinary, IntegerDivideByZeroFails) {
  try {
    run1("Div", {vec<int64_t>({1, 2}), vec<int64_t>({1, 0})});
    FAIL() << "expected an error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n0' (Div)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run1("Mod", {vec<int32_t>({1}), vec<int32_t>({0})}), InvalidArgument);
  EXPECT_THROW(run1("Div", {vec<uint8_t>({1}), vec<uint8_t>({0})}), InvalidArgument);
  // Floats divide by zero per IEEE.
  EXPECT_TRUE(std::isinf(run1("Div", {vec<float>({1}), vec<float>({0})}).data<float>()[0]));
}

TEST(CpuElementwiseBinary, ModFloatSignOfDivisorOrDividend) {
  // fmod=0: numpy's mod (the sign of the divisor; x mod +-inf keeps x or moves to +-inf; zeros take b's sign).
  float inf = std::numeric_limits<float>::infinity();
  auto m0 = values<float>(run1("Mod", {vec<float>({-4.5f, 4.5f, -3.0f, 3.0f, 1.0f, 0.0f}),
                                       vec<float>({2.0f, -2.0f, inf, inf, -inf, -2.0f})}));
  EXPECT_EQ(m0, (std::vector<float>{1.5f, -1.5f, inf, 3.0f, -inf, 0.0f}));
  EXPECT_TRUE(std::signbit(m0[5]));
  EXPECT_TRUE(std::isnan(values<float>(run1("Mod", {vec<float>({1.0f}), vec<float>({0.0f})}))[0]));
  EXPECT_TRUE(std::isnan(values<double>(run1("Mod", {vec<double>({inf}), vec<double>({2.0})}))[0]));
  auto m = values<float>(run1("Mod", {vec<float>({-4.5f, 4.5f}), vec<float>({2.0f, -2.0f})}, {{"fmod", int_attr(1)}}));
  EXPECT_EQ(m, (std::vector<float>{-0.5f, 0.5f}));
}

TEST(CpuElementwiseBinary, PowMixedTypes) {
  EXPECT_EQ(values<int64_t>(run1("Pow", {vec<int64_t>({3, -2, 2}), vec<int64_t>({30, 3, 62})})),
            (std::vector<int64_t>{205891132094649, -8, int64_t(1) << 62}));
  EXPECT_EQ(values<float>(run1("Pow", {vec<float>({2.0f, 9.0f}), vec<int64_t>({3, -1})})), (std::vector<float>{8.0f, 1.0f / 9}));
  EXPECT_EQ(values<int32_t>(run1("Pow", {vec<int32_t>({2, 9}), vec<float>({0.5f, 0.5f})})), (std::vector<int32_t>{1, 3}));
}

TEST(CpuElementwiseBinary, ComparisonsAndLogic) {
  Tensor a = vec<int64_t>({kBig, kBig + 1, -kBig});
  Tensor b = Tensor::scalar<int64_t>(kBig);
  EXPECT_EQ(values<bool>(run1("Equal", {a, b})), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(values<bool>(run1("Greater", {a, b})), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(values<bool>(run1("LessOrEqual", {a, b})), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(values<bool>(run1("Equal", {vec<bool>({true, false}), vec<bool>({true, true})})), (std::vector<bool>{true, false}));
  Tensor p = Tensor::from_vector<bool>({2, 1}, {true, false});
  Tensor q = vec<bool>({true, false});
  Tensor x = run1("Xor", {p, q});
  EXPECT_EQ(x.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<bool>(x), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values<uint64_t>(run1("BitShift", {vec<uint64_t>({1, 1, 16}), vec<uint64_t>({40, 64, 2})}, {{"direction", string_attr("LEFT")}})),
            (std::vector<uint64_t>{uint64_t(1) << 40, 0, 64}));
  EXPECT_EQ(values<uint8_t>(run1("BitShift", {vec<uint8_t>({16, 255}), vec<uint8_t>({2, 7})}, {{"direction", string_attr("RIGHT")}})),
            (std::vector<uint8_t>{4, 1}));
  // Signed types: arithmetic right shifts, wrapping left shifts; amounts >= the width (negative ones
  // included, as their unsigned bits) give 0, or the sign's fill to the right.
  EXPECT_EQ(values<int8_t>(run1("BitShift", {vec<int8_t>({64, 1, -64, -8, 4}), vec<int8_t>({1, 7, 1, -1, 8})},
                                {{"direction", string_attr("LEFT")}})),
            (std::vector<int8_t>{-128, -128, -128, 0, 0}));
  EXPECT_EQ(values<int8_t>(run1("BitShift", {vec<int8_t>({-8, -128, -8, 4, -1}), vec<int8_t>({1, 1, -1, -8, 127})},
                                {{"direction", string_attr("RIGHT")}})),
            (std::vector<int8_t>{-4, -64, -1, 0, -1}));
  EXPECT_EQ(values<int64_t>(run1("BitShift", {vec<int64_t>({-kBig, 3}), vec<int64_t>({3, 62})}, {{"direction", string_attr("RIGHT")}})),
            (std::vector<int64_t>{-kBig >> 3, 0}));
  EXPECT_EQ(values<int64_t>(run1("BitwiseAnd", {vec<int64_t>({kBig + 5, -1}), vec<int64_t>({-kBig, 7})})),
            (std::vector<int64_t>{(kBig + 5) & -kBig, 7}));
  EXPECT_EQ(values<uint16_t>(run1("BitwiseOr", {vec<uint16_t>({0x8001, 2}), vec<uint16_t>({0x0100, 2})})),
            (std::vector<uint16_t>{0x8101, 2}));
  EXPECT_EQ(values<int32_t>(run1("BitwiseXor", {vec<int32_t>({-1, 5}), vec<int32_t>({1, 3})})), (std::vector<int32_t>{-2, 6}));
  EXPECT_EQ(values<uint64_t>(run1("BitwiseNot", {vec<uint64_t>({0, uint64_t(1) << 40})})),
            (std::vector<uint64_t>{~uint64_t(0), ~(uint64_t(1) << 40)}));
  EXPECT_EQ(values<int8_t>(run1("BitwiseNot", {vec<int8_t>({0, -128})})), (std::vector<int8_t>{-1, 127}));
}

TEST(CpuElementwiseBinary, WhereBroadcastsThreeWays) {
  Tensor c = Tensor::from_vector<bool>({2, 1}, {true, false});
  Tensor x = vec<int64_t>({kBig, kBig + 1, kBig + 2});
  Tensor y = Tensor::scalar<int64_t>(-1);
  Tensor w = run1("Where", {c, x, y});
  EXPECT_EQ(w.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>(w), (std::vector<int64_t>{kBig, kBig + 1, kBig + 2, -1, -1, -1}));
  Tensor s = run1("Where", {vec<bool>({false, true}), Tensor::strings({2}, {"a", "b"}), Tensor::strings({1}, {"z"})});
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"z", "b"}));
  EXPECT_THROW(run1("Where", {vec<int32_t>({1}), x, y}), InvalidArgument);
}

TEST(CpuElementwiseBinary, PRelu) {
  Tensor x = Tensor::from_vector<float>({2, 2}, {-1, 2, -3, 4});
  Tensor slope = vec<float>({0.5f, 0.25f});
  EXPECT_EQ(values<float>(run1("PRelu", {x, slope})), (std::vector<float>{-0.5f, 2, -1.5f, 4}));
  EXPECT_THROW(run1("PRelu", {vec<float>({1}), slope}), InvalidArgument);  // slope must not grow X
}

TEST(CpuElementwiseBinary, VariadicMaxMinSumMean) {
  Tensor a = vec<float>({1, NAN, 3});
  Tensor b = Tensor::from_vector<float>({2, 1}, {2, 0});
  Tensor c = Tensor::scalar<float>(1.5f);
  Tensor mx = run1("Max", {a, b, c});
  EXPECT_EQ(mx.shape(), (Shape{2, 3}));
  auto v = values<float>(mx);
  EXPECT_EQ(v[0], 2.0f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 3.0f);
  EXPECT_EQ(v[3], 1.5f);
  auto mn = values<float>(run1("Min", {a, b}));
  EXPECT_EQ(mn[0], 1.0f);
  EXPECT_TRUE(std::isnan(mn[1]));
  EXPECT_EQ(values<float>(run1("Sum", {vec<float>({1, 2}), vec<float>({3, 4}), Tensor::scalar<float>(1)})), (std::vector<float>{5, 7}));
  EXPECT_EQ(values<float>(run1("Mean", {vec<float>({1, 2}), vec<float>({3, 5})})), (std::vector<float>{2, 3.5f}));
  EXPECT_EQ(values<float>(run1("Max", {vec<float>({1, 2})})), (std::vector<float>{1, 2}));
  EXPECT_EQ(values<int64_t>(run1("Max", {vec<int64_t>({kBig, -kBig}), vec<int64_t>({kBig + 1, -kBig - 1})})),
            (std::vector<int64_t>{kBig + 1, -kBig}));
}

// ---------------------------------------------------------------------------------------------------
// Cast and Clip

TEST(CpuElementwiseCast, FloatToInt64Truncates) {
  Tensor x = vec<float>({1.9f, -1.9f, 1099511627776.0f, -0.5f});
  Tensor y = run1("Cast", {x}, {{"to", int_attr(int64_t(DType::Int64))}});
  ASSERT_EQ(y.dtype(), DType::Int64);
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{1, -1, kBig, 0}));
  Tensor d = run1("Cast", {vec<double>({-kBig - 0.75})}, {{"to", int_attr(int64_t(DType::Int64))}});
  EXPECT_EQ(values<int64_t>(d), (std::vector<int64_t>{-kBig}));
  // NaN and out-of-range values do not invoke UB.
  Tensor n = run1("Cast", {vec<float>({NAN, 1e30f})}, {{"to", int_attr(int64_t(DType::Int64))}});
  EXPECT_EQ(values<int64_t>(n)[0], 0);
}

TEST(CpuElementwiseCast, Int64ToFloat) {
  Tensor x = vec<int64_t>({kBig + 1, -3, (int64_t(1) << 53) + 1});
  Tensor f = run1("Cast", {x}, {{"to", int_attr(int64_t(DType::Float32))}});
  EXPECT_EQ(values<float>(f), (std::vector<float>{float(kBig), -3.0f, float(int64_t(1) << 53)}));
  Tensor d = run1("Cast", {x}, {{"to", int_attr(int64_t(DType::Float64))}});
  EXPECT_EQ(values<double>(d), (std::vector<double>{double(kBig + 1), -3.0, double(int64_t(1) << 53)}));
  Tensor h = run1("Cast", {x}, {{"to", int_attr(int64_t(DType::Float16))}});
  EXPECT_TRUE(std::isinf(float(h.data<Float16>()[0])));
  EXPECT_EQ(float(h.data<Float16>()[1]), -3.0f);
}

TEST(CpuElementwiseCast, BoolStringAndLegacyNames) {
  Tensor b = run1("Cast", {vec<float>({0.0f, -2.0f, NAN})}, {{"to", int_attr(int64_t(DType::Bool))}});
  EXPECT_EQ(values<bool>(b), (std::vector<bool>{false, true, true}));
  Tensor s = run1("Cast", {vec<float>({0.5f, 0.1f, INFINITY})}, {{"to", int_attr(int64_t(DType::String))}});
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"0.5", "0.1", "INF"}));
  Tensor f = run1("Cast", {Tensor::strings({3}, {"1.25", "-INF", "NaN"})}, {{"to", int_attr(int64_t(DType::Float32))}});
  EXPECT_EQ(f.data<float>()[0], 1.25f);
  EXPECT_TRUE(std::isinf(f.data<float>()[1]));
  EXPECT_TRUE(std::isnan(f.data<float>()[2]));
  Tensor i = run1("Cast", {Tensor::strings({1}, {"-1099511627776"})}, {{"to", int_attr(int64_t(DType::Int64))}});
  EXPECT_EQ(values<int64_t>(i), (std::vector<int64_t>{-kBig}));
  EXPECT_THROW(run1("Cast", {Tensor::strings({1}, {"abc"})}, {{"to", int_attr(int64_t(DType::Int32))}}), InvalidArgument);
  Tensor l = run1("Cast", {vec<int32_t>({7})}, {{"to", string_attr("DOUBLE")}}, 1);
  EXPECT_EQ(values<double>(l), (std::vector<double>{7.0}));
  Tensor like = run1("CastLike", {vec<double>({2.5}), vec<uint8_t>({0})});
  EXPECT_EQ(values<uint8_t>(like), (std::vector<uint8_t>{2}));
}

TEST(CpuElementwiseCast, DoubleToFloat16RoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the halfway point between two float16 values; rounding via float
  // would land exactly on the tie and round down to 1.
  double v = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  Tensor h = run1("Cast", {vec<double>({v})}, {{"to", int_attr(int64_t(DType::Float16))}});
  EXPECT_EQ(float(h.data<Float16>()[0]), 1.0f + std::ldexp(1.0f, -10));
}

TEST(CpuElementwiseCast, Clip) {
  Tensor x = vec<float>({-5, 0.5f, 5, NAN});
  auto c = values<float>(run1("Clip", {x, Tensor::scalar<float>(-1), Tensor::scalar<float>(1)}));
  EXPECT_EQ(c[0], -1);
  EXPECT_EQ(c[1], 0.5f);
  EXPECT_EQ(c[2], 1);
  EXPECT_TRUE(std::isnan(c[3]));
  auto only_max = values<float>(run1("Clip", {x, Tensor(), Tensor::scalar<float>(0)}));
  EXPECT_EQ(only_max[0], -5);
  EXPECT_EQ(only_max[2], 0);
  auto old = values<float>(run1("Clip", {x}, {{"min", float_attr(-2)}, {"max", float_attr(2)}}, 6));
  EXPECT_EQ(old[0], -2);
  EXPECT_EQ(old[2], 2);
  Tensor xi = vec<int64_t>({-kBig, 0, kBig});
  auto ci = values<int64_t>(run1("Clip", {xi, Tensor::scalar<int64_t>(-kBig + 1), Tensor::scalar<int64_t>(kBig - 1)}));
  EXPECT_EQ(ci, (std::vector<int64_t>{-kBig + 1, 0, kBig - 1}));
  EXPECT_EQ(values<uint8_t>(run1("Clip", {vec<uint8_t>({3, 200})})), (std::vector<uint8_t>{3, 200}));
  EXPECT_THROW(run1("Clip", {xi, Tensor::scalar<int32_t>(0)}), InvalidArgument);
}

TEST(CpuElementwiseBinary, EmptyAndOtherTypes) {
  Tensor e(DType::Float32, {0, 3});
  Tensor y = run1("Add", {e, vec<float>({1, 2, 3})});
  EXPECT_EQ(y.shape(), (Shape{0, 3}));
  EXPECT_EQ(run1("Where", {Tensor(DType::Bool, {0}), vec<float>({1}), vec<float>({2})}).shape(), (Shape{0}));
  EXPECT_EQ(run1("Max", {e, Tensor::scalar<float>(1)}).shape(), (Shape{0, 3}));
  uint64_t big = uint64_t(1) << 63;
  EXPECT_EQ(values<uint64_t>(run1("Div", {vec<uint64_t>({big + 10}), vec<uint64_t>({2})})), (std::vector<uint64_t>{(big >> 1) + 5}));
  EXPECT_EQ(values<uint64_t>(run1("Mod", {vec<uint64_t>({big + 10}), vec<uint64_t>({big})})), (std::vector<uint64_t>{10}));
  Tensor h = run1("Add", {Tensor::from_vector<Float16>({2, 1}, {Float16(1.0f), Float16(2.0f)}),
                          Tensor::from_vector<Float16>({2}, {Float16(0.5f), Float16(2048.0f)})});
  ASSERT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(float(h.data<Float16>()[0]), 1.5f);
  EXPECT_EQ(float(h.data<Float16>()[1]), 2048.0f);  // 2049 rounds to even in float16
  EXPECT_EQ(float(h.data<Float16>()[3]), 2050.0f);
  EXPECT_EQ(values<int32_t>(run1("Pow", {vec<int32_t>({2, -1, 1}), vec<int32_t>({-1, -3, -5})})), (std::vector<int32_t>{0, -1, 1}));
  EXPECT_THROW(run1("Pow", {vec<int64_t>({0}), vec<int64_t>({-1})}), InvalidArgument);
}
