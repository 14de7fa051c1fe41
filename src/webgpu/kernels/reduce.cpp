// Reductions on the GPU: Reduce* (Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare),
// ArgMax, ArgMin, CumSum and CumProd.
//
// Every kernel here folds rows (the elements behind one result) with a segment of a workgroup: a
// power-of-two number of invocations up to the workgroup size, about half the row length, so a long row
// gets a whole workgroup and short rows share one (reduce_util.h). The segment size is a uniform.
//
// Reduce*: one segment per output element. Each invocation folds a strided share of the reduced
// elements, then the segment folds the partial results in shared memory (a tree). The reduced axes may
// be any set: the output element's base offset and each reduced element's offset come from index maps
// over the kept and the reduced dimensions (sizes and strides in uniforms). Sums, products, max and min
// use the input family's helpers (add_$x, mul_$x, max_$x ...), so INT64 is exact (two 32-bit words);
// integer Mean sums in 64 bits before dividing. Float reductions accumulate in f32.
//
// ArgMax/ArgMin: one segment per output element, folding (value, index) pairs with a total order
// (NaN is the extreme; ties go to the lower index, or the higher with select_last_index).
//
// CumSum and CumProd: one segment per line along the axis; each invocation scans a contiguous chunk, the chunk
// totals are scanned in shared memory, then each chunk is rescanned from its offset. The axis may be
// known only at run time: it is then read from its buffer by the shader (with whole-workgroup segments
// and as many segments as the axis with the most lines needs; the others idle).
#include <string>
#include <vector>

#include "ops/reduce.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/reduce_util.h"

