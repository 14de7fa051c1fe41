// The attention kernel every attention on the GPU runs: O = softmax(score(Q K)) V, one kernel with an
// online softmax (the scores never reach memory). The fused attention of plain ops (attention.cpp)
// and the attention ops (GroupQueryAttention, MultiHeadAttention, ONNX Attention: attention_ops.cpp)
// describe their operands, their score and which keys each query row sees; this core stages,
// prefetches and reduces.
//
// Per batch element z of `batch`: Q [Lq, D], K read as [D, Lk] (the score product's B operand), V
// [Lk, Dv], Y [Lq, Dv], each read (written) through strides (strided::Layout). The score of row i and
// key j is the caller's WGSL over the product p (and its score inputs' values at (z, i, j)); a row
// sees the keys its key_range gives (all by default). Each workgroup computes RQ rows x 64 output
// columns of one z, walking the keys in blocks of BK: the block's scores (Q and K staged in
// workgroup memory, DC of D at a time), the score, then an online softmax (a running row maximum;
// what was summed before is rescaled when it grows) and the block's share of P V; the next stage's
// loads go to registers while the current one computes. The softmax follows the Softmax kernel's
// rules: the maximum ignores NaN, a row whose maximum is infinite is not shifted (IEEE decides), NaN
// propagates.
//
// A few rows over many keys (a decode step) split the keys into chunks, one workgroup each (more
// workgroups in flight), whose partial maxima, sums and outputs a second dispatch combines. A split
// runs its own kernel (program `..._decode`) where it fits: every invocation busy whatever the rows
// (a key's dot products over D split among a few lanes, P V over output columns and key slices), the
// chunk's K and V loaded a pass ahead straight into registers; its combine (`..._merge`) weighs the
// chunks once per row in workgroup memory. $ONNXGPU_ATTENTION_DECODE=0 runs the general tile instead.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu::attention {

// A tensor the core binds: which value, its dtype and element count (declared flat).
struct Binding {
  ValueRef ref;
  DType dtype;
  uint64_t numel;
};

// One of Q, K, V, Y: the tensor and its layout over `batch` and the matrix axes.
struct Matrix {
  Binding t;
  strided::Layout layout;
};

// A tensor the score reads per (z, i, j) (a mask, a bias), broadcast to the scores: its value
// `name` (of WGSL type `type`: "f32", or "u32" for a bool) is loaded a key block ahead and passed to
// the score function.
struct ScoreInput {
  std::string name;
  Binding t;
  strided::Layout layout;  // over batch + [Lq, Lk]
  std::string type;        // "f32", "i32" (an int32), or "u32" (a bool)
  std::string keys = "Lk()";  // the keys it covers (WGSL): read only for keys below
};

struct Spec {
  std::string name;  // the program's name
  Matrix q, k, v, y;
  Shape batch;
  int64_t Lq = 0, D = 0, Lk = 0, Dv = 0;
  std::vector<ScoreInput> inputs;
  // Tensors the score or key_range read themselves (e.g. sequence lengths), declared after Q, K, V.
  struct Extra {
    std::string name;
    Binding t;
  };
  std::vector<Extra> extras;
  std::vector<std::pair<std::string, uint32_t>> uniforms;  // more uniforms the WGSL reads
  std::vector<std::pair<std::string, float>> uniforms_f32;
  // Module-scope WGSL: helpers the score needs and, with key_range (and sink, below), the functions
  //   fn key_range(z: u32, i: u32) -> vec2<u32>            row i's keys [lo, hi)
  //   fn block_keys(z: u32, i0: u32, i1: u32) -> vec2<u32>  the union of rows i0..i1's keys
  // (z is the batch element; i1 >= i0 are valid rows).
  std::string decls;
  // The body of fn score(p: f32, z: u32, i: u32, j: u32, <inputs' values>) -> f32: statements, then
  // `return <score>;` (empty: `return p;`).
  std::string score;
  bool key_range = false;
  bool empty_rows_zero = false;  // a row that sees no key outputs 0 (else 0 / 0: NaN, as Softmax gives)
  bool nan_rows_zero = false;    // so does a row whose softmax is NaN (Where(IsNaN(p), 0, p) after it)
  bool split = false;            // may split the keys into chunks when the rows are few
  // An extra logit in each row's softmax sum, of value 0 (smooth softmax, a head's sink): decls define
  // fn sink_of(z: u32, i: u32) -> f32, row i's logit.
  bool sink = false;
};

// Checks the device's limits, chooses the tile (and the split) and emits the dispatches.
void emit(GpuKernelContext& ctx, const Spec& spec);

}  // namespace onnxgpu::webgpu::attention
