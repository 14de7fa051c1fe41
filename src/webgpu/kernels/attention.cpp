// The fused attention (runtime/fusion.h): O = Softmax(e(Q K)) V in one kernel, for
// Q [.., Lq, D], K [.., D, Lk] (the score product's B operand, usually keys transposed), V [.., Lk, Dv],
// each read through strides (a Transpose folded in) and broadcast over the batch dims like MatMul's.
// e (optional) is the node's elementwise expression between the score product and the Softmax
// (scale, mask), read through FusedSteps (fused_steps.h): the score is its product p, and its
// inputs, broadcast to the scores' shape, are the node's inputs after Q, K and V.
//
// Each workgroup computes RQ query rows x DV output columns of one batch element. It walks the keys in
// blocks of BK: the scores of the block (Q and K staged in workgroup memory, DC of D at a time), the
// expression, then an online softmax (a running row maximum; what was summed before is rescaled when
// it grows) and the block's share of P V; the next stage's Q, K, V and mask values are loaded into
// registers while the current one computes. The softmax follows the Softmax kernel's rules: the maximum
// ignores NaN, a row whose maximum is infinite is not shifted (IEEE decides), NaN propagates.
// The scores never reach memory, and four dispatches (product, expression, Softmax, product) become one.
#include <algorithm>
#include <cstdlib>

#include "ops/broadcast.h"
#include "webgpu/kernels/fused_steps.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/reduce_util.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {

