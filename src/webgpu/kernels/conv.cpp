// Conv, ConvInteger, QLinearConv and ConvTranspose on the GPU, 1-D to 3-D (any spatial rank the uniforms can describe);
// Col2Im (one invocation per image pixel, summing the block elements that cover it); DeformConv (2-D: a GEMM per
// group whose columns are the taps sampled bilinearly at their offsets, computed as the tiles are staged).
// Float Conv takes one of three kernels, chosen by shape (the choice shows in the program's name, so a
// refresh for other sizes that would choose another is planned anew):
//   - an implicit GEMM per group: Y[m, col] = sum_k W[m, k] X̂[k, col], k = (input channel, kernel tap),
//     col = (image, output position), X̂ gathered from X on the fly (zero in the padding; a 1x1 kernel of
//     stride 1 without padding reads X as it lies). Tiled like the product kernel (matmul.cpp): TM x TN
//     outputs per workgroup, K-slices of 16 staged in workgroup memory as vec4s while the next slice is
//     loaded into registers, 4 x 4 outputs per invocation; when the tiles are too few to fill the GPU
//     (late layers at a small batch) the K range is split over workgroups and a second pass sums the parts.
//     Float32 weights whose rows are whole vec4s (K % 4 == 0) are read a vec4 at a time (programs `_vw`;
//     $ONNXGPU_MATMUL_VEC=0 turns it off). For groups of at least 8 output channels;
//   - a first-layer kernel (one group of at most 4 input channels, K at most 256, 2-D: an image model's
//     first conv over RGB or gray): one output position per invocation for a block of up to 64 output
//     channels, the block's weights in workgroup memory;
//   - a depthwise kernel (one input channel per group), 2-D: one output per invocation over its kernel
//     taps, no channel loop;
//   - the GEMV kernel of the products (gemv.cpp) for 1x1 kernels over 1x1 images of a few images (the
//     fully connected convolutions of squeeze-excitation blocks);
//   - a direct convolution, one output per invocation (every other case: few output channels per group,
//     1-D / 3-D depthwise).
// Every float kernel ends in one epilogue (ConvEpilogue): the bias, then, in the fused Conv (runtime/
// fusion.h: BatchNormalization folded into the weights, the activation and residual after it), the node's
// elementwise expression. A fused Conv may end in a pool too (fusion.h: a 2-D MaxPool or AveragePool
// whose windows of 1, 2 or 4 taps tile the output without overlap, e.g. 2 x 2 of stride 2): Y is then the
// pooled tensor, and only the positions the windows cover are computed (a trailing row or column that no
// window covers, never), each through the epilogue (the residual read at its own position), the window's
// max (as MaxPool: the first value, replaced only by a greater one) or mean stored once. The implicit GEMM
// enumerates its columns window by window (image, pooled position, tap), so an invocation's 4 columns are
// whole windows, combined in registers; split over K, the sum pass takes one pooled output per invocation
// over its window's columns; the first-layer, depthwise and direct kernels compute a pooled output's taps
// one after the other in one invocation; the GEMV is not taken. The pool shows in the program's name
// (_maxpool2x2, _avgpool1x2, ...). ConvInteger and QLinearConv run the direct kernel with exact integer
// accumulation.
// Output shapes are computed exactly as the CPU reference (src/cpu/conv.cpp); every size is a uniform.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/switches.h"
#include "ops/broadcast.h"
#include "ops/conv.h"
#include "webgpu/device.h"
#include "webgpu/kernels/conv_util.h"
#include "webgpu/kernels/fused_steps.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/matmul.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {

