// ONNX Runtime's QOperator contrib ops (com.microsoft): QLinearAdd, QLinearMul, QLinearSigmoid,
// QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QGemm, as
// src/ops/qlinear.h defines them.
#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/broadcast.h"
#include "ops/pool.h"
#include "ops/qlinear.h"

namespace onnxgpu::cpu {
namespace {

float scale_of(const KernelContext& ctx, size_t i) { return float(ctx.input(i).double_at(0)); }
int32_t zero_of(const KernelContext& ctx, size_t i) { return ctx.has_input(i) ? int32_t(ctx.input(i).int_at(0)) : 0; }

std::vector<Tensor> qlinear_binary(KernelContext& ctx, bool mul) {
  const DType t = ops::check_qlinear_binary(ctx.operands(), ctx.fail_fn());
  const Tensor &A = ctx.input(0), &B = ctx.input(3);
  Shape out;
  try {
    out = ops::broadcast_shapes(A.shape(), B.shape());
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  const std::vector<int64_t> ia = ops::broadcast_index_map(A.shape(), out), ib = ops::broadcast_index_map(B.shape(), out);
  const float as = scale_of(ctx, 1), bs = scale_of(ctx, 4), inv_c = 1.0f / scale_of(ctx, 6);
  const int32_t az = zero_of(ctx, 2), bz = zero_of(ctx, 5), cz = zero_of(ctx, 7);
  std::vector<double> y(ia.size());
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = ops::requantize(ops::qlinear_binary_value(mul, as, int32_t(A.int_at(ia[i])), az, bs, int32_t(B.int_at(ib[i])), bz, inv_c),
                           cz, t);
  return {nn::tensor_from_doubles(t, out, y)};
}

// The entry of a quantized value's byte in a table (ops::QLinearTable): int8 values as two's complement.
size_t byte_of(int64_t v) { return size_t(v & 0xff); }

std::vector<Tensor> qlinear_unary(KernelContext& ctx) {
  ops::check_qlinear_unary(ctx.operands(), ctx.fail_fn());
  const Tensor& X = ctx.input(0);
  const ops::QLinearTable table = ops::qlinear_table(X.dtype(), scale_of(ctx, 1), zero_of(ctx, 2), scale_of(ctx, 3),
                                                     zero_of(ctx, 4), X.dtype(), ops::qlinear_unary_function(ctx.node));
  std::vector<double> y(size_t(X.numel()));
  for (size_t i = 0; i < y.size(); ++i) y[i] = table[byte_of(X.int_at(int64_t(i)))];
  return {nn::tensor_from_doubles(X.dtype(), X.shape(), y)};
}

std::vector<Tensor> qlinear_global_average_pool(KernelContext& ctx) {
  const ops::QLinearPoolGeometry g = ops::qlinear_global_pool_geometry(ctx.node, ctx.operands(), ctx.fail_fn());
  const Tensor& X = ctx.input(0);
  const int32_t xz = zero_of(ctx, 2), yz = zero_of(ctx, 4);
  const float f = ops::qlinear_pool_factor(scale_of(ctx, 1), scale_of(ctx, 3), g.spatial);
  std::vector<double> y(size_t(g.batch * g.channels));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t c = 0; c < g.channels; ++c) {
      int64_t acc = -int64_t(xz) * g.spatial;
      for (int64_t s = 0; s < g.spatial; ++s)
        acc += X.int_at(g.channels_last ? (n * g.spatial + s) * g.channels + c : (n * g.channels + c) * g.spatial + s);
      y[size_t(n * g.channels + c)] = ops::requantize(float(acc) * f, yz, X.dtype());
    }
  return {nn::tensor_from_doubles(X.dtype(), g.out, y)};
}

// QLinearAveragePool: AveragePool's windows (ops::pool_params) over the dequantized values, summed in
// float32 in the window's order, divided by the count, then by y_scale, and requantized.
std::vector<Tensor> qlinear_average_pool(KernelContext& ctx) {
  ops::check_qlinear_average_pool(ctx.node, ctx.operands(), ctx.fail_fn());
  const Tensor& X = ctx.input(0);
  const ops::PoolParams pp = ops::pool_params(ctx.node, X.shape(), false, ctx.fail_fn());
  const float xs = scale_of(ctx, 1), ys = scale_of(ctx, 3);
  const int32_t xz = zero_of(ctx, 2), yz = zero_of(ctx, 4);
  const Shape in_sp(X.shape().begin() + 2, X.shape().end());
  const int64_t NC = X.dim(0) * X.dim(1), in_sz = shape_numel(in_sp), out_sz = shape_numel(pp.win.out);
  std::vector<double> y(size_t(shape_numel(pp.out)));
  std::vector<std::pair<int64_t, int64_t>> taps;
  std::vector<int64_t> o(in_sp.size(), 0);
  for (int64_t op = 0; op < out_sz; ++op, nn::next_index(o, pp.win.out)) {
    nn::window_taps(pp.win, o, taps);
    const int64_t divisor = pp.include_pad ? nn::window_padded_count(pp.win, o) : int64_t(taps.size());
    for (int64_t nc = 0; nc < NC; ++nc) {
      float acc = 0.0f;
      for (const auto& t : taps) acc += xs * float(int32_t(X.int_at(nc * in_sz + t.second)) - xz);
      y[size_t(nc * out_sz + op)] = ops::requantize(divisor > 0 ? acc / float(divisor) / ys : 0.0f, yz, X.dtype());
    }
  }
  return {nn::tensor_from_doubles(X.dtype(), pp.out, y)};
}

// QGemm: exact integer sums plus C, times each column's factor in float32 (ops::qgemm_params).
std::vector<Tensor> qgemm(KernelContext& ctx) {
  const ops::QGemmParams p = ops::qgemm_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const Tensor &A = ctx.input(0), &B = ctx.input(3);
  const Tensor& bs = ctx.input(4);
  const float as = scale_of(ctx, 1);
  const int32_t az = zero_of(ctx, 2);
  const Shape out{p.M, p.N};
  std::vector<int64_t> cmap;
  if (ctx.has_input(6)) cmap = ops::broadcast_index_map(ctx.input(6).shape(), out);
  const float ys = p.quantized ? scale_of(ctx, 7) : 1.0f;
  const int32_t yz = p.quantized ? zero_of(ctx, 8) : 0;
  std::vector<double> y(size_t(p.M * p.N));
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t n = 0; n < p.N; ++n) {
      const int32_t bz = ctx.has_input(5) ? int32_t(ctx.input(5).int_at(ctx.input(5).numel() == 1 ? 0 : n)) : 0;
      int64_t acc = 0;
      for (int64_t k = 0; k < p.K; ++k)
        acc += (A.int_at(p.trans_a ? k * p.M + m : m * p.K + k) - az) * (B.int_at(p.trans_b ? n * p.K + k : k * p.N + n) - bz);
      if (!cmap.empty()) acc += ctx.input(6).int_at(cmap[size_t(m * p.N + n)]);
      const float f = ops::qgemm_factor(p.alpha, as, float(bs.double_at(bs.numel() == 1 ? 0 : n)));
      y[size_t(m * p.N + n)] = p.quantized ? ops::requantize(float(int32_t(acc)) * (f / ys), yz, p.out) : double(float(int32_t(acc)) * f);
    }
  return {nn::tensor_from_doubles(p.out, out, y)};
}

std::vector<Tensor> qlinear_concat(KernelContext& ctx) {
  int64_t axis = 0;
  Shape out;
  const DType t = ops::check_qlinear_concat(ctx.node, ctx.operands(), axis, out, ctx.fail_fn());
  const float ys = scale_of(ctx, 0);
  const int32_t yz = zero_of(ctx, 1);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < out.size(); ++d) inner *= out[d];
  std::vector<double> y(size_t(shape_numel(out)));
  int64_t offset = 0;  // along the axis
  for (size_t k = 2; k < ctx.num_inputs(); k += 3) {
    const Tensor& X = ctx.input(k);
    const ops::QLinearTable table =
        ops::qlinear_table(t, scale_of(ctx, k + 1), zero_of(ctx, k + 2), ys, yz, t, [](float v) { return v; });
    const int64_t len = X.dim(size_t(axis));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < len * inner; ++j)
        y[size_t((o * out[size_t(axis)] + offset) * inner + j)] = table[byte_of(X.int_at(o * len * inner + j))];
    offset += len;
  }
  return {nn::tensor_from_doubles(t, out, y)};
}

