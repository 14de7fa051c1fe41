// Block-quantized weights on the GPU (com.microsoft MatMulNBits, GatherBlockQuantized; see
// ops/block_quant.h). The packed uint8 data stays as it is stored: the kernels read its 32-bit words
// (`b_word`, the shader layer's word accessor of a sub-word input) and take the values out themselves,
// dequantizing each as (q - zero_point) * scale, so a 4-bit weight costs half a byte of memory traffic
// and is never expanded in GPU memory.
//
// MatMulNBits: B's rows (one per output column n) hold K values, a word `VALS` = 32 / bits of them, a
// block's words contiguous (a block is 16 values or more, so a word never straddles two blocks; word w
// of a row holds values w * VALS ...). Two kernels:
// - rows (M <= kRowsMax: a decode step's product, bound by reading B): each output column is a dot
//   product along a row of B. KT invocations share a row, reading neighbouring words (a warp reads a
//   contiguous run of the row), each CPI rows at once (the same words of CPI rows: every value of A
//   read serves CPI columns); a workgroup takes (WG / KT) * CPI rows, or RG such groups in turn where
//   one slice holds the whole row (A staged, and normalized, once for all of them). K goes by slices of SW words: an
//   invocation first loads its U = SW / KT words of the slice in each of its rows (all in flight at
//   once) with their blocks' scales, then the workgroup stages A's slice in workgroup memory (each
//   word's values as vec4s, zeros past K, and their sum), then every invocation computes. A value q is
//   taken out of its word as the float 1 + q / 2^bits (q moved under the exponent of 1.0: a shift and
//   a mask, no integer-to-float conversion), so a word's products are
//     sum (q - z) s a = s 2^bits dot(a, q') - s (2^bits + z) sum(a)
//   two vec4 dot products (at 4 bits) and two multiply-adds per word and row of A. The KT partial sums
//   of a column are added in workgroup memory (levels of 16). The shape (rows_shape) comes from the
//   device's limits (workgroup memory: the slice is as long as it allows, at most what the row has) and
//   the product's sizes; $ONNXGPU_NBITS_ROWS=old selects the previous kernel (A read per value from
//   global memory, a scale per word) for timing the two side by side, or overrides the shape's settings
//   (RowsSettings).
// - tiled (larger M, a prompt): each workgroup computes a TM x TN tile of the output through K-slices
//   of TK values: A's slice goes into workgroup memory as it is, B's is dequantized as it is loaded
//   (each invocation unpacks whole words), then every invocation accumulates RM x 4 outputs.
// A value of the last block past K (padding) meets a zero of A. The sums are float32; the bias is added
// when a result is stored.
// The fused pair (runtime/fusion.h: a decoder MLP's gate and up projections and SwiGLU) is the rows
// kernel over two products' Bs: each invocation takes a row of each for the same column and stores
// the expression of the two results.
// (The pair's zero-point forms and biases may differ; their K, N, bits and block size are the same.)
// The normalization prologue (runtime/fusion.h: the SimplifiedLayerNormalization or Skip form before a
// product or pair) is the rows kernel over A's rows before they are normalized: every workgroup first
// sums the squares of each whole row v = x (+ skip (+ bias)) (K floats, read again by each workgroup from
// the cache), and then stages its slices as v * inv_rms * gamma, as the normalization kernel computes
// them (normalization.cpp); workgroup 0 also stores v where the Skip form's residual sum is read.
//
// GatherBlockQuantized: one invocation per output value; the index is read at run time through its
// family's to_i64 (a replay takes new indices, int64 ones beyond 32 bits included) and one outside the
// data's rows is flagged: the run fails naming the node and the index, as on the CPU.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>

#include "ops/block_quant.h"
#include "ops/normalization.h"
#include "webgpu/device.h"
#include "webgpu/kernels/fused_steps.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/norm_prologue.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {

