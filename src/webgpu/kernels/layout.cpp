// Data movement on the GPU: Transpose, Concat, Split, Slice, Expand, Tile, Pad, DepthToSpace,
// SpaceToDepth. Every op is a gather by index map, built from two programs:
//   - a strided copy: for each coordinate c of an iteration space,
//       y[dst_base + sum(c[d] * dst_stride[d])] = x[src_base + sum(c[d] * src_stride[d])]
//     (Transpose, Slice, Expand, DepthToSpace and SpaceToDepth with a contiguous destination; Concat
//     and Split as one [outer, row] copy per input / output);
//   - a padded copy: each output coordinate minus the leading pad, mapped back into the input by the
//     pad mode (Pad, and Tile, which is Pad in wrap mode).
// Sizes, strides, starts and pads are uniforms; the WGSL depends only on dtypes, ranks and the pad
// mode. Elements are copied bit for bit whatever their dtype (see copy_fn), INT64 and float64 included.
#include <numeric>
#include <optional>

#include "cpu/broadcast.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/layout_util.h"

namespace onnxgpu::webgpu {

namespace {

std::string u(uint64_t v) { return std::to_string(v) + "u"; }

std::string ints_str(const std::vector<int64_t>& v) { return shape_str(v); }

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// The dtype of data input i; strings have no GPU representation.
DType data_dtype(GpuKernelContext& ctx, size_t i) {
  DType t = ctx.dtype(i);
  if (t == DType::String) ctx.unsupported("string tensors");
  return t;
}

// A shape-like input (scalar or 1-D integer tensor) that must be known at plan time.
std::vector<int64_t> int_list(GpuKernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.constant(i, what);
  if (!dtype_is_integer(t.dtype()))
    ctx.fail("input " + std::to_string(i) + " ('" + what + "') must be an integer tensor, got " + t.describe());
  if (t.rank() > 1)
    ctx.fail("input " + std::to_string(i) + " ('" + what + "') must be a scalar or 1-D, got " + t.describe());
  return t.to_int64_vector();
}

int64_t int_scalar(GpuKernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.constant(i, what);
  if (t.numel() != 1)
    ctx.fail("input " + std::to_string(i) + " ('" + what + "') must hold exactly one value, got " + t.describe());
  if (!dtype_is_integer(t.dtype()))
    ctx.fail("input " + std::to_string(i) + " ('" + what + "') must be an integer tensor, got " + t.describe());
  return t.int_at(0);
}

std::vector<int64_t> normalize_axes(GpuKernelContext& ctx, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> r;
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t a : axes) {
    if (rank == 0) ctx.fail("axis " + std::to_string(a) + " given for a rank-0 tensor");
    int64_t n = ctx.normalize_axis(a, rank);
    if (seen[size_t(n)]) ctx.fail("axis " + std::to_string(a) + " is repeated");
    seen[size_t(n)] = true;
    r.push_back(n);
  }
  return r;
}

std::vector<uint32_t> words(const std::vector<int64_t>& v) {
  std::vector<uint32_t> r;
  for (int64_t x : v) r.push_back(uint32_t(x));  // modulo 2^32: negative strides wrap, and so do the sums
  return r;
}

// WGSL `fn copy_<src>(d: u32, s: u32)`: element d of `dst` = element s of `src` (same dtype), bit for
// bit. 32- and 64-bit elements are copied as whole words (float64, int64, NaN payloads exact); 8- and
// 16-bit elements are spliced into their output word atomically, as neighbours share the word.
std::string copy_fn(const std::string& src, const std::string& dst, DType dtype, const Int64Policy& policy) {
  int bits = shader::type_info(dtype, policy).storage_bits;
  std::string f = "fn copy_" + src + "(d: u32, s: u32) {\n";
  if (bits >= 32) return f + "  " + dst + "_buf[d] = " + src + "_buf[s];\n}\n";
  uint32_t per = 32 / uint32_t(bits);
  std::string mask = bits == 8 ? "0xffu" : "0xffffu";
  std::string word = "&" + dst + "_buf[d / " + u(per) + "]";
  return f + "  let sh = (d % " + u(per) + ") * " + u(uint32_t(bits)) + ";\n" +  //
         "  atomicAnd(" + word + ", ~(" + mask + " << sh));\n" +                  //
         "  atomicOr(" + word + ", " + src + "_bits(s) << sh);\n}\n";
}

// ---- Strided copy ---------------------------------------------------------------------------------

struct StridedCopy {
  std::vector<int64_t> dims, src_strides, dst_strides;
  int64_t src_base = 0, dst_base = 0;
};

// The iteration space of `view` (a shape of the input's elements) transposed by `perm`, written
// contiguously.
StridedCopy transposed(const Shape& view, const std::vector<int64_t>& perm) {
  std::vector<int64_t> in_strides = shape_strides(view);
  StridedCopy c;
  for (int64_t p : perm) {
    c.dims.push_back(view[size_t(p)]);
    c.src_strides.push_back(in_strides[size_t(p)]);
  }
  c.dst_strides = shape_strides(c.dims);
  return c;
}

// Dispatches the copy of input `in` into output `out` (of `out_shape`, already set) as `c` says.
void dispatch_copy(GpuKernelContext& ctx, size_t in, size_t out, const Shape& out_shape, const StridedCopy& c) {
  int64_t n = shape_numel(c.dims);
  if (!ctx.output_wanted(out) || n == 0) return;
  DType t = ctx.dtype(in);
  size_t r = c.dims.size();
  auto p = ctx.program("copy" + std::to_string(r));
  p.input("x", t, ctx.shape(in));
  p.output("y", t, out_shape);
  p.uniform_array("it_dims", words(c.dims));
  p.uniform_array("it_src", words(c.src_strides));
  p.uniform_array("it_dst", words(c.dst_strides));
  p.uniform("src_base", uint32_t(c.src_base));
  p.uniform("dst_base", uint32_t(c.dst_base));
  p.declare(copy_fn("x", "y", t, ctx.policy));
  p.set_threads(uint64_t(n));
  p.body("  var rem = gi;\n"
         "  var s = src_base();\n"
         "  var t = dst_base();\n"
         "  for (var k = 0u; k < " + u(r) + "; k = k + 1u) {\n"
         "    let d = " + u(r) + " - 1u - k;\n"
         "    let n = it_dims(d);\n"
         "    let c = rem % n;\n"
         "    rem = rem / n;\n"
         "    s = s + c * it_src(d);\n"
         "    t = t + c * it_dst(d);\n"
         "  }\n"
         "  copy_x(t, s);");
  ctx.dispatch(p, {ctx.in(in), ctx.out(out)});
}

// Output `out` = input `in` copied as `c` says (the whole output). When the copy is the identity, the
// output is a view of the input instead (no dispatch).
void strided_copy(GpuKernelContext& ctx, size_t in, size_t out, const Shape& out_shape, const StridedCopy& c) {
  DType t = data_dtype(ctx, in);
  int64_t n = shape_numel(c.dims);
  bool identity = n == shape_numel(ctx.shape(in)) && n == shape_numel(out_shape) && c.src_base == 0 && c.dst_base == 0;
  std::vector<int64_t> contiguous = shape_strides(c.dims);
  for (size_t d = 0; identity && d < c.dims.size(); ++d)
    identity = c.dims[d] == 1 || (c.src_strides[d] == contiguous[d] && c.dst_strides[d] == contiguous[d]);
  if (identity) {
    ctx.alias_output(out, in, out_shape);
    return;
  }
  ctx.set_output(out, t, out_shape);
  dispatch_copy(ctx, in, out, out_shape, c);
}

// ---- Padded copy (Pad, Tile) ------------------------------------------------------------------------

// How the elements outside the input are filled in constant mode.
struct PadFill {
  int input = -1;                // bound input holding the value (bit-exact copy)
  std::optional<float> value;    // or a float attribute (Pad-1/2), converted to the dtype
};                               // or else zero

// y[c] = x[map(c - begin)] per axis, `map` given by `mode` (constant, edge, wrap, reflect).
void padded_copy(GpuKernelContext& ctx, const std::string& mode, const Shape& out, const std::vector<int64_t>& begin,
                 const PadFill& fill) {
  DType t = data_dtype(ctx, 0);
  const Shape& x = ctx.shape(0);
  bool identity = x == out;
  for (int64_t b : begin) identity = identity && b == 0;
  if (identity) {
    ctx.alias_output(0, 0, out);
    return;
  }
  ctx.set_output(0, t, out);
  if (shape_numel(out) == 0) return;
  // The index math is in i32.
  constexpr int64_t kMax = int64_t(1) << 30;
  for (size_t d = 0; d < out.size(); ++d)
    if (out[d] > kMax || x[d] > kMax || begin[d] > kMax || begin[d] < -kMax)
      ctx.unsupported("pads or dimensions beyond 2^30");
  size_t r = out.size();
  // An empty input (constant mode only) is not bound: the output is all fill.
  bool has_x = shape_numel(x) > 0;
  auto p = ctx.program(has_x ? mode + std::to_string(r) : "fill");
  std::vector<ValueRef> binds;
  if (has_x) {
    p.input("x", t, x);
    binds.push_back(ctx.in(0));
  }
  if (fill.input >= 0) {
    p.input("cv", t, ctx.shape(size_t(fill.input)));
    binds.push_back(ctx.in(size_t(fill.input)));
  }
  p.output("y", t, out);
  binds.push_back(ctx.out(0));
  p.uniform_array("pad_begin", words(begin));
  std::string fill_stmt;
  if (fill.input >= 0) {
    p.declare(copy_fn("cv", "y", t, ctx.policy));
    fill_stmt = "copy_cv(gi, 0u);";
  } else if (fill.value) {
    p.uniform_f32("pad_value", *fill.value);
    fill_stmt = "y_store(gi, from_f32_$y(pad_value()));";
  } else {
    fill_stmt = "y_store(gi, zero_$y());";
  }
  p.set_threads(uint64_t(shape_numel(out)));
  if (!has_x) {
    p.body("  " + fill_stmt);
    ctx.dispatch(p, binds);
    return;
  }
  p.declare(copy_fn("x", "y", t, ctx.policy));
  std::string outside;
  if (mode == "constant") outside = "inside = false;";
  else if (mode == "edge") outside = "p = select(xn - 1i, 0i, p < 0i);";
  else if (mode == "wrap") outside = "p = p % xn;\n      if (p < 0i) { p = p + xn; }";
  else  // reflect, repeating for pads larger than the axis (as numpy and the CPU reference do)
    outside = "if (xn == 1i) {\n        p = 0i;\n      } else {\n"
              "        let period = 2i * (xn - 1i);\n"
              "        p = p % period;\n"
              "        if (p < 0i) { p = p + period; }\n"
              "        if (p >= xn) { p = period - p; }\n      }";
  p.body("  var rem = gi;\n"
         "  var s = 0u;\n"
         "  var inside = true;\n"
         "  for (var k = 0u; k < " + u(r) + "; k = k + 1u) {\n"
         "    let d = " + u(r) + " - 1u - k;\n"
         "    let n = y_shape(d);\n"
         "    let c = rem % n;\n"
         "    rem = rem / n;\n"
         "    let xn = i32(x_shape(d));\n"
         "    var p = i32(c) - bitcast<i32>(pad_begin(d));\n"
         "    if (p < 0i || p >= xn) {\n      " + outside + "\n    }\n"
         "    s = s + u32(p) * x_stride(d);\n"
         "  }\n"
         "  if (inside) {\n    copy_x(gi, s);\n  } else {\n    " + fill_stmt + "\n  }");
  ctx.dispatch(p, binds);
}

// ---- The ops ----------------------------------------------------------------------------------------

void transpose(GpuKernelContext& ctx) {
  const Shape& x = ctx.shape(0);
  int64_t r = int64_t(x.size());
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) perm[size_t(i)] = r - 1 - i;
  if (ctx.node.has_attr("perm")) {
    perm = ctx.node.attr_ints("perm");
    if (int64_t(perm.size()) != r)
      ctx.fail("perm " + ints_str(perm) + " has " + std::to_string(perm.size()) + " entries but the input " +
               shape_str(x) + " has rank " + std::to_string(r));
    std::vector<bool> seen(size_t(r), false);
    for (int64_t& p : perm) {
      if (p < -r || p >= r || seen[size_t(p < 0 ? p + r : p)])
        ctx.fail("perm " + ints_str(ctx.node.attr_ints("perm")) + " is not a permutation of 0.." + std::to_string(r - 1));
      if (p < 0) p += r;
      seen[size_t(p)] = true;
    }
  }
  StridedCopy c = transposed(x, perm);
  strided_copy(ctx, 0, 0, c.dims, c);
}

