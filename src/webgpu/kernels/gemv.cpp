// Products of a few rows on the GPU: batch x [M, K] @ [K, N] with M <= kGemvMaxRows, such as a decode
// step's one-row products ([1, 768] @ [768, 3072]). Such a product reads each element of B once and
// does M multiply-adds with it: its time is the time it takes to read B. The tiled kernel (matmul.cpp)
// stages B through workgroup memory for a reuse across rows that one row does not have; these kernels
// are shaped for memory bandwidth instead:
// - every invocation issues several independent loads of B before it adds (U steps along k, of C
//   columns or one row each), and neighbouring invocations read neighbouring addresses;
// - A's rows come from the cache (every invocation of a workgroup reads the same few elements of A),
//   and each load of B serves the M rows;
// - a small B (at most 8M elements: every product of a GPT-2-small decode step) runs in one pass, its
//   grid N / 8 narrow workgroups (8 columns each, the other invocations along k): a second pass would
//   cost more than it saves. A larger B gets 64-column workgroups, its K range split over workgroups until
//   the grid has about 512 of them (enough for a large GPU to have much of the weight in flight at
//   once); the partial sums then go to matmul.cpp's second pass (sum_parts), which adds them and
//   applies the epilogue.
//
// Two kernels, by which axis of B is contiguous in memory:
// - columns (B [K, N] row-major, the usual weight): invocation (tx, ty) of a workgroup takes the CPI
//   columns n0 + tx + j * CT (CT neighbouring invocations read CT neighbouring elements of a row of B)
//   and the rows k = ty, ty + RT, ... of its K range; the RT partial sums of each column are added in
//   workgroup memory (a tree).
// - rows (B [N, K]: Gemm's transB, a Transpose folded in): each element of the product is a dot
//   product along k of a row of B; KT invocations share a row, reading neighbouring k, and add their
//   partial sums in workgroup memory (a tree); a workgroup takes W / KT rows.
// Operands and results go through matmul.h's declarations, so every fused form of the tiled kernel
// holds here too: A or B read through strides, a bias, Gemm's alpha, beta and C, a residual, an
// activation, the output written through strides or in parts.
// A LayerNormalization folded in before the product (matmul.h's Prologue, runtime/fusion.h's norm
// group): every workgroup first computes the rows' mean and 1 / sqrt(variance + epsilon) over all of K
// (norm_prologue.h, as the LayerNormalization kernel computes them), then each load of A returns the
// normalized value (a - mean) * inv * scale + B; the scale and B come from the cache with A. The
// split-K form takes it too (each part's workgroups compute the statistics over the whole row).
//
// The shape (workgroup size, columns per invocation, unroll, K split) comes from the device's limits
// and the product's sizes; it shows in the program, which a refresh compares (the plan's guard).
// $ONNXGPU_GEMV overrides it for measuring on a device: "off", or any of the settings "rows=4,
// small=8388608,small_ct=2,small_u=2,ct=16,cpi=4,u=4,target=512" (GemvSettings; small=0: always split).
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>

#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/matmul.h"
#include "webgpu/kernels/norm_prologue.h"

