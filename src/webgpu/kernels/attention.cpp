// The fused attention (runtime/fusion.h): O = Softmax(e(Q K)) V in one kernel, for
// Q [.., Lq, D], K [.., D, Lk] (the score product's B operand, usually keys transposed), V [.., Lk, Dv],
// each read through strides (a Transpose folded in) and broadcast over the batch dims like MatMul's.
// e (optional) is the node's elementwise expression between the score product and the Softmax
// (scale, mask), read through FusedSteps (fused_steps.h): the score is its product p, and its
// inputs, broadcast to the scores' shape, are the node's inputs after Q, K and V. Attribute
// nan_rows_zero: the probabilities went through Where(IsNaN(p), 0, p), so a NaN row gives zeros.
//
// Each workgroup computes RQ query rows x DV output columns of one batch element. It walks the keys in
// blocks of BK: the scores of the block (Q and K staged in workgroup memory, DC of D at a time), the
// expression, then an online softmax (a running row maximum; what was summed before is rescaled when
// it grows) and the block's share of P V; the next stage's Q, K, V and mask values are loaded into
// registers while the current one computes. The softmax follows the Softmax kernel's rules: the maximum
// ignores NaN, a row whose maximum is infinite is not shifted (IEEE decides), NaN propagates.
// The scores never reach memory, and four dispatches (product, expression, Softmax, product) become one.
#include "ops/broadcast.h"
#include "webgpu/kernels/attention_core.h"
#include "webgpu/kernels/fused_steps.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/matmul.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {

namespace {

using strided::Layout;

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

void fused_attention(GpuKernelContext& ctx) {
  FusedSteps steps(ctx);
  Shapes s = check_shapes(ctx, steps);
  ctx.set_output(0, DType::Float32, s.stored);
  if (shape_numel(s.out) == 0) return;
  if (s.Lk == 0) ctx.unsupported("no keys");  // (the nodes alone: a product over an empty axis)
  steps.check_input_types(false);
  Layouts l = layouts_of(ctx, s, steps);

  attention::Spec spec;
  spec.name = "attention";
  auto matrix = [&](ValueRef ref, const Shape& shape, const Layout& layout) {
    return attention::Matrix{{ref, DType::Float32, uint64_t(shape_numel(shape))}, layout};
  };
  spec.q = matrix(ctx.in(0), ctx.shape(0), l.q);
  spec.k = matrix(ctx.in(1), ctx.shape(1), l.k);
  spec.v = matrix(ctx.in(2), ctx.shape(2), l.v);
  spec.y = matrix(ctx.out(0), s.stored, l.y);
  spec.batch = s.batch;
  spec.Lq = s.Lq;
  spec.D = s.D;
  spec.Lk = s.Lk;
  spec.Dv = s.Dv;
  // A decode step's few rows over many keys split them over workgroups. At most as many rows as the
  // one-row products take (matmul.h): a prompt past that is one plan family with every longer one.
  spec.split = uint64_t(s.Lq) <= products::kGemvMaxRows;
  spec.nan_rows_zero = ctx.node.attr_int("nan_rows_zero", 0) != 0;  // the fusion's NaN guard
  // The score: the expression over the product p and its inputs (constant scalars as literals).
  for (size_t x = 0; x < steps.num_inputs(); ++x) {
    std::string n = FusedSteps::input_name(x);
    if (!steps.literal(x).empty()) {
      spec.score += "  let " + n + " = " + steps.literal(x) + ";\n";
      continue;
    }
    const GpuValueInfo& in = steps.input(x);
    spec.inputs.push_back({n, {ctx.in(steps.node_input(x)), in.dtype, uint64_t(shape_numel(in.shape))}, l.x[x],
                           in.dtype == DType::Bool ? "u32" : "f32", "Lk()"});
  }
  if (!steps.empty()) spec.score += steps.wgsl(spec.decls) + "  return " + steps.result() + ";\n";
  attention::emit(ctx, spec);
}

}  // namespace

void register_attention(GpuKernelRegistry& r) { r.add_fused("Attention", fused_attention); }

}  // namespace onnxgpu::webgpu
