// If nodes on flags (runtime/branches.h): a model shaped like Optimum's merged decoders, whose If on a bool
// graph input holds the graph each value runs, runs on the GPU whole (fail-loud, captured and replayed) for
// each combination of its flags, against the CPU reference. The branches reuse each other's value names, read
// the outer graph's weights, hold initializers of their own and a nested If on a second flag; a branch may
// give an outer value as its output.
//
// Run: XDG_RUNTIME_DIR=/tmp build/tests/unit_tests --gtest_filter='RuntimeBranches*'
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "loader/tensor_proto.h"
#include "one_node.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"

namespace onnxgpu {
namespace {

onnx::NodeProto* add_node(onnx::GraphProto& g, const std::string& op, const std::vector<std::string>& in,
                          const std::vector<std::string>& out, const std::string& name) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

void add_output(onnx::GraphProto& g, const std::string& name) {
  auto* v = g.add_output();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
}

void add_input(onnx::GraphProto& g, const std::string& name, onnx::TensorProto::DataType t, const std::vector<int64_t>& dims) {
  auto* v = g.add_input();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(t);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

void set_branches(onnx::NodeProto& n, const onnx::GraphProto& then_g, const onnx::GraphProto& else_g) {
  for (const auto& [name, g] : {std::pair{"then_branch", &then_g}, std::pair{"else_branch", &else_g}}) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = *g;
  }
}

// x [2, 8], use_cache and inner (bool [1]) -> out = If(use_cache) * 2, raw = the If's output, and raw2 = a second
// If on use_cache of the same node name (Relu(x) or Neg(x), each as `h`).
//   then: h = x W; y = h + b (its own b); out_t = If(inner) { x (an outer value) } else { Tanh(x W2) } + y
//   else: h = x W2; y = Sigmoid(h) (the same names as then's)
std::string merged_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("merged");
  add_input(g, "x", onnx::TensorProto::FLOAT, {2, 8});
  add_input(g, "use_cache", onnx::TensorProto::BOOL, {1});
  add_input(g, "inner", onnx::TensorProto::BOOL, {1});
  loader::tensor_to_proto(testing::random_float(DType::Float32, {8, 8}, 11), "W", *g.add_initializer());
  loader::tensor_to_proto(testing::random_float(DType::Float32, {8, 8}, 12), "W2", *g.add_initializer());

  onnx::GraphProto inner_then, inner_else;
  inner_then.set_name("inner_then");
  add_output(inner_then, "x");
  inner_else.set_name("inner_else");
  add_node(inner_else, "MatMul", {"x", "W2"}, {"p"}, "p");
  add_node(inner_else, "Tanh", {"p"}, {"q"}, "q");
  add_output(inner_else, "q");

  onnx::GraphProto then_g, else_g;
  then_g.set_name("then");
  loader::tensor_to_proto(testing::random_float(DType::Float32, {8}, 13), "b", *then_g.add_initializer());
  add_node(then_g, "MatMul", {"x", "W"}, {"h"}, "h");
  add_node(then_g, "Add", {"h", "b"}, {"y"}, "y");
  set_branches(*add_node(then_g, "If", {"inner"}, {"n"}, "nested"), inner_then, inner_else);
  add_node(then_g, "Add", {"n", "y"}, {"out_t"}, "out_t");
  add_output(then_g, "out_t");
  else_g.set_name("else");
  add_node(else_g, "MatMul", {"x", "W2"}, {"h"}, "h");
  add_node(else_g, "Sigmoid", {"h"}, {"y"}, "y");
  add_output(else_g, "y");

