// oneDNN's sgemm with the intra-op thread count. oneDNN (Debian's build) threads with OpenMP: the
// count is the calling thread's OpenMP setting, so each call sets it from num_threads() first.
#include "cpu/blas.h"

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "onnxgpu/error.h"

namespace onnxgpu::cpu::blas {
namespace {

bool enabled_from_env() {
  const char* v = std::getenv("ONNXGPU_CPU_REFERENCE");
  return !(v && std::string(v) != "0" && std::string(v) != "");
}

std::atomic<bool> g_enabled{enabled_from_env()};
std::atomic<int> g_threads{0};  // 0: the default

// Read once: hardware_concurrency() reads sysfs on every call.
int default_threads() {
  static const int n = [] {
    unsigned c = std::thread::hardware_concurrency();
    return c == 0 ? 1 : int(c);
  }();
  return n;
}

}  // namespace

bool enabled() { return g_enabled.load(std::memory_order_relaxed); }
void set_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

void set_num_threads(int n) { g_threads.store(std::max(0, n), std::memory_order_relaxed); }
int num_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : default_threads();
}

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // an empty sum: C = beta * C (beta 0: zeros, whatever C held)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) C[m * ldc + n] = beta == 0.0f ? 0.0f : beta * C[m * ldc + n];
    return;
  }
  // Threads only for products worth them: one thread per kMacsPerThread multiply-adds (about 10 us of
  // one core's work), up to num_threads(). A product of the width-96 GPT-2 (16x96x384) runs on one
  // thread: waking a second costs more than it saves, and much more on a loaded machine, where the
  // product waits at OpenMP's barrier for a descheduled worker.
  constexpr int64_t kMacsPerThread = int64_t(1) << 21;
  const int64_t macs = M * N * K;
  const int threads = int(std::clamp<int64_t>(macs / kMacsPerThread, 1, num_threads()));
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success)
    throw Error("oneDNN sgemm failed (status " + std::to_string(int(st)) + ") for M=" + std::to_string(M) +
                " N=" + std::to_string(N) + " K=" + std::to_string(K));
}

}  // namespace onnxgpu::cpu::blas
