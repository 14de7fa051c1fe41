// Elementwise ops on the GPU: unary math and activations, binary arithmetic with broadcasting,
// comparisons, logical and bitwise ops, BitShift, SwiGLU, Where, variadic Max/Min/Sum/Mean, Cast/CastLike,
// BitCast and Clip.
// Every op is written once against the shader layer's family helpers (add_$a, lt_$a, ...), so it runs
// for each dtype its ONNX schema admits; the family of an INT64 tensor decides its arithmetic.
#include <cstring>
#include <functional>
#include <optional>
#include <set>

#include "webgpu/device.h"
#include "webgpu/kernels/fused_steps.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/math_wgsl.h"
#include "ops/bitcast.h"
#include "ops/cast.h"
#include "ops/broadcast.h"

namespace onnxgpu::webgpu {

namespace {


// y = expr(v) for every element; `expr` sees `v` (x's value) and `$x` (x's family).
void unary(GpuKernelContext& ctx, const std::string& name, const std::string& expr, DType out_dtype,
           const std::string& decls = "", std::optional<shader::NarrowStore> narrow = {}) {
  const Shape& shape = ctx.shape(0);
  ctx.set_output(0, out_dtype, shape);
  auto p = ctx.program(name);
  p.input("x", ctx.dtype(0), shape);
  p.output("y", out_dtype, shape);
  if (narrow) p.admit_narrow(*narrow);
  if (!decls.empty()) p.declare(decls);
  p.set_threads(uint64_t(shape_numel(shape)));
  p.body("  let v = x_load(gi);\n  y_store(gi, " + expr + ");");
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

// Float-only math (the schema admits float types only; the family is f32).
GpuKernel float_unary(const std::string& expr, const std::string& decls = "") {
  return [expr, decls](GpuKernelContext& ctx) {
    if (!dtype_is_float(ctx.dtype(0))) ctx.unsupported("non-float input " + std::string(dtype_name(ctx.dtype(0))));
    unary(ctx, "unary", expr, ctx.dtype(0), decls);
  };
}

// Ops whose expression uses the family helpers (any numeric dtype).
GpuKernel generic_unary(const std::string& expr) {
  return [expr](GpuKernelContext& ctx) { unary(ctx, "unary", expr, ctx.dtype(0)); };
}

// The helper functions a float math op's expression needs (beyond the shader layer's).
const char* float_math_decls(const std::string& op) {
  if (op == "Erf") return kErfWgsl;
  if (op == "Sin" || op == "Cos" || op == "Tan") return shader::trig_helpers();
  return "";
}

// The attributes of the parameterised activations, baked into the WGSL (they never change per run).
GpuKernel activation(const std::string& op) {
  return [op](GpuKernelContext& ctx) {
    if (!dtype_is_float(ctx.dtype(0))) ctx.unsupported("non-float input");
    const ir::Node& n = ctx.node;
    auto a = [&](const char* name, float def) { return f32_lit(n.attr_float(name, def)); };
    std::string e;
    if (op == "LeakyRelu") e = "select(v * " + a("alpha", 0.01f) + ", v, v >= 0.0)";
    else if (op == "Elu") e = "select(" + a("alpha", 1.0f) + " * (exp_f32(v) - 1.0), v, v >= 0.0)";
    else if (op == "Selu") e = a("gamma", 1.05070102214813232421875f) + " * select(" + a("alpha", 1.67326319217681884765625f) + " * (exp_f32(v) - 1.0), v, v > 0.0)";
    else if (op == "Celu") e = "max_f32(0.0, v) + min_f32(0.0, " + a("alpha", 1.0f) + " * (exp_f32(v / " + a("alpha", 1.0f) + ") - 1.0))";
    else if (op == "HardSigmoid") e = "select(clamp(" + a("alpha", 0.2f) + " * v + " + a("beta", 0.5f) + ", 0.0, 1.0), v, isnan_f32(v))";
    else if (op == "ThresholdedRelu") e = "select(0.0, v, v > " + a("alpha", 1.0f) + ")";
    else if (op == "Shrink") e = "select(select(0.0, v + " + a("bias", 0.0f) + ", v < -" + a("lambd", 0.5f) + "), v - " + a("bias", 0.0f) + ", v > " + a("lambd", 0.5f) + ")";
    else if (op == "Swish") e = "v * sigmoid_f32(" + a("alpha", 1.0f) + " * v)";
    else if (op == "Mish") e = "v * tanh_f32(softplus_f32(v))";
    else if (op == "Gelu")
      e = n.attr_string("approximate", "none") == "tanh"
              ? "0.5 * v * (1.0 + tanh_f32(0.7978845608028654 * (v + 0.044715 * v * v * v)))"
              : "0.5 * v * (1.0 + erf_f32(v * 0.7071067811865476))";
    unary(ctx, op, e, ctx.dtype(0), kErfWgsl);
  };
}


// out[i] = expr(a, b) with numpy broadcasting; `expr` sees `a`, `b` and the families `$a`, `$b`.
void binary(GpuKernelContext& ctx, const std::string& name, const std::string& expr, DType out_dtype,
            const std::string& decls = "") {
  const Shape b_shape =
      ops::legacy_broadcast_b(ctx.node, ctx.opset, ctx.shape(0), ctx.shape(1), [&](const std::string& m) { ctx.fail(m); });
  Shape out;
  try {
    out = ops::broadcast_shapes(ctx.shape(0), b_shape);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  ctx.set_output(0, out_dtype, out);
  auto p = ctx.program(name);
  p.input("a", ctx.dtype(0), ctx.shape(0));
  p.input("b", ctx.dtype(1), ctx.shape(1));
  p.output("y", out_dtype, out);
  p.broadcast_index("a_at", ctx.shape(0), out);
  p.broadcast_index("b_at", b_shape, out);  // B's elements in B's order: only 1s were inserted
  if (!decls.empty()) p.declare(decls);
  p.set_threads(uint64_t(shape_numel(out)));
  p.body("  let a = a_load(a_at(gi));\n  let b = b_load(b_at(gi));\n  y_store(gi, " + expr + ");");
  ctx.dispatch(p, {ctx.in(0), ctx.in(1), ctx.out(0)});
}

GpuKernel arithmetic(const std::string& fn) {
  return [fn](GpuKernelContext& ctx) {
    if (ctx.dtype(0) != ctx.dtype(1)) ctx.fail("inputs have different types");
    if (ctx.dtype(0) == DType::Bool) ctx.unsupported("bool arithmetic");
    binary(ctx, fn, fn + "_$a(a, b)", ctx.dtype(0));
  };
}

GpuKernel comparison(const std::string& fn) {
  return [fn](GpuKernelContext& ctx) {
    if (ctx.dtype(0) != ctx.dtype(1)) ctx.fail("inputs have different types");
    binary(ctx, fn, "select(0u, 1u, " + fn + "_$a(a, b))", DType::Bool);
  };
}

GpuKernel logical(const std::string& op) {
  return [op](GpuKernelContext& ctx) {
    if (ctx.dtype(0) != DType::Bool || ctx.dtype(1) != DType::Bool) ctx.fail("inputs must be bool");
    binary(ctx, op, "a " + op + " b", DType::Bool);
  };
}



void pow_kernel(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (dtype_is_float(t)) {
    binary(ctx, "Pow", "pow_f32(a, to_f32_$b(b))", t);
    return;
  }
  if (t == DType::Bool) ctx.unsupported("bool base");
  // An integer base to a float exponent is pow in float64, then truncated (the CPU's rule): in float32
  // the result would be wrong once it passes 2^24.
  if (dtype_is_float(ctx.dtype(1))) ctx.unsupported("an integer base to a float exponent needs float64 arithmetic");
  // Integer base: the shader layer's integer power, the exponent taken as an int64.
  binary(ctx, "Pow", "ipow_$a(a, to_i64_$b(b))", t);
}

// BitShift on every integer type through the shader layer's shl_/shr_ (the amount as an int64; the
// element type's width decides when it shifts everything out).
void bitshift_kernel(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (ctx.dtype(1) != t) ctx.fail("inputs have different types");
  if (!kIntTypes.has(t)) ctx.fail("BitShift takes integer inputs, got " + std::string(dtype_name(t)));
  std::string dir = ctx.node.attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") ctx.fail("attribute 'direction' must be LEFT or RIGHT");
  std::string bits = u32_lit(dtype_size(t) * 8);
  binary(ctx, "BitShift", std::string(dir == "LEFT" ? "shl" : "shr") + "_$a(a, to_i64_$b(b), " + bits + ")", t);
}

// BitwiseAnd, BitwiseOr, BitwiseXor: the operator on the family's value (i32, u32, or the two words of
// a 64-bit integer, which &, | and ^ take word by word).
GpuKernel bitwise(const std::string& op) {
  return [op](GpuKernelContext& ctx) {
    if (ctx.dtype(0) != ctx.dtype(1)) ctx.fail("inputs have different types");
    if (!kIntTypes.has(ctx.dtype(0))) ctx.fail("takes integer inputs, got " + std::string(dtype_name(ctx.dtype(0))));
    binary(ctx, "bitwise", "a " + op + " b", ctx.dtype(0));
  };
}

// BitCast: each element's storage bits moved into an element of the target type (one size); bool
// targets store 0 or 1.
void bitcast_kernel(GpuKernelContext& ctx) {
  DType to = ops::bitcast_target(ctx.node, ctx.dtype(0), ctx.fail_fn());
  const Shape& shape = ctx.shape(0);
  ctx.set_output(0, to, shape);
  auto p = ctx.program("bitcast");
  p.input("x", ctx.dtype(0), shape);
  p.output("y", to, shape);
  p.set_threads(uint64_t(shape_numel(shape)));
  p.body(to == DType::Bool ? "  y_store(gi, select(0u, 1u, x_raw(gi) != 0u));" : "  y_store_raw(gi, x_raw(gi));");
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

void where_kernel(GpuKernelContext& ctx) {
  if (ctx.dtype(0) != DType::Bool) ctx.fail("input 'condition' must be bool");
  if (ctx.dtype(1) != ctx.dtype(2)) ctx.fail("inputs 'X' and 'Y' have different types");
  Shape out;
  try {
    out = ops::broadcast_shapes({ctx.shape(0), ctx.shape(1), ctx.shape(2)});
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  ctx.set_output(0, ctx.dtype(1), out);
  auto p = ctx.program("where");
  p.input("c", DType::Bool, ctx.shape(0));
  p.input("a", ctx.dtype(1), ctx.shape(1));
  p.input("b", ctx.dtype(2), ctx.shape(2));
  p.output("y", ctx.dtype(1), out);
  p.broadcast_index("c_at", ctx.shape(0), out);
  p.broadcast_index("a_at", ctx.shape(1), out);
  p.broadcast_index("b_at", ctx.shape(2), out);
  p.set_threads(uint64_t(shape_numel(out)));
  p.body("  y_store(gi, select(b_load(b_at(gi)), a_load(a_at(gi)), c_load(c_at(gi)) != 0u));");
  ctx.dispatch(p, {ctx.in(0), ctx.in(1), ctx.in(2), ctx.out(0)});
}

// Max, Min, Sum, Mean over 1..N inputs with multidirectional broadcasting, folded pairwise per element.
GpuKernel variadic(const std::string& op) {
  return [op](GpuKernelContext& ctx) {
    size_t n = ctx.num_inputs();
    if (n == 0) ctx.fail("needs at least one input");
    DType t = ctx.dtype(0);
    std::vector<Shape> shapes;
    for (size_t i = 0; i < n; ++i) {
      if (ctx.dtype(i) != t) ctx.fail("inputs have different types");
      shapes.push_back(ctx.shape(i));
    }
    if (op == "Mean" && !dtype_is_float(t)) ctx.unsupported("Mean of integers");
    Shape out;
    try {
      out = ops::broadcast_shapes(shapes);
    } catch (const Error& e) {
      ctx.fail(e.what());
    }
    if (n + 3 > 8) ctx.unsupported("more than 5 inputs");  // storage-buffer bindings per dispatch
    ctx.set_output(0, t, out);
    auto p = ctx.program(op + std::to_string(n));
    std::vector<ValueRef> binds;
    for (size_t i = 0; i < n; ++i) {
      std::string x = "x" + std::to_string(i);
      p.input(x, t, shapes[i]);
      p.broadcast_index(x + "_at", shapes[i], out);
      binds.push_back(ctx.in(i));
    }
    p.output("y", t, out);
    binds.push_back(ctx.out(0));
    std::string fn = op == "Max" ? "max" : op == "Min" ? "min" : "add";
    std::string body = "  var r = x0_load(x0_at(gi));\n";
    for (size_t i = 1; i < n; ++i)
      body += "  r = " + fn + "_$x0(r, x" + std::to_string(i) + "_load(x" + std::to_string(i) + "_at(gi)));\n";
    if (op == "Mean") body += "  r = r / " + std::to_string(n) + ".0;\n";
    p.body(body + "  y_store(gi, r);");
    p.set_threads(uint64_t(shape_numel(out)));
    ctx.dispatch(p, binds);
  };
}

// Casts to and from float64 that its bits make exact (the value path would round through f32): float64
// to a float type rounds the bits to f32 once (f64_to_f32; float16 / bfloat16 then round again, as their
// stores do), and float32, float16, bfloat16, bool, the 8- and 16-bit integers and the narrow types widen
// exactly (f32_to_f64). Others (int32 and the 64-bit integers, either way) keep the value path, which the shader
// layer refuses, so they run on the CPU. Returns false when the pair is not one of these.
bool cast_float64_bits(GpuKernelContext& ctx, DType to) {
  const DType from = ctx.dtype(0);
  std::string store;
  if (from == DType::Float64 && dtype_is_float(to) && to != DType::Float64) store = "y_store(gi, f64_to_f32(x_raw(gi)));";
  const DTypeSet widen{DType::Float32, DType::Float16, DType::BFloat16, DType::Bool,
                       DType::Int8,    DType::UInt8,   DType::Int16,    DType::UInt16};
  if (to == DType::Float64 && (widen.has(from) || dtype_is_narrow(from))) store = "y_store_raw(gi, f32_to_f64(to_f32_$x(x_load(gi))));";
  if (store.empty()) return false;
  const Shape& shape = ctx.shape(0);
  ctx.set_output(0, to, shape);
  auto p = ctx.program("cast_f64_bits");
  p.input("x", from, shape);
  p.output("y", to, shape);
  if (dtype_is_narrow(from)) p.admit_narrow();
  p.set_threads(uint64_t(shape_numel(shape)));
  p.body("  " + store);
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
  return true;
}

void cast_to(GpuKernelContext& ctx, DType to) {
  if (ctx.dtype(0) == DType::String || to == DType::String) ctx.unsupported("string casts");
  if (ctx.dtype(0) != to && (ctx.dtype(0) == DType::Float64 || to == DType::Float64) && cast_float64_bits(ctx, to)) return;
  // The narrow types convert through their family's value (f32, i32 or u32: exact), their stores as the
  // node's saturate and round_mode say.
  std::optional<shader::NarrowStore> narrow;
  if (dtype_is_narrow(ctx.dtype(0)) || dtype_is_narrow(to)) narrow = ops::cast_conversion(ctx.node, ctx.fail_fn());
  unary(ctx, "cast", shader::convert_value("v", shader::type_info(ctx.dtype(0), ctx.policy), shader::type_info(to, ctx.policy)),
        to, "", narrow);
}

void cast_kernel(GpuKernelContext& ctx) {
  const DType to = ops::cast_target(ctx.node, ctx.fail_fn());
  if (const std::string why = ops::cast_target_unsupported(to); !why.empty()) ctx.unsupported(why);
  cast_to(ctx, to);
}

void castlike_kernel(GpuKernelContext& ctx) { cast_to(ctx, ctx.dtype(1)); }

void clip_kernel(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  const Shape& shape = ctx.shape(0);
  ctx.set_output(0, t, shape);
  auto p = ctx.program("clip");
  p.input("x", t, shape);
  std::vector<ValueRef> binds{ctx.in(0)};
  std::string body = "  var v = x_load(gi);\n";
  if (ctx.opset < 11) {
    if (!dtype_is_float(t)) ctx.unsupported("non-float Clip-6");
    body += "  v = clamp(v, " + f32_lit(ctx.node.attr_float("min", -3.4028234663852886e38f)) + ", " +
            f32_lit(ctx.node.attr_float("max", 3.4028234663852886e38f)) + ");\n";
  } else {
    for (size_t i : {size_t(1), size_t(2)}) {
      if (!ctx.has_input(i)) continue;
      std::string b = i == 1 ? "lo" : "hi";
      if (shape_numel(ctx.shape(i)) != 1) ctx.fail("min/max must be scalars");
      p.input(b, t, ctx.shape(i));
      binds.push_back(ctx.in(i));
      body += "  v = " + std::string(i == 1 ? "max" : "min") + "_$x(v, " + b + "_load(0u));\n";
    }
  }
  p.output("y", t, shape);
  binds.push_back(ctx.out(0));
  p.set_threads(uint64_t(shape_numel(shape)));
  p.body(body + "  y_store(gi, v);");
  ctx.dispatch(p, binds);
}

// Float math: the expression of y for x = v.
// Float math: the expression of y for x = v, through the shader layer's float helpers (shader/types.cpp),
// which give the C library's results at the extremes (NaN, +-inf, overflow, subnormals).
const std::pair<const char*, const char*> kFloatMath[] = {
    {"Exp", "exp_f32(v)"},     {"Log", "log_f32(v)"},       {"Sqrt", "sqrt_f32(v)"},   {"Reciprocal", "1.0 / v"},
    {"Sin", "sin_f32(v)"},     {"Cos", "cos_f32(v)"},       {"Tan", "tan_f32(v)"},     {"Asin", "asin_f32(v)"},
    {"Acos", "acos_f32(v)"},   {"Atan", "atan_f32(v)"},     {"Sinh", "sinh_f32(v)"},   {"Cosh", "cosh_f32(v)"},
    {"Asinh", "asinh_f32(v)"}, {"Acosh", "acosh_f32(v)"},   {"Atanh", "atanh_f32(v)"}, {"Tanh", "tanh_f32(v)"},
    {"Floor", "floor_f32(v)"}, {"Ceil", "ceil_f32(v)"},     {"Round", "round(v)"},
    {"Sigmoid", "sigmoid_f32(v)"},
    {"Softplus", "softplus_f32(v)"},
    {"Softsign", "v / (1.0 + abs(v))"},
    {"HardSwish", "v * clamp(v / 6.0 + 0.5, 0.0, 1.0)"},
    {"Erf", "erf_f32(v)"},
};

}  // namespace

std::string fused_step_expression(const std::string& op, std::set<const char*>& helpers) {
  if (op == "Add") return "a + b";
  if (op == "Sub") return "a - b";
  if (op == "Mul") return "a * b";
  if (op == "Div") return "a / b";
  if (op == "Pow") return "pow_f32(a, b)";
  if (op == "Relu") return "max_f32(a, 0.0)";
  if (op == "Where") return "select(b, a, c != 0u)";  // c: the bool condition
  if (op == "Neg") return "-a";
  if (op == "Abs") return "abs(a)";
  if (op == "Clip") return "min_f32(max_f32(a, b), c)";  // b, c: min and max (NaN stays NaN)
  if (op == "HardSigmoid") return "select(clamp(b * a + c, 0.0, 1.0), a, isnan_f32(a))";  // b, c: alpha, beta
  for (const auto& [name, expr] : kFloatMath)
    if (op == name) {
      if (*float_math_decls(op)) helpers.insert(float_math_decls(op));
      return expr;  // over `v`, which the step binds to `a`
    }
  return "";
}

namespace {

// Several elementwise nodes in one kernel (runtime/fusion.h): the node's expression (read through
// FusedSteps) over its inputs, which are the node's, the last step's value the output. Every value is
// of one float type (FusedSteps::values: float32, or float16 or bfloat16 computed in f32 and rounded
// after each step) but Where's conditions (bool inputs); a constant scalar input is written into the WGSL.
void fused_elementwise(GpuKernelContext& ctx) {
  FusedSteps steps(ctx);
  if (steps.empty()) ctx.fail("a fused elementwise node needs its steps");
  steps.check_input_types(true);
  size_t n = steps.num_inputs();
  std::vector<Shape> shapes;
  for (size_t k = 0; k < n; ++k) shapes.push_back(steps.input(k).shape);
  Shape out;
  try {
    out = ops::broadcast_shapes(shapes);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  const DType t = steps.values();
  ctx.set_output(0, t, out);
  auto p = ctx.program("fused");
  // The WGSL's choices: the output's rank (the broadcast indices'), the steps and their literals.
  const bool wgsl = ctx.needs_wgsl(p, "rank " + std::to_string(out.size()) + " " + steps.key());
  std::vector<ValueRef> binds;
  std::string body;
  for (size_t k = 0; k < n; ++k) {
    std::string x = FusedSteps::input_name(k);
    if (!steps.literal(k).empty()) {
      if (wgsl) body += "  let " + x + " = " + steps.literal(k) + ";\n";
      continue;
    }
    p.input(x + "_in", steps.input(k).dtype, shapes[k]);
    p.broadcast_index(x + "_at", shapes[k], out);
    binds.push_back(ctx.in(steps.node_input(k)));
    if (wgsl) body += "  let " + x + " = " + x + "_in_load(" + x + "_at(gi));\n";
  }
  p.output("y", t, out);
  binds.push_back(ctx.out(0));
  if (binds.size() + 1 > ctx.limits.max_storage_buffers_per_shader_stage)  // + the status words
    ctx.unsupported("more tensors than the device binds per dispatch");
  p.set_threads(uint64_t(shape_numel(out)));
  if (wgsl) {
    std::string decls;
    body += steps.wgsl(decls);
    body += "  y_store(gi, " + steps.result() + ");";
    if (!decls.empty()) p.declare(decls);
    p.body(body);
  }
  ctx.dispatch(p, binds);
}

}  // namespace

void register_elementwise(GpuKernelRegistry& r) {
  for (const auto& [op, expr] : kFloatMath) r.add(op, float_unary(expr, float_math_decls(op)));
  // Any numeric type, through the family helpers.
  r.add("Abs", generic_unary("abs_$x(v)"));
  r.add("Neg", generic_unary("neg_$x(v)"));
  r.add("Sign", generic_unary("sign_$x(v)"));
  r.add("Relu", generic_unary("max_$x(v, zero_$x())"));
  r.add("Not", [](GpuKernelContext& ctx) { unary(ctx, "not", "1u - v", DType::Bool); });
  r.add("IsNaN", [](GpuKernelContext& ctx) { unary(ctx, "isnan", "select(0u, 1u, isnan_f32(v))", DType::Bool); });
  r.add("IsInf", [](GpuKernelContext& ctx) {
    bool neg = ctx.node.attr_int("detect_negative", 1) != 0, pos = ctx.node.attr_int("detect_positive", 1) != 0;
    std::string e = "select(0u, 1u, (abs(v) == f32_inf()) && ((v > 0.0 && " + std::string(pos ? "true" : "false") +
                    ") || (v < 0.0 && " + std::string(neg ? "true" : "false") + ")))";
    unary(ctx, "isinf", e, DType::Bool);
  });
  for (const char* op : {"LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "ThresholdedRelu", "Shrink", "Gelu", "Swish", "Mish"})
    r.add(op, activation(op));
  r.add("Add", arithmetic("add"));
  r.add("Sub", arithmetic("sub"));
  r.add("Mul", arithmetic("mul"));
  r.add("Div", arithmetic("div"));
  r.add("Mod", [](GpuKernelContext& ctx) {
    if (ctx.dtype(0) != ctx.dtype(1)) ctx.fail("inputs have different types");
    bool fmod = ctx.node.attr_int("fmod", 0) != 0;  // fmod=0 on floats: numpy's mod (mod_f32)
    binary(ctx, "Mod", std::string(fmod ? "fmod" : "mod") + "_$a(a, b)", ctx.dtype(0));
  });
  r.add("Pow", pow_kernel);
  r.add("PRelu", [](GpuKernelContext& ctx) {
    if (ctx.dtype(0) != ctx.dtype(1)) ctx.fail("inputs have different types");
    binary(ctx, "PRelu", "select(mul_$a(a, b), a, ge_$a(a, zero_$a()))", ctx.dtype(0));
  });
  r.add("Equal", comparison("eq"));
  r.add("Less", comparison("lt"));
  r.add("LessOrEqual", comparison("le"));
  r.add("Greater", comparison("gt"));
  r.add("GreaterOrEqual", comparison("ge"));
  r.add("And", logical("&"));
  r.add("Or", logical("|"));
  r.add("Xor", logical("^"));
  r.add("BitShift", bitshift_kernel);
  r.add("BitwiseAnd", bitwise("&"));
  r.add("BitwiseOr", bitwise("|"));
  r.add("BitwiseXor", bitwise("^"));
  r.add("BitwiseNot", [](GpuKernelContext& ctx) {
    if (!kIntTypes.has(ctx.dtype(0))) ctx.fail("takes an integer input, got " + std::string(dtype_name(ctx.dtype(0))));
    unary(ctx, "bitwise_not", "~v", ctx.dtype(0));
  });
  r.add("SwiGLU", [](GpuKernelContext& ctx) {
    if (ctx.dtype(0) != ctx.dtype(1)) ctx.fail("inputs have different types");
    if (!dtype_is_float(ctx.dtype(0))) ctx.fail("takes float inputs, got " + std::string(dtype_name(ctx.dtype(0))));
    binary(ctx, "SwiGLU", "a * sigmoid_f32(" + f32_lit(ctx.node.attr_float("alpha", 1.0f)) + " * a) * b", ctx.dtype(0));
  });
  r.add("BitCast", bitcast_kernel);
  r.add("Where", where_kernel);
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) r.add(op, variadic(op));
  r.add("Cast", cast_kernel);
  r.add("CastLike", castlike_kernel);
  r.add("Clip", clip_kernel);
  r.add_fused("Elementwise", fused_elementwise);
}

}  // namespace onnxgpu::webgpu
