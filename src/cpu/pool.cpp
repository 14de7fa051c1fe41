// AveragePool, MaxPool (with Indices), LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool, LRN, MaxUnpool,
// RoiAlign.
// Computed in double (exact for every admitted type's max).
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/pool.h"

namespace onnxgpu::cpu {
namespace {

inline constexpr DTypeSet kPoolTypes{DType::Float16, DType::Float32, DType::Float64};
inline constexpr DTypeSet kMaxPoolTypes{DType::Float16, DType::Float32, DType::Float64, DType::Int8, DType::UInt8};

void check_input(const KernelContext& ctx, const Tensor& X, DTypeSet types) {
  if (!types.has(X.dtype())) ctx.fail("input X has unsupported type: " + X.describe());
  if (X.rank() < 3) ctx.fail("input X must be [N, C, D1, ...] (rank >= 3), got " + X.describe());
}

enum class PoolKind { Average, Max, Lp };

double lp_p(const KernelContext& ctx) {
  return ops::lp_exponent(ctx.node, [&](const std::string& m) { ctx.fail(m); });
}

std::vector<Tensor> pool(KernelContext& ctx, PoolKind kind) {
  const Tensor& X = ctx.input(0);
  check_input(ctx, X, kind == PoolKind::Max ? kMaxPoolTypes : kPoolTypes);
  ops::PoolParams pp =
      ops::pool_params(ctx.node, X.shape(), kind == PoolKind::Lp, [&](const std::string& m) { ctx.fail(m); });
  const nn::Window& win = pp.win;
  const Shape& out = pp.out;
  const bool include_pad = pp.include_pad;
  const int64_t storage_order = pp.storage_order;
  const double p = pp.p;
  Shape in_sp(X.shape().begin() + 2, X.shape().end());
  int64_t N = X.dim(0), C = X.dim(1);
  int64_t in_sz = shape_numel(in_sp), out_sz = shape_numel(win.out);
  bool want_indices = kind == PoolKind::Max && ctx.output_wanted(1);
  // Column-major spatial index of each row-major spatial offset (storage_order 1).
  std::vector<int64_t> colmajor;
  if (want_indices && storage_order == 1) {
    colmajor.resize(size_t(in_sz));
    std::vector<int64_t> idx(in_sp.size(), 0);
    for (int64_t i = 0; i < in_sz; ++i, nn::next_index(idx, in_sp)) {
      int64_t c = 0, mul = 1;
      for (size_t d = 0; d < in_sp.size(); ++d) {
        c += idx[d] * mul;
        mul *= in_sp[d];
      }
      colmajor[size_t(i)] = c;
    }
  }
  std::vector<double> x = nn::to_doubles(X);
  std::vector<double> y(static_cast<size_t>(shape_numel(out)));
  Tensor I = want_indices ? Tensor(DType::Int64, out) : Tensor();
  int64_t* ind = want_indices ? I.data<int64_t>() : nullptr;
  std::vector<std::pair<int64_t, int64_t>> taps;
  std::vector<int64_t> o(in_sp.size(), 0);
  for (int64_t op = 0; op < out_sz; ++op, nn::next_index(o, win.out)) {
    nn::window_taps(win, o, taps);
    int64_t divisor = include_pad ? nn::window_padded_count(win, o) : int64_t(taps.size());
    for (int64_t nc = 0; nc < N * C; ++nc) {
      const double* xc = x.data() + nc * in_sz;
      size_t yi = size_t(nc * out_sz + op);
      if (kind == PoolKind::Max) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t arg = -1;
        for (const auto& t : taps)
          if (arg < 0 || xc[t.second] > best) {
            best = xc[t.second];
            arg = t.second;
          }
        y[yi] = best;
        if (ind) ind[yi] = arg < 0 ? -1 : nc * in_sz + (storage_order == 1 ? colmajor[size_t(arg)] : arg);
      } else if (kind == PoolKind::Average) {
        double s = 0;
        for (const auto& t : taps) s += xc[t.second];
        y[yi] = divisor > 0 ? s / double(divisor) : std::numeric_limits<double>::quiet_NaN();
      } else {
        double s = 0;
        for (const auto& t : taps) s += std::pow(std::fabs(xc[t.second]), p);
        y[yi] = std::pow(s, 1.0 / p);
      }
    }
  }
  std::vector<Tensor> res{nn::tensor_from_doubles(X.dtype(), out, y)};
  if (want_indices) res.push_back(I);
  return res;
}

std::vector<Tensor> global_pool(KernelContext& ctx, PoolKind kind) {
  const Tensor& X = ctx.input(0);
  check_input(ctx, X, kPoolTypes);
  double p = kind == PoolKind::Lp ? lp_p(ctx) : 0;
  int64_t NC = X.dim(0) * X.dim(1), sp = X.numel() / std::max<int64_t>(1, NC);
  if (NC == 0) sp = 0;
  Shape out(size_t(X.rank()), 1);
  out[0] = X.dim(0);
  out[1] = X.dim(1);
  std::vector<double> x = nn::to_doubles(X), y(static_cast<size_t>(NC));
  for (int64_t i = 0; i < NC; ++i) {
    const double* xc = x.data() + i * sp;
    double acc = kind == PoolKind::Max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t j = 0; j < sp; ++j) {
      if (kind == PoolKind::Max) acc = (j == 0 || xc[j] > acc) ? xc[j] : acc;
      else if (kind == PoolKind::Average) acc += xc[j];
      else acc += std::pow(std::fabs(xc[j]), p);
    }
    if (kind == PoolKind::Average) acc /= double(sp);
    if (kind == PoolKind::Lp) acc = std::pow(acc, 1.0 / p);
    y[size_t(i)] = acc;
  }
  return {nn::tensor_from_doubles(X.dtype(), out, y)};
}