namespace onnxgpu::webgpu::products {

namespace {

// Measured on an H200 (docs/performance.md, "One-row products"): one pass with narrow workgroups
// (8 columns, 128 invocations along k) wins below ~8M elements of B, where the second pass's dispatch
// costs more than the pass itself (GPT-2's [768, 3072]: 17 us against 26 us, split); above, 64-column
// workgroups with K split over ~512 of them read B faster (a [5632, 2048] weight: 33 us against 37 us,
// GPT-2's [768, 50257] lm head: 69 us against 187 us).
struct GemvSettings {
  bool on = true;
  uint32_t max_rows = kGemvMaxRows;  // products of at most this many rows
  uint64_t small = uint64_t(1) << 23;  // columns kernel: B of at most this many elements runs in one pass ...
  uint32_t small_ct = 2;             // ... with this many column invocations per workgroup
  uint32_t small_unroll = 2;         // ... and this many K steps per loop iteration
  uint32_t ct = 16;                  // columns kernel: at most this many column invocations per workgroup
  uint32_t cpi = 4;                  // columns kernel: columns per invocation
  uint32_t unroll = 4;               // K steps per loop iteration (loads in flight per column or row)
  uint32_t target = 512;             // workgroups the K split aims at
  bool vec = true;                   // columns kernel: B read as vec4s where it can be (see Gemv::v4)
};

GemvSettings settings() {
  GemvSettings s;
  const char* e = std::getenv("ONNXGPU_GEMV");
  if (!e || !*e) return s;
  std::string text = e;
  if (text == "off" || text == "0") {
    s.on = false;
    return s;
  }
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string key = item.substr(0, eq);
    uint64_t big = std::strtoull(item.c_str() + eq + 1, nullptr, 10);
    uint32_t v = uint32_t(std::min<uint64_t>(big, 0xffffffffu));
    if (key == "small") s.small = big;  // 0: never one pass
    if (key == "vec") s.vec = big != 0;
    if (v == 0) continue;
    if (key == "rows") s.max_rows = std::min(v, kGemvMaxRows);
    else if (key == "small_ct") s.small_ct = v;
    else if (key == "small_u") s.small_unroll = std::min(v, 16u);
    else if (key == "ct") s.ct = v;
    else if (key == "cpi") s.cpi = std::min(v, 8u);
    else if (key == "u") s.unroll = std::min(v, 16u);
    else if (key == "target") s.target = v;
  }
  return s;
}

uint32_t pow2_floor(uint32_t v) {
  uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}
uint32_t pow2_ceil(uint64_t v) {
  uint32_t p = 1;
  while (p < v && p < (1u << 31)) p *= 2;
  return p;
}

// The kernel's shape for one product.
struct Gemv {
  bool rows = false;  // B read along k: the rows kernel
  uint32_t wg = 256;  // invocations per workgroup (a power of two)
  uint32_t ct = 1, cpi = 1;  // columns kernel: column invocations, columns per invocation
  uint32_t kt = 1;           // rows kernel: invocations per row
  uint32_t unroll = 1;
  uint32_t step = 1;         // how far an invocation moves along k per K step: RT (columns) or KT (rows)
  uint32_t per_group = 1;    // columns (or rows of B) per workgroup
  uint64_t groups = 1, batch = 1;
  uint32_t splits = 1, kchunk = 1;
  // Columns kernel: an invocation's CPI = 4 columns are neighbours, read with one 16-byte load per K
  // step (B float32, row-major, N a multiple of 4): a warp's load then brings whole 32-byte sectors,
  // where four scalar loads of columns CT apart each brought a quarter of one (H200: gpt2_kv's decode
  // step ... see docs/performance.md).
  bool v4 = false;
  std::string name() const {
    auto n = [](uint32_t v) { return std::to_string(v); };
    return rows ? "rows_" + n(kt) + "x" + n(wg / kt) + "_u" + n(unroll)
                : std::string(v4 ? "vcols_" : "cols_") + n(ct) + "x" + n(cpi) + "x" + n(wg / ct) + "_u" + n(unroll);
  }
};

std::optional<Gemv> shape_for(const GpuKernelContext& ctx, DType t, const Product& pr, const GemvSettings& s) {
  const Limits& l = ctx.limits;
  uint32_t inv = l.max_compute_invocations_per_workgroup ? l.max_compute_invocations_per_workgroup : 256;
  uint32_t wx = l.max_compute_workgroup_size_x ? l.max_compute_workgroup_size_x : 256;
  uint32_t mem = l.max_compute_workgroup_storage_size ? l.max_compute_workgroup_storage_size : 16384;
  uint64_t max_dim = l.max_compute_workgroups_per_dimension ? l.max_compute_workgroups_per_dimension : 65535;
  Gemv g;
  g.rows = b_read_along_k(pr);
  g.wg = pow2_floor(std::min({256u, inv, wx}));
  g.unroll = s.unroll;
  uint32_t ct = s.ct, target = s.target;
  if (!g.rows && uint64_t(pr.K) * pr.N * uint64_t(shape_numel(pr.b_batch)) <= s.small) {
    ct = s.small_ct;
    g.unroll = s.small_unroll;
    target = 0;
  }
  if (g.rows) {
    // Enough invocations per row that one loop iteration covers K where it can (K = 768: 256 of them).
    g.kt = std::min(g.wg, pow2_ceil((uint64_t(pr.K) + g.unroll - 1) / g.unroll));
    g.step = g.kt;
    g.per_group = g.wg / g.kt;
  } else {
    // No more column invocations than the columns need (a narrow product gives its invocations to k).
    g.cpi = std::min(s.cpi, g.wg);
    // A power of two (the sum over the k lanes halves STEP = WG / CT), whatever cpi an override gives.
    g.ct = std::min({pow2_floor(std::max(1u, ct)), pow2_ceil((uint64_t(pr.N) + g.cpi - 1) / g.cpi), pow2_floor(g.wg / g.cpi)});
    g.step = g.wg / g.ct;
    g.per_group = g.ct * g.cpi;
    g.v4 = s.vec && g.cpi == 4 && t == DType::Float32 && pr.N % 4 == 0 && !pr.lb.strided && !pr.trans_b;
  }
  // Workgroup memory: one partial sum per invocation and column.
  if (uint64_t(g.wg) * (g.rows ? 1 : g.cpi) * 4 > mem) return std::nullopt;
  g.groups = (uint64_t(pr.N) + g.per_group - 1) / g.per_group;
  g.batch = uint64_t(shape_numel(pr.batch));
  if (g.groups > max_dim || g.batch > max_dim) return std::nullopt;
  // Split K while the grid is short of the target and each part keeps U steps of every invocation.
  uint64_t wgs = g.groups * g.batch, min_part = uint64_t(g.step) * g.unroll, mn = uint64_t(pr.M) * pr.N;
  uint32_t splits = 1;
  while (wgs * splits < target && (uint64_t(pr.K) + splits * 2 - 1) / (splits * 2) >= min_part &&
         g.batch * splits * 2 <= max_dim && mn * g.batch * splits * 2 < (uint64_t(1) << 32))
    splits *= 2;
  g.kchunk = pr.K;
  if (splits > 1) {  // parts of whole K steps
    g.kchunk = uint32_t(((uint64_t(pr.K) + splits - 1) / splits + g.step - 1) / g.step * g.step);
    splits = uint32_t((uint64_t(pr.K) + g.kchunk - 1) / g.kchunk);
  }
  g.splits = splits;
  return g;
}

// The loads (branch-free: 0 outside the part or the matrix, so the loads issue back to back) and the
// kernel's constants and workgroup memory.
std::string gemv_decls(const Product& pr, const Gemv& g, const Prologue* pro) {
  std::string d = "const WG: u32 = " + u32_lit(g.wg) + ";\nconst STEP: u32 = " + u32_lit(g.step) +
                  ";\nconst U: u32 = " + u32_lit(g.unroll) + ";\n";
  d += g.rows ? "const KT: u32 = " + u32_lit(g.kt) + ";\nvar<workgroup> red: array<f32, " + u32_lit(g.wg) + ">;\n"
              : "const CT: u32 = " + u32_lit(g.ct) + ";\nconst CW: u32 = " + u32_lit(g.per_group) +
                    ";\nvar<workgroup> red: array<f32, " + u32_lit(uint64_t(g.wg) * g.cpi) + ">;  // [STEP][CW]\n";
  if (pro) {  // A's value normalized as the LayerNormalization kernel computes it (normalization.cpp)
    d += "fn nv(m: u32, k: u32) -> f32 { return a_load(m * K() + k); }\n"
         "fn load_a(base: u32, m: u32, k: u32, k_end: u32) -> f32 {\n"
         "  let inside = k < k_end;\n"
         "  let kk = select(0u, k, inside);\n"
         "  var r = (a_load(base + m * K() + kk) - ns_mean[m]) * ns_inv[m];\n"
         "  r = r * ln_g_load(kk);\n" +
         std::string(pro->has_shift ? "  r = r + ln_b_load(kk);\n" : "") +
         "  return select(0.0, r, inside);\n}\n";
  } else {
    d += "fn load_a(base: u32, m: u32, k: u32, k_end: u32) -> f32 {\n"
         "  let inside = k < k_end;\n"
         "  return select(0.0, a_load(select(0u, base + " + a_offset(pr) + ", inside)), inside);\n}\n";
  }
  if (g.v4)  // columns 4q ... 4q + 3 of row k (`base`: the matrix's first vec4)
    d += "fn load_b4(base: u32, k: u32, q: u32, k_end: u32) -> vec4<f32> {\n"
         "  let inside = k < k_end && q < N() / 4u;\n"
         "  return select(vec4<f32>(0.0), b_load4(select(0u, base + k * (N() / 4u) + q, inside)), inside);\n}\n";
  else
    d += "fn load_b(base: u32, k: u32, n: u32, k_end: u32) -> f32 {\n"
         "  let inside = k < k_end && n < N();\n"
         "  return select(0.0, b_load(select(0u, base + " + b_offset(pr) + ", inside)), inside);\n}\n";
  return d;
}

// The body: the K loop (unrolled in the text: U steps of loads, then the multiply-adds, so that the
// accumulators stay in registers), then the sums over the workgroup and the stores, row by row.
// `stats`: the prologue's statistics (norm_prologue.h), first.
std::string gemv_body(const Product& pr, const Gemv& g, bool split, const std::string& stats) {
  auto n_ = [](uint32_t v) { return std::to_string(v); };
  const uint32_t rows = pr.M, cols = g.rows ? 1 : g.cpi;
  // Accumulator of row m and column j of the invocation's (a vec4's component with v4).
  auto acc = [&](uint32_t m, uint32_t j) { return g.v4 ? "acc" + n_(m) + "[" + n_(j) + "]" : "acc" + n_(m) + "_" + n_(j); };
  // Column j of the invocation's, from the workgroup's first: neighbours with v4, else CT apart.
  auto col = [&](uint32_t j) { return g.v4 ? "tx * 4u + " + u32_lit(j) : j ? "tx + " + u32_lit(j) + " * CT" : std::string("tx"); };
  std::string b = stats;
  b += g.rows ? "  let kt = lid % KT;\n  let n = wid.x * (WG / KT) + lid / KT;\n"
              : "  let tx = lid % CT;\n  let ty = lid / CT;\n" +
                    std::string(g.v4 ? "  let q = wid.x * CT + tx;\n" : "  let n0 = wid.x * CW + tx;\n");
  b += "  let bz = wid.z / splits();\n"
       "  let k_begin = (wid.z % splits()) * kchunk();\n"
       "  let k_end = min(K(), k_begin + kchunk());\n"
       "  let a_base = " + a_matrix(pr) + ";\n"
       "  let b_base = " + std::string(g.v4 ? "b_mat(bz) * K() * (N() / 4u)" : b_matrix(pr)) + ";\n";
  for (uint32_t m = 0; m < rows; ++m) {
    if (g.v4) b += "  var acc" + n_(m) + " = vec4<f32>(0.0);\n";
    else
      for (uint32_t j = 0; j < cols; ++j) b += "  var " + acc(m, j) + " = 0.0;\n";
  }
  b += "  for (var k = k_begin + " + std::string(g.rows ? "kt" : "ty") + "; k < k_end; k = k + STEP * U) {\n";
  for (uint32_t u = 0; u < g.unroll; ++u) {
    std::string k = u ? "k + " + u32_lit(u) + " * STEP" : "k";
    if (g.v4) {
      b += "    let b" + n_(u) + " = load_b4(b_base, " + k + ", q, k_end);\n";
    } else {
      for (uint32_t j = 0; j < cols; ++j) {
        std::string n = g.rows ? "n" : j ? "n0 + " + u32_lit(j) + " * CT" : "n0";
        b += "    let b" + n_(u) + "_" + n_(j) + " = load_b(b_base, " + k + ", " + n + ", k_end);\n";
      }
    }
    for (uint32_t m = 0; m < rows; ++m)
      b += "    let a" + n_(u) + "_" + n_(m) + " = load_a(a_base, " + u32_lit(m) + ", " + k + ", k_end);\n";
  }
  for (uint32_t u = 0; u < g.unroll; ++u)
    for (uint32_t m = 0; m < rows; ++m) {
      const std::string a = "a" + n_(u) + "_" + n_(m);
      if (g.v4) b += "    acc" + n_(m) + " = fma(vec4<f32>(" + a + "), b" + n_(u) + ", acc" + n_(m) + ");\n";
      else
        for (uint32_t j = 0; j < cols; ++j)
          b += "    " + acc(m, j) + " = fma(" + a + ", b" + n_(u) + "_" + n_(j) + ", " + acc(m, j) + ");\n";
    }
  b += "  }\n";
  auto store = [&](const std::string& m, const std::string& n, const std::string& v) {
    return split ? "y_store((wid.z * M() + " + m + ") * N() + " + n + ", " + v + ");"
                 : "put(bz, " + m + ", " + n + ", " + v + ");";
  };
  for (uint32_t m = 0; m < rows; ++m) {
    b += "  workgroupBarrier();\n";
    if (g.rows) {
      b += "  red[lid] = " + acc(m, 0) + ";\n  workgroupBarrier();\n"
           "  for (var s = KT / 2u; s > 0u; s = s >> 1u) {\n"
           "    if (kt < s) { red[lid] = red[lid] + red[lid + s]; }\n"
           "    workgroupBarrier();\n  }\n"
           "  if (kt == 0u && n < N()) { " + store(u32_lit(m), "n", "red[lid]") + " }\n";
    } else {
      std::string sum, put;
      for (uint32_t j = 0; j < cols; ++j) {
        const std::string c = col(j);
        b += "  red[ty * CW + " + c + "] = " + acc(m, j) + ";\n";
        sum += "      red[ty * CW + " + c + "] = red[ty * CW + " + c + "] + red[(ty + s) * CW + " + c + "];\n";
        put += "    if (wid.x * CW + " + c + " < N()) { " + store(u32_lit(m), "wid.x * CW + " + c, "red[" + c + "]") + " }\n";
      }
      b += "  workgroupBarrier();\n"
           "  for (var s = STEP / 2u; s > 0u; s = s >> 1u) {\n"
           "    if (ty < s) {\n" + sum + "    }\n"
           "    workgroupBarrier();\n  }\n"
           "  if (ty == 0u) {\n" + put + "  }\n";
    }
  }
  return b;
}

}  // namespace

