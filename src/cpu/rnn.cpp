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

enum class Cell { Rnn, Gru, Lstm };

// Input slots shared by the three ops.
enum : size_t { kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitH = 5, kInitC = 6, kP = 7 };
const char* const kInputNames[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};

std::string label(const KernelContext& ctx, size_t i) {
  return "input " + std::to_string(i) + " '" + kInputNames[i] + "' ('" + ctx.input_name(i) + "')";
}

void expect_shape(const KernelContext& ctx, size_t i, const Shape& want) {
  const Tensor& t = ctx.input(i);
  if (t.shape() != want)
    ctx.fail(label(ctx, i) + " has shape " + shape_str(t.shape()) + ", expected " + shape_str(want));
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

// The node's attributes, checked.
template <class A>
struct Config {
  Cell cell = Cell::Rnn;
  int64_t gates = 1;   // G: 1 (RNN), 3 (GRU: z, r, h), 4 (LSTM: i, o, f, c)
  int64_t nd = 1;      // directions
  bool fwd_only = true, rev_only = false;
  int64_t layout = 0;  // 0: [S, N, ...]; 1: [N, S, ...] (opset 14)
  bool has_clip = false;
  A clip = A(0);
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM
  size_t nacts = 1;                  // activations per direction
  std::vector<rnn::Activation> acts;

  A clipped(A v) const { return has_clip ? std::clamp(v, -clip, clip) : v; }
  bool reverse(int64_t d) const { return rev_only || (!fwd_only && d == 1); }
};

template <class A>
Config<A> read_config(const KernelContext& ctx, Cell cell) {
  const ir::Node& node = ctx.node;
  Config<A> c;
  c.cell = cell;
  c.gates = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
  const std::string direction = node.attr_string("direction", "forward");
  if (direction == "forward") {
  } else if (direction == "reverse") {
    c.rev_only = true, c.fwd_only = false;
  } else if (direction == "bidirectional") {
    c.nd = 2, c.fwd_only = false;
  } else {
    ctx.fail("attribute 'direction' is '" + direction + "', expected forward, reverse or bidirectional");
  }
  c.layout = ctx.opset >= 14 ? node.attr_int("layout", 0) : 0;
  if (c.layout != 0 && c.layout != 1) ctx.fail("attribute 'layout' is " + std::to_string(c.layout) + ", expected 0 or 1");
  c.has_clip = node.has_attr("clip");
  c.clip = A(node.attr_float("clip", 0.0f));
  if (c.has_clip && !(c.clip >= A(0))) ctx.fail("attribute 'clip' must be non-negative");
  c.linear_before_reset = cell == Cell::Gru && node.attr_int("linear_before_reset", 0) != 0;
  c.input_forget = cell == Cell::Lstm && node.attr_int("input_forget", 0) != 0;
  std::vector<std::string> default_acts = cell == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                          : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                              : std::vector<std::string>{"Tanh"};
  c.nacts = default_acts.size();
  c.acts = rnn::parse_activations(ctx, default_acts, c.nd);
  return c;
}

// Sizes: S steps, N batch rows, I inputs, H hidden; the shape of the states and each row's length.
struct Dims {
  int64_t S = 0, N = 0, I = 0, H = 0;
  Shape state_shape;
  std::vector<int64_t> seq_lens;
};

// Checks the inputs' types and shapes against each other and the attributes.
template <class A>
Dims check_inputs(const KernelContext& ctx, const Config<A>& c) {
  const Tensor& X = ctx.input(kX);
  const Tensor& W = ctx.input(kW);
  const Tensor& R = ctx.input(kR);
  const size_t last_input = c.cell == Cell::Lstm ? kP : kInitH;
  for (size_t i = kW; i <= last_input; ++i) {
    if (i == kSeqLens || !ctx.has_input(i)) continue;
    if (ctx.input(i).dtype() != X.dtype())
      ctx.fail(label(ctx, i) + " has type " + std::string(dtype_name(ctx.input(i).dtype())) + ", expected " +
               std::string(dtype_name(X.dtype())) + " like input 'X'");
  }
  if (X.rank() != 3) ctx.fail(label(ctx, kX) + " has shape " + shape_str(X.shape()) + ", expected rank 3");
  if (W.rank() != 3) ctx.fail(label(ctx, kW) + " has shape " + shape_str(W.shape()) + ", expected rank 3");
  if (R.rank() != 3) ctx.fail(label(ctx, kR) + " has shape " + shape_str(R.shape()) + ", expected rank 3");
  Dims d;
  d.S = c.layout == 0 ? X.dim(0) : X.dim(1);
  d.N = c.layout == 0 ? X.dim(1) : X.dim(0);
  d.I = X.dim(2);
  d.H = ctx.node.has_attr("hidden_size") ? ctx.node.attr_int("hidden_size", 0) : R.dim(2);
  const int64_t nd = c.nd, G = c.gates, H = d.H, N = d.N, S = d.S;
  if (H <= 0) ctx.fail("attribute 'hidden_size' is " + std::to_string(H) + ", expected a positive number");
  expect_shape(ctx, kW, {nd, G * H, d.I});
  expect_shape(ctx, kR, {nd, G * H, H});
  if (ctx.has_input(kB)) expect_shape(ctx, kB, {nd, 2 * G * H});
  d.state_shape = c.layout == 0 ? Shape{nd, N, H} : Shape{N, nd, H};
  if (ctx.has_input(kInitH)) expect_shape(ctx, kInitH, d.state_shape);
  if (c.cell == Cell::Lstm && ctx.has_input(kInitC)) expect_shape(ctx, kInitC, d.state_shape);
  if (c.cell == Cell::Lstm && ctx.has_input(kP)) expect_shape(ctx, kP, {nd, 3 * H});

  d.seq_lens.assign(static_cast<size_t>(N), S);
  if (ctx.has_input(kSeqLens)) {
    const Tensor& sl = ctx.input(kSeqLens);
    if (sl.dtype() != DType::Int32)
      ctx.fail(label(ctx, kSeqLens) + " has type " + std::string(dtype_name(sl.dtype())) + ", expected int32");
    expect_shape(ctx, kSeqLens, {N});
    for (int64_t b = 0; b < N; ++b) {
      int64_t len = sl.data<int32_t>()[b];
      if (len < 0 || len > S)
        ctx.fail(label(ctx, kSeqLens) + " has value " + std::to_string(len) + " at batch " + std::to_string(b) +
                 ", expected a length in [0, " + std::to_string(S) + "]");
      d.seq_lens[size_t(b)] = len;
    }
  }
  return d;
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
void cell_update(const Config<A>& cfg, const rnn::Activation* act, int64_t H, const A* Rd, const A* Rb, const A* P,
                 StepState<A>& st) {
  auto& xw = st.xw;
  auto& hr = st.hr;
  if (cfg.cell == Cell::Rnn) {
    for (int64_t j = 0; j < H; ++j) st.h_new[size_t(j)] = act[0](cfg.clipped(xw[size_t(j)] + hr[size_t(j)]));
  } else if (cfg.cell == Cell::Gru) {
    // Gate order z, r, h.
    for (int64_t j = 0; j < H; ++j) {
      st.z[size_t(j)] = act[0](cfg.clipped(xw[size_t(j)] + hr[size_t(j)]));
      st.rg[size_t(j)] = act[0](cfg.clipped(xw[size_t(H + j)] + hr[size_t(H + j)]));
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
      const A hh = act[1](cfg.clipped(pre));
      st.h_new[size_t(j)] = (A(1) - st.z[size_t(j)]) * hh + st.z[size_t(j)] * st.h[size_t(j)];
    }
  } else {
    // Gate order i, o, f, c; peepholes i, o, f.
    for (int64_t j = 0; j < H; ++j) {
      const size_t u = size_t(j);
      const A c_prev = st.c[u];
      const A it = act[0](cfg.clipped(xw[u] + hr[u] + (P ? P[j] * c_prev : A(0))));
      const A ft = cfg.input_forget ? A(1) - it
                                    : act[0](cfg.clipped(xw[size_t(2 * H + j)] + hr[size_t(2 * H + j)] +
                                                         (P ? P[2 * H + j] * c_prev : A(0))));
      const A ct = act[1](cfg.clipped(xw[size_t(3 * H + j)] + hr[size_t(3 * H + j)]));
      const A c_new = ft * c_prev + it * ct;
      const A ot = act[0](cfg.clipped(xw[size_t(H + j)] + hr[size_t(H + j)] + (P ? P[H + j] * c_new : A(0))));
      st.c[u] = c_new;
      st.h_new[u] = ot * act[2](c_new);
    }
  }
}

template <class T>
std::vector<Tensor> run_recurrent(KernelContext& ctx, Cell cell) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Config<A> cfg = read_config<A>(ctx, cell);
  const Dims dims = check_inputs(ctx, cfg);
  const int64_t G = cfg.gates, nd = cfg.nd, layout = cfg.layout;
  const int64_t S = dims.S, N = dims.N, I = dims.I, H = dims.H;

  const Tensor& X = ctx.input(kX);
  const std::vector<A> x = load<T, A>(X), w = load<T, A>(ctx.input(kW)), r = load<T, A>(ctx.input(kR));
  const std::vector<A> bias = ctx.has_input(kB) ? load<T, A>(ctx.input(kB)) : std::vector<A>(size_t(nd * 2 * G * H), A(0));
  const std::vector<A> init_h = ctx.has_input(kInitH) ? load<T, A>(ctx.input(kInitH)) : std::vector<A>(size_t(nd * N * H), A(0));
  const bool want_c = cell == Cell::Lstm;
  const std::vector<A> init_c = want_c && ctx.has_input(kInitC) ? load<T, A>(ctx.input(kInitC))
                                                                : std::vector<A>(size_t(nd * N * H), A(0));
  const bool has_p = want_c && ctx.has_input(kP);
  const std::vector<A> peep = has_p ? load<T, A>(ctx.input(kP)) : std::vector<A>();

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
    const rnn::Activation* act = &cfg.acts[size_t(d) * cfg.nacts];
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
    const DType t = ctx.input(kX).dtype();
    if (!kTypes.has(t))
      ctx.fail(label(ctx, kX) + " has type " + std::string(dtype_name(t)) + ", expected float16, float32 or float64");
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