namespace {

int64_t get_group(const GpuKernelContext& ctx) {
  return ops::conv_group(ctx.node, [&](const std::string& m) { ctx.fail(m); });
}

void check_kernel_shape_attr(const GpuKernelContext& ctx, const Shape& from_weights) {
  ops::check_kernel_shape(ctx.node, from_weights, [&](const std::string& m) { ctx.fail(m); });
}

// Common checks of X, W and B (dtype, ranks). Returns whether there is a bias.
bool check_inputs(const GpuKernelContext& ctx) {
  ops::check_conv_inputs(ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.fail_fn());
  if (ctx.shape(0).size() < 3)
    ctx.fail("input X must be [N, C, D1, ...] (rank >= 3), got " + shape_str(ctx.shape(0)));
  if (ctx.shape(1).size() != ctx.shape(0).size())
    ctx.fail("weights W " + shape_str(ctx.shape(1)) + " must have the rank of X " + shape_str(ctx.shape(0)));
  return ctx.has_input(2);
}

// A program over x, w (and the bias b) of X's float type writing y of shape `out`; `binds` gets the
// bindings in that order.
shader::Program float_program(GpuKernelContext& ctx, const std::string& name, bool has_bias, const Shape& out,
                              std::vector<ValueRef>& binds) {
  DType t = ctx.dtype(0);
  auto p = ctx.program(name + (has_bias ? "_bias" : ""));
  p.input("x", t, ctx.shape(0));
  p.input("w", t, ctx.shape(1));
  binds = {ctx.in(0), ctx.in(1)};
  if (has_bias) {
    p.input("b", t, ctx.shape(2));
    binds.push_back(ctx.in(2));
  }
  p.output("y", t, out);
  binds.push_back(ctx.out(0));
  return p;
}

// Splits the spatial linear index `sp` of the output into per-dim positions, into `var <name>: array<i32, R>`
// holding pos * mul(d) + add(d) for the given uniform arrays (WGSL).
std::string split_spatial(size_t r, const std::string& name, const std::string& expr) {
  std::string R = std::to_string(r);
  return "  var " + name + ": array<i32, " + R + ">;\n"
         "  var rem = sp;\n"
         "  for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
         "    let od = i32(rem % y_shape(u32(d) + 2u));\n"
         "    rem = rem / y_shape(u32(d) + 2u);\n"
         "    " + name + "[d] = " + expr + ";\n"
         "  }\n";
}

// What a float Conv computes: X [N, C, D...], W [M, Cg, k...] in `group` groups, Y [N, M, out...].
struct ConvGeom {
  int64_t N = 0, C = 0, M = 0, group = 1, Cg = 0, Mg = 0;
  size_t r = 0;        // spatial rank
  ops::Window win;     // strides, dilations, pads, the output's spatial dims
  Shape out;           // [N, M, out...]
  int64_t in_sz = 1, k_sz = 1, out_sz = 1;  // spatial sizes of X, W and Y
  int64_t K = 0;       // Cg * k_sz: the GEMM's depth
  int64_t cols = 0;    // N * out_sz: the GEMM's columns (pooled: the positions the windows cover, below)
  bool pointwise = false;  // 1 x 1 kernel, stride 1, no padding: X̂ is X itself
  // The pool a fused Conv ends in (runtime/fusion.h; the node's attributes pool and pool_kernel): 2-D windows
  // of pk[0] x pk[1] taps that tile the output without overlap (strides = kernel, no padding, floor). Y is
  // then pool_out, and only the N * pool_sz * taps output positions the windows cover are computed: `cols`
  // counts those, enumerated window by window (col = (image, pooled position, tap)).
  int64_t taps = 0;    // the window's taps; 0: no pool
  bool pool_max = false;
  int64_t pk[2] = {1, 1};
  Shape pool_out;      // [N, M, out[0] / pk[0], out[1] / pk[1]]
  int64_t pool_sz = 0;  // the pooled spatial size
  bool pooled() const { return taps > 0; }
  const Shape& y() const { return pooled() ? pool_out : out; }
};

// Conv's checks (as on the CPU), its output set, and its geometry.
ConvGeom float_geometry(GpuKernelContext& ctx) {
  bool has_bias = check_inputs(ctx);
  const Shape& xs = ctx.shape(0);
  const Shape& ws = ctx.shape(1);
  ConvGeom g;
  g.group = get_group(ctx);
  ops::check_conv_shapes(xs, ws, g.group, has_bias ? ctx.shape(2)[0] : -1, [&](const std::string& m) { ctx.fail(m); });
  g.N = xs[0];
  g.C = xs[1];
  g.M = ws[0];
  g.Cg = ws[1];
  g.Mg = g.M / g.group;
  g.r = xs.size() - 2;
  Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  check_kernel_shape_attr(ctx, k_sp);
  g.win = convutil::window(ctx, in_sp, k_sp, false);
  g.out = {g.N, g.M};
  g.out.insert(g.out.end(), g.win.out.begin(), g.win.out.end());
  const ir::Node& node = ctx.node;
  if (node.domain == kFusedDomain && node.has_attr("pool")) {
    std::string kind = node.attr_string("pool", "");
    std::vector<int64_t> k = node.attr_ints("pool_kernel", {});
    if ((kind != "max" && kind != "average") || k.size() != 2 || k[0] < 1 || k[1] < 1 || g.r != 2)
      ctx.fail("the fused pool must be max or average over a 2-D window (attributes pool, pool_kernel)");
    if (g.win.out[0] < k[0] || g.win.out[1] < k[1])
      ctx.unsupported("a pool window " + shape_str(k) + " larger than the convolution's output " + shape_str(g.out));
    g.pool_max = kind == "max";
    g.pk[0] = k[0];
    g.pk[1] = k[1];
    g.taps = k[0] * k[1];
    g.pool_out = {g.N, g.M, g.win.out[0] / k[0], g.win.out[1] / k[1]};
    g.pool_sz = g.pool_out[2] * g.pool_out[3];
  }
  ctx.set_output(0, ctx.dtype(0), g.y());
  convutil::check_i32(ctx, convutil::dims(xs), "input dim");
  convutil::check_i32(ctx, convutil::dims(g.out), "output dim");
  convutil::check_i32(ctx, g.win.strides, "stride");
  convutil::check_i32(ctx, g.win.dilations, "dilation");
  convutil::check_i32(ctx, g.win.pad_begin, "pad");
  g.in_sz = shape_numel(in_sp);
  g.k_sz = shape_numel(k_sp);
  g.out_sz = shape_numel(g.win.out);
  g.K = g.Cg * g.k_sz;
  g.cols = g.pooled() ? g.N * g.pool_sz * g.taps : g.N * g.out_sz;
  g.pointwise = g.k_sz == 1;
  for (size_t d = 0; d < g.r; ++d)
    if (g.win.strides[d] != 1 || g.win.pad_begin[d] != 0 || g.win.pad_end[d] != 0) g.pointwise = false;
  if (uint64_t(shape_numel(xs)) >= (uint64_t(1) << 32) || uint64_t(shape_numel(g.out)) >= (uint64_t(1) << 32) ||
      uint64_t(shape_numel(ws)) >= (uint64_t(1) << 32))
    ctx.unsupported("tensors of 2^32 elements or more");
  return g;
}

void spatial_uniforms(shader::Program& p, const ConvGeom& g) {
  p.uniform("in_sz", uint32_t(g.in_sz));
  p.uniform("k_sz", uint32_t(g.k_sz));
  convutil::int_array(p, "stride", g.win.strides);
  convutil::int_array(p, "dil", g.win.dilations);
  convutil::int_array(p, "pad", g.win.pad_begin);
}

// The float kernels' epilogue: `put(m, n, sp, v)` stores output channel m of image n at spatial
// position sp, v being the sum over the window: the bias (input 2) is added, then the fused node's
// elementwise expression (FusedSteps: the biased sum is its product p; its inputs, nodes inputs 3...,
// are read at the output element, broadcast) is applied.
// A pooled Conv (ConvGeom::pooled) declares instead `post(m, n, sp, v)`, which returns that value (its
// inputs read at the Conv's output position sp), `pool_add(a, b)`, which combines two of a window's values
// (the larger, as MaxPool: a later value replaces only when greater, so a NaN never does; or the sum), and
// `pool_put(m, n, ps, v)`, which stores the window's value at pooled position ps (the mean: the sum / taps),
// with the window's geometry (declare_pool).
class ConvEpilogue {
 public:
  ConvEpilogue(GpuKernelContext& ctx, const ConvGeom& g) : ctx_(ctx), steps_(ctx), g_(g), out_(g.out) {
    has_bias_ = ctx.has_input(2);
    if (steps_.empty()) return;
    if (ctx.dtype(0) != DType::Float32) ctx.unsupported("a fused float32 Conv");
    steps_.check_input_types(false);
    for (size_t k = 0; k < steps_.num_inputs(); ++k) {
      const Shape& s = steps_.input(k).shape;
      Shape b;
      try {
        b = ops::broadcast_shapes(out_, s);
      } catch (const Error&) {
        b.clear();
      }
      if (b != out_) ctx.fail("the fused expression's input " + shape_str(s) + " does not broadcast to the output " + shape_str(out_));
    }
    size_t tensors = 3 + (has_bias_ ? 1 : 0) + steps_.num_inputs() + 1;  // x, w, (b), inputs, y, the status word
    uint32_t most = ctx.limits.max_storage_buffers_per_shader_stage ? ctx.limits.max_storage_buffers_per_shader_stage : 8;
    if (tensors > most) ctx.unsupported("more tensors than the device binds per dispatch");
  }
  bool has_bias() const { return has_bias_; }
  bool pooled() const { return g_.pooled(); }
  const Shape& y() const { return g_.y(); }  // the stored output (pooled or not)
  const FusedSteps& steps() const { return steps_; }
  // The program name's part that tells epilogues apart (the expression itself is in the WGSL).
  std::string tag() const {
    return std::string(has_bias_ ? "_bias" : "") + (steps_.empty() ? "" : "_fused" + std::to_string(steps_.size())) +
           pool_tag();
  }
  // The pool's part of it (its window's geometry is in the WGSL): _maxpool2x2, _avgpool1x2, ...
  std::string pool_tag() const {
    if (!pooled()) return "";
    return std::string(g_.pool_max ? "_maxpool" : "_avgpool") + std::to_string(g_.pk[0]) + "x" + std::to_string(g_.pk[1]);
  }
  // Declares the bias, the expression's inputs and the output y (in binding order, after the kernel's
  // own inputs), the uniform out_sz, and the function put (or, pooled, post, pool_add, pool_put and the
  // window's geometry).
  void declare(shader::Program& p, std::vector<ValueRef>& binds) const {
    DType t = ctx_.dtype(0);
    std::string f = std::string(pooled() ? "fn post(m: u32, n: u32, sp: u32, v: f32) -> f32 {\n"
                                         : "fn put(m: u32, n: u32, sp: u32, v: f32) {\n") +
                    "  let i = (n * y_shape(1u) + m) * out_sz() + sp;\n";
    if (has_bias_) {
      p.input("b", ctx_.dtype(2), ctx_.shape(2));
      binds.push_back(ctx_.in(2));
      f += "  let p = v + to_f32_$b(b_load(m));\n";
    } else {
      f += "  let p = v;\n";
    }
    for (size_t k = 0; k < steps_.num_inputs(); ++k) {
      std::string x = FusedSteps::input_name(k);
      if (!steps_.literal(k).empty()) {
        f += "  let " + x + " = " + steps_.literal(k) + ";\n";
        continue;
      }
      const Shape& s = steps_.input(k).shape;
      p.input(x + "_in", steps_.input(k).dtype, s);
      binds.push_back(ctx_.in(steps_.node_input(k)));
      if (s == out_) {
        f += "  let " + x + " = " + x + "_in_load(i);\n";
      } else {
        p.broadcast_index(x + "_at", s, out_);
        f += "  let " + x + " = " + x + "_in_load(" + x + "_at(i));\n";
      }
    }
    std::string decls;
    if (!steps_.empty()) f += steps_.wgsl(decls);
    std::string value = steps_.empty() ? std::string("p") : steps_.result();
    if (pooled()) {
      f += "  return " + value + ";\n}\n"
           "fn pool_add(a: f32, b: f32) -> f32 { return " + std::string(g_.pool_max ? "select(a, b, b > a)" : "a + b") + "; }\n"
           "fn pool_put(m: u32, n: u32, ps: u32, v: f32) {\n"
           "  y_store((n * y_shape(1u) + m) * pool_sz() + ps, from_f32_$y(" + (g_.pool_max ? "v" : "v / f32(PWIN)") + "));\n}\n";
      declare_pool(p);
    } else {
      f += "  y_store(i, from_f32_$y(" + value + "));\n}\n";
    }
    p.output("y", t, g_.y());
    binds.push_back(ctx_.out(0));
    p.uniform("out_sz", uint32_t(shape_numel(Shape(out_.begin() + 2, out_.end()))));
    p.declare(decls + f);
  }
  // The pooled geometry: constants PKH x PKW (the window) and PWIN (its taps), uniforms pool_sz (the pooled
  // spatial size), pool_w (the pooled width) and conv_w (the Conv's output width), and pool_sp(ps, wp): the
  // Conv's output position (spatial, linear) of tap wp (row-major in the window) of pooled position ps.
  void declare_pool(shader::Program& p) const {
    p.uniform("pool_sz", uint32_t(g_.pool_sz));
    p.uniform("pool_w", uint32_t(g_.pool_out[3]));
    p.uniform("conv_w", uint32_t(g_.out[3]));
    p.declare("const PKH: u32 = " + u32_lit(uint64_t(g_.pk[0])) + ";\nconst PKW: u32 = " + u32_lit(uint64_t(g_.pk[1])) +
              ";\nconst PWIN: u32 = " + u32_lit(uint64_t(g_.taps)) + ";\n"
              "fn pool_sp(ps: u32, wp: u32) -> u32 {\n"
              "  return ((ps / pool_w()) * PKH + wp / PKW) * conv_w() + (ps % pool_w()) * PKW + wp % PKW;\n}\n");
  }
  // WGSL that finds, from the invocation index gi, the pooled output it computes: its pooled position ps,
  // channel m and image n (one invocation per pooled output).
  static constexpr const char* kPooledOutput =
      "  let ps = gi % pool_sz();\n"
      "  let nm = gi / pool_sz();\n"
      "  let m = nm % y_shape(1u);\n"
      "  let n = nm / y_shape(1u);\n";
  // WGSL that runs `core` (statements that sum `acc` for the Conv's output position sp of channel m of
  // image n) and stores the result: unpooled, once (sp, m and n defined before) through put; pooled, once
  // per tap wp of the window of pooled position ps (ps, m and n defined before; sp defined here), each
  // value through post, combined by pool_add in tap order and stored by pool_put.
  std::string over_window(const std::string& core) const {
    if (!pooled()) return core + "  put(m, n, sp, acc);\n";
    return "  var pv = 0.0;\n"
           "  for (var wp = 0u; wp < PWIN; wp = wp + 1u) {\n"
           "  let sp = pool_sp(ps, wp);\n" +
           core +
           "  let pe = post(m, n, sp, acc);\n"
           "  pv = select(pool_add(pv, pe), pe, wp == 0u);\n"
           "  }\n"
           "  pool_put(m, n, ps, pv);\n";
  }