void concat(GpuKernelContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  const Shape& first = ctx.shape(0);
  DType t = data_dtype(ctx, 0);
  int64_t r = int64_t(first.size());
  if (r == 0) ctx.fail("cannot concatenate scalars (input 0 is " + shape_str(first) + ")");
  if (ctx.opset >= 4 && !ctx.node.has_attr("axis")) ctx.fail("attribute 'axis' is required");
  int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", 1), r);
  Shape out = first;
  out[size_t(axis)] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Shape& s = ctx.shape(i);
    if (ctx.dtype(i) != t)
      ctx.fail("input " + std::to_string(i) + " is " + std::string(dtype_name(ctx.dtype(i))) + " but input 0 is " + std::string(dtype_name(t)));
    bool ok = int64_t(s.size()) == r;
    for (int64_t d = 0; ok && d < r; ++d) ok = d == axis || s[size_t(d)] == first[size_t(d)];
    if (!ok)
      ctx.fail("input " + std::to_string(i) + " " + shape_str(s) + " does not match input 0 " + shape_str(first) +
               " outside axis " + std::to_string(axis));
    out[size_t(axis)] += s[size_t(axis)];
  }
  if (ctx.num_inputs() == 1) {
    ctx.alias_output(0, 0, out);
    return;
  }
  ctx.set_output(0, t, out);
  // One dispatch per input (each binds one input and the output, so any number of inputs fits the
  // device's storage-buffer limit), copying its rows into the output's rows at its offset.
  int64_t outer = prod(out, 0, size_t(axis)), inner = prod(out, size_t(axis) + 1, out.size());
  int64_t out_row = out[size_t(axis)] * inner, offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    int64_t row = ctx.shape(i)[size_t(axis)] * inner;
    dispatch_copy(ctx, i, 0, out, StridedCopy{{outer, row}, {row, 1}, {out_row, 1}, 0, offset});
    offset += row;
  }
}