bool gemv_float(GpuKernelContext& ctx, DType t, const Product& pr, const Epilogue& ep, const Prologue* pro) {
  const GemvSettings s = settings();
  if (!s.on || pr.M > s.max_rows || pr.M == 0) return false;
  // The prologue reads A's rows in place: float32, contiguous, one matrix.
  if (pro && (t != DType::Float32 || pr.la.strided || pr.trans_a || !pr.batch.empty() || pr.K == 0)) return false;
  std::optional<Gemv> found = shape_for(ctx, t, pr, s);
  if (!found) return false;
  const Gemv& g = *found;
  const bool split = g.splits > 1;
  const bool with_c = ep.has_c && !split, with_r = ep.has_r && !split;
  if (pro) {  // A, B, (C, R,) the outputs, the scale (and shift) and the status words
    const size_t outs = split || pr.parts.empty() ? 1 : pr.parts.size();
    const uint32_t most = ctx.limits.max_storage_buffers_per_shader_stage ? ctx.limits.max_storage_buffers_per_shader_stage : 8;
    if (2 + with_c + with_r + outs + (pro->has_shift ? 2 : 1) + 1 > most) return false;
  }
  std::string name = "gemv_" + g.name() + "_m" + std::to_string(pr.M) + (pr.la.strided ? "_sa" : "") +
                     (pr.lb.strided ? "_sb" : "") + (pr.ly.strided && !split ? "_sy" : "") +
                     (pr.parts.empty() || split ? "" : "_parts" + std::to_string(pr.parts.size())) +
                     (a_read_along_m(pr) ? "_ta" : "") + (pr.trans_b ? "_tb" : "") + (with_c ? "_c" : "") +
                     (with_r ? "_r" : "") + (split ? "_split" : "") + (pro ? (pro->has_shift ? "_lnb" : "_ln") : "");
  auto p = ctx.program(name, g.wg);
  Shape part_shape{int64_t(uint64_t(pr.M) * pr.N * g.batch * g.splits)};
  declare_operands(ctx, p, t, pr, ep, with_c, with_r, pr.ly.strided && !split, split ? DType::Float32 : t,
                   split ? part_shape : pr.stored, !split && !pr.parts.empty());
  if (g.v4) p.vec4(1);  // b
  p.uniform("splits", g.splits);
  p.uniform("kchunk", g.kchunk);
  ValueRef part = split ? ctx.temp(DType::Float32, part_shape) : ValueRef{};
  std::vector<ValueRef> binds = split ? operand_bindings(ctx, false, false, part)
                                      : operand_bindings(ctx, with_c, with_r, ctx.out(0), pr.parts.size());
  std::string stats;
  if (pro) {  // (declared after the outputs: bound after them)
    p.input("ln_g", t, Shape{shape_numel(ctx.shape(pro->scale))});
    binds.push_back(ctx.in(pro->scale));
    if (pro->has_shift) {
      p.input("ln_b", t, Shape{shape_numel(ctx.shape(pro->shift))});
      binds.push_back(ctx.in(pro->shift));
    }
    p.uniform_f32("eps", pro->epsilon);
    const RowStatsWgsl st = row_stats_wgsl(pr.M, g.wg, true, "red");
    p.declare(st.decl);
    stats = st.body;
  }
  p.declare(gemv_decls(pr, g, pro) + (split ? "" : epilogue_decl(ep) + put_decl(pr)));
  p.body(gemv_body(pr, g, split, stats));
  if (!split) {
    ctx.dispatch(p, binds, uint32_t(g.groups), 1, uint32_t(g.batch));
    return true;
  }
  ctx.dispatch(p, binds, uint32_t(g.groups), 1, uint32_t(g.batch * g.splits));
  sum_parts(ctx, t, pr, ep, part, part_shape, g.splits);
  return true;
}

}  // namespace onnxgpu::webgpu::products