 private:
  GpuKernelContext& ctx_;
  FusedSteps steps_;
  const ConvGeom& g_;
  Shape out_;
  bool has_bias_ = false;
};

// ------------------------------------------------------------------ the implicit GEMM

// A tile: TM output channels x TN columns per workgroup, K-slices of 16, 4 x 4 outputs per invocation.
struct ConvTile {
  uint32_t tm, tn;
  static constexpr uint32_t tk = 16, rm = 4;
  uint32_t tx() const { return tn / 4; }
  uint32_t threads() const { return tx() * (tm / rm); }
  uint32_t shared_bytes() const { return 16 * (tm * (tk / 4 + 1) + tk * (tn / 4 + 1)); }
  uint32_t a_share() const { return tm * tk / 4 / threads(); }  // vec4s of the W tile each invocation moves
  uint32_t b_share() const { return tk * tn / 4 / threads(); }  // and of the X̂ tile
  bool fits(const Limits& l) const {
    uint32_t inv = l.max_compute_invocations_per_workgroup ? l.max_compute_invocations_per_workgroup : 256;
    uint32_t mem = l.max_compute_workgroup_storage_size ? l.max_compute_workgroup_storage_size : 16384;
    uint32_t wx = l.max_compute_workgroup_size_x ? l.max_compute_workgroup_size_x : 256;
    return threads() <= std::min({inv, wx, 256u}) && shared_bytes() <= mem && (tm * tk / 4) % threads() == 0 &&
           (tk * tn / 4) % threads() == 0;
  }
  std::string name() const { return std::to_string(tm) + "x" + std::to_string(tn); }
};

// 64 x 64; 32 rows for groups of at most 32 output channels and 32 columns for at most 32 columns
// (the tile's unused rows and columns are wasted work); 32 x 32 when 64 x 64 tiles would leave the grid
// under 128 workgroups (late layers, small batches: more, shorter workgroups in flight).
// $ONNXGPU_CONV_TILE = "TMxTN" (32 or 64 each) overrides it, $ONNXGPU_CONV_SMALL_GRID=0 keeps the larger
// tile on small grids, for measuring on a device (bench/variants.py).
std::optional<ConvTile> choose_tile(const Limits& limits, const ConvGeom& g) {
  std::vector<ConvTile> order;
  if (const char* e = std::getenv("ONNXGPU_CONV_TILE"); e && *e) {
    ConvTile t{0, 0};
    if (std::sscanf(e, "%ux%u", &t.tm, &t.tn) == 2 && (t.tm == 32 || t.tm == 64) && (t.tn == 32 || t.tn == 64))
      order.push_back(t);
  }
  ConvTile t{g.Mg <= 32 ? 32u : 64u, g.cols <= 32 ? 32u : 64u};
  uint64_t wgs = uint64_t((g.cols + t.tn - 1) / t.tn) * uint64_t((g.Mg + t.tm - 1) / t.tm) * uint64_t(g.group);
  static const bool small_grid = switched_on("ONNXGPU_CONV_SMALL_GRID");  // "0": keep the larger tile
  if (wgs < 128 && small_grid) t = {32, 32};
  order.push_back(t);
  order.push_back({32, 32});
  for (const ConvTile& c : order)
    if (c.fits(limits)) return c;
  return std::nullopt;
}

// Split-K: while the grid is under 512 workgroups, the K range is halved as long as each part keeps at
// least 16 K-slices (a shorter part saves less than the summing pass costs). At most 16 parts.
// $ONNXGPU_CONV_SPLIT = "WGS/SLICES/MAX" overrides the three numbers (0/0/1: never split).
uint32_t choose_splits(uint64_t wgs, int64_t K, const ConvTile& tl) {
  uint32_t target = 512, min_slices = 16, max_splits = 16;
  if (const char* e = std::getenv("ONNXGPU_CONV_SPLIT"); e && *e) std::sscanf(e, "%u/%u/%u", &target, &min_slices, &max_splits);
  uint32_t splits = 1;
  while (wgs * splits < target && K / (splits * 2) >= int64_t(min_slices) * int64_t(tl.tk) && splits * 2 <= max_splits)
    splits *= 2;
  return splits;
}

// The WGSL that gathers X̂[k, col] for the invocation's 4 columns: their offsets in X (xoff, the image's
// group channels and, for a pointwise conv, the position), which are real columns (cok), and per spatial
// dim d the window's start (st<d>). k splits into (channel, tap, ...) by divisions done in f32 with the
// divisors' reciprocals (uniforms inv_k, inv_k<d>): (k + 0.5) / D is then at least 0.5 / D from an
// integer and its f32 error under 2^-3 / D for k < 2^20 (kdim below 2^20 - 16 is checked by the caller).
std::string gather_decl(const ConvGeom& g) {
  std::string f = "fn ld(o: u32, ok: bool) -> f32 { return select(0.0, to_f32_$x(x_load(select(0u, o, ok))), ok); }\n"
                  "fn qdiv(a: u32, inv: f32) -> u32 { return u32((f32(a) + 0.5) * inv); }\n";
  std::string params = "k: u32, xoff: vec4<u32>, cok: vec4<bool>";
  for (size_t d = 0; d < g.r; ++d) params += ", st" + std::to_string(d) + ": vec4<i32>";
  f += "fn gather(" + params + ") -> vec4<f32> {\n";
  if (g.pointwise) {
    f += "  let off = xoff + vec4<u32>(k * in_sz());\n"
         "  let inside = cok & vec4<bool>(k < kdim());\n";
  } else {
    f += "  let c = qdiv(k, inv_k());\n"
         "  var kq = k - c * k_sz();\n"
         "  var off = xoff + vec4<u32>(c * in_sz());\n"
         "  var inside = cok & vec4<bool>(k < kdim());\n";
    for (size_t d = g.r; d-- > 0;) {
      std::string D = std::to_string(d), D2 = std::to_string(d + 2) + "u";
      if (d > 0)
        f += "  let q" + D + " = qdiv(kq, inv_k" + D + "());\n"
             "  let k" + D + " = kq - q" + D + " * w_shape(" + D2 + ");\n"
             "  kq = q" + D + ";\n";
      else
        f += "  let k" + D + " = kq;\n";
      f += "  let p" + D + " = st" + D + " + vec4<i32>(i32(k" + D + ") * bitcast<i32>(dil(" + D + "u)));\n"
           "  inside = inside & (p" + D + " >= vec4<i32>(0)) & (p" + D + " < vec4<i32>(i32(x_shape(" + D2 + "))));\n"
           "  off = off + bitcast<vec4<u32>>(p" + D + ") * x_stride(" + D2 + ");\n";
    }
  }
  f += "  return vec4<f32>(ld(off.x, inside.x), ld(off.y, inside.y), ld(off.z, inside.z), ld(off.w, inside.w));\n}\n";
  return f;
}

// The body: each invocation finds its 4 columns once (image, position, where their windows start), then
// runs the K-slices as the product kernel does: its share of the next slice loaded into registers
// while the current one is computed from workgroup memory. Pooled, the columns are enumerated window by
// window (image, pooled position cps, tap), so an invocation's 4 columns are 4 / taps whole windows (the
// caller checks that taps divides 4; columns start at multiples of 4): each window's values go through
// post, are combined and stored once.
std::string gemm_body(const ConvGeom& g, const ConvTile& tl, bool split) {
  auto u = [](uint64_t v) { return u32_lit(v); };
  std::string b =
      "  let tx = lid % TX;\n"
      "  let ty = lid / TX;\n"
      "  let n0 = wid.x * TN;\n"
      "  let m0 = wid.y * TM;\n"
      "  let g = wid.z / splits();\n"
      "  let k_begin = (wid.z % splits()) * kchunk();\n"
      "  let k_end = min(kdim(), k_begin + kchunk());\n"
      "  let gm0 = g * mg();  // the group's first output channel\n"
      "  var xoff: vec4<u32>;\n  var cok: vec4<bool>;\n  var cn: vec4<u32>;\n  var csp: vec4<u32>;\n";
  if (g.pooled()) b += "  var cps: vec4<u32>;\n";
  for (size_t d = 0; d < g.r; ++d) b += "  var st" + std::to_string(d) + ": vec4<i32>;\n";
  for (uint32_t j = 0; j < 4; ++j) {
    std::string J = std::to_string(j);
    b += "  {\n    let col = n0 + 4u * tx + " + u(j) + ";\n"
         "    cok[" + J + "] = col < cols();\n"
         "    let cc = select(0u, col, col < cols());\n";
    if (g.pooled())
      b += "    let wnd = cc / PWIN;\n"
           "    cn[" + J + "] = wnd / pool_sz();\n"
           "    cps[" + J + "] = wnd % pool_sz();\n"
           "    csp[" + J + "] = pool_sp(cps[" + J + "], cc % PWIN);\n";
    else
      b += "    cn[" + J + "] = cc / out_sz();\n"
           "    csp[" + J + "] = cc % out_sz();\n";
    b +=
         "    xoff[" + J + "] = (cn[" + J + "] * x_shape(1u) + g * w_shape(1u)) * in_sz()" + (g.pointwise ? " + csp[" + J + "]" : "") + ";\n";
    if (!g.pointwise) {
      b += "    var rem = csp[" + J + "];\n";
      for (size_t d = g.r; d-- > 0;) {
        std::string D = std::to_string(d), D2 = std::to_string(d + 2) + "u";
        b += "    st" + D + "[" + J + "] = i32(rem % out_dim(" + D + "u)) * bitcast<i32>(stride(" + D + "u)) - bitcast<i32>(pad(" + D + "u));\n";
        if (d > 0) b += "    rem = rem / out_dim(" + D + "u);\n";
      }
    }
    b += "  }\n";
  }
  std::string gargs = "xoff, cok";
  for (size_t d = 0; d < g.r; ++d) gargs += ", st" + std::to_string(d);
  std::string load_next =
      "    for (var q = 0u; q < GA; q = q + 1u) { let s = lid + q * NT; ra[q] = load_w4(gm0, m0 + s / (TK / 4u), k1 + 4u * (s % (TK / 4u))); }\n"
      "    for (var q = 0u; q < GB; q = q + 1u) { let s = lid + q * NT; rb[q] = gather(k1 + s / TX, " + gargs + "); }\n";
  std::string store_tiles =
      "    for (var q = 0u; q < GA; q = q + 1u) { let s = lid + q * NT; As[s / (TK / 4u)][s % (TK / 4u)] = ra[q]; }\n"
      "    for (var q = 0u; q < GB; q = q + 1u) { let s = lid + q * NT; Bs[s / TX][tx] = rb[q]; }\n";
  b += "  var ra: array<vec4<f32>, GA>;\n  var rb: array<vec4<f32>, GB>;\n";
  for (uint32_t i = 0; i < tl.rm; ++i) b += "  var acc" + std::to_string(i) + " = vec4<f32>(0.0);\n";
  b += "  var k1 = k_begin;\n"
       "  if (k1 < k_end) {\n" + load_next + "  }\n"
       "  for (var k0 = k_begin; k0 < k_end; k0 = k0 + TK) {\n" + store_tiles +
       "    workgroupBarrier();\n"
       "    k1 = k0 + TK;\n"
       "    if (k1 < k_end) {\n" + load_next + "    }\n"
       "    for (var kk = 0u; kk < TK / 4u; kk = kk + 1u) {\n"
       "      let b0 = Bs[kk * 4u][tx];\n"
       "      let b1 = Bs[kk * 4u + 1u][tx];\n"
       "      let b2 = Bs[kk * 4u + 2u][tx];\n"
       "      let b3 = Bs[kk * 4u + 3u][tx];\n";
  for (uint32_t i = 0; i < tl.rm; ++i) {
    std::string I = std::to_string(i), a = "a" + I, acc = "acc" + I;
    b += "      let " + a + " = As[ty * RM + " + u(i) + "][kk];\n"
         "      " + acc + " = fma(vec4<f32>(" + a + ".x), b0, fma(vec4<f32>(" + a + ".y), b1, fma(vec4<f32>(" + a +
         ".z), b2, fma(vec4<f32>(" + a + ".w), b3, " + acc + "))));\n";
  }
  b += "    }\n"
       "    workgroupBarrier();\n"
       "  }\n";
  for (uint32_t i = 0; i < tl.rm; ++i) {
    std::string I = std::to_string(i);
    b += "  if (m0 + ty * RM + " + u(i) + " < mg()) {\n    let m = gm0 + m0 + ty * RM + " + u(i) + ";\n";
    if (g.pooled() && !split) {
      for (uint32_t j0 = 0; j0 < 4; j0 += uint32_t(g.taps)) {
        auto value = [&](uint32_t j) {
          std::string J = std::to_string(j);
          return "post(m, cn[" + J + "], csp[" + J + "], acc" + I + "[" + J + "])";
        };
        std::string J0 = std::to_string(j0);
        b += "    if (cok[" + J0 + "]) {\n      var r = " + value(j0) + ";\n";
        for (uint32_t j = j0 + 1; j < j0 + g.taps; ++j) b += "      r = pool_add(r, " + value(j) + ");\n";
        b += "      pool_put(m, cn[" + J0 + "], cps[" + J0 + "], r);\n    }\n";
      }
    } else {
      for (uint32_t j = 0; j < 4; ++j) {
        std::string J = std::to_string(j), v = "acc" + I + "[" + J + "]";
        b += "    if (cok[" + J + "]) { " +
             (split ? "part_store(((wid.z % splits()) * mtot() + m) * cols() + n0 + 4u * tx + " + u(j) + ", " + v + ");"
                    : "put(m, cn[" + J + "], csp[" + J + "], " + v + ");") +
             " }\n";
      }
    }
    b += "  }\n";
  }
  return b;
}

// Returns false, having emitted nothing, when the grid does not fit the device.
bool conv_gemm(GpuKernelContext& ctx, const ConvGeom& g, const ConvEpilogue& ep, const ConvTile& tl) {
  uint64_t gx = (uint64_t(g.cols) + tl.tn - 1) / tl.tn, gy = (uint64_t(g.Mg) + tl.tm - 1) / tl.tm;
  uint64_t max_dim = ctx.limits.max_compute_workgroups_per_dimension ? ctx.limits.max_compute_workgroups_per_dimension : 65535;
  if (gx > max_dim || gy > max_dim || uint64_t(g.group) > max_dim) return false;
  if (g.K + tl.tk >= (int64_t(1) << 20)) return false;  // the gather's f32 divisions (gather_decl)
  if (g.pooled() && 4 % g.taps != 0) return false;       // an invocation's 4 columns: whole windows
  uint32_t splits = choose_splits(gx * gy * uint64_t(g.group), g.K, tl);
  uint32_t kchunk = uint32_t(g.K);
  if (splits > 1) {
    kchunk = uint32_t(((g.K + splits - 1) / splits + tl.tk - 1) / tl.tk * tl.tk);
    splits = uint32_t((g.K + kchunk - 1) / kchunk);
  }
  if (uint64_t(g.group) * splits > max_dim || uint64_t(g.M) * uint64_t(g.cols) * splits >= (uint64_t(1) << 32)) {
    splits = 1;
    kchunk = uint32_t(g.K);
  }
  bool split = splits > 1;
  DType t = ctx.dtype(0);
  // W read a vec4 at a time (one 16-byte load for 4 consecutive k of a row, matmul.h's VecLoads): float32
  // weights whose rows (K = a group's input channels x the kernel's taps) are whole vec4s. Row m of W
  // then starts at m * K, a multiple of 4; every quad starts at a k that is one too (the K range and
  // its split parts start at multiples of TK), and lies wholly inside the row or wholly past its end.
  const bool w_vec = products::vec_loads().a && ctx.dtype(1) == DType::Float32 && g.K > 0 && g.K % 4 == 0;
  auto p = ctx.program("gemm" + std::to_string(g.r) + "d" + (g.pointwise ? "_pointwise" : "") + (w_vec ? "_vw" : "") +
                           "_" + tl.name() + (split ? "_split" + ep.pool_tag() : ep.tag()),
                       tl.threads());
  p.input("x", t, ctx.shape(0));
  p.input("w", ctx.dtype(1), ctx.shape(1));
  if (w_vec) p.vec4(1);
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1)};
  Shape part_shape{int64_t(splits) * g.M * g.cols};
  ValueRef part{};
  if (split) {
    part = ctx.temp(DType::Float32, part_shape);
    p.output("part", DType::Float32, part_shape);
    binds.push_back(part);
    p.uniform("out_sz", uint32_t(g.out_sz));
    if (g.pooled()) ep.declare_pool(p);  // (the columns' enumeration)
  } else {
    ep.declare(p, binds);
  }
  p.uniform("mg", uint32_t(g.Mg));
  p.uniform("mtot", uint32_t(g.M));
  p.uniform("kdim", uint32_t(g.K));
  p.uniform("cols", uint32_t(g.cols));
  p.uniform("splits", splits);
  p.uniform("kchunk", kchunk);
  spatial_uniforms(p, g);
  convutil::int_array(p, "out_dim", g.win.out);  // (y is not declared when the K range is split)
  p.uniform_f32("inv_k", 1.0f / float(g.k_sz));
  for (size_t d = 1; d < g.r; ++d) p.uniform_f32("inv_k" + std::to_string(d), 1.0f / float(g.win.kernel[d]));
  // W's row gm0 + m (of the group's), 4 consecutive k; 0 outside.
  const std::string w_loads =
      w_vec ? "fn load_w4(gm0: u32, m: u32, k: u32) -> vec4<f32> {\n"
              "  let inside = m < mg() && k < kdim();\n"
              "  return select(vec4<f32>(0.0), w_load4(select(0u, ((gm0 + m) * kdim() + k) / 4u, inside)), inside);\n}\n"
            : "fn load_w(gm0: u32, m: u32, k: u32) -> f32 {\n"
              "  let inside = m < mg() && k < kdim();\n"
              "  return select(0.0, to_f32_$w(w_load(select(0u, (gm0 + m) * kdim() + k, inside))), inside);\n}\n"
              "fn load_w4(gm0: u32, m: u32, k: u32) -> vec4<f32> {\n"
              "  return vec4<f32>(load_w(gm0, m, k), load_w(gm0, m, k + 1u), load_w(gm0, m, k + 2u), load_w(gm0, m, k + 3u));\n}\n";
  auto u = [](uint64_t v) { return u32_lit(v); };
  p.declare("const TM: u32 = " + u(tl.tm) + ";\nconst TN: u32 = " + u(tl.tn) + ";\nconst TK: u32 = " + u(tl.tk) +
            ";\nconst RM: u32 = " + u(tl.rm) + ";\nconst NT: u32 = " + u(tl.threads()) + ";\nconst TX: u32 = " + u(tl.tx()) +
            ";\nconst GA: u32 = " + u(tl.a_share()) + ";\nconst GB: u32 = " + u(tl.b_share()) + ";\n"
            "const AS: u32 = TK / 4u + 1u;  // vec4s per row of the W tile (one of padding)\n"
            "const BS: u32 = TN / 4u + 1u;  // vec4s per row of the X̂ tile\n"
            // Arrays of rows, as the product kernel's (matmul.cpp, tiled_decls): the K loop's clamps leave the loop.
            "var<workgroup> As: array<array<vec4<f32>, AS>, TM>;  // As[m][k-quad]\n"
            "var<workgroup> Bs: array<array<vec4<f32>, BS>, TK>;  // Bs[k][col-quad]\n" + w_loads +
            gather_decl(g));
  p.body(gemm_body(g, tl, split));
  ctx.dispatch(p, binds, uint32_t(gx), uint32_t(gy), uint32_t(uint64_t(g.group) * splits));
  if (!split) return true;
  // The parts' sum, one invocation per output element, through the epilogue.
  auto s = ctx.program("gemm_sum" + ep.tag());
  s.input("part", DType::Float32, part_shape);
  std::vector<ValueRef> sb{part};
  ep.declare(s, sb);
  s.uniform("cols", uint32_t(g.cols));
  s.uniform("splits", splits);
  const std::string sum =
      "  var acc = 0.0;\n"
      "  for (var k = 0u; k < splits(); k = k + 1u) { acc = acc + part_load((k * y_shape(1u) + m) * cols() + col); }\n";
  if (g.pooled()) {  // one invocation per pooled output: its window's columns (n, ps, wp)
    s.set_threads(uint64_t(shape_numel(g.pool_out)));
    s.body(ConvEpilogue::kPooledOutput + ep.over_window("  let col = (n * pool_sz() + ps) * PWIN + wp;\n" + sum));
  } else {
    s.set_threads(uint64_t(g.M) * uint64_t(g.cols));
    s.body("  let m = gi / cols();\n"
           "  let col = gi % cols();\n"
           "  let n = col / out_sz();\n"
           "  let sp = col % out_sz();\n" +
           ep.over_window(sum));
  }
  ctx.dispatch(s, sb);
  return true;
}

