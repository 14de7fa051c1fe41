// LayerNormalization, InstanceNormalization, GroupNormalization, LpNormalization, MeanVarianceNormalization,
// BatchNormalization (inference) and the transformer
// normalizations (com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization,
// SimplifiedLayerNormalization, RMSNormalization) on the GPU, in f32 (float16, bfloat16 and float64 are
// loaded into f32 and stored back; float64 arithmetic is refused by the shader layer, so those nodes run
// on the CPU).
//
// All but BatchNormalization normalize rows (the dims from `axis` on, the last dim, the spatial dims of one
// (n, c), or MeanVarianceNormalization's reduced axes, mapped to X's elements): one workgroup per row,
// whose sums are reduced in workgroup memory (row_body), then the row is normalized and scaled.
// BatchNormalization in inference mode is elementwise with per-channel parameters; in training mode it
// normalizes rows over the batch and spatial axes as MeanVarianceNormalization does.
#include <algorithm>

#include "ops/broadcast.h"
#include "ops/normalization.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/row_norm.h"

namespace onnxgpu::webgpu {

namespace {

const DTypeSet kNormTypes{DType::Float16, DType::Float32, DType::Float64, DType::BFloat16};

void check_float(GpuKernelContext& ctx, size_t i, const char* what, DTypeSet types = kNormTypes) {
  if (!types.has(ctx.dtype(i)))
    ctx.fail(std::string(what) + " must be a float tensor, got " + std::string(dtype_name(ctx.dtype(i))) +
             shape_str(ctx.shape(i)));
}

// The value function of the kernels that normalize x as it is.
const char* kPlainValue = "fn xv(i: u32) -> f32 { return x_load(i); }\n";

uint32_t u32_size(GpuKernelContext& ctx, int64_t v) {
  if (v < 0 || v > int64_t(0xffffffffu)) ctx.unsupported("tensor too large for 32-bit GPU indexing");
  return uint32_t(v);
}

// ---------------------------------------------------------------------------------- LayerNormalization

void layer_norm(GpuKernelContext& ctx) {
  check_float(ctx, 0, "X");
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  int64_t rank = int64_t(xs.size());
  const auto [axis, stash] = ops::layer_norm_params(ctx.node, rank, [&](const std::string& m) { ctx.fail(m); });
  float eps = ctx.node.attr_float("epsilon", 1e-5f);
  Shape outer_shape(xs.begin(), xs.begin() + axis), inner_shape(xs.begin() + axis, xs.end());
  uint32_t rows = u32_size(ctx, shape_numel(outer_shape)), len = u32_size(ctx, shape_numel(inner_shape));
  Shape ms = outer_shape;
  ms.resize(size_t(rank), 1);
  ctx.set_output(0, t, xs);
  bool want_mean = ctx.output_wanted(1), want_inv = ctx.output_wanted(2);
  if (want_mean) ctx.set_output(1, stash, ms);
  if (want_inv) ctx.set_output(2, stash, ms);

  uint32_t wgs = row_norm::workgroup(ctx.limits, len);
  auto p = ctx.program("rows", wgs);
  p.input("x", t, xs);
  std::vector<ValueRef> binds{ctx.in(0)};
  // Scale and B: the trailing dims of X (index j % numel), or a general unidirectional broadcast.
  auto param = [&](size_t i, const char* pname, const std::string& var) -> std::string {
    if (!ctx.has_input(i)) return "";
    const Shape& s = ctx.shape(i);
    if (ctx.dtype(i) != t)
      ctx.fail(std::string(pname) + " is " + std::string(dtype_name(ctx.dtype(i))) + " but X is " + std::string(dtype_name(t)));
    Shape b;
    try {
      b = ops::broadcast_shapes(s, xs);
    } catch (const Error&) {
    }
    if (b != xs)
      ctx.fail(std::string(pname) + " " + shape_str(s) + " cannot be broadcast to the normalized shape of X " +
               shape_str(xs) + " (axis " + std::to_string(axis) + ")");
    p.input(var, ctx.dtype(i), s);
    binds.push_back(ctx.in(i));
    Shape stripped = s;
    while (!stripped.empty() && stripped.front() == 1) stripped.erase(stripped.begin());
    bool trailing = int64_t(stripped.size()) <= rank - axis &&
                    std::equal(stripped.begin(), stripped.end(), xs.end() - int64_t(stripped.size()));
    if (trailing) {
      p.uniform(var + "_n", u32_size(ctx, std::max<int64_t>(shape_numel(s), 1)));
      return var + "_load(j % " + var + "_n())";
    }
    p.broadcast_index(var + "_at", s, xs);
    return var + "_load(" + var + "_at(i))";
  };
  std::string scale = param(1, "Scale", "s"), bias = param(2, "B", "b");
  p.output("y", t, xs);
  binds.push_back(ctx.out(0));
  std::string stats;
  if (want_mean) {
    p.output("mean", stash, ms);
    binds.push_back(ctx.out(1));
    stats += "  if (lid == 0u) { mean_store(row, mean); }\n";
  }
  if (want_inv) {
    p.output("inv", stash, ms);
    binds.push_back(ctx.out(2));
    stats += "  if (lid == 0u) { inv_store(row, inv); }\n";
  }
  p.uniform("rows", rows);
  p.uniform("len", len);
  p.uniform_f32("eps", eps);
  p.declare(row_norm::sum_decl(wgs));
  p.declare(kPlainValue);
  row_norm::RowSpec r;
  r.scale = scale;
  r.shift = bias;
  r.stats = stats;
  p.body(row_norm::body(r));
  row_norm::dispatch(ctx, p, std::move(binds), rows);
}

// ------------------------------------------------------------------------ Transformer normalizations

// SkipLayerNormalization, SkipSimplifiedLayerNormalization (com.microsoft): the row kernel over
// v = input + skip (+ bias), which it may also store (input_skip_bias_sum). See ops::skip_norm_params.
void skip_norm(GpuKernelContext& ctx) {
  const ops::SkipNormParams sp = ops::skip_norm_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const Shape& xs = ctx.shape(0);
  const DType t = ctx.dtype(0);
  const uint32_t len = u32_size(ctx, sp.hidden), rows = u32_size(ctx, shape_numel(xs) / sp.hidden);
  ctx.set_output(0, t, xs);
  const bool want_mean = ctx.output_wanted(1), want_inv = ctx.output_wanted(2), want_sum = ctx.output_wanted(3);
  if (want_mean) ctx.set_output(1, DType::Float32, sp.stats);
  if (want_inv) ctx.set_output(2, DType::Float32, sp.stats);
  if (want_sum) ctx.set_output(3, t, xs);

  const uint32_t wgs = row_norm::workgroup(ctx.limits, len);
  auto p = ctx.program(sp.simplified ? "skip_simplified" : "skip", wgs);
  p.input("x", t, xs);
  p.input("sk", t, ctx.shape(1));
  p.input("g", t, ctx.shape(2));
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1), ctx.in(2)};
  row_norm::RowSpec r;
  r.scale = "g_load(j)";
  r.centered = !sp.simplified;
  if (sp.beta >= 0) {
    p.input("b", t, ctx.shape(size_t(sp.beta)));
    binds.push_back(ctx.in(size_t(sp.beta)));
    r.shift = "b_load(j)";
  }
  std::string value = "fn xv(i: u32) -> f32 { return x_load(i) + sk_load(i % skip_n())";
  if (sp.bias >= 0) {
    p.input("bi", t, ctx.shape(size_t(sp.bias)));
    binds.push_back(ctx.in(size_t(sp.bias)));
    value += " + bi_load(i % len())";
  }
  p.output("y", t, xs);
  binds.push_back(ctx.out(0));
  if (want_mean) {
    p.output("mean", DType::Float32, sp.stats);
    binds.push_back(ctx.out(1));
    r.stats += "  if (lid == 0u) { mean_store(row, mean); }\n";
  }
  if (want_inv) {
    p.output("inv", DType::Float32, sp.stats);
    binds.push_back(ctx.out(2));
    r.stats += "  if (lid == 0u) { inv_store(row, inv); }\n";
  }
  if (want_sum) {
    p.output("sum", t, xs);
    binds.push_back(ctx.out(3));
    r.sum = "sum_store(i, v);";
  }
  p.uniform("rows", rows);
  p.uniform("len", len);
  p.uniform("skip_n", u32_size(ctx, sp.skip_numel));
  p.uniform_f32("eps", sp.epsilon);
  p.declare(row_norm::sum_decl(wgs));
  p.declare(value + "; }\n");
  p.body(row_norm::body(r));
  row_norm::dispatch(ctx, p, std::move(binds), rows);
}

