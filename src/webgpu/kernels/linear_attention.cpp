// LinearAttention and CausalConvWithState on the GPU (formulas and checks: ops/linear_attention.h; the CPU
// reference: src/cpu/linear_attention.cpp). In f32 (float16 and bfloat16 loaded into f32 and stored back;
// float64 arithmetic is refused by the shader layer: those nodes run on the CPU).
//
// LinearAttention: every column of a head's state (one value dimension m) evolves on its own, so one
// invocation owns S[:, m] of one (batch row, kv head) in registers and runs the token loop; a workgroup
// holds kColumns columns of one head and stages each token's key, the query rows of the head's query
// heads, the decay and the erase gate in workgroup memory, barriers around the staging. Per token it
// applies the rule's steps as the CPU does: decay, the delta correction of v (S^T (erase * k), its own
// column's dot product), the update, then one output per query head of the group; at the end the state
// column is written as present_state. Sizes are uniforms; d_k and the group are baked into the program
// (the state's register array).
//
// CausalConvWithState: one invocation per output element (the taps over the past state and the input),
// then one per element of present_state (the last k - 1 positions of the padded input), in one dispatch.
#include "ops/linear_attention.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {

namespace {

using strided::u32_dim;

constexpr uint32_t kColumns = 64;   // value columns (invocations) per workgroup
constexpr int64_t kMaxDk = 256;     // the state column an invocation keeps (registers, then local memory)
constexpr int64_t kMaxStaged = 2048;  // floats a token stages: key, erase gate, decay, the group's query rows

// A program's tensors and the bindings of its dispatch, declared together: an input, or an output the
// node wants (else neither declared nor bound).
struct Binder {
  GpuKernelContext& ctx;
  shader::Program& p;
  std::vector<ValueRef> binds;
  void in(const char* name, size_t i) {
    p.input(name, ctx.dtype(i), ctx.shape(i));
    binds.push_back(ctx.in(i));
  }
  void out(const char* name, size_t i, DType t, const Shape& shape) {
    if (!ctx.output_wanted(i)) return;
    p.output(name, t, shape);
    binds.push_back(ctx.out(i));
  }
};

void causal_conv(GpuKernelContext& ctx) {
  const ops::CausalConvParams cp = ops::causal_conv_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const DType t = cp.dtype;
  const Shape y_shape{cp.batch, cp.channels, cp.length}, state_shape{cp.batch, cp.channels, cp.taps - 1};
  const bool want_y = ctx.output_wanted(0), want_state = ctx.output_wanted(1);
  if (want_y) ctx.set_output(0, t, y_shape);
  if (want_state) ctx.set_output(1, t, state_shape);
  const uint64_t ny = want_y ? uint64_t(shape_numel(y_shape)) : 0, ns = want_state ? uint64_t(shape_numel(state_shape)) : 0;
  u32_dim(ctx, int64_t(ny + ns), "the outputs");
  u32_dim(ctx, shape_numel(ctx.shape(0)), "the input");
  if (ny + ns == 0) return;
  auto p = ctx.program(std::string("causal_conv") + (cp.has_bias ? "_b" : "") + (cp.has_past ? "_p" : "") + (cp.silu ? "_silu" : "") +
                       (want_y ? "_y" : "") + (want_state ? "_s" : ""));
  Binder b{ctx, p, {}};
  b.in("x", 0);
  b.in("w", 1);
  if (cp.has_bias) b.in("bias", 2);
  if (cp.has_past) b.in("past", 3);
  b.out("y", 0, t, y_shape);
  b.out("state", 1, t, state_shape);
  p.uniform("len", uint32_t(cp.length));
  p.uniform("taps", uint32_t(cp.taps));
  p.uniform("channels", uint32_t(cp.channels));
  p.uniform("ny", uint32_t(ny));
  p.set_threads(ny + ns);
  // Position `i` of row `row` (batch x channel) of the padded input: the past state's first k - 1, then x.
  p.declare(std::string("fn padded(row: u32, i: u32) -> f32 {\n"
                        "  let np = taps() - 1u;\n"
                        "  if (i >= np) { return to_f32_$x(x_load(row * len() + i - np)); }\n") +
            (cp.has_past ? "  return to_f32_$past(past_load(row * np + i));\n" : "  return 0.0;\n") + "}\n");
  std::string body;
  if (want_y)
    body += "  if (gi < ny()) {\n"
            "    let row = gi / len();\n"
            "    let j = gi % len();\n"
            "    let c = row % channels();\n" +
            std::string(cp.has_bias ? "    var s = to_f32_$bias(bias_load(c));\n" : "    var s = 0.0;\n") +
            "    for (var q = 0u; q < taps(); q = q + 1u) { s = s + to_f32_$w(w_load(c * taps() + q)) * padded(row, j + q); }\n" +
            (cp.silu ? "    s = s * sigmoid_f32(s);\n" : "") +
            "    y_store(gi, s);\n"
            "    return;\n"
            "  }\n";
  if (want_state)
    body += "  let e = gi - ny();\n"
            "  let np = taps() - 1u;\n"
            "  state_store(e, padded(e / np, len() + e % np));\n";
  p.body(body);
  ctx.dispatch(p, std::move(b.binds));
}

void linear_attention(GpuKernelContext& ctx) {
  using namespace ops;
  const LinearAttentionParams lp = linear_attention_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const Shape y_shape{lp.batch, lp.tokens, lp.q_heads * lp.dv}, state_shape{lp.batch, lp.kv_heads, lp.dk, lp.dv};
  const bool want_y = ctx.output_wanted(0), want_state = ctx.output_wanted(1);
  if (want_y) ctx.set_output(0, lp.out_dtype, y_shape);
  if (want_state) ctx.set_output(1, lp.state_dtype, state_shape);
  if (lp.dk == 0 && shape_numel(y_shape) > 0) ctx.unsupported("heads of d_k 0 (no state, an output of 0 x 1 / sqrt(0))");
  if (lp.dk > kMaxDk) ctx.unsupported("d_k " + std::to_string(lp.dk) + " (the GPU kernel keeps state columns of up to " + std::to_string(kMaxDk) + ")");
  const int64_t staged = lp.dk * (1 + lp.group() + (lp.has_erase ? 1 : 0)) + (lp.gated ? lp.decay_size : 0);
  if (staged > kMaxStaged)
    ctx.unsupported("a token's key, erase gate, decay and " + std::to_string(lp.group()) + " query rows are " + std::to_string(staged) +
                    " values (the GPU kernel stages up to " + std::to_string(kMaxStaged) + " in workgroup memory)");
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) u32_dim(ctx, shape_numel(ctx.shape(i)), "an input");
  u32_dim(ctx, shape_numel(y_shape), "the output");
  u32_dim(ctx, shape_numel(state_shape), "the state");
  if (shape_numel(state_shape) == 0 || (!want_y && !want_state)) return;  // (no batch row or value column: nothing to compute)
  const uint32_t blocks = uint32_t((lp.dv + kColumns - 1) / kColumns);
  const uint64_t max_dim = ctx.limits.max_compute_workgroups_per_dimension ? ctx.limits.max_compute_workgroups_per_dimension : 65535;
  if (uint64_t(blocks) * uint64_t(lp.kv_heads) > max_dim || uint64_t(lp.batch) > max_dim)
    ctx.unsupported("more heads or batch rows than the device's grid holds");