// ------------------------------------------------------------------ depthwise (2-D, one input channel per group)

void conv_depthwise(GpuKernelContext& ctx, const ConvGeom& g, const ConvEpilogue& ep) {
  DType t = ctx.dtype(0);
  auto p = ctx.program("depthwise2d" + ep.tag());
  p.input("x", t, ctx.shape(0));
  p.input("w", ctx.dtype(1), ctx.shape(1));
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1)};
  ep.declare(p, binds);
  p.uniform("mg", uint32_t(g.Mg));
  spatial_uniforms(p, g);
  p.set_threads(uint64_t(shape_numel(g.y())));
  // Padding reads as zeros that multiply the weights (0 * inf is NaN, as ONNX defines it).
  std::string core =
      "  let xb = (n * x_shape(1u) + m / mg()) * in_sz();\n"
      "  let wb = m * k_sz();\n"
      "  let ih0 = i32(oh) * bitcast<i32>(stride(0u)) - bitcast<i32>(pad(0u));\n"
      "  let iw0 = i32(ow) * bitcast<i32>(stride(1u)) - bitcast<i32>(pad(1u));\n"
      "  let ih_n = i32(x_shape(2u));\n"
      "  let iw_n = i32(x_shape(3u));\n"
      "  let kw_n = w_shape(3u);\n"
      "  var acc = 0.0;\n"
      "  for (var kh = 0u; kh < w_shape(2u); kh = kh + 1u) {\n"
      "    let ih = ih0 + i32(kh) * bitcast<i32>(dil(0u));\n"
      "    let row_ok = ih >= 0i && ih < ih_n;\n"
      "    let row = xb + u32(select(0i, ih, row_ok)) * u32(iw_n);\n"
      "    for (var kw = 0u; kw < kw_n; kw = kw + 1u) {\n"
      "      let iw = iw0 + i32(kw) * bitcast<i32>(dil(1u));\n"
      "      let ok = row_ok && iw >= 0i && iw < iw_n;\n"
      "      let xv = select(0.0, to_f32_$x(x_load(select(0u, row + u32(iw), ok))), ok);\n"
      "      acc = fma(xv, to_f32_$w(w_load(wb + kh * kw_n + kw)), acc);\n"
      "    }\n"
      "  }\n";
  if (g.pooled())  // one invocation per pooled output, over its window's taps
    p.body(ConvEpilogue::kPooledOutput + ep.over_window("  let oh = sp / conv_w();\n  let ow = sp % conv_w();\n" + core));
  else
    p.body("  let ow = gi % y_shape(3u);\n"
           "  var t = gi / y_shape(3u);\n"
           "  let oh = t % y_shape(2u);\n"
           "  t = t / y_shape(2u);\n"
           "  let m = t % y_shape(1u);\n"
           "  let n = t / y_shape(1u);\n" +
           core + "  put(m, n, oh * y_shape(3u) + ow, acc);");
  ctx.dispatch(p, binds);
}

