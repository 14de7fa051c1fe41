// How the fused kernels read the elementwise expression of their node (ir::FusedExpr, which the
// fusion pass writes, src/runtime/fusion.h): the checks of its steps and operands, how each input
// is read, the constant scalars written into the shader, and the WGSL of the steps. One reader for
// the fused Elementwise kernel (elementwise.cpp), the fused attention's score expression
// (attention.cpp) and the fused MatMul's activation epilogue (matmul.cpp).
//
// In the WGSL, input k's value is x<k>, step m's result t<m>, the host kernel's product p (its
// product k > 0, where it computes several: p<k>) and a constant f<its float32 bits>; each kernel
// defines the x<k> and p its steps read.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/fused_expr.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

class FusedSteps {
 public:
  // The expression ctx.node carries (none: empty()), in a kernel that computes `products` values
  // before it (p, p1, ...). The node is invalid (fail) when an operand names no input of the node, a
  // step that is not an earlier one, or a product the kernel does not compute.
  explicit FusedSteps(const GpuKernelContext& ctx, size_t products = 1);

  bool empty() const { return steps().empty(); }
  size_t size() const { return steps().size(); }
  size_t num_inputs() const { return expr_ ? expr_->num_inputs : 0; }
  // The node input that expression input k is (ir::FusedExpr::node_input), and what is known of it.
  size_t node_input(size_t k) const { return expr_->node_input(k); }
  const GpuValueInfo& input(size_t k) const { return ctx_.input(node_input(k)); }
  // The float type of the expression's values: its inputs' (but Where's conditions and Pow's
  // exponents); float32 when it has none. float16 and bfloat16 are computed in f32 and each step's
  // value rounded to the type (wgsl), as the nodes alone would store it.
  DType values() const;
  // Every input is of values(), one of float32, float16 and bfloat16, or bool and read only as a Where
  // condition, or (with `any_type_exponents`) a constant scalar of any number type read only as a Pow
  // exponent; else unsupported.
  void check_input_types(bool any_type_exponents) const;
  // Input k's value as a WGSL literal when it is a constant scalar (written into the shader, bound
  // to nothing; "1u" / "0u" for a bool), else empty.
  const std::string& literal(size_t k) const { return literal_[k]; }
  // What wgsl() depends on, as a key (GpuKernelContext::needs_wgsl): the steps (ops, operands,
  // constants) and which inputs are literals, with their values.
  std::string key() const;
  static std::string input_name(size_t k) { return "x" + std::to_string(k); }

  // WGSL statements defining the constants the steps read, then t0, t1, ... (the last one is
  // result()), each rounded to values() where that is narrower than f32. A Pow by the constant 1, 2
  // or 3 becomes a product (exact for negative bases too).
  // The helper functions the steps need are appended to `decls`. Unsupported when a step's op is
  // not one the fused kernels evaluate, has another number of operands, or is a Where whose
  // condition is not an input read only as a condition.
  std::string wgsl(std::string& decls) const;
  std::string result() const { return "t" + std::to_string(size() - 1); }

 private:
  const std::vector<ir::FusedStep>& steps() const;
  std::string describe(const ir::FusedStep& step) const;
  std::string name(const ir::FusedOperand& o) const;
  std::optional<double> scalar(const ir::FusedOperand& o) const;  // a constant operand's value

  const GpuKernelContext& ctx_;
  const ir::FusedExpr* expr_;
  std::vector<bool> condition_only_, exponent_only_;  // by input: read only as Where's condition / Pow's exponent
  std::vector<std::string> literal_;
};

// The WGSL expression of one float32 step over its operands a, b and c (Where's condition first, then
// a and b; Clip's x, min, max and HardSigmoid's x, alpha, beta in order; v is a too), or empty
// when the fused kernels do not evaluate `op`. The helper functions it needs join `helpers`.
// (elementwise.cpp, next to the float math the unary kernels share.)
std::string fused_step_expression(const std::string& op, std::set<const char*>& helpers);

}  // namespace onnxgpu::webgpu
