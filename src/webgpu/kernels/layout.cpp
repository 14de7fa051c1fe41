// Data movement on the GPU: Transpose, Concat, Split, Slice, Expand, Tile, Pad, DepthToSpace,
// SpaceToDepth, CenterCropPad, ReverseSequence. Every op is a gather by index map, built from two programs:
//   - a strided copy: for each coordinate c of an iteration space,
//       y[dst_base + sum(c[d] * dst_stride[d])] = x[src_base + sum(c[d] * src_stride[d])]
//     (Transpose, Slice, Expand, DepthToSpace and SpaceToDepth with a contiguous destination; Concat
//     and Split as one [outer, row] copy per input / output);
//   - a padded copy: each output coordinate minus the leading pad, mapped back into the input by the
//     pad mode (Pad, Tile, which is Pad in wrap mode, and CenterCropPad, which is Pad in constant mode
//     with a negative pad where it crops); ReverseSequence's gather maps each step to its reversed one.
// Sizes, strides, starts and pads are uniforms; the WGSL depends only on dtypes, ranks and the pad
// mode. Elements are copied bit for bit whatever their dtype (see the gather programs), INT64 and float64 included.
#include <algorithm>
#include <numeric>

#include "ops/broadcast.h"
#include "ops/layout.h"
#include "ops/pad.h"
#include "ops/slice.h"
#include "ops/split.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