// ------------------------------------------------------------------ few input channels (first layers)

// A 2-D Conv of one group over at most kFewInMaxChannels input channels (an image model's first layer: 1,
// 3 or 4 channels, K = channels x taps at most kFewInMaxK): the implicit GEMM's K-slices of 16 would be
// mostly padding (K = 27 for a 3 x 3 over RGB), and each X̂ element it gathers serves only the tile's rows.
// Here each invocation computes one output position for a block of MB output channels: the block's
// weights staged once in workgroup memory as Ws[k][m-quad] (every invocation reads the same vec4: a
// broadcast), then per tap one load of X and MB / 4 vec4 multiply-adds. Neighbouring invocations take
// neighbouring positions (coalesced loads and stores). Pooled, each invocation computes the taps of one
// pooled position in turn, the block's channels of each combined as they come (post, pool_add) and stored
// once. Returns false, having emitted nothing, when the shape is not one of these or the grid or the
// workgroup memory does not fit the device.
constexpr int64_t kFewInMaxChannels = 4, kFewInMaxK = 256;

bool conv_few_channels(GpuKernelContext& ctx, const ConvGeom& g, const ConvEpilogue& ep) {
  if (g.r != 2 || g.group != 1 || g.Cg > kFewInMaxChannels || g.K > kFewInMaxK || g.Mg < 8) return false;
  constexpr uint32_t kThreads = 128;
  const uint32_t mem = ctx.limits.max_compute_workgroup_storage_size ? ctx.limits.max_compute_workgroup_storage_size : 16384;
  // MB: the output channels rounded up to a quad, at most 64, halved until the block's weights fit.
  uint32_t mb = std::min<uint32_t>(64, uint32_t((g.Mg + 3) / 4 * 4));
  while (mb > 8 && uint64_t(g.K) * mb * 4 > std::min<uint32_t>(mem, 16384)) mb = mb / 2 / 4 * 4;
  if (uint64_t(g.K) * mb * 4 > mem) return false;
  const uint64_t positions = g.pooled() ? uint64_t(g.N * g.pool_sz) : uint64_t(g.cols);  // one per invocation
  const uint64_t gx = (positions + kThreads - 1) / kThreads, gy = (uint64_t(g.Mg) + mb - 1) / mb;
  const uint64_t max_dim = ctx.limits.max_compute_workgroups_per_dimension ? ctx.limits.max_compute_workgroups_per_dimension : 65535;
  if (gx > max_dim || gy > max_dim) return false;
  auto u = [](uint64_t v) { return u32_lit(v); };
  const uint32_t mq = mb / 4;
  // The block's constants are in the text: the program's name tells them apart.
  auto p = ctx.program("fewin2d_k" + std::to_string(g.K) + "_mb" + std::to_string(mb) + ep.tag(), kThreads);
  p.input("x", ctx.dtype(0), ctx.shape(0));
  p.input("w", ctx.dtype(1), ctx.shape(1));
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1)};
  ep.declare(p, binds);
  p.uniform("cols", uint32_t(positions));
  spatial_uniforms(p, g);
  std::string decl = "const NT: u32 = " + u(kThreads) + ";\nconst MB: u32 = " + u(mb) + ";\nconst MQ: u32 = " + u(mq) +
                     ";\nconst KD: u32 = " + u(uint64_t(g.K)) + ";\n"
                     "var<workgroup> Ws: array<array<vec4<f32>, MQ>, KD>;  // Ws[k][m-quad]: one clamp a tap, not one a load\n"
                     "fn wv(m: u32, k: u32) -> f32 {\n"
                     "  let inside = m < y_shape(1u);\n"
                     "  return select(0.0, to_f32_$w(w_load(select(0u, m * KD + k, inside))), inside);\n}\n";
  p.declare(decl);
  std::string body =
      "  let mb0 = wid.y * MB;\n"
      "  for (var i = lid; i < KD * MQ; i = i + NT) {\n"
      "    let k = i / MQ;\n"
      "    let m = mb0 + 4u * (i % MQ);\n"
      "    Ws[k][i % MQ] = vec4<f32>(wv(m, k), wv(m + 1u, k), wv(m + 2u, k), wv(m + 3u, k));\n"
      "  }\n"
      "  workgroupBarrier();\n"
      "  let col = wid.x * NT + lid;\n"
      "  let ok = col < cols();\n"
      "  let cc = select(0u, col, ok);\n";
  const std::string ow_n = g.pooled() ? "conv_w()" : "y_shape(3u)";  // the Conv's output width
  if (g.pooled()) {
    body += "  let n = cc / pool_sz();\n"
            "  let ps = cc % pool_sz();\n";
    for (uint32_t q = 0; q < mq; ++q) body += "  var pv" + std::to_string(q) + " = vec4<f32>(0.0);\n";
    body += "  for (var wp = 0u; wp < PWIN; wp = wp + 1u) {\n"
            "  let sp = pool_sp(ps, wp);\n";
  } else {
    body += "  let n = cc / out_sz();\n"
            "  let sp = cc % out_sz();\n";
  }
  body +=
      "  let ih0 = i32(sp / " + ow_n + ") * bitcast<i32>(stride(0u)) - bitcast<i32>(pad(0u));\n"
      "  let iw0 = i32(sp % " + ow_n + ") * bitcast<i32>(stride(1u)) - bitcast<i32>(pad(1u));\n"
      "  let ih_n = i32(x_shape(2u));\n"
      "  let iw_n = i32(x_shape(3u));\n";
  for (uint32_t q = 0; q < mq; ++q) body += "  var acc" + std::to_string(q) + " = vec4<f32>(0.0);\n";
  body +=
      "  var k = 0u;\n"
      "  for (var c = 0u; c < x_shape(1u); c = c + 1u) {\n"
      "    let plane = (n * x_shape(1u) + c) * in_sz();\n"
      "    for (var kh = 0u; kh < w_shape(2u); kh = kh + 1u) {\n"
      "      let ih = ih0 + i32(kh) * bitcast<i32>(dil(0u));\n"
      "      let row_ok = ok && ih >= 0i && ih < ih_n;\n"
      "      let row = plane + u32(select(0i, ih, row_ok)) * u32(iw_n);\n"
      "      for (var kw = 0u; kw < w_shape(3u); kw = kw + 1u) {\n"
      "        let iw = iw0 + i32(kw) * bitcast<i32>(dil(1u));\n"
      "        let inside = row_ok && iw >= 0i && iw < iw_n;\n"
      "        // Padding is a zero that multiplies the weights (0 * inf is NaN, as the other kernels).\n"
      "        let xv = vec4<f32>(select(0.0, to_f32_$x(x_load(select(0u, row + u32(iw), inside))), inside));\n";
  for (uint32_t q = 0; q < mq; ++q) {
    std::string Q = std::to_string(q);
    body += "        acc" + Q + " = fma(xv, Ws[k][" + u(q) + "], acc" + Q + ");\n";
  }
  body +=
      "        k = k + 1u;\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "  if (ok) {\n";
  for (uint32_t q = 0; q < mq; ++q)
    for (uint32_t j = 0; j < 4; ++j) {
      std::string m = "mb0 + " + u(4 * q + j), Q = std::to_string(q), J = std::to_string(j);
      if (g.pooled())
        body += "    if (" + m + " < y_shape(1u)) {\n"
                "      let pe = post(" + m + ", n, sp, acc" + Q + "[" + J + "]);\n"
                "      pv" + Q + "[" + J + "] = select(pool_add(pv" + Q + "[" + J + "], pe), pe, wp == 0u);\n"
                "    }\n";
      else
        body += "    if (" + m + " < y_shape(1u)) { put(" + m + ", n, sp, acc" + Q + "[" + J + "]); }\n";
    }
  body += "  }\n";
  if (g.pooled()) {
    body += "  }\n  if (ok) {\n";
    for (uint32_t q = 0; q < mq; ++q)
      for (uint32_t j = 0; j < 4; ++j) {
        std::string m = "mb0 + " + u(4 * q + j);
        body += "    if (" + m + " < y_shape(1u)) { pool_put(" + m + ", n, ps, pv" + std::to_string(q) + "[" + std::to_string(j) + "]); }\n";
      }
    body += "  }\n";
  }
  p.body(body);
  ctx.dispatch(p, binds, uint32_t(gx), uint32_t(gy), 1);
  return true;
}

