// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. Computed in double, rounded once.
//
// With input [N, C, d1..dk] and target [N, d1..dk]: loss[n, d] = -w[n, d] * input[n, target[n, d], d], where
// w = weight[target] (1 without weights) and 0 where target == ignore_index. 'mean' divides the sum of
// losses by the sum of w.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cpu/kernel.h"
#include "cpu/reduce_util.h"
#include "ops/loss.h"

namespace onnxgpu::cpu {
namespace {

// Input values as double, laid out [N, C, D].
struct LossInput {
  int64_t n = 0, c = 0, d = 1;
  std::vector<double> v;
};

LossInput read_input(const KernelContext& ctx, const Tensor& x, const char* what) {
  ops::LossShape s = ops::loss_shape(ctx.node, x.shape(), what, [&](const std::string& m) { ctx.fail(m); });
  LossInput in;
  in.n = s.n;
  in.c = s.c;
  in.d = s.d;
  in.v.resize(static_cast<size_t>(x.numel()));
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* xd = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) in.v[size_t(i)] = to_double(xd[i]);
  }, kFloatTypes, ctx.node.op_type);
  return in;
}

// Computes the loss from log-probabilities `lp` ([N, C, D]); returns it in dtype `dt`.
Tensor nll(const KernelContext& ctx, const LossInput& lp, const Tensor& x, DType dt) {
  const Tensor& target = ctx.input(1);
  const Tensor* w = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  ops::LossTerms terms = ops::loss_terms(ctx.node, x.dtype(), x.shape(), target.dtype(), target.shape(),
                                         w ? w->dtype() : DType::Undefined, w ? w->shape() : Shape{},
                                         [&](const std::string& m) { ctx.fail(m); });
  std::vector<double> weight;
  if (w)
    for (int64_t i = 0; i < lp.c; ++i) weight.push_back(w->double_at(i));
  const std::optional<int64_t>& ignore = terms.ignore_index;

  std::vector<int64_t> t = target.to_int64_vector();
  std::vector<double> loss(t.size());
  double sum = 0, wsum = 0;
  for (int64_t n = 0; n < lp.n; ++n)
    for (int64_t d = 0; d < lp.d; ++d) {
      size_t i = size_t(n * lp.d + d);
      int64_t c = t[i];
      if (ignore && c == *ignore) continue;
      if (c < 0 || c >= lp.c)
        ctx.fail("input 1 ('" + ctx.input_name(1) + "', target) holds class " + std::to_string(c) +
                 ", outside [0, " + std::to_string(lp.c) + ")");
      double w = weight.empty() ? 1.0 : weight[size_t(c)];
      loss[i] = -w * lp.v[size_t((n * lp.c + c) * lp.d + d)];
      sum += loss[i];
      wsum += w;
    }
  if (terms.reduction == ops::LossReduction::None) {
    Tensor out(dt, target.shape());
    visit_dtype(dt, [&]<class T>() {
      for (size_t i = 0; i < loss.size(); ++i) out.data<T>()[i] = from_double<T>(loss[i]);
    }, kFloatTypes);
    return out;
  }
  double r = terms.reduction == ops::LossReduction::Sum ? sum : sum / wsum;
  return visit_dtype(dt, [&]<class T>() { return Tensor::scalar<T>(from_double<T>(r)); }, kFloatTypes);
}

std::vector<Tensor> nll_loss(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DTypeSet types{DType::Float16, DType::Float32, DType::Float64};
  if (!types.has(x.dtype()))
    ctx.fail("input 0 ('" + ctx.input_name(0) + "') must be float16, float or double, got " + x.describe());
  LossInput lp = read_input(ctx, x, "input");
  return {nll(ctx, lp, x, x.dtype())};
}

std::vector<Tensor> softmax_cross_entropy(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!kFloatTypes.has(x.dtype()))
    ctx.fail("input 0 ('" + ctx.input_name(0) + "') must be a float tensor, got " + x.describe());
  LossInput lp = read_input(ctx, x, "scores");
  // log_softmax over C.
  for (int64_t n = 0; n < lp.n; ++n)
    for (int64_t d = 0; d < lp.d; ++d) {
      auto at = [&](int64_t c) -> double& { return lp.v[size_t((n * lp.c + c) * lp.d + d)]; };
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < lp.c; ++c) mx = std::fmax(mx, at(c));
      double shift = std::isinf(mx) ? 0.0 : mx;
      double s = 0;
      for (int64_t c = 0; c < lp.c; ++c) s += std::exp(at(c) - shift);
      double ls = std::log(s);
      for (int64_t c = 0; c < lp.c; ++c) at(c) = at(c) - shift - ls;
    }
  std::vector<Tensor> outs{nll(ctx, lp, x, x.dtype())};
  if (ctx.output_wanted(1)) {
    Tensor log_prob(x.dtype(), x.shape());
    visit_dtype(x.dtype(), [&]<class T>() {
      for (size_t i = 0; i < lp.v.size(); ++i) log_prob.data<T>()[i] = from_double<T>(lp.v[i]);
    }, kFloatTypes);
    outs.push_back(log_prob);
  }
  return outs;
}

}  // namespace

void register_loss(KernelRegistry& r) {
  r.add("NegativeLogLikelihoodLoss", nll_loss);
  r.add("SoftmaxCrossEntropyLoss", softmax_cross_entropy);
}

}  // namespace onnxgpu::cpu