namespace {

using strided::Layout;

constexpr uint32_t kCols = 64;      // DV: output columns per workgroup (4 per lane)
constexpr size_t kOwnInputs = 3;    // Q, K and V; the expression's inputs follow

Shape broadcast_or_unsupported(const GpuKernelContext& ctx, const std::vector<Shape>& shapes, const char* what) {
  try {
    return ops::broadcast_shapes(shapes);
  } catch (const Error&) {
    ctx.unsupported(std::string(what) + " do not broadcast");
  }
}

// Q, K and V as the products read them (each permuted by its folded Transpose), and what follows.
struct Shapes {
  std::vector<int64_t> pq, pk, pv, py;  // the folded Transposes' perms (empty: none)
  Shape bq, bk, bv;                     // the batch dims of Q, K and V
  Shape batch;                          // Q's and K's broadcast: the scores' and the output's
  int64_t Lq = 0, D = 0, Lk = 0, Dv = 0;
  Shape out;     // [batch.., Lq, Dv]
  Shape stored;  // `out` as written (perm_y: the Transpose of the result folded in)
};

// Checks the operands: float32 Q, K and V of rank >= 2 whose inner dimensions meet, batch dims that
// broadcast (V's and the expression's inputs' never widening the scores), a Softmax over the keys.
Shapes check_shapes(const GpuKernelContext& ctx, const FusedSteps& steps) {
  if (ctx.num_inputs() < kOwnInputs) ctx.fail("the fused attention needs Q, K and V");
  if (ctx.num_inputs() != kOwnInputs + steps.num_inputs() || (!steps.empty() && steps.node_input(0) != kOwnInputs))
    ctx.fail("the fused attention reads Q, K, V and then its expression's inputs");
  for (size_t k = 0; k < kOwnInputs; ++k)
    if (ctx.dtype(k) != DType::Float32) ctx.unsupported("the fused attention is for float32");
  Shapes s;
  s.pq = ctx.node.attr_ints("perm_q");
  s.pk = ctx.node.attr_ints("perm_k");
  s.pv = ctx.node.attr_ints("perm_v");
  s.py = ctx.node.attr_ints("perm_y");
  Shape q = strided::permute_shape(ctx, ctx.shape(0), s.pq), k = strided::permute_shape(ctx, ctx.shape(1), s.pk),
        v = strided::permute_shape(ctx, ctx.shape(2), s.pv);
  if (q.size() < 2 || k.size() < 2 || v.size() < 2) ctx.unsupported("operands of rank < 2");
  s.Lq = q[q.size() - 2];
  s.D = q.back();
  s.Lk = k.back();
  s.Dv = v.back();
  if (k[k.size() - 2] != s.D || v[v.size() - 2] != s.Lk) ctx.unsupported("inner dimensions differ");
  s.bq.assign(q.begin(), q.end() - 2);
  s.bk.assign(k.begin(), k.end() - 2);
  s.bv.assign(v.begin(), v.end() - 2);
  s.batch = broadcast_or_unsupported(ctx, {s.bq, s.bk}, "the batch dims of Q and K");
  Shape scores = s.batch;
  scores.insert(scores.end(), {s.Lq, s.Lk});
  std::vector<Shape> all{scores};
  for (size_t x = 0; x < steps.num_inputs(); ++x) all.push_back(steps.input(x).shape);
  if (broadcast_or_unsupported(ctx, all, "the scores and the mask") != scores) ctx.unsupported("a mask wider than the scores");
  if (broadcast_or_unsupported(ctx, {s.batch, s.bv}, "the batch dims of the scores and V") != s.batch)
    ctx.unsupported("V broadcasts the batch");
  int64_t axis = ctx.node.attr_int("axis", -1), rank = int64_t(scores.size());
  if (axis < 0) axis += rank;
  if (axis != rank - 1) ctx.unsupported("a Softmax over another axis than the keys");
  s.out = s.batch;
  s.out.insert(s.out.end(), {s.Lq, s.Dv});
  s.stored = strided::permute_shape(ctx, s.out, s.py);
  return s;
}

// $ONNXGPU_ATTENTION_ROWS=8 and $ONNXGPU_ATTENTION_KEYS=64, read once: tile shapes for measuring.
struct TileKnobs {
  bool rows8 = false, keys64 = false;
};
const TileKnobs& tile_knobs() {
  static const TileKnobs knobs = [] {
    auto is = [](const char* name, const char* value) {
      const char* e = std::getenv(name);
      return e && std::string(e) == value;
    };
    return TileKnobs{is("ONNXGPU_ATTENTION_ROWS", "8"), is("ONNXGPU_ATTENTION_KEYS", "64")};
  }();
  return knobs;
}

// A workgroup's share: RQ query rows (16 invocations each), blocks of BK keys (BK / 16 scores per
// invocation), DC of D staged at a time.
struct Tile {
  uint32_t rows, keys, depth;
  uint32_t threads() const { return 16 * rows; }  // NT
  uint32_t scores() const { return keys / 16; }   // SC: scores per invocation and block
};

// RQ: 16 where the device allows 256 invocations (K and V staged once for more rows: faster on the
// H200 than 8), else 8. BK: 32 (64 was equal or slower there). DC: 64 where workgroup memory allows
// (one stage per key block for heads of up to 64), else 32; with 8 rows when 16 do not fit.
Tile choose_tile(const GpuKernelContext& ctx) {
  const Limits& lim = ctx.limits;
  uint32_t inv = lim.max_compute_invocations_per_workgroup ? lim.max_compute_invocations_per_workgroup : 256;
  uint32_t wx = lim.max_compute_workgroup_size_x ? lim.max_compute_workgroup_size_x : 256;
  uint32_t mem = lim.max_compute_workgroup_storage_size ? lim.max_compute_workgroup_storage_size : 16384;
  Tile t{std::min(inv, wx) >= 256 ? 16u : 8u, 32, 0};
  if (tile_knobs().rows8) t.rows = 8;
  if (tile_knobs().keys64) t.keys = 64;
  auto shared = [&](uint32_t dc) {
    return 4 * (t.rows * dc + dc * (t.keys + 1) + t.keys * kCols + t.rows * t.keys + 16 * t.rows);
  };
  if (shared(32) > mem) t.rows = 8;
  t.depth = shared(64) <= mem ? 64 : 32;
  if (t.threads() > inv || t.threads() > wx || shared(t.depth) > mem) ctx.unsupported("the device's workgroups are too small");
  return t;
}

struct Grid {
  uint64_t x, y, z;  // output column blocks, query row blocks, batch elements
};
Grid grid_of(const GpuKernelContext& ctx, const Shapes& s, const Tile& t) {
  Grid g{(uint64_t(s.Dv) + kCols - 1) / kCols, (uint64_t(s.Lq) + t.rows - 1) / t.rows, uint64_t(shape_numel(s.batch))};
  const Limits& lim = ctx.limits;
  uint64_t max_dim = lim.max_compute_workgroups_per_dimension ? lim.max_compute_workgroups_per_dimension : 65535;
  if (g.x > max_dim || g.y > max_dim || g.z > max_dim) ctx.unsupported("attention too large for the device's grid");
  return g;
}

// How the kernel reads each tensor: Q, K, V and the output through strides over the batch, and each
// expression input that is no constant scalar (those are literals) broadcast to the scores.
struct Layouts {
  Layout q, k, v, y;
  std::vector<Layout> x;  // by expression input
};
Layouts layouts_of(GpuKernelContext& ctx, const Shapes& s, const FusedSteps& steps) {
  Layouts l;
  l.q = strided::permuted(ctx, ctx.shape(0), s.pq, s.bq, s.batch);
  l.k = strided::permuted(ctx, ctx.shape(1), s.pk, s.bk, s.batch);
  l.v = strided::permuted(ctx, ctx.shape(2), s.pv, s.bv, s.batch);
  l.y = strided::written(ctx, s.out, s.py, s.batch);
  l.x.resize(steps.num_inputs());
  for (size_t x = 0; x < steps.num_inputs(); ++x)
    if (steps.literal(x).empty()) l.x[x] = strided::broadcast(ctx, steps.input(x).shape, s.batch);
  return l;
}

// The program's tensors (Q, K, V, the expression's tensor inputs, the output, each declared flat),
// its uniforms and layouts; returns the bindings, in the same order.
std::vector<ValueRef> declare_tensors(GpuKernelContext& ctx, shader::Program& p, const Shapes& s, const Layouts& l,
                                      const FusedSteps& steps) {
  p.input("q", DType::Float32, Shape{shape_numel(ctx.shape(0))});
  p.input("k", DType::Float32, Shape{shape_numel(ctx.shape(1))});
  p.input("v", DType::Float32, Shape{shape_numel(ctx.shape(2))});
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1), ctx.in(2)};
  for (size_t x = 0; x < steps.num_inputs(); ++x) {
    if (!steps.literal(x).empty()) continue;
    p.input(FusedSteps::input_name(x) + "_in", steps.input(x).dtype, Shape{shape_numel(steps.input(x).shape)});
    binds.push_back(ctx.in(steps.node_input(x)));
  }
  p.output("y", DType::Float32, Shape{shape_numel(s.stored)});
  binds.push_back(ctx.out(0));
  p.uniform("Lq", uint32_t(s.Lq));
  p.uniform("Lk", uint32_t(s.Lk));
  p.uniform("D", uint32_t(s.D));
  p.uniform("Dv", uint32_t(s.Dv));
  std::vector<std::pair<std::string, const Layout*>> layouts{{"q", &l.q}, {"k", &l.k}, {"v", &l.v}, {"y", &l.y}};
  for (size_t x = 0; x < steps.num_inputs(); ++x)
    if (steps.literal(x).empty()) layouts.emplace_back(FusedSteps::input_name(x), &l.x[x]);
  strided::declare(p, s.batch, layouts);
  return binds;
}