// ------------------------------------------------------------------ direct (every other case; ConvInteger)

// The inputs of an integer convolution (ConvInteger's order by default; QLinearConv's with its scales,
// output zero point and bias, ops::QLinearConvInput).
struct IntegerInputs {
  size_t x = 0, w = 1, xz = 2, wz = 3;
  bool qlinear = false;
  static IntegerInputs qlinear_conv() {
    return {ops::kQx, ops::kQw, ops::kQxZero, ops::kQwZero, true};
  }
};

// One invocation per output element over its group's channels and the window. Float (`ints` null):
// through the epilogue (`ep`); integer (int8/uint8 X and W with optional zero points): exact int32
// accumulation, stored as int32 (ConvInteger) or requantized (QLinearConv: plus B, times x_scale *
// w_scale / y_scale in f32, rounded half to even, plus y_zero_point, saturated to y's type).
void conv_direct(GpuKernelContext& ctx, const Shape& out, const ops::Window& win, int64_t group, const IntegerInputs* ints,
                 const ConvEpilogue* ep) {
  const bool integer = ints != nullptr;
  const IntegerInputs io = integer ? *ints : IntegerInputs{};
  const bool qlinear = integer && io.qlinear;
  const Shape& xs = ctx.shape(io.x);
  const Shape& ws = ctx.shape(io.w);
  // The zero points and scales (omitted zero points: 0), each a uniform or a buffer (QuantParam).
  const bool has_xz = integer && ctx.has_input(io.xz), has_wz = integer && ctx.has_input(io.wz);
  const bool has_b = qlinear && ctx.has_input(ops::kQBias);
  auto param = [&](bool used, size_t i) { return used ? QuantParam::of(ctx, i) : QuantParam{}; };
  const QuantParam xz = param(has_xz, io.xz), wz = param(has_wz, io.wz), xsc = param(qlinear, ops::kQxScale),
                   wsc = param(qlinear, ops::kQwScale), ysc = param(qlinear, ops::kQyScale), yz = param(qlinear, ops::kQyZero);
  std::string params;
  if (has_xz) params += std::string("_xz") + xz.tag();
  if (has_wz) params += std::string("_wz") + wz.tag();
  if (qlinear) params += std::string("_s") + xsc.tag() + wsc.tag() + ysc.tag() + "_yz" + yz.tag() + (has_b ? "_b" : "");
  size_t r = xs.size() - 2;
  auto p = ctx.program(std::string(qlinear ? "qlinearconv" : integer ? "convinteger" : "conv") + std::to_string(r) + "d" +
                       (ep ? ep->tag() : "") + params);
  std::vector<ValueRef> binds;
  p.input("x", ctx.dtype(io.x), xs);
  binds.push_back(ctx.in(io.x));
  p.input("w", ctx.dtype(io.w), ws);
  binds.push_back(ctx.in(io.w));
  std::string xzv = "0i", wzv = "0i", xsv, wsv, ysv, yzv;
  if (has_xz) xzv = xz.bind(ctx, p, binds, "xz", io.xz, "0u", false);
  if (has_wz) wzv = wz.bind(ctx, p, binds, "wz", io.wz, "m", false);
  if (qlinear) {
    xsv = xsc.bind(ctx, p, binds, "xs", ops::kQxScale, "0u", true);
    wsv = wsc.bind(ctx, p, binds, "ws", ops::kQwScale, "m", true);
    ysv = ysc.bind(ctx, p, binds, "ys", ops::kQyScale, "0u", true);
    yzv = yz.bind(ctx, p, binds, "yz", ops::kQyZero, "0u", false);
    if (has_b) {
      p.input("b", ctx.dtype(ops::kQBias), ctx.shape(ops::kQBias));
      binds.push_back(ctx.in(ops::kQBias));
    }
  }
  const DType yt = qlinear ? ctx.dtype(ops::kQyZero) : DType::Int32;
  const bool pooled = ep && ep->pooled();
  if (ep) {
    ep->declare(p, binds);
  } else {
    p.output("y", yt, out);
    binds.push_back(ctx.out(0));
    if (binds.size() + 1 > ctx.limits.max_storage_buffers_per_shader_stage)  // + the status words
      ctx.unsupported("more inputs than the device binds per dispatch");
    p.uniform("out_sz", uint32_t(shape_numel(win.out)));
  }
  p.uniform("groups", uint32_t(group));
  p.uniform("in_sz", uint32_t(shape_numel(Shape(xs.begin() + 2, xs.end()))));
  p.uniform("k_sz", uint32_t(shape_numel(Shape(ws.begin() + 2, ws.end()))));
  convutil::int_array(p, "stride", win.strides);
  convutil::int_array(p, "dil", win.dilations);
  convutil::int_array(p, "pad", win.pad_begin);
  p.set_threads(uint64_t(shape_numel(pooled ? ep->y() : out)));
  std::string R = std::to_string(r);
  std::string init, term, pad_term, store;
  if (integer) {
    init = "  var acc = " + std::string(has_b ? "b_load(m)" : "0i") + ";\n"
           "  let xzv = " + xzv + ";\n"
           "  let wzv = " + wzv + ";\n";
    term = "(i32(x_load(x0 + c * in_sz() + off)) - xzv) * (i32(w_load(w0 + c * k_sz() + ki)) - wzv)";
    if (qlinear) {
      store = "  let f = " + xsv + " * " + wsv + " / " + ysv + ";\n" + requantized_store(yt, "f32(acc) * f", yzv);
    } else {
      store = "  y_store(gi, acc);";
    }
  } else {
    init = "  var acc = 0.0;\n";
    term = "to_f32_$x(x_load(x0 + c * in_sz() + off)) * to_f32_$w(w_load(w0 + c * k_sz() + ki))";
    // Padding is zeros that multiply the weights (ONNX's definition; the other kernels load them): 0 * inf
    // and 0 * NaN are NaN. Tested on the bits: a shader compiler may fold 0.0 * w to 0.
    pad_term = "      for (var c = 0u; c < cg; c = c + 1u) {\n"
               "        let wb = bitcast<u32>(to_f32_$w(w_load(w0 + c * k_sz() + ki)));\n"
               "        if ((wb & 0x7f800000u) == 0x7f800000u) { acc = f32_nan(); }\n"
               "      }\n";
  }
  // Pooled (2-D), one invocation per pooled output, over its window's taps (ep->over_window).
  std::string head = std::string(pooled ? ConvEpilogue::kPooledOutput
                                        : "  let sp = gi % out_sz();\n"
                                          "  let nm = gi / out_sz();\n"
                                          "  let m = nm % y_shape(1u);\n"
                                          "  let n = nm / y_shape(1u);\n") +
                     "  let cg = w_shape(1u);\n"
                     "  let g = m / (y_shape(1u) / groups());\n";
  std::string core =
      (pooled ? "  var base: array<i32, 2>;\n"
                "  base[0] = i32(sp / conv_w()) * bitcast<i32>(stride(0u)) - bitcast<i32>(pad(0u));\n"
                "  base[1] = i32(sp % conv_w()) * bitcast<i32>(stride(1u)) - bitcast<i32>(pad(1u));\n"
              : split_spatial(r, "base", "od * bitcast<i32>(stride(u32(d))) - bitcast<i32>(pad(u32(d)))")) +
      "  let x0 = (n * x_shape(1u) + g * cg) * in_sz();\n"
      "  let w0 = m * cg * k_sz();\n"
      + init +
      "  for (var ki = 0u; ki < k_sz(); ki = ki + 1u) {\n"
      "    var kr = ki;\n"
      "    var off = 0u;\n"
      "    var inside = true;\n"
      "    for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
      "      let kd = i32(kr % w_shape(u32(d) + 2u));\n"
      "      kr = kr / w_shape(u32(d) + 2u);\n"
      "      let pd = base[d] + kd * bitcast<i32>(dil(u32(d)));\n"
      "      if (pd < 0i || pd >= i32(x_shape(u32(d) + 2u))) { inside = false; break; }\n"
      "      off = off + u32(pd) * x_stride(u32(d) + 2u);\n"
      "    }\n"
      "    if (!inside) {\n" + pad_term + "      continue;\n    }\n"
      "    for (var c = 0u; c < cg; c = c + 1u) {\n"
      "      acc = acc + " + term + ";\n"
      "    }\n"
      "  }\n";
  p.body(head + (integer ? core + store : ep->over_window(core)));
  ctx.dispatch(p, binds);
}

// A 1x1 kernel over 1x1 images without padding, of at most kGemvMaxRows images (a squeeze-excitation
// block's fully connected convolutions): Y [N, M] = X [N, C] @ W [M, C]^T, a product of a few rows that
// the GEMV kernel (gemv.cpp) computes at memory speed, with the bias and the expression (when it reads
// no tensor) in its epilogue. False, having emitted nothing, when it does not apply.
bool conv_as_gemv(GpuKernelContext& ctx, const ConvGeom& g, const ConvEpilogue& ep) {
  bool unpadded = std::all_of(g.win.pad_begin.begin(), g.win.pad_begin.end(), [](int64_t p) { return p == 0; });
  if (g.pooled() || g.group != 1 || g.in_sz != 1 || g.out_sz != 1 || g.k_sz != 1 || !unpadded || g.N > products::kGemvMaxRows ||
      ep.steps().num_inputs() != 0 || ctx.dtype(1) != ctx.dtype(0) || (ctx.has_input(2) && ctx.dtype(2) != ctx.dtype(0)))
    return false;
  products::Product pr;
  pr.M = uint32_t(g.N);
  pr.K = uint32_t(g.C);
  pr.N = uint32_t(g.M);
  pr.trans_b = true;
  pr.out = pr.stored = {g.N, g.M};
  products::Epilogue pe;
  if (ep.has_bias()) {
    pe.has_c = true;
    pe.c_sm = 0;
    pe.c_sn = 1;
  }
  if (!ep.steps().empty()) pe.act = ep.steps().wgsl(pe.act_decls) + "  return " + ep.steps().result() + ";\n";
  return products::gemv_float(ctx, ctx.dtype(0), pr, pe);
}

