// ONNX Runtime's QOperator contrib ops (com.microsoft) on the GPU, as src/ops/qlinear.h defines them:
//   - QLinearAdd, QLinearMul: one invocation per output element (numpy broadcasting), the float32
//     expression of ops::qlinear_binary_value; scales and zero points uniforms when constant (QuantParam),
//     1 / C_scale computed on the host then, as the CPU reference computes it;
//   - QLinearSigmoid, QLinearLeakyRelu: a lookup of the input's byte in the op's table of 256 outputs
//     (ops::qlinear_table, the CPU reference's own), a uniform array: its scales and zero points must
//     be constants (else the node runs on the CPU);
//   - QLinearGlobalAveragePool: one invocation per (image, channel), the exact int32 sum over the
//     spatial positions (NCHW or channels last), requantized with ops::qlinear_pool_factor;
//   - QLinearConcat: one dispatch per input, each element through the input's table into its place;
//   - QLinearAveragePool: pool.cpp's window kernel, dequantizing as it sums;
//   - QGemm: one invocation per output element, the exact int32 sum plus C, times the column's factor;
//   - QLinearSoftmax: one invocation per row (ONNX Runtime's table of exponentials, the row's float32 sum).
#include <bit>

#include "ops/broadcast.h"
#include "ops/qlinear.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/math_wgsl.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {
namespace {

float scale_value(GpuKernelContext& ctx, size_t i, const char* what) { return float(ctx.constant(i, what).double_at(0)); }
int32_t zero_value(GpuKernelContext& ctx, size_t i, const char* what) {
  return ctx.has_input(i) ? int32_t(ctx.constant(i, what).int_at(0)) : 0;
}

// Input i (a scale or zero point), when given, must be a constant: the kernels that read it on the host (to
// build a table) cannot take a value computed at run time, so the node then runs on the CPU.
void require_constant(GpuKernelContext& ctx, size_t i) {
  if (ctx.has_input(i) && !ctx.is_constant(i)) ctx.unsupported("its scales and zero points are computed at run time");
}

// A table (ops::QLinearTable) as a uniform array of its entries' bits.
void table_uniform(shader::Program& p, const std::string& name, const ops::QLinearTable& t) {
  std::vector<uint32_t> words(t.size());
  for (size_t i = 0; i < t.size(); ++i) words[i] = uint32_t(t[i]);
  p.uniform_array(name, words);
}

// WGSL storing table entry for the byte of `x` (an int8 or uint8 value) as element `at` of y.
std::string store_looked_up(DType t, const std::string& table, const std::string& x, const std::string& at) {
  return "  let e = bitcast<i32>(" + table + "(u32(" + x + ") & 255u));\n"
         "  y_store(" + at + ", " + (t == DType::Int8 ? "e" : "u32(e)") + ");";
}

// A (input 0) and B (input 3) with their scales (1, 4) and zero points (2, 5, optional), as QLinearAdd,
// QLinearMul and QGemm take them: tag() for the program's name, then bind() declares A, B and their
// parameters and returns the parameters' WGSL (`b_index`: the index of B's, "0u" or a column).
struct QuantizedPair {
  QuantParam sa, za, sb, zb;
  bool has_za = false, has_zb = false;
  explicit QuantizedPair(const GpuKernelContext& ctx)
      : sa(QuantParam::of(ctx, 1)), za(QuantParam::of(ctx, 2)), sb(QuantParam::of(ctx, 4)), zb(QuantParam::of(ctx, 5)),
        has_za(ctx.has_input(2)), has_zb(ctx.has_input(5)) {}
  std::string tag() const {
    return std::string("_s") + sa.tag() + sb.tag() + (has_za ? std::string("_az") + za.tag() : "") +
           (has_zb ? std::string("_bz") + zb.tag() : "");
  }
  struct Wgsl {
    std::string sa, za, sb, zb;
  };
  Wgsl bind(GpuKernelContext& ctx, shader::Program& p, std::vector<ValueRef>& binds, const std::string& b_index) const {
    p.input("a", ctx.dtype(0), ctx.shape(0));
    binds.push_back(ctx.in(0));
    p.input("b", ctx.dtype(3), ctx.shape(3));
    binds.push_back(ctx.in(3));
    Wgsl w;
    w.sa = sa.bind(ctx, p, binds, "sa", 1, "0u", true);
    w.sb = sb.bind(ctx, p, binds, "sb", 4, b_index, true);
    w.za = has_za ? za.bind(ctx, p, binds, "za", 2, "0u", false) : "0i";
    w.zb = has_zb ? zb.bind(ctx, p, binds, "zb", 5, b_index, false) : "0i";
    return w;
  }
};

void qlinear_binary(GpuKernelContext& ctx, bool mul) {
  const DType t = ops::check_qlinear_binary(ctx.operands(), ctx.fail_fn());
  Shape out;
  try {
    out = ops::broadcast_shapes(ctx.shape(0), ctx.shape(3));
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  ctx.set_output(0, t, out);
  if (shape_numel(out) == 0) return;
  const QuantizedPair ab(ctx);
  const QuantParam cz = QuantParam::of(ctx, 7);
  const bool inv_c_uniform = ctx.is_constant(6), has_cz = ctx.has_input(7);
  std::string name = std::string(mul ? "qmul" : "qadd") + ab.tag() + "_c" + (inv_c_uniform ? 'u' : 'b');
  if (has_cz) name += std::string("_cz") + cz.tag();
  auto p = ctx.program(name);
  std::vector<ValueRef> binds;
  const QuantizedPair::Wgsl w = ab.bind(ctx, p, binds, "0u");
  const std::string czv = has_cz ? cz.bind(ctx, p, binds, "zc", 7, "0u", false) : "0i";
  std::string inv_c = "inv_c()";
  if (inv_c_uniform) {
    p.uniform_f32("inv_c", 1.0f / scale_value(ctx, 6, "C_scale"));
  } else {
    p.input("cs", ctx.dtype(6), ctx.shape(6));
    binds.push_back(ctx.in(6));
    inv_c = "(1.0 / to_f32_$cs(cs_load(0u)))";
  }
  p.output("y", t, out);
  binds.push_back(ctx.out(0));
  if (binds.size() + 1 > ctx.limits.max_storage_buffers_per_shader_stage)  // + the status words
    ctx.unsupported("more inputs than the device binds per dispatch");
  p.broadcast_index("a_at", ctx.shape(0), out);
  p.broadcast_index("b_at", ctx.shape(3), out);
  p.set_threads(uint64_t(shape_numel(out)));
  p.body("  let va = " + w.sa + " * f32(i32(a_load(a_at(gi))) - " + w.za + ");\n"
         "  let vb = " + w.sb + " * f32(i32(b_load(b_at(gi))) - " + w.zb + ");\n"
         "  let v = (" + (mul ? "va * vb" : "va + vb") + ") * " + inv_c + ";\n" +
         requantized_store(t, "v", czv));
  ctx.dispatch(p, binds);
}

void qlinear_unary(GpuKernelContext& ctx) {
  const DType t = ops::check_qlinear_unary(ctx.operands(), ctx.fail_fn());
  ctx.set_output(0, t, ctx.shape(0));
  for (size_t i : {1, 3, 2, 4}) require_constant(ctx, i);
  if (shape_numel(ctx.shape(0)) == 0) return;
  const ops::QLinearTable table =
      ops::qlinear_table(t, scale_value(ctx, 1, "X_scale"), zero_value(ctx, 2, "X_zero_point"), scale_value(ctx, 3, "Y_scale"),
                         zero_value(ctx, 4, "Y_zero_point"), t, ops::qlinear_unary_function(ctx.node));
  auto p = ctx.program("table");
  p.input("x", t, ctx.shape(0));
  p.output("y", t, ctx.shape(0));
  table_uniform(p, "table", table);
  p.set_threads(uint64_t(shape_numel(ctx.shape(0))));
  p.body(store_looked_up(t, "table", "x_load(gi)", "gi"));
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

void qlinear_global_average_pool(GpuKernelContext& ctx) {
  const ops::QLinearPoolGeometry g = ops::qlinear_global_pool_geometry(ctx.node, ctx.operands(), ctx.fail_fn());
  const DType t = ctx.dtype(0);
  ctx.set_output(0, t, g.out);
  if (shape_numel(g.out) == 0) return;
  if (g.spatial > int64_t(1) << 23) ctx.unsupported("more than 2^23 positions per channel (the int32 sum could overflow)");
  const QuantParam xz = QuantParam::of(ctx, 2), yz = QuantParam::of(ctx, 4);
  const bool f_uniform = ctx.is_constant(1) && ctx.is_constant(3);
  std::string name = std::string("gap") + (g.channels_last ? "_nhwc" : "_nchw") + "_f" + (f_uniform ? 'u' : 'b');
  if (ctx.has_input(2)) name += std::string("_xz") + xz.tag();
  if (ctx.has_input(4)) name += std::string("_yz") + yz.tag();
  auto p = ctx.program(name);
  std::vector<ValueRef> binds;
  p.input("x", t, ctx.shape(0));
  binds.push_back(ctx.in(0));
  const std::string xzv = ctx.has_input(2) ? xz.bind(ctx, p, binds, "xz", 2, "0u", false) : "0i";
  const std::string yzv = ctx.has_input(4) ? yz.bind(ctx, p, binds, "yz", 4, "0u", false) : "0i";
  std::string f = "f()";
  if (f_uniform) {
    p.uniform_f32("f", ops::qlinear_pool_factor(scale_value(ctx, 1, "x_scale"), scale_value(ctx, 3, "y_scale"), g.spatial));
  } else {
    p.input("xs", ctx.dtype(1), ctx.shape(1));
    binds.push_back(ctx.in(1));
    p.input("ys", ctx.dtype(3), ctx.shape(3));
    binds.push_back(ctx.in(3));
    f = "(to_f32_$xs(xs_load(0u)) / (to_f32_$ys(ys_load(0u)) * f32(S())))";
  }
  p.output("y", t, g.out);
  binds.push_back(ctx.out(0));
  p.uniform("C", uint32_t(g.channels));
  p.uniform("S", uint32_t(g.spatial));
  p.set_threads(uint64_t(g.batch * g.channels));
  const std::string at = g.channels_last ? "(n * S() + s) * C() + c" : "(n * C() + c) * S() + s";
  p.body("  let c = gi % C();\n  let n = gi / C();\n"
         "  var acc = -(" + xzv + ") * i32(S());\n"
         "  for (var s = 0u; s < S(); s = s + 1u) { acc = acc + i32(x_load(" + at + ")); }\n" +
         requantized_store(t, "f32(acc) * " + f, yzv));
  ctx.dispatch(p, binds);
}

void qlinear_concat(GpuKernelContext& ctx) {
  int64_t axis = 0;
  Shape out;
  const DType t = ops::check_qlinear_concat(ctx.node, ctx.operands(), axis, out, ctx.fail_fn());
  ctx.set_output(0, t, out);
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (i < 2 || i % 3 != 2) require_constant(ctx, i);
  if (shape_numel(out) == 0) return;
  const float ys = scale_value(ctx, 0, "Y_scale");
  const int32_t yz = zero_value(ctx, 1, "Y_zero_point");
  int64_t inner = 1;
  for (size_t d = size_t(axis) + 1; d < out.size(); ++d) inner *= out[d];
  int64_t offset = 0;
  for (size_t k = 2; k < ctx.num_inputs(); k += 3) {
    const int64_t len = ctx.shape(k)[size_t(axis)];
    if (shape_numel(ctx.shape(k)) > 0) {
      auto p = ctx.program("concat");
      p.input("x", t, ctx.shape(k));
      p.output("y", t, out);
      table_uniform(p, "table",
                    ops::qlinear_table(t, scale_value(ctx, k + 1, "X_scale"), zero_value(ctx, k + 2, "X_zero_point"), ys, yz, t,
                                       [](float v) { return v; }));
      p.uniform("run", uint32_t(len * inner));               // the elements of one outer index, in x
      p.uniform("out_run", uint32_t(out[size_t(axis)] * inner));  // ... in y
      p.uniform("start", uint32_t(offset * inner));
      p.set_threads(uint64_t(shape_numel(ctx.shape(k))));
      p.body(store_looked_up(t, "table", "x_load(gi)", "(gi / run()) * out_run() + start() + gi % run()"));
      ctx.dispatch(p, {ctx.in(k), ctx.out(0)});
    }
    offset += len;
  }
}

void qgemm(GpuKernelContext& ctx) {
  const ops::QGemmParams g = ops::qgemm_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const Shape out{g.M, g.N};
  ctx.set_output(0, g.out, out);
  if (shape_numel(out) == 0) return;
  const QuantizedPair ab(ctx);
  const QuantParam ys = QuantParam::of(ctx, 7), yz = QuantParam::of(ctx, 8);
  const bool has_c = ctx.has_input(6), has_yz = ctx.has_input(8);
  std::string name = std::string("qgemm") + (g.trans_a ? "_ta" : "") + (g.trans_b ? "_tb" : "") + ab.tag() + (has_c ? "_c" : "");
  if (g.quantized) name += std::string("_y") + ys.tag() + (has_yz ? yz.tag() : '-');
  auto p = ctx.program(name);
  std::vector<ValueRef> binds;
  const QuantizedPair::Wgsl w = ab.bind(ctx, p, binds, "n");
  std::string ysv, yzv = "0i";
  if (g.quantized) {
    ysv = ys.bind(ctx, p, binds, "sy", 7, "0u", true);
    if (has_yz) yzv = yz.bind(ctx, p, binds, "zy", 8, "0u", false);
  }
  if (has_c) {
    p.input("c", ctx.dtype(6), ctx.shape(6));
    binds.push_back(ctx.in(6));
    p.broadcast_index("c_at", ctx.shape(6), out);
  }
  p.output("y", g.out, out);
  binds.push_back(ctx.out(0));
  if (binds.size() + 1 > ctx.limits.max_storage_buffers_per_shader_stage)  // + the status words
    ctx.unsupported("more inputs than the device binds per dispatch");
  p.uniform("M", uint32_t(g.M));
  p.uniform("K", uint32_t(g.K));
  p.uniform("N", uint32_t(g.N));
  p.uniform_f32("alpha", g.alpha);
  p.set_threads(uint64_t(g.M * g.N));
  std::string body =
      "  let n = gi % N();\n  let m = gi / N();\n"
      "  let oa = " + w.za + ";\n  let ob = " + w.zb + ";\n"
      "  var acc = 0i;\n"
      "  for (var k = 0u; k < K(); k = k + 1u) {\n"
      "    acc = acc + (i32(a_load(" + std::string(g.trans_a ? "k * M() + m" : "m * K() + k") + ")) - oa) * (i32(b_load(" +
      (g.trans_b ? "n * K() + k" : "k * N() + n") + ")) - ob);\n"
      "  }\n" +
      (has_c ? "  acc = acc + c_load(c_at(gi));\n" : "") +
      "  let f = alpha() * " + w.sa + " * " + w.sb + ";\n";
  body += g.quantized ? requantized_store(g.out, "f32(acc) * (f / " + ysv + ")", yzv) : "  y_store(gi, from_f32_$y(f32(acc) * f));";
  p.body(body);
  ctx.dispatch(p, binds);
}

// QLinearSoftmax (ops::QLinearSoftmaxParams): one invocation per row, which finds the row's maximum, sums its
// table entries in float32 in the row's order (the CPU reference's sum, bit for bit), then stores each value
// requantized, the division correctly rounded (div_rn) as the CPU's. Its scales and zero point must be
// constants (the table is built from them).
void qlinear_softmax(GpuKernelContext& ctx) {
  for (size_t i : {1, 3, 4}) require_constant(ctx, i);
  const ops::QLinearSoftmaxParams q = ops::qlinear_softmax_params(
      ctx.node, ctx.operands(), scale_value(ctx, 1, "X_scale"), scale_value(ctx, 3, "Y_scale"), zero_value(ctx, 4, "Y_zero_point"),
      ctx.fail_fn());
  const DType t = q.type;
  ctx.set_output(0, t, ctx.shape(0));
  if (shape_numel(ctx.shape(0)) == 0) return;
  auto p = ctx.program("qlinear_softmax");
  p.input("x", t, ctx.shape(0));
  p.output("y", t, ctx.shape(0));
  std::vector<uint32_t> words(q.table.size());
  for (size_t i = 0; i < words.size(); ++i) words[i] = std::bit_cast<uint32_t>(q.table[i]);
  p.uniform_array("table", words);
  p.uniform("D", strided::u32_dim(ctx, q.D, "the softmax's length"));
  p.uniform("inner", strided::u32_dim(ctx, q.inner, "the inner size"));
  p.uniform_f32("factor", q.y_factor);
  p.uniform("zero", uint32_t(q.y_zero));
  p.declare(kDivRn);
  p.set_threads(uint64_t(q.outer) * uint64_t(q.inner));
  p.body(
      "  let base = (gi / inner()) * D() * inner() + gi % inner();\n"
      "  var top = i32(x_load(base));\n"
      "  for (var d = 1u; d < D(); d = d + 1u) { top = max(top, i32(x_load(base + d * inner()))); }\n"
      "  var sum = 0.0;\n"
      "  for (var d = 0u; d < D(); d = d + 1u) {\n"
      "    sum = sum + bitcast<f32>(table(u32(255i - (top - i32(x_load(base + d * inner()))))));\n"
      "  }\n"
      "  for (var d = 0u; d < D(); d = d + 1u) {\n"
      "    let at = base + d * inner();\n"
      "    let e = bitcast<f32>(table(u32(255i - (top - i32(x_load(at))))));\n"
      "  " + requantized_store(t, "div_rn(e * factor(), sum)", "bitcast<i32>(zero())", "at") + "\n"
      "  }");
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

}  // namespace

void register_qlinear(GpuKernelRegistry& r) {
  r.add("QLinearSoftmax", qlinear_softmax, ir::kMsDomain);
  r.add("QLinearAdd", [](GpuKernelContext& ctx) { qlinear_binary(ctx, false); }, ir::kMsDomain);
  r.add("QLinearMul", [](GpuKernelContext& ctx) { qlinear_binary(ctx, true); }, ir::kMsDomain);
  r.add("QLinearSigmoid", qlinear_unary, ir::kMsDomain);
  r.add("QLinearLeakyRelu", qlinear_unary, ir::kMsDomain);
  r.add("QLinearGlobalAveragePool", qlinear_global_average_pool, ir::kMsDomain);
  r.add("QLinearConcat", qlinear_concat, ir::kMsDomain);
  r.add("QGemm", qgemm, ir::kMsDomain);
}

}  // namespace onnxgpu::webgpu
