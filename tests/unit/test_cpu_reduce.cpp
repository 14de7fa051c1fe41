// Hand-built node tests of the reduce / softmax / sort / cumsum / loss CPU kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cpu/kernel.h"
#include "ir/graph.h"
#include "onnxgpu/tensor.h"

using namespace onnxgpu;

namespace {

ir::Attribute int_attr(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Int;
  a.i = v;
  return a;
}
ir::Attribute ints_attr(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
ir::Attribute string_attr(std::string v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::String;
  a.s = std::move(v);
  return a;
}

// Runs `op` at `opset` on the inputs (an undefined Tensor marks an omitted optional input).
std::vector<Tensor> run(const std::string& op, int64_t opset, std::vector<Tensor> inputs,
                        std::map<std::string, ir::Attribute> attrs = {}, size_t num_outputs = 1) {
  ir::Node node;
  node.name = "n";
  node.op_type = op;
  for (size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back(inputs[i].defined() ? "in" + std::to_string(i) : "");
  for (size_t i = 0; i < num_outputs; ++i) node.outputs.push_back("out" + std::to_string(i));
  node.attrs = std::move(attrs);
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  const cpu::Kernel* k = cpu::registry().find(op);
  EXPECT_NE(k, nullptr) << op;
  if (!k) return {};
  cpu::KernelContext ctx(node, opset, ptrs);
  return (*k)(ctx);
}

template <class T>
std::vector<T> values(const Tensor& t) {
  auto s = t.span<T>();
  return std::vector<T>(s.begin(), s.end());
}

Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }
Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

}  // namespace

TEST(CpuReduce, ReduceSumInt64IsExactBeyond2To32) {
  const int64_t big = (int64_t(1) << 53) + 1;  // not representable in double
  Tensor x = i64({2, 3}, {big, big, 3, int64_t(1) << 40, -(int64_t(1) << 33), 7});
  auto y = run("ReduceSum", 13, {x, i64({1}, {1})}, {{"keepdims", int_attr(0)}});
  ASSERT_EQ(y[0].shape(), (Shape{2}));
  EXPECT_EQ(values<int64_t>(y[0]), (std::vector<int64_t>{2 * big + 3, (int64_t(1) << 40) - (int64_t(1) << 33) + 7}));
  // Opset 11: axes attribute; default is every axis.
  auto all = run("ReduceSum", 11, {x}, {});
  ASSERT_EQ(all[0].shape(), (Shape{1, 1}));
  EXPECT_EQ(values<int64_t>(all[0])[0], 2 * big + 3 + (int64_t(1) << 40) - (int64_t(1) << 33) + 7);
}

TEST(CpuReduce, ReduceAxesFormsAndNoop) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  // Opset 13: ReduceMean still takes the attribute, negative axes allowed.
  auto m = run("ReduceMean", 13, {x}, {{"axes", ints_attr({-1})}});
  EXPECT_EQ(m[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(values<float>(m[0]), (std::vector<float>{1.5f, 3.5f}));
  // Opset 18: axes as input; empty axes with noop_with_empty_axes returns the input.
  auto n = run("ReduceMax", 18, {x, i64({0}, {})}, {{"noop_with_empty_axes", int_attr(1)}});
  EXPECT_EQ(n[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(n[0]), (std::vector<float>{1, 2, 3, 4}));
  auto sq = run("ReduceSumSquare", 18, {x}, {{"noop_with_empty_axes", int_attr(1)}});
  EXPECT_EQ(values<float>(sq[0]), (std::vector<float>{1, 4, 9, 16}));
  auto all = run("ReduceSum", 13, {x, i64({0}, {})}, {{"keepdims", int_attr(0)}});
  EXPECT_EQ(all[0].shape(), (Shape{}));
  EXPECT_EQ(values<float>(all[0])[0], 10.0f);
  EXPECT_THROW(run("ReduceSum", 13, {x, i64({1}, {2})}), InvalidArgument);
  EXPECT_THROW(run("ReduceL2", 11, {x}, {{"axes", ints_attr({0, -2})}}), InvalidArgument);
}

TEST(CpuReduce, ReduceOverZeroSizeGivesIdentity) {
  Tensor x(DType::Float32, {2, 0});
  auto s = run("ReduceSum", 13, {x, i64({1}, {1})});
  EXPECT_EQ(values<float>(s[0]), (std::vector<float>{0, 0}));
  auto mx = run("ReduceMax", 13, {x}, {{"axes", ints_attr({1})}});
  EXPECT_EQ(values<float>(mx[0])[0], -std::numeric_limits<float>::infinity());
  auto mn = run("ReduceMin", 13, {x}, {{"axes", ints_attr({1})}});
  EXPECT_EQ(values<float>(mn[0])[0], std::numeric_limits<float>::infinity());
  auto p = run("ReduceProd", 13, {x}, {{"axes", ints_attr({1})}});
  EXPECT_EQ(values<float>(p[0])[0], 1.0f);
  auto ls = run("ReduceLogSumExp", 13, {x}, {{"axes", ints_attr({1})}});
  EXPECT_EQ(values<float>(ls[0])[0], -std::numeric_limits<float>::infinity());
  Tensor xi(DType::Int32, {0, 3});
  auto mi = run("ReduceMax", 13, {xi}, {{"axes", ints_attr({0})}, {"keepdims", int_attr(0)}});
  EXPECT_EQ(values<int32_t>(mi[0]), (std::vector<int32_t>(3, std::numeric_limits<int32_t>::min())));
}

TEST(CpuReduce, ReduceFloatKindsAndTypes) {
  Tensor x = Tensor::from_vector<double>({3}, {1, -2, 3});
  auto l1 = run("ReduceL1", 13, {x});
  EXPECT_EQ(values<double>(l1[0])[0], 6);
  auto l2 = run("ReduceL2", 13, {x});
  EXPECT_DOUBLE_EQ(values<double>(l2[0])[0], std::sqrt(14.0));
  auto lse = run("ReduceLogSumExp", 13, {x});
  EXPECT_NEAR(values<double>(lse[0])[0], std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(3.0)), 1e-12);
  auto prod = run("ReduceProd", 13, {Tensor::from_vector<uint32_t>({3}, {2, 3, 4})});
  EXPECT_EQ(values<uint32_t>(prod[0])[0], 24u);
  auto h = run("ReduceMean", 13, {Tensor::from_vector<Float16>({2}, {Float16(1.0f), Float16(2.0f)})});
  EXPECT_EQ(float(values<Float16>(h[0])[0]), 1.5f);
  auto mean_i = run("ReduceMean", 13, {Tensor::from_vector<int32_t>({2}, {-3, 0})});
  EXPECT_EQ(values<int32_t>(mean_i[0])[0], -1);  // truncates toward zero
  EXPECT_THROW(run("ReduceSum", 13, {Tensor::from_vector<int8_t>({1}, {1})}), InvalidArgument);
}

TEST(CpuReduce, ArgMaxTiesAndSelectLastIndex) {
  Tensor x = f32({2, 4}, {1, 5, 5, 2, 3, 3, 0, 3});
  auto first = run("ArgMax", 13, {x}, {{"axis", int_attr(1)}});
  EXPECT_EQ(first[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(values<int64_t>(first[0]), (std::vector<int64_t>{1, 0}));
  auto last = run("ArgMax", 13, {x}, {{"axis", int_attr(-1)}, {"select_last_index", int_attr(1)}, {"keepdims", int_attr(0)}});
  EXPECT_EQ(last[0].shape(), (Shape{2}));
  EXPECT_EQ(values<int64_t>(last[0]), (std::vector<int64_t>{2, 3}));
  auto amin = run("ArgMin", 13, {x}, {{"axis", int_attr(0)}, {"select_last_index", int_attr(1)}});
  EXPECT_EQ(values<int64_t>(amin[0]), (std::vector<int64_t>{0, 1, 1, 0}));
  auto amin_first = run("ArgMin", 13, {i64({3}, {7, 7, 7})});
  EXPECT_EQ(values<int64_t>(amin_first[0]), (std::vector<int64_t>{0}));
  EXPECT_THROW(run("ArgMax", 13, {x}, {{"axis", int_attr(2)}}), InvalidArgument);
}

TEST(CpuReduce, CumSumInt64ExclusiveReverse) {
  const int64_t big = int64_t(1) << 60;
  Tensor x = i64({4}, {big, 1, 2, 3});
  Tensor axis = Tensor::scalar<int32_t>(0);
  EXPECT_EQ(values<int64_t>(run("CumSum", 14, {x, axis})[0]), (std::vector<int64_t>{big, big + 1, big + 3, big + 6}));
  EXPECT_EQ(values<int64_t>(run("CumSum", 14, {x, axis}, {{"exclusive", int_attr(1)}})[0]),
            (std::vector<int64_t>{0, big, big + 1, big + 3}));
  EXPECT_EQ(values<int64_t>(run("CumSum", 14, {x, axis}, {{"reverse", int_attr(1)}})[0]),
            (std::vector<int64_t>{big + 6, 6, 5, 3}));
  EXPECT_EQ(values<int64_t>(run("CumSum", 14, {x, axis}, {{"reverse", int_attr(1)}, {"exclusive", int_attr(1)}})[0]),
            (std::vector<int64_t>{6, 5, 3, 0}));
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values<float>(run("CumSum", 11, {m, i64({1}, {-1})})[0]), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_THROW(run("CumSum", 11, {m, i64({1}, {2})}), InvalidArgument);
}

TEST(CpuReduce, TopKTiesKeepLowerIndexFirst) {
  Tensor x = f32({2, 5}, {3, 1, 3, 2, 3, 0, 0, 1, 1, 0});
  auto big = run("TopK", 11, {x, i64({1}, {2})}, {}, 2);
  EXPECT_EQ(big[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(big[0]), (std::vector<float>{3, 3, 1, 1}));
  EXPECT_EQ(values<int64_t>(big[1]), (std::vector<int64_t>{0, 2, 2, 3}));
  auto small = run("TopK", 11, {x, i64({1}, {3})}, {{"largest", int_attr(0)}}, 2);
  EXPECT_EQ(values<float>(small[0]), (std::vector<float>{1, 2, 3, 0, 0, 0}));
  EXPECT_EQ(values<int64_t>(small[1]), (std::vector<int64_t>{1, 3, 0, 0, 1, 4}));
  // Opset 1: k attribute; axis 0.
  auto v1 = run("TopK", 1, {x}, {{"k", int_attr(1)}, {"axis", int_attr(0)}}, 2);
  EXPECT_EQ(values<int64_t>(v1[1]), (std::vector<int64_t>{0, 0, 0, 0, 0}));
  EXPECT_THROW(run("TopK", 11, {x, i64({1}, {6})}, {}, 2), InvalidArgument);
}

TEST(CpuReduce, SoftmaxAxisOpset11VersusOpset13) {
  Tensor x = f32({2, 2}, {0, 0, 0, std::log(3.0f)});
  // Opset 11, axis 0: the whole [2,2] is coerced to one row of 4.
  auto v11 = values<float>(run("Softmax", 11, {x}, {{"axis", int_attr(0)}})[0]);
  EXPECT_NEAR(v11[0], 1.0 / 6, 1e-6);
  EXPECT_NEAR(v11[3], 3.0 / 6, 1e-6);
  // Opset 13, axis 0: along the columns.
  auto v13 = values<float>(run("Softmax", 13, {x}, {{"axis", int_attr(0)}})[0]);
  EXPECT_NEAR(v13[0], 0.5, 1e-6);
  EXPECT_NEAR(v13[1], 0.25, 1e-6);
  EXPECT_NEAR(v13[3], 0.75, 1e-6);
  // Defaults: opset 11 axis 1 (rows of a [2,2] coerced at 1), opset 13 axis -1.
  Tensor y = f32({2, 1, 2}, {0, 0, 0, std::log(3.0f)});
  auto d11 = values<float>(run("Softmax", 11, {y})[0]);  // coerced to [2, 2]
  EXPECT_NEAR(d11[3], 0.75, 1e-6);
  auto d13 = values<float>(run("LogSoftmax", 13, {y})[0]);
  EXPECT_NEAR(d13[2], std::log(0.25), 1e-6);
  auto hm = values<float>(run("Hardmax", 11, {y}, {{"axis", int_attr(0)}})[0]);
  EXPECT_EQ(hm, (std::vector<float>{0, 0, 0, 1}));
  // Opset 1 tolerates axis == rank: every element is its own row.
  EXPECT_EQ(values<float>(run("Softmax", 1, {f32({2}, {3, 4})})[0]), (std::vector<float>{1, 1}));
  EXPECT_THROW(run("Softmax", 13, {x}, {{"axis", int_attr(2)}}), InvalidArgument);
  auto large = values<float>(run("Softmax", 13, {f32({2}, {1e30f, 1e30f})})[0]);
  EXPECT_EQ(large, (std::vector<float>{0.5f, 0.5f}));
}

TEST(CpuReduce, UniqueAndNonZero) {
  Tensor x = f32({6}, {2, 1, 1, 3, 4, 3});
  auto u = run("Unique", 11, {x}, {{"sorted", int_attr(0)}}, 4);
  EXPECT_EQ(values<float>(u[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>(u[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>(u[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(values<int64_t>(u[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  Tensor m = i64({3, 2}, {1, 0, 0, 1, 1, 0});
  auto ua = run("Unique", 11, {m}, {{"axis", int_attr(0)}}, 4);
  EXPECT_EQ(ua[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int64_t>(ua[0]), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(values<int64_t>(ua[2]), (std::vector<int64_t>{1, 0, 1}));
  auto us = run("Unique", 11, {Tensor::strings({4}, {"b", "a", "b", "c"})}, {}, 4);
  EXPECT_EQ(us[0].string_data(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(values<int64_t>(us[2]), (std::vector<int64_t>{1, 0, 1, 2}));
  auto nz = run("NonZero", 13, {m});
  EXPECT_EQ(nz[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>(nz[0]), (std::vector<int64_t>{0, 1, 2, 0, 1, 0}));
}

TEST(CpuReduce, LossesWeightsAndIgnoreIndex) {
  // log-probabilities [N=2, C=3]
  Tensor lp = f32({2, 3}, {-1, -2, -3, -4, -5, -6});
  Tensor t = i64({2}, {2, 0});
  Tensor w = f32({3}, {1, 2, 3});
  auto none = run("NegativeLogLikelihoodLoss", 13, {lp, t, w}, {{"reduction", string_attr("none")}});
  EXPECT_EQ(values<float>(none[0]), (std::vector<float>{9, 4}));
  auto mean = run("NegativeLogLikelihoodLoss", 13, {lp, t, w});
  EXPECT_FLOAT_EQ(values<float>(mean[0])[0], 13.0f / 4);
  auto ii = run("NegativeLogLikelihoodLoss", 13, {lp, t}, {{"ignore_index", int_attr(2)}});
  EXPECT_FLOAT_EQ(values<float>(ii[0])[0], 4.0f);
  EXPECT_THROW(run("NegativeLogLikelihoodLoss", 13, {lp, i64({2}, {3, 0})}), InvalidArgument);
  auto sce = run("SoftmaxCrossEntropyLoss", 13, {f32({1, 2}, {0, 0}), i64({1}, {1})}, {{"reduction", string_attr("sum")}}, 2);
  ASSERT_EQ(sce.size(), 2u);
  EXPECT_NEAR(values<float>(sce[0])[0], std::log(2.0), 1e-6);
  EXPECT_NEAR(values<float>(sce[1])[0], -std::log(2.0), 1e-6);
}
