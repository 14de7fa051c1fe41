#include "webgpu/kernels/fused_steps.h"

#include <cstring>
#include <map>

namespace onnxgpu::webgpu {

namespace {

bool binary(const std::string& op) { return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow"; }
// Clip(x, min, max) and HardSigmoid(x, alpha, beta) (its attributes as constant operands, fusion.cpp).
bool ternary(const std::string& op) { return op == "Clip" || op == "HardSigmoid"; }
size_t arity(const std::string& op) { return op == "Where" || ternary(op) ? 3 : binary(op) ? 2 : 1; }

}  // namespace

FusedSteps::FusedSteps(const GpuKernelContext& ctx, size_t products) : ctx_(ctx), expr_(ctx.node.fused.get()) {
  size_t n = num_inputs();
  if (expr_ && expr_->first_input + n > ctx.num_inputs()) ctx.fail("the fused expression reads inputs the node lacks");
  condition_only_.assign(n, true);
  exponent_only_.assign(n, true);
  for (size_t m = 0; m < size(); ++m) {
    const ir::FusedStep& st = steps()[m];
    for (size_t q = 0; q < st.args.size(); ++q) {
      const ir::FusedOperand& o = st.args[q];
      if (o.kind == ir::FusedOperand::Kind::Input) {
        if (o.index >= n) ctx.fail("step operand " + name(o) + " names no input");
        if (!(st.op == "Pow" && q == 1)) exponent_only_[o.index] = false;
        if (!(st.op == "Where" && q == 0)) condition_only_[o.index] = false;
      } else if (o.kind == ir::FusedOperand::Kind::Step && o.index >= m) {
        ctx.fail("step operand " + name(o) + " names no earlier step");
      } else if (o.kind == ir::FusedOperand::Kind::Product && o.index >= products) {
        ctx.fail("step operand " + name(o) + " names a product the kernel does not compute");
      }
    }
  }
  literal_.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const GpuValueInfo& in = input(k);
    bool number = dtype_is_float(in.dtype) || dtype_is_integer(in.dtype) || in.dtype == DType::Bool;
    if (!number || !in.constant || shape_numel(in.shape) != 1) continue;
    double v = in.constant->double_at(0);
    literal_[k] = in.dtype == DType::Bool ? (v != 0 ? "1u" : "0u") : f32_lit(float(v));
  }
}

const std::vector<ir::FusedStep>& FusedSteps::steps() const {
  static const std::vector<ir::FusedStep> none;
  return expr_ ? expr_->steps : none;
}

DType FusedSteps::values() const {
  for (size_t k = 0; k < num_inputs(); ++k)
    if (dtype_is_float(input(k).dtype) && !condition_only_[k] && !exponent_only_[k]) return input(k).dtype;
  return DType::Float32;
}

void FusedSteps::check_input_types(bool any_type_exponents) const {
  const DType t = values();
  if (t != DType::Float32 && t != DType::Float16 && t != DType::BFloat16)
    ctx_.unsupported("its values are " + std::string(dtype_name(t)) + ", not float32, float16 or bfloat16");
  for (size_t k = 0; k < num_inputs(); ++k) {
    const GpuValueInfo& in = input(k);
    bool condition = in.dtype == DType::Bool && condition_only_[k];
    bool exponent = any_type_exponents && exponent_only_[k] && in.dtype != DType::Bool && in.constant &&
                    shape_numel(in.shape) == 1;
    if (in.dtype != t && !condition && !exponent)
      ctx_.unsupported("step input " + std::to_string(k) + " is " + std::string(dtype_name(in.dtype)) + ", not " +
                       std::string(dtype_name(t)));
  }
}

std::string FusedSteps::name(const ir::FusedOperand& o) const {
  switch (o.kind) {
    case ir::FusedOperand::Kind::Input: return input_name(o.index);
    case ir::FusedOperand::Kind::Step: return "t" + std::to_string(o.index);
    case ir::FusedOperand::Kind::Product: return o.index ? "p" + std::to_string(o.index) : "p";
    case ir::FusedOperand::Kind::Constant: {
      uint32_t bits;
      std::memcpy(&bits, &o.value, 4);
      return "f" + std::to_string(bits);
    }
  }
  return "";
}

std::string FusedSteps::describe(const ir::FusedStep& step) const {
  std::string s = step.op;
  for (const auto& o : step.args) s += " " + name(o);
  return s;
}

std::optional<double> FusedSteps::scalar(const ir::FusedOperand& o) const {
  if (o.kind == ir::FusedOperand::Kind::Constant) return double(o.value);
  if (o.kind != ir::FusedOperand::Kind::Input || literal_[o.index].empty()) return std::nullopt;
  return input(o.index).constant->double_at(0);
}

std::string FusedSteps::key() const {
  std::string k;
  for (const std::string& l : literal_) k += (l.empty() ? std::string("in") : l) + " ";
  for (const ir::FusedStep& st : steps()) k += "\n" + describe(st);
  return k;
}

std::string FusedSteps::wgsl(std::string& decls) const {
  std::map<std::string, float> constants;  // by name: each defined once
  for (const ir::FusedStep& st : steps())
    for (const auto& o : st.args)
      if (o.kind == ir::FusedOperand::Kind::Constant) constants[name(o)] = o.value;
  std::string body;
  for (const auto& [n, v] : constants) body += "  let " + n + " = " + f32_lit(v) + ";\n";
  std::set<const char*> helpers;
  const DType t_values = values();  // each step's value as a node alone would store it
  for (size_t m = 0; m < size(); ++m) {
    const ir::FusedStep& st = steps()[m];
    std::string e = fused_step_expression(st.op, helpers);
    if (e.empty() || st.args.size() != arity(st.op)) ctx_.unsupported("step '" + describe(st) + "'");
    const ir::FusedOperand& c = st.args[0];
    if (st.op == "Where" && !(c.kind == ir::FusedOperand::Kind::Input && condition_only_[c.index]))
      ctx_.unsupported("a Where condition computed inside the group");
    if (st.op == "Pow") {
      if (auto v = scalar(st.args[1])) {
        if (*v == 1.0) e = "a";
        else if (*v == 2.0) e = "a * a";
        else if (*v == 3.0) e = "a * a * a";
      }
    }
    std::string t = "t" + std::to_string(m);
    body += "  var " + t + ": f32;\n  {\n";
    if (st.op == "Where")
      body += "    let c = " + name(st.args[0]) + ";\n    let a = " + name(st.args[1]) + ";\n    let b = " +
              name(st.args[2]) + ";\n";
    else if (ternary(st.op))
      body += "    let a = " + name(st.args[0]) + ";\n    let b = " + name(st.args[1]) + ";\n    let c = " +
              name(st.args[2]) + ";\n";
    else if (binary(st.op))
      body += "    let a = " + name(st.args[0]) + ";\n    let b = " + name(st.args[1]) + ";\n";
    else
      body += "    let a = " + name(st.args[0]) + ";\n    let v = a;\n";
    body += "    " + t + " = " + shader::as_stored(t_values, e) + ";\n  }\n";
  }
  for (const char* h : helpers) decls += h;
  return body;
}

}  // namespace onnxgpu::webgpu