// SimplifiedLayerNormalization (ONNX Runtime's, ai.onnx domain) and RMSNormalization (opset 23): the
// row kernel without centering. See ops::rms_norm_params. The fused RMS norm (runtime/fusion.h: a chain
// of plain ops, x / sqrt(mean(x^2) + eps) [* w]) is SimplifiedLayerNormalization in the fused domain,
// whose scale may be absent (1).
void rms_norm(GpuKernelContext& ctx) {
  const bool fused = ctx.node.domain == kFusedDomain;
  const ops::RmsNormParams rp =
      ops::rms_norm_params(ctx.node, ctx.opset, ctx.operand(0), ctx.operand(1), ctx.fail_fn(), fused);
  const bool scaled = ctx.has_input(1);
  const Shape& xs = ctx.shape(0);
  const DType t = ctx.dtype(0);
  const uint32_t rows = u32_size(ctx, shape_numel(rp.stats)), len = u32_size(ctx, shape_numel(rp.normalized));
  ctx.set_output(0, t, xs);
  const bool want_inv = ctx.output_wanted(1);
  if (want_inv) ctx.set_output(1, rp.stash, rp.stats);

  const uint32_t wgs = row_norm::workgroup(ctx.limits, len);
  auto p = ctx.program("rms", wgs);
  p.input("x", t, xs);
  std::vector<ValueRef> binds{ctx.in(0)};
  row_norm::RowSpec r;
  r.centered = false;
  if (scaled) {
    p.input("s", t, ctx.shape(1));
    binds.push_back(ctx.in(1));
    if (rp.flat_scale) {
      p.uniform("s_n", u32_size(ctx, std::max<int64_t>(shape_numel(ctx.shape(1)), 1)));
      r.scale = "s_load(j % s_n())";
    } else {
      p.broadcast_index("s_at", ctx.shape(1), rp.normalized);
      r.scale = "s_load(s_at(j))";
    }
  }
  p.output("y", t, xs);
  binds.push_back(ctx.out(0));
  if (want_inv) {
    p.output("inv", rp.stash, rp.stats);
    binds.push_back(ctx.out(1));
    r.stats = "  if (lid == 0u) { inv_store(row, inv); }\n";
  }
  p.uniform("rows", rows);
  p.uniform("len", len);
  p.uniform_f32("eps", rp.epsilon);
  p.declare(row_norm::sum_decl(wgs));
  p.declare(kPlainValue);
  p.body(row_norm::body(r));
  row_norm::dispatch(ctx, p, std::move(binds), rows);
}

