// RotaryEmbedding on the GPU: ONNX Runtime's (com.microsoft) and ONNX's (opset 23); see ops/rotary.h.
// One invocation per element, in f32 (float16 and bfloat16 are loaded into f32 and stored back; float64
// arithmetic is refused by the shader layer: those nodes run on the CPU). The position ids are read on
// the GPU at run time through their family's to_i64 (so a replay takes new positions); a position
// outside the caches is flagged (the run fails naming the node and the position) and its element is
// not written. Elements past the rotary dim are moved bit for bit.
#include "ops/rotary.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu {

namespace {

void rotary(GpuKernelContext& ctx) {
  using Rows = ops::RotaryParams::Rows;
  const ops::RotaryParams rp = ops::rotary_params(ctx.node, ctx.opset, ctx.operands(), ctx.fail_fn());
  const Shape& xs = ctx.shape(0);
  const DType t = ctx.dtype(0);
  ctx.set_output(0, t, xs);
  using strided::u32_dim;
  u32_dim(ctx, shape_numel(xs), "the input");
  u32_dim(ctx, shape_numel(ctx.shape(rp.cos_input)), "the caches");
  auto p = ctx.program("rotary");
  p.input("x", t, xs);
  std::vector<ValueRef> binds{ctx.in(0)};
  if (rp.rows != Rows::Direct) {
    p.input("pos", ctx.dtype(rp.position_input), ctx.shape(rp.position_input));
    binds.push_back(ctx.in(rp.position_input));
  }
  p.input("cs", t, ctx.shape(rp.cos_input));
  p.input("sn", t, ctx.shape(rp.sin_input));
  p.output("y", t, xs);
  binds.insert(binds.end(), {ctx.in(rp.cos_input), ctx.in(rp.sin_input), ctx.out(0)});
  p.uniform("head_size", u32_dim(ctx, rp.head_size, "head_size"));
  p.uniform("heads", u32_dim(ctx, rp.heads, "heads"));
  p.uniform("seq", u32_dim(ctx, rp.seq, "seq"));
  p.uniform("rot", u32_dim(ctx, rp.rotary_dim, "rotary_dim"));
  p.uniform("cache_rows", u32_dim(ctx, rp.cache_rows, "cache_rows"));
  p.set_threads(uint64_t(shape_numel(xs)));
  std::string body =
      "  let h = gi % head_size();\n"
      "  if (h >= rot()) { " + shader::move_element("y", "gi", "x", "gi") + " return; }\n"
      "  let tok = gi / head_size();\n";
  body += rp.heads_first ? "  let s = tok % seq();\n  let b = tok / seq() / heads();\n"
                         : "  let s = (tok / heads()) % seq();\n  let b = tok / heads() / seq();\n";
  switch (rp.rows) {
    case Rows::Direct: body += "  let r = b * seq() + s;\n"; break;
    case Rows::Offset: body += "  let r64 = w64_add(to_i64_$pos(pos_load(0u)), w64_from_u32(s));\n"; break;
    case Rows::PerToken: body += "  let r64 = to_i64_$pos(pos_load(b * seq() + s));\n"; break;
  }
  if (rp.rows != Rows::Direct)
    body += "  if (!w64_in_range(r64, cache_rows())) { flag_index(r64); return; }\n"
            "  let r = w64_as_u32(r64);\n";
  body += "  let half = rot() / 2u;\n";
  body += rp.interleaved ? "  let k = h / 2u;\n  let first = h % 2u == 0u;\n  let j = select(h - 1u, h + 1u, first);\n"
                         : "  let first = h < half;\n  let k = select(h - half, h, first);\n"
                           "  let j = select(h - half, h + half, first);\n";
  body +=
      "  let c = cs_load(r * half + k);\n"
      "  let sv = sn_load(r * half + k);\n"
      "  let xi = x_load(gi);\n"
      "  let xj = x_load(gi - h + j);\n"
      "  y_store(gi, select(xi * c + xj * sv, xi * c - xj * sv, first));\n";
  p.body(body);
  ctx.dispatch(p, std::move(binds));
}

}  // namespace

void register_rotary(GpuKernelRegistry& r) {
  r.add("RotaryEmbedding", rotary);
  r.add("RotaryEmbedding", rotary, ir::kMsDomain);
}

}  // namespace onnxgpu::webgpu
