// BatchNormalization, InstanceNormalization, LayerNormalization, MeanVarianceNormalization, and the
// transformer normalizations: SkipLayerNormalization and SkipSimplifiedLayerNormalization (com.microsoft),
// SimplifiedLayerNormalization (ONNX Runtime's, ai.onnx domain), RMSNormalization (opset 23). Computed
// in double. GroupNormalization (opsets 18, 21) and LpNormalization.
#include <algorithm>
#include <cmath>

#include "ops/broadcast.h"
#include "ops/normalization.h"
#include "cpu/kernel.h"
#include "cpu/nn_util.h"

namespace onnxgpu::cpu {
namespace {

inline constexpr DTypeSet kNormTypes{DType::Float16, DType::Float32, DType::Float64, DType::BFloat16};

void check_float(const KernelContext& ctx, const Tensor& t, const char* what, DTypeSet types = kNormTypes) {
  if (!types.has(t.dtype())) ctx.fail(std::string(what) + " must be a float tensor, got " + t.describe());
}

// Mean and (population) variance of x over the groups defined by the axes kept: group_of[i] is the group
// of element i.
struct Stats {
  std::vector<int64_t> group_of;
  std::vector<double> mean, var;
};

Stats group_stats(const std::vector<double>& x, const Shape& shape, const std::vector<bool>& reduced) {
  Stats s;
  Shape kept;
  for (size_t d = 0; d < shape.size(); ++d) kept.push_back(reduced[d] ? 1 : shape[d]);
  std::vector<int64_t> kst = shape_strides(kept);
  int64_t ng = shape_numel(kept);
  s.group_of.resize(x.size());
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t i = 0; i < x.size(); ++i, nn::next_index(idx, shape)) {
    int64_t g = 0;
    for (size_t d = 0; d < shape.size(); ++d) if (!reduced[d]) g += idx[d] * kst[d];
    s.group_of[i] = g;
  }
  s.mean.assign(size_t(ng), 0.0);
  s.var.assign(size_t(ng), 0.0);
  std::vector<int64_t> count(size_t(ng), 0);
  for (size_t i = 0; i < x.size(); ++i) {
    s.mean[size_t(s.group_of[i])] += x[i];
    ++count[size_t(s.group_of[i])];
  }
  for (int64_t g = 0; g < ng; ++g) s.mean[size_t(g)] /= double(count[size_t(g)]);
  for (size_t i = 0; i < x.size(); ++i) {
    double d = x[i] - s.mean[size_t(s.group_of[i])];
    s.var[size_t(s.group_of[i])] += d * d;
  }
  for (int64_t g = 0; g < ng; ++g) s.var[size_t(g)] /= double(count[size_t(g)]);
  return s;
}

// ---------------------------------------------------------------------------------- BatchNormalization

std::vector<Tensor> batch_norm(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  check_float(ctx, X, "X");
  if (X.rank() < 2) ctx.fail("X must be [N, C, ...] (rank >= 2), got " + X.describe());
  const ir::Node& node = ctx.node;
  double eps = node.attr_float("epsilon", 1e-5f), momentum = node.attr_float("momentum", 0.9f);
  const ops::BatchNormMode mode = ops::batch_norm_mode(node, ctx.opset, ctx.num_outputs(), X.rank());
  const bool spatial = mode.spatial, training = mode.training;
  // Per-channel parameters (spatial) or per-element-of-a-sample parameters (spatial = 0, opset < 9).
  Shape pshape = spatial ? Shape{X.dim(1)} : Shape(X.shape().begin() + 1, X.shape().end());
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  std::vector<std::vector<double>> par;
  for (size_t i = 1; i <= 4; ++i) {
    const Tensor& p = ctx.input(i);
    check_float(ctx, p, names[i - 1]);
    if (p.numel() != shape_numel(pshape))
      ctx.fail(std::string(names[i - 1]) + " " + shape_str(p.shape()) + " does not match X " + shape_str(X.shape()) +
               ": expected " + shape_str(pshape));
    par.push_back(nn::to_doubles(p));
  }
  const std::vector<double>&scale = par[0], &bias = par[1];
  std::vector<double> mean = par[2], var = par[3];
  std::vector<double> x = nn::to_doubles(X);
  int64_t per_sample = X.dim(0) == 0 ? 0 : X.numel() / X.dim(0);
  int64_t inner = spatial ? (X.dim(1) == 0 ? 0 : per_sample / X.dim(1)) : 1;
  int64_t np = shape_numel(pshape);
  auto param_of = [&](size_t i) { return size_t((int64_t(i) % std::max<int64_t>(1, per_sample)) / inner); };
  std::vector<Tensor> res;
  std::vector<double> saved_mean, saved_var;
  if (training) {
    Stats s = group_stats(x, X.shape(), mode.reduced);
    saved_mean = s.mean;
    saved_var = s.var;
  }
  const std::vector<double>& use_mean = training ? saved_mean : mean;
  const std::vector<double>& use_var = training ? saved_var : var;
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    size_t c = param_of(i);
    y[i] = scale[c] * (x[i] - use_mean[c]) / std::sqrt(use_var[c] + eps) + bias[c];
  }
  res.push_back(nn::tensor_from_doubles(X.dtype(), X.shape(), y));
  if (training) {
    std::vector<double> rm(static_cast<size_t>(np)), rv(static_cast<size_t>(np));
    for (int64_t c = 0; c < np; ++c) {
      rm[size_t(c)] = mean[size_t(c)] * momentum + saved_mean[size_t(c)] * (1 - momentum);
      rv[size_t(c)] = var[size_t(c)] * momentum + saved_var[size_t(c)] * (1 - momentum);
    }
    DType pt = ctx.input(3).dtype();
    Shape ms = ctx.input(3).shape();
    res.push_back(nn::tensor_from_doubles(pt, ms, rm));
    res.push_back(nn::tensor_from_doubles(pt, ms, rv));
    if (ctx.opset < 14) {  // saved_mean, saved_var
      res.push_back(nn::tensor_from_doubles(pt, ms, saved_mean));
      res.push_back(nn::tensor_from_doubles(pt, ms, saved_var));
    }
  }
  return res;
}