void split(GpuKernelContext& ctx) {
  const Shape& x = ctx.shape(0);
  DType t = data_dtype(ctx, 0);
  int64_t r = int64_t(x.size());
  if (r == 0) ctx.fail("cannot split a scalar");
  int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", 0), r);
  int64_t dim = x[size_t(axis)];
  int64_t n = int64_t(ctx.num_outputs());
  if (n == 0) ctx.fail("has no outputs");
  std::vector<int64_t> sizes;
  bool given = false;
  if (ctx.opset < 13 && ctx.node.has_attr("split")) {
    sizes = ctx.node.attr_ints("split");
    given = true;
  } else if ((ctx.opset < 2 || ctx.opset >= 13) && ctx.has_input(1)) {
    sizes = int_list(ctx, 1, "split");
    given = !sizes.empty();  // an empty 'split' input means equal parts, as when omitted
  }
  if (given) {
    if (int64_t(sizes.size()) != n)
      ctx.fail("split " + ints_str(sizes) + " has " + std::to_string(sizes.size()) + " entries for " +
               std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) ctx.fail("split " + ints_str(sizes) + " has a negative size");
      sum += s;
    }
    if (sum != dim)
      ctx.fail("split " + ints_str(sizes) + " sums to " + std::to_string(sum) + " but axis " + std::to_string(axis) +
               " of input " + shape_str(x) + " has size " + std::to_string(dim));
  } else if (ctx.opset >= 18 && ctx.node.has_attr("num_outputs")) {
    int64_t k = ctx.node.attr_int("num_outputs", n);
    if (k != n) ctx.fail("num_outputs is " + std::to_string(k) + " but the node has " + std::to_string(n) + " outputs");
    int64_t chunk = (dim + n - 1) / n;
    if (chunk * (n - 1) > dim)
      ctx.fail("cannot split size " + std::to_string(dim) + " into " + std::to_string(n) + " chunks of " +
               std::to_string(chunk));
    sizes.assign(size_t(n), chunk);
    sizes.back() = dim - chunk * (n - 1);
  } else {
    if (dim % n != 0)
      ctx.fail("axis " + std::to_string(axis) + " of input " + shape_str(x) + " (size " + std::to_string(dim) +
               ") cannot be split into " + std::to_string(n) + " equal parts");
    sizes.assign(size_t(n), dim / n);
  }
  // One dispatch per output: its rows, from the input's rows at its offset.
  int64_t outer = prod(x, 0, size_t(axis)), inner = prod(x, size_t(axis) + 1, x.size());
  int64_t offset = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Shape os = x;
    os[size_t(axis)] = sizes[k];
    int64_t row = sizes[k] * inner;
    strided_copy(ctx, 0, k, os, StridedCopy{{outer, row}, {dim * inner, 1}, {row, 1}, offset * inner, 0});
    offset += sizes[k];
  }
  (void)t;
}

