// Hand-built node tests of the shape, layout, generator and indexing CPU kernels.
#include <gtest/gtest.h>

#include <climits>

#include "cpu/kernel.h"

using namespace onnxgpu;

namespace {

ir::Attribute ints_attr(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
ir::Attribute int_attr(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Int;
  a.i = v;
  return a;
}
ir::Attribute string_attr(std::string v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::String;
  a.s = std::move(v);
  return a;
}

// Runs `op` on `inputs` (an undefined Tensor marks an omitted optional input).
std::vector<Tensor> run(const std::string& op, std::vector<Tensor> inputs, std::map<std::string, ir::Attribute> attrs = {},
                        int64_t opset = 17, size_t outputs = 1) {
  ir::Node n;
  n.name = "n";
  n.op_type = op;
  n.attrs = std::move(attrs);
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    n.inputs.push_back(inputs[i].defined() ? "in" + std::to_string(i) : "");
    ptrs.push_back(&inputs[i]);
  }
  for (size_t i = 0; i < outputs; ++i) n.outputs.push_back("out" + std::to_string(i));
  const cpu::Kernel* k = cpu::registry().find(op);
  if (!k) throw std::runtime_error("no kernel for " + op);
  cpu::KernelContext ctx(n, opset, ptrs);
  return (*k)(ctx);
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

std::vector<float> iota_f(int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = float(i);
  return v;
}

}  // namespace

TEST(CpuShape, ReshapeZeroCopiesAndMinusOneInfers) {
  Tensor x = Tensor::from_vector<float>({2, 3, 4}, iota_f(24));
  auto y = run("Reshape", {x, vec<int64_t>({0, -1})});
  EXPECT_EQ(y[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(values<float>(y[0]), iota_f(24));
  y = run("Reshape", {x, vec<int64_t>({-1, 0, 2})});
  EXPECT_EQ(y[0].shape(), (Shape{4, 3, 2}));
  // allowzero: a 0 is a real zero-sized dimension
  Tensor e(DType::Float32, {0, 3});
  y = run("Reshape", {e, vec<int64_t>({3, 0})}, {{"allowzero", int_attr(1)}}, 14);
  EXPECT_EQ(y[0].shape(), (Shape{3, 0}));
  EXPECT_THROW(run("Reshape", {x, vec<int64_t>({-1, -1})}), InvalidArgument);
  EXPECT_THROW(run("Reshape", {x, vec<int64_t>({5, -1})}), InvalidArgument);
  // opset 1: shape attribute
  y = run("Reshape", {x}, {{"shape", ints_attr({4, 0, -1})}}, 1);
  EXPECT_EQ(y[0].shape(), (Shape{4, 3, 2}));
}

TEST(CpuShape, SqueezeUnsqueezeFlattenShape) {
  Tensor x = Tensor::from_vector<float>({1, 3, 1}, {1, 2, 3});
  EXPECT_EQ(run("Squeeze", {x})[0].shape(), (Shape{3}));
  EXPECT_EQ(run("Squeeze", {x, vec<int64_t>({-1})})[0].shape(), (Shape{1, 3}));
  EXPECT_EQ(run("Squeeze", {x}, {{"axes", ints_attr({0})}}, 11)[0].shape(), (Shape{3, 1}));
  EXPECT_THROW(run("Squeeze", {x, vec<int64_t>({1})}), InvalidArgument);
  EXPECT_EQ(run("Unsqueeze", {x, vec<int64_t>({-1, 0})})[0].shape(), (Shape{1, 1, 3, 1, 1}));
  EXPECT_EQ(run("Unsqueeze", {x}, {{"axes", ints_attr({1})}}, 11)[0].shape(), (Shape{1, 1, 3, 1}));
  EXPECT_EQ(run("Flatten", {x}, {{"axis", int_attr(-1)}})[0].shape(), (Shape{3, 1}));
  EXPECT_EQ(run("Flatten", {x}, {{"axis", int_attr(0)}})[0].shape(), (Shape{1, 3}));
  auto s = run("Shape", {x}, {{"start", int_attr(-2)}, {"end", int_attr(100)}}, 15);
  EXPECT_EQ(values<int64_t>(s[0]), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(values<int64_t>(run("Size", {x})[0]), (std::vector<int64_t>{3}));
}

TEST(CpuShape, SliceInt64MaxEndsAndNegativeSteps) {
  Tensor x = Tensor::from_vector<float>({3, 4}, iota_f(12));
  // Reverse every axis: starts -1, ends INT64_MIN, steps -1.
  auto y = run("Slice", {x, vec<int64_t>({-1, -1}), vec<int64_t>({INT64_MIN, INT64_MIN}), vec<int64_t>({0, 1}),
                         vec<int64_t>({-1, -1})});
  EXPECT_EQ(y[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  // ends INT64_MAX, start 1, step 2 on axis 1 only (axes given, steps omitted on the other call).
  y = run("Slice", {x, vec<int64_t>({1}), vec<int64_t>({INT64_MAX}), vec<int64_t>({-1}), vec<int64_t>({2})});
  EXPECT_EQ(y[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{1, 3, 5, 7, 9, 11}));
  // Negative step -2 from INT64_MAX (clamped to the last element) down to the start.
  y = run("Slice", {x, vec<int64_t>({INT64_MAX}), vec<int64_t>({-100}), vec<int64_t>({1}), vec<int64_t>({-2})});
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{3, 1, 7, 5, 11, 9}));
  // Empty result, huge step, int32 starts/ends, opset 1 attributes.
  y = run("Slice", {x, vec<int32_t>({2}), vec<int32_t>({1}), Tensor(), Tensor()});
  EXPECT_EQ(y[0].shape(), (Shape{0, 4}));
  y = run("Slice", {x, vec<int64_t>({0}), vec<int64_t>({INT64_MAX}), vec<int64_t>({1}), vec<int64_t>({INT64_MAX})});
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{0, 4, 8}));
  y = run("Slice", {x}, {{"starts", ints_attr({1})}, {"ends", ints_attr({1000})}, {"axes", ints_attr({0})}}, 1);
  EXPECT_EQ(y[0].shape(), (Shape{2, 4}));
  EXPECT_THROW(run("Slice", {x, vec<int64_t>({0}), vec<int64_t>({1}), vec<int64_t>({0}), vec<int64_t>({0})}),
               InvalidArgument);
}

TEST(CpuShape, GatherNegativeIndicesAndOutOfRange) {
  Tensor x = Tensor::from_vector<int64_t>({3, 2}, {10, 11, 20, 21, 30, 31});
  auto y = run("Gather", {x, Tensor::from_vector<int64_t>({2, 2}, {-1, 0, -3, 2})});
  EXPECT_EQ(y[0].shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values<int64_t>(y[0]), (std::vector<int64_t>{30, 31, 10, 11, 10, 11, 30, 31}));
  y = run("Gather", {x, vec<int64_t>({-2})}, {{"axis", int_attr(1)}});
  EXPECT_EQ(values<int64_t>(y[0]), (std::vector<int64_t>{10, 20, 30}));
  try {
    run("Gather", {x, vec<int64_t>({0, 3})});
    FAIL() << "expected an error";
  } catch (const InvalidArgument& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("index 3"), std::string::npos) << m;
    EXPECT_NE(m.find("[-3, 2]"), std::string::npos) << m;
  }
  EXPECT_THROW(run("Gather", {x, vec<int32_t>({-4})}), InvalidArgument);
}

TEST(CpuShape, RangeInt64NegativeDeltaBeyond32Bits) {
  int64_t start = int64_t(1) << 40, limit = (int64_t(1) << 40) - 10'000'000'000LL, delta = -3'000'000'000LL;
  auto y = run("Range", {Tensor::scalar(start), Tensor::scalar(limit), Tensor::scalar(delta)});
  // ceil(-1e10 / -3e9) = 4
  EXPECT_EQ(values<int64_t>(y[0]), (std::vector<int64_t>{start, start + delta, start + 2 * delta, start + 3 * delta}));
  y = run("Range", {Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(10), Tensor::scalar<int64_t>(-1)});
  EXPECT_EQ(y[0].shape(), (Shape{0}));
  y = run("Range", {Tensor::scalar<int64_t>(INT64_MIN), Tensor::scalar<int64_t>(INT64_MAX),
                    Tensor::scalar<int64_t>(int64_t(1) << 62)});
  EXPECT_EQ(values<int64_t>(y[0]), (std::vector<int64_t>{INT64_MIN, -(int64_t(1) << 62), 0, int64_t(1) << 62}));
  y = run("Range", {Tensor::scalar<float>(1), Tensor::scalar<float>(0), Tensor::scalar<float>(-0.25f)});
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{1, 0.75f, 0.5f, 0.25f}));
  EXPECT_THROW(run("Range", {Tensor::scalar<int32_t>(0), Tensor::scalar<int32_t>(1), Tensor::scalar<int32_t>(0)}),
               InvalidArgument);
}