// The WGSL of the score: fn score(p, ok, x<k>...) applies the expression (x<k>: the expression's
// tensor inputs' values at that key), -inf past the last key; and the main loop's handling of those
// inputs, read a block ahead with the next keys and values.
struct ScoreWgsl {
  std::string fn;     // the helper functions the expression needs, then fn score
  std::string bases;  // each input's row offset for this invocation's query row
  std::string regs;   // its registers: this block's values (_a) and the next block's (_n)
  std::string load;   // loading the next block's values
  std::string next;   // the next block's values becoming this block's
  std::string args;   // score()'s arguments after ok
};
ScoreWgsl score_wgsl(const FusedSteps& steps) {
  ScoreWgsl w;
  std::string decls, head = "fn score(p: f32, ok: bool", body;
  for (size_t x = 0; x < steps.num_inputs(); ++x) {
    std::string n = FusedSteps::input_name(x);
    if (!steps.literal(x).empty()) {
      body += "  let " + n + " = " + steps.literal(x) + ";\n";
      continue;
    }
    std::string t = steps.input(x).dtype == DType::Bool ? "u32" : "f32";
    head += ", " + n + ": " + t;
    w.bases += "  let " + n + "_row = " + n + "_boff(z) + min(i, Lq() - 1u) * " + n + "_sr();\n";
    w.regs += "  var " + n + "_a: array<" + t + ", SC>;\n  var " + n + "_n: array<" + t + ", SC>;\n";
    w.load += "        for (var q = 0u; q < SC; q = q + 1u) {\n"
              "          let key = nj0 + lane + 16u * q;\n"
              "          " + n + "_n[q] = " + n + "_in_load(select(0u, " + n + "_row + key * " + n + "_sc(), key < Lk()));\n"
              "        }\n";
    w.next += "      " + n + "_a = " + n + "_n;\n";
    w.args += ", " + n + "_a[q]";
  }
  head += ") -> f32 {\n" + body;
  if (steps.empty()) {
    head += "  return select(-f32_inf(), p, ok);\n}\n";
  } else {
    head += steps.wgsl(decls);
    head += "  return select(-f32_inf(), " + steps.result() + ", ok);\n}\n";
  }
  w.fn = decls + head;
  return w;
}

