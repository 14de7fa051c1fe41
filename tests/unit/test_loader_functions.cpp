// Model-local functions (src/loader/functions.h): calls inlined at load, checked against values computed
// by hand on the CPU and against the CPU on WebGPU (captured, every node on the GPU); malformed or
// refused functions are errors that name the call and the function.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <google/protobuf/unknown_field_set.h>

#include <cstdio>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "../fuzz/mutate.h"
#include "one_node.h"
#include "runtime/compare.h"
#include "onnxgpu/error.h"
#include "onnxgpu/session.h"

using namespace onnxgpu;
using namespace onnxgpu::testing;

namespace {

onnx::NodeProto node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                     const std::string& domain = "", const std::string& name = "") {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_domain(domain);
  n.set_name(name);
  for (auto& s : in) n.add_input(s);
  for (auto& s : out) n.add_output(s);
  return n;
}

onnx::AttributeProto float_attr(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

onnx::AttributeProto ref_attr(const std::string& name, const std::string& ref, onnx::AttributeProto::AttributeType t) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_ref_attr_name(ref);
  a.set_type(t);
  return a;
}

onnx::FunctionProto function(const std::string& name, std::vector<std::string> in, std::vector<std::string> out,
                             std::vector<onnx::NodeProto> body, int64_t opset = 17) {
  onnx::FunctionProto f;
  f.set_name(name);
  f.set_domain("mylib");
  for (auto& s : in) f.add_input(s);
  for (auto& s : out) f.add_output(s);
  for (auto& n : body) *f.add_node() = n;
  auto* imp = f.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  return f;
}

// A model of float32 [4] inputs and outputs calling `functions`.
std::string model(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                  const std::vector<onnx::NodeProto>& nodes, const std::vector<onnx::FunctionProto>& functions) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(17);
  imp = m.add_opset_import();
  imp->set_domain("mylib");
  imp->set_version(1);
  auto* g = m.mutable_graph();
  g->set_name("main");
  auto value = [](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(4);
  };
  for (const auto& i : inputs) value(g->add_input(), i);
  for (const auto& o : outputs) value(g->add_output(), o);
  for (const auto& n : nodes) *g->add_node() = n;
  for (const auto& f : functions) *m.add_functions() = f;
  return m.SerializeAsString();
}

const Tensor kX = Tensor::from_vector<float>({4}, {-2.0f, -0.5f, 1.0f, 3.0f});
const Tensor kY = Tensor::from_vector<float>({4}, {1.0f, -1.0f, 0.5f, -4.0f});

// Output 0 on the CPU, fed x (and y when the model takes it).
std::vector<float> run_cpu(const std::string& bytes) {
  SessionOptions o;
  o.ep = "cpu";
  Session s = Session::from_bytes(bytes, o);
  std::unordered_map<std::string, Tensor> feeds{{"x", kX}};
  for (const auto& i : s.inputs())
    if (i.name == "y") feeds["y"] = kY;
  std::vector<Tensor> r = s.run(feeds);
  return std::vector<float>(r.at(0).data<float>(), r.at(0).data<float>() + r.at(0).numel());
}

// Runs the model on WebGPU (captured, replayed, no node on the CPU) against the CPU.
void check_gpu(const std::string& bytes, const std::vector<std::string>& inputs) {
  std::vector<Operand> ins;
  for (const auto& i : inputs) ins.push_back({i, i == "x" ? kX : kY});
  SessionOptions o = webgpu_options();
  check_against_cpu("model", bytes, ins, o, [](const Tensor& got, const Tensor& want, const std::string& what) {
    auto c = runtime::compare_tensors(got, want, {1e-6, 1e-6});
    ASSERT_TRUE(c.passed) << what << ": " << c.message;
  });
}