  set_branches(*add_node(g, "If", {"use_cache"}, {"raw"}, "branch"), then_g, else_g);
  // A second If of the same node name whose branches define `h` too: the taken branches' names stay apart.
  onnx::GraphProto then2, else2;
  then2.set_name("then2");
  add_node(then2, "Relu", {"x"}, {"h"}, "h");
  add_output(then2, "h");
  else2.set_name("else2");
  add_node(else2, "Neg", {"x"}, {"h"}, "h");
  add_output(else2, "h");
  set_branches(*add_node(g, "If", {"use_cache"}, {"raw2"}, "branch"), then2, else2);
  loader::tensor_to_proto(Tensor::scalar<float>(2.0f), "two", *g.add_initializer());
  add_node(g, "Mul", {"raw", "two"}, {"out"}, "scale");
  add_output(g, "out");
  add_output(g, "raw");
  add_output(g, "raw2");
  return m.SerializeAsString();
}

TEST(RuntimeBranches, EachFlagCombinationRunsWholeOnTheGpu) {
  const std::string model = merged_model();
  SessionOptions cpu_options;
  cpu_options.ep = "cpu";
  Session cpu = Session::from_bytes(model, cpu_options);
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;  // any node on the CPU is an error
  std::unique_ptr<Session> gpu;
  try {
    gpu = std::make_unique<Session>(Session::from_bytes(model, o));
  } catch (const std::exception& e) {
    if (testing::skip_gpu()) GTEST_SKIP() << "no WebGPU session: " << e.what();
    FAIL() << e.what();
  }
  const bool combos[][2] = {{true, true}, {false, true}, {true, false}, {false, false}, {true, true}, {false, true}};
  for (int round = 0; round < 2; ++round)
    for (const auto& c : combos) {
      const std::string what = std::string("use_cache=") + (c[0] ? "1" : "0") + " inner=" + (c[1] ? "1" : "0") +
                               " round " + std::to_string(round);
      std::unordered_map<std::string, Tensor> feeds{{"x", testing::random_float(DType::Float32, {2, 8}, 20 + round)},
                                                    {"use_cache", Tensor::from_vector<bool>({1}, {c[0]})},
                                                    {"inner", Tensor::from_vector<bool>({1}, {c[1]})}};
      std::vector<Tensor> want = cpu.run(feeds), got = gpu->run(feeds);
      ASSERT_EQ(got.size(), 3u) << what;
      for (size_t k = 0; k < 3; ++k) {
        auto cmp = runtime::compare_tensors(got[k], want[k], runtime::Tolerance{});
        EXPECT_TRUE(cmp.passed) << what << " output " << k << ": " << cmp.message;
      }
      const PlanReport r = gpu->last_plan();
      EXPECT_EQ(r.cpu_nodes, 0) << what;
      // The Ifs taken: both on use_cache, and the nested one on inner where use_cache took then_branch.
      std::vector<std::string> taken{std::string("branch: use_cache=") + (c[0] ? "1, then" : "0, else") + "_branch"};
      if (c[0]) taken.push_back(std::string("branch/then/nested: inner=") + (c[1] ? "1, then" : "0, else") + "_branch");
      taken.push_back(std::string("branch: use_cache=") + (c[0] ? "1, then" : "0, else") + "_branch");
      EXPECT_EQ(r.branches_taken, taken) << what;
      if (round == 1) {
        EXPECT_TRUE(r.replayed) << what << ": the combination's plan, recorded in round 0";
      }
    }
}


// A taken branch whose nested If, on a condition computed from the branch's values, reads them: the nested
// If runs on the CPU (its condition is known only in the run) and reads the renamed values.
TEST(RuntimeBranches, ASubgraphInsideATakenBranchReadsItsValues) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("computed");
  add_input(g, "x", onnx::TensorProto::FLOAT, {2, 8});
  add_input(g, "flag", onnx::TensorProto::BOOL, {1});
  loader::tensor_to_proto(testing::random_float(DType::Float32, {8, 8}, 31), "W", *g.add_initializer());
  onnx::GraphProto pos, neg, then_g, else_g;
  pos.set_name("pos");
  add_node(pos, "Abs", {"y"}, {"a"}, "abs");
  add_output(pos, "a");
  neg.set_name("neg");
  add_output(neg, "y");  // the branch's value itself
  then_g.set_name("then");
  add_node(then_g, "MatMul", {"x", "W"}, {"y"}, "y");
  auto* sum = add_node(then_g, "ReduceSum", {"y"}, {"s"}, "s");
  auto* keep = sum->add_attribute();
  keep->set_name("keepdims");
  keep->set_type(onnx::AttributeProto::INT);
  keep->set_i(0);
  loader::tensor_to_proto(Tensor::scalar<float>(0.0f), "zero", *then_g.add_initializer());
  add_node(then_g, "Greater", {"s", "zero"}, {"c"}, "c");
  set_branches(*add_node(then_g, "If", {"c"}, {"z"}, "computed"), pos, neg);
  add_output(then_g, "z");
  else_g.set_name("else");
  add_node(else_g, "Sigmoid", {"x"}, {"y"}, "y");
  add_output(else_g, "y");
  set_branches(*add_node(g, "If", {"flag"}, {"out"}, "branch"), then_g, else_g);
  add_output(g, "out");
  const std::string model = m.SerializeAsString();

  SessionOptions cpu_options;
  cpu_options.ep = "cpu";
  Session cpu = Session::from_bytes(model, cpu_options);
  std::unique_ptr<Session> gpu;
  try {
    gpu = std::make_unique<Session>(Session::from_bytes(model, testing::webgpu_options()));
  } catch (const std::exception& e) {
    if (testing::skip_gpu()) GTEST_SKIP() << "no WebGPU session: " << e.what();
    FAIL() << e.what();
  }
  for (uint32_t seed : {40u, 41u, 42u, 43u})
    for (bool flag : {true, false}) {
      // Seeds of either sign of sum(y), so the nested If goes both ways.
      std::unordered_map<std::string, Tensor> feeds{{"x", testing::random_float(DType::Float32, {2, 8}, seed)},
                                                    {"flag", Tensor::from_vector<bool>({1}, {flag})}};
      auto cmp = runtime::compare_tensors(gpu->run(feeds)[0], cpu.run(feeds)[0], runtime::Tolerance{});
      EXPECT_TRUE(cmp.passed) << "seed " << seed << " flag " << flag << ": " << cmp.message;
      const PlanReport r = gpu->last_plan();
      EXPECT_EQ(r.branches_taken.size(), 1u);
      EXPECT_EQ(r.cpu_nodes, flag ? 1 : 0) << "flag " << flag << ": the nested If, on a computed condition, on the CPU";
    }
}

}  // namespace
}  // namespace onnxgpu
