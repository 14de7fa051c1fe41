// RNN, GRU and LSTM on the GPU: one workgroup per (direction, batch row) runs the row's time loop, as
// the CPU reference does (src/cpu/rnn.cpp; attributes and shapes from src/ops/rnn). Each invocation owns
// hidden units lid, lid + WG, ... (at most kUnits of them): per step it computes their gates' pre-
// activations (W x_t + Wb and R h + Rb, G rows each), the cell update, and writes Y; the previous hidden
// state lives in workgroup memory (the GRU's r * h too, which its candidate gate reads whole), LSTM's
// cell state in the owner's registers. Barriers separate the reads of h from its update. The row's
// length (sequence_lens, read on the GPU; a length outside [0, S] is flagged) is made workgroup-uniform
// through workgroup memory; steps past it write zeros. Only the wanted outputs are bound. Activations and their alpha / beta are baked
// into the program; sizes are uniforms.
#include <cstring>
#include <string>

#include "ops/rnn.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

namespace {

using ops::RnnActKind;
using ops::RnnCell;

constexpr uint32_t kWorkgroup = 64;
constexpr uint32_t kUnits = 4;  // hidden units per invocation: H up to 256

// The WGSL of activation `a` applied to `x` (as src/cpu/rnn_util.h computes it).
std::string act_expr(const ops::RnnActivation& a, const std::string& x) {
  const std::string al = f32_lit(a.alpha), be = f32_lit(a.beta);
  switch (a.kind) {
    case RnnActKind::Relu: return "max(" + x + ", 0.0)";
    case RnnActKind::Tanh: return "tanh_f32(" + x + ")";
    case RnnActKind::Sigmoid: return "sigmoid_f32(" + x + ")";
    case RnnActKind::Affine: return al + " * " + x + " + " + be;
    case RnnActKind::LeakyRelu: return "select(" + al + " * " + x + ", " + x + ", " + x + " >= 0.0)";
    case RnnActKind::ThresholdedRelu: return "select(0.0, " + x + ", " + x + " > " + al + ")";
    case RnnActKind::ScaledTanh: return al + " * tanh_f32(" + be + " * " + x + ")";
    case RnnActKind::HardSigmoid: return "clamp(" + al + " * " + x + " + " + be + ", 0.0, 1.0)";
    case RnnActKind::Elu: return "select(" + al + " * (exp_f32(" + x + ") - 1.0), " + x + ", " + x + " >= 0.0)";
    case RnnActKind::Softsign: return x + " / (1.0 + abs(" + x + "))";
    case RnnActKind::Softplus: return "softplus_f32(" + x + ")";
  }
  return x;
}

GpuKernel recurrent(RnnCell cell) {
  return [cell](GpuKernelContext& ctx) {
    using namespace ops;
    const RnnConfig c = rnn_config(ctx.node, ctx.opset, cell, ctx.fail_fn());
    const RnnDims d = rnn_dims(ctx.node, c, ctx.operands(), ctx.fail_fn());
    const DType t = ctx.dtype(kRnnX);
    if (t != DType::Float32 && t != DType::Float16 && t != DType::Float64)
      ctx.fail("input 0 'X' has type " + std::string(dtype_name(t)) + ", expected float16, float32 or float64");
    if (d.H > int64_t(kWorkgroup * kUnits))
      ctx.unsupported("hidden_size " + std::to_string(d.H) + " (the GPU kernel keeps up to " +
                      std::to_string(kWorkgroup * kUnits) + " hidden units in workgroup memory)");
    const bool lstm = cell == RnnCell::Lstm, gru = cell == RnnCell::Gru;
    if (ctx.output_wanted(0)) ctx.set_output(0, t, d.y_shape);
    if (ctx.output_wanted(1)) ctx.set_output(1, t, d.state_shape);
    if (lstm && ctx.output_wanted(2)) ctx.set_output(2, t, d.state_shape);
    if (d.N == 0) return;

    auto p = ctx.program(std::string(cell == RnnCell::Rnn ? "rnn" : gru ? "gru" : "lstm"), kWorkgroup);
    std::vector<ValueRef> binds;
    auto in = [&](const std::string& name, size_t i) {
      p.input(name, ctx.dtype(i), ctx.shape(i));
      binds.push_back(ctx.in(i));
    };
    in("x", kRnnX);
    in("w", kRnnW);
    in("r", kRnnR);
    const bool has_b = ctx.has_input(kRnnB), has_len = ctx.has_input(kRnnSeqLens), has_h0 = ctx.has_input(kRnnInitH);
    const bool has_c0 = lstm && ctx.has_input(kRnnInitC), has_p = lstm && ctx.has_input(kRnnP);
    if (has_b) in("bias", kRnnB);
    // sequence_lens and P are read from their buffers, unless the dispatch would bind more buffers than
    // the device allows (LSTM has eight inputs): then those known at plan time travel as uniforms
    // (sequence_lens first; a graph input's value then keys the plan).
    const bool want_y = ctx.output_wanted(0), want_h = ctx.output_wanted(1), want_c = lstm && ctx.output_wanted(2);
    size_t buffers = 3 + has_b + has_len + has_h0 + has_c0 + has_p + want_y + want_h + want_c + 1;  // + the status words
    const size_t limit = ctx.limits.max_storage_buffers_per_shader_stage;
    const bool len_known = has_len && buffers > limit && ctx.known(kRnnSeqLens);
    buffers -= len_known;
    const bool p_known = has_p && buffers > limit && ctx.known(kRnnP);
    if (len_known) {
      std::vector<int64_t> lens = ctx.constant(kRnnSeqLens, "sequence_lens").to_int64_vector();
      for (size_t b = 0; b < lens.size(); ++b)
        if (lens[b] < 0 || lens[b] > d.S)
          ctx.fail("input 4 'sequence_lens' has value " + std::to_string(lens[b]) + " at batch " + std::to_string(b) +
                   ", expected a length in [0, " + std::to_string(d.S) + "]");
      if (lens.size() > 4096) ctx.unsupported("more than 4096 sequences (their lengths travel as uniforms)");
      p.uniform_array("lens_u", std::vector<uint32_t>(lens.begin(), lens.end()));
    } else if (has_len) {
      in("lens", kRnnSeqLens);
    }
    if (has_h0) in("h0", kRnnInitH);
    if (has_c0) in("c0", kRnnInitC);
    if (p_known) {
      const Tensor pv = ctx.constant(kRnnP, "P").cast(DType::Float32);
      if (pv.numel() > 4096) ctx.unsupported("peepholes of more than 4096 values (they travel as uniforms)");
      std::vector<uint32_t> bits(size_t(pv.numel()));
      std::memcpy(bits.data(), pv.raw(), bits.size() * 4);
      p.uniform_array("peep_u", bits);
    } else if (has_p) {
      in("peep", kRnnP);
    }
    // The outputs the node wants.
    auto out = [&](const std::string& name, size_t i, const Shape& s) {
      p.output(name, t, s);
      binds.push_back(ctx.out(i));
    };
    if (want_y) out("y", 0, d.y_shape);
    if (want_h) out("yh", 1, d.state_shape);
    if (want_c) out("yc", 2, d.state_shape);
    p.uniform("nsteps", uint32_t(d.S));
    p.uniform("nbatch", uint32_t(d.N));
    p.uniform("nin", uint32_t(d.I));
    p.uniform("nhid", uint32_t(d.H));

    // Activation k of direction dir: a function of the direction when the directions differ.
    std::string acts;
    for (size_t k = 0; k < c.nacts; ++k) {
      acts += "fn act" + std::to_string(k) + "(x: f32, dir: u32) -> f32 {\n";
      if (c.nd == 2) acts += "  if (dir == 1u) { return " + act_expr(c.acts[c.nacts + k], "x") + "; }\n";
      acts += "  return " + act_expr(c.acts[k], "x") + ";\n}\n";
    }
    // NaN passes the clip, as std::clamp lets it (WGSL's clamp need not).
    const std::string clip = c.has_clip ? "select(clamp(v, -" + f32_lit(c.clip) + ", " + f32_lit(c.clip) + "), v, isnan_f32(v))" : "v";
    const std::string G = std::to_string(c.gates);
    p.declare("const WG: u32 = " + u32_lit(kWorkgroup) + ";\nconst UNITS: u32 = " + u32_lit(kUnits) + ";\nconst G: u32 = " +
              G + "u;\n"
              "var<workgroup> hs: array<f32, " + std::to_string(kWorkgroup * kUnits) + ">;\n"
              "var<workgroup> rh: array<f32, " + std::to_string(kWorkgroup * kUnits) + ">;\n"
              "var<workgroup> row_len: u32;\n"
              "fn clipped(v: f32) -> f32 { return " + clip + "; }\n" + acts +
              // The states' and Y's element offsets for layout 0 / 1.
              "fn state_at(dir: u32, b: u32, j: u32) -> u32 { return " +
              (c.layout == 0 ? "(dir * nbatch() + b) * nhid() + j" : "(b * " + std::to_string(c.nd) + "u + dir) * nhid() + j") + "; }\n"
              "fn y_at(t: u32, dir: u32, b: u32, j: u32) -> u32 { return " +
              (c.layout == 0 ? "((t * " + std::to_string(c.nd) + "u + dir) * nbatch() + b) * nhid() + j"
                             : "((b * nsteps() + t) * " + std::to_string(c.nd) + "u + dir) * nhid() + j") + "; }\n"
              "fn x_at(t: u32, b: u32) -> u32 { return " + (c.layout == 0 ? "(t * nbatch() + b) * nin()" : "(b * nsteps() + t) * nin()") + "; }\n"
              // Gate row g of unit j: W x_t + Wb and R h + Rb.
              "fn xw(dir: u32, g: u32, j: u32, xo: u32) -> f32 {\n"
              "  let row = (dir * G + g) * nhid() + j;\n"
              "  var acc = " + (has_b ? "to_f32_$bias(bias_load(dir * 2u * G * nhid() + g * nhid() + j))" : std::string("0.0")) + ";\n"
              "  for (var k = 0u; k < nin(); k = k + 1u) { acc = acc + to_f32_$x(x_load(xo + k)) * to_f32_$w(w_load(row * nin() + k)); }\n"
              "  return acc;\n}\n"
              "fn rb(dir: u32, g: u32, j: u32) -> f32 { return " +
              (has_b ? "to_f32_$bias(bias_load(dir * 2u * G * nhid() + (G + g) * nhid() + j))" : std::string("0.0")) + "; }\n"
              "fn hr(dir: u32, g: u32, j: u32) -> f32 {\n"
              "  let row = (dir * G + g) * nhid() + j;\n"
              "  var acc = rb(dir, g, j);\n"
              "  for (var k = 0u; k < nhid(); k = k + 1u) { acc = acc + hs[k] * to_f32_$r(r_load(row * nhid() + k)); }\n"
              "  return acc;\n}\n"
              // GRU's candidate without linear_before_reset: R_h (r * h) + Rb_h.
              "fn hr_reset(dir: u32, j: u32) -> f32 {\n"
              "  let row = (dir * G + 2u) * nhid() + j;\n"
              "  var acc = rb(dir, 2u, j);\n"
              "  for (var k = 0u; k < nhid(); k = k + 1u) { acc = acc + rh[k] * to_f32_$r(r_load(row * nhid() + k)); }\n"
              "  return acc;\n}\n" +
              (p_known ? "fn pp(dir: u32, g: u32, j: u32) -> f32 { return bitcast<f32>(peep_u(dir * 3u * nhid() + g * nhid() + j)); }\n"
               : has_p ? "fn pp(dir: u32, g: u32, j: u32) -> f32 { return to_f32_$peep(peep_load(dir * 3u * nhid() + g * nhid() + j)); }\n"
                       : "fn pp(dir: u32, g: u32, j: u32) -> f32 { return 0.0; }\n"));

    // The update of unit j (its own registers: cell state c[u]) into hn[u].
    std::string update;
    if (cell == RnnCell::Rnn) {
      update = "        hn[u] = act0(clipped(xw(dir, 0u, j, xo) + hr(dir, 0u, j)), dir);\n";
    } else if (gru) {
      update = "        let z = act0(clipped(xw(dir, 0u, j, xo) + hr(dir, 0u, j)), dir);\n"
               "        zs[u] = z;\n"
               "        let rg = act0(clipped(xw(dir, 1u, j, xo) + hr(dir, 1u, j)), dir);\n"
               "        rs[u] = rg;\n"
               "        rh[j] = rg * hs[j];\n";
    } else {
      update = "        let cp = cs[u];\n"
               "        let it = act0(clipped(xw(dir, 0u, j, xo) + hr(dir, 0u, j) + pp(dir, 0u, j) * cp), dir);\n" +
               std::string(c.input_forget ? "        let ft = 1.0 - it;\n"
                                          : "        let ft = act0(clipped(xw(dir, 2u, j, xo) + hr(dir, 2u, j) + pp(dir, 2u, j) * cp), dir);\n") +
               "        let ct = act1(clipped(xw(dir, 3u, j, xo) + hr(dir, 3u, j)), dir);\n"
               "        let cn = ft * cp + it * ct;\n"
               "        let ot = act0(clipped(xw(dir, 1u, j, xo) + hr(dir, 1u, j) + pp(dir, 1u, j) * cn), dir);\n"
               "        cs[u] = cn;\n"
               "        hn[u] = ot * act2(cn, dir);\n";
    }
    // GRU: after every r * h is in workgroup memory, the candidate and the new state.
    std::string gru_second;
    if (gru)
      gru_second = "    workgroupBarrier();\n"
                   "    for (var u = 0u; u < UNITS; u = u + 1u) {\n"
                   "      let j = lid + u * WG;\n"
                   "      if (j < nhid() && live) {\n" +
                   std::string(c.linear_before_reset ? "        let pre = xw(dir, 2u, j, xo) + rs[u] * hr(dir, 2u, j);\n"
                                                     : "        let pre = xw(dir, 2u, j, xo) + hr_reset(dir, j);\n") +
                   "        let hh = act1(clipped(pre), dir);\n"
                   "        hn[u] = (1.0 - zs[u]) * hh + zs[u] * hs[j];\n"
                   "      }\n"
                   "    }\n";
    std::string rev = c.rev_only ? "true" : c.fwd_only ? "false" : "dir == 1u";
    p.body(
        "  let dir = wg / nbatch();\n"
        "  let b = wg % nbatch();\n"
        "  if (lid == 0u) {\n" +
        std::string(len_known ? "    row_len = lens_u(b);\n"
                    : has_len ? "    let l = to_i64_$lens(lens_load(b));\n"
                              "    if (!w64_in_range(l, nsteps() + 1u)) { flag(FLAG_INDEX); }\n"
                              "    row_len = select(0u, w64_as_u32(l), w64_in_range(l, nsteps() + 1u));\n"
                            : "    row_len = nsteps();\n") +
        "  }\n"
        "  let len = workgroupUniformLoad(&row_len);\n"
        "  var cs: array<f32, UNITS>;\n"
        "  var hn: array<f32, UNITS>;\n"
        "  var zs: array<f32, UNITS>;\n"
        "  var rs: array<f32, UNITS>;\n"
        "  for (var u = 0u; u < UNITS; u = u + 1u) {\n"
        "    let j = lid + u * WG;\n"
        "    if (j < nhid()) {\n"
        "      hs[j] = " + (has_h0 ? "to_f32_$h0(h0_load(state_at(dir, b, j)))" : std::string("0.0")) + ";\n"
        "      cs[u] = " + (has_c0 ? "to_f32_$c0(c0_load(state_at(dir, b, j)))" : std::string("0.0")) + ";\n"
        "      hn[u] = hs[j];\n"
        "    }\n"
        "  }\n"
        "  workgroupBarrier();\n"
        "  for (var s = 0u; s < nsteps(); s = s + 1u) {\n"
        "    let live = s < len;\n"
        "    let t = select(s, select(s, len - 1u - s, " + rev + "), live);\n"
        "    let xo = x_at(t, b);\n"
        "    for (var u = 0u; u < UNITS; u = u + 1u) {\n"
        "      let j = lid + u * WG;\n"
        "      if (j < nhid() && live) {\n" + update +
        "      }\n"
        "    }\n" + gru_second +
        "    workgroupBarrier();\n"
        "    for (var u = 0u; u < UNITS; u = u + 1u) {\n"
        "      let j = lid + u * WG;\n"
        "      if (j < nhid()) {\n"
        "        if (live) { hs[j] = hn[u]; }\n"
        + std::string(want_y ? "        y_store(y_at(s_time(s, len, live, t), dir, b, j), select(0.0, hn[u], live));\n" : "") +
        "      }\n"
        "    }\n"
        "    workgroupBarrier();\n"
        "  }\n"
        "  for (var u = 0u; u < UNITS; u = u + 1u) {\n"
        "    let j = lid + u * WG;\n"
        "    if (j < nhid()) {\n" +
        std::string(want_h ? "      yh_store(state_at(dir, b, j), hs[j]);\n" : "") +
        std::string(want_c ? "      yc_store(state_at(dir, b, j), cs[u]);\n" : "") +
        "    }\n"
        "  }\n");
    // The step an output row is written at: t while live, else step s itself (zero-filled).
    p.declare("fn s_time(s: u32, len: u32, live: bool, t: u32) -> u32 { return select(s, t, live); }\n");
    if (binds.size() + 1 > ctx.limits.max_storage_buffers_per_shader_stage)  // + the status words
      ctx.unsupported("more tensors than the device binds per dispatch");
    ctx.dispatch(p, binds, uint32_t(c.nd * d.N), 1, 1);
  };
}

}  // namespace

void register_rnn(GpuKernelRegistry& r) {
  r.add("RNN", recurrent(RnnCell::Rnn));
  r.add("GRU", recurrent(RnnCell::Gru));
  r.add("LSTM", recurrent(RnnCell::Lstm));
}

}  // namespace onnxgpu::webgpu
