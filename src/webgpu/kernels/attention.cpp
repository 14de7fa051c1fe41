// The fused attention (runtime/fusion.h): O = Softmax(steps(Q K)) V in one kernel, for
// Q [.., Lq, D], K [.., D, Lk] (the score product's B operand, usually keys transposed), V [.., Lk, Dv],
// each read through strides (a Transpose folded in) and broadcast over the batch dims like MatMul's.
// `steps` (optional) is the elementwise expression between the score product and the Softmax (scale,
// mask): operands p (the score), x<k> (input 3 + k, broadcast to the scores' shape) and t<m>.
//
// Each workgroup computes RQ query rows x DV output columns of one batch element. It walks the keys in
// blocks of BK: the scores of the block (Q and K staged in workgroup memory, DC of D at a time), the
// steps, then an online softmax (a running row maximum; what was summed before is rescaled when it
// grows) and the block's share of P V; the next stage's Q, K, V and mask values are loaded into
// registers while the current one computes. The softmax follows the Softmax kernel's rules: the maximum
// ignores NaN, a row whose maximum is infinite is not shifted (IEEE decides), NaN propagates.
// The scores never reach memory, and four dispatches (product, steps, Softmax, product) become one.
#include <algorithm>
#include <cstdlib>

#include "ops/broadcast.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/reduce_util.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {

