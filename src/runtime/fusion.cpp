#include "runtime/fusion.h"

#include "webgpu/kernels/kernel.h"

namespace onnxgpu::runtime {

namespace {

bool plain(const ir::Node& n, const char* op) { return n.op_type == op && (n.domain.empty() || n.domain == "ai.onnx"); }

// Names a node's subgraphs read (a value read inside a Loop body counts as a read by the Loop).
void subgraph_reads(const ir::Graph& g, std::vector<std::string>& out) {
  for (const auto& n : g.nodes) {
    for (const auto& i : n.inputs) out.push_back(i);
    for (const auto& [k, a] : n.attrs) {
      if (a.g) subgraph_reads(*a.g, out);
      for (const auto& sg : a.graphs) subgraph_reads(*sg, out);
    }
  }
}

}  // namespace

Fusion::Fusion(const ir::Graph& graph) : g_(graph) {
  for (const auto& o : graph.outputs) graph_outputs_.insert(o.name);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& n = graph.nodes[i];
    std::vector<std::string> reads = n.inputs;
    for (const auto& [k, a] : n.attrs) {
      if (a.g) subgraph_reads(*a.g, reads);
      for (const auto& sg : a.graphs) subgraph_reads(*sg, reads);
    }
    for (const auto& r : reads)
      if (!r.empty()) consumers_[r].push_back(i);
  }
}

std::optional<size_t> Fusion::only_consumer(const std::string& value) const {
  if (value.empty() || graph_outputs_.count(value)) return std::nullopt;
  auto it = consumers_.find(value);
  if (it == consumers_.end() || it->second.size() != 1) return std::nullopt;
  return it->second[0];
}

std::optional<FusedGroup> Fusion::group_at(size_t i, const Lookup& facts) const {
  const ir::Node& mm = g_.nodes[i];
  if (!plain(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1) return std::nullopt;
  auto j = only_consumer(mm.outputs[0]);
  if (!j) return std::nullopt;
  const ir::Node& add = g_.nodes[*j];
  if (!plain(add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1 || add.outputs[0].empty())
    return std::nullopt;
  const std::string& bias = add.inputs[0] == mm.outputs[0] ? add.inputs[1] : add.inputs[0];
  const ValueFacts *a = facts(mm.inputs[0]), *b = facts(mm.inputs[1]), *c = facts(bias);
  if (!a || !b || !c || !c->constant || !dtype_is_float(a->dtype) || b->dtype != a->dtype || c->dtype != a->dtype)
    return std::nullopt;
  // The bias must be one row of the product: [N] with leading 1s, never widening the output.
  if (a->shape.size() < 2 || b->shape.size() != 2 || c->shape.empty() || c->shape.size() > a->shape.size() ||
      c->shape.back() != b->shape[1] || shape_numel(c->shape) != b->shape[1])
    return std::nullopt;
  FusedGroup f;
  f.node.name = mm.name + "+" + add.name;
  f.node.op_type = "MatMulAdd";
  f.node.domain = webgpu::kFusedDomain;
  f.node.inputs = {mm.inputs[0], mm.inputs[1], bias};
  f.node.outputs = {add.outputs[0]};
  f.skipped = {*j};
  return f;
}

}  // namespace onnxgpu::runtime