// Conv (float, optional bias B) and the fused Conv: the kernel the shape calls for.
void conv_float(GpuKernelContext& ctx) {
  ConvGeom g = float_geometry(ctx);
  ConvEpilogue ep(ctx, g);
  if (shape_numel(g.y()) == 0) return;
  auto emit = [&] {
    if (conv_few_channels(ctx, g, ep)) return;
    if (g.r == 2 && g.Cg == 1) {
      conv_depthwise(ctx, g, ep);
      return;
    }
    if (conv_as_gemv(ctx, g, ep)) return;
    if (g.Mg >= 8 && g.K > 0)
      if (std::optional<ConvTile> tl = choose_tile(ctx.limits, g))
        if (conv_gemm(ctx, g, ep, *tl)) return;
    conv_direct(ctx, g.out, g.win, g.group, nullptr, &ep);
  };
  emit();
  // A multiply-add per output computed (pooled: those the windows cover) and tap.
  ctx.count_flops(2 * uint64_t(g.M) * uint64_t(g.cols) * uint64_t(g.K));
}

// ConvInteger (int8/uint8 X and W with optional zero points, int32 Y) and QLinearConv (ops::
// check_qlinear_conv_inputs): the direct kernel with exact integer accumulation.
void conv_integer(GpuKernelContext& ctx, const IntegerInputs& io) {
  const Shape& xs = ctx.shape(io.x);
  const Shape& ws = ctx.shape(io.w);
  DType yt = DType::Int32;
  if (io.qlinear)
    yt = ops::check_qlinear_conv_inputs(ctx.operands(), ctx.fail_fn());
  else
    ops::check_conv_integer_inputs(ctx.operand(io.x), ctx.operand(io.w), ctx.operand(io.xz), ctx.operand(io.wz), ctx.fail_fn());
  int64_t group = get_group(ctx);
  ops::check_conv_shapes(xs, ws, group, -1, [&](const std::string& m) { ctx.fail(m); });
  Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  check_kernel_shape_attr(ctx, k_sp);
  ops::Window win = convutil::window(ctx, in_sp, k_sp, false);
  Shape out{xs[0], ws[0]};
  out.insert(out.end(), win.out.begin(), win.out.end());
  ctx.set_output(0, yt, out);
  convutil::check_i32(ctx, convutil::dims(xs), "input dim");
  convutil::check_i32(ctx, convutil::dims(out), "output dim");
  convutil::check_i32(ctx, win.strides, "stride");
  convutil::check_i32(ctx, win.dilations, "dilation");
  convutil::check_i32(ctx, win.pad_begin, "pad");
  if (shape_numel(out) == 0) return;
  conv_direct(ctx, out, win, group, &io, nullptr);
}

void conv_transpose(GpuKernelContext& ctx) {
  bool has_bias = check_inputs(ctx);
  const Shape& xs = ctx.shape(0);
  const Shape& ws = ctx.shape(1);
  DType t = ctx.dtype(0);
  const ir::Node& node = ctx.node;
  int64_t group = get_group(ctx);
  ops::check_conv_transpose_shapes(xs, ws, group, has_bias ? ctx.shape(2)[0] : -1, ctx.fail_fn());
  int64_t N = xs[0], Mg = ws[1], M = Mg * group;
  size_t r = xs.size() - 2;
  Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  check_kernel_shape_attr(ctx, k_sp);
  ops::ConvTransposeGeometry geo = ops::conv_transpose_geometry(node, in_sp, k_sp, [&](const std::string& m) { ctx.fail(m); });
  const std::vector<int64_t>&strides = geo.strides, &dil = geo.dilations, &pb = geo.pad_begin;
  const Shape& out_sp = geo.out;
  Shape out{N, M};
  out.insert(out.end(), out_sp.begin(), out_sp.end());
  ctx.set_output(0, t, out);
  convutil::check_i32(ctx, convutil::dims(xs), "input dim");
  convutil::check_i32(ctx, convutil::dims(out), "output dim");
  convutil::check_i32(ctx, strides, "stride");
  convutil::check_i32(ctx, dil, "dilation");
  convutil::check_i32(ctx, pb, "pad");

  std::vector<ValueRef> binds;
  auto p = float_program(ctx, "convtranspose" + std::to_string(r) + "d", has_bias, out, binds);
  p.uniform("groups", uint32_t(group));
  p.uniform("in_sz", uint32_t(shape_numel(in_sp)));
  p.uniform("k_sz", uint32_t(shape_numel(k_sp)));
  p.uniform("out_sz", uint32_t(shape_numel(out_sp)));
  convutil::int_array(p, "stride", strides);
  convutil::int_array(p, "dil", dil);
  convutil::int_array(p, "pad", pb);
  p.set_threads(uint64_t(shape_numel(out)));
  std::string R = std::to_string(r);
  // Output position q receives x[i] * w[k] where i * stride + k * dil - pad = q.
  std::string body =
      "  let sp = gi % out_sz();\n"
      "  let nm = gi / out_sz();\n"
      "  let m = nm % y_shape(1u);\n"
      "  let n = nm / y_shape(1u);\n"
      "  let mg_n = w_shape(1u);\n"
      "  let cg = x_shape(1u) / groups();\n"
      "  let g = m / mg_n;\n"
      "  let mg = m % mg_n;\n" +
      split_spatial(r, "q", "od + bitcast<i32>(pad(u32(d)))") +
      "  let x0 = (n * x_shape(1u) + g * cg) * in_sz();\n"
      "  let w0 = (g * cg * mg_n + mg) * k_sz();\n"
      "  let wc = mg_n * k_sz();\n"
      "  var acc = " + std::string(has_bias ? "to_f32_$b(b_load(m))" : "0.0") + ";\n"
      "  for (var ki = 0u; ki < k_sz(); ki = ki + 1u) {\n"
      "    var kr = ki;\n"
      "    var off = 0u;\n"
      "    var inside = true;\n"
      "    for (var d = " + R + "i - 1i; d >= 0i; d = d - 1i) {\n"
      "      let kd = i32(kr % w_shape(u32(d) + 2u));\n"
      "      kr = kr / w_shape(u32(d) + 2u);\n"
      "      let s = bitcast<i32>(stride(u32(d)));\n"
      "      let td = q[d] - kd * bitcast<i32>(dil(u32(d)));\n"
      "      if (td < 0i || td % s != 0i || td / s >= i32(x_shape(u32(d) + 2u))) { inside = false; break; }\n"
      "      off = off + u32(td / s) * x_stride(u32(d) + 2u);\n"
      "    }\n"
      "    if (!inside) { continue; }\n"
      "    for (var c = 0u; c < cg; c = c + 1u) {\n"
      "      acc = acc + to_f32_$x(x_load(x0 + c * in_sz() + off)) * to_f32_$w(w_load(w0 + c * wc + ki));\n"
      "    }\n"
      "  }\n"
      "  y_store(gi, from_f32_$y(acc));";
  p.body(body);
  ctx.dispatch(p, binds);
}

// Col2Im: one invocation per image pixel, summing the input elements of every block offset whose block
// covers it (ops::col2im_geometry); the geometry in uniform arrays, the spatial rank in the program.
void col2im(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (!dtype_is_float(t)) ctx.fail("input 'input' must be a float tensor, got " + std::string(dtype_name(t)));
  auto ints = [&](size_t i, const char* what) {
    const Tensor& v = ctx.constant(i, what);
    if (v.dtype() != DType::Int64 || v.rank() != 1) ctx.fail(std::string("input '") + what + "' must be 1-D int64, got " + v.describe());
    return v.to_int64_vector();
  };
  ops::Col2ImGeometry g = ops::col2im_geometry(ctx.node, ctx.shape(0), ints(1, "image_shape"), ints(2, "block_shape"), ctx.fail_fn());
  ctx.set_output(0, t, g.out);
  if (shape_numel(g.out) == 0) return;
  const size_t d = g.image.size();
  auto words = [](const std::vector<int64_t>& v) { return std::vector<uint32_t>(v.begin(), v.end()); };
  auto p = ctx.program("col2im" + std::to_string(d) + "d");
  p.input("x", t, ctx.shape(0));
  p.output("y", t, g.out);
  p.uniform_array("image", words(g.image));
  p.uniform_array("block", words(g.block));
  p.uniform_array("blocks", words(g.blocks));
  p.uniform_array("stride", words(g.strides));
  p.uniform_array("dil", words(g.dilations));
  p.uniform_array("pad", words(g.pad_begin));
  p.uniform("nk", uint32_t(shape_numel(g.block)));
  p.uniform("nl", uint32_t(shape_numel(g.blocks)));
  p.uniform("npix", uint32_t(shape_numel(g.image)));
  p.declare("const D: u32 = " + u32_lit(d) + ";\n");
  p.set_threads(uint64_t(shape_numel(g.out)));
  p.body("  let pix = gi % npix();\n"
         "  let nc = gi / npix();\n"
         "  var acc = 0.0;\n"
         "  for (var kj = 0u; kj < nk(); kj = kj + 1u) {\n"
         "    var rk = kj;\n"
         "    var rp = pix;\n"
         "    var l = 0u;\n"
         "    var lmul = 1u;\n"
         "    var ok = true;\n"
         "    for (var e = 0u; e < D; e = e + 1u) {\n"
         "      let k = D - 1u - e;\n"
         "      let j = rk % block(k);\n"
         "      rk = rk / block(k);\n"
         "      let xk = rp % image(k);\n"
         "      rp = rp / image(k);\n"
         "      let q = i32(xk) + i32(pad(k)) - i32(j * dil(k));\n"
         "      if (q < 0i || q % i32(stride(k)) != 0i || u32(q) / stride(k) >= blocks(k)) { ok = false; }\n"
         "      l = l + (u32(max(q, 0i)) / stride(k)) * lmul;\n"
         "      lmul = lmul * blocks(k);\n"
         "    }\n"
         "    if (ok) { acc = acc + to_f32_$x(x_load((nc * nk() + kj) * nl() + l)); }\n"
         "  }\n"
         "  y_store(gi, from_f32_$y(acc));");
  ctx.dispatch(p, {ctx.in(0), ctx.out(0)});
}