// The tile's constants, workgroup arrays and element accessors. Tile loads: consecutive invocations
// read along the operand's contiguous axis.
std::string tile_decls(const Tile& t, const Layouts& l) {
  auto slot = [](bool along_cols, uint32_t rows, uint32_t cols) {
    return along_cols ? "vec2<u32>(g / " + u32_lit(cols) + ", g % " + u32_lit(cols) + ")"
                      : "vec2<u32>(g % " + u32_lit(rows) + ", g / " + u32_lit(rows) + ")";
  };
  return "const RQ: u32 = " + u32_lit(t.rows) + ";\nconst BK: u32 = " + u32_lit(t.keys) + ";\nconst DC: u32 = " +
         u32_lit(t.depth) + ";\nconst DV: u32 = " + u32_lit(kCols) + ";\nconst NT: u32 = " + u32_lit(t.threads()) +
         ";\nconst SC: u32 = " + u32_lit(t.scores()) + ";\n"
         "var<workgroup> Qs: array<f32, " + u32_lit(t.rows * t.depth) + ">;  // [row][d]\n"
         "const KS: u32 = BK + 1u;  // Ks's row stride (padded: a column of Ks is written at once)\n"
         "var<workgroup> Ks: array<f32, " + u32_lit(t.depth * (t.keys + 1)) + ">;  // [d][key]\n"
         "var<workgroup> Vs: array<f32, " + u32_lit(t.keys * kCols) + ">;  // [key][col]\n"
         "var<workgroup> Ps: array<f32, " + u32_lit(t.rows * t.keys) + ">;  // [row][key]\n"
         "var<workgroup> red: array<f32, " + u32_lit(t.threads()) + ">;\n"
         "fn fmax_nan(a: f32, b: f32) -> f32 { return select(a, b, b > a); }\n"
         "fn q_slot(g: u32) -> vec2<u32> { return " + slot(l.q.s_col == 1, t.rows, t.depth) + "; }\n"
         "fn k_slot(g: u32) -> vec2<u32> { return " + slot(l.k.s_col == 1, t.depth, t.keys) + "; }\n"
         "fn v_slot(g: u32) -> vec2<u32> { return " + slot(l.v.s_col == 1, t.keys, kCols) + "; }\n"
         "fn q_at(base: u32, i: u32, c: u32) -> f32 {\n"
         "  let ok = i < Lq() && c < D();\n"
         "  return select(0.0, q_load(select(0u, base + i * q_sr() + c * q_sc(), ok)), ok);\n}\n"
         "fn k_at(base: u32, c: u32, j: u32) -> f32 {\n"
         "  let ok = c < D() && j < Lk();\n"
         "  return select(0.0, k_load(select(0u, base + c * k_sr() + j * k_sc(), ok)), ok);\n}\n"
         "fn v_at(base: u32, j: u32, c: u32) -> f32 {\n"
         "  let ok = j < Lk() && c < Dv();\n"
         "  return select(0.0, v_load(select(0u, base + j * v_sr() + c * v_sc(), ok)), ok);\n}\n";
}

// `stmt` in a loop over the n values a stage moves per invocation (`$`, the loop index).
std::string looped(uint32_t n, const std::string& stmt) {
  std::string body = stmt;
  for (size_t at; (at = body.find('$')) != std::string::npos;) body.replace(at, 1, "t");
  return "      for (var t = 0u; t < " + u32_lit(n) + "; t = t + 1u) " + body + "\n";
}