namespace onnxgpu::webgpu {

namespace {

namespace ru = reduce_util;

enum class ReduceKind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

std::string u32s(uint64_t v) { return std::to_string(v) + "u"; }

// The reduced dimensions of a Reduce* node (src/ops/reduce).
std::vector<bool> reduced_dims(GpuKernelContext& ctx, int64_t rank, int64_t input_since) {
  return ops::reduced_dims(
      ctx.node, ctx.opset, rank, input_since,
      [&]() -> const Tensor* { return ctx.has_input(1) ? &ctx.constant(1, "axes") : nullptr; },
      [&](const std::string& m) { ctx.fail(m); });
}

// The WGSL of one reduction kind, over the input's family `$x`:
//   acc: the accumulator type; ident: its identity; pre(v): an element as an accumulator;
//   combine(a, b): folds two accumulators; fin(a): the result (y_t) from the total over m elements.
struct ReduceWgsl {
  std::string acc, ident, pre, combine, fin;
  uint32_t acc_bytes = 4;
};

ReduceWgsl reduce_wgsl(ReduceKind kind, const shader::TypeInfo& type, bool is_signed) {
  bool is_float = dtype_is_float(type.dtype);
  uint32_t xb = type.value_bytes;
  switch (kind) {
    case ReduceKind::Sum: return {"x_t", "zero_$x()", "v", "add_$x(a, b)", "a", xb};
    case ReduceKind::Max: return {"x_t", "lowest_$x()", "v", "max_$x(a, b)", "a", xb};
    case ReduceKind::Min: return {"x_t", "highest_$x()", "v", "min_$x(a, b)", "a", xb};
    case ReduceKind::Prod: return {"x_t", "one_$x()", "v", "mul_$x(a, b)", "a", xb};
    case ReduceKind::L1: return {"x_t", "zero_$x()", "abs_$x(v)", "add_$x(a, b)", "a", xb};
    case ReduceKind::SumSquare: return {"x_t", "zero_$x()", "mul_$x(v, v)", "add_$x(a, b)", "a", xb};
    case ReduceKind::Mean:
      if (is_float) return {"f32", "0.0", "v", "a + b", "a / f32(m)", 4};
      // Integers: an exact 64-bit sum, then a truncating division (0 for an empty group, as the CPU).
      return {"w64", "w64_from_u32(0u)", "to_i64_$x(v)", "w64_add(a, b)",
              std::string("select(from_i64_$x(") + (is_signed ? "mean_div_signed" : "mean_div_unsigned") +
                  "(a, m)), zero_$x(), m == 0u)",
              shader::kW64ValueBytes};
    case ReduceKind::L2: return {"f32", "0.0", "to_f32_$x(v) * to_f32_$x(v)", "a + b", "from_f32_$x(sqrt_f32(a))", 4};
    case ReduceKind::LogSum: return {"f32", "0.0", "to_f32_$x(v)", "a + b", "from_f32_$x(log_f32(a))", 4};
    case ReduceKind::LogSumExp:  // the second pass (sum of exp(v - mx)); the first finds mx
      return {"f32", "0.0", "exp_shifted(to_f32_$x(v), mx)", "a + b", "from_f32_$x(select(mx + log_f32(a), mx, abs(mx) == f32_inf()))", 4};
  }
  return {};
}

const char* kMeanDiv = R"(
fn mean_div_unsigned(s: w64, m: u32) -> w64 {
  if (m == 0u) { return w64_from_u32(0u); }
  return w64_udivmod(s, w64_from_u32(m)).q;
}
fn mean_div_signed(s: w64, m: u32) -> w64 {
  if (m == 0u) { return w64_from_u32(0u); }
  let neg = w64_is_neg(s);
  let q = w64_udivmod(select(s, w64_neg(s), neg), w64_from_u32(m)).q;
  return select(q, w64_neg(q), neg);
}
// max that ignores NaN (C fmax), for the shift of LogSumExp.
fn fmax_nan(a: f32, b: f32) -> f32 {
  if (isnan_f32(a)) { return b; }
  if (isnan_f32(b)) { return a; }
  return max(a, b);
}
)";

DTypeSet reduce_types(ReduceKind kind, int64_t opset) {
  if (kind == ReduceKind::Max || kind == ReduceKind::Min) {
    DTypeSet t = kFloatTypes | DTypeSet{DType::Int8, DType::UInt8, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64};
    if (opset >= 20) t = t | DTypeSet{DType::Bool};
    return t;
  }
  return kFloatTypes | DTypeSet{DType::Int32, DType::UInt32, DType::Int64, DType::UInt64};
}

void reduce(GpuKernelContext& ctx, const std::string& op, ReduceKind kind, int64_t input_since) {
  DType t = ctx.dtype(0);
  if (!reduce_types(kind, ctx.opset).has(t))
    ctx.fail("input 0 has unsupported element type " + std::string(dtype_name(t)));
  const Shape& in = ctx.shape(0);
  int64_t rank = int64_t(in.size());
  std::vector<bool> reduced = reduced_dims(ctx, rank, input_since);
  bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;

  Shape out;
  std::vector<uint32_t> kd, ks, rd, rs;
  auto strides = shape_strides(in);
  uint64_t m = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      rd.push_back(uint32_t(in[d]));
      rs.push_back(uint32_t(strides[d]));
      m *= uint64_t(in[d]);
      if (keepdims) out.push_back(1);
    } else {
      kd.push_back(uint32_t(in[d]));
      ks.push_back(uint32_t(strides[d]));
      out.push_back(in[d]);
    }
  }
  ctx.set_output(0, t, out);
  uint64_t groups = uint64_t(shape_numel(out));
  if (groups == 0) return;

  // Reduced dimensions that are exactly the trailing ones: element r of group o is at o * m + r.
  bool trailing = true;
  for (size_t d = 0, seen = 0; d < in.size(); ++d) {
    if (reduced[d]) seen++;
    else if (seen) trailing = false;
  }

  ReduceWgsl w = reduce_wgsl(kind, shader::type_info(t, ctx.policy), dtype_is_signed(t));
  uint32_t wg = ru::workgroup_size(ctx.limits, w.acc_bytes);
  uint32_t seg = ru::segment_size(m, wg);
  auto p = ctx.program(op, wg);
  p.input("x", t, in);
  p.output("y", t, out);
  ru::segment_uniforms(p, groups, seg);
  p.uniform("m_count", uint32_t(m));
  std::string decl = std::string(kMeanDiv) + ru::kExpLog;
  if (trailing) {
    decl += "fn base_off(o: u32) -> u32 { return o * m_count(); }\nfn red_off(r: u32) -> u32 { return r; }\n";
  } else {
    p.uniform_array("kd", kd);
    p.uniform_array("ks", ks);
    p.uniform_array("rd", rd);
    p.uniform_array("rs", rs);
    auto index_map = [](const std::string& fn, const std::string& dims, const std::string& strides, size_t n) {
      std::string f = "fn " + fn + "(i: u32) -> u32 {\n  var rem = i;\n  var off = 0u;\n";
      if (n > 0)
        f += "  for (var j = " + std::to_string(n) + "u; j > 0u; j = j - 1u) {\n"
             "    let d = " + dims + "(j - 1u);\n"
             "    off = off + (rem % d) * " + strides + "(j - 1u);\n"
             "    rem = rem / d;\n  }\n";
      return f + "  return off;\n}\n";
    };
    decl += index_map("base_off", "kd", "ks", kd.size());
    decl += index_map("red_off", "rd", "rs", rd.size());
  }
  const std::string& acc = w.acc;
  decl += "const WG: u32 = " + u32s(wg) + ";\n";
  decl += "var<workgroup> sh: array<" + acc + ", " + std::to_string(wg) + ">;\n";
  decl += "fn combine(a: " + acc + ", b: " + acc + ") -> " + acc + " { return " + w.combine + "; }\n";
  p.declare(decl);

  std::string body = std::string(ru::kSegmentPrelude) +
      "  let m = m_count();\n"
      "  let base = base_off(row);\n";
  if (kind == ReduceKind::LogSumExp) {
    // First pass: the largest value, NaN ignored (as C fmax).
    body +=
        "  var mpart = -f32_inf();\n"
        "  if (live) {\n"
        "    for (var r = lane; r < m; r = r + S) { mpart = fmax_nan(mpart, to_f32_$x(x_load(base + red_off(r)))); }\n"
        "  }\n"
        "  sh[lid] = mpart;\n" +
        ru::segment_tree("      sh[lid] = fmax_nan(sh[lid], sh[lid + s]);\n") +
        "  let mx = sh[head];\n"
        "  workgroupBarrier();\n";
  }
  body +=
      "  var part: " + acc + " = " + w.ident + ";\n"
      "  if (live) {\n"
      "    for (var r = lane; r < m; r = r + S) {\n"
      "      let v = x_load(base + red_off(r));\n"
      "      part = combine(part, " + w.pre + ");\n"
      "    }\n"
      "  }\n"
      "  sh[lid] = part;\n" +
      ru::segment_tree("      sh[lid] = combine(sh[lid], sh[lid + s]);\n") +
      "  if (live && lane == 0u) {\n"
      "    let a = sh[lid];\n"
      "    y_store(row, " + w.fin + ");\n"
      "  }\n";
  p.body(body);
  ru::dispatch_rows(ctx, p, {ctx.in(0), ctx.out(0)}, groups, seg);
}

