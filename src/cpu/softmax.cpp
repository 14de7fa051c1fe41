// Softmax, LogSoftmax, Hardmax, row by row (which elements form a row: ops::softmax_rows).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/kernel.h"
#include "cpu/reduce_util.h"
#include "ops/softmax.h"

namespace onnxgpu::cpu {
namespace {

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

const DTypeSet kSoftmaxTypes = kFloatTypes;

void add_softmax(KernelRegistry& r, const std::string& op, SoftmaxKind kind) {
  r.add(op, [op, kind](KernelContext& ctx) -> std::vector<Tensor> {
    const Tensor& x = ctx.input(0);
    if (!kSoftmaxTypes.has(x.dtype()))
      ctx.fail("input 0 ('" + ctx.input_name(0) + "') must be a float tensor, got " + x.describe());
    AxisSplit s = ops::softmax_rows(ctx.node, ctx.opset, x.shape(), [&](const std::string& m) { ctx.fail(m); });

    Tensor out(x.dtype(), x.shape());
    visit_dtype(x.dtype(), [&]<class T>() {
      const T* xd = x.data<T>();
      T* od = out.data<T>();
      std::vector<double> row(static_cast<size_t>(s.n));
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t k = 0; k < s.inner; ++k) {
          double mx = -std::numeric_limits<double>::infinity();
          int64_t arg = 0;
          for (int64_t i = 0; i < s.n; ++i) {
            row[size_t(i)] = to_double(xd[s.at(o, i, k)]);
            if (row[size_t(i)] > mx) {
              mx = row[size_t(i)];
              arg = i;
            }
          }
          if (kind == SoftmaxKind::Hardmax) {
            for (int64_t i = 0; i < s.n; ++i) od[s.at(o, i, k)] = T(i == arg ? 1.0f : 0.0f);
            continue;
          }
          // A row of all -inf (or with +inf) would give inf - inf: shift by 0 then, so IEEE decides.
          double shift = std::isinf(mx) ? 0.0 : mx;
          double sum = 0;
          if (kind == SoftmaxKind::Softmax) {  // each exp once: kept in the row, then divided by the sum
            for (int64_t i = 0; i < s.n; ++i) sum += (row[size_t(i)] = std::exp(row[size_t(i)] - shift));
            for (int64_t i = 0; i < s.n; ++i) od[s.at(o, i, k)] = from_double<T>(row[size_t(i)] / sum);
            continue;
          }
          for (int64_t i = 0; i < s.n; ++i) sum += std::exp(row[size_t(i)] - shift);
          double log_sum = std::log(sum);
          for (int64_t i = 0; i < s.n; ++i) od[s.at(o, i, k)] = from_double<T>(row[size_t(i)] - shift - log_sum);
        }
    }, kSoftmaxTypes, op);
    return {out};
  });
}

}  // namespace

void register_softmax(KernelRegistry& r) {
  add_softmax(r, "Softmax", SoftmaxKind::Softmax);
  add_softmax(r, "LogSoftmax", SoftmaxKind::LogSoftmax);
  add_softmax(r, "Hardmax", SoftmaxKind::Hardmax);
}

}  // namespace onnxgpu::cpu