// DeformConv (ops::deform_conv_geometry) as a GEMM per group with the columns sampled on the fly:
//   Y[n, g * Mg + m, p] = B[m] + sum_k W[g * Mg + m, k] * S[g, k, n * P + p],  k = (c, tap), P = oH * oW,
// S being the bilinear sample of X[n, g * Cg + c] at the tap's offset position, times the mask. Each workgroup
// computes DM output channels x DN columns; per slice of DK values of k it stages the weights and the samples
// in workgroup memory (each sample computed once for the DM channels that use it), then each invocation
// accumulates 4 x 4 outputs (rows ty + 8i, columns tx + 16j: neighbouring invocations read neighbouring words).
constexpr uint32_t kDeformRows = 32, kDeformCols = 64, kDeformDepth = 16, kDeformThreads = 128;
static_assert(kDeformThreads == 16 * 8 && kDeformRows == 8 * 4 && kDeformCols == 16 * 4,
              "the body's invocations are 16 columns x 8 rows, each computing 4 x 4 outputs");

void deform_conv(GpuKernelContext& ctx) {
  const ops::DeformConvGeometry g = ops::deform_conv_geometry(ctx.node, ctx.operands(), ctx.fail_fn());
  const DType t = ctx.dtype(0);
  ctx.set_output(0, t, g.out());
  if (shape_numel(g.out()) == 0) return;
  const int64_t Mg = g.M / g.group, cols = g.N * g.oh * g.ow;
  const uint64_t max_dim = ctx.limits.max_compute_workgroups_per_dimension ? ctx.limits.max_compute_workgroups_per_dimension : 65535;
  const uint64_t gx = uint64_t(cols + kDeformCols - 1) / kDeformCols, gy = uint64_t(Mg + kDeformRows - 1) / kDeformRows;
  if (gx > max_dim || gy > max_dim || uint64_t(g.group) > max_dim) ctx.unsupported("a DeformConv too large for the device's grid");
  for (const Shape& s : {ctx.shape(0), ctx.shape(1), ctx.shape(2), g.out()})
    if (uint64_t(shape_numel(s)) >= (uint64_t(1) << 32)) ctx.unsupported("tensors of 2^32 elements or more");
  auto p = ctx.program(std::string("deform_conv") + (g.has_bias ? "_b" : "") + (g.has_mask ? "_mask" : ""), kDeformThreads);
  p.input("x", t, ctx.shape(0));
  p.input("w", t, ctx.shape(1));
  p.input("o", t, ctx.shape(2));
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1), ctx.in(2)};
  if (g.has_bias) {
    p.input("b", t, ctx.shape(3));
    binds.push_back(ctx.in(3));
  }
  if (g.has_mask) {
    p.input("mk", t, ctx.shape(4));
    binds.push_back(ctx.in(4));
  }
  p.output("y", t, g.out());
  binds.push_back(ctx.out(0));
  auto u = [&](const char* name, int64_t v) { p.uniform(name, strided::u32_dim(ctx, v, name)); };
  u("C", g.C), u("H", g.H), u("W", g.W), u("M", g.M), u("OW", g.ow), u("PLANE", g.oh * g.ow), u("COLS", cols);
  u("CG", g.C / g.group), u("MG", Mg), u("COG", g.C / g.offset_group), u("KK", g.kh * g.kw), u("KW", g.kw);
  u("KD", g.C / g.group * g.kh * g.kw), u("TAPS", g.offset_group * g.kh * g.kw);
  u("SH", g.stride_h), u("SW", g.stride_w), u("DH", g.dil_h), u("DW", g.dil_w), u("PT", g.pad_top), u("PL", g.pad_left);
  p.declare(
      "const DM: u32 = " + u32_lit(kDeformRows) + ";\nconst DN: u32 = " + u32_lit(kDeformCols) + ";\nconst DK: u32 = " +
      u32_lit(kDeformDepth) + ";\nconst NT: u32 = " + u32_lit(kDeformThreads) + ";\n"
      "var<workgroup> Ws: array<array<f32, DK>, DM>;  // Ws[m][k]\n"
      "var<workgroup> Ss: array<array<f32, DN>, DK>;  // Ss[k][column]\n"
      // X's plane at `base` sampled at (h, w): four neighbours, each outside the plane reading 0.
      "fn at(base: u32, r: i32, c: i32) -> f32 {\n"
      "  let inside = r >= 0i && r < i32(H()) && c >= 0i && c < i32(W());\n"
      "  return select(0.0, to_f32_$x(x_load(base + u32(select(0i, r * i32(W()) + c, inside)))), inside);\n"
      "}\n"
      "fn sample(base: u32, h: f32, w: f32) -> f32 {\n"
      "  if (!(h > -1.0 && h < f32(H()) && w > -1.0 && w < f32(W()))) { return 0.0; }\n"
      "  let h0 = floor(h);\n"
      "  let w0 = floor(w);\n"
      "  let fh = h - h0;\n"
      "  let fw = w - w0;\n"
      "  let r = i32(h0);\n"
      "  let c = i32(w0);\n"
      "  return (1.0 - fh) * ((1.0 - fw) * at(base, r, c) + fw * at(base, r, c + 1i)) +\n"
      "         fh * ((1.0 - fw) * at(base, r + 1i, c) + fw * at(base, r + 1i, c + 1i));\n"
      "}\n"
      // S[grp, k, col]: 0 outside the GEMM.
      "fn column(grp: u32, k: u32, col: u32) -> f32 {\n"
      "  if (k >= KD() || col >= COLS()) { return 0.0; }\n"
      "  let c = k / KK();\n"
      "  let tap = k % KK();\n"
      "  let n = col / PLANE();\n"
      "  let pos = col % PLANE();\n"
      "  let ci = grp * CG() + c;\n"
      "  let t = (ci / COG()) * KK() + tap;\n"
      "  let at_off = (n * 2u * TAPS() + 2u * t) * PLANE() + pos;\n"
      "  let h = f32(i32((pos / OW()) * SH() + (tap / KW()) * DH()) - i32(PT())) + to_f32_$o(o_load(at_off));\n"
      "  let w = f32(i32((pos % OW()) * SW() + (tap % KW()) * DW()) - i32(PL())) + to_f32_$o(o_load(at_off + PLANE()));\n"
      "  let v = sample((n * C() + ci) * H() * W(), h, w);\n" +
      std::string(g.has_mask ? "  return v * to_f32_$mk(mk_load((n * TAPS() + t) * PLANE() + pos));\n" : "  return v;\n") +
      "}\n");
  p.body(std::string(
             "  let tx = lid % 16u;\n"
             "  let ty = lid / 16u;\n"
             "  let col0 = wid.x * DN;\n"
             "  let m0 = wid.y * DM;\n"
             "  let grp = wid.z;\n"
             "  var acc: array<array<f32, 4>, 4>;\n"
             "  for (var k0 = 0u; k0 < KD(); k0 = k0 + DK) {\n"
             "    for (var e = lid; e < DM * DK; e = e + NT) {\n"
             "      let m = m0 + e / DK;\n"
             "      let k = k0 + e % DK;\n"
             "      let inside = m < MG() && k < KD();\n"
             "      Ws[e / DK][e % DK] = select(0.0, to_f32_$w(w_load(select(0u, (grp * MG() + m) * KD() + k, inside))), inside);\n"
             "    }\n"
             "    for (var e = lid; e < DK * DN; e = e + NT) {\n"
             "      Ss[e / DN][e % DN] = column(grp, k0 + e / DN, col0 + e % DN);\n"
             "    }\n"
             "    workgroupBarrier();\n"
             "    for (var kk = 0u; kk < DK; kk = kk + 1u) {\n"
             "      for (var i = 0u; i < 4u; i = i + 1u) {\n"
             "        let a = Ws[ty + 8u * i][kk];\n"
             "        for (var j = 0u; j < 4u; j = j + 1u) { acc[i][j] = acc[i][j] + a * Ss[kk][tx + 16u * j]; }\n"
             "      }\n"
             "    }\n"
             "    workgroupBarrier();\n"
             "  }\n"
             "  for (var i = 0u; i < 4u; i = i + 1u) {\n"
             "    let m = m0 + ty + 8u * i;\n"
             "    if (m >= MG()) { continue; }\n"
             "    let oc = grp * MG() + m;\n") +
         (g.has_bias ? "    let bias = to_f32_$b(b_load(oc));\n" : "    let bias = 0.0;\n") +
         "    for (var j = 0u; j < 4u; j = j + 1u) {\n"
         "      let col = col0 + tx + 16u * j;\n"
         "      if (col < COLS()) { y_store(((col / PLANE()) * M() + oc) * PLANE() + col % PLANE(), from_f32_$y(acc[i][j] + bias)); }\n"
         "    }\n"
         "  }");
  ctx.dispatch(p, binds, uint32_t(gx), uint32_t(gy), uint32_t(g.group));
  ctx.count_flops(2 * uint64_t(g.M) * uint64_t(cols) * uint64_t(g.C / g.group * g.kh * g.kw));
}

}  // namespace

void register_conv(GpuKernelRegistry& r) {
  r.add("Col2Im", col2im);
  r.add("Conv", conv_float);
  r.add("DeformConv", deform_conv);
  r.add("ConvInteger", [](GpuKernelContext& ctx) { conv_integer(ctx, IntegerInputs{}); });
  r.add_fused("Conv", conv_float);
  r.add("ConvTranspose", conv_transpose);
  r.add("QLinearConv", [](GpuKernelContext& ctx) { conv_integer(ctx, IntegerInputs::qlinear_conv()); });
}

}  // namespace onnxgpu::webgpu