// ------------------------------------------------------------------------------- InstanceNormalization

void instance_norm(GpuKernelContext& ctx) {
  check_float(ctx, 0, "input", DTypeSet{DType::Float16, DType::Float32, DType::Float64});
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  ops::check_instance_norm(t, xs, ctx.dtype(1), ctx.shape(1), ctx.dtype(2), ctx.shape(2), ctx.fail_fn());
  float eps = ctx.node.attr_float("epsilon", 1e-5f);
  int64_t C = xs[1];
  uint32_t rows = u32_size(ctx, xs[0] * C);
  uint32_t len = u32_size(ctx, shape_numel(Shape(xs.begin() + 2, xs.end())));
  ctx.set_output(0, t, xs);
  uint32_t wgs = row_norm::workgroup(ctx.limits, len);
  auto p = ctx.program("rows", wgs);
  p.input("x", t, xs);
  p.input("s", t, ctx.shape(1));
  p.input("b", t, ctx.shape(2));
  p.output("y", t, xs);
  p.uniform("rows", rows);
  p.uniform("len", len);
  p.uniform("channels", uint32_t(C));
  p.uniform_f32("eps", eps);
  p.declare(row_norm::sum_decl(wgs));
  p.declare(kPlainValue);
  row_norm::RowSpec r;
  r.scale = "s_load(row % channels())";
  r.shift = "b_load(row % channels())";
  p.body(row_norm::body(r));
  row_norm::dispatch(ctx, p, {ctx.in(0), ctx.in(1), ctx.in(2), ctx.out(0)}, rows);
}

