// Conv, ConvInteger, QLinearConv, ConvTranspose (1-D, 2-D, 3-D and beyond), Col2Im, DeformConv (2-D). float32 Conv
// and DeformConv go through the library (src/cpu/blas.h: im2col + sgemm) while it is enabled; the reference
// kernels below compute in double and are the other types' path and the check.
#include <algorithm>
#include <cmath>

#include "cpu/blas.h"
#include "cpu/kernel.h"
#include "cpu/nn_util.h"
#include "ops/conv.h"
#include "ops/qlinear.h"

namespace onnxgpu::cpu {
namespace {

int64_t get_group(const KernelContext& ctx) {
  return ops::conv_group(ctx.node, [&](const std::string& m) { ctx.fail(m); });
}

void check_kernel_shape_attr(const KernelContext& ctx, const Shape& from_weights) {
  ops::check_kernel_shape(ctx.node, from_weights, [&](const std::string& m) { ctx.fail(m); });
}

// Y = conv(X, W) + B over doubles. X [N, C, D...], W [M, C/group, k...], bias empty or M values.
std::vector<double> conv_core(const KernelContext& ctx, const std::vector<double>& x, const Shape& xs,
                              const std::vector<double>& w, const Shape& ws, const std::vector<double>& bias,
                              Shape& out_shape) {
  int64_t group = get_group(ctx);
  ops::check_conv_shapes(xs, ws, group, bias.empty() ? -1 : int64_t(bias.size()),
                         [&](const std::string& m) { ctx.fail(m); });
  int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1];
  Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  check_kernel_shape_attr(ctx, k_sp);
  nn::Window win = nn::make_window(ctx, in_sp, k_sp, false);
  out_shape = {N, M};
  out_shape.insert(out_shape.end(), win.out.begin(), win.out.end());
  int64_t in_sz = shape_numel(in_sp), k_sz = shape_numel(k_sp), out_sz = shape_numel(win.out);
  int64_t Mg = M / group;
  std::vector<double> y(static_cast<size_t>(shape_numel(out_shape)));
  std::vector<std::pair<int64_t, int64_t>> taps;
  std::vector<int64_t> padded;  // the kernel positions that fall on padding
  std::vector<char> inside(static_cast<size_t>(k_sz));
  std::vector<int64_t> o(in_sp.size(), 0);
  for (int64_t op = 0; op < out_sz; ++op, nn::next_index(o, win.out)) {
    nn::window_taps(win, o, taps);
    padded.clear();
    if (int64_t(taps.size()) < k_sz) {
      std::fill(inside.begin(), inside.end(), 0);
      for (const auto& [ki, xi] : taps) inside[size_t(ki)] = 1;
      for (int64_t ki = 0; ki < k_sz; ++ki)
        if (!inside[size_t(ki)]) padded.push_back(ki);
    }
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        int64_t g = m / Mg;
        double acc = bias.empty() ? 0.0 : bias[size_t(m)];
        for (int64_t c = 0; c < Cg; ++c) {
          const double* xc = x.data() + (n * C + g * Cg + c) * in_sz;
          const double* wc = w.data() + (m * Cg + c) * k_sz;
          for (const auto& [ki, xi] : taps) acc += xc[xi] * wc[ki];
          // Padding is zeros that multiply the weights (ONNX's definition): 0 * inf is NaN.
          for (int64_t ki : padded) acc += 0.0 * wc[ki];
        }
        y[size_t((n * M + m) * out_sz + op)] = acc;
      }
  }
  return y;
}

