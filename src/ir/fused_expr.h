// The elementwise expression a fused node evaluates per element: a list of steps, each an op over
// operands that are the expression's inputs, earlier steps' results, the value the host kernel
// computed before the expression, or float constants. The fusion pass (src/runtime/fusion.h) writes
// it onto the fused nodes it makes (ir::Node::fused); the fused kernels read it through one
// interface (src/webgpu/kernels/fused_steps.h). Backend-free: the IR knows no WGSL.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace onnxgpu::ir {

struct FusedOperand {
  enum class Kind {
    Input,     // the expression's input `index` (a node input: FusedExpr::node_input)
    Step,      // the result of step `index`, an earlier step
    Product,   // a value the host kernel computes before the expression: Attention's score Q K,
               // the fused MatMul's product after its bias and residual (no such value in Elementwise);
               // `index` tells apart the products of a kernel that computes several (the fused pair
               // of MatMulNBits: 0 and 1, in graph order)
    Constant,  // the float32 `value`, written into the shader
  };
  Kind kind = Kind::Input;
  size_t index = 0;   // Input, Step, Product
  float value = 0.0f;  // Constant

  static FusedOperand input(size_t k) { return {Kind::Input, k, 0.0f}; }
  static FusedOperand step(size_t m) { return {Kind::Step, m, 0.0f}; }
  static FusedOperand product(size_t k = 0) { return {Kind::Product, k, 0.0f}; }
  static FusedOperand constant(float v) { return {Kind::Constant, 0, v}; }
  bool operator==(const FusedOperand&) const = default;
};

// One step: an ONNX elementwise op ("Add", "Tanh", "Where", ...) over its operands in ONNX input order.
struct FusedStep {
  std::string op;
  std::vector<FusedOperand> args;
  bool operator==(const FusedStep&) const = default;
};

struct FusedExpr {
  std::vector<FusedStep> steps;  // in evaluation order; the last one's result is the expression's
  // The expression's inputs are the fused node's inputs first_input, first_input + 1, ...,
  // first_input + num_inputs - 1 (the last ones: the host kernel's own operands come first).
  size_t first_input = 0;
  size_t num_inputs = 0;

  size_t node_input(size_t k) const { return first_input + k; }
  bool operator==(const FusedExpr&) const = default;
};

}  // namespace onnxgpu::ir