namespace {

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

// ---- Gather programs ------------------------------------------------------------------------------
//
// Every program computes, per output element e, `src_of(e)`: the input element it copies, or NONE
// where it is filled with the pad value; with a strided destination also `dst_of(e)`, the output
// element written. Elements move as raw storage, never through a value type, so every dtype is copied
// bit for bit (float64, int64, NaN payloads):
//   - 32- and 64-bit elements: one invocation per element, one word (or vec2) assignment;
//   - 8- and 16-bit elements into a contiguous output: one invocation per output word, which gathers
//     the word's 2 or 4 elements and stores it whole;
//   - 8- and 16-bit elements into a strided output (Concat): one invocation per element, spliced into
//     its word with atomics (neighbouring invocations share the word).

const char* kNone = "0xffffffffu";

// The pad value of constant mode: a bound input (a one-element tensor of the data's dtype), or bits.
struct Fill {
  bool used = false;
  int input = -1;
  Tensor value;  // when not bound
};

// Declares the tensors of a gather program: x = input `in` (unless `has_x` is false: all fill), cv =
// the fill input (if bound), y = the output.
shader::Program gather_program(GpuKernelContext& ctx, const std::string& name, size_t in, const Fill& fill,
                               const Shape& out_shape, std::vector<ValueRef>& binds, bool has_x = true) {
  DType t = ctx.dtype(in);
  auto p = ctx.program(name);
  if (has_x) {
    p.input("x", t, ctx.shape(in));
    binds.push_back(ctx.in(in));
  }
  if (fill.used && fill.input >= 0) {
    p.input("cv", t, ctx.shape(size_t(fill.input)));
    binds.push_back(ctx.in(size_t(fill.input)));
  }
  p.output("y", t, out_shape);
  return p;
}

// Writes the body of a gather program (whose src_of / dst_of are declared) and dispatches it over
// `n` elements written into output `out`. Without x, every element is the fill.
void finish_gather(GpuKernelContext& ctx, shader::Program& p, std::vector<ValueRef> binds, size_t out, uint64_t n,
                   bool strided_dst, const Fill& fill, bool has_x = true) {
  binds.push_back(ctx.out(out));
  DType t = ctx.outputs.at(out).dtype;
  int bits = shader::type_info(t, ctx.policy).storage_bits;
  std::string fill_val;  // the fill element's storage bits (y_raw_t)
  if (fill.used && fill.input >= 0) {
    fill_val = "cv_raw(0u)";
  } else if (fill.used) {
    p.uniform_raw("fill", "y", fill.value);
    fill_val = "fill()";
  }
  std::string none = kNone;
  if (!has_x) p.declare("fn src_of(e: u32) -> u32 { return " + none + "; }");
  if (bits >= 32) {
    p.set_threads(n);
    std::string b = "  let d = " + std::string(strided_dst ? "dst_of(gi)" : "gi") + ";\n  let s = src_of(gi);\n";
    if (fill.used) b += "  if (s == " + none + ") {\n    y_store_raw(d, " + fill_val + ");\n    return;\n  }\n";
    p.body(b + (has_x ? "  " + shader::move_element("y", "d", "x", "s") : ""));
  } else {
    // The bits of the element that goes where src_of gives `s`.
    std::string mask = bits == 8 ? "0xffu" : "0xffffu";
    std::string f = "fn elem_bits(s: u32) -> u32 {\n";
    if (fill.used) f += "  if (s == " + none + ") { return " + fill_val + " & " + mask + "; }\n";
    f += has_x ? "  return x_raw(s);\n}\n" : "  return 0u;\n}\n";
    p.declare(f);
    uint32_t per = 32 / uint32_t(bits);
    if (!strided_dst) {
      p.uniform("count", uint32_t(n));
      p.set_threads((n + per - 1) / per);
      p.body("  var word = 0u;\n"
             "  for (var j = 0u; j < " + u32_lit(per) + "; j = j + 1u) {\n"
             "    let e = gi * " + u32_lit(per) + " + j;\n"
             "    if (e >= count()) { break; }\n"
             "    word = word | (elem_bits(src_of(e)) << (j * " + u32_lit(uint32_t(bits)) + "));\n"
             "  }\n"
             "  y_store_word(gi, word);");
    } else {
      p.set_threads(n);
      p.body("  y_store_raw(dst_of(gi), elem_bits(src_of(gi)));");
    }
  }
  ctx.dispatch(p, binds);
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

// WGSL `fn <name>(e: u32) -> u32`: base + sum(c[d] * strides[d]) over the coordinates c of element e
// of the iteration space `it_dims`.
std::string strided_fn(const std::string& name, size_t rank) {
  return "fn " + name + "(e: u32) -> u32 {\n"
         "  var rem = e;\n"
         "  var o = " + name + "_base();\n"
         "  for (var k = 0u; k < " + u32_lit(rank) + "; k = k + 1u) {\n"
         "    let d = " + u32_lit(rank) + " - 1u - k;\n"
         "    let n = it_dims(d);\n"
         "    o = o + (rem % n) * " + name + "_strides(d);\n"
         "    rem = rem / n;\n"
         "  }\n"
         "  return o;\n}\n";
}

// ---- Tiled transpose ------------------------------------------------------------------------------
//
// A copy into a contiguous destination whose innermost axis is not the source's ([B, C, HW] -> [B, HW, C],
// NCHW <-> NHWC) reads the source one element per row with the plain copy: a workgroup's reads fall on
// as many cache lines as it has invocations. Here a workgroup moves a 32 x 32 tile of the two axes
// through workgroup memory: it reads along the source's innermost axis and writes along the
// destination's, both contiguous. The other axes are the tile's batch. 256 invocations (gather_program's
// workgroup): 32 along a row of the tile, 8 rows at a time.

constexpr int64_t kTile = 32;      // the tile's side (the WGSL below is written for it)
constexpr int64_t kTileMin = 16;   // both axes at least this long, else the plain copy (a tile mostly idle)

// `c` with its axes of one element left out and the neighbours that stay neighbours in the source
// merged (the destination being contiguous, they are neighbours there too).
StridedCopy merged_axes(const StridedCopy& c) {
  StridedCopy m;
  m.src_base = c.src_base;
  for (size_t d = 0; d < c.dims.size(); ++d) {
    if (c.dims[d] == 1) continue;
    if (!m.dims.empty() && m.src_strides.back() == c.src_strides[d] * c.dims[d]) {
      m.dims.back() *= c.dims[d];
      m.src_strides.back() = c.src_strides[d];
    } else {
      m.dims.push_back(c.dims[d]);
      m.src_strides.push_back(c.src_strides[d]);
    }
  }
  m.dst_strides = shape_strides(m.dims);
  return m;
}

// The tiled copy of `c` (contiguous destination, elements of 32 or 64 bits), when its shape calls for one.
bool tiled_transpose(GpuKernelContext& ctx, size_t in, size_t out, const Shape& out_shape, const StridedCopy& c) {
  StridedCopy m = merged_axes(c);
  const size_t r = m.dims.size();
  // The destination's rows are the source's (stride 1), or one source element repeated (0, Expand): plain copy.
  if (r < 2 || m.src_strides[r - 1] <= 1) return false;
  size_t a = r;  // the source's innermost axis
  for (size_t d = 0; d + 1 < r; ++d)
    if (m.src_strides[d] == 1) a = d;
  if (a == r || m.dims[a] < kTileMin || m.dims[r - 1] < kTileMin) return false;
  const int64_t ti = (m.dims[a] + kTile - 1) / kTile, tj = (m.dims[r - 1] + kTile - 1) / kTile;
  const int64_t tiles = ti * tj * (shape_numel(m.dims) / (m.dims[a] * m.dims[r - 1]));
  std::vector<ValueRef> binds;
  auto p = gather_program(ctx, "tiled" + std::to_string(r), in, {}, out_shape, binds);
  p.uniform_array("it_dims", words(m.dims));
  p.uniform_array("src_strides", words(m.src_strides));
  p.uniform_array("dst_strides", words(m.dst_strides));
  p.uniform("src_base", uint32_t(m.src_base));
  p.uniform("axis_a", uint32_t(a));
  p.uniform("tiles_i", uint32_t(ti));
  p.uniform("tiles_j", uint32_t(tj));
  p.uniform("tiles", uint32_t(tiles));
  const std::string R = u32_lit(uint32_t(r));
  // i: the source's innermost axis (a), j: the destination's (the last); the tile is held [j][i] as read.
  p.declare("var<workgroup> tile: array<array<x_raw_t, 33>, 32>;  // [j][i], one column of padding\n"
            "// The source and destination offsets of batch b (the coordinates of the axes other than a and the last).\n"
            "fn batch_offsets(b: u32) -> vec2<u32> {\n"
            "  var rem = b;\n"
            "  var o = vec2<u32>(src_base(), 0u);\n"
            "  for (var k = 1u; k < " + R + "; k = k + 1u) {\n"
            "    let d = " + R + " - 1u - k;\n"
            "    if (d == axis_a()) { continue; }\n"
            "    let n = it_dims(d);\n"
            "    o = o + (rem % n) * vec2<u32>(src_strides(d), dst_strides(d));\n"
            "    rem = rem / n;\n"
            "  }\n"
            "  return o;\n}\n");
  p.body("  if (wg >= tiles()) { return; }  // (the grid's last row: whole workgroups)\n"
         "  let per_batch = tiles_i() * tiles_j();\n"
         "  let o = batch_offsets(wg / per_batch);\n"
         "  let t = wg % per_batch;\n"
         "  let i0 = (t / tiles_j()) * 32u;\n"
         "  let j0 = (t % tiles_j()) * 32u;\n"
         "  let ni = it_dims(axis_a());\n"
         "  let nj = it_dims(" + R + " - 1u);\n"
         "  let sj = src_strides(" + R + " - 1u);\n"
         "  let di = dst_strides(axis_a());\n"
         "  let lx = lid % 32u;\n"
         "  let ly = lid / 32u;\n"
         "  for (var k = 0u; k < 32u; k = k + 8u) {\n"
         "    let i = i0 + lx;\n"
         "    let j = j0 + ly + k;\n"
         "    if (i < ni && j < nj) { tile[ly + k][lx] = x_raw(o.x + i + j * sj); }\n"
         "  }\n"
         "  workgroupBarrier();\n"
         "  for (var k = 0u; k < 32u; k = k + 8u) {\n"
         "    let i = i0 + ly + k;\n"
         "    let j = j0 + lx;\n"
         "    if (i < ni && j < nj) { y_store_raw(o.y + i * di + j, tile[lx][ly + k]); }\n"
         "  }");
  binds.push_back(ctx.out(out));
  uint32_t x, y;
  grid_for(uint64_t(tiles) * p.workgroup_size(), p.workgroup_size(), ctx.limits, x, y);
  ctx.dispatch(p, binds, x, y);
  return true;
}

// Dispatches the copy of input `in` into output `out` (of `out_shape`, already set) as `c` says.
void dispatch_copy(GpuKernelContext& ctx, size_t in, size_t out, const Shape& out_shape, const StridedCopy& c) {
  int64_t n = shape_numel(c.dims);
  if (!ctx.output_wanted(out) || n == 0) return;
  size_t r = c.dims.size();
  bool strided_dst = c.dst_base != 0 || c.dst_strides != shape_strides(c.dims);
  if (!strided_dst && shader::type_info(ctx.dtype(in), ctx.policy).storage_bits >= 32 &&
      tiled_transpose(ctx, in, out, out_shape, c))
    return;
  std::vector<ValueRef> binds;
  auto p = gather_program(ctx, std::string(strided_dst ? "scatter" : "copy") + std::to_string(r), in, {}, out_shape, binds);
  p.uniform_array("it_dims", words(c.dims));
  p.uniform("src_of_base", uint32_t(c.src_base));
  p.uniform_array("src_of_strides", words(c.src_strides));
  p.declare(strided_fn("src_of", r));
  if (strided_dst) {
    p.uniform("dst_of_base", uint32_t(c.dst_base));
    p.uniform_array("dst_of_strides", words(c.dst_strides));
    p.declare(strided_fn("dst_of", r));
  }
  finish_gather(ctx, p, binds, out, uint64_t(n), strided_dst, {});
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

// y[c] = x[map(c - begin)] per axis, `map` given by `mode` (constant, edge, wrap, reflect); in constant
// mode the elements outside the input are `fill`.
void padded_copy(GpuKernelContext& ctx, const std::string& mode, const Shape& out, const std::vector<int64_t>& begin,
                 Fill fill) {
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
  fill.used = mode == "constant";
  if (fill.used && fill.input < 0 && !fill.value.defined()) fill.value = Tensor(t, {});  // zero
  size_t r = out.size();
  std::vector<ValueRef> binds;
  // An empty input (constant mode only) is not bound: the output is all fill.
  if (shape_numel(x) == 0) {
    auto p = gather_program(ctx, "fill", 0, fill, out, binds, false);
    finish_gather(ctx, p, binds, 0, uint64_t(shape_numel(out)), false, fill, false);
    return;
  }
  auto p = gather_program(ctx, mode + std::to_string(r), 0, fill, out, binds);
  p.uniform_array("pad_begin", words(begin));
  std::string outside;
  if (mode == "constant") outside = "return " + std::string(kNone) + ";";
  else if (mode == "edge") outside = "p = select(xn - 1i, 0i, p < 0i);";
  else if (mode == "wrap") outside = "p = p % xn;\n      if (p < 0i) { p = p + xn; }";
  else  // reflect, repeating for pads larger than the axis (as numpy and the CPU reference do)
    outside = "if (xn == 1i) {\n        p = 0i;\n      } else {\n"
              "        let period = 2i * (xn - 1i);\n"
              "        p = p % period;\n"
              "        if (p < 0i) { p = p + period; }\n"
              "        if (p >= xn) { p = period - p; }\n      }";
  p.declare("fn src_of(e: u32) -> u32 {\n"
            "  var rem = e;\n"
            "  var s = 0u;\n"
            "  for (var k = 0u; k < " + u32_lit(r) + "; k = k + 1u) {\n"
            "    let d = " + u32_lit(r) + " - 1u - k;\n"
            "    let n = y_shape(d);\n"
            "    let c = rem % n;\n"
            "    rem = rem / n;\n"
            "    let xn = i32(x_shape(d));\n"
            "    var p = i32(c) - bitcast<i32>(pad_begin(d));\n"
            "    if (p < 0i || p >= xn) {\n      " + outside + "\n    }\n"
            "    s = s + u32(p) * x_stride(d);\n"
            "  }\n"
            "  return s;\n}\n");
  finish_gather(ctx, p, binds, 0, uint64_t(shape_numel(out)), false, fill);
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
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(ctx.shape(i));
  ops::ConcatShape cs = ops::concat_shape(ctx.node, ctx.opset, shapes, ctx.fail_fn());
  DType t = data_dtype(ctx, 0);
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.dtype(i) != t)
      ctx.fail("input " + std::to_string(i) + " is " + std::string(dtype_name(ctx.dtype(i))) + " but input 0 is " + std::string(dtype_name(t)));
  const int64_t axis = cs.axis;
  const Shape& out = cs.out;
  if (ctx.num_inputs() == 1) {
    ctx.alias_output(0, 0, out);
    return;
  }
  ctx.set_output(0, t, out);
  // One dispatch per input (each binds one input and the output, so any number of inputs fits the
  // device's storage-buffer limit), copying its rows into the output's rows at its offset.
  int64_t outer = prod(out, 0, size_t(axis)), inner = prod(out, size_t(axis) + 1, out.size());
  // An input already in place in the output's buffer (an appended KV cache) is skipped: the runtime
  // keeps only 32- and 64-bit elements so, whose rows never share a word with their neighbours'.
  const bool skip_first = ctx.in_place_input == 0 && shader::type_info(t, ctx.policy).storage_bits >= 32;
  ctx.in_place_done = skip_first;
  const bool skip_rows = skip_first && ctx.rows_in_place && ctx.num_inputs() == 2;
  int64_t out_row = out[size_t(axis)] * inner, offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    int64_t row = ctx.shape(i)[size_t(axis)] * inner;
    if (i == 0 ? !skip_first : !skip_rows) dispatch_copy(ctx, i, 0, out, StridedCopy{{outer, row}, {row, 1}, {out_row, 1}, 0, offset});
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
  std::vector<int64_t> sizes = ops::split_sizes(
      ctx.node, ctx.opset, axis, dim, shape_str(x), ctx.num_outputs(), ctx.has_input(1),
      [&] { return int_list(ctx, 1, "split"); }, [&](const std::string& m) { ctx.fail(m); });
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
  auto fail = [&](const std::string& m) { ctx.fail(m); };
  ops::SliceParams p = ops::slice_params(
      ctx.node, ctx.opset, [&](size_t i) { return ctx.has_input(i); },
      [&](size_t i, const char* what) { return int_list(ctx, i, what); }, fail);
  std::vector<int64_t> in_strides = shape_strides(x);
  StridedCopy c{x, in_strides, {}, 0, 0};
  for (const ops::SlicedAxis& s : ops::plan_slice(x, p, fail)) {
    c.dims[s.axis] = s.count;
    if (s.count > 0) {
      c.src_base += s.start * in_strides[s.axis];
      c.src_strides[s.axis] = in_strides[s.axis] * (s.count > 1 ? s.step : 1);  // the step matters only when count > 1
    }
  }
  c.dst_strides = shape_strides(c.dims);
  strided_copy(ctx, 0, 0, c.dims, c);
}

void expand(GpuKernelContext& ctx) {
  const Shape& x = ctx.shape(0);
  data_dtype(ctx, 0);
  Shape out = ops::expand_shape(x, int_list(ctx, 1, "shape"), ctx.fail_fn());
  strided_copy(ctx, 0, 0, out, StridedCopy{out, ops::broadcast_strides(x, out), shape_strides(out), 0, 0});
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
  Shape out = ops::tile_shape(x, repeats, [&](const std::string& m) { ctx.fail(m); });
  // Tiling is padding at the end in wrap mode.
  padded_copy(ctx, "wrap", out, std::vector<int64_t>(size_t(r), 0), Fill{});
}

void pad(GpuKernelContext& ctx) {
  const Shape& x = ctx.shape(0);
  DType t = data_dtype(ctx, 0);
  int64_t r = int64_t(x.size());
  std::string mode = ctx.node.attr_string("mode", "constant");
  std::vector<int64_t> pads, axes;
  Fill fill;
  bool axes_given = false;
  if (ctx.opset < 11) {
    const char* name = ctx.opset < 2 ? "paddings" : "pads";
    if (!ctx.node.has_attr(name)) ctx.fail(std::string("attribute '") + name + "' is required before opset 11");
    pads = ctx.node.attr_ints(name);
    fill.value = Tensor::scalar<float>(ctx.node.attr_float("value", 0.0f)).cast(t);
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
  ops::PadGeometry geo = ops::pad_geometry(x, mode, pads, axes, axes_given, [&](const std::string& m) { ctx.fail(m); });
  padded_copy(ctx, mode, geo.out, geo.begin, fill);
}

void depth_to_space(GpuKernelContext& ctx) {
  ops::BlockTranspose t = ops::depth_to_space(ctx.node, ctx.opset, ctx.shape(0), ctx.fail_fn());
  strided_copy(ctx, 0, 0, t.out, transposed(t.view, t.perm));
}

void space_to_depth(GpuKernelContext& ctx) {
  ops::BlockTranspose t = ops::space_to_depth(ctx.node, ctx.shape(0), ctx.fail_fn());
  strided_copy(ctx, 0, 0, t.out, transposed(t.view, t.perm));
}

// CenterCropPad: a constant-mode padded copy whose begin is the pad start, or minus the crop start.
void center_crop_pad(GpuKernelContext& ctx) {
  ops::CropPad cp = ops::center_crop_pad(ctx.node, ctx.shape(0), int_list(ctx, 1, "shape"), ctx.fail_fn());
  padded_copy(ctx, "constant", cp.out, cp.begin, Fill{});
}

// ReverseSequence: a gather whose source reverses the first sequence_lens[b] steps of each batch element
// (the lengths, known at plan time, in a uniform array).
void reverse_sequence(GpuKernelContext& ctx) {
  const Shape& x = ctx.shape(0);
  data_dtype(ctx, 0);
  if (ctx.dtype(1) != DType::Int64) ctx.fail("input 'sequence_lens' must be int64, got " + std::string(dtype_name(ctx.dtype(1))));
  ops::ReverseSequenceAxes a = ops::reverse_sequence_axes(ctx.node, x, ctx.shape(1), ctx.fail_fn());
  std::vector<int64_t> lens = int_list(ctx, 1, "sequence_lens");
  const int64_t T = x[size_t(a.time_axis)];
  for (size_t b = 0; b < lens.size(); ++b)
    if (lens[b] < 0 || lens[b] > T)
      ctx.fail("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[b]) + " is outside [0, " + std::to_string(T) + "]");
  if (lens.size() > 4096) ctx.unsupported("more than 4096 sequences (the lengths travel as uniforms)");
  if (shape_numel(x) > (int64_t(1) << 30)) ctx.unsupported("more than 2^30 elements");
  ctx.set_output(0, ctx.dtype(0), x);
  if (shape_numel(x) == 0) return;
  std::vector<ValueRef> binds;
  auto p = gather_program(ctx, "reverse_sequence", 0, Fill{}, x, binds);
  p.uniform_array("lens", words(lens));
  p.uniform("time_axis", uint32_t(a.time_axis));
  p.uniform("batch_axis", uint32_t(a.batch_axis));
  p.declare("fn src_of(e: u32) -> u32 {\n"
            "  let ts = x_stride(time_axis());\n"
            "  let t = (e / ts) % x_shape(time_axis());\n"
            "  let len = lens((e / x_stride(batch_axis())) % x_shape(batch_axis()));\n"
            "  if (t >= len) { return e; }\n"
            "  return e + (len - 1u - t) * ts - t * ts;\n"
            "}\n");
  finish_gather(ctx, p, binds, 0, uint64_t(shape_numel(x)), false, Fill{});
}

}  // namespace

void register_layout(GpuKernelRegistry& r) {
  r.add("CenterCropPad", center_crop_pad);
  r.add("ReverseSequence", reverse_sequence);
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