GpuKernel reduce_kernel(const std::string& op, ReduceKind kind, int64_t input_since) {
  return [op, kind, input_since](GpuKernelContext& ctx) { reduce(ctx, op, kind, input_since); };
}

// ArgMax / ArgMin along one axis.
void arg_kernel(GpuKernelContext& ctx, bool is_max) {
  DType t = ctx.dtype(0);
  if (!kNumericTypes.has(t)) ctx.fail("input 0 has unsupported element type " + std::string(dtype_name(t)));
  const Shape& in = ctx.shape(0);
  int64_t rank = int64_t(in.size());
  if (rank == 0) ctx.fail("input 0 must have rank >= 1, got a scalar");
  int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", 0), rank);
  bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  bool last = ctx.node.attr_int("select_last_index", 0) != 0;
  ru::AxisSplit s = ru::split_at_axis(in, axis);
  if (s.n == 0 && s.outer * s.inner != 0)
    ctx.fail("input 0 has a zero-size dimension at axis " + std::to_string(axis) + ": nothing to select");
  Shape out = in;
  if (keepdims) out[size_t(axis)] = 1;
  else out.erase(out.begin() + axis);
  ctx.set_output(0, DType::Int64, out);
  uint64_t groups = s.outer * s.inner;
  if (groups == 0) return;

  uint32_t wg = ru::workgroup_size(ctx.limits, shader::type_info(t, ctx.policy).value_bytes + 4);
  uint32_t seg = ru::segment_size(s.n, wg);
  auto p = ctx.program(is_max ? "argmax" : "argmin", wg);
  p.input("x", t, in);
  p.output("y", DType::Int64, out);
  ru::segment_uniforms(p, groups, seg);
  p.uniform("n", uint32_t(s.n));
  p.uniform("inner", uint32_t(s.inner));
  std::string tie = last ? "ia > ib" : "ia < ib";
  std::string cmp = is_max ? "gt_$x" : "lt_$x";
  std::string decl = "const WG: u32 = " + u32s(wg) + ";\n"
          "const NONE: u32 = 0xffffffffu;\n"
          "var<workgroup> sv: array<x_t, " + std::to_string(wg) + ">;\n"
          "var<workgroup> si: array<u32, " + std::to_string(wg) + ">;\n"
          "// Whether (a, ia) wins over (b, ib): NaN is the extreme, then the larger (smaller), then the index rule.\n"
          "fn wins(a: x_t, ia: u32, b: x_t, ib: u32) -> bool {\n"
          "  if (ib == NONE) { return true; }\n"
          "  if (ia == NONE) { return false; }\n"
          "  let na = isnan_$x(a);\n"
          "  let nb = isnan_$x(b);\n"
          "  if (na || nb) {\n"
          "    if (na && nb) { return " + tie + "; }\n"
          "    return na;\n"
          "  }\n"
          "  if (" + cmp + "(a, b)) { return true; }\n"
          "  if (" + cmp + "(b, a)) { return false; }\n"
          "  return " + tie + ";\n"
          "}\n";
  p.declare(decl);
  p.body(std::string(ru::kSegmentPrelude) +
         "  let base = (row / inner()) * n() * inner() + row % inner();\n"
         "  var bv = zero_$x();\n"
         "  var bi = NONE;\n"
         "  if (live) {\n"
         "    for (var i = lane; i < n(); i = i + S) {\n"
         "      let v = x_load(base + i * inner());\n"
         "      if (wins(v, i, bv, bi)) { bv = v; bi = i; }\n"
         "    }\n"
         "  }\n"
         "  sv[lid] = bv;\n"
         "  si[lid] = bi;\n" +
         ru::segment_tree("      if (wins(sv[lid + s], si[lid + s], sv[lid], si[lid])) {\n"
                          "        sv[lid] = sv[lid + s];\n"
                          "        si[lid] = si[lid + s];\n"
                          "      }\n") +
         "  if (live && lane == 0u) { y_store(row, from_i64_$y(w64_from_u32(si[lid]))); }\n");
  ru::dispatch_rows(ctx, p, {ctx.in(0), ctx.out(0)}, groups, seg);
}