// ------------------------------------------------------------------------------- InstanceNormalization

std::vector<Tensor> instance_norm(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  check_float(ctx, X, "input", DTypeSet{DType::Float16, DType::Float32, DType::Float64});
  const Tensor& S = ctx.input(1);
  const Tensor& B = ctx.input(2);
  ops::check_instance_norm(X.dtype(), X.shape(), S.dtype(), S.shape(), B.dtype(), B.shape(), ctx.fail_fn());
  double eps = ctx.node.attr_float("epsilon", 1e-5f);
  int64_t C = X.dim(1);
  std::vector<double> x = nn::to_doubles(X), s = nn::to_doubles(S), b = nn::to_doubles(B);
  std::vector<bool> reduced(size_t(X.rank()), true);
  reduced[0] = reduced[1] = false;
  Stats st = group_stats(x, X.shape(), reduced);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t g = st.group_of[i];
    size_t c = size_t(g % C);
    y[i] = s[c] * (x[i] - st.mean[size_t(g)]) / std::sqrt(st.var[size_t(g)] + eps) + b[c];
  }
  return {nn::tensor_from_doubles(X.dtype(), X.shape(), y)};
}

// ---------------------------------------------------------------------------------- LayerNormalization

// `p` (after leading 1s) is the last dims of `x`: its element i % numel(p) scales element i of x.
bool trailing_param(const Shape& p, const Shape& x) {
  size_t lead = 0;
  while (lead < p.size() && p[lead] == 1) ++lead;
  size_t n = p.size() - lead;
  return n <= x.size() && std::equal(p.begin() + lead, p.end(), x.end() - n);
}

