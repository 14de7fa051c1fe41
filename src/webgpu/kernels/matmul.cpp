// MatMul and Gemm on the GPU; MatMulInteger, QLinearMatMul, MatMulIntegerToFloat, Det and Einsum (direct
// kernels, at the end).
//
// Floats (float32, and float16 / bfloat16 / float64 through the f32 accessors) run a tiled kernel: each
// workgroup computes a TM x TN tile of the output, staging K-slices of A and B (TK wide) in workgroup
// memory while the next slice is already being loaded into registers; each invocation accumulates an
// RM x 4 micro-tile in registers. A float32 operand read row-major in place whose rows are whole vec4s
// (K % 4 == 0 for A, N % 4 == 0 for B) is loaded a vec4 at a time (programs `_va`, `_vb`; see tiled_vec;
// $ONNXGPU_MATMUL_VEC=0 turns it off). The batch (numpy-broadcast batch dims of MatMul) is the z
// dimension of the grid; when B has no batch, A's batch is folded into M so that [1, S, 768] @ [768, N] is one
// [S, 768] @ [768, N] product. When the output has too few tiles to fill the GPU (short sequences, a
// single row) the K range is split over workgroups and the partial sums added by a second pass, which
// also normalizes the rows when a normalization of the result joined the product (PostNorm, matmul.h).
// Gemm uses the same kernel with the transposes as index options and an epilogue alpha * AB + beta * C.
// Products of a few rows (M <= 4: a decode step's [1, K] @ [K, N]) are bound by reading B, which the
// tiled kernel reads at a fraction of the memory bandwidth: they run gemv.cpp's kernels instead.
// Both share what matmul.h declares: the product, its epilogue, the operands and how results are put.
//
// Integers (int32, int64, uint32, uint64) run one invocation per output element with the family
// helpers, so INT64 is exact (wrapping like numpy) by construction.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "ops/broadcast.h"
#include "ops/einsum.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "webgpu/device.h"
#include "webgpu/kernels/fused_steps.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/matmul.h"
#include "webgpu/kernels/row_norm.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {

// ------------------------------------------------------------------ shared by the float kernels (matmul.h)

namespace products {

void declare_operands(GpuKernelContext& ctx, shader::Program& p, DType t, const Product& pr, const Epilogue& ep,
                      bool with_c, bool with_r, bool out_strided, DType out_dtype, const Shape& out_shape,
                      bool in_parts) {
  // The kernels index the operands linearly: declared flat, the WGSL text depends on no operand's rank.
  auto flat = [](const Shape& s) { return Shape{shape_numel(s)}; };
  p.input("a", t, flat(ctx.shape(0)));
  p.input("b", t, flat(ctx.shape(1)));
  if (with_c) p.input("c", t, flat(ctx.shape(2)));
  if (with_r) p.input("r", t, flat(ctx.shape(3)));
  if (!in_parts) {
    p.output("y", out_dtype, flat(out_shape));
  } else {
    for (size_t k = 0; k < pr.parts.size(); ++k) {
      p.output("y" + std::to_string(k), t, flat(ctx.outputs.at(k).shape));
      p.uniform("w" + std::to_string(k), pr.parts[k]);
    }
  }
  p.uniform("M", pr.M);
  p.uniform("N", pr.N);
  p.uniform("K", pr.K);
  // Matrix index of batch element z in A and B; for a strided operand, the offset of its matrix z.
  p.broadcast_index("a_mat", pr.a_batch, pr.batch);
  p.broadcast_index("b_mat", pr.b_batch, pr.batch);
  strided::declare(p, pr.batch, {{"a", &pr.la}, {"b", &pr.lb}, {"y", out_strided ? &pr.ly : nullptr}});
  if (with_c) {
    p.uniform("c_sm", ep.c_sm);
    p.uniform("c_sn", ep.c_sn);
  }
  p.uniform_f32("alpha", ep.alpha);
  p.uniform_f32("beta", ep.beta);
}

std::vector<ValueRef> operand_bindings(GpuKernelContext& ctx, bool with_c, bool with_r, ValueRef out,
                                       size_t parts) {
  std::vector<ValueRef> b{ctx.in(0), ctx.in(1)};
  if (with_c) b.push_back(ctx.in(2));
  if (with_r) b.push_back(ctx.in(3));
  if (parts == 0) b.push_back(out);
  for (size_t k = 0; k < parts; ++k) b.push_back(ctx.out(k));
  return b;
}

// put: at the element's place in the output, through the output's strides, or in the part of the
// output that column n falls in.
std::string put_decl(const Product& pr) {
  std::string f = "fn put(z: u32, m: u32, n: u32, v: f32) {\n  let i = (z * M() + m) * N() + n;\n";
  if (pr.ly.strided) return f + "  y_store(y_boff(z) + m * y_sr() + n * y_sc(), epilogue(v, m, n, i));\n}\n";
  if (pr.parts.empty()) return f + "  y_store(i, epilogue(v, m, n, i));\n}\n";
  f += "  let e = epilogue(v, m, n, i);\n  var c = n;\n";
  for (size_t k = 0; k < pr.parts.size(); ++k) {
    std::string w = "w" + std::to_string(k) + "()", y = "y" + std::to_string(k);
    if (k + 1 == pr.parts.size()) {
      f += "  " + y + "_store((z * M() + m) * " + w + " + c, e);\n";
    } else {
      f += "  if (c < " + w + ") { " + y + "_store((z * M() + m) * " + w + " + c, e); return; }\n  c = c - " + w + ";\n";
    }
  }
  return f + "}\n";
}

std::string epilogue_decl(const Epilogue& ep) {
  std::string e = "alpha() * v";
  if (ep.has_c) e += " + beta() * c_load(m * c_sm() + n * c_sn())";
  if (ep.has_r) e += " + r_load(i)";
  if (ep.act.empty()) return "fn epilogue(v: f32, m: u32, n: u32, i: u32) -> f32 { return " + e + "; }\n";
  return ep.act_decls + "fn epilogue(v: f32, m: u32, n: u32, i: u32) -> f32 {\n  let p = " + e + ";\n" + ep.act + "}\n";
}

std::string a_offset(const Product& pr) {
  return pr.la.strided ? "m * a_sr() + k * a_sc()" : pr.trans_a ? "k * M() + m" : "m * K() + k";
}
std::string b_offset(const Product& pr) {
  return pr.lb.strided ? "k * b_sr() + n * b_sc()" : pr.trans_b ? "n * K() + k" : "k * N() + n";
}
std::string a_matrix(const Product& pr) { return pr.la.strided ? "a_boff(bz)" : "a_mat(bz) * M() * K()"; }
std::string b_matrix(const Product& pr) { return pr.lb.strided ? "b_boff(bz)" : "b_mat(bz) * K() * N()"; }
bool a_read_along_m(const Product& pr) { return pr.la.strided ? pr.la.s_col != 1 : pr.trans_a; }
bool b_read_along_k(const Product& pr) { return pr.lb.strided ? pr.lb.s_col != 1 : pr.trans_b; }

std::string text_key(const Product& pr, const Epilogue& ep) {
  return "batch " + std::to_string(pr.batch.size()) + "," + std::to_string(pr.a_batch.size()) + "," +
         std::to_string(pr.b_batch.size()) + (ep.has_c ? " c" : "") + (ep.has_r ? " r" : "") + "\n" + ep.act_decls +
         "\n" + ep.act;
}

VecLoads vec_loads() {
  const char* e = std::getenv("ONNXGPU_MATMUL_VEC");
  const std::string v = e ? e : "";
  VecLoads r;
  if (v == "0" || v == "off") r.a = r.b = false;
  else if (v == "a") r.b = false;
  else if (v == "b") r.a = false;
  return r;
}

namespace {

// What split-K's summing passes read, declared in p with their bindings appended to `binds`: the partial
// sums `part`, C and R (the epilogue's), the uniforms M, N, splits, c_sm, c_sn, alpha, beta, and
// `fn summed(i: u32) -> f32`, the sum of output element i's parts.
void declare_summed(GpuKernelContext& ctx, shader::Program& p, DType t, const Product& pr, const Epilogue& ep,
                    ValueRef part, const Shape& part_shape, uint32_t splits, std::vector<ValueRef>& binds) {
  p.input("part", DType::Float32, part_shape);
  binds.push_back(part);
  if (ep.has_c) {
    p.input("c", t, Shape{shape_numel(ctx.shape(2))});
    binds.push_back(ctx.in(2));
  }
  if (ep.has_r) {
    p.input("r", t, Shape{shape_numel(ctx.shape(3))});
    binds.push_back(ctx.in(3));
  }
  p.uniform("M", pr.M);
  p.uniform("N", pr.N);
  p.uniform("splits", splits);
  if (ep.has_c) {
    p.uniform("c_sm", ep.c_sm);
    p.uniform("c_sn", ep.c_sn);
  }
  p.uniform_f32("alpha", ep.alpha);
  p.uniform_f32("beta", ep.beta);
  p.declare(
      "fn summed(i: u32) -> f32 {\n"
      "  let mn = M() * N();\n"
      "  let at = (i / mn) * splits() * mn + i % mn;\n"
      "  var s = 0.0;\n"
      "  for (var k = 0u; k < splits(); k = k + 1u) { s = s + part_load(at + k * mn); }\n"
      "  return s;\n"
      "}\n");
}

}  // namespace

// One invocation per output element.
void sum_parts(GpuKernelContext& ctx, DType t, const Product& pr, const Epilogue& ep, ValueRef part,
               const Shape& part_shape, uint32_t splits) {
  auto r = ctx.program(std::string("split_sum") + (ep.has_c ? "_c" : "") + (ep.has_r ? "_r" : "") +
                       (pr.ly.strided ? "_sy" : "") + (pr.parts.empty() ? "" : "_parts" + std::to_string(pr.parts.size())));
  const bool wgsl = ctx.needs_wgsl(r, text_key(pr, ep));
  std::vector<ValueRef> binds;
  declare_summed(ctx, r, t, pr, ep, part, part_shape, splits, binds);
  if (pr.parts.empty()) {
    r.output("y", t, Shape{shape_numel(pr.out)});
    binds.push_back(ctx.out(0));
  }
  for (size_t k = 0; k < pr.parts.size(); ++k) {
    r.output("y" + std::to_string(k), t, Shape{shape_numel(ctx.outputs.at(k).shape)});
    r.uniform("w" + std::to_string(k), pr.parts[k]);
    binds.push_back(ctx.out(k));
  }
  strided::declare(r, pr.batch, {{"y", &pr.ly}});
  if (wgsl) r.declare(epilogue_decl(ep) + put_decl(pr));
  r.set_threads(uint64_t(pr.M) * pr.N * uint64_t(shape_numel(pr.batch)));
  r.body(
      "  let mn = M() * N();\n"
      "  let e = gi % mn;\n"
      "  put(gi / mn, e / N(), e % N(), summed(gi));\n");
  ctx.dispatch(r, binds);
}

namespace {

// The post-normalization's row pass (PostNorm), one workgroup per row. With `part` (split-K's partial
// sums, [batch][splits][M][N] float32) each value is the sum of its parts with the epilogue applied, and
// h is stored as it is summed when kept; without it the product is already stored in output 0: h, or the
// normalized output itself, then normalized in place (row_norm::body writes each element after reading
// the row).
void normalize_rows(GpuKernelContext& ctx, DType t, const Product& pr, const Epilogue& ep, const PostNorm& post,
                    const ValueRef* part, const Shape& part_shape, uint32_t splits) {
  const uint32_t wgs = row_norm::workgroup(ctx.limits);
  const bool summing = part != nullptr;
  auto p = ctx.program(std::string("post_norm") + (post.centered ? "" : "_rms") + (summing ? "_sum" : "") +
                           (summing && ep.has_c ? "_c" : "") + (summing && ep.has_r ? "_r" : "") +
                           (post.keeps_sum ? "_keep" : "") + (post.has_scale ? "_s" : "") + (post.has_shift ? "_b" : ""),
                       wgs);
  const bool wgsl = ctx.needs_wgsl(p, text_key(pr, ep));
  std::vector<ValueRef> binds;
  row_norm::RowSpec r;
  r.centered = post.centered;
  std::string value;
  if (summing) {
    declare_summed(ctx, p, t, pr, ep, *part, part_shape, splits, binds);
    if (post.keeps_sum) {
      p.output("h", t, pr.out);
      binds.push_back(ctx.out(0));
      r.sum = "h_store(i, v);";
    }
    p.declare(epilogue_decl(ep));
    value =
        "fn xv(i: u32) -> f32 {\n"
        "  let e = i % (M() * N());\n"
        "  return epilogue(summed(i), e / N(), e % N(), i);\n"
        "}\n";
    // The values in the invocations' registers summed together, their parts' loads issued at once (row
    // `row` is row m of batch element z; columns past the row read column 0 and are not used).
    static_assert(row_norm::kCached == 4, "the statements below set v0 ... v3");
    r.cached =
        "  {\n"
        "    let mn = M() * N();\n"
        "    let m = row % M();\n"
        "    let at0 = (row / M()) * splits() * mn + m * N();\n"
        "    let c0 = select(0u, j0, j0 < n);\n"
        "    let c1 = select(0u, j1, j1 < n);\n"
        "    let c2 = select(0u, j2, j2 < n);\n"
        "    let c3 = select(0u, j3, j3 < n);\n"
        "    for (var k = 0u; k < splits(); k = k + 1u) {\n"
        "      let at = at0 + k * mn;\n"
        "      v0 = v0 + part_load(at + c0);\n"
        "      v1 = v1 + part_load(at + c1);\n"
        "      v2 = v2 + part_load(at + c2);\n"
        "      v3 = v3 + part_load(at + c3);\n"
        "    }\n"
        "    v0 = epilogue(v0, m, c0, base + c0);\n"
        "    v1 = epilogue(v1, m, c1, base + c1);\n"
        "    v2 = epilogue(v2, m, c2, base + c2);\n"
        "    v3 = epilogue(v3, m, c3, base + c3);\n"
        "  }\n";
  } else if (post.keeps_sum) {
    p.input("h", t, pr.out);
    binds.push_back(ctx.out(0));
    value = "fn xv(i: u32) -> f32 { return h_load(i); }\n";
  } else {
    value = "fn xv(i: u32) -> f32 { return y_load(i); }\n";
  }
  if (post.has_scale) {
    p.input("g", DType::Float32, Shape{int64_t(pr.N)});
    binds.push_back(ctx.in(post.scale));
    r.scale = "g_load(j)";
  }
  if (post.has_shift) {
    p.input("b", DType::Float32, Shape{int64_t(pr.N)});
    binds.push_back(ctx.in(post.shift));
    r.shift = "b_load(j)";
  }
  p.output("y", t, pr.out);
  binds.push_back(ctx.out(post.keeps_sum ? 1 : 0));
  const uint64_t rows = uint64_t(shape_numel(pr.out)) / pr.N;
  p.uniform("rows", strided::u32_dim(ctx, int64_t(rows), "the rows"));
  p.uniform("len", pr.N);
  p.uniform_f32("eps", post.epsilon);
  if (wgsl) {
    p.declare(row_norm::sum_decl(wgs));
    p.declare(value);
    p.body(row_norm::body(r));
  }
  row_norm::dispatch(ctx, p, std::move(binds), rows);
}

// Whether split-K's summing pass can normalize too: its storage bindings (the status buffer, the parts,
// C, R, h when kept, the scale and shift, the output) within the device's.
bool sums_normalized(const GpuKernelContext& ctx, const Epilogue& ep, const PostNorm& post) {
  const uint32_t most = ctx.limits.max_storage_buffers_per_shader_stage ? ctx.limits.max_storage_buffers_per_shader_stage : 8;
  const uint32_t used = 3 + ep.has_c + ep.has_r + post.keeps_sum + post.has_scale + post.has_shift;
  return used <= most;
}

}  // namespace

}  // namespace products