// float32 Conv through the library. Per image and group: the columns of every output position's
// window (im2col: [Cg * k, out positions], zero where the window lies over padding, which then
// multiplies the weights as ONNX defines it) times the group's weights [Mg, Cg * k], added to the
// bias. A 1x1 kernel with unit strides and no padding reads the input itself as the columns.
Tensor conv_library(const KernelContext& ctx, const Tensor& X, const Tensor& W, const Tensor* bias_t) {
  const Shape& xs = X.shape();
  const Shape& ws = W.shape();
  int64_t group = get_group(ctx);
  ops::check_conv_shapes(xs, ws, group, bias_t ? bias_t->numel() : -1, [&](const std::string& m) { ctx.fail(m); });
  int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1];
  Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  check_kernel_shape_attr(ctx, k_sp);
  nn::Window win = nn::make_window(ctx, in_sp, k_sp, false);
  Shape out_shape{N, M};
  out_shape.insert(out_shape.end(), win.out.begin(), win.out.end());
  Tensor Y = Tensor::uninitialized(DType::Float32, out_shape);  // every element is written
  const int64_t in_sz = shape_numel(in_sp), k_sz = shape_numel(k_sp), out_sz = shape_numel(win.out);
  const int64_t Mg = M / group, rows = Cg * k_sz;
  if (Y.numel() == 0) return Y;
  // tap[op * k_sz + ki]: the input offset the kernel position ki reads at output position op, -1 on padding.
  std::vector<int64_t> tap(size_t(out_sz * k_sz), -1);
  bool identity = k_sz == 1 && out_sz == in_sz;
  {
    std::vector<std::pair<int64_t, int64_t>> taps;
    std::vector<int64_t> o(in_sp.size(), 0);
    for (int64_t op = 0; op < out_sz; ++op, nn::next_index(o, win.out)) {
      nn::window_taps(win, o, taps);
      for (const auto& [ki, xi] : taps) tap[size_t(op * k_sz + ki)] = xi;
    }
    for (int64_t op = 0; identity && op < out_sz; ++op) identity = tap[size_t(op)] == op;
  }
  const float* x = X.data<float>();
  const float* w = W.data<float>();
  float* y = Y.data<float>();
  std::vector<float> col(identity ? 0 : size_t(rows * out_sz));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < group; ++g) {
      const float* xg = x + (n * C + g * Cg) * in_sz;
      const float* cols = xg;
      if (!identity) {
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t ki = 0; ki < k_sz; ++ki) {
            float* dst = col.data() + (c * k_sz + ki) * out_sz;
            const float* xc = xg + c * in_sz;
            for (int64_t op = 0; op < out_sz; ++op) {
              int64_t xi = tap[size_t(op * k_sz + ki)];
              dst[op] = xi >= 0 ? xc[xi] : 0.0f;
            }
          }
        cols = col.data();
      }
      float* yg = y + (n * M + g * Mg) * out_sz;
      if (bias_t) {
        const float* b = bias_t->data<float>();
        for (int64_t m = 0; m < Mg; ++m) std::fill(yg + m * out_sz, yg + (m + 1) * out_sz, b[g * Mg + m]);
      }
      blas::sgemm(false, false, Mg, out_sz, rows, 1.0f, w + g * Mg * rows, rows, cols, out_sz, bias_t ? 1.0f : 0.0f,
                  yg, out_sz);
    }
  return Y;
}

std::vector<Tensor> conv(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  ops::check_conv_inputs(ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.fail_fn());
  if (X.dtype() == DType::Float32 && W.dtype() == DType::Float32 && blas::enabled())
    return {conv_library(ctx, X, W, ctx.has_input(2) ? &ctx.input(2) : nullptr)};
  std::vector<double> bias;
  if (ctx.has_input(2)) bias = nn::to_doubles(ctx.input(2));
  Shape out;
  std::vector<double> y = conv_core(ctx, nn::to_doubles(X), X.shape(), nn::to_doubles(W), W.shape(), bias, out);
  return {nn::tensor_from_doubles(X.dtype(), out, y)};
}

// The integer convolution's operands as doubles, less their zero points: x (input ix) less the scalar at
// ixz, w (input iw) less the scalar or per-output-channel value at iwz; an omitted zero point is 0.
std::pair<std::vector<double>, std::vector<double>> integer_operands(const KernelContext& ctx, size_t ix, size_t ixz,
                                                                     size_t iw, size_t iwz) {
  const Tensor& W = ctx.input(iw);
  std::vector<double> x = nn::to_doubles(ctx.input(ix)), w = nn::to_doubles(W);
  if (ctx.has_input(ixz)) {
    double zp = ctx.input(ixz).double_at(0);
    for (double& v : x) v -= zp;
  }
  if (ctx.has_input(iwz) && W.rank() >= 1) {
    const Tensor& z = ctx.input(iwz);
    int64_t M = W.dim(0);
    int64_t per = M == 0 ? 0 : W.numel() / M;
    for (int64_t i = 0; i < W.numel(); ++i) w[size_t(i)] -= z.double_at(z.numel() == 1 ? 0 : i / per);
  }
  return {std::move(x), std::move(w)};
}