// -------------------------------------------------------------------------- MeanVarianceNormalization

// Rows over X's `reduced` axes, whichever they are (MeanVarianceNormalization's, BatchNormalization's in
// training mode): row r numbers the kept axes' indices and element j the reduced axes' (each in X's order),
// and `at` maps the pair to X's element through X's strides, for xv and for the stores into output `out`,
// so the rows need not be contiguous. The program has declared input x and output out; this declares the
// uniforms rows() and len(), the map, xv and y_store, and returns the number of rows.
uint32_t reduced_rows(GpuKernelContext& ctx, shader::Program& p, const Shape& xs, const std::vector<bool>& reduced) {
  const auto strides = shape_strides(xs);
  std::vector<uint32_t> kept_dims, kept_strides, red_dims, red_strides;
  int64_t rows = 1, len = 1;
  for (size_t d = 0; d < xs.size(); ++d) {
    (reduced[d] ? red_dims : kept_dims).push_back(u32_size(ctx, xs[d]));
    (reduced[d] ? red_strides : kept_strides).push_back(uint32_t(strides[d]));
    (reduced[d] ? len : rows) *= xs[d];
  }
  for (auto* v : {&kept_dims, &red_dims})
    if (v->empty()) v->push_back(1);  // no axis of that kind: one index, 0
  kept_strides.resize(kept_dims.size(), 0);
  red_strides.resize(red_dims.size(), 0);
  p.uniform("rows", u32_size(ctx, rows));
  p.uniform("len", u32_size(ctx, len));
  p.uniform_array("kept_dim", kept_dims);
  p.uniform_array("kept_stride", kept_strides);
  p.uniform_array("red_dim", red_dims);
  p.uniform_array("red_stride", red_strides);
  const std::string nk = std::to_string(kept_dims.size()) + "u", nr = std::to_string(red_dims.size()) + "u";
  p.declare("fn at(i: u32) -> u32 {\n"
            "  var r = i / len();\n"
            "  var j = i % len();\n"
            "  var a = 0u;\n"
            "  for (var d = " + nk + "; d > 0u; d = d - 1u) { a = a + (r % kept_dim(d - 1u)) * kept_stride(d - 1u); r = r / kept_dim(d - 1u); }\n"
            "  for (var d = " + nr + "; d > 0u; d = d - 1u) { a = a + (j % red_dim(d - 1u)) * red_stride(d - 1u); j = j / red_dim(d - 1u); }\n"
            "  return a;\n"
            "}\n"
            "fn xv(i: u32) -> f32 { return x_load(at(i)); }\n"
            "fn y_store(i: u32, v: f32) { out_store(at(i), v); }\n");
  return uint32_t(rows);
}