  const std::string dk = u32_lit(uint64_t(lp.dk)), group = u32_lit(uint64_t(lp.group()));
  auto p = ctx.program(std::string("linear_attention") + (lp.gated ? (lp.decay_size == 1 ? "_g1" : "_gk") : "") +
                           (lp.delta ? (lp.beta_heads == 1 ? "_d1" : "_dh") : "") + (lp.has_erase ? "_e" : "") +
                           (lp.has_past ? "_p" : "") + (want_y ? "_y" : "") + (want_state ? "_s" : "") + "_k" + std::to_string(lp.dk) +
                           "_g" + std::to_string(lp.group()),
                       kColumns);
  Binder b{ctx, p, {}};
  b.in("q", kLaQuery);
  b.in("k", kLaKey);
  b.in("v", kLaValue);
  if (lp.has_past) b.in("past", kLaPast);
  if (lp.gated) b.in("decay", kLaDecay);
  if (lp.delta) b.in("beta", kLaBeta);
  if (lp.has_erase) b.in("erase", kLaErase);
  b.out("y", 0, lp.out_dtype, y_shape);
  b.out("state", 1, lp.state_dtype, state_shape);
  if (b.binds.size() + 1 > ctx.limits.max_storage_buffers_per_shader_stage)  // + the status words
    ctx.unsupported("more tensors than the device binds per dispatch");
  p.uniform("tokens", uint32_t(lp.tokens));
  p.uniform("hkv", uint32_t(lp.kv_heads));
  p.uniform("dv", uint32_t(lp.dv));
  p.uniform("blocks", blocks);
  p.uniform_f32("scale", float(lp.scale));