// float32 LayerNormalization with a row-wise Scale and B and only Y wanted (a transformer's): the
// reference's arithmetic in the reference's order, row by row, without its per-element group and
// broadcast maps or a double copy of X. Returns false when the case is not that one.
bool layer_norm_rows(const KernelContext& ctx, int64_t axis, double eps, Tensor& Y) {
  const Tensor& X = ctx.input(0);
  if (X.dtype() != DType::Float32 || ctx.output_wanted(1) || ctx.output_wanted(2)) return false;
  const Tensor* par[2] = {nullptr, nullptr};
  for (size_t i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    const Tensor& p = ctx.input(i);
    if (p.dtype() != DType::Float32 || !trailing_param(p.shape(), X.shape())) return false;
    par[i - 1] = &p;
  }
  const int64_t inner = shape_numel(Shape(X.shape().begin() + axis, X.shape().end()));
  if (inner == 0) return false;
  const int64_t rows = X.numel() / inner;
  const float* x = X.data<float>();
  const float* scale = par[0] ? par[0]->data<float>() : nullptr;
  const float* bias = par[1] ? par[1]->data<float>() : nullptr;
  const int64_t sn = par[0] ? par[0]->numel() : 1, bn = par[1] ? par[1]->numel() : 1;
  Y = Tensor::uninitialized(DType::Float32, X.shape());
  float* y = Y.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * inner;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < inner; ++j) mean += double(xr[j]);
    mean /= double(inner);
    for (int64_t j = 0; j < inner; ++j) {
      double d = double(xr[j]) - mean;
      var += d * d;
    }
    var /= double(inner);
    const double inv_std = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t i = r * inner + j;
      double v = (double(xr[j]) - mean) * inv_std;
      if (scale) v *= double(scale[i % sn]);
      if (bias) v += double(bias[i % bn]);
      y[i] = nn::from_double<float>(v);
    }
  }
  return true;
}

std::vector<Tensor> layer_norm(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  check_float(ctx, X, "X");
  const ir::Node& node = ctx.node;
  const auto [axis, stash] = ops::layer_norm_params(node, X.rank(), [&](const std::string& m) { ctx.fail(m); });
  double eps = node.attr_float("epsilon", 1e-5f);
  if (Tensor Y; layer_norm_rows(ctx, axis, eps, Y)) return {Y};
  std::vector<bool> reduced(size_t(X.rank()), false);
  for (int64_t d = axis; d < X.rank(); ++d) reduced[size_t(d)] = true;
  std::vector<double> x = nn::to_doubles(X);
  Stats st = group_stats(x, X.shape(), reduced);
  auto param = [&](size_t i, std::vector<int64_t>& map) -> std::vector<double> {
    if (!ctx.has_input(i)) return {};
    const Tensor& p = ctx.input(i);
    if (p.dtype() != X.dtype()) ctx.fail(std::string(i == 1 ? "Scale" : "B") + " is " + p.describe() +
                                         " but X is " + X.describe());
    try {
      map = ops::broadcast_index_map(p.shape(), X.shape());
    } catch (const InvalidArgument&) {
      ctx.fail(std::string(i == 1 ? "Scale " : "B ") + shape_str(p.shape()) +
               " cannot be broadcast to the normalized shape of X " + shape_str(X.shape()) + " (axis " +
               std::to_string(axis) + ")");
    }
    return nn::to_doubles(p);
  };
  std::vector<int64_t> smap, bmap;
  std::vector<double> scale = param(1, smap), bias = param(2, bmap);
  std::vector<double> inv_std(st.var.size());
  for (size_t g = 0; g < inv_std.size(); ++g) inv_std[g] = 1.0 / std::sqrt(st.var[g] + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    size_t g = size_t(st.group_of[i]);
    double v = (x[i] - st.mean[g]) * inv_std[g];
    if (!scale.empty()) v *= scale[size_t(smap[i])];
    if (!bias.empty()) v += bias[size_t(bmap[i])];
    y[i] = v;
  }
  Shape ms(X.shape().begin(), X.shape().begin() + axis);
  ms.resize(size_t(X.rank()), 1);
  std::vector<Tensor> res{nn::tensor_from_doubles(X.dtype(), X.shape(), y)};
  if (ctx.num_outputs() > 1) res.push_back(nn::tensor_from_doubles(stash, ms, st.mean));
  if (ctx.num_outputs() > 2) res.push_back(nn::tensor_from_doubles(stash, ms, inv_std));
  return res;
}

// ------------------------------------------------------------------------ Transformer normalizations

