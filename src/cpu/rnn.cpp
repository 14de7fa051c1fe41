// RNN, GRU, LSTM: one reference engine for the three cells. Every batch row runs its own time loop
// (a vector-matrix product per step), which keeps sequence_lens and both directions simple.
// Math is done in double for float64 tensors, in float otherwise (float16 is widened on load).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/kernel.h"
#include "cpu/rnn_util.h"

namespace onnxgpu::cpu {
namespace {

using Cell = ops::RnnCell;
using ops::kRnnX, ops::kRnnW, ops::kRnnR, ops::kRnnB, ops::kRnnSeqLens, ops::kRnnInitH, ops::kRnnInitC, ops::kRnnP;

// The node's attributes (ops::rnn_config) with the clip in the arithmetic type.
template <class A>
struct Config : ops::RnnConfig {
  explicit Config(ops::RnnConfig c) : ops::RnnConfig(std::move(c)) {}
  A clipped(A v) const { return has_clip ? std::clamp(v, -A(clip), A(clip)) : v; }
};

// Sizes (ops::rnn_dims) and each row's length (sequence_lens, checked against S).
struct Dims : ops::RnnDims {
  std::vector<int64_t> seq_lens;
};

template <class A>
Dims check_inputs(const KernelContext& ctx, const Config<A>& c) {
  Dims d;
  static_cast<ops::RnnDims&>(d) = ops::rnn_dims(ctx.node, c, ctx.operands(), ctx.fail_fn());
  d.seq_lens.assign(static_cast<size_t>(d.N), d.S);
  if (ctx.has_input(kRnnSeqLens)) {
    const Tensor& sl = ctx.input(kRnnSeqLens);
    for (int64_t b = 0; b < d.N; ++b) {
      int64_t len = sl.data<int32_t>()[b];
      if (len < 0 || len > d.S)
        ctx.fail("input 4 'sequence_lens' ('" + ctx.input_name(kRnnSeqLens) + "') has value " + std::to_string(len) +
                 " at batch " + std::to_string(b) + ", expected a length in [0, " + std::to_string(d.S) + "]");
      d.seq_lens[size_t(b)] = len;
    }
  }
  return d;
}

template <class T, class A>
std::vector<A> load(const Tensor& t) {
  std::vector<A> v(static_cast<size_t>(t.numel()));
  const T* p = t.data<T>();
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<T, double>) v[i] = p[i];
    else v[i] = static_cast<float>(p[i]);
  }
  return v;
}

// The working vectors of one time step: the gate pre-activations xw = W x + Wb and hr = R h + Rb, the
// state h (and c), and the GRU's temporaries.
template <class A>
struct StepState {
  std::vector<A> xw, hr, h, c, h_new, rh, z, rg;
  StepState(size_t gh, size_t h_size) : xw(gh), hr(gh), h(h_size), c(h_size), h_new(h_size), rh(h_size), z(h_size), rg(h_size) {}
};