std::vector<Tensor> conv_integer(KernelContext& ctx) {
  ops::check_conv_integer_inputs(ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.operand(3), ctx.fail_fn());
  auto [x, w] = integer_operands(ctx, 0, 2, 1, 3);
  Shape out;
  std::vector<double> y = conv_core(ctx, x, ctx.input(0).shape(), w, ctx.input(1).shape(), {}, out);
  return {nn::tensor_from_doubles(DType::Int32, out, y)};
}

// QLinearConv (ops::check_qlinear_conv_inputs): the exact integer sums plus B, times each output channel's
// factor in float32 (as ONNX Runtime and the GPU kernel), rounded half to even, saturated to y's type.
std::vector<Tensor> qlinear_conv(KernelContext& ctx) {
  using namespace ops;
  const DType yt = check_qlinear_conv_inputs(ctx.operands(), ctx.fail_fn());
  auto [x, w] = integer_operands(ctx, kQx, kQxZero, kQw, kQwZero);
  std::vector<double> bias;
  if (ctx.has_input(kQBias)) bias = nn::to_doubles(ctx.input(kQBias));
  Shape out;
  std::vector<double> y = conv_core(ctx, x, ctx.input(kQx).shape(), w, ctx.input(kQw).shape(), bias, out);
  const Tensor& ws = ctx.input(kQwScale);
  const float xs = float(ctx.input(kQxScale).double_at(0)), ys = float(ctx.input(kQyScale).double_at(0));
  const int32_t y0 = int32_t(ctx.input(kQyZero).int_at(0));
  const int64_t M = out[1], per = shape_numel(Shape(out.begin() + 2, out.end()));
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t m = (int64_t(i) / std::max<int64_t>(per, 1)) % M;
    const float f = xs * float(ws.double_at(ws.numel() == 1 ? 0 : m)) / ys;
    y[i] = requantize(float(y[i]) * f, y0, yt);
  }
  return {nn::tensor_from_doubles(yt, out, y)};
}

std::vector<Tensor> conv_transpose(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const ir::Node& node = ctx.node;
  ops::check_conv_inputs(ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.fail_fn());
  int64_t group = get_group(ctx);
  ops::check_conv_transpose_shapes(X.shape(), W.shape(), group, ctx.has_input(2) ? ctx.input(2).dim(0) : -1,
                                   ctx.fail_fn());
  int64_t N = X.dim(0), C = X.dim(1), Mg = W.dim(1), M = Mg * group;
  int64_t Cg = C / group;
  std::vector<double> bias;
  if (ctx.has_input(2)) bias = nn::to_doubles(ctx.input(2));
  size_t r = size_t(X.rank() - 2);
  Shape in_sp(X.shape().begin() + 2, X.shape().end()), k_sp(W.shape().begin() + 2, W.shape().end());
  check_kernel_shape_attr(ctx, k_sp);
  ops::ConvTransposeGeometry geo = ops::conv_transpose_geometry(node, in_sp, k_sp, [&](const std::string& m) { ctx.fail(m); });
  const std::vector<int64_t>&strides = geo.strides, &dil = geo.dilations, &pb = geo.pad_begin;
  const Shape& out_sp = geo.out;
  Shape out{N, M};
  out.insert(out.end(), out_sp.begin(), out_sp.end());
  std::vector<double> x = nn::to_doubles(X), w = nn::to_doubles(W);
  int64_t in_sz = shape_numel(in_sp), k_sz = shape_numel(k_sp), out_sz = shape_numel(out_sp);
  std::vector<double> y(static_cast<size_t>(shape_numel(out)), 0.0);
  // For each input position and kernel position, the output offset (or -1 when outside).
  std::vector<int64_t> target(static_cast<size_t>(in_sz * k_sz), -1);
  {
    std::vector<int64_t> ii(r, 0);
    for (int64_t a = 0; a < in_sz; ++a, nn::next_index(ii, in_sp)) {
      std::vector<int64_t> kk(r, 0);
      for (int64_t b = 0; b < k_sz; ++b, nn::next_index(kk, k_sp)) {
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < r && inside; ++d) {
          int64_t p = ii[d] * strides[d] + kk[d] * dil[d] - pb[d];
          inside = p >= 0 && p < out_sp[d];
          off = off * out_sp[d] + p;
        }
        if (inside) target[size_t(a * k_sz + b)] = off;
      }
    }
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      int64_t g = m / Mg, mg = m % Mg;
      double* yo = y.data() + (n * M + m) * out_sz;
      if (!bias.empty()) std::fill(yo, yo + out_sz, bias[size_t(m)]);
      for (int64_t c = 0; c < Cg; ++c) {
        const double* xc = x.data() + (n * C + g * Cg + c) * in_sz;
        const double* wc = w.data() + ((g * Cg + c) * Mg + mg) * k_sz;
        for (int64_t a = 0; a < in_sz; ++a)
          for (int64_t b = 0; b < k_sz; ++b) {
            int64_t t = target[size_t(a * k_sz + b)];
            if (t >= 0) yo[t] += xc[a] * wc[b];
          }
      }
    }
  return {nn::tensor_from_doubles(X.dtype(), out, y)};
}

