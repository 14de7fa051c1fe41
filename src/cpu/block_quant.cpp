// MatMulNBits and GatherBlockQuantized (com.microsoft): block-quantized weights, see ops/block_quant.h.
// Each value dequantizes in float32 as ONNX Runtime's CPU EP does, (q - zero_point) * scale. MatMulNBits
// then multiplies A by the dequantized weights: through the library (src/cpu/blas.h, float32
// accumulation) while it is enabled, else accumulating in double.
#include <algorithm>
#include <vector>

#include "cpu/blas.h"
#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/block_quant.h"

namespace onnxgpu::cpu {
namespace {

// Value j of a run of `bits`-bit values packed low bits first from `bytes`.
inline int32_t packed_value(const uint8_t* bytes, int64_t j, int64_t bits) {
  const int64_t per = 8 / bits;
  return int32_t((bytes[j / per] >> ((j % per) * bits)) & ((1 << bits) - 1));
}

std::vector<float> to_floats(const Tensor& t) {
  std::vector<float> r(size_t(t.numel()));
  visit_dtype(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>(p[i]);
  }, kFloatTypes);
  return r;
}

std::vector<Tensor> matmul_nbits(KernelContext& ctx) {
  using P = ops::MatMulNBitsParams;
  const P p = ops::matmul_nbits_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const uint8_t* blob = ctx.input(P::kB).data<uint8_t>();
  const std::vector<float> scales = to_floats(ctx.input(P::kScales));
  std::vector<float> zp_float;
  const uint8_t* zp_packed = nullptr;
  if (p.zero_points == P::ZeroPoints::Float) zp_float = to_floats(ctx.input(P::kZeroPoints));
  if (p.zero_points == P::ZeroPoints::Packed) zp_packed = ctx.input(P::kZeroPoints).data<uint8_t>();

  // The dequantized weights W [N, K] (the padding of the last block dropped).
  const int64_t K = p.K, N = p.N, M = p.M;
  std::vector<float> w(size_t(N * K));
  for (int64_t n = 0; n < N; ++n) {
    const uint8_t* row = blob + n * p.k_blocks * p.blob_size;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t b = k / p.block_size, s = n * p.k_blocks + b;
      const int32_t q = packed_value(row, k, p.bits);
      float v;
      if (p.zero_points == P::ZeroPoints::Float) {
        v = (float(q) - zp_float[size_t(s)]) * scales[size_t(s)];
      } else {
        const int32_t zp = zp_packed ? packed_value(zp_packed + n * p.zp_row_bytes, b, p.bits) : int32_t(p.default_zero_point());
        v = float(q - zp) * scales[size_t(s)];
      }
      w[size_t(n * K + k)] = v;
    }
  }
  const std::vector<float> a = to_floats(ctx.input(P::kA));
  std::vector<float> bias;
  if (p.bias) bias = to_floats(ctx.input(P::kBias));
  std::vector<double> y(size_t(M * N));
  if (blas::enabled() && M > 0) {
    std::vector<float> yf(size_t(M * N));
    blas::sgemm(false, true, M, N, K, 1.0f, a.data(), K, w.data(), K, 0.0f, yf.data(), N);
    for (size_t i = 0; i < y.size(); ++i) y[i] = yf[i];
  } else {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += double(a[size_t(m * K + k)]) * double(w[size_t(n * K + k)]);
        y[size_t(m * N + n)] = acc;
      }
  }
  if (p.bias)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) y[size_t(m * N + n)] += bias[size_t(n)];
  return {nn::tensor_from_doubles(ctx.input(P::kA).dtype(), p.out, y)};
}

std::vector<Tensor> gather_block_quantized(KernelContext& ctx) {
  using P = ops::GatherBlockQuantizedParams;
  const P p = ops::gather_block_quantized_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const Tensor& indices = ctx.input(P::kIndices);
  const uint8_t* data = ctx.input(P::kData).data<uint8_t>();
  const uint8_t* zp = p.zero_points ? ctx.input(P::kZeroPoints).data<uint8_t>() : nullptr;
  const std::vector<float> scales = to_floats(ctx.input(P::kScales));
  const int64_t runs = p.row_values / std::max<int64_t>(p.last_values, 1);  // quantize-axis runs per row
  std::vector<double> y(size_t(p.indices * p.row_values));
  for (int64_t j = 0; j < p.indices; ++j) {
    int64_t r = indices.int_at(j);
    if (r < -p.rows || r >= p.rows)
      ctx.fail("indices element " + std::to_string(r) + " at index " + std::to_string(j) +
               " is out of range: data has " + std::to_string(p.rows) + " rows (valid: [" + std::to_string(-p.rows) +
               ", " + std::to_string(p.rows - 1) + "])");
    if (r < 0) r += p.rows;
    for (int64_t run = 0; run < runs; ++run) {
      const int64_t g = r * runs + run;  // the run's index among all runs of data
      const uint8_t* q = data + g * p.last_values / p.values_per_byte();
      for (int64_t v = 0; v < p.last_values; ++v) {
        const int64_t b = v / p.block_size;
        const int32_t z = zp ? packed_value(zp + g * p.zp_bytes, b, p.bits) : int32_t(p.default_zero_point());
        y[size_t((j * runs + run) * p.last_values + v)] =
            float(packed_value(q, v, p.bits) - z) * scales[size_t(g * p.blocks + b)];
      }
    }
  }
  return {nn::tensor_from_doubles(ctx.input(P::kScales).dtype(), p.out, y)};
}

}  // namespace

void register_block_quant(KernelRegistry& r) {
  r.add("MatMulNBits", matmul_nbits, ir::kMsDomain);
  r.add("GatherBlockQuantized", gather_block_quantized, ir::kMsDomain);
}

}  // namespace onnxgpu::cpu