  // Workgroup memory: the token's key (ks), its query rows (qs[j * DK + d] for query head j of the group),
  // the erase gate applied to the key (kes) and the decay (gs).
  std::string decl = "const DK: u32 = " + dk + ";\nconst G: u32 = " + group + ";\n"
                     "var<workgroup> ks: array<f32, DK>;\n"
                     "var<workgroup> qs: array<f32, DK * G>;\n";
  if (lp.has_erase) decl += "var<workgroup> kes: array<f32, DK>;\n";
  if (lp.gated) decl += "var<workgroup> gs: array<f32, " + u32_lit(uint64_t(lp.decay_size)) + ">;\n";
  p.declare(decl);

  // Workgroup (column block, kv head h, batch row b); a token's rows start at tok = b * T + t.
  std::string body =
      "  let blk = wid.x % blocks();\n"
      "  let h = wid.x / blocks();\n"
      "  let b = wid.y;\n"
      "  let m = blk * " + u32_lit(kColumns) + " + lid;\n"
      "  let live = m < dv();\n"
      "  let hq = hkv() * G;\n"
      "  var s: array<f32, DK>;\n"
      "  for (var d = 0u; d < DK; d = d + 1u) {\n" +
      (lp.has_past ? "    s[d] = select(0.0, to_f32_$past(past_load(((b * hkv() + h) * DK + d) * dv() + m)), live);\n"
                   : "    s[d] = 0.0;\n") +
      "  }\n"
      "  for (var t = 0u; t < tokens(); t = t + 1u) {\n"
      "    let tok = b * tokens() + t;\n"
      "    for (var i = lid; i < DK; i = i + " + u32_lit(kColumns) + ") {\n"
      "      ks[i] = to_f32_$k(k_load((tok * hkv() + h) * DK + i));\n" +
      (lp.has_erase ? "      kes[i] = to_f32_$erase(erase_load((tok * hkv() + h) * DK + i)) * ks[i];\n" : "") +
      "    }\n"
      "    for (var i = lid; i < DK * G; i = i + " + u32_lit(kColumns) + ") {\n"
      "      qs[i] = to_f32_$q(q_load((tok * hq + h * G) * DK + i));\n"
      "    }\n";
  if (lp.gated)
    body += "    for (var i = lid; i < " + u32_lit(uint64_t(lp.decay_size)) + "; i = i + " + u32_lit(kColumns) + ") {\n"
            "      gs[i] = exp_f32(to_f32_$decay(decay_load((tok * hkv() + h) * " + u32_lit(uint64_t(lp.decay_size)) + " + i)));\n"
            "    }\n";
  body += "    workgroupBarrier();\n"
          "    if (live) {\n"
          "      var vm = to_f32_$v(v_load((tok * hkv() + h) * dv() + m));\n";
  if (lp.gated)
    body += std::string("      for (var d = 0u; d < DK; d = d + 1u) { s[d] = s[d] * gs[") + (lp.decay_size == 1 ? "0u" : "d") + "]; }\n";
  if (lp.delta)
    body += std::string("      var r = 0.0;\n") +
            "      for (var d = 0u; d < DK; d = d + 1u) { r = r + s[d] * " + (lp.has_erase ? "kes[d]" : "ks[d]") + "; }\n" +
            "      vm = to_f32_$beta(beta_load(tok * " + u32_lit(uint64_t(lp.beta_heads)) + (lp.beta_heads == 1 ? "" : " + h") +
            ")) * (vm - r);\n";
  body += "      for (var d = 0u; d < DK; d = d + 1u) { s[d] = s[d] + ks[d] * vm; }\n";
  if (want_y)
    body += "      for (var j = 0u; j < G; j = j + 1u) {\n"
            "        var o = 0.0;\n"
            "        for (var d = 0u; d < DK; d = d + 1u) { o = o + qs[j * DK + d] * s[d]; }\n"
            "        y_store((tok * hq + h * G + j) * dv() + m, scale() * o);\n"
            "      }\n";
  body += "    }\n"
          "    workgroupBarrier();\n"
          "  }\n";
  if (want_state)
    body += "  if (live) {\n"
            "    for (var d = 0u; d < DK; d = d + 1u) { state_store(((b * hkv() + h) * DK + d) * dv() + m, s[d]); }\n"
            "  }\n";
  p.body(body);
  ctx.dispatch(p, std::move(b.binds), blocks * uint32_t(lp.kv_heads), uint32_t(lp.batch), 1);
  // Multiply-adds per token, column and head: the update, the delta's dot product, the group's outputs.
  ctx.count_flops(2 * uint64_t(lp.batch * lp.tokens * lp.kv_heads * lp.dv * lp.dk) * (1 + (lp.delta ? 1 : 0) + lp.group()));
}

}  // namespace

void register_linear_attention(GpuKernelRegistry& r) {
  r.add("LinearAttention", linear_attention);
  r.add("CausalConvWithState", causal_conv);
}

}  // namespace onnxgpu::webgpu