// Col2Im: each input element (a block offset j of block l) added into the image pixel it came from
// (ops::col2im_geometry), in double.
std::vector<Tensor> col2im(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!kFloatTypes.has(x.dtype())) ctx.fail("input 'input' must be a float tensor, got " + x.describe());
  auto ints = [&](size_t i, const char* what) {
    const Tensor& t = ctx.input(i);
    if (t.dtype() != DType::Int64 || t.rank() != 1) ctx.fail(std::string("input '") + what + "' must be 1-D int64, got " + t.describe());
    return t.to_int64_vector();
  };
  ops::Col2ImGeometry g = ops::col2im_geometry(ctx.node, x.shape(), ints(1, "image_shape"), ints(2, "block_shape"), ctx.fail_fn());
  const size_t d = g.image.size();
  const int64_t N = x.dim(0), K = shape_numel(g.block), L = shape_numel(g.blocks), P = shape_numel(g.image);
  std::vector<double> xv = nn::to_doubles(x), y(size_t(N * g.channels * P), 0.0);
  std::vector<int64_t> j(d), l(d);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < g.channels; ++c)
      for (int64_t kj = 0; kj < K; ++kj) {
        for (size_t k = d, r = size_t(kj); k-- > 0;) j[k] = int64_t(r) % g.block[k], r /= size_t(g.block[k]);
        for (int64_t lj = 0; lj < L; ++lj) {
          for (size_t k = d, r = size_t(lj); k-- > 0;) l[k] = int64_t(r) % g.blocks[k], r /= size_t(g.blocks[k]);
          int64_t pix = 0;
          bool inside = true;
          for (size_t k = 0; k < d; ++k) {
            int64_t q = l[k] * g.strides[k] + j[k] * g.dilations[k] - g.pad_begin[k];
            if (q < 0 || q >= g.image[k]) inside = false;
            pix = pix * g.image[k] + q;
          }
          if (inside) y[size_t((n * g.channels + c) * P + pix)] += xv[size_t((n * g.channels * K + c * K + kj) * L + lj)];
        }
      }
  return {nn::tensor_from_doubles(x.dtype(), g.out, y)};
}

// X's plane (H x W) sampled bilinearly at (h, w): the four neighbours, each outside the plane reading 0
// (ops::DeformConvGeometry); a NaN coordinate reads 0.
double bilinear_zero_padded(const double* plane, int64_t H, int64_t W, double h, double w) {
  if (!(h > -1.0 && h < double(H) && w > -1.0 && w < double(W))) return 0.0;
  const double h0 = std::floor(h), w0 = std::floor(w);
  const double fh = h - h0, fw = w - w0;
  const int64_t r0 = int64_t(h0), c0 = int64_t(w0);
  auto at = [&](int64_t r, int64_t c) { return r >= 0 && r < H && c >= 0 && c < W ? plane[r * W + c] : 0.0; };
  return (1 - fh) * ((1 - fw) * at(r0, c0) + fw * at(r0, c0 + 1)) + fh * ((1 - fw) * at(r0 + 1, c0) + fw * at(r0 + 1, c0 + 1));
}