const DTypeSet kCumSumTypes = kFloatTypes | DTypeSet{DType::Int32, DType::UInt32, DType::Int64, DType::UInt64};

void cumulate_kernel(GpuKernelContext& ctx, bool product) {
  DType t = ctx.dtype(0);
  if (!kCumSumTypes.has(t)) ctx.fail("input 0 has unsupported element type " + std::string(dtype_name(t)));
  const Shape& in = ctx.shape(0);
  int64_t rank = int64_t(in.size());
  if (rank == 0) ctx.fail("input 0 must have rank >= 1, got a scalar");
  DType at = ctx.dtype(1);
  if (at != DType::Int64 && at != DType::Int32)
    ctx.fail("input 1 ('axis') must be int32 or int64, got " + std::string(dtype_name(at)));
  const Shape& as = ctx.shape(1);
  if (shape_numel(as) != 1 || as.size() > 1)
    ctx.fail("input 1 ('axis') must be a scalar or a 1-element 1-D tensor, got shape " + shape_str(as));
  bool exclusive = ctx.node.attr_int("exclusive", 0) != 0;
  bool reverse = ctx.node.attr_int("reverse", 0) != 0;
  ctx.set_output(0, t, in);
  // The axis: a plan-time constant, or read by the shader from its buffer.
  const Tensor* axis_const = ctx.input(1).constant;
  uint64_t numel = uint64_t(shape_numel(in));
  uint64_t groups = 0, line = 0;  // line: the line length when the axis is known
  int64_t axis = 0;
  if (axis_const) {
    axis = ctx.normalize_axis(axis_const->int_at(0), rank);
    line = uint64_t(in[size_t(axis)]);
    if (numel) groups = numel / line;
  } else {
    for (int64_t d : in)  // as many lines as the axis with the most lines has
      if (d) groups = std::max<uint64_t>(groups, numel / uint64_t(d));
  }
  if (numel == 0) return;

  uint32_t wg = ru::workgroup_size(ctx.limits, shader::type_info(t, ctx.policy).value_bytes);
  uint32_t seg = axis_const ? ru::segment_size(line, wg) : wg;
  auto p = ctx.program(std::string(product ? "cumprod" : "cumsum") + (exclusive ? "_excl" : "") + (reverse ? "_rev" : "") +
                           (axis_const ? "" : "_rtaxis"),
                       wg);
  p.input("x", t, in);
  std::vector<ValueRef> binds{ctx.in(0)};
  if (!axis_const) {
    p.input("ax", at, as);
    binds.push_back(ctx.in(1));
  }
  p.output("y", t, in);
  binds.push_back(ctx.out(0));
  ru::segment_uniforms(p, groups, seg);
  std::string decl = "const WG: u32 = " + u32s(wg) + ";\n"
                     "var<workgroup> sh: array<x_t, " + std::to_string(wg) + ">;\n";
  if (axis_const) {
    p.uniform("axis_u", uint32_t(axis));
    decl += "fn read_axis() -> u32 { return axis_u(); }\n";
  } else {
    // A bad axis is flagged (the runtime reports it) and the node writes nothing.
    decl += "fn read_axis() -> u32 { return w64_wrap_index(to_i64_$ax(ax_load(0u)), x_rank); }\n";
  }
  p.declare(decl);
  std::string pos = reverse ? "(n - 1u - q)" : "q";
  const std::string op = product ? "mul_$x" : "add_$x";       // the running operation
  const std::string ident = product ? "one_$x()" : "zero_$x()";  // and its identity
  // Each invocation scans a contiguous chunk of its segment's line; the chunk totals are scanned by the
  // segment's first invocation; then each chunk is rescanned from its offset.
  p.body(std::string(ru::kSegmentPrelude) +
      "  let axis = read_axis();\n"
      "  let ok = axis != INDEX_NONE;\n"
      "  if (!ok && wg == 0u && lid == 0u) { flag(FLAG_INDEX); }\n"
      "  var n = 0u;\n"
      "  var inner = 1u;\n"
      "  if (ok) { n = x_shape(axis); inner = x_stride(axis); }\n"
      "  let on = live && ok && n > 0u && row < x_numel() / max(n, 1u);\n"
      "  let base = (row / inner) * n * inner + row % inner;\n"
      "  let chunk = (n + S - 1u) / S;\n"
      "  let start = min(lane * chunk, n);\n"
      "  let end = min(start + chunk, n);\n"
      "  var part = " + ident + ";\n"
      "  if (on) {\n"
      "    for (var q = start; q < end; q = q + 1u) { part = " + op + "(part, x_load(base + " + pos + " * inner)); }\n"
      "  }\n"
      "  sh[lid] = part;\n"
      "  workgroupBarrier();\n"
      "  if (lane == 0u) {\n"
      "    var run = " + ident + ";\n"
      "    for (var j = head; j < head + S; j = j + 1u) { let v = sh[j]; sh[j] = run; run = " + op + "(run, v); }\n"
      "  }\n"
      "  workgroupBarrier();\n"
      "  if (on) {\n"
      "    var acc = sh[lid];\n"
      "    for (var q = start; q < end; q = q + 1u) {\n"
      "      let at = base + " + pos + " * inner;\n"
      "      let v = x_load(at);\n" +
      (exclusive ? "      y_store(at, acc);\n      acc = " + op + "(acc, v);\n"
                 : "      acc = " + op + "(acc, v);\n      y_store(at, acc);\n") +
      "    }\n"
      "  }\n");
  ru::dispatch_rows(ctx, p, binds, groups, seg);
}

}  // namespace