// The rows of n values of v normalized: y = (v - mean) * inv_std * scale[j] (+ shift[j]), where j is the
// element's place in its row; without centering (the simplified ops, RMSNormalization) the mean is 0
// and the variance is the mean square. `scale` has n values, `shift` n or none. Returns each row's mean
// and inverse standard deviation.
struct RowStats {
  std::vector<double> mean, inv_std;
};
RowStats normalize_rows(const std::vector<double>& v, int64_t n, bool centered, double eps,
                        const std::vector<double>& scale, const std::vector<double>& shift, std::vector<double>& y) {
  const int64_t rows = n ? int64_t(v.size()) / n : 0;
  RowStats st{std::vector<double>(size_t(rows), 0.0), std::vector<double>(size_t(rows), 0.0)};
  y.resize(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = v.data() + r * n;
    double mean = 0, var = 0;
    if (centered) {
      for (int64_t j = 0; j < n; ++j) mean += row[j];
      mean /= double(n);
    }
    for (int64_t j = 0; j < n; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= double(n);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < n; ++j) {
      double out = (row[j] - mean) * inv * scale[size_t(j)];
      if (!shift.empty()) out += shift[size_t(j)];
      y[size_t(r * n + j)] = out;
    }
    st.mean[size_t(r)] = mean;
    st.inv_std[size_t(r)] = inv;
  }
  return st;
}

// SkipLayerNormalization, SkipSimplifiedLayerNormalization (com.microsoft): see ops::skip_norm_params.
std::vector<Tensor> skip_norm(KernelContext& ctx) {
  const ops::SkipNormParams p = ops::skip_norm_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const Tensor& X = ctx.input(0);
  std::vector<double> v = nn::to_doubles(X), skip = nn::to_doubles(ctx.input(1)), gamma = nn::to_doubles(ctx.input(2));
  std::vector<double> beta = p.beta >= 0 ? nn::to_doubles(ctx.input(size_t(p.beta))) : std::vector<double>();
  std::vector<double> bias = p.bias >= 0 ? nn::to_doubles(ctx.input(size_t(p.bias))) : std::vector<double>();
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] += skip[i % size_t(p.skip_numel)];
    if (!bias.empty()) v[i] += bias[i % size_t(p.hidden)];
  }
  std::vector<double> y;
  RowStats st = normalize_rows(v, p.hidden, !p.simplified, p.epsilon, gamma, beta, y);
  std::vector<Tensor> res(std::min<size_t>(ctx.num_outputs(), 4));
  res[0] = nn::tensor_from_doubles(X.dtype(), X.shape(), y);
  if (ctx.output_wanted(1)) res[1] = nn::tensor_from_doubles(DType::Float32, p.stats, st.mean);
  if (ctx.output_wanted(2)) res[2] = nn::tensor_from_doubles(DType::Float32, p.stats, st.inv_std);
  if (ctx.output_wanted(3)) res[3] = nn::tensor_from_doubles(X.dtype(), X.shape(), v);
  return res;
}

// SimplifiedLayerNormalization (ai.onnx, ONNX Runtime's) and RMSNormalization (opset 23): see
// ops::rms_norm_params.
std::vector<Tensor> rms_norm(KernelContext& ctx) {
  const ops::RmsNormParams p = ops::rms_norm_params(ctx.node, ctx.opset, ctx.operand(0), ctx.operand(1), ctx.fail_fn());
  const Tensor& X = ctx.input(0);
  const Tensor& S = ctx.input(1);
  const int64_t n = shape_numel(p.normalized);
  std::vector<double> s = nn::to_doubles(S), scale(static_cast<size_t>(n));
  const std::vector<int64_t> map = p.flat_scale ? std::vector<int64_t>() : ops::broadcast_index_map(S.shape(), p.normalized);
  for (int64_t j = 0; j < n; ++j) scale[size_t(j)] = s[size_t(p.flat_scale ? j % int64_t(s.size()) : map[size_t(j)])];
  std::vector<double> y;
  RowStats st = normalize_rows(nn::to_doubles(X), n, false, p.epsilon, scale, {}, y);
  std::vector<Tensor> res{nn::tensor_from_doubles(X.dtype(), X.shape(), y)};
  if (ctx.output_wanted(1)) res.push_back(nn::tensor_from_doubles(p.stash, p.stats, st.inv_std));
  return res;
}

// --------------------------------------------------------------------------- MeanVarianceNormalization