// (x - mean) / (sqrt(variance) + 1e-9) over the reduced axes, as the CPU reference and ONNX's function
// body; MVN-1 without normalize_variance runs on the CPU.
void mvn(GpuKernelContext& ctx) {
  check_float(ctx, 0, "X");
  const Shape& xs = ctx.shape(0);
  const DType t = ctx.dtype(0);
  const ops::MvnParams mp = ops::mvn_params(ctx.node, ctx.opset, int64_t(xs.size()), ctx.fail_fn());
  if (!mp.normalize_variance) ctx.unsupported("MeanVarianceNormalization-1 with normalize_variance 0");
  ctx.set_output(0, t, xs);
  const uint32_t wgs = row_norm::workgroup(ctx.limits);
  auto p = ctx.program("mvn_rows", wgs);
  p.input("x", t, xs);
  p.output("out", t, xs);
  const uint32_t rows = reduced_rows(ctx, p, xs, mp.reduced);
  p.uniform_f32("eps", 1e-9f);
  p.declare(row_norm::sum_decl(wgs));
  row_norm::RowSpec r;
  r.eps_on_std = true;
  p.body(row_norm::body(r));
  row_norm::dispatch(ctx, p, {ctx.in(0), ctx.out(0)}, rows);
}

// --------------------------------------------------------------------------------- GroupNormalization

// Rows of (batch, group): C / num_groups channels' spatial elements, contiguous; scale and bias per
// channel (opset 21: channel (row % G) * C/G + j / spatial) or per group (opset 18).
void group_norm(GpuKernelContext& ctx) {
  check_float(ctx, 0, "input 'X'");
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  const ops::GroupNormParams gp = ops::group_norm_params(ctx.node, ctx.opset, ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.fail_fn());
  const int64_t C = xs[1];
  uint32_t rows = u32_size(ctx, xs[0] * gp.groups);
  uint32_t spatial = u32_size(ctx, shape_numel(Shape(xs.begin() + 2, xs.end())));
  uint32_t len = u32_size(ctx, (C / gp.groups) * int64_t(spatial));
  ctx.set_output(0, t, xs);
  if (shape_numel(xs) == 0) return;
  uint32_t wgs = row_norm::workgroup(ctx.limits, len);
  auto p = ctx.program(gp.per_channel ? "rows_per_channel" : "rows_per_group", wgs);
  p.input("x", t, xs);
  p.input("s", t, ctx.shape(1));
  p.input("b", t, ctx.shape(2));
  p.output("y", t, xs);
  p.uniform("rows", rows);
  p.uniform("len", len);
  p.uniform("groups", uint32_t(gp.groups));
  p.uniform("cpg", uint32_t(C / gp.groups));
  p.uniform("spatial", std::max(spatial, 1u));
  p.uniform_f32("eps", float(gp.epsilon));
  p.declare(row_norm::sum_decl(wgs));
  p.declare(kPlainValue);
  std::string k = gp.per_channel ? "((row % groups()) * cpg() + j / spatial())" : "(row % groups())";
  row_norm::RowSpec r;
  r.scale = "s_load(" + k + ")";
  r.shift = "b_load(" + k + ")";
  p.body(row_norm::body(r));
  row_norm::dispatch(ctx, p, {ctx.in(0), ctx.in(1), ctx.in(2), ctx.out(0)}, rows);
}

// ------------------------------------------------------------------------------------ LpNormalization

