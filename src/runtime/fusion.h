// Fusion: graph nodes that one GPU kernel computes together, so that the plan records fewer
// dispatches and no intermediate buffer. At node i the planner asks whether i starts a group;
// a group is one node of webgpu::kFusedDomain that produces the group's last output, and the
// planner skips the group's other members. When the fused kernel cannot run, the planner runs
// the nodes one by one as usual. Groups:
//   MatMul -> Add(bias)   MatMulAdd: the bias (a constant over the last axis) added in the
//                         product's epilogue.
#pragma once
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace onnxgpu::runtime {

// What the planner knows of a value at node i.
struct ValueFacts {
  DType dtype = DType::Undefined;
  Shape shape;
  bool constant = false;
};

struct FusedGroup {
  ir::Node node;                // the fused node (domain webgpu::kFusedDomain)
  std::vector<size_t> skipped;  // the members after the first, computed by `node`
};

class Fusion {
 public:
  explicit Fusion(const ir::Graph& graph);
  using Lookup = std::function<const ValueFacts*(const std::string&)>;  // null when unknown
  std::optional<FusedGroup> group_at(size_t i, const Lookup& facts) const;

 private:
  // The one node that reads `value` (once), when no other node or graph output does.
  std::optional<size_t> only_consumer(const std::string& value) const;

  const ir::Graph& g_;
  std::unordered_map<std::string, std::vector<size_t>> consumers_;  // every read, subgraphs included
  std::set<std::string> graph_outputs_;
};

}  // namespace onnxgpu::runtime
