// The row statistics of a normalization prologue (runtime/fusion.h's norm groups): a product's kernel
// that normalizes A's rows as it reads them (block_quant.cpp's MatMulNBits rows kernel, gemv.cpp's
// one-row float products) first has every workgroup compute each row's statistics over all of K in
// float32, as the normalization kernels compute them (normalization.cpp's row_body):
//   centered (LayerNormalization): the sums of d = v - s and d^2, s the row's first value (when finite),
//            mean = s + sum(d) / K, inv = 1 / sqrt(max(sum(d^2) / K - (sum(d) / K)^2, 0) + eps);
//   not (SimplifiedLayerNormalization, RMSNormalization, the Skip form): mean = 0,
//            inv = 1 / sqrt(sum(v^2) / K + eps).
// One rule for both kernels: the WGSL comes from here.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace onnxgpu::webgpu {

struct RowStatsWgsl {
  std::string decl;  // workgroup memory and constants (names start with NS_ / ns_)
  std::string body;  // statements: afterwards ns_mean[m] and ns_inv[m] hold row m's statistics (for
                     // every invocation: the body ends with a barrier)
};

// `rows`: the rows of A (MR, unrolled in the text); `wg`: the workgroup's invocations (WG); the kernel
// declares `fn nv(m: u32, k: u32) -> f32` (value k of row m before it is normalized), the uniforms K()
// and eps(), and `scratch`, a workgroup array of at least WG f32 that is free until the body has run.
// `per_value(m, v)`: a statement run for every value v of row m as it is read (the Skip form's residual
// sum stored by one workgroup), or null. Every invocation must run the body, in uniform control flow.
RowStatsWgsl row_stats_wgsl(uint32_t rows, uint32_t wg, bool centered, const std::string& scratch,
                            const std::function<std::string(uint32_t, const std::string&)>& per_value = nullptr);

// The workgroup memory row_stats_wgsl's declarations take for `rows` rows (at most).
uint32_t row_stats_bytes(uint32_t rows, bool centered);

}  // namespace onnxgpu::webgpu