TEST(CpuShape, ExpandBroadcastsBothWays) {
  Tensor x = Tensor::from_vector<int32_t>({3, 1}, {1, 2, 3});
  auto y = run("Expand", {x, vec<int64_t>({2, 1, 2})});
  EXPECT_EQ(y[0].shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values<int32_t>(y[0]), (std::vector<int32_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  y = run("Expand", {x, vec<int64_t>({1})});  // shape smaller than the input: the input's shape wins
  EXPECT_EQ(y[0].shape(), (Shape{3, 1}));
  EXPECT_THROW(run("Expand", {x, vec<int64_t>({2, 2})}), InvalidArgument);
  // strings move like any other type
  Tensor s = Tensor::strings({1}, {"ab"});
  y = run("Expand", {s, vec<int64_t>({3})});
  EXPECT_EQ(y[0].string_data(), (std::vector<std::string>{"ab", "ab", "ab"}));
}

TEST(CpuShape, PadReflectEdgeConstantAndCrop) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto y = run("Pad", {x, vec<int64_t>({0, 2, 0, 1})}, {{"mode", string_attr("reflect")}});
  EXPECT_EQ(y[0].shape(), (Shape{2, 6}));
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}));
  y = run("Pad", {x, vec<int64_t>({1, 0, 0, 0})}, {{"mode", string_attr("reflect")}});
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{4, 5, 6, 1, 2, 3, 4, 5, 6}));
  y = run("Pad", {x, vec<int64_t>({0, 1, 0, 1})}, {{"mode", string_attr("edge")}});
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{1, 1, 2, 3, 3, 4, 4, 5, 6, 6}));
  y = run("Pad", {x, vec<int64_t>({1, -1, 0, 0}), Tensor::scalar<float>(9)});
  EXPECT_EQ(y[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{9, 9, 2, 3, 5, 6}));
  // opset 2: pads and value attributes
  ir::Attribute v;
  v.kind = ir::Attribute::Kind::Float;
  v.f = 7;
  y = run("Pad", {x}, {{"pads", ints_attr({0, 1, 0, 0})}, {"value", v}}, 2);
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{7, 1, 2, 3, 7, 4, 5, 6}));
  // opset 18: axes
  y = run("Pad", {x, vec<int64_t>({1, 1}), Tensor(), vec<int64_t>({-1})}, {}, 18);
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{0, 1, 2, 3, 0, 0, 4, 5, 6, 0}));
}