std::vector<Tensor> lrn(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (!(kPoolTypes | DTypeSet{DType::BFloat16}).has(X.dtype())) ctx.fail("input X has unsupported type: " + X.describe());
  if (X.rank() < 2) ctx.fail("input X must be [N, C, ...] (rank >= 2), got " + X.describe());
  const ir::Node& node = ctx.node;
  double alpha = node.attr_float("alpha", 0.0001f), beta = node.attr_float("beta", 0.75f);
  double bias = node.attr_float("bias", 1.0f);
  int64_t size = node.attr_int("size", 0);
  if (size <= 0) ctx.fail("attribute 'size' is required and must be positive");
  int64_t N = X.dim(0), C = X.dim(1), sp = C == 0 || N == 0 ? 0 : X.numel() / (N * C);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // channels [c - lo, c + hi]
  std::vector<double> x = nn::to_doubles(X), y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < sp; ++s) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(C - 1, c + hi); ++k) {
          double v = x[size_t((n * C + k) * sp + s)];
          sq += v * v;
        }
        size_t i = size_t((n * C + c) * sp + s);
        y[i] = x[i] / std::pow(bias + alpha / double(size) * sq, beta);
      }
  return {nn::tensor_from_doubles(X.dtype(), X.shape(), y)};
}

// RoiAlign (ops::roi_align_params): per output bin, bilinear samples of the roi's grid, averaged (avg) or
// the largest weighted corner value (max), as ONNX Runtime computes them; in double.
std::vector<Tensor> roi_align(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& bi = ctx.input(2);
  if (!kPoolTypes.has(X.dtype())) ctx.fail("input X has unsupported type: " + X.describe());
  if (rois.dtype() != X.dtype()) ctx.fail("input 'rois' " + rois.describe() + " must have the type of input 'X' " + X.describe());
  if (bi.dtype() != DType::Int64) ctx.fail("input 'batch_indices' must be int64, got " + bi.describe());
  ops::RoiAlignParams p = ops::roi_align_params(ctx.node, ctx.opset, X.shape(), rois.shape(), bi.shape(), ctx.fail_fn());
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), R = rois.dim(0);
  std::vector<double> x = nn::to_doubles(X), rv = nn::to_doubles(rois), y(size_t(shape_numel(p.out)));
  const double offset = p.half_pixel ? 0.5 : 0.0;
  for (int64_t r = 0; r < R; ++r) {
    int64_t b = bi.data<int64_t>()[r];
    if (b < 0 || b >= N) ctx.fail("batch_indices[" + std::to_string(r) + "] = " + std::to_string(b) + " is outside [0, " + std::to_string(N) + ")");
    double sw = rv[size_t(r * 4)] * p.spatial_scale - offset, sh = rv[size_t(r * 4 + 1)] * p.spatial_scale - offset;
    double ew = rv[size_t(r * 4 + 2)] * p.spatial_scale - offset, eh = rv[size_t(r * 4 + 3)] * p.spatial_scale - offset;
    double rw = ew - sw, rh = eh - sh;
    if (!p.half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    double bw = rw / double(p.out_w), bh = rh / double(p.out_h);
    int64_t gh = p.sampling_ratio > 0 ? p.sampling_ratio : int64_t(std::ceil(rh / double(p.out_h)));
    int64_t gw = p.sampling_ratio > 0 ? p.sampling_ratio : int64_t(std::ceil(rw / double(p.out_w)));
    double count = double(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < C; ++c) {
      const double* plane = &x[size_t((b * C + c) * H * W)];
      for (int64_t ph = 0; ph < p.out_h; ++ph)
        for (int64_t pw = 0; pw < p.out_w; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = sh + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
              double xx = sw + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
              double v[4] = {0, 0, 0, 0};
              if (!(yy < -1.0 || yy > double(H) || xx < -1.0 || xx > double(W))) {
                yy = std::max(yy, 0.0), xx = std::max(xx, 0.0);
                int64_t yl = int64_t(yy), xl = int64_t(xx), yh, xh;
                if (yl >= H - 1) yh = yl = H - 1, yy = double(yl);
                else yh = yl + 1;
                if (xl >= W - 1) xh = xl = W - 1, xx = double(xl);
                else xh = xl + 1;
                double ly = yy - double(yl), lx = xx - double(xl), hy = 1 - ly, hx = 1 - lx;
                v[0] = hy * hx * plane[yl * W + xl], v[1] = hy * lx * plane[yl * W + xh];
                v[2] = ly * hx * plane[yh * W + xl], v[3] = ly * lx * plane[yh * W + xh];
              }
              if (p.max_mode) {
                double m = std::max(std::max(std::max(v[0], v[1]), v[2]), v[3]);
                acc = first ? m : std::max(acc, m);
                first = false;
              } else {
                acc += v[0] + v[1] + v[2] + v[3];
              }
            }
          y[size_t(((r * C + c) * p.out_h + ph) * p.out_w + pw)] = p.max_mode ? acc : acc / count;
        }
    }
  }
  return {nn::tensor_from_doubles(X.dtype(), p.out, y)};
}

