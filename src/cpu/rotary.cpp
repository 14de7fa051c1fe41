// RotaryEmbedding: ONNX Runtime's (com.microsoft) and ONNX's (opset 23); see ops/rotary.h. Computed in
// double.
#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/rotary.h"

namespace onnxgpu::cpu {
namespace {

std::vector<Tensor> rotary(KernelContext& ctx) {
  using Rows = ops::RotaryParams::Rows;
  const ops::RotaryParams p = ops::rotary_params(ctx.node, ctx.opset, ctx.operands(), ctx.fail_fn());
  const Tensor& X = ctx.input(0);
  const std::vector<double> x = nn::to_doubles(X), cos = nn::to_doubles(ctx.input(p.cos_input)),
                            sin = nn::to_doubles(ctx.input(p.sin_input));
  // The cache row of every token (b, s), checked against the caches (ONNX Runtime's checks).
  std::vector<int64_t> row(size_t(p.batch * p.seq));
  if (p.rows == Rows::Direct) {
    for (size_t t = 0; t < row.size(); ++t) row[t] = int64_t(t);
  } else {
    const Tensor& pos = ctx.input(p.position_input);
    const int64_t* ids = pos.data<int64_t>();
    if (p.rows == Rows::Offset && (ids[0] < 0 || ids[0] > p.cache_rows - p.seq))
      ctx.fail("position_ids " + std::to_string(ids[0]) + " with sequence length " + std::to_string(p.seq) +
               " reads beyond the caches' " + std::to_string(p.cache_rows) + " positions");
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t s = 0; s < p.seq; ++s) {
        const int64_t t = b * p.seq + s, r = p.rows == Rows::Offset ? ids[0] + s : ids[t];
        if (r < 0 || r >= p.cache_rows)
          ctx.fail("position_ids value " + std::to_string(r) + " at index " + std::to_string(t) + " is out of range [0, " +
                   std::to_string(p.cache_rows) + ")");
        row[size_t(t)] = r;
      }
  }
  const int64_t half = p.rotary_dim / 2, hs = p.head_size;
  std::vector<double> y = x;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t n = 0; n < p.heads; ++n)
      for (int64_t s = 0; s < p.seq; ++s) {
        const int64_t head = p.heads_first ? ((b * p.heads + n) * p.seq + s) * hs : ((b * p.seq + s) * p.heads + n) * hs;
        const double* c = cos.data() + row[size_t(b * p.seq + s)] * half;
        const double* sn = sin.data() + row[size_t(b * p.seq + s)] * half;
        const double* in = x.data() + head;
        double* out = y.data() + head;
        for (int64_t k = 0; k < half; ++k) {
          const int64_t i = p.interleaved ? 2 * k : k, j = p.interleaved ? 2 * k + 1 : k + half;
          out[i] = in[i] * c[k] - in[j] * sn[k];
          out[j] = in[j] * c[k] + in[i] * sn[k];
        }
      }
  return {nn::tensor_from_doubles(X.dtype(), X.shape(), y)};
}

}  // namespace

void register_rotary(KernelRegistry& r) {
  r.add("RotaryEmbedding", rotary);
  r.add("RotaryEmbedding", rotary, ir::kMsDomain);
}

}  // namespace onnxgpu::cpu
