// The pieces the float product kernels share: what a product is (Product), its epilogue, the operands
// a kernel declares and binds, and how a result is stored (put: through the output's strides or into
// its parts, the epilogue applied). matmul.cpp holds MatMul / Gemm, the tiled kernel and the integer
// one; gemv.cpp the kernel of products with few rows (a decode step's one-row products).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu::products {

// The product to compute: batch x [M, K] @ [K, N], with A's and B's batch dims broadcast to `batch`.
struct Product {
  uint32_t M = 1, K = 1, N = 1;
  Shape a_batch, b_batch, batch;  // batch dims of A, of B, and their broadcast
  Shape out;
  bool trans_a = false, trans_b = false;
  strided::Layout la, lb;
  strided::Layout ly;  // the output written through strides (a Transpose of the product folded in)
  Shape stored;        // the output as stored: `out`, or `out` transposed
  std::vector<uint32_t> parts;  // the output split along N into outputs this wide (a Split folded in)
};

// The epilogue: y = alpha * AB + beta * C[m, n] with C broadcast to [M, N] (Gemm's C, a fused bias),
// plus R[i], a tensor of the output's shape (a fused residual Add), i the output element.
struct Epilogue {
  bool has_c = false;
  bool has_r = false;  // input 3
  float alpha = 1.0f, beta = 1.0f;
  uint32_t c_sm = 0, c_sn = 0;  // strides of C over m and n (0 where broadcast)
  std::string act, act_decls;   // an activation after all that: WGSL statements over p, returning the value
};

// A's rows normalized as the product reads them (a LayerNormalization folded in: runtime/fusion.h's
// norm group): value k of row m is (a - mean_m) * inv_m * scale[k] (+ shift[k]), every workgroup first
// computing the rows' statistics over all of K (norm_prologue.h). `scale`, `shift`: the fused node's
// inputs (shift: none when absent). Only gemv.cpp's kernels take it, with A neither strided, transposed
// nor batched.
struct Prologue {
  size_t scale = 4, shift = 5;
  bool has_shift = false;
  float epsilon = 1e-5f;
};

// A normalization of the product's rows after the epilogue (runtime/fusion.h's post-normalization: a
// LayerNormalization or an RMS norm that reads the product's result h): each row of N values normalized,
// centered or not, scaled by input `scale` and shifted by input `shift` (one float32 row of N each, when
// present). Split-K's summing pass normalizes the rows it sums (one workgroup per row: the sum, the
// epilogue, the row's statistics, the normalized row), so the normalization takes no dispatch of its own;
// an unsplit product is followed by a row pass (row_norm.h). `keeps_sum`: h is stored too, as output 0
// (something else reads it: a pre-norm residual stream), the normalized rows as output 1.
struct PostNorm {
  bool centered = true;
  bool keeps_sum = false;
  float epsilon = 1e-5f;
  size_t scale = 6, shift = 7;
  bool has_scale = false, has_shift = false;
};

// Declares the operands a, b (and c, r), the output y (the product, or the split-K partial sums) or
// the parts y0, y1 ... (in_parts), and the uniforms M, N, K, a_mat / b_mat (the matrix of batch element
// z in A and B), the strided layouts' a_sr ... (strided_util.h), c_sm, c_sn, alpha, beta.
void declare_operands(GpuKernelContext& ctx, shader::Program& p, DType t, const Product& pr, const Epilogue& ep,
                      bool with_c, bool with_r, bool out_strided, DType out_dtype, const Shape& out_shape,
                      bool in_parts = false);

// The operands, then the output: `out`, or every output when the product is written in parts.
std::vector<ValueRef> operand_bindings(GpuKernelContext& ctx, bool with_c, bool with_r, ValueRef out,
                                       size_t parts = 0);

// put(z, m, n, v): stores element (m, n) of product z, the epilogue applied (WGSL; needs epilogue_decl).
std::string put_decl(const Product& pr);
// epilogue(v, m, n, i): alpha * v + beta * C[m, n] + R[i], then the activation (WGSL).
std::string epilogue_decl(const Epilogue& ep);

// WGSL expressions (over m, k, n and the uniforms) of the offset of A's element (m, k) and of B's
// element (k, n) from the start of their matrix: row-major, transposed, or through strides.
std::string a_offset(const Product& pr);
std::string b_offset(const Product& pr);
// The offset of A's and of B's matrix of batch element `bz` (WGSL, over bz).
std::string a_matrix(const Product& pr);
std::string b_matrix(const Product& pr);
// Whether consecutive k (rather than consecutive m / n) are adjacent in memory, for A and for B.
bool a_read_along_m(const Product& pr);
bool b_read_along_k(const Product& pr);

// Split-K's second pass: the sum of the parts (`part`: `splits` partial products of every batch
// element, [batch][splits][M][N] float32), then the epilogue, stored through put.
void sum_parts(GpuKernelContext& ctx, DType t, const Product& pr, const Epilogue& ep, ValueRef part,
               const Shape& part_shape, uint32_t splits);

// What a product program's WGSL depends on beyond its name (which tells the tile, the layouts, the
// parts, the operands' reading order, vec4 loads, C and R, the split) and its tensors and uniforms: the
// batch's ranks, the epilogue's C and R and its activation (GpuKernelContext::needs_wgsl).
std::string text_key(const Product& pr, const Epilogue& ep);

// Whether the tiled kernels (the float product's, conv.cpp's implicit GEMM) may read the A and B tiles
// with one 16-byte load per vec4 (shader::Program::vec4) where the operand's layout allows: four scalar
// loads, each bounds-checked on its own, are not merged into one wide load. Both by default;
// $ONNXGPU_MATMUL_VEC (read at each call) = "0": neither, "a" / "b": only that operand (measuring on a
// device). Conv's weight is its GEMM's A.
struct VecLoads {
  bool a = true, b = true;
};
VecLoads vec_loads();

// gemv.cpp: products of at most kGemvMaxRows rows (batch handled) as bandwidth-bound matrix-vector
// kernels. Returns false, having emitted nothing, when it does not take the product. `pro`: A's rows
// normalized first (float32 only).
inline constexpr uint32_t kGemvMaxRows = 4;
bool gemv_float(GpuKernelContext& ctx, DType t, const Product& pr, const Epilogue& ep, const Prologue* pro = nullptr);

}  // namespace onnxgpu::webgpu::products