namespace {

using strided::u32_dim;
using P = ops::MatMulNBitsParams;

constexpr uint32_t kRowsMax = 4;  // products of at most this many rows take the rows kernel

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

// One product a MatMulNBits kernel computes: its sizes and where its operands are among the node's
// inputs (A is input 0 for every product): MatMulNBits' own inputs, or product k of the fused pair
// (fused_matmul_nbits). Its WGSL names end in `sfx` ("" for the first product, "1" for the second).
struct NBitsProduct {
  P q;
  size_t b = P::kB, scales = P::kScales, zp = P::kZeroPoints, bias = P::kBias;
  std::string sfx = {};
};

// The operands every MatMulNBits kernel declares (a, then b, scales, zero points and bias of each
// product, y) and their bindings, the uniforms they share (the products have the same K, N, bits and
// block size), and per product `dequant<sfx>(n, blk)`: the (scale, -zero_point * scale) of block blk
// of row n, so that a value q dequantizes as fma(q, s.x, s.y), from `scale<sfx>` and `zero<sfx>` (n, blk),
// and `result<sfx>(n, v)`: a sum with the bias added.
std::vector<ValueRef> declare_nbits(GpuKernelContext& ctx, shader::Program& p, const std::vector<NBitsProduct>& ps) {
  const P& q = ps[0].q;
  const DType t = ctx.dtype(P::kA);
  auto flat = [&](size_t i) { return Shape{shape_numel(ctx.shape(i))}; };
  p.input("a", t, flat(P::kA));
  std::vector<ValueRef> binds{ctx.in(P::kA)};
  for (const NBitsProduct& pr : ps) {
    p.input("b" + pr.sfx, DType::UInt8, flat(pr.b));
    p.input("scales" + pr.sfx, t, flat(pr.scales));
    binds.push_back(ctx.in(pr.b));
    binds.push_back(ctx.in(pr.scales));
    if (pr.q.zero_points != P::ZeroPoints::Default) {
      p.input("zp" + pr.sfx, ctx.dtype(pr.zp), flat(pr.zp));
      binds.push_back(ctx.in(pr.zp));
    }
    if (pr.q.bias) {
      p.input("bias" + pr.sfx, t, flat(pr.bias));
      binds.push_back(ctx.in(pr.bias));
    }
  }
  p.output("y", t, Shape{shape_numel(q.out)});
  binds.push_back(ctx.out(0));
  const uint32_t vals = 32 / uint32_t(q.bits);
  p.uniform("M", u32_dim(ctx, q.M, "the rows of A"));
  p.uniform("N", uint32_t(q.N));
  p.uniform("K", uint32_t(q.K));
  p.uniform("RW", u32_dim(ctx, q.k_blocks * q.blob_size / 4, "a row of B's words"));  // words per row of B
  p.uniform("KW", uint32_t((q.K + vals - 1) / vals));  // the row's words that hold values below K
  p.uniform("blocks", uint32_t(q.k_blocks));
  int64_t zp_row = 0;  // a row of packed zero points (the same in every product that has them)
  for (const NBitsProduct& pr : ps) zp_row = std::max(zp_row, pr.q.zp_row_bytes);
  p.uniform("zp_row", uint32_t(zp_row));
  // BW, a block's words, is a constant (of the block_size attribute): the block of word w is w / BW, a
  // shift where BW is a power of two, not a division by a uniform for every word read.
  std::string d = "const BITS: u32 = " + u32_lit(uint64_t(q.bits)) + ";\nconst VALS: u32 = " + u32_lit(vals) +
                  ";\nconst MASK: u32 = " + u32_lit((1u << q.bits) - 1) + ";\nconst BW: u32 = " +
                  u32_lit(uint64_t(q.blob_size / 4)) + ";\n";
  for (const NBitsProduct& pr : ps) {
    d += "fn scale" + pr.sfx + "(n: u32, blk: u32) -> f32 { return scales" + pr.sfx + "_load(n * blocks() + blk); }\n";
    d += "fn zero" + pr.sfx + "(n: u32, blk: u32) -> f32 { return ";
    switch (pr.q.zero_points) {
      case P::ZeroPoints::Default: d += std::to_string(pr.q.default_zero_point()) + ".0"; break;
      case P::ZeroPoints::Float: d += "zp" + pr.sfx + "_load(n * blocks() + blk)"; break;
      case P::ZeroPoints::Packed:
        d += "f32((zp" + pr.sfx + "_load(n * zp_row() + blk * BITS / 8u) >> ((blk * BITS) % 8u)) & MASK)";
        break;
    }
    d += "; }\n";
    d += "fn dequant" + pr.sfx + "(n: u32, blk: u32) -> vec2<f32> {\n  let s = scale" + pr.sfx + "(n, blk);\n"
         "  return vec2<f32>(s, -zero" + pr.sfx + "(n, blk) * s);\n}\n";
    d += "fn result" + pr.sfx + "(n: u32, v: f32) -> f32 { return v" +
         std::string(pr.q.bias ? " + bias" + pr.sfx + "_load(n)" : "") + "; }\n";
  }
  d += "fn load_a(i: u32, inside: bool) -> f32 { return select(0.0, a_load(select(0u, i, inside)), inside); }\n";
  p.declare(d);
  return binds;
}

std::string nbits_name(const P& q) {
  const char* zp = q.zero_points == P::ZeroPoints::Default ? "" : q.zero_points == P::ZeroPoints::Packed ? "_zp" : "_zpf";
  return "_b" + std::to_string(q.bits) + zp + (q.bias ? "_bias" : "");
}

// The previous rows kernel ($ONNXGPU_NBITS_ROWS=old, for timing the two side by side): KT invocations
// share a row, each loading U words and then, per value, A from global memory and its block's scale.
void nbits_rows_old(GpuKernelContext& ctx, const P& q) {
  const Limits& l = ctx.limits;
  const uint32_t inv = l.max_compute_invocations_per_workgroup ? l.max_compute_invocations_per_workgroup : 256;
  const uint32_t wx = l.max_compute_workgroup_size_x ? l.max_compute_workgroup_size_x : 256;
  const uint32_t wg = pow2_floor(std::min({256u, inv, wx}));
  const uint32_t unroll = 4, vals = 32 / uint32_t(q.bits), rows = uint32_t(q.M);
  const uint64_t kw = (uint64_t(q.K) + vals - 1) / vals;
  // Enough invocations per row that one loop iteration covers the row where it can.
  const uint32_t kt = std::min(wg, pow2_ceil((kw + unroll - 1) / unroll));
  auto p = ctx.program("rows_" + std::to_string(kt) + "x" + std::to_string(wg / kt) + "_u" + std::to_string(unroll) +
                           "_m" + std::to_string(rows) + nbits_name(q),
                       wg);
  std::vector<ValueRef> binds = declare_nbits(ctx, p, {NBitsProduct{q}});
  const uint64_t groups = (uint64_t(q.N) + wg / kt - 1) / (wg / kt);
  p.uniform("groups", u32_dim(ctx, groups, "the workgroups"));
  p.declare("const WG: u32 = " + u32_lit(wg) + ";\nconst KT: u32 = " + u32_lit(kt) + ";\nconst U: u32 = " +
            u32_lit(unroll) + ";\nvar<workgroup> red: array<f32, " + u32_lit(wg) + ">;\n");
  auto n_ = [](uint32_t v) { return std::to_string(v); };
  std::string b =
      "  if (wg >= groups()) { return; }\n"
      "  let kt = lid % KT;\n"
      "  let n_raw = wg * (WG / KT) + lid / KT;\n"
      "  let n = min(n_raw, N() - 1u);\n"
      "  let row = n * RW();\n";
  for (uint32_t m = 0; m < rows; ++m) b += "  var acc" + n_(m) + " = 0.0;\n";
  b += "  for (var w = kt; w < KW(); w = w + KT * U) {\n";
  for (uint32_t u = 0; u < unroll; ++u) {
    std::string wu = u ? "w + " + u32_lit(u) + " * KT" : "w";
    b += "    let w" + n_(u) + " = " + wu + ";\n"
         "    let word" + n_(u) + " = select(0u, b_word(row + select(0u, w" + n_(u) + ", w" + n_(u) + " < KW())), w" + n_(u) +
         " < KW());\n";
  }
  for (uint32_t u = 0; u < unroll; ++u) {
    const std::string wu = "w" + n_(u), word = "word" + n_(u);
    b += "    if (" + wu + " < KW()) {\n"
         "      let s = dequant(n, " + wu + " / BW);\n"
         "      let k0 = " + wu + " * VALS;\n"
         "      for (var e = 0u; e < VALS; e = e + 1u) {\n"
         "        let v = fma(f32((" + word + " >> (e * BITS)) & MASK), s.x, s.y);\n"
         "        let inside = k0 + e < K();\n";
    for (uint32_t m = 0; m < rows; ++m)
      b += "        acc" + n_(m) + " = fma(load_a(" + u32_lit(m) + " * K() + k0 + e, inside), v, acc" + n_(m) + ");\n";
    b += "      }\n    }\n";
  }
  b += "  }\n";
  for (uint32_t m = 0; m < rows; ++m)
    b += "  workgroupBarrier();\n"
         "  red[lid] = acc" + n_(m) + ";\n"
         "  workgroupBarrier();\n"
         "  for (var s = KT / 2u; s > 0u; s = s >> 1u) {\n"
         "    if (kt < s) { red[lid] = red[lid] + red[lid + s]; }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  if (kt == 0u && n_raw < N()) { y_store(" + u32_lit(m) + " * N() + n, result(n, red[lid])); }\n";
  p.body(b);
  uint32_t gx = 1, gy = 1;
  grid_for(groups * wg, wg, l, gx, gy);
  ctx.dispatch(p, binds, gx, gy);
}

// The rows kernel's settings: $ONNXGPU_NBITS_ROWS (read once), "old" for the previous kernel, or any of
// "cpi=2,words=8,mem=32768,target=256,groups=2" for measuring on a device (RowsSettings).
struct RowsSettings {
  bool old = false;
  uint32_t cpi = 2;        // columns (rows of B) per invocation: each value of A staged serves this many
  uint32_t words = 8;      // words of a row each invocation reads (per column): fewer invocations per row
                           // for a short row, more for a long one
  uint32_t mem = 32768;    // at most this much workgroup memory (and never more than the device allows)
  uint32_t target = 256;   // a grid of fewer workgroups than this takes fewer columns per invocation,
                           // then more invocations per row
  uint32_t groups = 2;     // row groups per workgroup, in turn: A's rows staged (and normalized) once
                           // for them all where the slice holds the whole row (H200, the GenAI-style
                           // decoder: 1.71 / 1.64 ms per token at 2, 1.74 / 1.68 at 4, 1.89 / 1.78 at 1)
};

RowsSettings rows_settings() {
  static const RowsSettings s = [] {
    RowsSettings r;
    const char* e = std::getenv("ONNXGPU_NBITS_ROWS");
    if (!e || !*e) return r;
    std::string text = e;
    if (text == "old") {
      r.old = true;
      return r;
    }
    std::stringstream items(text);
    for (std::string item; std::getline(items, item, ',');) {
      size_t eq = item.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = item.substr(0, eq);
      const uint32_t v = uint32_t(std::min<unsigned long long>(std::strtoull(item.c_str() + eq + 1, nullptr, 10), 1u << 20));
      if (v == 0) continue;
      if (key == "cpi") r.cpi = std::min(v, 4u);
      else if (key == "words") r.words = pow2_floor(std::min(v, 16u));  // the body is unrolled over them
      else if (key == "mem") r.mem = v;
      else if (key == "target") r.target = v;
      else if (key == "groups") r.groups = std::min(v, 16u);
    }
    return r;
  }();
  return s;
}

// The rows kernel's shape for one product (see the top of the file).
struct RowsShape {
  uint32_t wg = 256;   // invocations per workgroup
  uint32_t kt = 32;    // invocations per row of B
  uint32_t cpi = 2;    // rows of B per invocation: output columns, times the products of a fused pair
  uint32_t sw = 256;   // words of a row per K-slice: A's slice of sw * VALS values per row is staged
  uint32_t u = 8;      // words each invocation reads per slice and column: sw / kt
  uint64_t groups = 1;  // workgroups
  uint32_t rg = 1;      // row groups per workgroup (each per_group() rows of B), in turn
  uint32_t per_group() const { return (wg / kt) * cpi; }
};

// `products`: how many products of q's sizes the kernel computes (2: the fused pair, whose invocations
// take a row of each product's B for the same column, so CPI is a multiple of it).
// `reserve`: bytes of workgroup memory the kernel keeps for something else (the prologue's statistics).
std::optional<RowsShape> rows_shape(const Limits& l, const P& q, const RowsSettings& s, uint32_t products = 1,
                                    uint32_t reserve = 0) {
  RowsShape g;
  const uint32_t inv = l.max_compute_invocations_per_workgroup ? l.max_compute_invocations_per_workgroup : 256;
  const uint32_t wx = l.max_compute_workgroup_size_x ? l.max_compute_workgroup_size_x : 256;
  const uint32_t limit = l.max_compute_workgroup_storage_size ? l.max_compute_workgroup_storage_size : 16384;
  const uint32_t mem = std::min(limit, s.mem) - std::min(reserve, std::min(limit, s.mem));
  const uint32_t vals = 32 / uint32_t(q.bits), rows = uint32_t(q.M);
  const uint64_t kw = (uint64_t(q.K) + vals - 1) / vals;
  g.wg = pow2_floor(std::min({256u, inv, wx}));
  // About `words` words of the row per invocation; at least 8 invocations per row (coalesced reads).
  g.kt = std::clamp(pow2_ceil((kw + s.words - 1) / s.words), std::min(8u, g.wg), g.wg);
  const uint64_t rows_of_b = uint64_t(q.N) * products;
  g.cpi = std::max(s.cpi / products * products, products);
  while (g.cpi > products && (rows_of_b + g.per_group() - 1) / g.per_group() < s.target) g.cpi /= 2;  // more workgroups
  // Workgroup memory: the partial sums (cpi per invocation), then A's slice: vals + 1 floats per word
  // and row (the values and their sum).
  const uint64_t red = uint64_t(g.cpi) * g.wg * 4, per_word = uint64_t(rows) * (vals + 1) * 4;
  if (red + per_word * std::min(8u, g.wg) > mem) return std::nullopt;
  const uint32_t sw_max = uint32_t(std::min<uint64_t>((mem - red) / per_word, 1u << 20));
  g.kt = std::min(g.kt, pow2_floor(sw_max));
  // The slice: as many words as fit, no more than the row has (rounded up to the invocations), nor more
  // than `words` per invocation (registers: every invocation holds its slice's words at once).
  g.sw = std::max(g.kt, std::min({pow2_floor(sw_max), pow2_ceil(kw), g.kt * s.words}));
  g.u = g.sw / g.kt;
  // A grid still short of the target (few columns, e.g. a [2048, 512] product) gives more invocations
  // to each row while each keeps 2 words of the slice or more.
  auto groups = [&] { return (rows_of_b + g.per_group() - 1) / g.per_group(); };
  while (groups() < s.target && g.u > 2 && g.kt < g.wg) {
    g.kt *= 2;
    g.u /= 2;
  }
  // Several row groups per workgroup only where the slice holds the whole row (A staged once for them).
  g.rg = g.sw * uint64_t(vals) >= uint64_t(q.K) ? std::max(1u, s.groups) : 1u;
  g.groups = (groups() + g.rg - 1) / g.rg;
  return g;
}

// A row normalization the rows kernel applies to A as it stages it (the fused node's inputs `at`,
// at + 1, at + 2: skip, scale, bias; see fused_matmul_nbits).
struct NormPrologue {
  size_t at = 0;
  bool skip = false, bias = false;  // v = x + skip (+ bias), else v = x
  bool sum = false;                 // v stored as output 1 (the Skip form's input_skip_bias_sum)
  int64_t skip_numel = 0;           // skip repeats every skip_numel elements of x
  float epsilon = 0;
};

// The rows kernel (see the top of the file), for one product, or for the fused pair (ps: both
// products, `epilogue`: WGSL declaring `fn epilogue(p: f32, p1: f32) -> f32`, what is stored of a
// column's two results): invocation slot c takes a row of product c % P's B for column c / P of the
// invocation's columns, so that both of a column's results meet in one invocation's epilogue.
// `norm`: A's rows normalized first (the prologue).
void nbits_rows(GpuKernelContext& ctx, const std::vector<NBitsProduct>& ps, const RowsShape& g,
                const std::string& epilogue = "", const NormPrologue* norm = nullptr) {
  const P& q = ps[0].q;
  const uint32_t bits = uint32_t(q.bits), vals = 32 / bits, parts = vals / 4, rows = uint32_t(q.M);
  const uint32_t R = g.wg / g.kt;  // rows of B per column step of the workgroup
  const uint32_t np = uint32_t(ps.size());
  auto n_ = [](uint32_t v) { return std::to_string(v); };
  std::string name = (np > 1 ? "pair_rows2_" : "rows2_") + n_(g.kt) + "x" + n_(R) + "x" + n_(g.cpi) + "_u" + n_(g.u) +
                     "_m" + n_(rows) + (g.rg > 1 ? "_g" + n_(g.rg) : std::string());
  for (const NBitsProduct& pr : ps) name += nbits_name(pr.q);
  if (norm) name += std::string("_norm") + (norm->skip ? "_skip" : "") + (norm->bias ? "_bias" : "") + (norm->sum ? "_sum" : "");
  auto p = ctx.program(name, g.wg);
  std::vector<ValueRef> binds = declare_nbits(ctx, p, ps);
  // The prologue's operands: v(m, k), row m's value k before it is normalized, and its scale.
  std::string prologue_decl;
  if (norm) {
    const DType t = ctx.dtype(P::kA);
    std::string v = "a_load(i)";
    if (norm->skip) {
      p.input("sk", t, Shape{shape_numel(ctx.shape(norm->at))});
      binds.push_back(ctx.in(norm->at));
      p.uniform("skip_n", u32_dim(ctx, norm->skip_numel, "the skip"));
      v += " + sk_load(i % skip_n())";
    }
    p.input("gamma", t, Shape{shape_numel(ctx.shape(norm->at + 1))});
    binds.push_back(ctx.in(norm->at + 1));
    if (norm->bias) {
      p.input("nb", t, Shape{shape_numel(ctx.shape(norm->at + 2))});
      binds.push_back(ctx.in(norm->at + 2));
      v += " + nb_load(k)";
    }
    if (norm->sum) {
      p.output("res", t, Shape{shape_numel(ctx.shape(P::kA))});
      binds.push_back(ctx.out(1));
    }
    p.uniform_f32("eps", norm->epsilon);
    prologue_decl = "fn nv(m: u32, k: u32) -> f32 { let i = m * K() + k; return " + v + "; }\n"
                    "fn load_norm(m: u32, k: u32, inside: bool) -> f32 {\n"
                    "  let kk = select(0u, k, inside);\n"
                    "  return select(0.0, nv(m, kk) * ns_inv[m] * gamma_load(kk), inside);\n"
                    "}\n";
  }
  const uint32_t most = ctx.limits.max_storage_buffers_per_shader_stage ? ctx.limits.max_storage_buffers_per_shader_stage : 8;
  if (binds.size() + 1 > most)  // + the status words
    ctx.unsupported("more tensors than the device binds per dispatch");
  p.uniform("groups", u32_dim(ctx, g.groups, "the workgroups"));
  std::string d = "const WG: u32 = " + u32_lit(g.wg) + ";\nconst KT: u32 = " + u32_lit(g.kt) + ";\nconst R: u32 = " +
                  u32_lit(R) + ";\nconst CPI: u32 = " + u32_lit(g.cpi) + ";\nconst SW: u32 = " + u32_lit(g.sw) +
                  ";\nconst MR: u32 = " + u32_lit(rows) + ";\n";
  d += "var<workgroup> As: array<vec4<f32>, " + u32_lit(uint64_t(parts) * rows * g.sw) +
       ">;  // [VALS / 4][MR][SW]: values 4i..4i+3 of word w of A's row m at (i * MR + m) * SW + w\n"
       "var<workgroup> sums: array<f32, " + u32_lit(uint64_t(rows) * g.sw) + ">;  // [MR][SW]: a word's values of A added\n"
       "var<workgroup> red: array<f32, " + u32_lit(uint64_t(g.cpi) * g.wg) + ">;  // [CPI][WG]: partial sums\n";
  // Values 4i..4i+3 of a word as 1 + q / 2^BITS: q moved to the top of a float's mantissa under the
  // exponent of 1.0 (exact; a shift and a mask per value instead of an integer-to-float conversion).
  const uint32_t top = 23 - bits;
  d += "const QM: u32 = " + u32_lit(uint64_t((1u << bits) - 1) << top) + ";\nconst ONE: u32 = 0x3f800000u;\n";
  for (uint32_t i = 0; i < parts; ++i) {
    std::string lanes;
    for (uint32_t j = 4 * i; j < 4 * i + 4; ++j) {
      const int sh = int(top) - int(j * bits);
      lanes += std::string(j > 4 * i ? ", " : "") + (sh > 0 ? "w << " + u32_lit(uint32_t(sh)) : sh < 0 ? "w >> " + u32_lit(uint32_t(-sh)) : "w");
    }
    d += "fn qv" + n_(i) + "(w: u32) -> vec4<f32> {\n  return bitcast<vec4<f32>>((vec4<u32>(" + lanes +
         ") & vec4<u32>(QM)) | vec4<u32>(ONE));\n}\n";
  }
  // With q' = 1 + q / 2^BITS a word's values give sum (q - z) s a = s 2^BITS dot(a, q') - s (2^BITS + z) sum(a):
  // the two coefficients of block blk of row n.
  // (From the block's scale s and zero point z, loaded with the words and used only when the values are.)
  d += "fn coef(s: f32, z: f32) -> vec2<f32> {\n  let s2 = s * " + f32_lit(float(1u << bits)) +
       ";\n  return vec2<f32>(s2, -z * s - s2);\n}\n";
  p.declare(d + prologue_decl + epilogue);

  const std::string head = "  if (wg >= groups()) { return; }\n  let kt = lid % KT;\n  let r = lid / KT;\n";
  std::string stats;  // the prologue's, before A's slice is staged
  if (norm) {
    // Each row's statistics (norm_prologue.h): one pass over the rows (workgroup 0 also stores v where
    // the residual sum is read), the sums added in `red` (free until the partial sums).
    const bool sum = norm->sum;
    const RowStatsWgsl st = row_stats_wgsl(rows, g.wg, false, "red", [sum](uint32_t m, const std::string& v) {
      return sum ? "if (wg == 0u) { res_store(" + u32_lit(m) + " * K() + k, " + v + "); }" : std::string();
    });
    p.declare(st.decl);
    stats = st.body;
  }
  // Several row groups in turn (g.rg > 1, the whole row in one slice): A's row staged once for them.
  const bool multi = g.rg > 1;
  // A's slice: each invocation stages whole words (zeros past K) and their sums.
  std::string stage = "    workgroupBarrier();\n"
                      "    for (var g = lid; g < MR * SW; g = g + WG) {\n"
                      "      let m = g / SW;\n"
                      "      let wl = g % SW;\n"
                      "      let k0 = (ws + wl) * VALS;\n";
  std::string sum;
  for (uint32_t e = 0; e < vals; ++e) {
    const std::string k = "k0 + " + u32_lit(e);
    stage += "      let a" + n_(e) + " = " +
             (norm ? "load_norm(m, " + k + ", " + k + " < K())" : "load_a(m * K() + " + k + ", " + k + " < K())") + ";\n";
    sum += (e ? " + a" : "a") + n_(e);
  }
  for (uint32_t i = 0; i < parts; ++i)
    stage += "      As[(" + u32_lit(i) + " * MR + m) * SW + wl] = vec4<f32>(a" + n_(4 * i) + ", a" + n_(4 * i + 1) + ", a" +
             n_(4 * i + 2) + ", a" + n_(4 * i + 3) + ");\n";
  stage += "      sums[m * SW + wl] = " + sum + ";\n"
           "    }\n"
           "    workgroupBarrier();\n";
  // Row group `wr`'s columns (decl: "let " to declare them, "" to set the vars of the next group).
  auto columns = [&](const std::string& wr, const std::string& decl, const std::string& in) {
    std::string t;
    for (uint32_t c = 0; c < g.cpi; ++c) {
      const std::string cs = n_(c);
      t += in + decl + "n_raw" + cs + " = " + wr + " * (R * CPI" + (np > 1 ? " / " + u32_lit(np) : std::string()) + ") + " +
           u32_lit(c / np) + " * R + r;\n" + in + decl + "n" + cs + " = min(n_raw" + cs + ", N() - 1u);\n" + in + decl +
           "row" + cs + " = n" + cs + " * RW();\n";
    }
    return t;
  };
  // The slice's words of B and their blocks' scales and zero points (their coefficients are computed
  // where they are used: every load is in flight before anything waits for one). A word past the row's
  // values (the last slice) repeats the last one: it meets zeros of A.
  auto word_index = [&](uint32_t u, const std::string& in) {
    return in + "let wi" + n_(u) + " = min(ws + kt" + (u ? " + " + u32_lit(u) + " * KT" : std::string()) + ", KW() - 1u);\n";
  };
  auto loads = [&](const std::string& decl, const std::string& in) {
    std::string t;
    for (uint32_t u = 0; u < g.u; ++u)
      for (uint32_t c = 0; c < g.cpi; ++c) {
        const std::string uc = n_(u) + "_" + n_(c), blk = "(n" + n_(c) + ", wi" + n_(u) + " / BW)";
        const std::string& sfx = ps[c % np].sfx;
        t += in + decl + "b" + uc + " = b" + sfx + "_word(row" + n_(c) + " + wi" + n_(u) + ");\n" + in + decl + "sr" + uc +
             " = scale" + sfx + blk + ";\n" + in + decl + "zr" + uc + " = zero" + sfx + blk + ";\n";
      }
    return t;
  };
  std::string compute;
  for (uint32_t u = 0; u < g.u; ++u) {
    const std::string us = n_(u);
    compute += "    let l" + us + " = kt" + (u ? " + " + u32_lit(u) + " * KT" : std::string()) + ";\n";
    for (uint32_t m = 0; m < rows; ++m) {
      const std::string um = us + "_" + n_(m);
      for (uint32_t i = 0; i < parts; ++i)
        compute += "    let x" + um + "_" + n_(i) + " = As[" + u32_lit(uint64_t(i) * rows * g.sw + uint64_t(m) * g.sw) + " + l" + us + "];\n";
      compute += "    let t" + um + " = sums[" + u32_lit(uint64_t(m) * g.sw) + " + l" + us + "];\n";
    }
    for (uint32_t c = 0; c < g.cpi; ++c) {
      const std::string uc = us + "_" + n_(c);
      compute += "    let s" + uc + " = coef(sr" + uc + ", zr" + uc + ");\n";
      for (uint32_t i = 0; i < parts; ++i) compute += "    let q" + uc + "_" + n_(i) + " = qv" + n_(i) + "(b" + uc + ");\n";
      for (uint32_t m = 0; m < rows; ++m) {
        const std::string um = us + "_" + n_(m), acc = "acc" + n_(m) + "_" + n_(c);
        std::string dot;
        for (uint32_t i = 0; i < parts; ++i)
          dot += std::string(i ? " + " : "") + "dot(x" + um + "_" + n_(i) + ", q" + uc + "_" + n_(i) + ")";
        compute += "    " + acc + " = fma(s" + uc + ".x, " + dot + ", fma(s" + uc + ".y, t" + um + ", " + acc + "));\n";
      }
    }
  }
  std::string accs;
  for (uint32_t m = 0; m < rows; ++m)
    for (uint32_t c = 0; c < g.cpi; ++c) accs += "  var acc" + n_(m) + "_" + n_(c) + " = 0.0;\n";
  // The columns a group stores (nst, nrst: its n and n_raw).
  std::string keep;
  for (uint32_t c = 0; c < g.cpi; ++c) keep += "  let nst" + n_(c) + " = n" + n_(c) + ";\n  let nrst" + n_(c) + " = n_raw" + n_(c) + ";\n";
  std::string b;
  if (multi) {
    // The first group's loads go before the statistics and the staging of A, which they do not need; each
    // next group's before the partial sums of the one before.
    std::string first = "  let ws = 0u;\n" + columns("wg * " + u32_lit(g.rg), "var ", "  ");
    for (uint32_t u = 0; u < g.u; ++u) first += word_index(u, "  ");
    first += loads("var ", "  ");
    b = head + first + stats + "  {\n" + stage + "  }\n"
        "  for (var rgi = 0u; rgi < " + u32_lit(g.rg) + "; rgi = rgi + 1u) {\n" + accs + "  {\n" + compute + "  }\n" + keep +
        "  if (rgi + 1u < " + u32_lit(g.rg) + ") {\n    let wr = wg * " + u32_lit(g.rg) + " + rgi + 1u;\n" +
        columns("wr", "", "    ") + loads("", "    ") + "  }\n";
  } else {
    b = head + stats + columns("wg", "let ", "  ") + accs + "  for (var ws = 0u; ws < KW(); ws = ws + SW) {\n";
    for (uint32_t u = 0; u < g.u; ++u) b += word_index(u, "    ");
    b += loads("let ", "    ") + stage + compute + "  }\n" + keep;
  }
  // The KT partial sums of each column: levels of 16 (at most two for KT <= 256), then invocation 0 of
  // the row adds the rest and stores.
  for (uint32_t m = 0; m < rows; ++m) {
    b += "  workgroupBarrier();\n";
    for (uint32_t c = 0; c < g.cpi; ++c) b += "  red[" + u32_lit(uint64_t(c) * g.wg) + " + lid] = acc" + n_(m) + "_" + n_(c) + ";\n";
    b += "  workgroupBarrier();\n";
    uint32_t cnt = g.kt;
    while (cnt > 16) {
      const uint32_t t = cnt / 16;
      b += "  if (kt < " + u32_lit(t) + ") {\n";
      for (uint32_t c = 0; c < g.cpi; ++c) {
        const std::string at = u32_lit(uint64_t(c) * g.wg) + " + lid";
        std::string s = "red[" + at + "]";
        for (uint32_t i = 1; i < 16; ++i) s += " + red[" + at + " + " + u32_lit(uint64_t(i) * t) + "]";
        b += "    red[" + at + "] = " + s + ";\n";
      }
      b += "  }\n  workgroupBarrier();\n";
      cnt = t;
    }
    b += "  if (kt == 0u) {\n";
    for (uint32_t c = 0; c < g.cpi; ++c) {
      const std::string at = u32_lit(uint64_t(c) * g.wg) + " + lid", cs = n_(c);
      std::string s = "red[" + at + "]";
      for (uint32_t i = 1; i < cnt; ++i) s += " + red[" + at + " + " + u32_lit(i) + "]";
      b += "    let v" + cs + " = result" + ps[c % np].sfx + "(nst" + cs + ", " + s + ");\n";
    }
    // Each column's value: its product's result, or the epilogue of its products' results (slots
    // j * P .. j * P + P - 1, of the same column).
    for (uint32_t c = 0; c < g.cpi; c += np) {
      const std::string cs = n_(c);
      std::string v = "v" + cs;
      if (np > 1) {
        v = "epilogue(" + v;
        for (uint32_t k = 1; k < np; ++k) v += ", v" + n_(c + k);
        v += ")";
      }
      b += "    if (nrst" + cs + " < N()) { y_store(" + u32_lit(m) + " * N() + nst" + cs + ", " + v + "); }\n";
    }
    b += "  }\n";
  }
  if (multi) b += "  }\n";
  p.body(b);
  uint32_t gx = 1, gy = 1;
  grid_for(g.groups * g.wg, g.wg, ctx.limits, gx, gy);
  ctx.dispatch(p, binds, gx, gy);
}

// The tiled kernel (see the top of the file): TM x TN tiles, K-slices of TK values (whole words for
// every bit width), RM x 4 outputs per invocation.
void nbits_tiled(GpuKernelContext& ctx, const P& q) {
  constexpr uint32_t TM = 32, TN = 64, TK = 32, RM = 4, NT = (TN / 4) * (TM / RM);  // 128 invocations
  const uint32_t vals = 32 / uint32_t(q.bits), words = TN * TK / vals;           // B's words per slice
  auto p = ctx.program("tiled_" + std::to_string(TM) + "x" + std::to_string(TN) + "x" + std::to_string(TK) + nbits_name(q),
                       NT);
  std::vector<ValueRef> binds = declare_nbits(ctx, p, {NBitsProduct{q}});
  const uint64_t gx = (uint64_t(q.N) + TN - 1) / TN, gy = (uint64_t(q.M) + TM - 1) / TM;
  const uint64_t max_dim = ctx.limits.max_compute_workgroups_per_dimension ? ctx.limits.max_compute_workgroups_per_dimension : 65535;
  if (gx > max_dim || gy > max_dim) ctx.unsupported("product too large for the device's grid");
  p.declare("const TM: u32 = " + u32_lit(TM) + ";\nconst TN: u32 = " + u32_lit(TN) + ";\nconst TK: u32 = " + u32_lit(TK) +
            ";\nconst RM: u32 = " + u32_lit(RM) + ";\nconst NT: u32 = " + u32_lit(NT) + ";\nconst WORDS: u32 = " +
            u32_lit(words) + ";\n"
            // Arrays of rows, as the float product's tiles (matmul.cpp, tiled_decls): the K loop's clamps leave it.
            "var<workgroup> As: array<array<f32, TK>, TM>;  // [TM][TK]\n"
            "var<workgroup> Bs: array<array<vec4<f32>, TN / 4u>, TK>;  // [TK][TN / 4]\n");
  auto n_ = [](uint32_t v) { return std::to_string(v); };
  std::string b =
      "  let tx = lid % (TN / 4u);\n"
      "  let ty = lid / (TN / 4u);\n"
      "  let n0 = wid.x * TN;\n"
      "  let m0 = wid.y * TM;\n";
  for (uint32_t i = 0; i < RM; ++i) b += "  var acc" + n_(i) + " = vec4<f32>(0.0);\n";
  b += "  for (var k0 = 0u; k0 < K(); k0 = k0 + TK) {\n"
       "    for (var g = lid; g < TM * TK; g = g + NT) {\n"
       "      let m = m0 + g / TK;\n"
       "      let k = k0 + g % TK;\n"
       "      As[g / TK][g % TK] = load_a(m * K() + k, m < M() && k < K());\n"
       "    }\n"
       "    for (var g = lid; g < WORDS; g = g + NT) {\n"
       "      let nl = g / (TK / VALS);\n"
       "      let wl = g % (TK / VALS);\n"
       "      let n = n0 + nl;\n"
       "      let w = k0 / VALS + wl;\n"
       "      let inside = n < N() && w < RW();\n"
       "      let word = select(0u, b_word(select(0u, n * RW() + w, inside)), inside);\n"
       "      let s = select(vec2<f32>(0.0), dequant(min(n, N() - 1u), min(w, RW() - 1u) / BW), inside);\n"
       "      for (var e = 0u; e < VALS; e = e + 1u) {\n"
       "        Bs[wl * VALS + e][nl / 4u][nl % 4u] = fma(f32((word >> (e * BITS)) & MASK), s.x, s.y);\n"
       "      }\n"
       "    }\n"
       "    workgroupBarrier();\n"
       "    for (var kk = 0u; kk < TK; kk = kk + 1u) {\n"
       "      let bv = Bs[kk][tx];\n";
  for (uint32_t i = 0; i < RM; ++i)
    b += "      acc" + n_(i) + " = fma(vec4<f32>(As[ty * RM + " + u32_lit(i) + "][kk]), bv, acc" + n_(i) + ");\n";
  b += "    }\n"
       "    workgroupBarrier();\n"
       "  }\n";
  for (uint32_t i = 0; i < RM; ++i) {
    b += "  if (m0 + ty * RM + " + u32_lit(i) + " < M()) {\n    let m = m0 + ty * RM + " + u32_lit(i) + ";\n";
    for (uint32_t c = 0; c < 4; ++c)
      b += "    if (n0 + tx * 4u + " + u32_lit(c) + " < N()) { let n = n0 + tx * 4u + " + u32_lit(c) +
           "; y_store(m * N() + n, result(n, acc" + n_(i) + "[" + n_(c) + "])); }\n";
    b += "  }\n";
  }
  p.body(b);
  ctx.dispatch(p, binds, uint32_t(gx), uint32_t(gy));
}

void matmul_nbits(GpuKernelContext& ctx) {
  const P q = ops::matmul_nbits_params(ctx.node, ctx.operands(), ctx.fail_fn());
  ctx.set_output(0, ctx.dtype(P::kA), q.out);
  if (q.M == 0) return;
  u32_dim(ctx, shape_numel(q.out), "the output");
  u32_dim(ctx, shape_numel(ctx.shape(P::kA)), "A");
  u32_dim(ctx, shape_numel(ctx.shape(P::kB)), "B");
  if (q.M <= kRowsMax) {
    const RowsSettings s = rows_settings();
    std::optional<RowsShape> g;
    if (!s.old) g = rows_shape(ctx.limits, q, s);
    if (g) nbits_rows(ctx, {NBitsProduct{q}}, *g);
    else nbits_rows_old(ctx, q);
  } else {
    nbits_tiled(ctx, q);
  }
  ctx.count_flops(2 * uint64_t(q.M) * uint64_t(q.N) * uint64_t(q.K));
}

// The normalization prologue of a fused MatMulNBits (runtime/fusion.h's norm group): the node's inputs
// `at`, at + 1, at + 2 (skip, scale, bias; "" when absent), checked by the normalization's own rules
// (ops/normalization.h) on a node rebuilt from the fused node's attributes ("norm": its op,
// "norm_opset", "norm.<name>": its attributes). The normalized length must be the product's K.
NormPrologue norm_prologue(GpuKernelContext& ctx, const P& q, size_t at) {
  ir::Node n;
  n.name = ctx.node.name;
  n.op_type = ctx.node.attr_string("norm", "");
  for (const auto& [name, a] : ctx.node.attrs)
    if (name.rfind("norm.", 0) == 0) n.attrs[name.substr(5)] = a;
  NormPrologue r;
  r.at = at;
  int64_t len = 0;
  if (n.op_type == "SkipSimplifiedLayerNormalization") {
    n.domain = ir::kMsDomain;
    const ops::SkipNormParams sp = ops::skip_norm_params(
        n, {ctx.operand(P::kA), ctx.operand(at), ctx.operand(at + 1), ctx.operand(at + 2)}, ctx.fail_fn());
    r.skip = true;
    r.bias = sp.bias >= 0;
    r.skip_numel = sp.skip_numel;
    r.epsilon = sp.epsilon;
    len = sp.hidden;
  } else if (n.op_type == "SimplifiedLayerNormalization" || n.op_type == "RMSNormalization") {
    const ops::RmsNormParams rp =
        ops::rms_norm_params(n, ctx.node.attr_int("norm_opset", 0), ctx.operand(P::kA), ctx.operand(at + 1), ctx.fail_fn());
    if (rp.normalized.size() != 1 || !rp.flat_scale)
      ctx.unsupported("a normalization prologue over more than A's last axis or with a broadcast scale");
    r.epsilon = rp.epsilon;
    len = rp.normalized[0];
  } else {
    ctx.fail("unknown normalization prologue '" + n.op_type + "'");
  }
  if (len != q.K) ctx.fail("the normalized length " + std::to_string(len) + " is not the product's K " + std::to_string(q.K));
  r.sum = ctx.output_wanted(1);
  if (r.sum && !r.skip) ctx.fail("only the Skip normalization's prologue has a second output (the residual sum)");
  return r;
}

// The fused MatMulNBits (runtime/fusion.h), computed by the rows kernel only (M <= kRowsMax, a decode
// step's product, where dispatches and round trips through memory cost most; more rows: unsupported,
// and the nodes run as unfused, a prompt's products through the tiled kernel). Inputs: A, then each
// product's B, scales, zero points and bias ("" when absent): 1 + 4k .. 4 + 4k for product k; then,
// with the attribute "norm", the normalization prologue's three (norm_prologue). Two products (the
// pair) when the node carries an expression of their results (p: the first's, p1: the second's,
// SwiGLU's silu(gate) * up), one value stored per output element; one product (with a prologue)
// otherwise. Output 1: the Skip normalization's residual sum, when wanted.
void fused_matmul_nbits(GpuKernelContext& ctx) {
  const size_t np = ctx.node.fused ? 2 : 1;
  const bool norm = ctx.node.has_attr("norm");
  if (np == 1 && !norm) ctx.fail("a fused MatMulNBits needs a pair's expression or a normalization prologue");
  // Each product as the MatMulNBits node it stands for (its attributes and one output), for the rules
  // it shares with the CPU; errors name the fused node.
  ir::Node product = ctx.node;
  product.outputs.resize(1);
  product.fused.reset();
  std::vector<NBitsProduct> ps;
  for (size_t k = 0; k < np; ++k) {
    NBitsProduct pr;
    pr.b = 1 + 4 * k;
    pr.scales = pr.b + 1;
    pr.zp = pr.b + 2;
    pr.bias = pr.b + 3;
    pr.sfx = k ? std::to_string(k) : "";
    // The product's operands in MatMulNBits' order (no g_idx).
    std::vector<ops::Operand> in{ctx.operand(P::kA), ctx.operand(pr.b), ctx.operand(pr.scales), ctx.operand(pr.zp),
                                 ops::Operand{}, ctx.operand(pr.bias)};
    pr.q = ops::matmul_nbits_params(product, in, ctx.fail_fn());
    ps.push_back(std::move(pr));
  }
  const P& q = ps[0].q;
  std::optional<NormPrologue> prologue;
  if (norm) prologue = norm_prologue(ctx, q, 1 + 4 * np);
  std::string epilogue;
  if (np == 2) {
    const P& q1 = ps[1].q;
    if (q1.K != q.K || q1.N != q.N || q1.bits != q.bits || q1.block_size != q.block_size)
      ctx.fail("the fused products differ in K, N, bits or block size");
    FusedSteps steps(ctx, 2);
    if (steps.empty()) ctx.fail("the fused pair of products needs the expression that combines them");
    if (steps.num_inputs() != 0) ctx.fail("the fused pair's expression reads an input");
    std::string decls;
    const std::string body = steps.wgsl(decls);
    epilogue = decls + "fn epilogue(p: f32, p1: f32) -> f32 {\n" + body + "  return " + steps.result() + ";\n}\n";
  }
  if (ctx.dtype(P::kA) != DType::Float32)  // (the pair's expression and the prologue are float32)
    ctx.unsupported("A of " + std::string(dtype_name(ctx.dtype(P::kA))) + ": the fused MatMulNBits computes float32 only");
  ctx.set_output(0, DType::Float32, q.out);
  if (prologue && prologue->sum) ctx.set_output(1, DType::Float32, ctx.shape(P::kA));
  if (q.M == 0) return;
  if (q.M > kRowsMax) ctx.unsupported("a fused MatMulNBits of more than " + std::to_string(kRowsMax) + " rows");
  u32_dim(ctx, shape_numel(q.out), "the output");
  u32_dim(ctx, shape_numel(ctx.shape(P::kA)), "A");
  for (const NBitsProduct& pr : ps) u32_dim(ctx, shape_numel(ctx.shape(pr.b)), "B");
  const RowsSettings s = rows_settings();
  std::optional<RowsShape> g;
  if (!s.old) g = rows_shape(ctx.limits, q, s, uint32_t(np), prologue ? row_stats_bytes(kRowsMax, false) : 0);
  if (!g) ctx.unsupported("a fused MatMulNBits without the rows kernel");
  nbits_rows(ctx, ps, *g, epilogue, prologue ? &*prologue : nullptr);
  ctx.count_flops(2 * uint64_t(np) * uint64_t(q.M) * uint64_t(q.N) * uint64_t(q.K));
}

void gather_block_quantized(GpuKernelContext& ctx) {
  using G = ops::GatherBlockQuantizedParams;
  const G q = ops::gather_block_quantized_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const DType t = ctx.dtype(G::kScales);
  ctx.set_output(0, t, q.out);
  const uint64_t total = uint64_t(shape_numel(q.out));
  if (total == 0) return;
  u32_dim(ctx, int64_t(total), "the output");
  u32_dim(ctx, shape_numel(ctx.shape(G::kData)), "data");
  auto flat = [&](size_t i) { return Shape{shape_numel(ctx.shape(i))}; };
  auto p = ctx.program(std::string("gather_b") + std::to_string(q.bits) + (q.zero_points ? "_zp" : ""));
  p.input("data", DType::UInt8, flat(G::kData));
  p.input("ind", ctx.dtype(G::kIndices), flat(G::kIndices));
  p.input("scales", t, flat(G::kScales));
  std::vector<ValueRef> binds{ctx.in(G::kData), ctx.in(G::kIndices), ctx.in(G::kScales)};
  if (q.zero_points) {
    p.input("zp", DType::UInt8, flat(G::kZeroPoints));
    binds.push_back(ctx.in(G::kZeroPoints));
  }
  p.output("y", t, Shape{int64_t(total)});
  binds.push_back(ctx.out(0));
  p.uniform("rows", u32_dim(ctx, q.rows, "the data's rows"));
  p.uniform("row_values", u32_dim(ctx, q.row_values, "a row"));
  p.uniform("last", uint32_t(q.last_values));
  p.uniform("blocks", uint32_t(q.blocks));
  p.uniform("block_size", uint32_t(q.block_size));
  p.uniform("zp_bytes", uint32_t(q.zp_bytes));
  p.declare("const BITS: u32 = " + u32_lit(uint64_t(q.bits)) + ";\nconst VPB: u32 = " + u32_lit(uint64_t(8 / q.bits)) +
            ";\nconst MASK: u32 = " + u32_lit((1u << q.bits) - 1) + ";\n");
  p.set_threads(total);
  std::string b =
      "  let j = gi / row_values();\n"
      "  let e = gi % row_values();\n"
      "  let k = to_i64_$ind(ind_load(j));\n"
      "  let r = w64_wrap_index(k, rows());\n"
      "  if (r == INDEX_NONE) { flag_index(k); return; }\n"
      "  let g = r * (row_values() / last()) + e / last();\n"  // the quantize-axis run the value is in
      "  let v = e % last();\n"
      "  let qv = (data_load(g * (last() / VPB) + v / VPB) >> ((v % VPB) * BITS)) & MASK;\n"
      "  let blk = v / block_size();\n";
  b += q.zero_points ? "  let z = (zp_load(g * zp_bytes() + blk * BITS / 8u) >> ((blk * BITS) % 8u)) & MASK;\n"
                     : "  let z = " + u32_lit(uint64_t(q.default_zero_point())) + ";\n";
  b += "  y_store(gi, f32(i32(qv) - i32(z)) * scales_load(g * blocks() + blk));\n";
  p.body(b);
  ctx.dispatch(p, binds);
}

}  // namespace

void register_block_quant(GpuKernelRegistry& r) {
  r.add("MatMulNBits", matmul_nbits, ir::kMsDomain);
  r.add("GatherBlockQuantized", gather_block_quantized, ir::kMsDomain);
  r.add_fused("MatMulNBits", fused_matmul_nbits);
}

}  // namespace onnxgpu::webgpu
