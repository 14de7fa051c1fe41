// The attention ops on the GPU: GroupQueryAttention and MultiHeadAttention (com.microsoft), Attention
// (ONNX, opset 23); see ops/attention.h. Each is its preparation (the KV cache's present written,
// rotary applied, biases added) then the attention core (attention_core.h), which reads K and V where
// they lie and computes each op's score and key range in its kernel.
//
// GroupQueryAttention. The sequence lengths (seqlens_k) and position_ids are read on the GPU at run
// time, so a replay takes new ones; total_sequence_length sizes the present, so the plan reads it when
// it is known before the run, and the shaders read it when the GPU computes it (ops::kGqaTotalAtRunTime:
// the present is then the past's buffer, and whether a run is the prompt is decided per run).
// Dispatches:
//   1. present_key, then present_value: every element (the past's first `past` positions, the new keys,
//      rotated with do_rotary, or values, zeros after); a sequence length or a position out of range
//      is flagged (the run fails naming the node and the value) and nothing is written for it. When the
//      runtime keeps the pasts in the presents' buffers (a static KV buffer fed back: runtime/resident.h,
//      GpuKernelContext::in_place_input 3), only the new rows, at their positions.
//   2. with do_rotary, Q rotated into a temporary.
//   3. the attention: the G = N / Nkv query heads of a KV head share its keys: a decode step (one
//      token) reads them as G rows of one batch element (its keys staged once for all of them, split
//      into chunks over the workgroups); a prompt as S rows per query head. Each row sees the keys
//      [lo, hi) of ops::gqa_keys, computed in the kernel from seqlens_k.
// MultiHeadAttention and Attention write their presents (past then new rows) when there is a past
// (or MHA's bias), and read the presents; else K and V are read in place (3-D or BNSH). Their masks
// are per-score inputs of the core (or a key range: Attention's causal offset, windows and
// nonpad_kv_seqlen, read at run time); Attention's qk_matmul_output has a kernel of its own.
#include "ops/attention.h"
#include "webgpu/kernels/attention_core.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/device.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {

namespace {

using attention::Binding;
using strided::Layout;
using strided::u32_dim;

// `first()`: 1 when the run is the prompt (S == total_sequence_length, no past read). A uniform when the
// total is known at plan time; else read from the total's binding "ts", which the program declares.
void first_prompt(GpuKernelContext& ctx, shader::Program& p, const ops::GqaParams& gp) {
  (void)ctx;
  if (gp.total != ops::kGqaTotalAtRunTime) {
    p.uniform("first", gp.first_prompt ? 1u : 0u);
    return;
  }
  p.declare("fn first() -> u32 { return select(0u, 1u, ts_load(0u) == i32(S())); }");
}

// The per-position inputs a GQA program reads, declared in this order (the WGSL names its code uses):
// seqlens_k `sl`; with rotary the caches `cs`, `sn` (and `pid`, position_ids, when given); `ts`,
// total_sequence_length, when it is known only at run time.
void gqa_position_inputs(GpuKernelContext& ctx, shader::Program& p, const ops::GqaParams& gp, bool rotary,
                         std::vector<ValueRef>& binds) {
  p.input("sl", DType::Int32, ctx.shape(5));
  binds.push_back(ctx.in(5));
  if (rotary) {
    p.input("cs", gp.dtype, ctx.shape(7));
    p.input("sn", gp.dtype, ctx.shape(8));
    binds.insert(binds.end(), {ctx.in(7), ctx.in(8)});
  }
  if (rotary && gp.position_ids) {
    p.input("pid", DType::Int64, ctx.shape(9));
    binds.push_back(ctx.in(9));
  }
  if (gp.total == ops::kGqaTotalAtRunTime) {
    p.input("ts", DType::Int32, ctx.shape(6));
    binds.push_back(ctx.in(6));
  }
}

// The present's writer (see the header): one invocation per element of present_key (`value` false,
// with rotary) or present_value. in_place: the past already lies in the present's buffer (a static KV
// buffer kept resident, runtime/resident.h): one invocation per element of the S new rows, written at
// their positions (past + s), nothing else read or written.
void gqa_present(GpuKernelContext& ctx, const ops::GqaParams& gp, bool value, ValueRef out, bool in_place) {
  const DType t = gp.dtype;
  const Shape present{gp.batch, gp.kv_heads, gp.present_len, gp.head_size};
  const bool rotary = gp.rotary && !value;
  // The new rows' tensor: the query when packed, else key or value.
  const size_t src = gp.packed ? 0 : value ? 2 : 1;
  auto p = ctx.program(value ? "present_value" : "present_key");
  p.input("x", t, ctx.shape(src));
  std::vector<ValueRef> binds{ctx.in(src)};
  if (gp.has_past && !in_place) {
    p.input("past", t, ctx.shape(value ? 4 : 3));
    binds.push_back(ctx.in(value ? 4 : 3));
  }
  gqa_position_inputs(ctx, p, gp, rotary, binds);
  const bool run_total = gp.total == ops::kGqaTotalAtRunTime;
  p.output("y", t, present);
  binds.push_back(out);
  p.uniform("S", u32_dim(ctx, gp.seq, "the sequence length"));
  p.uniform("H", u32_dim(ctx, gp.head_size, "the head size"));
  p.uniform("plen", u32_dim(ctx, gp.present_len, "the present's length"));
  p.uniform("L", u32_dim(ctx, gp.past_len, "the past's length"));
  p.uniform("Nkv", u32_dim(ctx, gp.kv_heads, "kv_num_heads"));
  // Where token s's head lies in its tensor.
  p.uniform("row", u32_dim(ctx, gp.packed ? gp.query_row() : gp.kv_hidden(), "a row"));
  p.uniform("off", uint32_t(!gp.packed ? 0 : value ? gp.q_hidden() + gp.kv_hidden() : gp.q_hidden()));
  first_prompt(ctx, p, gp);
  p.uniform("rot", uint32_t(gp.rotary_dim));
  p.uniform("cache_rows", u32_dim(ctx, gp.cache_rows, "the rotary caches"));
  const Shape written = in_place ? Shape{gp.batch, gp.kv_heads, gp.seq, gp.head_size} : present;
  p.set_threads(uint64_t(u32_dim(ctx, shape_numel(written), "the present")));
  std::string body = in_place ? "  let h = gi % H();\n"
                                "  let s = (gi / H()) % S();\n"
                                "  let bn = gi / H() / S();\n"
                              : "  let h = gi % H();\n"
                                "  let t = i32((gi / H()) % plen());\n"
                                "  let bn = gi / H() / plen();\n";
  body +=
      "  let b = bn / Nkv();\n"
      "  let kv = bn % Nkv();\n"
      "  let sl = sl_load(b);\n"
      "  let total = sl + 1;\n"
      "  let past = select(total - i32(S()), 0, first() == 1u);\n"
      "  let ok = select(past >= 0 && past <= i32(L()) && total <= i32(plen()) && (rot() == 0u || total <= i32(cache_rows())),\n"
      "                  total >= 1 && total <= i32(S()), first() == 1u);\n"
      "  if (!ok) { flag_index(w64_from_i32(sl)); return; }\n";
  if (run_total)  // total_sequence_length itself: the present is the past's buffer (or, without a past, the prompt)
    body += gp.has_past ? "  if (ts_load(0u) < 1 || ts_load(0u) > i32(plen())) { flag_index(w64_from_i32(ts_load(0u))); return; }\n"
                        : "  if (ts_load(0u) != i32(S())) { flag_index(w64_from_i32(ts_load(0u))); return; }\n";
  if (in_place) {
    body += "  let o = (bn * plen() + u32(past) + s) * H() + h;\n";
  } else {
    if (gp.has_past)
      body += "  if (t < past) { " + shader::move_element("y", "gi", "past", "(bn * L() + u32(t)) * H() + h") + " return; }\n";
    body += "  if (t >= past + i32(S())) { y_store(gi, 0.0); return; }\n"
            "  let s = u32(t - past);\n"
            "  let o = gi;\n";
  }
  body += "  let head = (b * S() + s) * row() + off() + kv * H();\n";
  if (rotary) {
    body += "  if (h < rot()) {\n";
    body += gp.position_ids
                ? "    let p64 = to_i64_$pid(pid_load(b * S() + s));\n"
                  "    if (!w64_in_range(p64, cache_rows())) { flag_index(p64); return; }\n"
                  "    let pos = w64_as_u32(p64);\n"
                : "    let pos = select(u32(past) + s, 1u, first() == 1u && i32(s) >= total);\n";
    body += "    let half = rot() / 2u;\n";
    body += gp.interleaved ? "    let kk = h / 2u;\n    let lead = h % 2u == 0u;\n    let j = select(h - 1u, h + 1u, lead);\n"
                           : "    let lead = h < half;\n    let kk = select(h - half, h, lead);\n"
                             "    let j = select(h - half, h + half, lead);\n";
    body += "    let c = cs_load(pos * half + kk);\n"
            "    let sv = sn_load(pos * half + kk);\n"
            "    let xi = x_load(head + h);\n"
            "    let xj = x_load(head + j);\n"
            "    y_store(o, select(xi * c + xj * sv, xi * c - xj * sv, lead));\n"
            "    return;\n"
            "  }\n";
  }
  body += "  " + shader::move_element("y", "o", "x", "head + h");
  p.body(body);
  ctx.dispatch(p, std::move(binds));
}

// The in-place writers and Q's rotation in one dispatch, for Q, K and V packed in the query with rotary
// (ONNX Runtime's model builder's decoders): one invocation per element of the query's [B, S, N + 2 Nkv,
// H]: Q rotated into `q` [B, S, N*H], K rotated and V copied into the presents' buffers at positions
// past + s (the pasts lie there already). Checks and positions as gqa_present's. False, emitting
// nothing, when its bindings exceed the device's storage buffers per stage.
bool gqa_prepare_in_place(GpuKernelContext& ctx, const ops::GqaParams& gp, ValueRef pk, ValueRef pv, ValueRef q) {
  const DType t = gp.dtype;
  const bool run_total = gp.total == ops::kGqaTotalAtRunTime;
  const uint32_t most = ctx.limits.max_storage_buffers_per_shader_stage ? ctx.limits.max_storage_buffers_per_shader_stage : 8;
  if (7u + (gp.position_ids ? 1u : 0u) + (run_total ? 1u : 0u) + 1u > most) return false;  // + the status words
  const Shape present{gp.batch, gp.kv_heads, gp.present_len, gp.head_size}, qs{gp.batch, gp.seq, gp.q_hidden()};
  auto p = ctx.program("gqa_prepare");
  p.input("x", t, ctx.shape(0));
  std::vector<ValueRef> binds{ctx.in(0)};
  gqa_position_inputs(ctx, p, gp, true, binds);
  p.output("pk", t, present);
  p.output("pv", t, present);
  p.output("q", t, qs);
  binds.insert(binds.end(), {pk, pv, q});
  p.uniform("S", u32_dim(ctx, gp.seq, "the sequence length"));
  p.uniform("H", u32_dim(ctx, gp.head_size, "the head size"));
  p.uniform("N", u32_dim(ctx, gp.heads, "num_heads"));
  p.uniform("Nkv", u32_dim(ctx, gp.kv_heads, "kv_num_heads"));
  p.uniform("plen", u32_dim(ctx, gp.present_len, "the present's length"));
  p.uniform("L", u32_dim(ctx, gp.past_len, "the past's length"));
  first_prompt(ctx, p, gp);
  p.uniform("rot", uint32_t(gp.rotary_dim));
  p.uniform("cache_rows", u32_dim(ctx, gp.cache_rows, "the rotary caches"));
  p.set_threads(uint64_t(u32_dim(ctx, shape_numel(ctx.shape(0)), "the query")));
  std::string body =
      "  let h = gi % H();\n"
      "  let heads = N() + 2u * Nkv();\n"
      "  let hd = (gi / H()) % heads;\n"
      "  let bs = gi / H() / heads;\n"
      "  let b = bs / S();\n"
      "  let s = bs % S();\n"
      "  let sl = sl_load(b);\n"
      "  let total = sl + 1;\n"
      "  let past = select(total - i32(S()), 0, first() == 1u);\n"
      "  let ok = select(past >= 0 && past <= i32(L()) && total <= i32(plen()) && total <= i32(cache_rows()),\n"
      "                  total >= 1 && total <= i32(S()), first() == 1u);\n"
      "  if (!ok) { flag_index(w64_from_i32(sl)); return; }\n";
  if (run_total)
    body += "  if (ts_load(0u) < 1 || ts_load(0u) > i32(plen())) { flag_index(w64_from_i32(ts_load(0u))); return; }\n";
  // Where the element goes: Q's row, or the present's position past + s of its KV head.
  body += "  let qo = bs * N() * H() + hd * H() + h;\n"
          "  let kv = select(hd - N(), hd - N() - Nkv(), hd >= N() + Nkv());\n"
          "  let o = ((b * Nkv() + kv) * plen() + u32(past) + s) * H() + h;\n"
          "  if (h < rot() && hd < N() + Nkv()) {\n";
  body += gp.position_ids ? "    let p64 = to_i64_$pid(pid_load(bs));\n"
                            "    if (!w64_in_range(p64, cache_rows())) { flag_index(p64); return; }\n"
                            "    let pos = w64_as_u32(p64);\n"
                          : "    let pos = select(u32(past) + s, 1u, first() == 1u && i32(s) >= total);\n";
  body += "    let half = rot() / 2u;\n";
  body += gp.interleaved ? "    let kk = h / 2u;\n    let lead = h % 2u == 0u;\n    let j = select(h - 1u, h + 1u, lead);\n"
                         : "    let lead = h < half;\n    let kk = select(h - half, h, lead);\n"
                           "    let j = select(h - half, h + half, lead);\n";
  body += "    let c = cs_load(pos * half + kk);\n"
          "    let sv = sn_load(pos * half + kk);\n"
          "    let xi = x_load(gi);\n"
          "    let xj = x_load(gi - h + j);\n"
          "    let v = select(xi * c + xj * sv, xi * c - xj * sv, lead);\n"
          "    if (hd < N()) { q_store(qo, v); } else { pk_store(o, v); }\n"
          "    return;\n"
          "  }\n"
          "  if (hd < N()) { " + shader::move_element("q", "qo", "x", "gi") + " return; }\n"
          "  if (hd < N() + Nkv()) { " + shader::move_element("pk", "o", "x", "gi") + " return; }\n"
          "  " + shader::move_element("pv", "o", "x", "gi");
  p.body(body);
  ctx.dispatch(p, std::move(binds));
  return true;
}

// Q rotated (do_rotary) into `out` [B, S, N*H]; positions as the present's keys (invalid lengths,
// flagged by the present, only clamped here).
void gqa_rotate_q(GpuKernelContext& ctx, const ops::GqaParams& gp, ValueRef out) {
  const DType t = gp.dtype;
  const Shape qs{gp.batch, gp.seq, gp.q_hidden()};
  auto p = ctx.program("rotate_q");
  p.input("query", t, ctx.shape(0));
  std::vector<ValueRef> binds{ctx.in(0)};
  gqa_position_inputs(ctx, p, gp, true, binds);
  p.output("q", t, qs);
  binds.push_back(out);
  p.uniform("S", u32_dim(ctx, gp.seq, "the sequence length"));
  p.uniform("H", u32_dim(ctx, gp.head_size, "the head size"));
  p.uniform("NH", u32_dim(ctx, gp.q_hidden(), "the query's hidden size"));
  p.uniform("row", u32_dim(ctx, gp.query_row(), "a row"));
  first_prompt(ctx, p, gp);
  p.uniform("rot", uint32_t(gp.rotary_dim));
  p.uniform("cache_rows", u32_dim(ctx, gp.cache_rows, "the rotary caches"));
  p.set_threads(uint64_t(u32_dim(ctx, shape_numel(qs), "the query")));
  std::string body =
      "  let h = gi % H();\n"
      "  let bs = gi / NH();\n"
      "  let b = bs / S();\n"
      "  let s = bs % S();\n"
      "  let src = bs * row() + gi % NH();\n"
      "  if (h >= rot()) { " + shader::move_element("q", "gi", "query", "src") + " return; }\n"
      "  let total = sl_load(b) + 1;\n"
      "  let past = select(total - i32(S()), 0, first() == 1u);\n";
  // (Positions out of range are flagged by the present's writer; here only clamped.)
  body += gp.position_ids
              ? "  let p64 = to_i64_$pid(pid_load(bs));\n"
                "  let pos = select(cache_rows() - 1u, w64_as_u32(p64), w64_in_range(p64, cache_rows()));\n"
              : "  let pos = min(u32(max(select(past + i32(s), 1, first() == 1u && i32(s) >= total), 0)), cache_rows() - 1u);\n";
  body += "  let half = rot() / 2u;\n";
  body += gp.interleaved ? "  let kk = h / 2u;\n  let lead = h % 2u == 0u;\n  let j = select(h - 1u, h + 1u, lead);\n"
                         : "  let lead = h < half;\n  let kk = select(h - half, h, lead);\n"
                           "  let j = select(h - half, h + half, lead);\n";
  body += "  let c = cs_load(pos * half + kk);\n"
          "  let sv = sn_load(pos * half + kk);\n"
          "  let xi = query_load(src);\n"
          "  let xj = query_load(src - h + j);\n"
          "  q_store(gi, select(xi * c + xj * sv, xi * c - xj * sv, lead));\n";
  p.body(body);
  ctx.dispatch(p, std::move(binds));
}

Layout layout(uint32_t s_row, uint32_t s_col, std::vector<uint32_t> s_batch) {
  Layout l;
  l.strided = true;
  l.s_row = s_row;
  l.s_col = s_col;
  l.s_batch = std::move(s_batch);
  return l;
}

void group_query_attention(GpuKernelContext& ctx) {
  if (ctx.num_inputs() < 7 || !ctx.has_input(6)) ctx.fail("input 6 (total_sequence_length) is required");
  // total_sequence_length: known before the run (a constant, a folded value or a graph input, which keys the
  // plan), or computed on the GPU (ONNX Runtime's builder derives it from the attention mask for graph
  // capture): then every program reads it at run time (ops::kGqaTotalAtRunTime).
  const GpuValueInfo& tv = ctx.input(6);
  int64_t total = ops::kGqaTotalAtRunTime;
  if (tv.constant || tv.runtime_value) {
    const Tensor& tot = ctx.constant(6, "total_sequence_length");
    total = tot.dtype() == DType::Int32 && tot.numel() == 1 ? tot.data<int32_t>()[0] : 0;
  } else {
    if (tv.dtype != DType::Int32 || shape_numel(tv.shape) != 1)
      ctx.fail("total_sequence_length " + std::string(dtype_name(tv.dtype)) + shape_str(tv.shape) + " must be an int32 scalar or [1]");
    if (ctx.has_input(9) || ctx.has_input(10))
      ctx.unsupported("position_ids and attention_bias need total_sequence_length before the run (here it is computed on the GPU)");
  }
  const ops::GqaParams gp = ops::gqa_params(ctx.node, ctx.operands(), total, ctx.fail_fn());
  const int64_t B = gp.batch, S = gp.seq, N = gp.heads, Nkv = gp.kv_heads, H = gp.head_size, P = gp.present_len,
                G = gp.group();
  const DType t = gp.dtype;
  const Shape present{B, Nkv, P, H}, out{B, S, N * H};
  ctx.set_output(0, t, out);
  for (size_t i : {1, 2})
    if (ctx.output_wanted(i)) ctx.set_output(i, t, present);
  if (shape_numel(out) == 0) return;
  const uint64_t present_numel = uint64_t(shape_numel(present));
  const ValueRef pk = ctx.output_wanted(1) ? ctx.out(1) : ctx.temp(t, present);
  const ValueRef pv = ctx.output_wanted(2) ? ctx.out(2) : ctx.temp(t, present);
  // The pasts already in the presents' buffers (a static buffer kept resident: runtime/resident.h).
  const bool in_place = ctx.in_place_input == 3 && gp.has_past && gp.present_len == gp.past_len && ctx.output_wanted(1) &&
                        ctx.output_wanted(2) && shader::type_info(t, ctx.policy).storage_bits >= 32;
  ctx.in_place_done = in_place;
  // Q: the query as it is, or rotated into a temporary of rows N*H.
  Binding q{ctx.in(0), t, uint64_t(shape_numel(ctx.shape(0)))};
  uint32_t row = u32_dim(ctx, gp.query_row(), "a row");
  if (gp.rotary) {
    q = {ctx.temp(t, out), t, uint64_t(shape_numel(out))};
    row = uint32_t(N * H);
  }
  if (!(in_place && gp.rotary && gp.packed && gqa_prepare_in_place(ctx, gp, pk, pv, q.ref))) {
    gqa_present(ctx, gp, false, pk, in_place);
    gqa_present(ctx, gp, true, pv, in_place);
    if (gp.rotary) gqa_rotate_q(ctx, gp, q.ref);
  }
  const uint32_t h = uint32_t(H), g = uint32_t(G), s_q = u32_dim(ctx, S * int64_t(row), "a sequence"),
                 s_y = u32_dim(ctx, S * N * H, "a sequence"), kv_head = u32_dim(ctx, P * H, "a present head"),
                 kv_batch = u32_dim(ctx, Nkv * P * H, "a present");
  attention::Spec spec;
  spec.name = "gqa";
  const bool decode = S == 1;  // the G heads of a KV head as the rows of one batch element
  spec.batch = decode ? Shape{B, Nkv} : Shape{B, Nkv, G};
  spec.Lq = decode ? G : S;
  spec.D = spec.Dv = H;
  spec.Lk = P;
  if (decode) {
    spec.q = {q, layout(h, 1, {s_q, g * h})};
    spec.y = {{ctx.out(0), t, uint64_t(shape_numel(out))}, layout(h, 1, {s_y, g * h})};
    spec.k = {{pk, t, present_numel}, layout(1, h, {kv_batch, kv_head})};
    spec.v = {{pv, t, present_numel}, layout(h, 1, {kv_batch, kv_head})};
  } else {
    spec.q = {q, layout(row, 1, {s_q, g * h, h})};
    spec.y = {{ctx.out(0), t, uint64_t(shape_numel(out))}, layout(uint32_t(N * H), 1, {s_y, g * h, h})};
    spec.k = {{pk, t, present_numel}, layout(1, h, {kv_batch, kv_head, 0})};
    spec.v = {{pv, t, present_numel}, layout(h, 1, {kv_batch, kv_head, 0})};
  }
  spec.extras.push_back({"sl", {ctx.in(5), DType::Int32, uint64_t(B)}});
  spec.uniforms = {{"zdiv", uint32_t(decode ? Nkv : Nkv * G)}, {"S", uint32_t(S)}};
  if (gp.total != ops::kGqaTotalAtRunTime) {
    spec.uniforms.push_back({"first", gp.first_prompt ? 1u : 0u});
  } else {
    spec.extras.push_back({"ts", {ctx.in(6), DType::Int32, 1}});
  }
  spec.uniforms_f32 = {{"scale", gp.scale}, {"softcap", gp.softcap}};
  // Row i's keys (ops::gqa_keys); rows are query positions, or heads of one position when decoding.
  spec.decls =
      "fn window() -> i32 { return " + std::to_string(gp.window) + "; }\n"
      "fn keys_of(z: u32, s: u32) -> vec2<u32> {\n"
      "  let total = sl_load(z / zdiv()) + 1;\n"
      "  let past = select(total - i32(S()), 0, first() == 1u);\n"
      "  let c = past + i32(s) + 1;\n"
      "  let hi = clamp(min(c, total), 0, i32(Lk()));\n"
      "  let lo = select(0, max(c - window(), 0), window() >= 0);\n"
      "  return vec2<u32>(u32(min(lo, hi)), u32(hi));\n"
      "}\n"
      "fn key_range(z: u32, i: u32) -> vec2<u32> { return keys_of(z, " + (decode ? "0u" : "i") + "); }\n"
      "fn block_keys(z: u32, i0: u32, i1: u32) -> vec2<u32> {\n"
      "  let a = key_range(z, i0);\n"
      "  let e = key_range(z, i1);\n"
      "  return vec2<u32>(min(a.x, e.x), max(a.y, e.y));\n"
      "}\n";
  if (gp.total == ops::kGqaTotalAtRunTime) spec.decls += "fn first() -> u32 { return select(0u, 1u, ts_load(0u) == i32(S())); }\n";
  spec.score = "  let x = p * scale();\n";
  spec.score += gp.softcap > 0 ? "  var c = softcap() * tanh_f32(x / softcap());\n" : "  var c = x;\n";
  // Row i's head: a row of head g when decoding, else the batch element is (b, head).
  const std::string head = decode ? "(z % Nkv()) * G() + i" : "z % (Nkv() * G())";
  spec.uniforms.insert(spec.uniforms.end(), {{"Nkv", uint32_t(Nkv)}, {"G", g}, {"total", uint32_t(std::max<int64_t>(gp.total, 0))}});
  if (gp.attention_bias) {
    // [B or 1, N or 1, S, total] read as [B, Nkv, G, S, total] (its head axis split into (kv, g)), or as
    // [B, Nkv, G, total] when decoding (S is 1: the heads are the rows).
    const Shape& a = gp.attention_bias_shape;
    const int64_t akv = a[1] == 1 ? 1 : Nkv, ag = a[1] == 1 ? 1 : G;
    const Shape ashape = decode ? Shape{a[0], akv, ag, a[3]} : Shape{a[0], akv, ag, a[2], a[3]};
    spec.inputs.push_back({"ab", {ctx.in(10), t, uint64_t(shape_numel(a))}, strided::broadcast(ctx, ashape, spec.batch), "f32",
                           "total()"});
    spec.score += "  if (j < total()) { c = c + ab; }\n";
  }
  spec.score += "  return c;\n";
  if (gp.head_sink) {
    spec.extras.push_back({"hs", {ctx.in(11), t, uint64_t(N)}});
    spec.decls += "fn sink_of(z: u32, i: u32) -> f32 { return hs_load(" + head + "); }\n";
  } else if (gp.smooth) {
    spec.decls += "fn sink_of(z: u32, i: u32) -> f32 { return 0.0; }\n";
  }
  spec.sink = gp.smooth || gp.head_sink;
  spec.key_range = true;
  spec.empty_rows_zero = true;
  spec.split = decode;
  attention::emit(ctx, spec);
}

// ---- Helpers of MultiHeadAttention and Attention

// Where the new keys (or values) of a present come from: input `input`, [B, L, N * Hx] (3-D) or
// [B, N, L, Hx], plus a bias (input `bias`, elements from `bias_offset` on) when bias >= 0.
struct NewRows {
  size_t input;
  bool bnsh;
  int bias = -1;
  int64_t bias_offset = 0;
};

// present [B, N, P + L, Hx]: the past (input `past`, [B, N, P, Hx], when >= 0) then the new rows.
void write_present(GpuKernelContext& ctx, const std::string& name, DType t, int64_t B, int64_t N, int64_t P, int64_t L,
                   int64_t Hx, int past, const NewRows& src, ValueRef out) {
  const Shape present{B, N, P + L, Hx};
  auto p = ctx.program(name);
  std::vector<ValueRef> binds;
  if (past >= 0) {
    p.input("past", t, ctx.shape(size_t(past)));
    binds.push_back(ctx.in(size_t(past)));
  }
  p.input("x", t, ctx.shape(src.input));
  binds.push_back(ctx.in(src.input));
  if (src.bias >= 0) {
    p.input("bias", t, ctx.shape(size_t(src.bias)));
    binds.push_back(ctx.in(size_t(src.bias)));
  }
  p.output("y", t, present);
  binds.push_back(out);
  p.uniform("N", u32_dim(ctx, N, "the heads"));
  p.uniform("npast", u32_dim(ctx, P, "the past's length"));
  p.uniform("L", u32_dim(ctx, L, "the new length"));
  p.uniform("Hx", u32_dim(ctx, Hx, "the head size"));
  p.uniform("boff", u32_dim(ctx, src.bias_offset, "the bias offset"));
  p.set_threads(uint64_t(u32_dim(ctx, shape_numel(present), "the present")));
  std::string body =
      "  let c = gi % Hx();\n"
      "  let t = (gi / Hx()) % (npast() + L());\n"
      "  let bn = gi / Hx() / (npast() + L());\n";
  if (past >= 0)
    body += "  if (t < npast()) { " + shader::move_element("y", "gi", "past", "(bn * npast() + t) * Hx() + c") + " return; }\n";
  body += "  let j = t - npast();\n";
  body += src.bnsh ? "  let at = (bn * L() + j) * Hx() + c;\n"
                   : "  let at = ((bn / N()) * L() + j) * N() * Hx() + (bn % N()) * Hx() + c;\n";
  body += src.bias >= 0 ? "  y_store(gi, x_load(at) + bias_load(boff() + (bn % N()) * Hx() + c));\n"
                        : "  " + shader::move_element("y", "gi", "x", "at") + "\n";
  p.body(body);
  ctx.dispatch(p, std::move(binds));
}

// The strides of a [B, heads, len, h] tensor read as rows (len) of a matrix over batch [B, heads]:
// BNSH, or BSNH (3-D [B, len, heads * h]).
struct HeadLayout {
  uint32_t s_b, s_n, s_len;  // strides of batch, head and position; elements of one head are contiguous
};
HeadLayout head_layout(const GpuKernelContext& ctx, int64_t heads, int64_t len, int64_t h, bool bnsh) {
  if (bnsh) return {u32_dim(ctx, heads * len * h, "a stride"), u32_dim(ctx, len * h, "a stride"), u32_dim(ctx, h, "a stride")};
  return {u32_dim(ctx, heads * len * h, "a stride"), u32_dim(ctx, h, "a stride"), u32_dim(ctx, heads * h, "a stride")};
}

// ---- MultiHeadAttention

// Q plus its bias into `out` [B, S, D].
void add_q_bias(GpuKernelContext& ctx, const ops::MhaParams& mp, ValueRef out) {
  auto p = ctx.program("q_bias");
  p.input("x", mp.dtype, ctx.shape(0));
  p.input("bias", mp.dtype, ctx.shape(3));
  p.output("y", mp.dtype, ctx.shape(0));
  p.uniform("D", u32_dim(ctx, mp.hidden(), "the hidden size"));
  p.set_threads(uint64_t(u32_dim(ctx, shape_numel(ctx.shape(0)), "the query")));
  p.body("  y_store(gi, x_load(gi) + bias_load(gi % D()));\n");
  ctx.dispatch(p, {ctx.in(0), ctx.in(3), out});
}

void multi_head_attention(GpuKernelContext& ctx) {
  const ops::MhaParams mp = ops::mha_params(ctx.node, ctx.operands(), ctx.fail_fn());
  const int64_t B = mp.batch, S = mp.seq, N = mp.heads, H = mp.head_size, Hv = mp.v_head_size, L = mp.kv_seq,
                P = mp.past_len, T = mp.total;
  const DType t = mp.dtype;
  const Shape out{B, S, mp.v_hidden()}, pks{B, N, T, H}, pvs{B, N, T, Hv};
  ctx.set_output(0, t, out);
  if (ctx.output_wanted(1)) ctx.set_output(1, t, pks);
  if (ctx.output_wanted(2)) ctx.set_output(2, t, pvs);
  if (shape_numel(out) == 0) return;
  if (T == 0) ctx.unsupported("no keys");
  // K and V: the presents (written when wanted, or when a past or a bias makes them differ from the
  // inputs), else the inputs as they are.
  const bool via_present = mp.past || mp.bias;
  attention::Spec spec;
  spec.name = "mha";
  spec.split = true;  // a decode step's few rows over many keys
  spec.batch = {B, N};
  spec.Lq = S;
  spec.D = H;
  spec.Lk = T;
  spec.Dv = Hv;
  for (int kv = 0; kv < 2; ++kv) {
    const size_t o = size_t(1 + kv);
    const int64_t hx = kv ? Hv : H;
    const Shape& shape = kv ? pvs : pks;
    ValueRef dst{};
    if (ctx.output_wanted(o) || via_present) {
      dst = ctx.output_wanted(o) ? ctx.out(o) : ctx.temp(t, shape);
      write_present(ctx, kv ? "present_value" : "present_key", t, B, N, P, L, hx, mp.past ? int(6 + kv) : -1,
                    {o, mp.bnsh_kv, mp.bias ? 3 : -1, kv ? 2 * mp.hidden() : mp.hidden()}, dst);
    }
    HeadLayout hl = via_present ? head_layout(ctx, N, T, hx, true) : head_layout(ctx, N, L, hx, mp.bnsh_kv);
    attention::Binding bind = via_present ? attention::Binding{dst, t, uint64_t(shape_numel(shape))}
                                          : attention::Binding{ctx.in(o), t, uint64_t(shape_numel(ctx.shape(o)))};
    attention::Matrix& m = kv ? spec.v : spec.k;
    m.t = bind;
    m.layout = kv ? layout(hl.s_len, 1, {hl.s_b, hl.s_n}) : layout(1, hl.s_len, {hl.s_b, hl.s_n});
  }
  attention::Binding q{ctx.in(0), t, uint64_t(shape_numel(ctx.shape(0)))};
  if (mp.bias) {
    q.ref = ctx.temp(t, ctx.shape(0));
    add_q_bias(ctx, mp, q.ref);
  }
  const HeadLayout ql = head_layout(ctx, N, S, H, false), yl = head_layout(ctx, N, S, Hv, false);
  spec.q = {q, layout(ql.s_len, 1, {ql.s_b, ql.s_n})};
  spec.y = {{ctx.out(0), t, uint64_t(shape_numel(out))}, layout(yl.s_len, 1, {yl.s_b, yl.s_n})};
  spec.uniforms = {{"N", uint32_t(N)}, {"npast", uint32_t(P)}};
  spec.uniforms_f32 = {{"scale", mp.scale}, {"mfv", mp.mask_filter_value}};
  spec.score = "  var x = p * scale();\n";
  if (mp.mask == ops::MhaParams::Mask::Lengths) {
    spec.extras.push_back({"kl", {ctx.in(4), DType::Int32, uint64_t(B)}});
    spec.score += "  if (i32(j) >= kl_load(z / N())) { x = x + mfv(); }\n";
  } else if (mp.mask == ops::MhaParams::Mask::Keys) {
    spec.inputs.push_back({"km", {ctx.in(4), DType::Int32, uint64_t(B * T)}, strided::broadcast(ctx, {B, 1, 1, T}, spec.batch), "i32", "Lk()"});
    spec.score += "  if (km == 0) { x = x + mfv(); }\n";
  }
  if (mp.causal) spec.score += "  if (j > npast() + i) { x = x + mfv(); }\n";
  if (mp.attention_bias) {
    spec.inputs.push_back({"ab", {ctx.in(5), t, uint64_t(shape_numel(mp.attention_bias_shape))},
                           strided::broadcast(ctx, mp.attention_bias_shape, spec.batch), "f32", "Lk()"});
    spec.score += "  x = x + ab;\n";
  }
  spec.score += "  return x;\n";
  attention::emit(ctx, spec);
}

// ---- Attention (ONNX)

// qk_matmul_output [B, Nq, S, T]: per row, the scores as its mode asks (see ops/attention.h), from Q
// and the keys as the attention reads them.
void qk_output(GpuKernelContext& ctx, const ops::OnnxAttentionParams& ap, const attention::Spec& spec) {
  const Shape qs{ap.batch, ap.q_heads, ap.seq, ap.total};
  ctx.set_output(3, ap.dtype, qs);
  auto p = ctx.program("qk_output");
  p.input("q", spec.q.t.dtype, Shape{int64_t(spec.q.t.numel)});
  p.input("k", spec.k.t.dtype, Shape{int64_t(spec.k.t.numel)});
  std::vector<ValueRef> binds{spec.q.t.ref, spec.k.t.ref};
  for (const auto& x : spec.extras) {
    p.input(x.name, x.t.dtype, Shape{int64_t(x.t.numel)});
    binds.push_back(x.t.ref);
  }
  for (const auto& x : spec.inputs) {
    p.input(x.name + "_in", x.t.dtype, Shape{int64_t(x.t.numel)});
    binds.push_back(x.t.ref);
  }
  p.output("o", ap.dtype, qs);
  binds.push_back(ctx.out(3));
  p.uniform("Lq", uint32_t(spec.Lq));
  p.uniform("Lk", uint32_t(spec.Lk));
  p.uniform("D", uint32_t(spec.D));
  for (const auto& [n, v] : spec.uniforms) p.uniform(n, v);
  for (const auto& [n, v] : spec.uniforms_f32) p.uniform_f32(n, v);
  std::vector<std::pair<std::string, const Layout*>> layouts{{"q", &spec.q.layout}, {"k", &spec.k.layout}};
  for (const auto& x : spec.inputs) layouts.emplace_back(x.name, &x.layout);
  strided::declare(p, spec.batch, layouts);
  // The score function of the attention, and the product it takes.
  std::string params, args;
  for (const auto& x : spec.inputs) {
    params += ", " + x.name + ": " + x.type;
    args += ", " + x.name + "_in_load(" + x.name + "_boff(z) + i * " + x.name + "_sr() + j * " + x.name + "_sc())";
  }
  p.declare(spec.decls + "fn score(p: f32, z: u32, i: u32, j: u32" + params + ") -> f32 {\n" + spec.score + "}\n" +
            "fn score_at(z: u32, i: u32, j: u32) -> f32 {\n"
            "  let kr = key_range(z, i);\n"
            "  var dot = 0.0;\n"
            "  for (var c = 0u; c < D(); c = c + 1u) {\n"
            "    dot = dot + q_load(q_boff(z) + i * q_sr() + c * q_sc()) * k_load(k_boff(z) + c * k_sr() + j * k_sc());\n"
            "  }\n"
            "  let x = score(dot, z, i, j" + args + ");\n"
            "  return select(-f32_inf(), x, j >= kr.x && j < kr.y);\n"
            "}\n"
            "fn capped(z: u32, i: u32, j: u32) -> f32 {\n"
            "  var dot = 0.0;\n"
            "  for (var c = 0u; c < D(); c = c + 1u) {\n"
            "    dot = dot + q_load(q_boff(z) + i * q_sr() + c * q_sc()) * k_load(k_boff(z) + c * k_sr() + j * k_sc());\n"
            "  }\n"
            "  let x = dot * scale();\n"
            "  return select(x, softcap() * tanh_f32(x / softcap()), softcap() > 0.0);\n"
            "}\n");
  // One invocation per row: z (the attention's batch element), i (its query row); the row's output
  // position is (b, n = kv * G + g, s).
  const uint64_t rows = uint64_t(shape_numel(spec.batch)) * uint64_t(spec.Lq);
  p.set_threads(rows);
  std::string body =
      "  let z = gi / Lq();\n"
      "  let i = gi % Lq();\n"
      "  let orow = gi * Lk();\n";  // [B, Nkv, G] x S rows are [B, Nq] x S rows in order
  if (ap.qk_mode == 3)
    body += "  var m = -f32_inf();\n"
            "  for (var j = 0u; j < Lk(); j = j + 1u) { m = max(m, score_at(z, i, j)); }\n"
            "  var sum = 0.0;\n"
            "  if (m != -f32_inf()) { for (var j = 0u; j < Lk(); j = j + 1u) { sum = sum + exp_f32(score_at(z, i, j) - m); } }\n"
            "  for (var j = 0u; j < Lk(); j = j + 1u) {\n"
            "    o_store(orow + j, select(0.0, exp_f32(score_at(z, i, j) - m) / sum, sum > 0.0));\n"
            "  }\n";
  else if (ap.qk_mode == 2)
    body += "  for (var j = 0u; j < Lk(); j = j + 1u) { o_store(orow + j, score_at(z, i, j)); }\n";
  else
    body += "  for (var j = 0u; j < Lk(); j = j + 1u) { o_store(orow + j, capped(z, i, j)); }\n";
  p.body(body);
  ctx.dispatch(p, std::move(binds));
}

void onnx_attention(GpuKernelContext& ctx) {
  const ops::OnnxAttentionParams ap = ops::onnx_attention_params(ctx.node, ctx.opset, ctx.operands(), ctx.fail_fn());
  const int64_t B = ap.batch, Nq = ap.q_heads, Nkv = ap.kv_heads, S = ap.seq, L = ap.kv_seq, H = ap.head_size,
                Hv = ap.v_head_size, P = ap.past_len, T = ap.total, G = ap.group();
  const DType t = ap.dtype;
  const Shape y = ap.three_d ? Shape{B, S, Nq * Hv} : Shape{B, Nq, S, Hv}, pks{B, Nkv, T, H}, pvs{B, Nkv, T, Hv};
  ctx.set_output(0, t, y);
  if (ctx.output_wanted(1)) ctx.set_output(1, t, pks);
  if (ctx.output_wanted(2)) ctx.set_output(2, t, pvs);
  if (ap.qk_output) ctx.set_output(3, t, {B, Nq, S, T});
  if (shape_numel(y) == 0) return;
  if (T == 0) ctx.unsupported("no keys");
  attention::Spec spec;
  spec.name = "attention";
  // The G query heads of a KV head: G rows of one batch element when decoding (one query: its keys
  // staged once for all of them, split over workgroups), else S rows each.
  const bool decode = S == 1;
  spec.batch = decode ? Shape{B, Nkv} : Shape{B, Nkv, G};
  spec.Lq = decode ? G : S;
  spec.D = H;
  spec.Lk = T;
  spec.Dv = Hv;
  spec.split = decode;
  auto kv_batch = [&](const HeadLayout& hl) {
    return decode ? std::vector<uint32_t>{hl.s_b, hl.s_n} : std::vector<uint32_t>{hl.s_b, hl.s_n, 0};
  };
  for (int kv = 0; kv < 2; ++kv) {
    const size_t o = size_t(1 + kv);
    const int64_t hx = kv ? Hv : H;
    const Shape& shape = kv ? pvs : pks;
    ValueRef dst{};
    if (ctx.output_wanted(o) || ap.past) {
      dst = ctx.output_wanted(o) ? ctx.out(o) : ctx.temp(t, shape);
      write_present(ctx, kv ? "present_value" : "present_key", t, B, Nkv, P, L, hx, ap.past ? int(4 + kv) : -1,
                    {o, !ap.three_d}, dst);
    }
    HeadLayout hl = ap.past ? head_layout(ctx, Nkv, T, hx, true) : head_layout(ctx, Nkv, L, hx, !ap.three_d);
    attention::Binding bind = ap.past ? attention::Binding{dst, t, uint64_t(shape_numel(shape))}
                                      : attention::Binding{ctx.in(o), t, uint64_t(shape_numel(ctx.shape(o)))};
    attention::Matrix& m = kv ? spec.v : spec.k;
    m.t = bind;
    m.layout = kv ? layout(hl.s_len, 1, kv_batch(hl)) : layout(1, hl.s_len, kv_batch(hl));
  }
  const HeadLayout ql = head_layout(ctx, Nq, S, H, !ap.three_d), yl = head_layout(ctx, Nq, S, Hv, !ap.three_d);
  const uint32_t g = uint32_t(G);
  auto q_layout = [&](const HeadLayout& hl) {  // rows are heads when decoding
    return decode ? layout(hl.s_n, 1, {hl.s_b, g * hl.s_n}) : layout(hl.s_len, 1, {hl.s_b, g * hl.s_n, hl.s_n});
  };
  spec.q = {{ctx.in(0), t, uint64_t(shape_numel(ctx.shape(0)))}, q_layout(ql)};
  spec.y = {{ctx.out(0), t, uint64_t(shape_numel(y))}, q_layout(yl)};
  spec.uniforms = {{"zdiv", uint32_t(decode ? Nkv : Nkv * G)}, {"S", uint32_t(S)}, {"npast", uint32_t(P)}, {"MK", uint32_t(ap.mask_keys)}};
  spec.uniforms_f32 = {{"scale", ap.scale}, {"softcap", ap.softcap}};
  // The keys a row sees: causal (offset P, or nonpad_kv_seqlen[b] - S) and within nonpad_kv_seqlen.
  std::string nonpad = "i32(Lk())";
  if (ap.nonpad) {
    spec.extras.push_back({"np", {ctx.in(6), DType::Int64, uint64_t(B)}});
    const std::string fam = shader::type_info(DType::Int64, ctx.policy).family;
    // Sequence b's valid keys, saturated to +-2^30 (beyond any key count or offset that matters).
    spec.decls += "fn nonpad(b: u32) -> i32 {\n"
                  "  let w = to_i64_" + fam + "(np_load(b));\n"
                  "  if (!w64_fits_i32(w)) { return select(1073741824, -1073741824, w64_is_neg(w)); }\n"
                  "  return clamp(w64_as_i32(w), -1073741824, 1073741824);\n"
                  "}\n";
    nonpad = "min(nonpad(b), i32(Lk()))";
  }
  const std::string offset = ap.past ? "i32(npast())" : ap.nonpad ? "nonpad(b) - i32(S())" : "0";
  spec.decls += "fn keys_of(z: u32, s: u32) -> vec2<u32> {\n"
                "  let b = z / zdiv();\n"
                "  let c = i32(s) + " + offset + ";\n"
                "  var hi = " + nonpad + ";\n"
                "  var lo = 0;\n" +
                (ap.causal ? "  hi = min(hi, c + 1);\n" : "") +
                (ap.right_window >= 0 ? "  hi = min(hi, c + " + std::to_string(ap.right_window) + " + 1);\n" : "") +
                (ap.left_window >= 0 ? "  lo = max(lo, c - " + std::to_string(ap.left_window) + ");\n" : "") +
                "  hi = max(hi, 0);\n"
                "  return vec2<u32>(u32(min(lo, hi)), u32(hi));\n"
                "}\n"
                "fn key_range(z: u32, i: u32) -> vec2<u32> { return keys_of(z, " + (decode ? "0u" : "i") + "); }\n"
                "fn block_keys(z: u32, i0: u32, i1: u32) -> vec2<u32> {\n"
                "  let a = key_range(z, i0);\n  let e = key_range(z, i1);\n"
                "  return vec2<u32>(min(a.x, e.x), max(a.y, e.y));\n"
                "}\n";
  spec.key_range = true;
  spec.score = "  let x = p * scale();\n"
               "  var c = select(x, softcap() * tanh_f32(x / softcap()), softcap() > 0.0);\n";
  if (ap.mask != ops::OnnxAttentionParams::Mask::None) {
    Shape m4(4 - ap.mask_shape.size(), 1);
    m4.insert(m4.end(), ap.mask_shape.begin(), ap.mask_shape.end());
    // The mask over [B, Nq, S, M] read as [B, Nkv, G, S, M] (its head axis split into (kv, g)), or
    // as [B, Nkv, G, M] when decoding (S is 1: the heads are the rows).
    const int64_t mkv = m4[1] == 1 ? 1 : Nkv, mg = m4[1] == 1 ? 1 : G;
    const Shape mshape = decode ? Shape{m4[0], mkv, mg, m4[3]} : Shape{m4[0], mkv, mg, m4[2], m4[3]};
    Layout ml = strided::broadcast(ctx, mshape, spec.batch);
    const bool is_bool = ap.mask == ops::OnnxAttentionParams::Mask::Bool;
    spec.inputs.push_back({"am", {ctx.in(3), is_bool ? DType::Bool : t, uint64_t(shape_numel(ap.mask_shape))}, ml,
                           is_bool ? "u32" : "f32", "MK()"});
    spec.score += "  if (j >= MK()) { return -f32_inf(); }\n";
    spec.score += is_bool ? "  if (am == 0u) { return -f32_inf(); }\n" : "  c = c + am;\n";
  }
  spec.score += "  return c;\n";
  spec.empty_rows_zero = true;
  attention::emit(ctx, spec);
  if (ap.qk_output) qk_output(ctx, ap, spec);
}

}  // namespace

void register_attention_ops(GpuKernelRegistry& r) {
  r.add("GroupQueryAttention", group_query_attention, ir::kMsDomain);
  r.add("MultiHeadAttention", multi_head_attention, ir::kMsDomain);
  r.add("Attention", onnx_attention);
}

}  // namespace onnxgpu::webgpu