// Values of Q, K and V each invocation moves per stage.
struct StageShare {
  uint32_t q, k, v;
};

// A stage is one DC-slice of D for one block of keys (a block's last stage also brings its values and
// the expression's inputs). Each stage's loads are issued into registers while the stage before it
// computes.
std::string load_stage_wgsl(const StageShare& n, const ScoreWgsl& score) {
  return "    {\n"
         "      let nj0 = (nst / nd) * BK;\n"
         "      let nd0 = (nst % nd) * DC;\n" +
         looped(n.q, "{ let s = q_slot(lid + $ * NT); rq[$] = q_at(qb, i0 + s.x, nd0 + s.y); }") +
         looped(n.k, "{ let s = k_slot(lid + $ * NT); rk[$] = k_at(kb, nd0 + s.x, nj0 + s.y); }") +
         "      if (nst % nd == nd - 1u) {\n" +
         looped(n.v, "{ let s = v_slot(lid + $ * NT); rv[$] = v_at(vb, nj0 + s.x, c0 + s.y); }") + score.load +
         "      }\n"
         "    }\n";
}

// A block's last stage: this invocation's scores of the block (keys lane + 16 q), the expression
// applied, and their maximum; then the online softmax's rescaling and the block's share of P V.
std::string block_softmax_wgsl(const Tile& t, const ScoreWgsl& score) {
  return "      var bmax = -f32_inf();\n"
         "      for (var q = 0u; q < SC; q = q + 1u) {\n"
         "        e[q] = score(sa[q], i < Lq() && j0 + lane + 16u * q < Lk()" + score.args + ");\n"
         "        bmax = fmax_nan(bmax, e[q]);\n"
         "      }\n"
         "      red[lid] = bmax;\n"
         "      workgroupBarrier();\n"
         "      var bm = -f32_inf();\n"
         "      for (var t = 0u; t < 16u; t = t + 1u) { bm = fmax_nan(bm, red[r * 16u + t]); }\n"
         "      let m_new = max(m, bm);\n"
         "      let old_shift = select(m, 0.0, abs(m) == f32_inf());\n"
         "      let shift = select(m_new, 0.0, abs(m_new) == f32_inf());\n"
         "      // What was summed with the old shift, rescaled (nothing was while the maximum was -inf).\n"
         "      let corr = select(exp(old_shift - shift), 0.0, m == -f32_inf() && m_new != -f32_inf());\n"
         "      m = m_new;\n"
         "      var psum = 0.0;\n" +
         looped(t.scores(), "{ let p = exp_shifted(e[$], shift); Ps[r * BK + lane + 16u * $] = p; psum = psum + p; }") +
         "      l = l * corr + psum;\n"
         "      acc = acc * corr;\n"
         "      workgroupBarrier();\n"
         "      for (var j = 0u; j < BK; j = j + 1u) {\n"
         "        let pj = Ps[r * BK + j];\n"
         "        let at = j * DV + lane;\n"
         "        acc = fma(vec4<f32>(pj), vec4<f32>(Vs[at], Vs[at + 16u], Vs[at + 32u], Vs[at + 48u]), acc);\n"
         "      }\n";
}

