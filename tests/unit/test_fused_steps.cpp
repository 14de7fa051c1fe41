// The typed fused expression (ir/fused_expr.h) as the fused kernels read it through FusedSteps
// (webgpu/kernels/fused_steps.h): which node inputs an expression's inputs are, what is bound and
// what is written into the shader, and the plan-time checks. Plan time only: no device is needed.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/fused_expr.h"
#include "onnxgpu/error.h"
#include "onnxgpu/int64_policy.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"
#include "kernel_choice.h"

namespace onnxgpu {
namespace {

using ir::FusedOperand;

webgpu::Limits limits() { return usual_limits(); }

// A fused node of kernel `op` over `inputs` (name, info), computing `expr`.
struct Planned {
  ir::Node node;
  Int64Policy policy;
  webgpu::Limits lim = limits();
  std::unique_ptr<webgpu::GpuKernelContext> ctx;

  Planned(const std::string& op, const std::vector<webgpu::GpuValueInfo>& inputs, ir::FusedExpr expr) {
    node.name = "fused";
    node.op_type = op;
    node.domain = webgpu::kFusedDomain;
    node.outputs = {"y"};
    for (size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back("in" + std::to_string(i));
    node.fused = std::make_shared<const ir::FusedExpr>(std::move(expr));
    ctx = std::make_unique<webgpu::GpuKernelContext>(node, 17, policy, lim, inputs);
  }
  void run() { (*webgpu::gpu_registry().find(node.op_type, webgpu::kFusedDomain))(*ctx); }
  std::string source() const { return ctx->dispatches.at(0).source(); }
};

webgpu::GpuValueInfo f32(Shape s, const Tensor* constant = nullptr) { return {DType::Float32, std::move(s), constant}; }

ir::FusedExpr expr(std::vector<ir::FusedStep> steps, size_t first_input, size_t num_inputs) {
  ir::FusedExpr e;
  e.steps = std::move(steps);
  e.first_input = first_input;
  e.num_inputs = num_inputs;
  return e;
}

TEST(FusedSteps, ElementwiseBindsTensorInputsAndWritesConstantScalars) {
  Tensor two = Tensor::from_vector<float>({}, {2.0f});
  Planned p("Elementwise", {f32({2, 3}), f32({3}), f32({}, &two)},
            expr({{"Mul", {FusedOperand::input(0), FusedOperand::input(1)}},
                  {"Pow", {FusedOperand::step(0), FusedOperand::input(2)}},
                  {"Add", {FusedOperand::step(1), FusedOperand::input(0)}}},
                 0, 3));
  p.run();
  ASSERT_EQ(p.ctx->dispatches.size(), 1u);
  EXPECT_EQ(p.ctx->outputs[0].shape, (Shape{2, 3}));
  const auto& binds = p.ctx->dispatches[0].bindings;  // x0, x1, y: the scalar is bound nowhere
  ASSERT_EQ(binds.size(), 3u);
  EXPECT_EQ(binds[0].index, 0);
  EXPECT_EQ(binds[1].index, 1);
  EXPECT_EQ(binds[2].kind, webgpu::ValueRef::Kind::Output);
  EXPECT_NE(p.source().find("let x2 = "), std::string::npos);
  EXPECT_NE(p.source().find("t1 = a * a;"), std::string::npos);  // Pow by 2: a product
  EXPECT_NE(p.source().find("y_store(gi, t2);"), std::string::npos);
}

// The expression's input 0 is the node's input 3, after Q, K and V.
TEST(FusedSteps, AttentionExpressionInputsFollowQKAndV) {
  Planned p("Attention", {f32({1, 9, 8}), f32({1, 8, 4}), f32({1, 4, 8}), f32({1, 9, 4})},  // 9 rows: no split (one dispatch)
            expr({{"Add", {FusedOperand::product(), FusedOperand::input(0)}}}, 3, 1));
  p.run();
  ASSERT_EQ(p.ctx->dispatches.size(), 1u);
  const auto& binds = p.ctx->dispatches[0].bindings;
  ASSERT_EQ(binds.size(), 5u);
  EXPECT_EQ(binds[3].kind, webgpu::ValueRef::Kind::Input);
  EXPECT_EQ(binds[3].index, 3);
  EXPECT_NE(p.source().find("fn score(p: f32, z: u32, i: u32, j: u32, x0: f32)"), std::string::npos);
  EXPECT_NE(p.source().find("let a = p;\n    let b = x0;"), std::string::npos);
}

TEST(FusedSteps, MatMulActivationWritesItsConstants) {
  Planned p("MatMul", {f32({2, 4}), f32({4, 3})},
            expr({{"Mul", {FusedOperand::product(), FusedOperand::constant(0.5f)}}}, 2, 0));
  p.run();
  EXPECT_NE(p.source().find("let f1056964608 = "), std::string::npos);  // 0.5's bits
  EXPECT_NE(p.source().find("let b = f1056964608;"), std::string::npos);
  EXPECT_NE(p.source().find("  return t0;"), std::string::npos);
}

// An operand naming no input, or no earlier step, makes the node invalid; a step the kernels do not
// evaluate only sends the group's nodes to run one by one (unsupported).
TEST(FusedSteps, BadOperandsFailAndUnknownOpsAreUnsupported) {
  auto outcome = [](ir::FusedExpr e) -> std::string {
    Planned p("Elementwise", {f32({4}), f32({4})}, std::move(e));
    try {
      p.run();
    } catch (const webgpu::GpuUnsupported&) {
      return "unsupported";
    } catch (const Error&) {
      return "invalid";
    }
    return "ok";
  };
  EXPECT_EQ(outcome(expr({{"Add", {FusedOperand::input(0), FusedOperand::input(1)}}}, 0, 2)), "ok");
  EXPECT_EQ(outcome(expr({{"Add", {FusedOperand::input(0), FusedOperand::input(2)}}}, 0, 2)), "invalid");
  EXPECT_EQ(outcome(expr({{"Add", {FusedOperand::input(0), FusedOperand::step(0)}}}, 0, 2)), "invalid");
  EXPECT_EQ(outcome(expr({{"Mod", {FusedOperand::input(0), FusedOperand::input(1)}}}, 0, 2)), "unsupported");
  EXPECT_EQ(outcome(expr({{"Tanh", {FusedOperand::input(0), FusedOperand::input(1)}}}, 0, 2)), "unsupported");
  EXPECT_EQ(outcome(expr({{"Where", {FusedOperand::input(0), FusedOperand::input(1), FusedOperand::input(0)}}}, 0, 2)),
            "unsupported");  // a float condition
}

}  // namespace
}  // namespace onnxgpu