TEST(CpuShape, ConcatSplitTransposeTile) {
  Tensor a = Tensor::from_vector<uint16_t>({2, 1}, {1, 2}), b = Tensor::from_vector<uint16_t>({2, 2}, {3, 4, 5, 6});
  auto c = run("Concat", {a, b}, {{"axis", int_attr(-1)}});
  EXPECT_EQ(values<uint16_t>(c[0]), (std::vector<uint16_t>{1, 3, 4, 2, 5, 6}));
  auto s = run("Split", {c[0], vec<int64_t>({2, 1})}, {{"axis", int_attr(1)}}, 13, 2);
  EXPECT_EQ(values<uint16_t>(s[0]), (std::vector<uint16_t>{1, 3, 2, 5}));
  EXPECT_EQ(values<uint16_t>(s[1]), (std::vector<uint16_t>{4, 6}));
  s = run("Split", {vec<int32_t>({1, 2, 3, 4, 5})}, {{"num_outputs", int_attr(3)}}, 18, 3);
  EXPECT_EQ(values<int32_t>(s[2]), (std::vector<int32_t>{5}));
  auto t = run("Transpose", {c[0]});
  EXPECT_EQ(t[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values<uint16_t>(t[0]), (std::vector<uint16_t>{1, 2, 3, 5, 4, 6}));
  auto r = run("Tile", {a, vec<int64_t>({1, 2})});
  EXPECT_EQ(values<uint16_t>(r[0]), (std::vector<uint16_t>{1, 1, 2, 2}));
}

TEST(CpuShape, IndexingScatterAndCompress) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto g = run("GatherElements", {x, Tensor::from_vector<int64_t>({2, 2}, {-1, 0, 1, 1})}, {{"axis", int_attr(1)}});
  EXPECT_EQ(values<float>(g[0]), (std::vector<float>{3, 1, 5, 5}));
  auto nd = run("GatherND", {x, Tensor::from_vector<int64_t>({2, 2}, {1, -1, 0, 0})});
  EXPECT_EQ(values<float>(nd[0]), (std::vector<float>{6, 1}));
  auto se = run("ScatterElements", {x, Tensor::from_vector<int64_t>({1, 2}, {1, 1}),
                                    Tensor::from_vector<float>({1, 2}, {10, 20})},
                {{"axis", int_attr(1)}, {"reduction", string_attr("add")}});
  EXPECT_EQ(values<float>(se[0]), (std::vector<float>{1, 32, 3, 4, 5, 6}));
  auto sn = run("ScatterND", {x, Tensor::from_vector<int64_t>({1, 1}, {-1}), Tensor::from_vector<float>({1, 3}, {7, 8, 9})},
                {{"reduction", string_attr("mul")}});
  EXPECT_EQ(values<float>(sn[0]), (std::vector<float>{1, 2, 3, 28, 40, 54}));
  Tensor cond = Tensor::from_vector<bool>({3}, {false, true, true});
  auto cp = run("Compress", {x, cond}, {{"axis", int_attr(1)}});
  EXPECT_EQ(values<float>(cp[0]), (std::vector<float>{2, 3, 5, 6}));
  cp = run("Compress", {x, cond});
  EXPECT_EQ(values<float>(cp[0]), (std::vector<float>{2, 3}));
}