std::vector<Tensor> mvn(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  check_float(ctx, X, "X");
  const ops::MvnParams mp = ops::mvn_params(ctx.node, ctx.opset, X.rank(), ctx.fail_fn());
  const std::vector<bool>& reduced = mp.reduced;
  const bool normalize_variance = mp.normalize_variance;
  std::vector<double> x = nn::to_doubles(X);
  Stats st = group_stats(x, X.shape(), reduced);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    size_t g = size_t(st.group_of[i]);
    double d = x[i] - st.mean[g];
    const double var = st.var[g] < 0.0 ? 0.0 : st.var[g];  // a NaN variance (an infinite or NaN element) stays NaN
    y[i] = normalize_variance ? d / (std::sqrt(var) + 1e-9) : d;
  }
  return {nn::tensor_from_doubles(X.dtype(), X.shape(), y)};
}

// --------------------------------------------------------------------------------- GroupNormalization

// Each (batch, group of C / num_groups channels) normalized over its channels and spatial elements; then
// scale and bias per channel (opset 21) or per group (opset 18). See ops::group_norm_params.
std::vector<Tensor> group_norm(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  check_float(ctx, X, "input 'X'");
  const ops::GroupNormParams p = ops::group_norm_params(ctx.node, ctx.opset, ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.fail_fn());
  std::vector<double> x = nn::to_doubles(X), s = nn::to_doubles(ctx.input(1)), b = nn::to_doubles(ctx.input(2));
  const int64_t N = X.dim(0), C = X.dim(1), G = p.groups, spatial = X.numel() / std::max<int64_t>(1, N * C);
  Stats st = group_stats(x, {N, G, X.numel() / std::max<int64_t>(1, N * G)}, {false, false, true});
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t c = (int64_t(i) / spatial) % C;
    size_t g = size_t(st.group_of[i]);
    size_t k = size_t(p.per_channel ? c : c / (C / G));
    y[i] = s[k] * (x[i] - st.mean[g]) / std::sqrt(st.var[g] + p.epsilon) + b[k];
  }
  return {nn::tensor_from_doubles(X.dtype(), X.shape(), y)};
}

// ------------------------------------------------------------------------------------ LpNormalization

// x / ||x||_p along `axis` (p 1 or 2); a line of zeros stays zeros, as in the reference.
std::vector<Tensor> lp_norm(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  check_float(ctx, X, "input");
  const ops::LpNormParams p = ops::lp_norm_params(ctx.node, X.shape(), ctx.fail_fn());
  std::vector<double> x = nn::to_doubles(X), y(x.size());
  const int64_t n = X.dim(p.axis), inner = X.numel() / std::max<int64_t>(1, shape_numel(Shape(X.shape().begin(), X.shape().begin() + p.axis + 1)));
  const int64_t outer = X.numel() / std::max<int64_t>(1, n * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double norm = 0;
      for (int64_t k = 0; k < n; ++k) {
        double v = x[size_t((o * n + k) * inner + i)];
        norm += p.p == 1 ? std::fabs(v) : v * v;
      }
      if (p.p == 2) norm = std::sqrt(norm);
      if (norm == 0) norm = 1;  // an all-zero line stays zero (the reference's choice)
      for (int64_t k = 0; k < n; ++k) {
        size_t at = size_t((o * n + k) * inner + i);
        y[at] = x[at] / norm;
      }
    }
  return {nn::tensor_from_doubles(X.dtype(), X.shape(), y)};
}

}  // namespace

void register_normalization(KernelRegistry& r) {
  r.add("GroupNormalization", group_norm);
  r.add("LpNormalization", lp_norm);
  r.add("BatchNormalization", batch_norm);
  r.add("InstanceNormalization", instance_norm);
  r.add("LayerNormalization", layer_norm);
  r.add("MeanVarianceNormalization", mvn);
  r.add("SimplifiedLayerNormalization", rms_norm);
  r.add("RMSNormalization", rms_norm);
  r.add("SkipLayerNormalization", skip_norm, ir::kMsDomain);
  r.add("SkipSimplifiedLayerNormalization", skip_norm, ir::kMsDomain);
}

}  // namespace onnxgpu::cpu
