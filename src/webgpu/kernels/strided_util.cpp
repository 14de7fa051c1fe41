#include "webgpu/kernels/strided_util.h"

namespace onnxgpu::webgpu::strided {

uint32_t u32_dim(const GpuKernelContext& ctx, int64_t v, const char* what) {
  if (v < 0 || v > int64_t(0xffffffffu)) ctx.unsupported(std::string(what) + " does not fit 32-bit GPU indexing");
  return uint32_t(v);
}

Shape permute_shape(const GpuKernelContext& ctx, const Shape& s, const std::vector<int64_t>& perm) {
  if (perm.empty()) return s;
  if (perm.size() != s.size()) ctx.unsupported("a folded Transpose of another rank");
  Shape out;
  for (int64_t d : perm) {
    if (d < 0 || size_t(d) >= s.size()) ctx.unsupported("a folded Transpose with an invalid perm");
    out.push_back(s[size_t(d)]);
  }
  return out;
}

Layout permuted(const GpuKernelContext& ctx, const Shape& x, const std::vector<int64_t>& perm, const Shape& op_batch,
                const Shape& batch) {
  size_t r = x.size();
  std::vector<uint64_t> xs(r, 1), ls(r);
  for (size_t d = r - 1; d-- > 0;) xs[d] = xs[d + 1] * uint64_t(x[d + 1]);
  for (size_t j = 0; j < r; ++j) ls[j] = xs[perm.empty() ? j : size_t(perm[j])];
  auto u32 = [&](uint64_t v) { return u32_dim(ctx, int64_t(v), "a stride"); };
  Layout l;
  l.strided = true;
  l.s_row = u32(ls[r - 2]);
  l.s_col = u32(ls[r - 1]);
  size_t lead = batch.size() - op_batch.size();
  for (size_t j = 0; j < batch.size(); ++j)
    l.s_batch.push_back(j < lead || op_batch[j - lead] == 1 ? 0u : u32(ls[j - lead]));
  return l;
}

Layout written(const GpuKernelContext& ctx, const Shape& out, const std::vector<int64_t>& perm, const Shape& batch) {
  if (perm.empty()) return permuted(ctx, out, {}, batch, batch);
  std::vector<int64_t> inverse(perm.size());
  for (size_t j = 0; j < perm.size(); ++j) inverse[size_t(perm[j])] = int64_t(j);
  return permuted(ctx, permute_shape(ctx, out, perm), inverse, batch, batch);
}

Layout broadcast(const GpuKernelContext& ctx, const Shape& x, const Shape& batch) {
  size_t r = batch.size() + 2;
  if (x.size() > r) ctx.unsupported("a tensor of rank " + std::to_string(x.size()) + " broadcast to rank " + std::to_string(r));
  Shape padded(r - x.size(), 1);
  padded.insert(padded.end(), x.begin(), x.end());
  std::vector<uint64_t> xs(r, 1);
  for (size_t d = r - 1; d-- > 0;) xs[d] = xs[d + 1] * uint64_t(padded[d + 1]);
  auto at = [&](size_t d) { return padded[d] == 1 ? 0u : u32_dim(ctx, int64_t(xs[d]), "a stride"); };
  Layout l;
  l.strided = true;
  l.s_row = at(r - 2);
  l.s_col = at(r - 1);
  for (size_t j = 0; j < batch.size(); ++j) l.s_batch.push_back(at(j));
  return l;
}

void declare(shader::Program& p, const Shape& batch, const std::vector<std::pair<std::string, const Layout*>>& layouts) {
  bool any = false;
  for (const auto& [x, l] : layouts) any |= l && l->strided;
  if (!any) return;
  for (size_t j = 0; j < batch.size(); ++j) p.uniform("bd" + std::to_string(j), uint32_t(batch[j]));
  for (const auto& [x, l] : layouts) {
    if (!l || !l->strided) continue;
    p.uniform(x + "_sr", l->s_row);
    p.uniform(x + "_sc", l->s_col);
    std::string f = "fn " + x + "_boff(z: u32) -> u32 {\n  var t = z;\n  var r = 0u;\n";
    for (size_t j = batch.size(); j-- > 0;) {
      p.uniform(x + "_bs" + std::to_string(j), l->s_batch[j]);
      f += "  r = r + (t % bd" + std::to_string(j) + "()) * " + x + "_bs" + std::to_string(j) + "();\n  t = t / bd" +
           std::to_string(j) + "();\n";
    }
    p.declare(f + "  return r;\n}\n");
  }
}

}  // namespace onnxgpu::webgpu::strided