std::vector<Tensor> max_unpool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& I = ctx.input(1);
  check_input(ctx, X, kPoolTypes);
  if (I.dtype() != DType::Int64 || I.shape() != X.shape())
    ctx.fail("indices I must be int64 with the shape of X " + shape_str(X.shape()) + ", got " + I.describe());
  const ir::Node& node = ctx.node;
  size_t r = size_t(X.rank() - 2);
  std::vector<int64_t> ks = node.attr_ints("kernel_shape", {});
  if (ks.size() != r) ctx.fail("attribute 'kernel_shape' must have " + std::to_string(r) + " values");
  std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (strides.size() != r || pads.size() != 2 * r) ctx.fail("strides/pads do not match the spatial rank");
  // Indices address the inferred output; an explicit output_shape pads it at the end of each dim.
  Shape inferred{X.dim(0), X.dim(1)};
  for (size_t i = 0; i < r; ++i)
    inferred.push_back((X.dim(int64_t(i + 2)) - 1) * strides[i] - pads[i] - pads[i + r] + ks[i]);
  Shape out = inferred;
  if (ctx.has_input(2)) {
    out = ctx.input(2).to_int64_vector();
    if (out.size() != size_t(X.rank())) ctx.fail("output_shape must have " + std::to_string(X.rank()) + " values");
    for (size_t d = 0; d < out.size(); ++d)
      if (out[d] < inferred[d] || (d < 2 && out[d] != inferred[d]))
        ctx.fail("output_shape " + shape_str(out) + " is smaller than the unpooled shape " + shape_str(inferred));
  }
  Tensor Y(X.dtype(), out);
  int64_t total = shape_numel(inferred);
  std::vector<int64_t> out_st = shape_strides(out);
  size_t es = dtype_size(X.dtype());
  const int64_t* idx = I.data<int64_t>();
  for (int64_t i = 0; i < X.numel(); ++i) {
    if (idx[i] < 0 || idx[i] >= total)
      ctx.fail("index " + std::to_string(idx[i]) + " in I is outside the unpooled shape " + shape_str(inferred));
    int64_t rem = idx[i], dst = 0;  // re-address the index into the (possibly larger) output
    for (size_t d = inferred.size(); d-- > 0;) {
      dst += (rem % inferred[d]) * out_st[d];
      rem /= inferred[d];
    }
    std::memcpy(static_cast<std::byte*>(Y.raw()) + dst * es, static_cast<const std::byte*>(X.raw()) + i * es, es);
  }
  return {Y};
}

}  // namespace

void register_pool(KernelRegistry& r) {
  r.add("AveragePool", [](KernelContext& c) { return pool(c, PoolKind::Average); });
  r.add("MaxPool", [](KernelContext& c) { return pool(c, PoolKind::Max); });
  r.add("LpPool", [](KernelContext& c) { return pool(c, PoolKind::Lp); });
  r.add("GlobalAveragePool", [](KernelContext& c) { return global_pool(c, PoolKind::Average); });
  r.add("GlobalMaxPool", [](KernelContext& c) { return global_pool(c, PoolKind::Max); });
  r.add("GlobalLpPool", [](KernelContext& c) { return global_pool(c, PoolKind::Lp); });
  r.add("RoiAlign", roi_align);
  r.add("LRN", lrn);
  r.add("MaxUnpool", max_unpool);
}

}  // namespace onnxgpu::cpu