// One invocation per line along the axis: its norm, then the line divided by it.
void lp_norm(GpuKernelContext& ctx) {
  check_float(ctx, 0, "input");
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  const ops::LpNormParams lp = ops::lp_norm_params(ctx.node, xs, ctx.fail_fn());
  ctx.set_output(0, t, xs);
  const int64_t n = xs[size_t(lp.axis)];
  if (shape_numel(xs) == 0) return;
  const uint32_t inner = u32_size(ctx, shape_numel(Shape(xs.begin() + lp.axis + 1, xs.end())));
  auto p = ctx.program(lp.p == 1 ? "l1" : "l2");
  p.input("x", t, xs);
  p.output("y", t, xs);
  p.uniform("n", u32_size(ctx, n));
  p.uniform("inner", inner);
  p.set_threads(uint64_t(shape_numel(xs) / n));
  p.body("  let base = (gi / inner()) * n() * inner() + gi % inner();\n"
         "  var norm = 0.0;\n"
         "  for (var k = 0u; k < n(); k = k + 1u) {\n"
         "    let v = x_load(base + k * inner());\n" +
         std::string(lp.p == 1 ? "    norm = norm + abs(v);\n" : "    norm = norm + v * v;\n") +
         "  }\n" +
         std::string(lp.p == 1 ? "" : "  norm = sqrt_f32(norm);\n") +
         "  norm = select(norm, 1.0, norm == 0.0);\n" +  // a line of zeros stays zeros
         "  for (var k = 0u; k < n(); k = k + 1u) { let i = base + k * inner(); y_store(i, x_load(i) / norm); }");
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

// ---------------------------------------------------------------------------------- BatchNormalization

// Training mode: the batch's statistics per parameter (a channel; opset < 9 without `spatial`, an element of
// a sample) over the `reduced` axes (ops::batch_norm_mode), rows of reduced_rows. Y normalized with them, and the running averages
// input_mean * momentum + mean * (1 - momentum) (and the variance's likewise, the population variance) as
// outputs 1 and 2; before opset 14 also the batch's mean and variance as outputs 3 and 4. In f32, as the
// normalizations are (the CPU reference sums in double).
void batch_norm_training(GpuKernelContext& ctx, const std::vector<bool>& reduced, float eps) {
  const Shape& xs = ctx.shape(0);
  const DType t = ctx.dtype(0), pt = ctx.dtype(3);
  const Shape& ps = ctx.shape(3);
  ctx.set_output(0, t, xs);
  std::vector<size_t> wanted;  // the statistics outputs the node asks for
  for (size_t i = 1; i < ctx.num_outputs() && i <= (ctx.opset < 14 ? 4u : 2u); ++i)
    if (ctx.output_wanted(i)) {
      ctx.set_output(i, pt, ps);
      wanted.push_back(i);
    }
  // Five inputs, Y and the status buffer take 7 storage bindings; the statistics outputs share what the
  // device allows beyond them (opset < 14's four need two dispatches under WebGPU's default 10, the second
  // writing Y again, the same values).
  const uint32_t most = ctx.limits.max_storage_buffers_per_shader_stage ? ctx.limits.max_storage_buffers_per_shader_stage : 8;
  const size_t per = most > 8 ? most - 7 : 1;
  const char* stat_names[] = {"rm", "rv", "sm", "sv"};
  const char* value[] = {"m_load(row) * momentum() + mean * (1.0 - momentum())",
                         "v_load(row) * momentum() + batch_var * (1.0 - momentum())", "mean", "batch_var"};
  const uint32_t wgs = row_norm::workgroup(ctx.limits);
  for (size_t first = 0; first < std::max<size_t>(wanted.size(), 1); first += per) {
    const std::vector<size_t> outs(wanted.begin() + std::min(first, wanted.size()),
                                   wanted.begin() + std::min(first + per, wanted.size()));
    auto p = ctx.program("batch_norm_training", wgs);
    p.input("x", t, xs);
    p.input("s", ctx.dtype(1), ctx.shape(1));
    p.input("b", ctx.dtype(2), ctx.shape(2));
    p.input("m", pt, ps);
    p.input("v", ctx.dtype(4), ctx.shape(4));
    p.output("out", t, xs);
    std::vector<ValueRef> binds{ctx.in(0), ctx.in(1), ctx.in(2), ctx.in(3), ctx.in(4), ctx.out(0)};
    for (size_t i : outs) {
      p.output(stat_names[i - 1], pt, ps);
      binds.push_back(ctx.out(i));
    }
    const uint32_t rows = reduced_rows(ctx, p, xs, reduced);
    p.uniform_f32("eps", eps);
    p.uniform_f32("momentum", ctx.node.attr_float("momentum", 0.9f));
    p.declare(row_norm::sum_decl(wgs));
    row_norm::RowSpec r;
    r.scale = "s_load(row)";
    r.shift = "b_load(row)";
    std::string stats = "  if (lid == 0u) {\n    let batch_var = max_f32(t.y - t.x * t.x, 0.0);\n";
    for (size_t i : outs) stats += "    " + std::string(stat_names[i - 1]) + "_store(row, " + value[i - 1] + ");\n";
    r.stats = stats + "  }\n";
    p.body(row_norm::body(r));
    row_norm::dispatch(ctx, p, binds, rows);
  }
}

void batch_norm(GpuKernelContext& ctx) {
  check_float(ctx, 0, "X");
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  if (xs.size() < 2) ctx.fail("X must be [N, C, ...] (rank >= 2), got " + shape_str(xs));
  const ir::Node& node = ctx.node;
  float eps = node.attr_float("epsilon", 1e-5f);
  const ops::BatchNormMode mode = ops::batch_norm_mode(node, ctx.opset, ctx.num_outputs(), int64_t(xs.size()));
  const bool spatial = mode.spatial, training = mode.training;
  if (!training)
    for (size_t i = 1; i < ctx.num_outputs(); ++i)
      if (ctx.output_wanted(i)) ctx.unsupported("outputs other than Y in inference mode");
  Shape pshape = spatial ? Shape{xs[1]} : Shape(xs.begin() + 1, xs.end());
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i <= 4; ++i) {
    check_float(ctx, i, names[i - 1]);
    if (shape_numel(ctx.shape(i)) != shape_numel(pshape))
      ctx.fail(std::string(names[i - 1]) + " " + shape_str(ctx.shape(i)) + " does not match X " + shape_str(xs) +
               ": expected " + shape_str(pshape));
  }
  if (training) {
    batch_norm_training(ctx, mode.reduced, eps);
    return;
  }
  int64_t per_sample = xs[0] == 0 ? 0 : shape_numel(xs) / xs[0];
  int64_t inner = spatial ? (xs[1] == 0 ? 0 : per_sample / xs[1]) : 1;
  ctx.set_output(0, t, xs);
  auto p = ctx.program("inference");
  p.input("x", t, xs);
  p.input("s", ctx.dtype(1), ctx.shape(1));
  p.input("b", ctx.dtype(2), ctx.shape(2));
  p.input("m", ctx.dtype(3), ctx.shape(3));
  p.input("v", ctx.dtype(4), ctx.shape(4));
  p.output("y", t, xs);
  p.uniform("inner", u32_size(ctx, std::max<int64_t>(inner, 1)));
  p.uniform("np", u32_size(ctx, std::max<int64_t>(shape_numel(pshape), 1)));
  p.uniform_f32("eps", eps);
  p.set_threads(uint64_t(shape_numel(xs)));
  p.body(
      "  let c = (gi / inner()) % np();\n"
      "  let inv = 1.0 / sqrt_f32(v_load(c) + eps());\n"
      "  y_store(gi, s_load(c) * (x_load(gi) - m_load(c)) * inv + b_load(c));\n");
  ctx.dispatch(p, {ctx.in(0), ctx.in(1), ctx.in(2), ctx.in(3), ctx.in(4), ctx.out(0)});
}

}  // namespace

void register_normalization(GpuKernelRegistry& r) {
  r.add("GroupNormalization", group_norm);
  r.add("LpNormalization", lp_norm);
  r.add("LayerNormalization", layer_norm);
  r.add("InstanceNormalization", instance_norm);
  r.add("MeanVarianceNormalization", mvn);
  r.add("BatchNormalization", batch_norm);
  r.add("SimplifiedLayerNormalization", rms_norm);
  r.add("RMSNormalization", rms_norm);
  r.add_fused("SimplifiedLayerNormalization", rms_norm);  // the RMS norm group (runtime/fusion.h)
  r.add("SkipLayerNormalization", skip_norm, ir::kMsDomain);
  r.add("SkipSimplifiedLayerNormalization", skip_norm, ir::kMsDomain);
}

}  // namespace onnxgpu::webgpu