// The cell update of one step: h_new (and c, for LSTM) from xw, hr and the previous state. `act` are
// the direction's activations, Rd and Rb its recurrence weights and bias, P its peepholes or null.
template <class A>
void cell_update(const Config<A>& cfg, const ops::RnnActivation* act, int64_t H, const A* Rd, const A* Rb, const A* P,
                 StepState<A>& st) {
  auto& xw = st.xw;
  auto& hr = st.hr;
  if (cfg.cell == Cell::Rnn) {
    for (int64_t j = 0; j < H; ++j) st.h_new[size_t(j)] = rnn::apply(act[0], cfg.clipped(xw[size_t(j)] + hr[size_t(j)]));
  } else if (cfg.cell == Cell::Gru) {
    // Gate order z, r, h.
    for (int64_t j = 0; j < H; ++j) {
      st.z[size_t(j)] = rnn::apply(act[0], cfg.clipped(xw[size_t(j)] + hr[size_t(j)]));
      st.rg[size_t(j)] = rnn::apply(act[0], cfg.clipped(xw[size_t(H + j)] + hr[size_t(H + j)]));
      st.rh[size_t(j)] = st.rg[size_t(j)] * st.h[size_t(j)];
    }
    for (int64_t j = 0; j < H; ++j) {
      A pre;
      if (cfg.linear_before_reset) {
        pre = xw[size_t(2 * H + j)] + st.rg[size_t(j)] * hr[size_t(2 * H + j)];
      } else {
        A acc = Rb[2 * H + j];
        for (int64_t k = 0; k < H; ++k) acc += st.rh[size_t(k)] * Rd[(2 * H + j) * H + k];
        pre = xw[size_t(2 * H + j)] + acc;
      }
      const A hh = rnn::apply(act[1], cfg.clipped(pre));
      st.h_new[size_t(j)] = (A(1) - st.z[size_t(j)]) * hh + st.z[size_t(j)] * st.h[size_t(j)];
    }
  } else {
    // Gate order i, o, f, c; peepholes i, o, f.
    for (int64_t j = 0; j < H; ++j) {
      const size_t u = size_t(j);
      const A c_prev = st.c[u];
      const A it = rnn::apply(act[0], cfg.clipped(xw[u] + hr[u] + (P ? P[j] * c_prev : A(0))));
      const A ft = cfg.input_forget ? A(1) - it
                                    : rnn::apply(act[0], cfg.clipped(xw[size_t(2 * H + j)] + hr[size_t(2 * H + j)] +
                                                         (P ? P[2 * H + j] * c_prev : A(0))));
      const A ct = rnn::apply(act[1], cfg.clipped(xw[size_t(3 * H + j)] + hr[size_t(3 * H + j)]));
      const A c_new = ft * c_prev + it * ct;
      const A ot = rnn::apply(act[0], cfg.clipped(xw[size_t(H + j)] + hr[size_t(H + j)] + (P ? P[H + j] * c_new : A(0))));
      st.c[u] = c_new;
      st.h_new[u] = ot * rnn::apply(act[2], c_new);
    }
  }
}