void slice(GpuKernelContext& ctx) {
  const Shape& x = ctx.shape(0);
  data_dtype(ctx, 0);
  int64_t r = int64_t(x.size());
  std::vector<int64_t> starts, ends, axes, steps;
  bool have_axes = false;
  if (ctx.opset < 10) {
    if (!ctx.node.has_attr("starts") || !ctx.node.has_attr("ends"))
      ctx.fail("attributes 'starts' and 'ends' are required before opset 10");
    starts = ctx.node.attr_ints("starts");
    ends = ctx.node.attr_ints("ends");
    have_axes = ctx.node.has_attr("axes");
    axes = ctx.node.attr_ints("axes");
  } else {
    starts = int_list(ctx, 1, "starts");
    ends = int_list(ctx, 2, "ends");
    if (ctx.has_input(3)) {
      have_axes = true;
      axes = int_list(ctx, 3, "axes");
    }
    if (ctx.has_input(4)) steps = int_list(ctx, 4, "steps");
  }
  size_t n = starts.size();
  if (ends.size() != n) ctx.fail("starts " + ints_str(starts) + " and ends " + ints_str(ends) + " differ in length");
  if (!have_axes) {
    if (int64_t(n) > r) ctx.fail("starts has " + std::to_string(n) + " entries for input " + shape_str(x));
    axes.resize(n);
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (axes.size() != n) ctx.fail("axes " + ints_str(axes) + " and starts " + ints_str(starts) + " differ in length");
  if (steps.empty()) steps.assign(n, 1);
  if (steps.size() != n) ctx.fail("steps " + ints_str(steps) + " and starts " + ints_str(starts) + " differ in length");
  axes = normalize_axes(ctx, axes, r);

  std::vector<int64_t> in_strides = shape_strides(x);
  StridedCopy c{x, in_strides, {}, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    size_t a = size_t(axes[i]);
    if (steps[i] == 0) ctx.fail("steps " + ints_str(steps) + " has a 0 step");
    SliceRange s = slice_range(x[a], starts[i], ends[i], steps[i]);
    c.dims[a] = s.count;
    if (s.count > 0) {
      c.src_base += s.start * in_strides[a];
      c.src_strides[a] = in_strides[a] * (s.count > 1 ? steps[i] : 1);  // the step matters only when count > 1
    }
  }
  c.dst_strides = shape_strides(c.dims);
  strided_copy(ctx, 0, 0, c.dims, c);
}

void expand(GpuKernelContext& ctx) {
  const Shape& x = ctx.shape(0);
  data_dtype(ctx, 0);
  std::vector<int64_t> shape = int_list(ctx, 1, "shape");
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape " + ints_str(shape) + " has a negative dimension");
  Shape out;
  try {
    out = cpu::broadcast_shapes(x, shape);
  } catch (const InvalidArgument& e) {
    ctx.fail("cannot expand input " + shape_str(x) + " to shape " + ints_str(shape) + ": " + e.what());
  }
  strided_copy(ctx, 0, 0, out, StridedCopy{out, cpu::broadcast_strides(x, out), shape_strides(out), 0, 0});
}

void tile(GpuKernelContext& ctx) {
  const Shape& x = ctx.shape(0);
  data_dtype(ctx, 0);
  int64_t r = int64_t(x.size());
  std::vector<int64_t> repeats;
  if (ctx.opset < 6) {
    int64_t tiles = int_scalar(ctx, 1, "tiles");
    int64_t axis = ctx.normalize_axis(int_scalar(ctx, 2, "axis"), r);
    repeats.assign(size_t(r), 1);
    repeats[size_t(axis)] = tiles;
  } else {
    repeats = int_list(ctx, 1, "repeats");
  }
  if (int64_t(repeats.size()) != r)
    ctx.fail("repeats " + ints_str(repeats) + " must have one entry per dimension of input " + shape_str(x));
  Shape out(static_cast<size_t>(r));
  for (size_t i = 0; i < size_t(r); ++i) {
    if (repeats[i] < 0) ctx.fail("repeats " + ints_str(repeats) + " has a negative entry");
    out[i] = x[i] * repeats[i];
  }
  // Tiling is padding at the end in wrap mode.
  padded_copy(ctx, "wrap", out, std::vector<int64_t>(size_t(r), 0), {});
}

void pad(GpuKernelContext& ctx) {
  const Shape& x = ctx.shape(0);
  DType t = data_dtype(ctx, 0);
  int64_t r = int64_t(x.size());
  std::string mode = ctx.node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    ctx.fail("mode '" + mode + "' is not one of constant, reflect, edge, wrap");
  std::vector<int64_t> pads, axes;
  PadFill fill;
  bool axes_given = false;
  if (ctx.opset < 11) {
    const char* name = ctx.opset < 2 ? "paddings" : "pads";
    if (!ctx.node.has_attr(name)) ctx.fail(std::string("attribute '") + name + "' is required before opset 11");
    pads = ctx.node.attr_ints(name);
    fill.value = ctx.node.attr_float("value", 0.0f);
  } else {
    pads = int_list(ctx, 1, "pads");
    if (ctx.has_input(2) && shape_numel(ctx.shape(2)) > 0) {
      if (ctx.dtype(2) != t)
        ctx.fail(std::string("constant_value ") + std::string(dtype_name(ctx.dtype(2))) + " must have the type of input 'data' " +
                 std::string(dtype_name(t)));
      if (shape_numel(ctx.shape(2)) != 1)
        ctx.fail("constant_value must be a single value, got " + shape_str(ctx.shape(2)));
      fill.input = 2;  // bound, constant or computed on the GPU alike
    }
    if (ctx.opset >= 18 && ctx.has_input(3)) {
      axes = normalize_axes(ctx, int_list(ctx, 3, "axes"), r);
      axes_given = true;
    }
  }
  if (!axes_given) {
    axes.resize(size_t(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  size_t na = axes.size();
  if (pads.size() != 2 * na)
    ctx.fail("pads " + ints_str(pads) + " must have " + std::to_string(2 * na) + " entries for input " + shape_str(x));
  std::vector<int64_t> begin(static_cast<size_t>(r), 0), finish(static_cast<size_t>(r), 0);
  for (size_t i = 0; i < na; ++i) {
    begin[size_t(axes[i])] = pads[i];
    finish[size_t(axes[i])] = pads[na + i];
  }
  Shape out(static_cast<size_t>(r));
  for (size_t i = 0; i < size_t(r); ++i) {
    out[i] = x[i] + begin[i] + finish[i];
    if (out[i] < 0)
      ctx.fail("pads " + ints_str(pads) + " crop more than the size of axis " + std::to_string(i) + " of input " +
               shape_str(x));
    if (mode != "constant" && x[i] == 0 && out[i] > 0)
      ctx.fail("cannot pad the empty axis " + std::to_string(i) + " of input " + shape_str(x) + " in mode " + mode);
  }
  padded_copy(ctx, mode, out, begin, fill);
}

void check_rank4(GpuKernelContext& ctx) {
  if (ctx.shape(0).size() != 4) ctx.fail("input must be 4-D [N,C,H,W], got " + shape_str(ctx.shape(0)));
}

int64_t blocksize(GpuKernelContext& ctx) {
  int64_t b = ctx.node.attr_int("blocksize", 0);
  if (b <= 0) ctx.fail("attribute 'blocksize' must be positive");
  return b;
}

void depth_to_space(GpuKernelContext& ctx) {
  check_rank4(ctx);
  int64_t b = blocksize(ctx);
  std::string mode = ctx.opset >= 11 ? ctx.node.attr_string("mode", "DCR") : "DCR";
  const Shape& x = ctx.shape(0);
  int64_t n = x[0], c = x[1], h = x[2], w = x[3];
  if (c % (b * b) != 0)
    ctx.fail("channels of input " + shape_str(x) + " are not divisible by blocksize^2 = " + std::to_string(b * b));
  int64_t oc = c / (b * b);
  StridedCopy copy;
  if (mode == "DCR") copy = transposed({n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2});
  else if (mode == "CRD") copy = transposed({n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3});
  else ctx.fail("mode '" + mode + "' is not DCR or CRD");
  strided_copy(ctx, 0, 0, {n, oc, h * b, w * b}, copy);
}

void space_to_depth(GpuKernelContext& ctx) {
  check_rank4(ctx);
  int64_t b = blocksize(ctx);
  const Shape& x = ctx.shape(0);
  int64_t n = x[0], c = x[1], h = x[2], w = x[3];
  if (h % b != 0 || w % b != 0)
    ctx.fail("height and width of input " + shape_str(x) + " must be divisible by blocksize " + std::to_string(b));
  strided_copy(ctx, 0, 0, {n, c * b * b, h / b, w / b}, transposed({n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4}));
}

}  // namespace

void register_layout(GpuKernelRegistry& r) {
  r.add("Transpose", transpose);
  r.add("Concat", concat);
  r.add("Split", split);
  r.add("Slice", slice);
  r.add("Expand", expand);
  r.add("Tile", tile);
  r.add("Pad", pad);
  r.add("DepthToSpace", depth_to_space);
  r.add("SpaceToDepth", space_to_depth);
}

}  // namespace onnxgpu::webgpu