// DeformConv (ops::deform_conv_geometry) as Conv's library path computes a convolution: per image and group,
// the columns [Cg * kH * kW, oH * oW] (each tap sampled at its offset, times the mask; in double), then the
// group's weights times them: sgemm for float32 while the library is enabled, else in double.
std::vector<Tensor> deform_conv(KernelContext& ctx) {
  const ops::DeformConvGeometry g = ops::deform_conv_geometry(ctx.node, ctx.operands(), ctx.fail_fn());
  const DType t = ctx.input(0).dtype();
  const std::vector<double> x = nn::to_doubles(ctx.input(0)), w = nn::to_doubles(ctx.input(1)),
                            off = nn::to_doubles(ctx.input(2));
  const std::vector<double> bias = g.has_bias ? nn::to_doubles(ctx.input(3)) : std::vector<double>{};
  const std::vector<double> mask = g.has_mask ? nn::to_doubles(ctx.input(4)) : std::vector<double>{};
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group, Cog = g.C / g.offset_group, K = g.kh * g.kw;
  const int64_t plane = g.oh * g.ow, taps = g.offset_group * K, rows = Cg * K;
  const bool library = t == DType::Float32 && blas::enabled();
  std::vector<double> y(size_t(shape_numel(g.out())), 0.0), col(size_t(rows * plane));
  std::vector<float> wf, colf, yf;  // the library's operands
  if (library) {
    wf.assign(w.begin(), w.end());
    colf.resize(col.size());
    yf.resize(size_t(Mg * plane));
  }
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      for (int64_t c = 0; c < Cg; ++c) {
        const int64_t ci = grp * Cg + c, t0 = (ci / Cog) * K;
        const double* xc = x.data() + (n * g.C + ci) * g.H * g.W;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t tap = t0 + k, i = k / g.kw, j = k % g.kw;
          const double* dh = off.data() + (n * 2 * taps + 2 * tap) * plane;
          const double* dw = dh + plane;
          double* dst = col.data() + (c * K + k) * plane;
          for (int64_t p = 0; p < plane; ++p) {
            const double h = double((p / g.ow) * g.stride_h - g.pad_top + i * g.dil_h) + dh[p];
            const double wc = double((p % g.ow) * g.stride_w - g.pad_left + j * g.dil_w) + dw[p];
            dst[p] = bilinear_zero_padded(xc, g.H, g.W, h, wc);
            if (g.has_mask) dst[p] *= mask[size_t((n * taps + tap) * plane + p)];
          }
        }
      }
      double* yg = y.data() + (n * g.M + grp * Mg) * plane;
      if (library) {
        std::copy(col.begin(), col.end(), colf.begin());
        blas::sgemm(false, false, Mg, plane, rows, 1.0f, wf.data() + grp * Mg * rows, rows, colf.data(), plane, 0.0f,
                    yf.data(), plane);
        std::copy(yf.begin(), yf.end(), yg);
      } else {
        for (int64_t m = 0; m < Mg; ++m)
          for (int64_t r = 0; r < rows; ++r) {
            const double wv = w[size_t((grp * Mg + m) * rows + r)];
            const double* cr = col.data() + r * plane;
            for (int64_t p = 0; p < plane; ++p) yg[m * plane + p] += wv * cr[p];
          }
      }
      if (g.has_bias)
        for (int64_t m = 0; m < Mg; ++m)
          for (int64_t p = 0; p < plane; ++p) yg[m * plane + p] += bias[size_t(grp * Mg + m)];
    }
  return {nn::tensor_from_doubles(t, g.out(), y)};
}

}  // namespace

void register_conv(KernelRegistry& r) {
  r.add("Col2Im", col2im);
  r.add("Conv", conv);
  r.add("DeformConv", deform_conv);
  r.add("ConvInteger", conv_integer);
  r.add("ConvTranspose", conv_transpose);
  r.add("QLinearConv", qlinear_conv);
}

}  // namespace onnxgpu::cpu
