#include "runtime/branches.h"

#include <set>

#include "onnxgpu/error.h"

namespace onnxgpu::runtime {
namespace {

// A branch's own names: its initializers and its nodes' outputs.
std::set<std::string> own_names(const ir::Graph& branch) {
  std::set<std::string> own;
  for (const auto& [name, t] : branch.initializers) own.insert(name);
  for (const auto& n : branch.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty()) own.insert(o);
  return own;
}

// In a copy of each subgraph of `n` (a Loop's body, a nested If's branches, theirs in turn), the reads of the
// taken branch's own values renamed as the branch's nodes are. ONNX forbids a subgraph to define a name of an
// enclosing scope, so such a name there is always the branch's value.
void rename_in_subgraphs(ir::Node& n, const std::set<std::string>& own, const std::string& prefix) {
  auto renamed = [&](const std::shared_ptr<ir::Graph>& g) {
    auto c = std::make_shared<ir::Graph>(*g);
    for (auto& m : c->nodes) {
      for (auto& i : m.inputs)
        if (own.count(i)) i = prefix + i;
      rename_in_subgraphs(m, own, prefix);
    }
    for (auto& o : c->outputs)
      if (own.count(o.name)) o.name = prefix + o.name;
    return c;
  };
  for (auto& [k, a] : n.attrs) {
    if (a.g) a.g = renamed(a.g);
    for (auto& sg : a.graphs) sg = renamed(sg);
  }
}

// The flag an If node branches on, or "" when its condition is not one of `candidates` (or a branch is missing:
// the If reports that itself).
std::string flag_of(const ir::Node& n, const std::set<std::string>& candidates) {
  if (n.op_type != "If" || !n.domain.empty() || n.inputs.empty() || !candidates.count(n.inputs[0])) return "";
  return n.attr_graph("then_branch") && n.attr_graph("else_branch") ? n.inputs[0] : "";
}

// The bool graph inputs a run must feed.
std::set<std::string> bool_inputs(const ir::Graph& g) {
  std::set<std::string> r;
  for (const auto& v : g.inputs)
    if (v.dtype == DType::Bool && !g.is_initializer(v.name)) r.insert(v.name);
  return r;
}

void collect_flags(const ir::Graph& g, const std::set<std::string>& candidates, std::set<std::string>& found) {
  for (const auto& n : g.nodes) {
    const std::string f = flag_of(n, candidates);
    if (f.empty()) continue;
    found.insert(f);
    for (const char* branch : {"then_branch", "else_branch"})
      if (const ir::Graph* b = n.attr_graph(branch)) collect_flags(*b, candidates, found);
  }
}

// Appends `node` to `out`, or, for an If on a flag, the nodes of the branch its value takes. `prefixes`: those
// given so far (node names need not be unique; the prefixes must).
void expand(const ir::Node& node, const std::map<std::string, bool>& flags, const std::set<std::string>& candidates,
            ir::Graph& out, std::set<std::string>& prefixes, std::vector<std::string>* taken) {
  const std::string f = flag_of(node, candidates);
  auto value = flags.find(f);
  if (f.empty() || value == flags.end()) {
    out.nodes.push_back(node);
    return;
  }
  const char* side = value->second ? "then" : "else";
  const ir::Graph* branch = node.attr_graph(value->second ? "then_branch" : "else_branch");  // present: flag_of
  if (branch->outputs.size() != node.outputs.size())
    throw InvalidArgument(node.describe() + ": its " + std::string(side) + "_branch has " + std::to_string(branch->outputs.size()) +
                          " outputs, the node " + std::to_string(node.outputs.size()));
  // The branch's own names (its initializers and node outputs) get a prefix; the rest are outer values.
  std::string prefix = node.name + "/" + side + "/";
  for (int k = 2; prefixes.count(prefix); ++k) prefix = node.name + "~" + std::to_string(k) + "/" + side + "/";
  prefixes.insert(prefix);
  if (taken) taken->push_back(node.name + ": " + f + "=" + (value->second ? "1" : "0") + ", " + side + "_branch");
  const std::set<std::string> own = own_names(*branch);
  auto rename = [&](const std::string& name) { return own.count(name) ? prefix + name : name; };
  for (const auto& [name, t] : branch->initializers) out.initializers[prefix + name] = t;
  for (const auto& n : branch->nodes) {
    ir::Node copy = n;
    copy.name = prefix + n.name;
    for (auto& i : copy.inputs)
      if (!i.empty()) i = rename(i);
    for (auto& o : copy.outputs)
      if (!o.empty()) o = rename(o);
    rename_in_subgraphs(copy, own, prefix);
    expand(copy, flags, candidates, out, prefixes, taken);
  }
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    if (node.outputs[k].empty()) continue;
    ir::Node id;
    id.name = prefix + "output_" + std::to_string(k);
    id.op_type = "Identity";
    id.inputs = {rename(branch->outputs[k].name)};
    id.outputs = {node.outputs[k]};
    out.nodes.push_back(std::move(id));
  }
}

}  // namespace

std::vector<std::string> branch_flags(const ir::Model& model) {
  std::set<std::string> found;
  collect_flags(model.graph, bool_inputs(model.graph), found);
  return {found.begin(), found.end()};
}

ir::Model take_branches(const ir::Model& model, const std::map<std::string, bool>& flags, std::vector<std::string>* taken) {
  ir::Model m = model;
  m.graph.nodes.clear();
  const std::set<std::string> candidates = bool_inputs(model.graph);
  std::set<std::string> prefixes;
  for (const auto& n : model.graph.nodes) expand(n, flags, candidates, m.graph, prefixes, taken);
  return m;
}

}  // namespace onnxgpu::runtime
