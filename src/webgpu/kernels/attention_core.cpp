#include "webgpu/kernels/attention_core.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "webgpu/kernels/reduce_util.h"

namespace onnxgpu::webgpu::attention {

namespace {

using strided::Layout;

constexpr uint32_t kCols = 64;  // DV: output columns per workgroup (4 per lane)

// $ONNXGPU_ATTENTION_ROWS=8, $ONNXGPU_ATTENTION_KEYS=64 and $ONNXGPU_ATTENTION_CHUNK=<keys>, read once:
// tile shapes and a split's smallest chunk, for measuring. $ONNXGPU_ATTENTION_DECODE: a split's kernels
// ("0": the general tile and its combine, as before the decode kernel; "combine": the general tile with
// the decode kernel's combine; default: the decode kernel and its combine). $ONNXGPU_ATTENTION_QUADS=1,
// read at each call: the general tile's invocations take neighbouring keys and columns (Tile::quads).
enum class DecodeKnob { Tile, TileNewCombine, Decode };
struct TileKnobs {
  bool rows8 = false, keys64 = false;
  uint32_t chunk = 0;  // 0: the default
  DecodeKnob decode = DecodeKnob::Decode;
};
const TileKnobs& tile_knobs() {
  static const TileKnobs knobs = [] {
    auto is = [](const char* name, const char* value) {
      const char* e = std::getenv(name);
      return e && std::string(e) == value;
    };
    const char* chunk = std::getenv("ONNXGPU_ATTENTION_CHUNK");
    DecodeKnob decode = is("ONNXGPU_ATTENTION_DECODE", "0")         ? DecodeKnob::Tile
                        : is("ONNXGPU_ATTENTION_DECODE", "combine") ? DecodeKnob::TileNewCombine
                                                                    : DecodeKnob::Decode;
    return TileKnobs{is("ONNXGPU_ATTENTION_ROWS", "8"), is("ONNXGPU_ATTENTION_KEYS", "64"),
                     chunk ? uint32_t(std::strtoul(chunk, nullptr, 10)) : 0u, decode};
  }();
  return knobs;
}

// The online softmax's step, the same in both kernels (a block's maximum bm met): the row's running
// maximum m and shift sh updated, and corr, the factor that rescales what was summed with the old
// shift. A row whose maximum is infinite is not shifted (IEEE decides); nothing was summed while the
// maximum was -inf.
constexpr const char* kOnlineMax =
    "      let m_new = max(m, bm);\n"
    "      let old_shift = select(m, 0.0, abs(m) == f32_inf());\n"
    "      let shift = select(m_new, 0.0, abs(m_new) == f32_inf());\n"
    "      let corr = select(exp(old_shift - shift), 0.0, m == -f32_inf() && m_new != -f32_inf());\n"
    "      m = m_new;\n"
    "      sh = shift;\n";

// A workgroup's share: RQ query rows (16 invocations each), blocks of BK keys (BK / 16 scores per
// invocation), DC of D staged at a time.
struct Tile {
  uint32_t rows, keys, depth;
  // An invocation's keys and output columns: neighbours (keys SC lane ... SC lane + SC - 1 of a block,
  // columns 4 lane ... 4 lane + 3), read from workgroup memory as vectors; else 16 apart (lane + 16 q).
  bool quads = false;
  uint32_t threads() const { return 16 * rows; }  // NT
  uint32_t scores() const { return keys / 16; }   // SC: scores per invocation and block
  // Key q of this invocation's in its block, and output column t of its four (WGSL).
  std::string key(const std::string& q) const { return quads ? "SC * lane + " + q : "lane + 16u * " + q; }
  std::string col(const std::string& t) const { return quads ? "4u * lane + " + t : "lane + 16u * " + t; }
  std::string key_vec() const { return "vec" + std::to_string(scores()) + "<f32>"; }  // quads: a lane's keys
};

// RQ: 16 where the device allows 256 invocations (K and V staged once for more rows: faster on the
// H200 than 8), else 8; 8 for a split (few rows: fewer idle invocations). BK: 32 (64 was equal or
// slower there). DC: 64 where workgroup memory allows (one stage per key block for heads of up to 64),
// else 32; with 8 rows when 16 do not fit.
Tile choose_tile(const GpuKernelContext& ctx, bool few_rows) {
  const Limits& lim = ctx.limits;
  uint32_t inv = lim.max_compute_invocations_per_workgroup ? lim.max_compute_invocations_per_workgroup : 256;
  uint32_t wx = lim.max_compute_workgroup_size_x ? lim.max_compute_workgroup_size_x : 256;
  uint32_t mem = lim.max_compute_workgroup_storage_size ? lim.max_compute_workgroup_storage_size : 16384;
  Tile t{std::min(inv, wx) >= 256 && !few_rows ? 16u : 8u, 32, 0};
  if (tile_knobs().rows8) t.rows = 8;
  if (tile_knobs().keys64) t.keys = 64;
  const char* quads = std::getenv("ONNXGPU_ATTENTION_QUADS");
  t.quads = quads && std::string(quads) == "1";
  auto shared = [&](uint32_t dc) {
    const uint32_t k_row = t.quads ? t.keys + t.scores() : t.keys + 1;  // Ks's padded row
    return 4 * (t.rows * dc + dc * k_row + t.keys * kCols + t.rows * t.keys + 16 * t.rows) + 8;
  };
  if (shared(32) > mem) t.rows = 8;
  t.depth = shared(64) <= mem ? 64 : 32;
  if (t.threads() > inv || t.threads() > wx || shared(t.depth) > mem) ctx.unsupported("the device's workgroups are too small");
  return t;
}

// The keys of a split: NC chunks of CK keys (a multiple of `pass`: the tile's BK, or the decode kernel's
// KP), at least kMinChunk keys a chunk ($ONNXGPU_ATTENTION_CHUNK) and at most kMaxChunks chunks.
struct Split {
  uint32_t chunks = 1, keys = 0;
};
// 32 keys (one block): on the H200 a decode loop's step took 1.80 ms at 32, 1.95 at 64, 2.03 at 128
// (gpt2_kv, past 128 -> 384), and the GenAI-style decoder's 2.64 / 2.67 / 2.84 ms.
constexpr uint64_t kMinChunk = 32;
constexpr uint32_t kMaxChunks = 64;
Split choose_split(const Spec& s, uint32_t pass) {
  Split sp;
  const uint64_t lk = uint64_t(std::max<int64_t>(s.Lk, 1));
  const uint64_t least = tile_knobs().chunk ? tile_knobs().chunk : kMinChunk;
  uint64_t per = std::max<uint64_t>(least, (lk + kMaxChunks - 1) / kMaxChunks);
  per = (per + pass - 1) / pass * pass;
  sp.chunks = uint32_t((lk + per - 1) / per);
  sp.keys = uint32_t(per);
  return sp;
}

// A row's output element, `o` over the row's softmax sum (WGSL). Zeroed where the spec says: rows that see
// no key (sum 0) for empty_rows_zero; with nan_rows_zero also rows whose softmax is NaN (a NaN or +inf
// score makes the sum NaN or infinite; a row of -inf scores, 0), tested on the bits (NaN compares false).
std::string row_value(const Spec& s, const std::string& o, const std::string& sum) {
  if (s.nan_rows_zero)
    return "select(" + o + " / " + sum + ", 0.0, " + sum + " == 0.0 || (bitcast<u32>(" + sum + ") & 0x7fffffffu) >= 0x7f800000u)";
  if (s.empty_rows_zero) return "select(" + o + " / " + sum + ", 0.0, " + sum + " == 0.0)";
  return o + " / " + sum;
}
std::string rows_key(const Spec& s) { return s.nan_rows_zero ? "nanzero " : s.empty_rows_zero ? "zero " : ""; }

uint32_t max_grid(const GpuKernelContext& ctx) {
  return ctx.limits.max_compute_workgroups_per_dimension ? ctx.limits.max_compute_workgroups_per_dimension : 65535;
}

// The WGSL of the score: fn score(...) (the caller's) and fn score_of(p, ok, z, i, j, ...) (-inf past
// the row's keys); and the main loop's handling of the score inputs, read a block ahead with the next
// keys and values.
struct ScoreWgsl {
  std::string fn;     // the caller's declarations, fn score, fn score_of
  std::string bases;  // each input's row offset for this invocation's query row
  std::string regs;   // its registers: this block's values (_a) and the next block's (_n)
  std::string load;   // loading the next block's values
  std::string next;   // the next block's values becoming this block's
  std::string args;   // score_of()'s arguments after j
};
ScoreWgsl score_wgsl(const Spec& s, const std::string& key_of_q = "lane + 16u * q") {
  ScoreWgsl w;
  std::string params;
  std::string names;
  for (const ScoreInput& x : s.inputs) {
    const std::string& n = x.name;
    params += ", " + n + ": " + x.type;
    names += ", " + n;
    w.bases += "  let " + n + "_row = " + n + "_boff(z) + min(i, Lq() - 1u) * " + n + "_sr();\n";
    w.regs += "  var " + n + "_a: array<" + x.type + ", SC>;\n  var " + n + "_n: array<" + x.type + ", SC>;\n";
    w.load += "        for (var q = 0u; q < SC; q = q + 1u) {\n"
              "          let key = nj0 + " + key_of_q + ";\n"
              "          " + n + "_n[q] = " + n + "_in_load(select(0u, " + n + "_row + key * " + n + "_sc(), key < " + x.keys + "));\n"
              "        }\n";
    w.next += "      " + n + "_a = " + n + "_n;\n";
    w.args += ", " + n + "_a[q]";
  }
  w.fn = s.decls + "fn score(p: f32, z: u32, i: u32, j: u32" + params + ") -> f32 {\n" +
         (s.score.empty() ? std::string("  return p;\n") : s.score) + "}\n" +
         "fn score_of(p: f32, ok: bool, z: u32, i: u32, j: u32" + params + ") -> f32 {\n"
         "  if (!ok) { return -f32_inf(); }\n"
         "  return score(p, z, i, j" + names + ");\n}\n";
  return w;
}

// The tile's constants, workgroup arrays and element accessors. Tile loads: consecutive invocations
// read along the operand's contiguous axis.
std::string tile_decls(const Tile& t, const Spec& s) {
  auto slot = [](bool along_cols, uint32_t rows, uint32_t cols) {
    return along_cols ? "vec2<u32>(g / " + u32_lit(cols) + ", g % " + u32_lit(cols) + ")"
                      : "vec2<u32>(g % " + u32_lit(rows) + ", g / " + u32_lit(rows) + ")";
  };
  std::string arrays;
  if (t.quads) {
    arrays = "var<workgroup> Qs: array<array<vec4<f32>, DC / 4u>, RQ>;  // [row][d / 4]\n"
             "const KS: u32 = BK / SC + 1u;  // Ks's row length in vectors (padded)\n"
             "var<workgroup> Ks: array<array<" + t.key_vec() + ", KS>, DC>;  // [d][key / SC]\n"
             "var<workgroup> Vs: array<array<vec4<f32>, DV / 4u>, BK>;  // [key][col / 4]\n";
  } else {
    arrays = "var<workgroup> Qs: array<array<f32, DC>, RQ>;  // [row][d]\n"
             "const KS: u32 = BK + 1u;  // Ks's row length (padded: a column of Ks is written at once)\n"
             "var<workgroup> Ks: array<array<f32, KS>, DC>;  // [d][key]\n"
             "var<workgroup> Vs: array<array<f32, DV>, BK>;  // [key][col]\n";
  }
  // The workgroup arrays are arrays of rows, so that in the loops over keys and depth each index the
  // robustness transform clamps is a constant once the loop is unrolled or the same at every step (the
  // invocation's row and lane): the clamps leave the loops (as the product kernel's tiles, matmul.cpp).
  return "const RQ: u32 = " + u32_lit(t.rows) + ";\nconst BK: u32 = " + u32_lit(t.keys) + ";\nconst DC: u32 = " +
         u32_lit(t.depth) + ";\nconst DV: u32 = " + u32_lit(kCols) + ";\nconst NT: u32 = " + u32_lit(t.threads()) +
         ";\nconst SC: u32 = " + u32_lit(t.scores()) + ";\n" + arrays +
         "var<workgroup> Ps: array<array<f32, BK>, RQ>;  // [row][key]\n"
         "var<workgroup> red: array<array<f32, 16>, NT / 16u>;  // [row][lane]\n"
         "var<workgroup> wg_keys: vec2<u32>;  // the workgroup's keys [lo, hi)\n"
         "fn fmax_nan(a: f32, b: f32) -> f32 { return select(a, b, b > a); }\n"
         "fn q_slot(g: u32) -> vec2<u32> { return " + slot(s.q.layout.s_col == 1, t.rows, t.depth) + "; }\n"
         "fn k_slot(g: u32) -> vec2<u32> { return " + slot(s.k.layout.s_col == 1, t.depth, t.keys) + "; }\n"
         "fn v_slot(g: u32) -> vec2<u32> { return " + slot(s.v.layout.s_col == 1, t.keys, kCols) + "; }\n"
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
// the score inputs). Each stage's loads are issued into registers while the stage before it computes.
std::string load_stage_wgsl(const StageShare& n, const ScoreWgsl& score) {
  return "    {\n"
         "      let nj0 = (b0 + nst / nd) * BK;\n"
         "      let nd0 = (nst % nd) * DC;\n" +
         looped(n.q, "{ let s = q_slot(lid + $ * NT); rq[$] = q_at(qb, i0 + s.x, nd0 + s.y); }") +
         looped(n.k, "{ let s = k_slot(lid + $ * NT); rk[$] = k_at(kb, nd0 + s.x, nj0 + s.y); }") +
         "      if (nst % nd == nd - 1u) {\n" +
         looped(n.v, "{ let s = v_slot(lid + $ * NT); rv[$] = v_at(vb, nj0 + s.x, c0 + s.y); }") + score.load +
         "      }\n"
         "    }\n";
}

// A block's last stage: this invocation's scores of the block (keys lane + 16 q), the score applied,
// and their maximum; then the online softmax's rescaling and the block's share of P V.
std::string block_softmax_wgsl(const Tile& t, const Spec& s, const ScoreWgsl& score) {
  std::string ok = "i < Lq() && key < Lk()";
  if (s.key_range) ok += " && key >= kr.x && key < kr.y";
  return "      var bmax = -f32_inf();\n"
         "      for (var q = 0u; q < SC; q = q + 1u) {\n"
         "        let key = j0 + " + t.key("q") + ";\n"
         "        e[q] = score_of(sa[q], " + ok + ", z, i, key" + score.args + ");\n"
         "        bmax = fmax_nan(bmax, e[q]);\n"
         "      }\n"
         "      red[r][lane] = bmax;\n"
         "      workgroupBarrier();\n"
         "      var bm = -f32_inf();\n"
         "      for (var t = 0u; t < 16u; t = t + 1u) { bm = fmax_nan(bm, red[r][t]); }\n"
         + std::string(kOnlineMax) +
         "      var psum = 0.0;\n" +
         looped(t.scores(), "{ let p = exp_shifted(e[$], shift); Ps[r][" + t.key("$") + "] = p; psum = psum + p; }") +
         "      l = l * corr + psum;\n"
         "      acc = acc * corr;\n"
         "      workgroupBarrier();\n"
         "      for (var j = 0u; j < BK; j = j + 1u) {\n"
         "        let pj = Ps[r][j];\n" +
         (t.quads ? "        acc = fma(vec4<f32>(pj), Vs[j][lane], acc);\n"
                  : "        acc = fma(vec4<f32>(pj), vec4<f32>(Vs[j][lane], Vs[j][lane + 16u], Vs[j][lane + 32u], Vs[j][lane + 48u]), acc);\n") +
         "      }\n";
}

// The workgroup's keys [klo, khi): all, or the union of the keys of its rows first_row..last_row (WGSL;
// made uniform through workgroup memory), within its chunk of a split.
std::string key_bounds_wgsl(const Spec& s, bool split, const std::string& first_row, const std::string& last_row) {
  std::string w = "  var klo = 0u;\n  var khi = Lk();\n";
  if (s.key_range)
    w += "  let kr = key_range(z, min(i, Lq() - 1u));\n"
         "  if (lid == 0u) { wg_keys = block_keys(z, " + first_row + ", " + last_row + "); }\n"
         "  let wk = workgroupUniformLoad(&wg_keys);\n"
         "  klo = wk.x;\n"
         "  khi = min(wk.y, Lk());\n";
  if (split)
    w += "  klo = max(klo, chunk * CK());\n"
         "  khi = min(khi, (chunk + 1u) * CK());\n";
  return w;
}

// The row's result: acc / sum (0 for a row without keys when asked), or with a split the chunk's
// partial output, shift and sum.
std::string store_wgsl(const Spec& s, bool split, const Tile& tile) {
  const std::string col = "      let c = c0 + " + tile.col("t") + ";\n";
  if (split)
    return "  if (i < Lq()) {\n"
           "    let pr = zc * Lq() + i;\n"
           "    for (var t = 0u; t < 4u; t = t + 1u) {\n" + col +
           "      if (c < Dv()) { po_store(pr * Dv() + c, acc[t]); }\n"
           "    }\n"
           "    if (wid.x == 0u && lane == 0u) { pml_store(2u * pr, sh); pml_store(2u * pr + 1u, sum); }\n"
           "  }\n";
  const std::string value = row_value(s, "acc[t]", "sum");
  return "  if (i < Lq()) {\n"
         "    let yb = y_boff(z) + i * y_sr();\n"
         "    for (var t = 0u; t < 4u; t = t + 1u) {\n" + col +
         "      if (c < Dv()) { y_store(yb + c * y_sc(), " + value + "); }\n"
         "    }\n"
         "  }\n";
}

// The running maximum, shift and sum before the first key: none, or the row's extra logit (its sink,
// summed once per row: by the invocation where `first_lane` holds, in the first chunk of a split).
std::string init_wgsl(const Spec& s, bool split, const std::string& first_lane) {
  if (!s.sink) return "  var m = -f32_inf();\n  var sh = 0.0;\n  var l = 0.0;\n";
  const std::string first = split ? "chunk == 0u" : "true";
  return "  let sink = sink_of(z, min(i, Lq() - 1u));\n"
         "  var m = select(-f32_inf(), sink, " + first + ");\n"
         "  var sh = select(0.0, sink, " + first + ");\n"
         "  var l = select(0.0, 1.0, " + first + " && " + first_lane + ");\n";
}

// The kernel's body: the stages in turn (staging, prefetching the next, accumulating the scores),
// then each row's sum and the output columns written.
std::string body_wgsl(const Tile& t, const Spec& s, const ScoreWgsl& score, bool split) {
  StageShare n{t.rows * t.depth / t.threads(), t.depth * t.keys / t.threads(), t.keys * kCols / t.threads()};
  std::string load_stage = load_stage_wgsl(n, score);
  // The stage's registers into workgroup memory, and its share of the block's scores.
  std::string stage_stores, v_stores, scores;
  if (t.quads) {
    stage_stores = looped(n.q, "{ let s = q_slot(lid + $ * NT); Qs[s.x][s.y / 4u][s.y % 4u] = rq[$]; }") +
                   looped(n.k, "{ let s = k_slot(lid + $ * NT); Ks[s.x][s.y / SC][s.y % SC] = rk[$]; }");
    v_stores = looped(n.v, "{ let s = v_slot(lid + $ * NT); Vs[s.x][s.y / 4u][s.y % 4u] = rv[$]; }");
    const std::string kv = t.key_vec();
    scores = "    for (var c = 0u; c < DC; c = c + 4u) {\n"
             "      let a = Qs[r][c / 4u];\n"
             "      sa = fma(" + kv + "(a.x), Ks[c][lane], sa);\n"
             "      sa = fma(" + kv + "(a.y), Ks[c + 1u][lane], sa);\n"
             "      sa = fma(" + kv + "(a.z), Ks[c + 2u][lane], sa);\n"
             "      sa = fma(" + kv + "(a.w), Ks[c + 3u][lane], sa);\n"
             "    }\n";
  } else {
    stage_stores = looped(n.q, "{ let s = q_slot(lid + $ * NT); Qs[s.x][s.y] = rq[$]; }") +
                   looped(n.k, "{ let s = k_slot(lid + $ * NT); Ks[s.x][s.y] = rk[$]; }");
    v_stores = looped(n.v, "{ let s = v_slot(lid + $ * NT); Vs[s.x][s.y] = rv[$]; }");
    scores = "    for (var c = 0u; c < DC; c = c + 1u) {\n"
             "      let a = Qs[r][c];\n" +
             looped(t.scores(), "{ sa[$] = fma(a, Ks[c][lane + 16u * $], sa[$]); }") +
             "    }\n";
  }
  return "  let r = lid / 16u;\n"
         "  let lane = lid % 16u;\n" +
         std::string(split ? "  let zc = wid.z;\n  let z = zc / NC();\n  let chunk = zc % NC();\n" : "  let z = wid.z;\n") +
         "  let i0 = wid.y * RQ;\n"
         "  let c0 = wid.x * DV;\n"
         "  let i = i0 + r;\n"
         "  let qb = q_boff(z);\n"
         "  let kb = k_boff(z);\n"
         "  let vb = v_boff(z);\n" + score.bases + key_bounds_wgsl(s, split, "i0", "min(i0 + RQ, Lq()) - 1u") +
         "  let b0 = klo / BK;\n"
         "  let b1 = select(b0, (khi + BK - 1u) / BK, khi > klo);\n" +
         "  let nd = max((D() + DC - 1u) / DC, 1u);\n"
         "  let ns = (b1 - b0) * nd;\n" +
         "  var rq: array<f32, " + u32_lit(n.q) + ">;\n  var rk: array<f32, " + u32_lit(n.k) + ">;\n  var rv: array<f32, " +
         u32_lit(n.v) + ">;\n" + score.regs +
         init_wgsl(s, split, "lane == 0u") +
         "  var acc = vec4<f32>(0.0);\n" +
         (t.quads ? "  var sa: " + t.key_vec() + ";\n" : "  var sa: array<f32, SC>;\n") +
         "  var e: array<f32, SC>;\n" +
         "  var nst = 0u;\n" + load_stage +
         "  for (var st = 0u; st < ns; st = st + 1u) {\n"
         "    let j0 = (b0 + st / nd) * BK;\n"
         "    let last = st % nd == nd - 1u;\n" +
         stage_stores +
         "    if (last) {\n" + v_stores + score.next +
         "    }\n"
         "    workgroupBarrier();\n"
         "    nst = st + 1u;\n"
         "    if (nst < ns) {\n" + load_stage +
         "    }\n"
         "    if (st % nd == 0u) {\n" +
         looped(t.scores(), "{ sa[$] = 0.0; }") +
         "    }\n" +
         scores +
         "    if (last) {\n" + block_softmax_wgsl(t, s, score) +
         "    }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  red[r][lane] = l;\n"
         "  workgroupBarrier();\n"
         "  var sum = 0.0;\n"
         "  for (var t = 0u; t < 16u; t = t + 1u) { sum = sum + red[r][t]; }\n" +
         store_wgsl(s, split, t);
}

// What a layout's WGSL depends on: whether it is strided and which of its matrix axes is contiguous.
std::string layout_key(const Layout& l) {
  return std::string(l.strided ? "s" : "-") + (l.s_row == 1 ? "r" : "-") + (l.s_col == 1 ? "c" : "-");
}

// The combine's: the rows without keys, Y's layout, the batch's rank.
std::string combine_key(const Spec& s) {
  return rows_key(s) + layout_key(s.y.layout) + " batch" + std::to_string(s.batch.size());
}

// A combine's operands: the chunks' partial outputs (po) and shifts and sums (pml), Y, and their sizes.
void declare_combine(shader::Program& p, const Spec& s, const Split& sp, uint64_t z_count) {
  const uint64_t parts = z_count * sp.chunks * uint64_t(s.Lq);
  p.input("po", DType::Float32, Shape{int64_t(parts * uint64_t(s.Dv))});
  p.input("pml", DType::Float32, Shape{int64_t(parts * 2)});
  p.output("y", s.y.t.dtype, Shape{int64_t(s.y.t.numel)});
  p.uniform("Lq", uint32_t(s.Lq));
  p.uniform("Dv", uint32_t(s.Dv));
  p.uniform("NC", sp.chunks);
  strided::declare(p, s.batch, {{"y", &s.y.layout}});
  // Whether a chunk summed something: its sum not +-0, tested on the bits so that a NaN sum (a NaN score)
  // counts whatever a compiler makes of comparisons with NaN (SwiftShader's left NaN sums out).
  p.declare("fn summed(l: f32) -> bool { return (bitcast<u32>(l) & 0x7fffffffu) != 0u; }\n");
}

// The combine of a split: per output element, the chunks' partial outputs weighed by their shifts
// (chunks that summed nothing left out; NaN sums kept).
void combine_wgsl(shader::Program& p, const Spec& s) {
  const std::string value = row_value(s, "o", "lsum");
  p.body("  let c = gi % Dv();\n"
         "  let i = (gi / Dv()) % Lq();\n"
         "  let z = gi / Dv() / Lq();\n"
         "  var mx = -f32_inf();\n"
         "  for (var k = 0u; k < NC(); k = k + 1u) {\n"
         "    let pr = (z * NC() + k) * Lq() + i;\n"
         "    if (summed(pml_load(2u * pr + 1u))) { mx = max(mx, pml_load(2u * pr)); }\n"
         "  }\n"
         "  var lsum = 0.0;\n"
         "  var o = 0.0;\n"
         "  for (var k = 0u; k < NC(); k = k + 1u) {\n"
         "    let pr = (z * NC() + k) * Lq() + i;\n"
         "    let lk = pml_load(2u * pr + 1u);\n"
         "    if (summed(lk)) {\n"
         "      let w = exp(pml_load(2u * pr) - mx);\n"
         "      lsum = lsum + lk * w;\n"
         "      o = o + po_load(pr * Dv() + c) * w;\n"
         "    }\n"
         "  }\n"
         "  y_store(y_boff(z) + i * y_sr() + c * y_sc(), " + value + ");\n");
}

void emit_combine(GpuKernelContext& ctx, const Spec& s, const Split& sp, ValueRef po, ValueRef pml, uint64_t z_count) {
  auto p = ctx.program(s.name + "_combine");
  const bool wgsl = ctx.needs_wgsl(p, combine_key(s));
  declare_combine(p, s, sp, z_count);
  p.set_threads(z_count * uint64_t(s.Lq) * uint64_t(s.Dv));
  if (wgsl) combine_wgsl(p, s);
  ctx.dispatch(p, {po, pml, s.y.t.ref});
}

// ---- The decode kernel: a split's few rows (R = Lq <= 8) over a chunk of keys, every invocation busy.
//
// One workgroup of NT invocations per (batch element, chunk). Q's R rows are staged once. The chunk's
// keys go in passes of KP: each invocation loads TD of D of one key (LD lanes a key, along K's
// contiguous axis) and the V values it multiplies (KU keys of the pass x VC columns groups of CL), a
// pass ahead, into registers; its R partial dot products are summed by the R x KP invocations that
// then apply the score and the online softmax (the general tile's formulas), whose probabilities and
// corrections the P V invocations (CL columns x KSL key slices) read from workgroup memory. At the
// end the key slices' partial outputs are summed and written as the split's partial output, shift and
// sum, which the combine merges.
struct DecodeTile {
  uint32_t threads = 0;  // NT
  uint32_t rows = 0;     // R
  uint32_t lanes = 0;    // LD: invocations per key in the dot products
  uint32_t depth = 0;    // TD: D's values per invocation and key
  uint32_t cols = 0;     // CL: output columns per P V group
  uint32_t groups = 0;   // VC: column groups (Dv / CL, rounded up)
  uint32_t keys() const { return threads / lanes; }  // KP: keys per pass
  uint32_t slices() const { return threads / cols; }  // KSL: key slices in P V
  uint32_t key_share() const { return cols / lanes; }  // KU = KP / KSL: keys per invocation and pass in P V
  uint32_t shared_floats() const {
    return rows * depth * lanes + rows * (threads + lanes) + 2 * rows * keys() + rows;
  }
};

// NT: 256 invocations where the device allows them, else 128. LD: 8, doubled while TD would pass 16
// (D <= 128: 8, so KP = 32 keys a pass; D <= 256: 16), at most 32. CL: 64 columns (Dv's power of two
// when smaller, at least LD). Nothing (the general tile runs) where the registers (TD, KU x VC, R x VC
// at most 32 each) or workgroup memory do not fit.
std::optional<DecodeTile> choose_decode(const GpuKernelContext& ctx, const Spec& s) {
  const Limits& lim = ctx.limits;
  const uint32_t inv = lim.max_compute_invocations_per_workgroup ? lim.max_compute_invocations_per_workgroup : 256;
  const uint32_t wx = lim.max_compute_workgroup_size_x ? lim.max_compute_workgroup_size_x : 256;
  const uint32_t mem = lim.max_compute_workgroup_storage_size ? lim.max_compute_workgroup_storage_size : 16384;
  if (s.D < 1 || s.D > 512 || s.Dv < 1 || s.Lq < 1 || s.Lq > 8) return std::nullopt;
  for (uint32_t nt : {256u, 128u}) {
    if (nt > std::min(inv, wx)) continue;
    DecodeTile d;
    d.threads = nt;
    d.rows = uint32_t(s.Lq);
    d.lanes = 8;
    while (d.lanes < 32 && uint64_t(d.lanes) * 16 < uint64_t(s.D)) d.lanes *= 2;
    d.depth = uint32_t((uint64_t(s.D) + d.lanes - 1) / d.lanes);
    uint32_t cols = 1;
    while (cols < 64 && cols < uint64_t(s.Dv)) cols *= 2;
    d.cols = std::max(cols, d.lanes);
    d.groups = uint32_t((uint64_t(s.Dv) + d.cols - 1) / d.cols);
    if (d.cols > nt || d.keys() < d.rows || d.depth > 32 || d.key_share() * d.groups > 32 || d.rows * d.groups > 32)
      continue;
    if (4 * uint64_t(d.shared_floats()) + 8 > mem) continue;
    return d;
  }
  return std::nullopt;
}

// The decode kernel's constants, workgroup arrays and accessors (K and V read only below `hi`: the
// chunk's last key, so that nothing past a row's keys enters a product, even as 0 x NaN).
std::string decode_decls(const DecodeTile& d) {
  return "const NT: u32 = " + u32_lit(d.threads) + ";\nconst R: u32 = " + u32_lit(d.rows) + ";\nconst LD: u32 = " +
         u32_lit(d.lanes) + ";\nconst KP: u32 = " + u32_lit(d.keys()) + ";\nconst TD: u32 = " + u32_lit(d.depth) +
         ";\nconst DP: u32 = " + u32_lit(d.depth * d.lanes) + ";  // Qs's row stride\nconst CL: u32 = " +
         u32_lit(d.cols) + ";\nconst KSL: u32 = " + u32_lit(d.slices()) + ";\nconst KU: u32 = " + u32_lit(d.key_share()) +
         ";\nconst VC: u32 = " + u32_lit(d.groups) + ";\n"
         "const RS: u32 = KP + 1u;  // red's stride per (row, lane) in the dot products (padded)\n"
         "var<workgroup> Qs: array<f32, " + u32_lit(d.rows * d.depth * d.lanes) + ">;  // [row][d]\n"
         "// The partial dot products [row][lane][key], then the key slices' partial outputs [slice][row][col].\n"
         "var<workgroup> red: array<f32, " + u32_lit(d.rows * (d.threads + d.lanes)) + ">;\n"
         "var<workgroup> Ss: array<f32, " + u32_lit(d.rows * d.keys()) + ">;  // the pass's scores [row][key], then the sums\n"
         "var<workgroup> Ps: array<f32, " + u32_lit(d.rows * d.keys()) + ">;  // the pass's probabilities [row][key]\n"
         "var<workgroup> Cs: array<f32, " + u32_lit(d.rows) + ">;  // each row's correction of what was summed\n"
         "var<workgroup> wg_keys: vec2<u32>;  // the workgroup's keys [lo, hi)\n"
         "fn fmax_nan(a: f32, b: f32) -> f32 { return select(a, b, b > a); }\n"
         "fn q_at(base: u32, i: u32, c: u32) -> f32 {\n"
         "  let ok = i < Lq() && c < D();\n"
         "  return select(0.0, q_load(select(0u, base + i * q_sr() + c * q_sc(), ok)), ok);\n}\n"
         "fn k_at(base: u32, c: u32, j: u32, hi: u32) -> f32 {\n"
         "  let ok = c < D() && j < hi;\n"
         "  return select(0.0, k_load(select(0u, base + c * k_sr() + j * k_sc(), ok)), ok);\n}\n"
         "fn v_at(base: u32, j: u32, c: u32, hi: u32) -> f32 {\n"
         "  let ok = j < hi && c < Dv();\n"
         "  return select(0.0, v_load(select(0u, base + j * v_sr() + c * v_sc(), ok)), ok);\n}\n";
}

std::string decode_body(const DecodeTile& d, const Spec& s) {
  // Lanes along each operand's contiguous axis: K's keys or its D, V's columns or its keys.
  const std::string k_lane = s.k.layout.s_col == 1 ? "  let kk = lid % KP;\n  let ld = lid / KP;\n"
                                                   : "  let kk = lid / LD;\n  let ld = lid % LD;\n";
  const std::string v_lane = s.v.layout.s_col == 1 || s.v.layout.s_row != 1 ? "  let cl = lid % CL;\n  let ks = lid / CL;\n"
                                                                             : "  let ks = lid % KSL;\n  let cl = lid / KSL;\n";
  // The score inputs: this invocation's (row fr, key fk) value, loaded a pass ahead (_n) and used (_c).
  std::string regs, load, next, args;
  for (const ScoreInput& x : s.inputs) {
    const std::string& n = x.name;
    regs += "  var " + n + "_n: " + x.type + ";\n  var " + n + "_c: " + x.type + ";\n";
    load += n + "_n = " + n + "_in_load(select(0u, " + n + "_row + (j + fk) * " + n + "_sc(), j + fk < " + x.keys + "));\n";
    next += "    " + n + "_c = " + n + "_n;\n";
    args += ", " + n + "_c";
  }
  std::string ok = "i < Lq() && key < khi";
  if (s.key_range) ok += " && key >= kr.x && key < kr.y";
  std::string w =
      "  let zc = wid.z;\n  let z = zc / NC();\n  let chunk = zc % NC();\n"
      "  let qb = q_boff(z);\n  let kb = k_boff(z);\n  let vb = v_boff(z);\n" + k_lane + v_lane +
      "  // The softmax's invocations: row fr, key fk of the pass (fo: one of the R x KP).\n"
      "  let fr = lid / KP;\n  let fk = lid % KP;\n  let fo = fr < R;\n  let i = fr;\n" +
      score_wgsl(s).bases +
      "  for (var g = lid; g < R * DP; g = g + NT) { Qs[g] = q_at(qb, g / DP, g % DP); }\n" +
      key_bounds_wgsl(s, true, "0u", "Lq() - 1u") +
      "  let np = select(0u, (khi - klo + KP - 1u) / KP, khi > klo);  // passes\n" +
      // The running maximum, shift and sum (the sink's logit, counted once per row: in the first chunk).
      init_wgsl(s, true, "fk == 0u");
  // The loads of the pass from key j (into the _n registers), indented by `in`.
  auto load_pass = [&](const std::string& in) {
    std::string text = "for (var t = 0u; t < TD; t = t + 1u) { nk[t] = k_at(kb, ld + LD * t, j + kk, khi); }\n"
                       "for (var u = 0u; u < KU; u = u + 1u) {\n"
                       "  for (var c = 0u; c < VC; c = c + 1u) { nv[u * VC + c] = v_at(vb, j + ks + KSL * u, cl + CL * c, khi); }\n"
                       "}\n" + load;
    std::string r;
    for (size_t at = 0, nl; at < text.size(); at = nl + 1) {
      nl = text.find('\n', at);
      r += in + text.substr(at, nl - at + 1);
    }
    return r;
  };
  w += "  var acc: array<f32, " + u32_lit(d.rows * d.groups) + ">;  // [row][column group]\n"
       "  var nk: array<f32, TD>;\n  var ck: array<f32, TD>;\n"
       "  var nv: array<f32, " + u32_lit(d.key_share() * d.groups) + ">;\n"
       "  var cv: array<f32, " + u32_lit(d.key_share() * d.groups) + ">;\n" + regs +
       "  {\n    let j = klo;\n" + load_pass("    ") + "  }\n"
       "  workgroupBarrier();\n"
       "  for (var ps = 0u; ps < np; ps = ps + 1u) {\n"
       "    let j0 = klo + ps * KP;\n"
       "    ck = nk;\n    cv = nv;\n" + next +
       "    if (ps + 1u < np) {\n      let j = j0 + KP;\n" + load_pass("      ") + "    }\n"
       "    // This invocation's share of its key's R dot products.\n"
       "    for (var r = 0u; r < R; r = r + 1u) {\n"
       "      var a = 0.0;\n"
       "      for (var t = 0u; t < TD; t = t + 1u) { a = fma(Qs[r * DP + ld + LD * t], ck[t], a); }\n"
       "      red[(r * LD + ld) * RS + kk] = a;\n"
       "    }\n"
       "    workgroupBarrier();\n"
       "    var e = -f32_inf();\n"
       "    if (fo) {\n"
       "      var p = 0.0;\n"
       "      for (var t = 0u; t < LD; t = t + 1u) { p = p + red[(fr * LD + t) * RS + fk]; }\n"
       "      let key = j0 + fk;\n"
       "      e = score_of(p, " + ok + ", z, i, key" + args + ");\n"
       "      Ss[lid] = e;\n"
       "    }\n"
       "    workgroupBarrier();\n"
       "    if (fo) {\n"
       "      var bm = -f32_inf();\n"
       "      for (var t = 0u; t < KP; t = t + 1u) { bm = fmax_nan(bm, Ss[fr * KP + t]); }\n"
       + std::string(kOnlineMax) +
       "      let pe = exp_shifted(e, shift);\n"
       "      Ps[lid] = pe;\n"
       "      l = l * corr + pe;\n"
       "      if (fk == 0u) { Cs[fr] = corr; }\n"
       "    }\n"
       "    workgroupBarrier();\n"
       "    for (var r = 0u; r < R; r = r + 1u) {\n"
       "      let cr = Cs[r];\n"
       "      for (var c = 0u; c < VC; c = c + 1u) {\n"
       "        var a = acc[r * VC + c] * cr;\n"
       "        for (var u = 0u; u < KU; u = u + 1u) { a = fma(Ps[r * KP + ks + KSL * u], cv[u * VC + c], a); }\n"
       "        acc[r * VC + c] = a;\n"
       "      }\n"
       "    }\n"
       "  }\n"
       "  // The partial output (the key slices summed), shift and sum of each row.\n"
       "  if (fo) { Ss[lid] = l; }\n"
       "  for (var c = 0u; c < VC; c = c + 1u) {\n"
       "    for (var r = 0u; r < R; r = r + 1u) { red[(ks * R + r) * CL + cl] = acc[r * VC + c]; }\n"
       "    workgroupBarrier();\n"
       "    for (var g = lid; g < R * CL; g = g + NT) {\n"
       "      let r = g / CL;\n"
       "      let col = CL * c + g % CL;\n"
       "      var o = 0.0;\n"
       "      for (var t = 0u; t < KSL; t = t + 1u) { o = o + red[(t * R + r) * CL + g % CL]; }\n"
       "      if (r < Lq() && col < Dv()) { po_store((zc * Lq() + r) * Dv() + col, o); }\n"
       "    }\n"
       "    workgroupBarrier();\n"
       "  }\n"
       "  if (fo && fk == 0u && i < Lq()) {\n"
       "    var sum = 0.0;\n"
       "    for (var t = 0u; t < KP; t = t + 1u) { sum = sum + Ss[fr * KP + t]; }\n"
       "    let pr = zc * Lq() + i;\n"
       "    pml_store(2u * pr, sh);\n"
       "    pml_store(2u * pr + 1u, sum);\n"
       "  }\n";
  return w;
}

// The decode kernel's combine: one workgroup per (batch element, row, 64 output columns). The chunks'
// shifts and sums are read once into workgroup memory and weighed there (the general combine's rules:
// chunks that summed nothing left out, NaN sums kept); then each invocation sums its key slice of
// chunks' partial outputs (their loads issued together) and the slices are added.
void merge_wgsl(shader::Program& p, const Spec& s, uint32_t threads) {
  const uint32_t cs = threads / 64;
  p.declare("const NT: u32 = " + u32_lit(threads) + ";\nconst CC: u32 = 64u;  // columns per workgroup\n"
            "const CS: u32 = " + u32_lit(cs) + ";  // chunk slices\nconst CU: u32 = " + u32_lit(kMaxChunks / cs) +
            ";  // chunks per slice\n"
            "var<workgroup> Wm: array<f32, " + u32_lit(kMaxChunks) + ">;  // each chunk's shift\n"
            "var<workgroup> Wl: array<f32, " + u32_lit(kMaxChunks) + ">;  // its sum\n"
            "var<workgroup> Ww: array<f32, " + u32_lit(kMaxChunks) + ">;  // its weight\n"
            "var<workgroup> red: array<f32, NT>;\n");
  const std::string value = row_value(s, "o", "lsum");
  p.body("  let z = wid.z;\n"
         "  let i = wid.y;\n"
         "  let cc = lid % CC;\n"
         "  let cs = lid / CC;\n"
         "  let c = wid.x * CC + cc;\n"
         "  let pr0 = z * NC() * Lq() + i;  // chunk k's row: pr0 + k Lq\n"
         "  if (lid < NC()) {\n"
         "    let pr = pr0 + lid * Lq();\n"
         "    Wm[lid] = pml_load(2u * pr);\n"
         "    Wl[lid] = pml_load(2u * pr + 1u);\n"
         "  }\n"
         "  workgroupBarrier();\n"
         "  var mx = -f32_inf();\n"
         "  for (var k = 0u; k < NC(); k = k + 1u) { if (summed(Wl[k])) { mx = max(mx, Wm[k]); } }\n"
         "  if (lid < NC()) { Ww[lid] = select(0.0, exp(Wm[lid] - mx), summed(Wl[lid])); }\n"
         "  workgroupBarrier();\n"
         "  var part = 0.0;\n"
         "  for (var u = 0u; u < CU; u = u + 1u) {\n"
         "    let k = cs + CS * u;\n"
         "    if (k < NC() && c < Dv() && summed(Wl[k])) { part = part + po_load((pr0 + k * Lq()) * Dv() + c) * Ww[k]; }\n"
         "  }\n"
         "  red[lid] = part;\n"
         "  workgroupBarrier();\n"
         "  if (cs == 0u && c < Dv()) {\n"
         "    var lsum = 0.0;\n"
         "    for (var k = 0u; k < NC(); k = k + 1u) { if (summed(Wl[k])) { lsum = lsum + Wl[k] * Ww[k]; } }\n"
         "    var o = 0.0;\n"
         "    for (var t = 0u; t < CS; t = t + 1u) { o = o + red[t * CC + cc]; }\n"
         "    y_store(y_boff(z) + i * y_sr() + c * y_sc(), " + value + ");\n"
         "  }\n");
}

void emit_combine_rows(GpuKernelContext& ctx, const Spec& s, const Split& sp, ValueRef po, ValueRef pml, uint64_t z_count,
                       uint32_t threads) {
  auto p = ctx.program(s.name + "_merge", threads);
  const bool wgsl = ctx.needs_wgsl(p, combine_key(s));
  declare_combine(p, s, sp, z_count);
  const uint64_t gx = (uint64_t(s.Dv) + 63) / 64;
  if (gx > max_grid(ctx) || z_count > max_grid(ctx)) ctx.unsupported("attention too large for the device's grid");
  if (wgsl) merge_wgsl(p, s, threads);
  ctx.dispatch(p, {po, pml, s.y.t.ref}, uint32_t(gx), uint32_t(s.Lq), uint32_t(z_count));
}

// Workgroups of the combine above: 256 or 128 invocations (0: the device allows neither).
uint32_t combine_threads(const GpuKernelContext& ctx) {
  const Limits& lim = ctx.limits;
  const uint32_t inv = lim.max_compute_invocations_per_workgroup ? lim.max_compute_invocations_per_workgroup : 256;
  const uint32_t wx = lim.max_compute_workgroup_size_x ? lim.max_compute_workgroup_size_x : 256;
  const uint32_t mem = lim.max_compute_workgroup_storage_size ? lim.max_compute_workgroup_storage_size : 16384;
  for (uint32_t nt : {256u, 128u})
    if (nt <= std::min(inv, wx) && 4 * (3 * kMaxChunks + nt) <= mem) return nt;
  return 0;
}

// The choices the main program's WGSL depends on beyond its tensors and uniforms (Program::keyed):
// the tile or decode tile, the split, the operands' layouts, the score and its inputs.
std::string main_key(const Spec& s, const std::optional<DecodeTile>& dt, const Tile& t, bool split) {
  std::string k = dt ? "decode " + std::to_string(dt->threads) + "," + std::to_string(dt->rows) + "," +
                           std::to_string(dt->lanes) + "," + std::to_string(dt->depth) + "," + std::to_string(dt->cols) +
                           "," + std::to_string(dt->groups)
                     : "tile " + std::to_string(t.rows) + "," + std::to_string(t.keys) + "," + std::to_string(t.depth) +
                           (t.quads ? " quads" : "");
  k += std::string(split ? " split" : "") + (s.key_range ? " ranged" : "") + (s.sink ? " sink" : "") +
       " " + rows_key(s) + "batch" + std::to_string(s.batch.size());
  for (const Matrix* m : {&s.q, &s.k, &s.v, &s.y}) k += " " + layout_key(m->layout);
  for (const ScoreInput& x : s.inputs) k += " in:" + x.name + ":" + x.type + ":" + x.keys + ":" + layout_key(x.layout);
  for (const Spec::Extra& x : s.extras) k += " x:" + x.name;
  for (const auto& [n, v] : s.uniforms) k += " u:" + n;
  for (const auto& [n, v] : s.uniforms_f32) k += " f:" + n;
  return k + "\n" + s.decls + "\n" + s.score;
}

}  // namespace

void emit(GpuKernelContext& ctx, const Spec& s) {
  if (s.Lq == 0 || s.Dv == 0 || shape_numel(s.batch) == 0) return;
  for (int64_t v : {s.Lq, s.D, s.Lk, s.Dv}) strided::u32_dim(ctx, v, "an attention dimension");
  for (const Matrix* m : {&s.q, &s.k, &s.v, &s.y}) strided::u32_dim(ctx, int64_t(m->t.numel), "an attention operand");
  const uint64_t z_count = uint64_t(shape_numel(s.batch));
  // Few rows split even into one chunk: a decode loop's growing keys then never change the program
  // (which would plan the loop anew instead of refreshing it).
  const bool split = s.split && s.Lq <= 8;
  // A split runs the decode kernel where it fits (else, or with $ONNXGPU_ATTENTION_DECODE=0, the
  // general tile), and the decode kernel's combine where the device allows its workgroups.
  const DecodeKnob knob = tile_knobs().decode;
  const std::optional<DecodeTile> dt = split && knob == DecodeKnob::Decode ? choose_decode(ctx, s) : std::nullopt;
  const uint32_t merge = split && knob != DecodeKnob::Tile ? combine_threads(ctx) : 0;
  Tile t = dt ? Tile{} : choose_tile(ctx, split);
  const Split sp = split ? choose_split(s, dt ? dt->keys() : t.keys) : Split{};
  // The decode kernel: one workgroup per (batch element, chunk); the tile: per 64 columns, RQ rows too.
  const uint64_t gx = dt ? 1 : (uint64_t(s.Dv) + kCols - 1) / kCols, gy = dt ? 1 : (uint64_t(s.Lq) + t.rows - 1) / t.rows,
                 gz = z_count * sp.chunks;
  if (gx > max_grid(ctx) || gy > max_grid(ctx) || gz > max_grid(ctx)) ctx.unsupported("attention too large for the device's grid");
  const size_t tensors = 4 + s.inputs.size() + s.extras.size() + (split ? 1 : 0);
  uint32_t most = ctx.limits.max_storage_buffers_per_shader_stage ? ctx.limits.max_storage_buffers_per_shader_stage : 8;
  if (tensors > most) ctx.unsupported("more tensors than the device binds per dispatch");

  std::string name = s.name;
  for (const auto& [tag, m] : {std::pair<const char*, const Matrix*>{"q", &s.q}, {"k", &s.k}, {"v", &s.v}})
    name += std::string("_") + tag + (m->layout.s_col == 1 ? "r" : "c");
  auto p = ctx.program(name + (dt ? "_decode" : split ? "_split" : "") + (!dt && t.quads ? "_quads" : ""),
                       dt ? dt->threads : t.threads());
  const bool wgsl = ctx.needs_wgsl(p, main_key(s, dt, t, split));
  p.input("q", s.q.t.dtype, Shape{int64_t(s.q.t.numel)});
  p.input("k", s.k.t.dtype, Shape{int64_t(s.k.t.numel)});
  p.input("v", s.v.t.dtype, Shape{int64_t(s.v.t.numel)});
  std::vector<ValueRef> binds{s.q.t.ref, s.k.t.ref, s.v.t.ref};
  for (const Spec::Extra& x : s.extras) {
    p.input(x.name, x.t.dtype, Shape{int64_t(x.t.numel)});
    binds.push_back(x.t.ref);
  }
  for (const ScoreInput& x : s.inputs) {
    p.input(x.name + "_in", x.t.dtype, Shape{int64_t(x.t.numel)});
    binds.push_back(x.t.ref);
  }
  ValueRef po{}, pml{};
  if (split) {
    po = ctx.temp(DType::Float32, Shape{int64_t(gz * uint64_t(s.Lq) * uint64_t(s.Dv))});
    pml = ctx.temp(DType::Float32, Shape{int64_t(gz * uint64_t(s.Lq) * 2)});
    p.output("po", DType::Float32, Shape{int64_t(gz * uint64_t(s.Lq) * uint64_t(s.Dv))});
    p.output("pml", DType::Float32, Shape{int64_t(gz * uint64_t(s.Lq) * 2)});
    binds.insert(binds.end(), {po, pml});
  } else {
    p.output("y", s.y.t.dtype, Shape{int64_t(s.y.t.numel)});
    binds.push_back(s.y.t.ref);
  }
  p.uniform("Lq", uint32_t(s.Lq));
  p.uniform("Lk", uint32_t(s.Lk));
  p.uniform("D", uint32_t(s.D));
  p.uniform("Dv", uint32_t(s.Dv));
  if (split) {
    p.uniform("NC", sp.chunks);
    p.uniform("CK", sp.keys);
  }
  for (const auto& [n, v] : s.uniforms) p.uniform(n, v);
  for (const auto& [n, v] : s.uniforms_f32) p.uniform_f32(n, v);
  std::vector<std::pair<std::string, const Layout*>> layouts{{"q", &s.q.layout}, {"k", &s.k.layout}, {"v", &s.v.layout}};
  if (!split) layouts.emplace_back("y", &s.y.layout);
  for (const ScoreInput& x : s.inputs) layouts.emplace_back(x.name, &x.layout);
  strided::declare(p, s.batch, layouts);
  if (wgsl) {
    ScoreWgsl score = dt ? score_wgsl(s) : score_wgsl(s, t.key("q"));
    if (dt) {
      p.declare(decode_decls(*dt) + reduce_util::kExpLog + score.fn);
      p.body(decode_body(*dt, s));
    } else {
      p.declare(tile_decls(t, s) + reduce_util::kExpLog + score.fn);
      p.body(body_wgsl(t, s, score, split));
    }
  }
  ctx.dispatch(p, binds, uint32_t(gx), uint32_t(gy), uint32_t(gz));
  // The two products, every row against every key (a causal or ranged row skips some: an upper bound).
  const uint64_t flops = 2 * z_count * uint64_t(s.Lq) * uint64_t(s.Lk) * uint64_t(s.D + s.Dv);
  if (split) {
    if (merge) emit_combine_rows(ctx, s, sp, po, pml, z_count, merge);
    else emit_combine(ctx, s, sp, po, pml, z_count);
  }
  ctx.count_flops(flops);
}

}  // namespace onnxgpu::webgpu::attention