namespace {

constexpr uint32_t kCols = 64;      // DV: output columns per workgroup (4 per lane)

Shape broadcast_or_unsupported(GpuKernelContext& ctx, const std::vector<Shape>& shapes, const char* what) {
  try {
    return ops::broadcast_shapes(shapes);
  } catch (const Error&) {
    ctx.unsupported(std::string(what) + " do not broadcast");
  }
}

void attention(GpuKernelContext& ctx) {
  if (ctx.num_inputs() < 3) ctx.fail("the fused attention needs Q, K and V");
  for (size_t k = 0; k < 3; ++k)
    if (ctx.dtype(k) != DType::Float32) ctx.unsupported("the fused attention is for float32");
  std::vector<int64_t> pq = ctx.node.attr_ints("perm_q"), pk = ctx.node.attr_ints("perm_k"),
                       pv = ctx.node.attr_ints("perm_v"), py = ctx.node.attr_ints("perm_y");
  Shape q = strided::permute_shape(ctx, ctx.shape(0), pq), k = strided::permute_shape(ctx, ctx.shape(1), pk),
        v = strided::permute_shape(ctx, ctx.shape(2), pv);
  if (q.size() < 2 || k.size() < 2 || v.size() < 2) ctx.unsupported("operands of rank < 2");
  int64_t Lq = q[q.size() - 2], D = q.back(), Lk = k.back(), Dv = v.back();
  if (k[k.size() - 2] != D || v[v.size() - 2] != Lk) ctx.unsupported("inner dimensions differ");
  Shape bq(q.begin(), q.end() - 2), bk(k.begin(), k.end() - 2), bv(v.begin(), v.end() - 2);
  Shape batch = broadcast_or_unsupported(ctx, {bq, bk}, "the batch dims of Q and K");
  Shape scores = batch;
  scores.insert(scores.end(), {Lq, Lk});
  // The steps' tensors broadcast to the scores and must not widen them; V's batch must not either.
  std::vector<Shape> all{scores};
  for (size_t x = 3; x < ctx.num_inputs(); ++x) all.push_back(ctx.shape(x));
  if (broadcast_or_unsupported(ctx, all, "the scores and the mask") != scores) ctx.unsupported("a mask wider than the scores");
  if (broadcast_or_unsupported(ctx, {batch, bv}, "the batch dims of the scores and V") != batch)
    ctx.unsupported("V broadcasts the batch");
  int64_t axis = ctx.node.attr_int("axis", -1), rank = int64_t(scores.size());
  if (axis < 0) axis += rank;
  if (axis != rank - 1) ctx.unsupported("a Softmax over another axis than the keys");
  Shape out = batch;
  out.insert(out.end(), {Lq, Dv});
  Shape stored = strided::permute_shape(ctx, out, py);
  ctx.set_output(0, DType::Float32, stored);
  if (shape_numel(out) == 0) return;
  if (Lk == 0) ctx.unsupported("no keys");  // (the nodes alone: a product over an empty axis)

  const Limits& lim = ctx.limits;
  uint32_t inv = lim.max_compute_invocations_per_workgroup ? lim.max_compute_invocations_per_workgroup : 256;
  uint32_t wx = lim.max_compute_workgroup_size_x ? lim.max_compute_workgroup_size_x : 256;
  uint32_t mem = lim.max_compute_workgroup_storage_size ? lim.max_compute_workgroup_storage_size : 16384;
  // RQ, the query rows per workgroup (16 invocations each): 16 where the device allows 256 invocations
  // (K and V staged once for more rows: faster on the H200 than 8), else 8; $ONNXGPU_ATTENTION_ROWS=8
  // for measuring 8. BK, the keys per block (BK / 16 scores per invocation): 32
  // ($ONNXGPU_ATTENTION_KEYS=64 for measuring 64; equal or slower there).
  uint32_t kRows = std::min(inv, wx) >= 256 ? 16 : 8, kKeys = 32;
  if (const char* e = std::getenv("ONNXGPU_ATTENTION_ROWS"); e && std::string(e) == "8") kRows = 8;
  if (const char* e = std::getenv("ONNXGPU_ATTENTION_KEYS"); e && std::string(e) == "64") kKeys = 64;
  auto shared = [&](uint32_t dc) {
    return 4 * (kRows * dc + dc * (kKeys + 1) + kKeys * kCols + kRows * kKeys + 16 * kRows);
  };
  // DC, the slice of D staged at a time: 64 where workgroup memory allows (one stage per key block for
  // heads of up to 64), else 32; with 8 rows when 16 do not fit.
  if (shared(32) > mem) kRows = 8;
  uint32_t kThreads = 16 * kRows, sc = kKeys / 16;
  uint32_t kDepth = shared(64) <= mem ? 64 : 32;
  if (kThreads > inv || kThreads > wx || shared(kDepth) > mem) ctx.unsupported("the device's workgroups are too small");
  uint64_t zs = uint64_t(shape_numel(batch));
  uint64_t gx = (uint64_t(Dv) + kCols - 1) / kCols, gy = (uint64_t(Lq) + kRows - 1) / kRows;
  uint64_t max_dim = lim.max_compute_workgroups_per_dimension ? lim.max_compute_workgroups_per_dimension : 65535;
  if (gx > max_dim || gy > max_dim || zs > max_dim) ctx.unsupported("attention too large for the device's grid");
  size_t extras = ctx.num_inputs() - 3;
  uint32_t most = lim.max_storage_buffers_per_shader_stage ? lim.max_storage_buffers_per_shader_stage : 8;
  if (3 + extras + 2 > most) ctx.unsupported("more tensors than the device binds per dispatch");

  using strided::Layout;
  Layout lq = strided::permuted(ctx, ctx.shape(0), pq, bq, batch);
  Layout lk = strided::permuted(ctx, ctx.shape(1), pk, bk, batch);
  Layout lv = strided::permuted(ctx, ctx.shape(2), pv, bv, batch);
  Layout ly = strided::written(ctx, out, py, batch);

  // The steps' operands: x<k> is input 3 + k; a constant scalar is written into the WGSL, a bool
  // tensor may only be a Where condition.
  const ir::Attribute* st = ctx.node.attr("steps");
  std::vector<std::string> steps = st ? st->strings : std::vector<std::string>{};
  auto extra_of = [&](const std::string& operand) -> std::optional<size_t> {
    if (operand.size() < 2 || operand[0] != 'x') return std::nullopt;
    size_t x = size_t(std::stoul(operand.substr(1)));
    if (x >= extras) ctx.fail("step operand " + operand + " names no input");
    return x;
  };
  std::vector<bool> condition_only(extras, true);
  for (const auto& text : steps) {
    FusedStep s = parse_fused_step(text);
    for (size_t a = 0; a < s.args.size(); ++a)
      if (auto x = extra_of(s.args[a]); x && !(s.op == "Where" && a == 0)) condition_only[*x] = false;
  }
  std::vector<std::string> literal(extras);
  std::vector<Layout> lx(extras);
  for (size_t x = 0; x < extras; ++x) {
    const GpuValueInfo& in = ctx.input(3 + x);
    bool cond = in.dtype == DType::Bool && condition_only[x];
    if (in.dtype != DType::Float32 && !cond)
      ctx.unsupported("step input " + std::to_string(x) + " is " + std::string(dtype_name(in.dtype)));
    if (in.constant && shape_numel(in.shape) == 1)
      literal[x] = cond ? (in.constant->double_at(0) != 0 ? "1u" : "0u") : f32_lit(float(in.constant->double_at(0)));
    else
      lx[x] = strided::broadcast(ctx, in.shape, batch);
  }

  std::string name = "attention";
  for (const auto& [tag, l] : {std::pair<const char*, const Layout*>{"q", &lq}, {"k", &lk}, {"v", &lv}})
    name += std::string("_") + tag + (l->s_col == 1 ? "r" : "c");
  auto p = ctx.program(name + "_x" + std::to_string(extras), kThreads);
  p.input("q", DType::Float32, Shape{shape_numel(ctx.shape(0))});
  p.input("k", DType::Float32, Shape{shape_numel(ctx.shape(1))});
  p.input("v", DType::Float32, Shape{shape_numel(ctx.shape(2))});
  std::vector<ValueRef> binds{ctx.in(0), ctx.in(1), ctx.in(2)};
  for (size_t x = 0; x < extras; ++x) {
    if (!literal[x].empty()) continue;
    p.input("x" + std::to_string(x) + "_in", ctx.dtype(3 + x), Shape{shape_numel(ctx.shape(3 + x))});
    binds.push_back(ctx.in(3 + x));
  }
  p.output("y", DType::Float32, Shape{shape_numel(stored)});
  binds.push_back(ctx.out(0));
  p.uniform("Lq", uint32_t(Lq));
  p.uniform("Lk", uint32_t(Lk));
  p.uniform("D", uint32_t(D));
  p.uniform("Dv", uint32_t(Dv));
  std::vector<std::pair<std::string, const Layout*>> layouts{{"q", &lq}, {"k", &lk}, {"v", &lv}, {"y", &ly}};
  for (size_t x = 0; x < extras; ++x)
    if (literal[x].empty()) layouts.emplace_back("x" + std::to_string(x), &lx[x]);
  strided::declare(p, batch, layouts);

  // The score of this invocation's row and key: the steps applied (x<k>: the extras' values at that
  // key), -inf past the last key. The extras are read a block ahead, with the next keys and values.
  std::string decls, bases, xregs, xload, xnext, xargs;
  std::string score = "fn score(p: f32, ok: bool";
  std::string score_body;
  for (size_t x = 0; x < extras; ++x) {
    std::string n = "x" + std::to_string(x);
    if (!literal[x].empty()) {
      score_body += "  let " + n + " = " + literal[x] + ";\n";
      continue;
    }
    std::string t = ctx.dtype(3 + x) == DType::Bool ? "u32" : "f32";
    score += ", " + n + ": " + t;
    bases += "  let " + n + "_row = " + n + "_boff(z) + min(i, Lq() - 1u) * " + n + "_sr();\n";
    xregs += "  var " + n + "_a: array<" + t + ", SC>;\n  var " + n + "_n: array<" + t + ", SC>;\n";
    xload += "        for (var q = 0u; q < SC; q = q + 1u) {\n"
             "          let key = nj0 + lane + 16u * q;\n"
             "          " + n + "_n[q] = " + n + "_in_load(select(0u, " + n + "_row + key * " + n + "_sc(), key < Lk()));\n"
             "        }\n";
    xnext += "      " + n + "_a = " + n + "_n;\n";
    xargs += ", " + n + "_a[q]";
  }
  score += ") -> f32 {\n" + score_body;
  if (steps.empty()) {
    score += "  return select(-f32_inf(), p, ok);\n}\n";
  } else {
    score += fused_steps_wgsl(
        ctx, steps,
        [&](const std::string& operand) -> std::optional<double> {
          auto x = extra_of(operand);
          if (!x || literal[*x].empty()) return std::nullopt;
          return ctx.input(3 + *x).constant->double_at(0);
        },
        [&](const std::string& operand) {
          auto x = extra_of(operand);
          return x && condition_only[*x];
        },
        decls);
    score += "  return select(-f32_inf(), t" + std::to_string(steps.size() - 1) + ", ok);\n}\n";
  }
  // Tile loads: consecutive invocations read along the operand's contiguous axis.
  auto slot = [](bool along_cols, uint32_t rows, uint32_t cols) {
    return along_cols ? "vec2<u32>(g / " + u32_lit(cols) + ", g % " + u32_lit(cols) + ")"
                      : "vec2<u32>(g % " + u32_lit(rows) + ", g / " + u32_lit(rows) + ")";
  };
  std::string d =
      "const RQ: u32 = " + u32_lit(kRows) + ";\nconst BK: u32 = " + u32_lit(kKeys) + ";\nconst DC: u32 = " + u32_lit(kDepth) +
      ";\nconst DV: u32 = " + u32_lit(kCols) + ";\nconst NT: u32 = " + u32_lit(kThreads) + ";\nconst SC: u32 = " + u32_lit(sc) + ";\n"
      "var<workgroup> Qs: array<f32, " + u32_lit(kRows * kDepth) + ">;  // [row][d]\n"
      "const KS: u32 = BK + 1u;  // Ks's row stride (padded: a column of Ks is written at once)\n"
      "var<workgroup> Ks: array<f32, " + u32_lit(kDepth * (kKeys + 1)) + ">;  // [d][key]\n"
      "var<workgroup> Vs: array<f32, " + u32_lit(kKeys * kCols) + ">;  // [key][col]\n"
      "var<workgroup> Ps: array<f32, " + u32_lit(kRows * kKeys) + ">;  // [row][key]\n"
      "var<workgroup> red: array<f32, " + u32_lit(kThreads) + ">;\n"
      "fn fmax_nan(a: f32, b: f32) -> f32 { return select(a, b, b > a); }\n"
      "fn q_slot(g: u32) -> vec2<u32> { return " + slot(lq.s_col == 1, kRows, kDepth) + "; }\n"
      "fn k_slot(g: u32) -> vec2<u32> { return " + slot(lk.s_col == 1, kDepth, kKeys) + "; }\n"
      "fn v_slot(g: u32) -> vec2<u32> { return " + slot(lv.s_col == 1, kKeys, kCols) + "; }\n"
      "fn q_at(base: u32, i: u32, c: u32) -> f32 {\n"
      "  let ok = i < Lq() && c < D();\n"
      "  return select(0.0, q_load(select(0u, base + i * q_sr() + c * q_sc(), ok)), ok);\n}\n"
      "fn k_at(base: u32, c: u32, j: u32) -> f32 {\n"
      "  let ok = c < D() && j < Lk();\n"
      "  return select(0.0, k_load(select(0u, base + c * k_sr() + j * k_sc(), ok)), ok);\n}\n"
      "fn v_at(base: u32, j: u32, c: u32) -> f32 {\n"
      "  let ok = j < Lk() && c < Dv();\n"
      "  return select(0.0, v_load(select(0u, base + j * v_sr() + c * v_sc(), ok)), ok);\n}\n";
  p.declare(d + reduce_util::kExpLog + decls + score);
  // Values a stage moves per invocation; `stmt` in a loop over them (`$`, the loop index).
  uint32_t qn = kRows * kDepth / kThreads, kn = kDepth * kKeys / kThreads, vn = kKeys * kCols / kThreads;
  auto looped = [](uint32_t n, const std::string& stmt) {
    std::string body = stmt;
    for (size_t at; (at = body.find('$')) != std::string::npos;) body.replace(at, 1, "t");
    return "      for (var t = 0u; t < " + u32_lit(n) + "; t = t + 1u) " + body + "\n";
  };
  // This invocation's scores of the block (keys lane + 16 q), the steps applied, and their maximum.
  std::string block_scores =
      "      var bmax = -f32_inf();\n"
      "      for (var q = 0u; q < SC; q = q + 1u) {\n"
      "        e[q] = score(sa[q], i < Lq() && j0 + lane + 16u * q < Lk()" + xargs + ");\n"
      "        bmax = fmax_nan(bmax, e[q]);\n"
      "      }\n";
  // A stage is one DC-slice of D for one block of keys (a block's last stage also brings its values and
  // mask). Each stage's loads are issued into registers while the stage before it computes.
  std::string load_stage =
      "    {\n"
      "      let nj0 = (nst / nd) * BK;\n"
      "      let nd0 = (nst % nd) * DC;\n" +
      looped(qn, "{ let s = q_slot(lid + $ * NT); rq[$] = q_at(qb, i0 + s.x, nd0 + s.y); }") +
      looped(kn, "{ let s = k_slot(lid + $ * NT); rk[$] = k_at(kb, nd0 + s.x, nj0 + s.y); }") +
      "      if (nst % nd == nd - 1u) {\n" +
      looped(vn, "{ let s = v_slot(lid + $ * NT); rv[$] = v_at(vb, nj0 + s.x, c0 + s.y); }") +
      xload +
      "      }\n"
      "    }\n";
  p.body(
      "  let r = lid / 16u;\n"
      "  let lane = lid % 16u;\n"
      "  let z = wid.z;\n"
      "  let i0 = wid.y * RQ;\n"
      "  let c0 = wid.x * DV;\n"
      "  let i = i0 + r;\n"
      "  let qb = q_boff(z);\n"
      "  let kb = k_boff(z);\n"
      "  let vb = v_boff(z);\n" + bases +
      "  let nd = max((D() + DC - 1u) / DC, 1u);\n"
      "  let ns = ((Lk() + BK - 1u) / BK) * nd;\n" +
      "  var rq: array<f32, " + u32_lit(qn) + ">;\n  var rk: array<f32, " + u32_lit(kn) + ">;\n  var rv: array<f32, " + u32_lit(vn) + ">;\n" + xregs +
      "  var m = -f32_inf();\n"
      "  var l = 0.0;\n"
      "  var acc = vec4<f32>(0.0);\n"
      "  var sa: array<f32, SC>;\n  var e: array<f32, SC>;\n" +
      "  var nst = 0u;\n" + load_stage +
      "  for (var st = 0u; st < ns; st = st + 1u) {\n"
      "    let j0 = (st / nd) * BK;\n"
      "    let last = st % nd == nd - 1u;\n" +
      looped(qn, "{ let s = q_slot(lid + $ * NT); Qs[s.x * DC + s.y] = rq[$]; }") +
      looped(kn, "{ let s = k_slot(lid + $ * NT); Ks[s.x * KS + s.y] = rk[$]; }") +
      "    if (last) {\n" +
      looped(vn, "{ let s = v_slot(lid + $ * NT); Vs[s.x * DV + s.y] = rv[$]; }") +
      xnext +
      "    }\n"
      "    workgroupBarrier();\n"
      "    nst = st + 1u;\n"
      "    if (nst < ns) {\n" + load_stage +
      "    }\n"
      "    if (st % nd == 0u) {\n" +
      looped(sc, "{ sa[$] = 0.0; }") +
      "    }\n"
      "    for (var c = 0u; c < DC; c = c + 1u) {\n"
      "      let a = Qs[r * DC + c];\n" +
      looped(sc, "{ sa[$] = fma(a, Ks[c * KS + lane + 16u * $], sa[$]); }") +
      "    }\n"
      "    if (last) {\n" + block_scores +
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
      looped(sc, "{ let p = exp_shifted(e[$], shift); Ps[r * BK + lane + 16u * $] = p; psum = psum + p; }") +
      "      l = l * corr + psum;\n"
      "      acc = acc * corr;\n"
      "      workgroupBarrier();\n"
      "      for (var j = 0u; j < BK; j = j + 1u) {\n"
      "        let pj = Ps[r * BK + j];\n"
      "        let at = j * DV + lane;\n"
      "        acc = fma(vec4<f32>(pj), vec4<f32>(Vs[at], Vs[at + 16u], Vs[at + 32u], Vs[at + 48u]), acc);\n"
      "      }\n"
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
      "  }\n");
  ctx.dispatch(p, binds, uint32_t(gx), uint32_t(gy), uint32_t(zs));
}

}  // namespace

void register_attention(GpuKernelRegistry& r) { r.add_fused("Attention", attention); }

}  // namespace onnxgpu::webgpu