TEST(CpuShape, DropoutInferenceAndSeededTraining) {
  Tensor x = Tensor::from_vector<float>({5}, {1, 2, 3, 4, 5});
  auto y = run("Dropout", {x, Tensor::scalar<float>(0.5f)}, {}, 13, 2);
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_EQ(values<bool>(y[1]), (std::vector<bool>{true, true, true, true, true}));
  // numpy: RandomState(0).uniform(size=5) = .549 .715 .603 .545 .424
  y = run("Dropout", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(true)}, {{"seed", int_attr(0)}}, 13, 2);
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{2, 4, 6, 8, 0}));
  EXPECT_EQ(values<bool>(y[1]), (std::vector<bool>{true, true, true, true, false}));
  EXPECT_THROW(run("Dropout", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(true)}), NotImplemented);
  // Training with ratio 0 is the identity, seed or not; a training ratio of 1 is an error.
  y = run("Dropout", {x, Tensor::scalar<float>(0.0f), Tensor::scalar<bool>(true)}, {}, 13, 2);
  EXPECT_EQ(values<float>(y[0]), (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_EQ(values<bool>(y[1]), (std::vector<bool>{true, true, true, true, true}));
  EXPECT_THROW(run("Dropout", {x, Tensor::scalar<float>(1.0f), Tensor::scalar<bool>(true)}, {{"seed", int_attr(0)}}), Error);
}