std::string load_error(const std::string& bytes) {
  try {
    SessionOptions o;
    o.ep = "cpu";
    Session::from_bytes(bytes, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// AddRelu(a, b) = Relu(a + b), its inner value named as the caller's own value is.
onnx::FunctionProto add_relu() {
  return function("AddRelu", {"a", "b"}, {"c"}, {node("Add", {"a", "b"}, {"t"}), node("Relu", {"t"}, {"c"})});
}

TEST(LoaderFunctions, CallsAreInlinedWithTheirOwnNames) {
  // z = AddRelu(AddRelu(x, y) - x, y): two calls; the caller has a value named "t" as the body does.
  std::string m = model({"x", "y"}, {"z"},
                        {node("AddRelu", {"x", "y"}, {"t"}, "mylib", "first"), node("Sub", {"t", "x"}, {"u"}),
                         node("AddRelu", {"u", "y"}, {"z"}, "mylib")},
                        {add_relu()});
  std::vector<float> want(4);
  for (int i = 0; i < 4; ++i) {
    float t = std::max(kX.data<float>()[i] + kY.data<float>()[i], 0.0f);
    want[size_t(i)] = std::max(t - kX.data<float>()[i] + kY.data<float>()[i], 0.0f);
  }
  EXPECT_EQ(run_cpu(m), want);
  check_gpu(m, {"x", "y"});
}

TEST(LoaderFunctions, AttributesFromTheCallTheDefaultOrTheOp) {
  // Leaky(x) = LeakyRelu(x, alpha = the call's "slope").
  onnx::NodeProto leaky = node("LeakyRelu", {"a"}, {"b"});
  *leaky.add_attribute() = ref_attr("alpha", "slope", onnx::AttributeProto::FLOAT);
  onnx::FunctionProto f = function("Leaky", {"a"}, {"b"}, {leaky});
  f.add_attribute("slope");
  onnx::NodeProto with = node("Leaky", {"x"}, {"z"}, "mylib");
  *with.add_attribute() = float_attr("slope", 0.5f);
  onnx::NodeProto without = node("Leaky", {"x"}, {"z"}, "mylib");
  const float x0 = kX.data<float>()[0];  // -2
  // The call's value.
  EXPECT_EQ(run_cpu(model({"x"}, {"z"}, {with}, {f}))[0], 0.5f * x0);
  // None given and no default: LeakyRelu's own (0.01).
  EXPECT_FLOAT_EQ(run_cpu(model({"x"}, {"z"}, {without}, {f}))[0], 0.01f * x0);
  // The function's default (FunctionProto.attribute_proto, field 11, newer than this libonnx's schema).
  onnx::FunctionProto with_default = f;
  with_default.mutable_unknown_fields()->AddLengthDelimited(11, float_attr("slope", 0.25f).SerializeAsString());
  std::string m = model({"x"}, {"z"}, {without}, {with_default});
  EXPECT_EQ(run_cpu(m)[0], 0.25f * x0);
  check_gpu(m, {"x"});
}

TEST(LoaderFunctions, NestedCallsOmittedInputsAndUnusedOutputs) {
  // Outer(a, lo, hi) -> (r, extra): r = Clip(AddRelu(a, a), lo, hi); the call leaves hi and extra out.
  onnx::FunctionProto outer = function("Outer", {"a", "lo", "hi"}, {"r", "extra"},
                                       {node("AddRelu", {"a", "a"}, {"s"}, "mylib"), node("Clip", {"s", "lo", "hi"}, {"r"}),
                                        node("Neg", {"a"}, {"extra"})});
  auto* imp = outer.add_opset_import();
  imp->set_domain("mylib");
  imp->set_version(1);
  // lo = max(y) = 1, hi omitted; only r taken.
  onnx::NodeProto top = node("ReduceMax", {"y"}, {"top"});
  auto* keep = top.add_attribute();
  keep->set_name("keepdims");
  keep->set_type(onnx::AttributeProto::INT);
  keep->set_i(0);
  std::string m = model({"x", "y"}, {"z"}, {top, node("Outer", {"x", "top"}, {"z"}, "mylib")}, {outer, add_relu()});
  std::vector<float> want(4);
  for (int i = 0; i < 4; ++i) want[size_t(i)] = std::max(std::max(2 * kX.data<float>()[i], 0.0f), 1.0f);
  EXPECT_EQ(run_cpu(m), want);
  check_gpu(m, {"x", "y"});
}

TEST(LoaderFunctions, SubgraphsInsideABodyReadItsValues) {
  // Pick(a, b) = If(sum(b) > 0): a + inner, else a - inner, where inner = a * b is a value of the body
  // that both branches read.
  auto branch = [](const std::string& op) {
    onnx::GraphProto g;
    g.set_name(op);
    *g.add_node() = node(op, {"a", "inner"}, {"out"});
    auto* o = g.add_output();
    o->set_name("out");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    return g;
  };
  onnx::NodeProto iff = node("If", {"cond"}, {"r"});
  auto* then_branch = iff.add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  *then_branch->mutable_g() = branch("Add");
  auto* else_branch = iff.add_attribute();
  else_branch->set_name("else_branch");
  else_branch->set_type(onnx::AttributeProto::GRAPH);
  *else_branch->mutable_g() = branch("Sub");
  onnx::FunctionProto pick = function("Pick", {"a", "b"}, {"r"},
                                      {node("Mul", {"a", "b"}, {"inner"}), node("ReduceSum", {"b"}, {"total"}),
                                       node("Constant", {}, {"zero"}), node("Greater", {"total", "zero"}, {"cond"}), iff});
  auto* zero = pick.mutable_node(2)->add_attribute();
  zero->set_name("value_float");
  zero->set_type(onnx::AttributeProto::FLOAT);
  zero->set_f(0.0f);
  std::string m = model({"x", "y"}, {"z"}, {node("Pick", {"x", "y"}, {"z"}, "mylib")}, {pick});
  // sum(y) = -3.5 <= 0: the else branch, x - x * y.
  std::vector<float> want(4);
  for (int i = 0; i < 4; ++i) want[size_t(i)] = kX.data<float>()[i] - kX.data<float>()[i] * kY.data<float>()[i];
  EXPECT_EQ(run_cpu(m), want);
}

TEST(LoaderFunctions, OverloadsPickTheirOwnBody) {
  onnx::FunctionProto neg = function("F", {"a"}, {"b"}, {node("Neg", {"a"}, {"b"})});
  onnx::FunctionProto abs = function("F", {"a"}, {"b"}, {node("Abs", {"a"}, {"b"})});
  neg.mutable_unknown_fields()->AddLengthDelimited(13, "neg");
  abs.mutable_unknown_fields()->AddLengthDelimited(13, "abs");
  onnx::NodeProto call = node("F", {"x"}, {"z"}, "mylib");
  call.mutable_unknown_fields()->AddLengthDelimited(8, "abs");
  EXPECT_EQ(run_cpu(model({"x"}, {"z"}, {call}, {neg, abs})), (std::vector<float>{2.0f, 0.5f, 1.0f, 3.0f}));
}

TEST(LoaderFunctions, RefusedOrMalformedFunctionsNameTheCall) {
  // A function that calls itself.
  onnx::FunctionProto self = function("Loop", {"a"}, {"b"}, {node("Loop", {"a"}, {"b"}, "mylib")});
  std::string e = load_error(model({"x"}, {"z"}, {node("Loop", {"x"}, {"z"}, "mylib", "call")}, {self}));
  EXPECT_NE(e.find("node 'call'"), std::string::npos) << e;
  EXPECT_NE(e.find("function 'mylib.Loop' calls itself"), std::string::npos) << e;
  // Two functions that call each other.
  onnx::FunctionProto ping = function("Ping", {"a"}, {"b"}, {node("Pong", {"a"}, {"b"}, "mylib")});
  onnx::FunctionProto pong = function("Pong", {"a"}, {"b"}, {node("Neg", {"a"}, {"t"}), node("Ping", {"t"}, {"b"}, "mylib")});
  e = load_error(model({"x"}, {"z"}, {node("Ping", {"x"}, {"z"}, "mylib", "ball")}, {ping, pong}));
  EXPECT_NE(e.find("node 'ball'"), std::string::npos) << e;
  EXPECT_NE(e.find("function 'mylib.Ping' calls itself"), std::string::npos) << e;
  // Each function calling the next twice, 30 deep: 2^30 nodes once inlined. Refused early, not built.
  std::vector<onnx::FunctionProto> tower;
  for (int i = 0; i < 30; ++i) {
    const std::string next = "F" + std::to_string(i + 1);
    tower.push_back(function("F" + std::to_string(i), {"a"}, {"b"},
                             {node(next, {"a"}, {"t"}, "mylib"), node(next, {"t"}, {"b"}, "mylib")}));
  }
  tower.push_back(function("F30", {"a"}, {"b"}, {node("Neg", {"a"}, {"b"})}));
  e = load_error(model({"x"}, {"z"}, {node("F0", {"x"}, {"z"}, "mylib", "tower")}, tower));
  EXPECT_NE(e.find("node 'tower'"), std::string::npos) << e;
  EXPECT_NE(e.find("inlining the model's functions makes more than"), std::string::npos) << e;
  // More inputs than the function takes.
  e = load_error(model({"x", "y"}, {"z"}, {node("AddRelu", {"x", "y", "x"}, {"z"}, "mylib", "wide")}, {add_relu()}));
  EXPECT_NE(e.find("node 'wide'"), std::string::npos) << e;
  EXPECT_NE(e.find("function 'mylib.AddRelu' takes 2"), std::string::npos) << e;
  // A domain at another version than the model's.
  onnx::FunctionProto old = add_relu();
  old.mutable_opset_import(0)->set_version(13);
  e = load_error(model({"x", "y"}, {"z"}, {node("AddRelu", {"x", "y"}, {"z"}, "mylib")}, {old}));
  EXPECT_NE(e.find("imports domain 'ai.onnx' at version 13 and the model at 17"), std::string::npos) << e;
  // Two functions of one name.
  e = load_error(model({"x", "y"}, {"z"}, {node("AddRelu", {"x", "y"}, {"z"}, "mylib")}, {add_relu(), add_relu()}));
  EXPECT_NE(e.find("'mylib.AddRelu' is defined twice"), std::string::npos) << e;
  // An attribute reference outside any function.
  onnx::NodeProto stray = node("LeakyRelu", {"x"}, {"z"}, "", "stray");
  *stray.add_attribute() = ref_attr("alpha", "slope", onnx::AttributeProto::FLOAT);
  e = load_error(model({"x"}, {"z"}, {stray}, {}));
  EXPECT_NE(e.find("node 'stray'"), std::string::npos) << e;
  EXPECT_NE(e.find("outside any function"), std::string::npos) << e;
}

// Bit flips over models with functions (nested calls, attribute references and defaults, an If in a
// body): each loads and runs on the CPU, or fails with an onnxgpu::Error; never another exception.
TEST(LoaderFunctions, BitFlipsFailCleanly) {
  onnx::NodeProto leaky = node("LeakyRelu", {"a"}, {"b"});
  *leaky.add_attribute() = ref_attr("alpha", "slope", onnx::AttributeProto::FLOAT);
  onnx::FunctionProto with_default = function("Leaky", {"a"}, {"b"}, {leaky});
  with_default.add_attribute("slope");
  with_default.mutable_unknown_fields()->AddLengthDelimited(11, float_attr("slope", 0.25f).SerializeAsString());
  onnx::FunctionProto outer = function("Outer", {"a", "lo", "hi"}, {"r", "extra"},
                                       {node("AddRelu", {"a", "a"}, {"s"}, "mylib"), node("Leaky", {"s"}, {"l"}, "mylib"),
                                        node("Clip", {"l", "lo", "hi"}, {"r"}), node("Neg", {"a"}, {"extra"})});
  const std::vector<std::string> seeds = {
      model({"x", "y"}, {"z"}, {node("Outer", {"x"}, {"z"}, "mylib")}, {outer, add_relu(), with_default}),
      model({"x", "y"}, {"z"}, {node("AddRelu", {"x", "y"}, {"t"}, "mylib"), node("AddRelu", {"t", "y"}, {"z"}, "mylib")},
            {add_relu()})};
  fuzz::Rng rng(7);
  int loaded = 0, refused = 0;
  for (const std::string& seed : seeds)
    for (int i = 0; i < 750; ++i) {
      const std::string bytes = fuzz::bit_flipped(seed, rng, 1 + int(rng.below(3)));
      try {
        SessionOptions o;
        o.ep = "cpu";
        Session s = Session::from_bytes(bytes, o);
        std::unordered_map<std::string, Tensor> feeds;
        for (const auto& in : s.inputs()) feeds[in.name] = in.name == "y" ? kY : kX;
        s.run(feeds);
        ++loaded;
      } catch (const Error&) {
        ++refused;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "flip #" << i << ": " << typeid(e).name() << ": " << e.what();
      }
    }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(refused, 0);
  std::printf("function models, bit flips: %d ran, %d refused\n", loaded, refused);
}

}  // namespace