// QLinearSoftmax (ops::QLinearSoftmaxParams): each row's maximum, its sum of table entries in float32 in the
// row's order, then each value requantized.
std::vector<Tensor> qlinear_softmax(KernelContext& ctx) {
  const ops::QLinearSoftmaxParams p =
      ops::qlinear_softmax_params(ctx.node, ctx.operands(), scale_of(ctx, 1), scale_of(ctx, 3), zero_of(ctx, 4), ctx.fail_fn());
  const Tensor& X = ctx.input(0);
  std::vector<double> y(size_t(X.numel()));
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t in = 0; in < p.inner; ++in) {
      auto at = [&](int64_t d) { return (o * p.D + d) * p.inner + in; };
      int64_t top = X.int_at(at(0));
      for (int64_t d = 1; d < p.D; ++d) top = std::max(top, X.int_at(at(d)));
      auto e = [&](int64_t d) { return p.table[size_t(255 - (top - X.int_at(at(d))))]; };
      float sum = 0.0f;
      for (int64_t d = 0; d < p.D; ++d) sum += e(d);
      for (int64_t d = 0; d < p.D; ++d) y[size_t(at(d))] = ops::requantize(e(d) * p.y_factor / sum, p.y_zero, p.type);
    }
  return {nn::tensor_from_doubles(X.dtype(), X.shape(), y)};
}

}  // namespace

void register_qlinear(KernelRegistry& r) {
  r.add("QLinearSoftmax", qlinear_softmax, ir::kMsDomain);
  r.add("QLinearAdd", [](KernelContext& ctx) { return qlinear_binary(ctx, false); }, ir::kMsDomain);
  r.add("QLinearMul", [](KernelContext& ctx) { return qlinear_binary(ctx, true); }, ir::kMsDomain);
  r.add("QLinearSigmoid", qlinear_unary, ir::kMsDomain);
  r.add("QLinearLeakyRelu", qlinear_unary, ir::kMsDomain);
  r.add("QLinearGlobalAveragePool", qlinear_global_average_pool, ir::kMsDomain);
  r.add("QLinearConcat", qlinear_concat, ir::kMsDomain);
  r.add("QLinearAveragePool", qlinear_average_pool, ir::kMsDomain);
  r.add("QGemm", qgemm, ir::kMsDomain);
}

}  // namespace onnxgpu::cpu