template <class T>
std::vector<Tensor> run_recurrent(KernelContext& ctx, Cell cell) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Config<A> cfg(ops::rnn_config(ctx.node, ctx.opset, cell, ctx.fail_fn()));
  const Dims dims = check_inputs(ctx, cfg);
  const int64_t G = cfg.gates, nd = cfg.nd, layout = cfg.layout;
  const int64_t S = dims.S, N = dims.N, I = dims.I, H = dims.H;

  const Tensor& X = ctx.input(kRnnX);
  const std::vector<A> x = load<T, A>(X), w = load<T, A>(ctx.input(kRnnW)), r = load<T, A>(ctx.input(kRnnR));
  const std::vector<A> bias = ctx.has_input(kRnnB) ? load<T, A>(ctx.input(kRnnB)) : std::vector<A>(size_t(nd * 2 * G * H), A(0));
  const std::vector<A> init_h = ctx.has_input(kRnnInitH) ? load<T, A>(ctx.input(kRnnInitH)) : std::vector<A>(size_t(nd * N * H), A(0));
  const bool want_c = cell == Cell::Lstm;
  const std::vector<A> init_c = want_c && ctx.has_input(kRnnInitC) ? load<T, A>(ctx.input(kRnnInitC))
                                                                : std::vector<A>(size_t(nd * N * H), A(0));
  const bool has_p = want_c && ctx.has_input(kRnnP);
  const std::vector<A> peep = has_p ? load<T, A>(ctx.input(kRnnP)) : std::vector<A>();

  // Outputs (computed as A, converted at the end).
  std::vector<A> y(size_t(S * nd * N * H), A(0)), y_h(size_t(nd * N * H), A(0)), y_c(size_t(nd * N * H), A(0));
  auto x_at = [&](int64_t t, int64_t b) { return x.data() + size_t(layout == 0 ? (t * N + b) * I : (b * S + t) * I); };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return y.data() + size_t(layout == 0 ? ((t * nd + d) * N + b) * H : ((b * S + t) * nd + d) * H);
  };
  auto state_off = [&](int64_t d, int64_t b) { return size_t(layout == 0 ? (d * N + b) * H : (b * nd + d) * H); };

  const int64_t GH = G * H;
  StepState<A> st(static_cast<size_t>(GH), static_cast<size_t>(H));
  for (int64_t d = 0; d < nd; ++d) {
    const A* Wd = w.data() + size_t(d * GH * I);
    const A* Rd = r.data() + size_t(d * GH * H);
    const A* Wb = bias.data() + size_t(d * 2 * GH);
    const A* Rb = Wb + GH;
    const A* P = has_p ? peep.data() + size_t(d * 3 * H) : nullptr;
    const ops::RnnActivation* act = &cfg.acts[size_t(d) * cfg.nacts];
    for (int64_t b = 0; b < N; ++b) {
      const size_t so = state_off(d, b);
      for (int64_t j = 0; j < H; ++j) st.h[size_t(j)] = init_h[so + size_t(j)], st.c[size_t(j)] = init_c[so + size_t(j)];
      const int64_t len = dims.seq_lens[size_t(b)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = cfg.reverse(d) ? len - 1 - s : s;
        const A* xt = x_at(t, b);
        for (int64_t g = 0; g < GH; ++g) {
          A accx = Wb[g], acch = Rb[g];
          for (int64_t k = 0; k < I; ++k) accx += xt[k] * Wd[g * I + k];
          for (int64_t k = 0; k < H; ++k) acch += st.h[size_t(k)] * Rd[g * H + k];
          st.xw[size_t(g)] = accx, st.hr[size_t(g)] = acch;
        }
        cell_update(cfg, act, H, Rd, Rb, P, st);
        st.h.swap(st.h_new);
        A* yt = y_at(t, d, b);
        for (int64_t j = 0; j < H; ++j) yt[j] = st.h[size_t(j)];
      }
      for (int64_t j = 0; j < H; ++j) y_h[so + size_t(j)] = st.h[size_t(j)], y_c[so + size_t(j)] = st.c[size_t(j)];
    }
  }

  auto make = [&](const Shape& shape, const std::vector<A>& v) {
    Tensor out(X.dtype(), shape);
    T* p = out.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = T(v[i]);
    return out;
  };
  std::vector<Tensor> outs(ctx.num_outputs());
  if (ctx.output_wanted(0)) outs[0] = make(layout == 0 ? Shape{S, nd, N, H} : Shape{N, S, nd, H}, y);
  if (ctx.output_wanted(1)) outs[1] = make(dims.state_shape, y_h);
  if (cell == Cell::Lstm && ctx.output_wanted(2)) outs[2] = make(dims.state_shape, y_c);
  return outs;
}

Kernel recurrent_kernel(Cell cell, const char* op) {
  return [cell, op](KernelContext& ctx) {
    constexpr DTypeSet kTypes{DType::Float32, DType::Float64, DType::Float16};
    const DType t = ctx.input(kRnnX).dtype();
    if (!kTypes.has(t))
      ctx.fail("input 0 'X' ('" + ctx.input_name(kRnnX) + "') has type " + std::string(dtype_name(t)) + ", expected float16, float32 or float64");
    return visit_dtype(t, [&]<class T>() { return run_recurrent<T>(ctx, cell); }, kTypes, op);
  };
}

}  // namespace

void register_rnn(KernelRegistry& r) {
  r.add("RNN", recurrent_kernel(Cell::Rnn, "RNN"));
  r.add("GRU", recurrent_kernel(Cell::Gru, "GRU"));
  r.add("LSTM", recurrent_kernel(Cell::Lstm, "LSTM"));
}

}  // namespace onnxgpu::cpu