void register_reduce(GpuKernelRegistry& r) {
  r.add("ReduceSum", reduce_kernel("ReduceSum", ReduceKind::Sum, 13));
  r.add("ReduceMean", reduce_kernel("ReduceMean", ReduceKind::Mean, 18));
  r.add("ReduceMax", reduce_kernel("ReduceMax", ReduceKind::Max, 18));
  r.add("ReduceMin", reduce_kernel("ReduceMin", ReduceKind::Min, 18));
  r.add("ReduceProd", reduce_kernel("ReduceProd", ReduceKind::Prod, 18));
  r.add("ReduceL1", reduce_kernel("ReduceL1", ReduceKind::L1, 18));
  r.add("ReduceL2", reduce_kernel("ReduceL2", ReduceKind::L2, 18));
  r.add("ReduceLogSum", reduce_kernel("ReduceLogSum", ReduceKind::LogSum, 18));
  r.add("ReduceLogSumExp", reduce_kernel("ReduceLogSumExp", ReduceKind::LogSumExp, 18));
  r.add("ReduceSumSquare", reduce_kernel("ReduceSumSquare", ReduceKind::SumSquare, 18));
  r.add("ArgMax", [](GpuKernelContext& ctx) { arg_kernel(ctx, true); });
  r.add("ArgMin", [](GpuKernelContext& ctx) { arg_kernel(ctx, false); });
  r.add("CumSum", [](GpuKernelContext& ctx) { cumulate_kernel(ctx, false); });
  r.add("CumProd", [](GpuKernelContext& ctx) { cumulate_kernel(ctx, true); });
}

}  // namespace onnxgpu::webgpu