// The kernel's body: the stages in turn (staging, prefetching the next, accumulating the scores),
// then each row's sum and the output columns written.
std::string body_wgsl(const Tile& t, const ScoreWgsl& score) {
  StageShare n{t.rows * t.depth / t.threads(), t.depth * t.keys / t.threads(), t.keys * kCols / t.threads()};
  std::string load_stage = load_stage_wgsl(n, score);
  return "  let r = lid / 16u;\n"
         "  let lane = lid % 16u;\n"
         "  let z = wid.z;\n"
         "  let i0 = wid.y * RQ;\n"
         "  let c0 = wid.x * DV;\n"
         "  let i = i0 + r;\n"
         "  let qb = q_boff(z);\n"
         "  let kb = k_boff(z);\n"
         "  let vb = v_boff(z);\n" + score.bases +
         "  let nd = max((D() + DC - 1u) / DC, 1u);\n"
         "  let ns = ((Lk() + BK - 1u) / BK) * nd;\n" +
         "  var rq: array<f32, " + u32_lit(n.q) + ">;\n  var rk: array<f32, " + u32_lit(n.k) + ">;\n  var rv: array<f32, " +
         u32_lit(n.v) + ">;\n" + score.regs +
         "  var m = -f32_inf();\n"
         "  var l = 0.0;\n"
         "  var acc = vec4<f32>(0.0);\n"
         "  var sa: array<f32, SC>;\n  var e: array<f32, SC>;\n" +
         "  var nst = 0u;\n" + load_stage +
         "  for (var st = 0u; st < ns; st = st + 1u) {\n"
         "    let j0 = (st / nd) * BK;\n"
         "    let last = st % nd == nd - 1u;\n" +
         looped(n.q, "{ let s = q_slot(lid + $ * NT); Qs[s.x * DC + s.y] = rq[$]; }") +
         looped(n.k, "{ let s = k_slot(lid + $ * NT); Ks[s.x * KS + s.y] = rk[$]; }") +
         "    if (last) {\n" +
         looped(n.v, "{ let s = v_slot(lid + $ * NT); Vs[s.x * DV + s.y] = rv[$]; }") + score.next +
         "    }\n"
         "    workgroupBarrier();\n"
         "    nst = st + 1u;\n"
         "    if (nst < ns) {\n" + load_stage +
         "    }\n"
         "    if (st % nd == 0u) {\n" +
         looped(t.scores(), "{ sa[$] = 0.0; }") +
         "    }\n"
         "    for (var c = 0u; c < DC; c = c + 1u) {\n"
         "      let a = Qs[r * DC + c];\n" +
         looped(t.scores(), "{ sa[$] = fma(a, Ks[c * KS + lane + 16u * $], sa[$]); }") +
         "    }\n"
         "    if (last) {\n" + block_softmax_wgsl(t, score) +
         "    }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  red[lid] = l;\n"
         "  workgroupBarrier();\n"
         "  var sum = 0.0;\n"
         "  for (var t = 0u; t < 16u; t = t + 1u) { sum = sum + red[r * 16u + t]; }\n"
         "  if (i < Lq()) {\n"
         "    let yb = y_boff(z) + i * y_sr();\n"
         "    for (var t = 0u; t < 4u; t = t + 1u) {\n"
         "      let c = c0 + lane + 16u * t;\n"
         "      if (c < Dv()) { y_store(yb + c * y_sc(), acc[t] / sum); }\n"
         "    }\n"
         "  }\n";
}

void attention(GpuKernelContext& ctx) {
  FusedSteps steps(ctx);
  Shapes s = check_shapes(ctx, steps);
  ctx.set_output(0, DType::Float32, s.stored);
  if (shape_numel(s.out) == 0) return;
  if (s.Lk == 0) ctx.unsupported("no keys");  // (the nodes alone: a product over an empty axis)
  Tile t = choose_tile(ctx);
  Grid g = grid_of(ctx, s, t);
  size_t extras = steps.num_inputs();
  uint32_t most = ctx.limits.max_storage_buffers_per_shader_stage ? ctx.limits.max_storage_buffers_per_shader_stage : 8;
  if (kOwnInputs + extras + 2 > most) ctx.unsupported("more tensors than the device binds per dispatch");
  steps.check_input_types(false);
  Layouts l = layouts_of(ctx, s, steps);

  std::string name = "attention";
  for (const auto& [tag, lay] : {std::pair<const char*, const Layout*>{"q", &l.q}, {"k", &l.k}, {"v", &l.v}})
    name += std::string("_") + tag + (lay->s_col == 1 ? "r" : "c");
  auto p = ctx.program(name + "_x" + std::to_string(extras), t.threads());
  std::vector<ValueRef> binds = declare_tensors(ctx, p, s, l, steps);
  ScoreWgsl score = score_wgsl(steps);
  p.declare(tile_decls(t, l) + reduce_util::kExpLog + score.fn);
  p.body(body_wgsl(t, score));
  ctx.dispatch(p, binds, uint32_t(g.x), uint32_t(g.y), uint32_t(g.z));
}

}  // namespace

void register_attention(GpuKernelRegistry& r) { r.add_fused("Attention", attention); }

}  // namespace onnxgpu::webgpu
