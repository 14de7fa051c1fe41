// The library path of the CPU kernels: float32 matrix products through oneDNN (Debian's libdnnl),
// chosen over OpenBLAS by measurement (docs/cpu.md), with the intra-op thread count.
//
// MatMul, Gemm and Conv call sgemm() for float32 while enabled(); every other type (float16,
// bfloat16, float64, the integers) and the disabled path run the plain reference kernels, which
// accumulate in double (integers exactly). The unit tests run both paths and compare them.
#pragma once
#include <cstdint>

namespace onnxgpu::cpu::blas {

// Whether float32 products use the library. On by default; ONNXGPU_CPU_REFERENCE=1 in the environment
// turns it off at start (every product then runs the reference kernels), set_enabled() at any time
// (tests). Process-wide.
bool enabled();
void set_enabled(bool on);

// Intra-op threads of the library's products: n > 0 sets it, 0 restores the default (the number of
// cores, as ONNX Runtime's CPU EP does). Process-wide; SessionOptions::intra_op_num_threads sets it
// when a session is created with a value > 0.
void set_num_threads(int n);
int num_threads();

// Row-major C[M, N] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T; lda/ldb/ldc are the row
// strides of A, B and C as stored (A is [M, K], or [K, M] when trans_a). With beta == 0, C is only
// written (its old values, even NaN, are not read).
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace onnxgpu::cpu::blas
