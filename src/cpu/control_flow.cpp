// If, Loop, Scan: their bodies are subgraphs run through KernelContext::run_subgraph, which lets them
// read values of the enclosing scopes.
#include <algorithm>
#include <cstring>

#include "cpu/kernel.h"

namespace onnxgpu::cpu {

namespace {

// Element `index` of `t` along `axis`, with that axis removed.
Tensor take_along(const Tensor& t, int64_t axis, int64_t index) {
  Shape out_shape = t.shape();
  out_shape.erase(out_shape.begin() + axis);
  Tensor out(t.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  size_t es = dtype_size(t.dtype()), block = size_t(inner) * es;
  auto* dst = static_cast<std::byte*>(out.raw());
  auto* src = static_cast<const std::byte*>(t.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * block, src + (o * t.dim(axis) + index) * block, block);
  return out;
}

// Stacks equally shaped tensors along a new axis `axis`.
Tensor stack(const std::vector<Tensor>& parts, int64_t axis, const KernelContext& ctx) {
  const Tensor& first = parts.front();
  for (const auto& p : parts)
    if (p.shape() != first.shape() || p.dtype() != first.dtype())
      ctx.fail("scan output changes from " + first.describe() + " to " + p.describe() + " between iterations");
  Shape shape = first.shape();
  shape.insert(shape.begin() + axis, int64_t(parts.size()));
  Tensor out(first.dtype(), shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= first.dim(d);
  for (int64_t d = axis; d < first.rank(); ++d) inner *= first.dim(d);
  size_t block = size_t(inner) * dtype_size(first.dtype());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < parts.size(); ++k)
      std::memcpy(dst + (o * int64_t(parts.size()) + int64_t(k)) * block,
                  static_cast<const std::byte*>(parts[k].raw()) + o * block, block);
  return out;
}

bool scalar_bool(const Tensor& t, const KernelContext& ctx, const char* what) {
  if (t.numel() != 1) ctx.fail(std::string(what) + " must have exactly one element, got " + t.describe());
  return t.double_at(0) != 0;
}

std::vector<Tensor> if_kernel(KernelContext& ctx) {
  bool cond = scalar_bool(ctx.input(0), ctx, "input 'cond'");
  const ir::Graph* branch = ctx.node.attr_graph(cond ? "then_branch" : "else_branch");
  if (!branch) ctx.fail(std::string("missing attribute ") + (cond ? "then_branch" : "else_branch"));
  std::vector<Tensor> outs = ctx.run_subgraph(*branch, {});
  if (outs.size() != ctx.num_outputs())
    ctx.fail("branch returns " + std::to_string(outs.size()) + " values, the node has " +
             std::to_string(ctx.num_outputs()) + " outputs");
  return outs;
}

std::vector<Tensor> loop_kernel(KernelContext& ctx) {
  const ir::Graph* body = ctx.node.attr_graph("body");
  if (!body) ctx.fail("missing attribute 'body'");
  int64_t max_trips = ctx.has_input(0) ? ctx.input(0).int_at(0) : INT64_MAX;
  bool cond = ctx.has_input(1) ? scalar_bool(ctx.input(1), ctx, "input 'cond'") : true;
  std::vector<Tensor> carried;
  for (size_t i = 2; i < ctx.num_inputs(); ++i) carried.push_back(ctx.input(i));
  size_t n_carried = carried.size();
  if (body->outputs.size() < 1 + n_carried)
    ctx.fail("body has " + std::to_string(body->outputs.size()) + " outputs, needs at least " + std::to_string(1 + n_carried));
  size_t n_scan = body->outputs.size() - 1 - n_carried;
  std::vector<std::vector<Tensor>> scans(n_scan);
  constexpr int64_t kMaxIterations = int64_t(1) << 31;  // a guard against runaway loops
  for (int64_t it = 0; it < max_trips && cond; ++it) {
    if (it >= kMaxIterations) ctx.fail("loop ran more than 2^31 iterations");
    std::vector<Tensor> in{Tensor::scalar<int64_t>(it), Tensor::scalar<bool>(cond)};
    in.insert(in.end(), carried.begin(), carried.end());
    std::vector<Tensor> out = ctx.run_subgraph(*body, in);
    cond = scalar_bool(out[0], ctx, "body output 'cond'");
    for (size_t i = 0; i < n_carried; ++i) carried[i] = out[1 + i];
    for (size_t i = 0; i < n_scan; ++i) scans[i].push_back(out[1 + n_carried + i]);
  }
  std::vector<Tensor> result = carried;
  for (size_t i = 0; i < n_scan; ++i) {
    if (scans[i].empty()) {  // no iteration: an empty tensor of the declared type
      const ir::ValueInfo& decl = body->outputs[1 + n_carried + i];
      Shape s{0};
      for (const auto& d : decl.dims) s.push_back(d.concrete() ? d.value : 0);
      result.push_back(Tensor(decl.dtype == DType::Undefined ? DType::Float32 : decl.dtype, s));
    } else {
      result.push_back(stack(scans[i], 0, ctx));
    }
  }
  return result;
}

// One scan (opset 9 semantics) over `state` and `scan_in`, returning final states then scan outputs.
std::vector<Tensor> scan_once(KernelContext& ctx, const ir::Graph& body, std::vector<Tensor> state,
                              const std::vector<Tensor>& scan_in, const std::vector<int64_t>& in_axes,
                              const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                              const std::vector<int64_t>& out_dirs, int64_t max_length) {
  size_t n_state = state.size();
  if (body.outputs.size() < n_state) ctx.fail("body has fewer outputs than the scan has states");
  size_t n_scan_out = body.outputs.size() - n_state;
  int64_t length = -1;
  std::vector<int64_t> axes;
  for (size_t j = 0; j < scan_in.size(); ++j) {
    int64_t axis = ctx.normalize_axis(j < in_axes.size() ? in_axes[j] : 0, scan_in[j].rank());
    axes.push_back(axis);
    if (length >= 0 && scan_in[j].dim(axis) != length) ctx.fail("scan inputs have different lengths along their scan axes");
    length = scan_in[j].dim(axis);
  }
  length = std::max<int64_t>(0, std::min(length, max_length));
  std::vector<std::vector<Tensor>> outs(n_scan_out);
  for (int64_t it = 0; it < length; ++it) {
    std::vector<Tensor> in = state;
    for (size_t j = 0; j < scan_in.size(); ++j) {
      int64_t idx = (j < in_dirs.size() && in_dirs[j]) ? length - 1 - it : it;
      in.push_back(take_along(scan_in[j], axes[j], idx));
    }
    std::vector<Tensor> out = ctx.run_subgraph(body, in);
    for (size_t i = 0; i < n_state; ++i) state[i] = out[i];
    for (size_t i = 0; i < n_scan_out; ++i) outs[i].push_back(out[n_state + i]);
  }
  std::vector<Tensor> result = state;
  for (size_t i = 0; i < n_scan_out; ++i) {
    if (outs[i].empty()) ctx.unsupported("Scan with zero iterations and scan outputs");
    if (i < out_dirs.size() && out_dirs[i]) std::reverse(outs[i].begin(), outs[i].end());
    int64_t axis = ctx.normalize_axis(i < out_axes.size() ? out_axes[i] : 0, outs[i][0].rank() + 1);
    result.push_back(stack(outs[i], axis, ctx));
  }
  return result;
}

std::vector<Tensor> scan_kernel(KernelContext& ctx) {
  const ir::Graph* body = ctx.node.attr_graph("body");
  if (!body) ctx.fail("missing attribute 'body'");
  int64_t n_scan_in = ctx.node.attr_int("num_scan_inputs", -1);
  size_t first = ctx.opset < 9 ? 1 : 0;  // Scan-8 starts with the optional sequence_lens
  if (n_scan_in < 0 || first + size_t(n_scan_in) > ctx.num_inputs()) ctx.fail("attribute 'num_scan_inputs' is missing or too large");
  size_t n_state = ctx.num_inputs() - first - size_t(n_scan_in);
  std::vector<Tensor> state, scan_in;
  for (size_t i = 0; i < n_state; ++i) state.push_back(ctx.input(first + i));
  for (int64_t j = 0; j < n_scan_in; ++j) scan_in.push_back(ctx.input(first + n_state + size_t(j)));
  if (ctx.opset >= 9)
    return scan_once(ctx, *body, state, scan_in, ctx.node.attr_ints("scan_input_axes"),
                     ctx.node.attr_ints("scan_input_directions"), ctx.node.attr_ints("scan_output_axes"),
                     ctx.node.attr_ints("scan_output_directions"), INT64_MAX);
  // Scan-8: every input has a leading batch axis; each batch element is scanned along axis 0 (after the batch).
  auto dirs = ctx.node.attr_ints("directions");
  int64_t batch = state.empty() ? scan_in.at(0).dim(0) : state[0].dim(0);
  std::vector<std::vector<Tensor>> per_output;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> st, sc;
    for (const auto& t : state) st.push_back(take_along(t, 0, b));
    for (const auto& t : scan_in) sc.push_back(take_along(t, 0, b));
    int64_t len = ctx.has_input(0) ? ctx.input(0).int_at(b) : INT64_MAX;
    auto r = scan_once(ctx, *body, st, sc, {}, dirs, {}, {}, len);
    if (per_output.empty()) per_output.resize(r.size());
    for (size_t i = 0; i < r.size(); ++i) per_output[i].push_back(r[i]);
  }
  std::vector<Tensor> result;
  for (const auto& parts : per_output) result.push_back(stack(parts, 0, ctx));
  return result;
}

}  // namespace

void register_control_flow(KernelRegistry& r) {
  r.add("If", if_kernel);
  r.add("Loop", loop_kernel);
  r.add("Scan", scan_kernel);
}

}  // namespace onnxgpu::cpu