namespace {

using namespace products;

const DTypeSet kMatMulTypes{DType::Float16, DType::Float32, DType::Float64, DType::BFloat16,
                            DType::Int32,   DType::Int64,   DType::UInt32,  DType::UInt64};

using strided::Layout;
using strided::u32_dim;

// numpy matmul shapes: 1-D operands are promoted (a 1 prepended to A / appended to B, then removed
// from the output) and the batch dims broadcast.
Product plan_matmul(GpuKernelContext& ctx, const Shape& a, const Shape& b, bool fold_batch = true) {
  ops::MatMulShape s = ops::matmul_shape(a, b, [&](const std::string& m) { ctx.fail(m); });
  Product p;
  p.M = u32_dim(ctx, s.M, "M");
  p.K = u32_dim(ctx, s.K, "K");
  p.N = u32_dim(ctx, s.N, "N");
  p.a_batch = s.a_batch;
  p.b_batch = s.b_batch;
  p.batch = s.batch;
  p.out = s.out;
  // B without a batch: A's batch rows are just more rows of one product (same output layout).
  if (fold_batch && shape_numel(p.b_batch) == 1 && shape_numel(p.a_batch) == shape_numel(p.batch)) {
    uint64_t rows = uint64_t(shape_numel(p.batch)) * p.M;
    if (rows <= 0xffffffffu) {
      p.M = uint32_t(rows);
      p.a_batch.clear();
      p.b_batch.clear();
      p.batch.clear();
    }
  }
  return p;
}

// A tile shape of the float kernel: TM x TN outputs per workgroup, K-slices of TK; each invocation
// accumulates RM rows x CN vec4 columns in registers (its columns are CN vec4s TX apart, so that
// neighbouring invocations read neighbouring vec4s of the B tile).
struct Tile {
  uint32_t tm, tn, tk, rm, cn = 1;
  bool two_buffers = false;  // the tiles staged twice: one barrier a K-slice (tiled_body)
  uint32_t tx() const { return tn / (4 * cn); }
  uint32_t threads() const { return tx() * (tm / rm); }
  // The vec4s of one A tile [TM][TK/4 + 1] and one B tile [TK][TN/4 + 1] (padded rows).
  uint32_t a_words() const { return tm * (tk / 4 + 1); }
  uint32_t b_words() const { return tk * (tn / 4 + 1); }
  uint32_t shared_bytes() const { return 16 * (a_words() + b_words()) * (two_buffers ? 2 : 1); }
  bool fits(const Limits& l) const {
    uint32_t inv = l.max_compute_invocations_per_workgroup ? l.max_compute_invocations_per_workgroup : 256;
    uint32_t mem = l.max_compute_workgroup_storage_size ? l.max_compute_workgroup_storage_size : 16384;
    uint32_t wx = l.max_compute_workgroup_size_x ? l.max_compute_workgroup_size_x : 256;
    // Every invocation moves the same number of vec4s of each tile.
    return tn % (4 * cn) == 0 && tm % rm == 0 && threads() <= std::min({inv, wx, 256u}) &&
           shared_bytes() <= mem && (tm * tk / 4) % threads() == 0 && (tk * tn / 4) % threads() == 0;
  }
  std::string name() const {
    return std::to_string(tm) + "x" + std::to_string(tn) + "x" + std::to_string(tk) + "_" + std::to_string(rm) + "x" +
           std::to_string(cn) + (two_buffers ? "_db" : "");
  }
};

uint64_t tiles_of(const Product& pr, uint32_t tm, uint32_t tn) {
  return uint64_t((pr.M + tm - 1) / tm) * ((pr.N + tn - 1) / tn) * uint64_t(shape_numel(pr.batch));
}

// $ONNXGPU_MATMUL_TILE = "TMxTNxTK/RMxCN" (e.g. 128x64x16/8x1) picks the tile for M > 32, and
// $ONNXGPU_MATMUL_TILE_SMALL the one for M <= 32, for measuring tile shapes on a device (bench/variants.py);
// unset, the table below decides.
std::optional<Tile> tile_from_env(const char* name) {
  const char* e = std::getenv(name);
  if (!e || !*e) return std::nullopt;
  Tile t{};
  if (std::sscanf(e, "%ux%ux%u/%ux%u", &t.tm, &t.tn, &t.tk, &t.rm, &t.cn) != 5 || !t.tm || !t.tn || !t.tk ||
      !t.rm || !t.cn || t.tk % 4 != 0)
    return std::nullopt;
  return t;
}

// Products of at most this many rows take 32 x 64 tiles: a short sequence wastes less of the A tile, and
// at 128 or 256 rows (an encoder at sequence 128, batch 1 or 2) the grid has twice the workgroups of 64 x 64
// tiles, fewer of them split over K. Measured on an H200 (docs/performance.md item 15, `bench/env_ab.py`):
// whole BERT, GPT-2 (M = 128) and T5, BERT at batch 2 (M = 256) runs 3-5% faster than with 64 x 64.
constexpr uint32_t kNarrowTileRows = 256;

// Above kNarrowTileRows rows, 64 x 64 tiles only where they alone make a grid of this many workgroups
// (batch included); a smaller grid takes 32 x 64 tiles, twice the workgroups in flight, which a K loop
// bound by its loads' latency needs more than the wider tile's reuse of B. Measured on an H100
// (docs/performance.md item 27): with vision transformers' products (M = 394 to 6,272, 28 to 392 tiles of
// 64 x 64) DeiT runs 11-13% faster, DINOv2, YOLOS, BEiT, Swin 2-12%, the rest of nine models 1-8% or even;
// encoders up to 256 rows do not change. $ONNXGPU_MATMUL_WIDE_GRID sets it (0: 64 x 64 for every product
// above kNarrowTileRows rows, the rule before), for measuring.
constexpr uint64_t kWideTileGrid = 1024;

uint64_t wide_tile_grid() {
  const char* e = std::getenv("ONNXGPU_MATMUL_WIDE_GRID");
  return e && *e ? std::strtoull(e, nullptr, 10) : kWideTileGrid;
}

// Picks the tile: 32 x 64 up to kNarrowTileRows rows or below kWideTileGrid workgroups of 64 x 64, else
// 64 x 64, with K-slices of 16 and 4 x 4 per invocation; smaller tiles where the device's limits demand
// it. Measured on an H200 with bench/variants.py and env_ab.py: larger register tiles (8 x 8 per
// invocation, 128-wide tiles, K-slices of 32) were 10-50% slower, and 32 x 32 tiles no faster than
// 64 x 64 at M = 128 and 256.
// $ONNXGPU_MATMUL_BUFFERS=2 stages the tiles twice where workgroup memory allows (one barrier a K-slice
// instead of two), for measuring.
Tile choose_tile(const Limits& limits, const Product& pr) {
  std::vector<Tile> order;
  if (auto t = tile_from_env(pr.M <= 32 ? "ONNXGPU_MATMUL_TILE_SMALL" : "ONNXGPU_MATMUL_TILE")) order.push_back(*t);
  if (pr.M <= kNarrowTileRows || tiles_of(pr, 64, 64) < wide_tile_grid()) order.push_back({32, 64, 16, 4, 1});
  order.insert(order.end(), {{64, 64, 16, 4, 1}, {32, 64, 16, 4, 1}, {32, 32, 16, 4, 1}, {16, 16, 16, 4, 1}});
  const char* bufs = std::getenv("ONNXGPU_MATMUL_BUFFERS");
  const bool two = bufs && std::string(bufs) == "2";
  for (Tile t : order) {
    t.two_buffers = two;
    if (!t.fits(limits)) t.two_buffers = false;  // one buffer where two do not fit
    if (t.fits(limits)) return t;
  }
  return {8, 8, 8, 4, 1};  // 2 x 2 invocations: fits any device
}

// Split-K: when the output has too few tiles to occupy the GPU, the K range is cut into parts computed by
// separate workgroups (partial sums in a temporary buffer, then summed by a second pass).
uint32_t choose_splits(const Product& pr, const Tile& tl) {
  uint64_t wgs = tiles_of(pr, tl.tm, tl.tn);
  // $ONNXGPU_MATMUL_SPLIT = "WGS/KT/MAX" (experiments): split until WGS workgroups, each part keeping
  // at least KT K-tiles, at most MAX parts.
  // Short products (a single row, a short sequence) gain from more, shorter parts; at M = 128 the
  // partial sums' traffic outweighs it (measured on the H200 with bench/variants.py).
  bool short_m = pr.M <= 32;
  uint32_t target = short_m ? 2048 : 512, min_kt = short_m ? 4 : 8, max_splits = 16;
  const char* e = std::getenv("ONNXGPU_MATMUL_SPLIT");
  if (e && *e) std::sscanf(e, "%u/%u/%u", &target, &min_kt, &max_splits);
  uint32_t splits = 1;
  while (wgs * splits < target && pr.K / (splits * 2) >= min_kt * tl.tk && splits < max_splits) splits *= 2;
  // A grid still under half the target (an output of few tiles and a short K: attention's output
  // projection at sequence 128 has 24 tiles of K = 768) splits on, down to parts of 4 K-tiles.
  while (!(e && *e) && wgs * splits < target / 2 && pr.K / (splits * 2) >= 4 * tl.tk && splits < max_splits) splits *= 2;
  return splits;
}

// The tiled float kernel's grid: (N tiles, M tiles, batch x splits), each split a K range of `kchunk`
// (a multiple of TK). Unsupported when the tiles alone exceed the device's grid; no split where the
// splits would (or would overflow the 32-bit index of the partial sums).
struct TiledGrid {
  uint64_t x, y, batch;
  uint32_t splits, kchunk;
  bool split() const { return splits > 1; }
};
TiledGrid tiled_grid(const GpuKernelContext& ctx, const Product& pr, const Tile& tl) {
  TiledGrid g{(pr.N + tl.tn - 1) / tl.tn, (pr.M + tl.tm - 1) / tl.tm, uint64_t(shape_numel(pr.batch)),
              choose_splits(pr, tl), pr.K};
  uint64_t max_dim = ctx.limits.max_compute_workgroups_per_dimension ? ctx.limits.max_compute_workgroups_per_dimension : 65535;
  if (g.x > max_dim || g.y > max_dim || g.batch > max_dim) ctx.unsupported("product too large for the device's grid");
  uint64_t mn = uint64_t(pr.M) * pr.N;
  if (g.batch * g.splits > max_dim || mn * g.batch * g.splits >= (uint64_t(1) << 32)) g.splits = 1;
  if (g.splits > 1) {
    g.kchunk = ((pr.K + g.splits - 1) / g.splits + tl.tk - 1) / tl.tk * tl.tk;
    g.splits = (pr.K + g.kchunk - 1) / g.kchunk;
  }
  return g;
}

// The vec4s of the A tile and of the B tile each invocation moves per K-slice.
uint32_t a_share(const Tile& tl) { return tl.tm * tl.tk / tl.threads() / 4; }
uint32_t b_share(const Tile& tl) { return tl.tk * tl.tn / tl.threads() / 4; }

// Which operands the tiled kernel reads as vec4s (one 16-byte load for four elements of a row): a
// float32 operand read row-major in place (not strided, not transposed) whose rows are a whole number of
// vec4s (K % 4 == 0 for A, N % 4 == 0 for B). Every quad the kernel loads then starts at a multiple of 4
// (k and n of a quad are multiples of 4: the K range and its split parts start at multiples of TK, the
// tiles at multiples of TN; the matrices of a batch are M x K and K x N elements apart) and lies wholly
// inside the matrix or wholly outside it. Else four scalar loads, each checked.
VecLoads tiled_vec(DType t, const Product& pr) {
  VecLoads v = vec_loads();
  const bool any = t == DType::Float32 && pr.K > 0;  // (K = 0: an empty operand, nothing to read)
  v.a = v.a && any && !pr.la.strided && !a_read_along_m(pr) && pr.K % 4 == 0;
  v.b = v.b && any && !pr.lb.strided && !b_read_along_k(pr) && pr.N % 4 == 0;
  return v;
}

// The tiled kernel's declarations: the tile's constants and workgroup tiles, the element loads, the
// slots each invocation moves, and (when not split) the epilogue.
std::string tiled_decls(const Product& pr, const Tile& tl, const Epilogue& ep, bool split, const VecLoads& vec) {
  std::string decl =
      "const TM: u32 = " + u32_lit(tl.tm) + ";\nconst TN: u32 = " + u32_lit(tl.tn) + ";\nconst TK: u32 = " + u32_lit(tl.tk) +
      ";\nconst RM: u32 = " + u32_lit(tl.rm) + ";\nconst NT: u32 = " + u32_lit(tl.threads()) + ";\nconst TX: u32 = " + u32_lit(tl.tx()) + ";\n"
      "const AS: u32 = TK / 4u + 1u;  // vec4s per row of the A tile (one of padding)\n"
      "const BS: u32 = TN / 4u + 1u;  // vec4s per row of the B tile\n" +
      // The tiles are arrays of rows so that, in the K loop, each index the robustness transform clamps is
      // either a constant once the loop is unrolled (the k-quad, B's row) or the same at every step (the
      // invocation's rows and columns): the clamps leave the loop. A flat index (row * AS + kk) costs a
      // clamp and an address computation at every load (measured on an H200, docs/performance.md item 24).
      (tl.two_buffers ? "var<workgroup> As: array<array<array<vec4<f32>, AS>, TM>, 2>;  // As[buffer][m][k-quad]\n"
                        "var<workgroup> Bs: array<array<array<vec4<f32>, BS>, TK>, 2>;  // Bs[buffer][k][n-quad]\n"
                      : "var<workgroup> As: array<array<vec4<f32>, AS>, TM>;  // As[m][k-quad]\n"
                        "var<workgroup> Bs: array<array<vec4<f32>, BS>, TK>;  // Bs[k][n-quad]\n");
  // Each invocation moves whole vec4s of the tiles: slot g of the A tile is row g / (TK/4), k-quad
  // g % (TK/4) (consecutive invocations read consecutive addresses of A), or, A transposed, row g % TM,
  // k-quad g / TM (consecutive invocations read consecutive m); likewise for B with (k, n-quad).
  decl += a_read_along_m(pr) ? "fn a_slot(g: u32) -> vec2<u32> { return vec2<u32>(g % TM, g / TM); }\n"
                             : "fn a_slot(g: u32) -> vec2<u32> { return vec2<u32>(g / (TK / 4u), g % (TK / 4u)); }\n";
  decl += b_read_along_k(pr) ? "fn b_slot(g: u32) -> vec2<u32> { return vec2<u32>(g % TK, g / TK); }\n"
                             : "fn b_slot(g: u32) -> vec2<u32> { return vec2<u32>(g / (TN / 4u), g % (TN / 4u)); }\n";
  // Elements (m, k ... k + 3) of A and (k, n ... n + 3) of B, 0 outside the matrix (branch-free: the
  // loads issue back to back): one vec4 load (tiled_vec), or four elements each checked.
  if (vec.a)
    decl += "fn load_a4(base: u32, m: u32, k: u32) -> vec4<f32> {\n"
            "  let inside = m < M() && k < K();\n"
            "  return select(vec4<f32>(0.0), a_load4(select(0u, (base + m * K() + k) / 4u, inside)), inside);\n}\n";
  else
    decl += "fn load_a(base: u32, m: u32, k: u32) -> f32 {\n"
            "  let inside = m < M() && k < K();\n"
            "  return select(0.0, a_load(select(0u, base + " + a_offset(pr) + ", inside)), inside);\n}\n"
            "fn load_a4(base: u32, m: u32, k: u32) -> vec4<f32> {\n"
            "  return vec4<f32>(load_a(base, m, k), load_a(base, m, k + 1u), load_a(base, m, k + 2u), load_a(base, m, k + 3u));\n}\n";
  if (vec.b)
    decl += "fn load_b4(base: u32, k: u32, n: u32) -> vec4<f32> {\n"
            "  let inside = k < K() && n < N();\n"
            "  return select(vec4<f32>(0.0), b_load4(select(0u, (base + k * N() + n) / 4u, inside)), inside);\n}\n";
  else
    decl += "fn load_b(base: u32, k: u32, n: u32) -> f32 {\n"
            "  let inside = k < K() && n < N();\n"
            "  return select(0.0, b_load(select(0u, base + " + b_offset(pr) + ", inside)), inside);\n}\n"
            "fn load_b4(base: u32, k: u32, n: u32) -> vec4<f32> {\n"
            "  return vec4<f32>(load_b(base, k, n), load_b(base, k, n + 1u), load_b(base, k, n + 2u), load_b(base, k, n + 3u));\n}\n";
  if (!split) decl += epilogue_decl(ep) + put_decl(pr);
  return decl + "const GA: u32 = " + u32_lit(a_share(tl)) + ";\nconst GB: u32 = " + u32_lit(b_share(tl)) + ";\n";
}

// The micro-tile's text: its accumulators' declarations, one K-quad's multiply-adds (B's values, then
// A's row by row) and the stores of the results (the partial sums when split, else through put). The
// rows and columns are unrolled here, in the text, so the accumulators stay in registers.
struct MicroTile {
  std::string accs, bvals, fmas, stores;
};
MicroTile micro_tile(const Tile& tl, bool split) {
  auto n_ = [](uint32_t v) { return std::to_string(v); };
  const std::string buf = tl.two_buffers ? "[cur]" : "";  // the buffer read
  MicroTile mt;
  for (uint32_t i = 0; i < tl.rm; ++i)
    for (uint32_t j = 0; j < tl.cn; ++j) mt.accs += "  var acc" + n_(i) + "_" + n_(j) + " = vec4<f32>(0.0);\n";
  for (uint32_t j = 0; j < tl.cn; ++j)
    for (uint32_t q = 0; q < 4; ++q)
      mt.bvals += "      let b" + n_(j) + n_(q) + " = Bs" + buf + "[kk * 4u + " + u32_lit(q) + "][tx + " + u32_lit(j * tl.tx()) + "];\n";
  for (uint32_t i = 0; i < tl.rm; ++i) {
    std::string a = "a" + n_(i);
    mt.fmas += "      let " + a + " = As" + buf + "[ty * RM + " + u32_lit(i) + "][kk];\n";
    for (uint32_t j = 0; j < tl.cn; ++j) {
      std::string acc = "acc" + n_(i) + "_" + n_(j), b = "b" + n_(j);
      mt.fmas += "      " + acc + " = fma(vec4<f32>(" + a + ".x), " + b + "0, fma(vec4<f32>(" + a + ".y), " + b +
                 "1, fma(vec4<f32>(" + a + ".z), " + b + "2, fma(vec4<f32>(" + a + ".w), " + b + "3, " + acc + "))));\n";
    }
    mt.stores += "  if (m0 + ty * RM + " + u32_lit(i) + " < M()) {\n    let m = m0 + ty * RM + " + u32_lit(i) + ";\n";
    for (uint32_t j = 0; j < tl.cn; ++j)
      for (uint32_t c = 0; c < 4; ++c) {
        std::string v = "acc" + n_(i) + "_" + n_(j) + "[" + n_(c) + "]";
        std::string col = "n0 + (tx + " + u32_lit(j * tl.tx()) + ") * 4u + " + u32_lit(c);
        mt.stores += "    if (" + col + " < N()) { let n = " + col + "; " +
                     (split ? "y_store(y_base + m * N() + n, " + v + ");" : "put(bz, m, n, " + v + ");") + " }\n";
      }
    mt.stores += "  }\n";
  }
  return mt;
}

// The tiled kernel's body. Each invocation loads its share of the next K-slice into registers before
// computing the current one from workgroup memory, so the global loads overlap the arithmetic. The
// prefetch loops index register arrays with constant trip counts (unrolled by the compiler).
std::string tiled_body(const Product& pr, const Tile& tl, bool split) {
  std::string load_next =
      "    for (var q = 0u; q < GA; q = q + 1u) { let s = a_slot(lid + q * NT); ra[q] = load_a4(a_base, m0 + s.x, k1 + 4u * s.y); }\n"
      "    for (var q = 0u; q < GB; q = q + 1u) { let s = b_slot(lid + q * NT); rb[q] = load_b4(b_base, k1 + s.x, n0 + 4u * s.y); }\n";
  // The registers to the tiles (with two buffers, to buffer `nxt`).
  const std::string buf = tl.two_buffers ? "[nxt]" : "";
  std::string store_tiles =
      "    for (var q = 0u; q < GA; q = q + 1u) { let s = a_slot(lid + q * NT); As" + buf + "[s.x][s.y] = ra[q]; }\n"
      "    for (var q = 0u; q < GB; q = q + 1u) { let s = b_slot(lid + q * NT); Bs" + buf + "[s.x][s.y] = rb[q]; }\n";
  MicroTile mt = micro_tile(tl, split);
  std::string regs = "  var ra: array<vec4<f32>, " + u32_lit(a_share(tl)) + ">;\n  var rb: array<vec4<f32>, " +
                     u32_lit(b_share(tl)) + ">;\n" + mt.accs;
  std::string head = "  let tx = lid % TX;\n"
                     "  let ty = lid / TX;\n"
                     "  let n0 = wid.x * TN;\n"
                     "  let m0 = wid.y * TM;\n"
                     "  let bz = wid.z / splits();\n"
                     "  let k_begin = (wid.z % splits()) * kchunk();\n"
                     "  let k_end = min(K(), k_begin + kchunk());\n"
                     "  let a_base = " + a_matrix(pr) + ";\n"
                     "  let b_base = " + b_matrix(pr) + ";\n" + regs +
                     "  var k1 = k_begin;\n"
                     "  if (k1 < k_end) {\n" + load_next + "  }\n";
  std::string compute = "    for (var kk = 0u; kk < TK / 4u; kk = kk + 1u) {\n" + mt.bvals + mt.fmas + "    }\n";
  std::string tail = "  let y_base = wid.z * M() * N();\n" + mt.stores;
  if (!tl.two_buffers)
    return head +
           "  for (var k0 = k_begin; k0 < k_end; k0 = k0 + TK) {\n" + store_tiles +
           "    workgroupBarrier();\n"
           "    k1 = k0 + TK;\n"
           "    if (k1 < k_end) {\n" + load_next + "    }\n" + compute +
           "    workgroupBarrier();\n"
           "  }\n" + tail;
  // Two buffers: slice k is computed from one while slice k + 1 goes from the registers into the other,
  // then one barrier. A buffer is written again only after the barrier that follows its last reading.
  return head + "  var cur = 0u;\n"
         "  {\n    let nxt = 0u;\n" + store_tiles + "  }\n"
         "  workgroupBarrier();\n"
         "  for (var k0 = k_begin; k0 < k_end; k0 = k0 + TK) {\n"
         "    k1 = k0 + TK;\n"
         "    let more = k1 < k_end;\n"
         "    if (more) {\n" + load_next + "    }\n" + compute +
         "    if (more) {\n"
         "      let nxt = 1u - cur;\n" + store_tiles + "    }\n"
         "    workgroupBarrier();\n"
         "    cur = 1u - cur;\n"
         "  }\n" + tail;
}

// The tiled float kernel (one dispatch, or two when K is split: the partial sums, then their sum), and the
// post-normalization's rows (`post`: in the summing pass, or a row pass of their own).
void tiled_float(GpuKernelContext& ctx, DType t, const Product& pr, const Epilogue& ep, const PostNorm* post) {
  Tile tl = choose_tile(ctx.limits, pr);
  TiledGrid g = tiled_grid(ctx, pr, tl);
  bool split = g.split();
  bool with_c = ep.has_c && !split, with_r = ep.has_r && !split;
  const VecLoads vec = tiled_vec(t, pr);
  std::string name = std::string("tiled") + (pr.la.strided ? "_sa" : "") + (pr.lb.strided ? "_sb" : "") +
                     (pr.ly.strided ? "_sy" : "") + (pr.parts.empty() ? "" : "_parts" + std::to_string(pr.parts.size())) +
                     (a_read_along_m(pr) ? "_ta" : "") + (b_read_along_k(pr) ? "_tb" : "") + (vec.a ? "_va" : "") +
                     (vec.b ? "_vb" : "") + (with_c ? "_c" : "") + (with_r ? "_r" : "") + (split ? "_split" : "") + "_" + tl.name();
  auto p = ctx.program(name, tl.threads());
  const bool wgsl = ctx.needs_wgsl(p, text_key(pr, ep));
  Shape part_shape{int64_t(uint64_t(pr.M) * pr.N * g.batch * g.splits)};
  declare_operands(ctx, p, t, pr, ep, with_c, with_r, pr.ly.strided && !split, split ? DType::Float32 : t,
                   split ? part_shape : pr.stored, !split && !pr.parts.empty());
  if (vec.a) p.vec4(0);  // a
  if (vec.b) p.vec4(1);  // b
  p.uniform("splits", g.splits);
  p.uniform("kchunk", g.kchunk);
  if (wgsl) {
    p.declare(tiled_decls(pr, tl, ep, split, vec));
    p.body(tiled_body(pr, tl, split));
  }
  if (!split) {
    ctx.dispatch(p, operand_bindings(ctx, with_c, with_r, ctx.out(0), pr.parts.size()), uint32_t(g.x), uint32_t(g.y),
                 uint32_t(g.batch));
    if (post) normalize_rows(ctx, t, pr, ep, *post, nullptr, {}, 0);
    return;
  }
  ValueRef part = ctx.temp(DType::Float32, part_shape);
  ctx.dispatch(p, operand_bindings(ctx, false, false, part), uint32_t(g.x), uint32_t(g.y), uint32_t(g.batch * g.splits));
  if (post && sums_normalized(ctx, ep, *post)) {
    normalize_rows(ctx, t, pr, ep, *post, &part, part_shape, g.splits);
    return;
  }
  sum_parts(ctx, t, pr, ep, part, part_shape, g.splits);
  if (post) normalize_rows(ctx, t, pr, ep, *post, nullptr, {}, 0);
}

// One invocation per output element, exact in the operands' integer family.
void simple_integer(GpuKernelContext& ctx, DType t, const Product& pr, const Epilogue& ep) {
  auto p = ctx.program(std::string("int") + (pr.trans_a ? "_ta" : "") + (pr.trans_b ? "_tb" : "") + (ep.has_c ? "_c" : ""));
  if (ep.has_r || pr.la.strided || pr.lb.strided || pr.ly.strided) ctx.unsupported("a fused integer product");
  declare_operands(ctx, p, t, pr, ep, ep.has_c, false, false, t, pr.out);
  p.set_threads(uint64_t(shape_numel(pr.batch)) * pr.M * pr.N);
  std::string a_at = pr.trans_a ? "k * M() + m" : "m * K() + k";
  std::string b_at = pr.trans_b ? "n * K() + k" : "k * N() + n";
  std::string body =
      "  let n = gi % N();\n"
      "  let t = gi / N();\n"
      "  let m = t % M();\n"
      "  let z = t / M();\n"
      "  let a_base = a_mat(z) * M() * K();\n"
      "  let b_base = b_mat(z) * K() * N();\n"
      "  var acc = zero_$a();\n"
      "  for (var k = 0u; k < K(); k = k + 1u) {\n"
      "    acc = add_$a(acc, mul_$a(a_load(a_base + " + a_at + "), b_load(b_base + " + b_at + ")));\n"
      "  }\n";
  if (ep.has_c) body += "  acc = add_$a(acc, c_load(m * c_sm() + n * c_sn()));\n";
  body += "  y_store(gi, acc);\n";
  p.body(body);
  ctx.dispatch(p, operand_bindings(ctx, ep.has_c, false, ctx.out(0)));
}

// `pro`: A's rows normalized first (a fused LayerNormalization), which only the one-row kernels take;
// `post`: the result's rows normalized after (PostNorm).
void run_product(GpuKernelContext& ctx, DType t, Product pr, const Epilogue& ep, const Prologue* pro = nullptr,
                 const PostNorm* post = nullptr) {
  if (!pr.ly.strided) pr.stored = pr.out;
  if (pr.parts.empty()) ctx.set_output(0, t, pr.stored);
  if (post && post->keeps_sum) ctx.set_output(1, t, pr.out);
  for (size_t k = 0; k < pr.parts.size(); ++k) {
    Shape part = pr.out;
    part.back() = pr.parts[k];
    ctx.set_output(k, t, part);
  }
  if (shape_numel(pr.out) == 0) return;
  const uint64_t flops = 2 * uint64_t(pr.M) * pr.N * pr.K * uint64_t(shape_numel(pr.batch));
  if (pro) {
    if (!gemv_float(ctx, t, pr, ep, pro))  // (the members then run as unfused: the normalization alone)
      ctx.unsupported("a normalization prologue outside the one-row product kernels (" + std::to_string(pr.M) +
                      " rows: at most " + std::to_string(kGemvMaxRows) +
                      ", A contiguous and unbatched, within the device's storage bindings)");
  } else if (!dtype_is_float(t)) {
    simple_integer(ctx, t, pr, ep);
    return;  // (integer work: not counted as floating-point operations)
  } else if (gemv_float(ctx, t, pr, ep)) {
    if (post) normalize_rows(ctx, t, pr, ep, *post, nullptr, {}, 0);
  } else {
    tiled_float(ctx, t, pr, ep, post);
  }
  ctx.count_flops(flops);
}

void matmul(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (ctx.dtype(1) != t)
    ctx.fail("A is " + std::string(dtype_name(t)) + " but B is " + std::string(dtype_name(ctx.dtype(1))) +
             "; they must have the same type");
  if (!kMatMulTypes.has(t)) ctx.fail("MatMul does not support element type " + std::string(dtype_name(t)));
  Product pr = plan_matmul(ctx, ctx.shape(0), ctx.shape(1));
  run_product(ctx, t, pr, Epilogue{});
}

// The LayerNormalization prologue of a fused MatMul (runtime/fusion.h's norm group): inputs 4 and 5
// (scale, and B or ""), checked by the normalization's own rules (ops/normalization.h) on a node rebuilt
// from the fused node's attributes ("norm": the op, "norm.<name>": its attributes): float32 rows of A
// normalized along their last axis, of the product's K values, the scale and B flat rows of K.
Prologue layer_norm_prologue(GpuKernelContext& ctx, const Product& pr) {
  ir::Node n;
  n.name = ctx.node.name;
  n.op_type = ctx.node.attr_string("norm", "");
  for (const auto& [name, a] : ctx.node.attrs)
    if (name.rfind("norm.", 0) == 0) n.attrs[name.substr(5)] = a;
  if (n.op_type != "LayerNormalization") ctx.fail("unknown normalization prologue '" + n.op_type + "'");
  const Shape& xs = ctx.shape(0);
  const int64_t rank = int64_t(xs.size());
  const ops::LayerNormParams lp = ops::layer_norm_params(n, rank, ctx.fail_fn());
  if (ctx.dtype(0) != DType::Float32) ctx.unsupported("a normalization prologue of non-float32 rows");
  if (lp.axis != rank - 1 || ctx.node.has_attr("perm_a") || xs.back() != int64_t(pr.K))
    ctx.unsupported("a normalization prologue over more than the product's K along A's rows");
  Prologue r;
  r.epsilon = n.attr_float("epsilon", 1e-5f);
  r.has_shift = ctx.has_input(r.shift);
  for (size_t i : {r.scale, r.shift}) {
    if (i == r.shift && !r.has_shift) continue;
    if (!ctx.has_input(i)) ctx.fail("the normalization prologue needs its scale");
    if (ctx.dtype(i) != DType::Float32 || shape_numel(ctx.shape(i)) != int64_t(pr.K) || ctx.shape(i).empty() ||
        ctx.shape(i).back() != int64_t(pr.K))
      ctx.unsupported("a normalization prologue whose " + std::string(i == r.scale ? "scale " : "B ") +
                      shape_str(ctx.shape(i)) + " is not one float32 row of " + std::to_string(pr.K));
  }
  return r;
}

// The post-normalization of a fused MatMul (runtime/fusion.h's MatMul group; attribute "post_norm": the
// normalization, LayerNormalization or SimplifiedLayerNormalization, "post_norm.epsilon"; inputs 6 and 7,
// the scale and the shift, each absent or ""): float32 rows of the product's N values, neither transposed
// nor in parts, the scale and shift one float32 row of N each. Two outputs: h, then the normalized rows.
PostNorm post_norm(GpuKernelContext& ctx, const Product& pr) {
  const std::string op = ctx.node.attr_string("post_norm", "");
  if (op != "LayerNormalization" && op != "SimplifiedLayerNormalization")
    ctx.fail("unknown post-normalization '" + op + "'");
  PostNorm r;
  r.centered = op == "LayerNormalization";
  r.epsilon = ctx.node.attr_float("post_norm.epsilon", 1e-5f);
  r.keeps_sum = ctx.num_outputs() == 2;
  if (ctx.num_outputs() > 2) ctx.fail("a post-normalization has at most two outputs");
  if (ctx.dtype(0) != DType::Float32) ctx.unsupported("a post-normalization of non-float32 rows");
  if (ctx.node.has_attr("split") || ctx.node.has_attr("perm_y") || ctx.node.has_attr("norm") || pr.out.empty() ||
      pr.out.back() != int64_t(pr.N))
    ctx.unsupported("a post-normalization of a product written in parts, transposed or normalized before");
  r.has_scale = ctx.has_input(r.scale);
  r.has_shift = ctx.has_input(r.shift);
  if (r.centered && !r.has_scale) ctx.fail("the post-normalization needs its scale");
  for (size_t i : {r.scale, r.shift}) {
    if (!ctx.has_input(i)) continue;
    if (ctx.dtype(i) != DType::Float32 || shape_numel(ctx.shape(i)) != int64_t(pr.N) || ctx.shape(i).empty() ||
        ctx.shape(i).back() != int64_t(pr.N))
      ctx.unsupported("a post-normalization whose " + std::string(i == r.scale ? "scale " : "shift ") +
                      shape_str(ctx.shape(i)) + " is not one float32 row of " + std::to_string(pr.N));
  }
  return r;
}

// The fused MatMul (the runtime's fusion pass): A and B, each possibly a Transpose folded in (attributes
// perm_a / perm_b: the operand is input[perm], read through strides), then optionally a bias over the
// output's last axis (input 2) and a residual of the output's shape (input 3), added in the epilogue.
void fused_matmul(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  if (!dtype_is_float(t)) ctx.unsupported("the fused MatMul is for float products");
  if (ctx.dtype(1) != t) ctx.fail("A and B must have the same type");
  std::vector<int64_t> pa = ctx.node.attr_ints("perm_a"), pb = ctx.node.attr_ints("perm_b");
  std::vector<int64_t> py = ctx.node.attr_ints("perm_y");
  Product pr = plan_matmul(ctx, strided::permute_shape(ctx, ctx.shape(0), pa), strided::permute_shape(ctx, ctx.shape(1), pb),
                           pa.empty() && py.empty());
  if (!pa.empty()) pr.la = strided::permuted(ctx, ctx.shape(0), pa, pr.a_batch, pr.batch);
  if (!pb.empty()) pr.lb = strided::permuted(ctx, ctx.shape(1), pb, pr.b_batch, pr.batch);
  // The product transposed as it is stored (perm_y): element (.., m, n) of the product goes where the
  // Transpose puts it.
  if (!py.empty()) {
    if (py.size() != pr.out.size() || pr.out.size() < 2 || pr.out.size() != pr.batch.size() + 2)
      ctx.unsupported("a folded output Transpose of this rank");
    pr.stored = strided::permute_shape(ctx, pr.out, py);
    pr.ly = strided::written(ctx, pr.out, py, pr.batch);
  }
  Epilogue ep;
  if (ctx.has_input(2)) {
    if (ctx.dtype(2) != t) ctx.fail("the bias must have A's type");
    if (shape_numel(ctx.shape(2)) != int64_t(pr.N) || pr.out.empty() || pr.out.back() != int64_t(pr.N))
      ctx.fail("the bias " + shape_str(ctx.shape(2)) + " is not a row of the product " + shape_str(pr.out));
    ep.has_c = true;
    ep.c_sm = 0;
    ep.c_sn = 1;
  }
  if (ctx.has_input(3)) {
    if (ctx.dtype(3) != t || ctx.shape(3) != pr.out)
      ctx.fail("the residual " + std::string(dtype_name(ctx.dtype(3))) + shape_str(ctx.shape(3)) + " is not of the product's " +
               std::string(dtype_name(t)) + shape_str(pr.out));
    ep.has_r = true;
  }
  // An elementwise expression applied to each result (the node's ir::FusedExpr): its product p is
  // the result, and it reads nothing else but constants.
  FusedSteps steps(ctx);
  if (steps.num_inputs() != 0) ctx.fail("the fused MatMul's activation reads an input");
  if (!steps.empty()) ep.act = steps.wgsl(ep.act_decls) + "  return " + steps.result() + ";\n";
  // A LayerNormalization of A's rows folded in (attribute "norm", runtime/fusion.h's norm group); its
  // Y, when Shape or Size read it, the last output: a view of A (X) for its shape, never computed.
  std::optional<Prologue> pro;
  if (ctx.node.has_attr("norm")) pro = layer_norm_prologue(ctx, pr);
  const size_t products = ctx.num_outputs() - (pro && ctx.node.attr_int("norm_shape_of_y", 0) ? 1 : 0);
  if (products < ctx.num_outputs()) ctx.alias_output(products, 0, ctx.shape(0));
  // A Split of the product's last axis folded in (attribute "split": the parts' widths, one output each).
  if (ctx.node.has_attr("split")) {
    std::vector<int64_t> w = ctx.node.attr_ints("split");
    int64_t sum = 0;
    for (int64_t x : w) sum += x;
    if (w.size() != products || w.empty() || sum != int64_t(pr.N) || pr.out.empty() ||
        pr.out.back() != int64_t(pr.N) || pr.ly.strided || ep.has_r)
      ctx.fail("split " + shape_str(w) + " does not divide the product " + shape_str(pr.out) + " into its outputs");
    // Storage bindings: A, B, the bias, the parts and the engine's status word.
    uint32_t most = ctx.limits.max_storage_buffers_per_shader_stage ? ctx.limits.max_storage_buffers_per_shader_stage : 8;
    if (w.size() + (ep.has_c ? 4 : 3) + (pro ? (pro->has_shift ? 2 : 1) : 0) > most)
      ctx.unsupported("more parts than the device has storage bindings for");
    for (int64_t x : w) pr.parts.push_back(uint32_t(x));
  }
  // A normalization of the result's rows folded in (attribute "post_norm", PostNorm).
  std::optional<PostNorm> post;
  if (ctx.node.has_attr("post_norm")) post = post_norm(ctx, pr);
  run_product(ctx, t, pr, ep, pro ? &*pro : nullptr, post ? &*post : nullptr);
}

void gemm(GpuKernelContext& ctx) {
  DType t = ctx.dtype(0);
  const Shape &a = ctx.shape(0), &b = ctx.shape(1);
  const ir::Node& node = ctx.node;
  ops::GemmShape g = ops::gemm_shape(node, a, b, ctx.has_input(2) ? &ctx.shape(2) : nullptr,
                                     [&](const std::string& m) { ctx.fail(m); });
  if (ctx.dtype(1) != t) ctx.fail("A and B have different types");
  if (!kMatMulTypes.has(t)) ctx.fail("Gemm does not support element type " + std::string(dtype_name(t)));
  Product pr;
  pr.trans_a = g.trans_a;
  pr.trans_b = g.trans_b;
  const int64_t M = g.M, K = g.K, N = g.N;
  pr.M = u32_dim(ctx, M, "M");
  pr.K = u32_dim(ctx, K, "K");
  pr.N = u32_dim(ctx, N, "N");
  pr.out = {M, N};
  Epilogue ep;
  ep.alpha = node.attr_float("alpha", 1.0f);
  ep.beta = node.attr_float("beta", 1.0f);
  if (ctx.has_input(2)) {
    const Shape& c = ctx.shape(2);
    if (ctx.dtype(2) != t) ctx.fail("C has a different type than A");
    Shape c2 = c;  // broadcasts to [M, N] (ops::gemm_shape)
    while (c2.size() < 2) c2.insert(c2.begin(), 1);
    ep.has_c = true;
    ep.c_sm = c2[0] == 1 ? 0 : uint32_t(c2[1]);
    ep.c_sn = c2[1] == 1 ? 0 : 1;
    if (ep.beta == 0.0f && dtype_is_float(t)) ep.has_c = false;  // beta * C contributes nothing
  }
  if (!dtype_is_float(t) && (ep.alpha != 1.0f || (ep.has_c && ep.beta != 1.0f)))
    ctx.unsupported("integer Gemm with alpha or beta other than 1");
  run_product(ctx, t, pr, ep);
}

// The integer products: where each takes its operands and parameters (kNone: not an input of the op).
struct IntegerMatMulInputs {
  static constexpr size_t kNone = size_t(-1);
  enum class Out { Int32, Quantized, Float } out;
  size_t b, za, zb, sa, sb, sy, zy, bias;
  static IntegerMatMulInputs matmul_integer() { return {Out::Int32, 1, 2, 3, kNone, kNone, kNone, kNone, kNone}; }
  static IntegerMatMulInputs qlinear_matmul() { return {Out::Quantized, 3, 2, 5, 1, 4, 6, 7, kNone}; }
  static IntegerMatMulInputs integer_to_float() { return {Out::Float, 1, 4, 5, 2, 3, kNone, kNone, 6}; }
};

// MatMulInteger, QLinearMatMul and com.microsoft's MatMulIntegerToFloat: one invocation per output
// element, the int32 sum of (a - a_zero_point) (b - b_zero_point) over K (wrapping, as the CPU reference);
// zero points and scales a scalar or one per row of A / column of B. QLinearMatMul requantizes: round
// half to even of acc * a_scale * b_scale / y_scale (in f32), plus y_zero_point, saturated to y's type.
// MatMulIntegerToFloat: acc * (a_scale * b_scale) + bias, in f32 (ONNX Runtime's, measured bit for bit).
void integer_matmul(GpuKernelContext& ctx, const IntegerMatMulInputs& io) {
  using Out = IntegerMatMulInputs::Out;
  const size_t ib = io.b;
  const DTypeSet q{DType::Int8, DType::UInt8};
  if (!q.has(ctx.dtype(0)) || !q.has(ctx.dtype(ib)))
    ctx.fail("A and B must be int8 or uint8, got " + std::string(dtype_name(ctx.dtype(0))) + " and " +
             std::string(dtype_name(ctx.dtype(ib))));
  ops::MatMulShape ms = ops::matmul_shape(ctx.shape(0), ctx.shape(ib), ctx.fail_fn());
  auto check_vec = [&](size_t i, int64_t count, const char* what, bool scale) {
    if (i == IntegerMatMulInputs::kNone || !ctx.has_input(i)) return false;
    int64_t n = shape_numel(ctx.shape(i));
    if (n != 1 && n != count) ctx.fail(std::string(what) + " must be a scalar or have " + std::to_string(count) + " values");
    if (scale ? !dtype_is_float(ctx.dtype(i)) : ctx.dtype(i) != ctx.dtype(i == io.za ? 0 : ib))
      ctx.fail(std::string(what) + (scale ? " must be a float tensor" : " must have its matrix's type"));
    return true;
  };
  DType yt = DType::Int32;
  if (io.out == Out::Quantized) {
    check_vec(io.sa, ms.M, "a_scale", true);
    check_vec(io.sb, ms.N, "b_scale", true);
    check_vec(io.sy, 1, "y_scale", true);
    yt = ctx.dtype(io.zy);
    if (!q.has(yt) || shape_numel(ctx.shape(io.zy)) != 1) ctx.fail("y_zero_point must be an int8 or uint8 scalar");
  } else if (io.out == Out::Float) {
    if (!ctx.has_input(io.sa) || shape_numel(ctx.shape(io.sa)) != 1 || !dtype_is_float(ctx.dtype(io.sa)))
      ctx.fail("a_scale must be a float scalar");
    yt = ctx.dtype(io.sa);
    if (!check_vec(io.sb, ms.N, "b_scale", true)) ctx.fail("b_scale is required");
    if (ctx.dtype(io.sb) != yt) ctx.fail("b_scale must have a_scale's type (" + std::string(dtype_name(yt)) + ")");
    if (ctx.has_input(io.bias) && (ctx.dtype(io.bias) != yt || ctx.shape(io.bias) != Shape{ms.N}))
      ctx.fail("bias must be " + std::string(dtype_name(yt)) + "[" + std::to_string(ms.N) + "]");
  }
  ctx.set_output(0, yt, ms.out);
  if (shape_numel(ms.out) == 0) return;
  const bool za = check_vec(io.za, ms.M, "a_zero_point", false), zb = check_vec(io.zb, ms.N, "b_zero_point", false);
  const bool scaled = io.out != Out::Int32, has_bias = io.out == Out::Float && ctx.has_input(io.bias);
  // The zero points and scales, each a uniform or a buffer (QuantParam).
  auto param = [&](bool used, size_t i) { return used ? QuantParam::of(ctx, i) : QuantParam{}; };
  const QuantParam pza = param(za, io.za), pzb = param(zb, io.zb), psa = param(scaled, io.sa), psb = param(scaled, io.sb),
                   psy = param(io.out == Out::Quantized, io.sy), pzy = param(io.out == Out::Quantized, io.zy);
  std::string name = io.out == Out::Quantized ? "qlinear" : io.out == Out::Float ? "to_float" : "integer";
  if (za) name += std::string("_za") + pza.tag();
  if (zb) name += std::string("_zb") + pzb.tag();
  if (scaled) name += std::string("_s") + psa.tag() + psb.tag();
  if (io.out == Out::Quantized) name += std::string(1, psy.tag()) + "_zy" + pzy.tag();
  if (has_bias) name += "_bias";
  auto p = ctx.program(name);
  std::vector<ValueRef> binds;
  p.input("a", ctx.dtype(0), ctx.shape(0));
  binds.push_back(ctx.in(0));
  p.input("b", ctx.dtype(ib), ctx.shape(ib));
  binds.push_back(ctx.in(ib));
  const std::string oa = za ? pza.bind(ctx, p, binds, "za", io.za, "m", false) : "0i";
  const std::string ob = zb ? pzb.bind(ctx, p, binds, "zb", io.zb, "n", false) : "0i";
  std::string sa, sb, sy, zy;
  if (scaled) {
    sa = psa.bind(ctx, p, binds, "sa", io.sa, "m", true);
    sb = psb.bind(ctx, p, binds, "sb", io.sb, "n", true);
  }
  if (io.out == Out::Quantized) {
    sy = psy.bind(ctx, p, binds, "sy", io.sy, "0u", true);
    zy = pzy.bind(ctx, p, binds, "zy", io.zy, "0u", false);
  }
  if (has_bias) {
    p.input("bias", ctx.dtype(io.bias), ctx.shape(io.bias));
    binds.push_back(ctx.in(io.bias));
  }
  p.output("y", yt, ms.out);
  binds.push_back(ctx.out(0));
  if (binds.size() + 1 > ctx.limits.max_storage_buffers_per_shader_stage)  // + the status words
    ctx.unsupported("more inputs than the device binds per dispatch");
  p.uniform("M", uint32_t(ms.M));
  p.uniform("K", uint32_t(ms.K));
  p.uniform("N", uint32_t(ms.N));
  p.broadcast_index("a_batch", ms.a_batch, ms.batch);
  p.broadcast_index("b_batch", ms.b_batch, ms.batch);
  std::string body =
      "  let n = gi % N();\n  let m = (gi / N()) % M();\n  let bi = gi / (M() * N());\n"
      "  let ab = a_batch(bi) * M() * K() + m * K();\n  let bb = b_batch(bi) * K() * N() + n;\n"
      "  let oa = " + oa + ";\n"
      "  let ob = " + ob + ";\n"
      "  var acc = 0i;\n"
      "  for (var k = 0u; k < K(); k = k + 1u) {\n"
      "    acc = acc + (i32(a_load(ab + k)) - oa) * (i32(b_load(bb + k * N())) - ob);\n"
      "  }\n";
  if (io.out == Out::Quantized) {
    body += "  let f = " + sa + " * " + sb + " / " + sy + ";\n" + requantized_store(yt, "f32(acc) * f", zy);
  } else if (io.out == Out::Float) {
    body += "  y_store(gi, from_f32_$y(f32(acc) * (" + sa + " * " + sb + ")" + (has_bias ? " + to_f32_$bias(bias_load(n))" : "") + "));";
  } else {
    body += "  y_store(gi, acc);";
  }
  p.set_threads(uint64_t(shape_numel(ms.out)));
  p.body(body);
  ctx.dispatch(p, binds);
}

// Det: one invocation per matrix, LU with partial pivoting (as the CPU reference) on a copy of the
// matrix in a scratch buffer, in f32.
void det(GpuKernelContext& ctx) {
  const Shape& xs = ctx.shape(0);
  DType t = ctx.dtype(0);
  if (xs.size() < 2 || xs[xs.size() - 1] != xs[xs.size() - 2])
    ctx.fail("input must be [*, M, M] (square matrices), got " + shape_str(xs));
  if (!dtype_is_float(t)) ctx.fail("input must be a float tensor, got " + std::string(dtype_name(t)));
  Shape out(xs.begin(), xs.end() - 2);
  ctx.set_output(0, t, out);
  if (shape_numel(out) == 0) return;
  auto p = ctx.program("det");
  p.input("x", t, xs);
  p.output("y", t, out);
  p.output("w", DType::Float32, xs);
  p.uniform("dim", uint32_t(xs.back()));
  p.set_threads(uint64_t(shape_numel(out)));
  p.body("  let n = dim();\n  let base = gi * n * n;\n"
         "  for (var i = 0u; i < n * n; i = i + 1u) { w_store(base + i, x_load(base + i)); }\n"
         "  var d = 1.0;\n"
         "  for (var c = 0u; c < n; c = c + 1u) {\n"
         "    var piv = c;\n"
         "    for (var r = c + 1u; r < n; r = r + 1u) { if (abs(w_load(base + r * n + c)) > abs(w_load(base + piv * n + c))) { piv = r; } }\n"
         "    let pv = w_load(base + piv * n + c);\n"
         "    if (pv == 0.0) { d = 0.0; break; }\n"
         "    if (piv != c) {\n"
         "      for (var k = 0u; k < n; k = k + 1u) { let a = w_load(base + c * n + k); w_store(base + c * n + k, w_load(base + piv * n + k)); w_store(base + piv * n + k, a); }\n"
         "      d = -d;\n"
         "    }\n"
         "    d = d * pv;\n"
         "    for (var r = c + 1u; r < n; r = r + 1u) {\n"
         "      let f = w_load(base + r * n + c) / pv;\n"
         "      for (var k = c; k < n; k = k + 1u) { w_store(base + r * n + k, w_load(base + r * n + k) - f * w_load(base + c * n + k)); }\n"
         "    }\n"
         "  }\n"
         "  y_store(gi, d);");
  ctx.dispatch(p, {ctx.in(0), ctx.out(0), ctx.temp(DType::Float32, xs)});
}

// Einsum: one invocation per output element, summing over the summed labels' index space the product of
// one element per input (ops::einsum_plan's strides, in uniform arrays), in the inputs' family
// arithmetic: floats in f32, integers wrapping (int64 exact), as the CPU reference's 64-bit sums.
void einsum(GpuKernelContext& ctx) {
  const size_t n_in = ctx.num_inputs();
  if (n_in == 0) ctx.fail("needs at least one input");
  const DType t = ctx.dtype(0);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n_in; ++i) {
    if (ctx.dtype(i) != t) ctx.fail("all inputs must have the same type");
    shapes.push_back(ctx.shape(i));
  }
  if (!(kNumericTypes.has(t))) ctx.fail("Einsum takes numeric inputs, got " + std::string(dtype_name(t)));
  const ops::EinsumPlan plan = ops::einsum_plan(ctx.node.attr_string("equation", ""), shapes, ctx.fail_fn());
  ctx.set_output(0, t, plan.out_shape);
  if (shape_numel(plan.out_shape) == 0) return;
  if (n_in + 2 > ctx.limits.max_storage_buffers_per_shader_stage) ctx.unsupported("more inputs than the device binds per dispatch");
  const size_t ro = plan.out_shape.size(), rs = plan.sum_shape.size();
  auto words = [](const std::vector<int64_t>& v) { return std::vector<uint32_t>(v.begin(), v.end()); };
  auto p = ctx.program("einsum" + std::to_string(n_in) + "_" + std::to_string(ro) + "_" + std::to_string(rs));
  std::vector<ValueRef> binds;
  std::vector<int64_t> os, ss;
  for (size_t i = 0; i < n_in; ++i) {
    p.input("x" + std::to_string(i), t, shapes[i]);
    binds.push_back(ctx.in(i));
    os.insert(os.end(), plan.out_strides[i].begin(), plan.out_strides[i].end());
    ss.insert(ss.end(), plan.sum_strides[i].begin(), plan.sum_strides[i].end());
  }
  p.output("y", t, plan.out_shape);
  binds.push_back(ctx.out(0));
  p.uniform_array("out_dims", words(plan.out_shape));
  p.uniform_array("sum_dims", words(plan.sum_shape));
  p.uniform_array("out_st", words(os));
  p.uniform_array("sum_st", words(ss));
  p.uniform("n_sum", uint32_t(shape_numel(plan.sum_shape)));
  const std::string RO = u32_lit(ro), RS = u32_lit(rs), NI = u32_lit(n_in);
  std::string body = "  var base: array<u32, " + std::to_string(n_in) + ">;\n"
                     "  var rem = gi;\n"
                     "  for (var e = 0u; e < " + RO + "; e = e + 1u) {\n"
                     "    let k = " + RO + " - 1u - e;\n"
                     "    let c = rem % out_dims(k);\n"
                     "    rem = rem / out_dims(k);\n"
                     "    for (var i = 0u; i < " + NI + "; i = i + 1u) { base[i] = base[i] + c * out_st(i * " + RO + " + k); }\n"
                     "  }\n"
                     "  var acc = zero_$y();\n"
                     "  for (var s = 0u; s < n_sum(); s = s + 1u) {\n"
                     "    var off = base;\n"
                     "    var sr = s;\n"
                     "    for (var e = 0u; e < " + RS + "; e = e + 1u) {\n"
                     "      let k = " + RS + " - 1u - e;\n"
                     "      let c = sr % sum_dims(k);\n"
                     "      sr = sr / sum_dims(k);\n"
                     "      for (var i = 0u; i < " + NI + "; i = i + 1u) { off[i] = off[i] + c * sum_st(i * " + RS + " + k); }\n"
                     "    }\n"
                     "    var prod = x0_load(off[0]);\n";
  for (size_t i = 1; i < n_in; ++i) body += "    prod = mul_$y(prod, x" + std::to_string(i) + "_load(off[" + std::to_string(i) + "]));\n";
  body += "    acc = add_$y(acc, prod);\n"
          "  }\n"
          "  y_store(gi, acc);";
  if (ro == 0) body = "  var base: array<u32, " + std::to_string(n_in) + ">;\n" + body.substr(body.find("  var acc"));
  p.set_threads(uint64_t(shape_numel(plan.out_shape)));
  p.body(body);
  ctx.dispatch(p, binds);
}

}  // namespace

void register_matmul(GpuKernelRegistry& r) {
  r.add("Einsum", einsum);
  r.add("MatMulInteger", [](GpuKernelContext& ctx) { integer_matmul(ctx, IntegerMatMulInputs::matmul_integer()); });
  r.add("QLinearMatMul", [](GpuKernelContext& ctx) { integer_matmul(ctx, IntegerMatMulInputs::qlinear_matmul()); });
  r.add("MatMulIntegerToFloat", [](GpuKernelContext& ctx) { integer_matmul(ctx, IntegerMatMulInputs::integer_to_float()); },
        ir::kMsDomain);
  r.add("Det", det);
  r.add("MatMul", matmul);
  r.add("Gemm", gemm);
  r.add_fused("MatMul", fused_matmul);
}

}  // namespace onnxgpu::webgpu
