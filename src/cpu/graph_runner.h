// Runs a whole graph on the CPU reference kernels, node by node, in topological order.
// Subgraphs (If/Loop/Scan bodies) run through the same runner and see the enclosing scopes' values.
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu::cpu {

class Scope {
 public:
  explicit Scope(const Scope* parent = nullptr) : parent_(parent) {}
  const Tensor* find(const std::string& name) const;
  void set(const std::string& name, Tensor t) { values_[name] = std::move(t); }
  void erase(const std::string& name) { values_.erase(name); }
  // A graph's initializers, read in place (below the values set here, above the parent's): a run
  // need not copy every weight into the scope.
  void set_constants(const std::map<std::string, Tensor>* c) { constants_ = c; }

 private:
  std::unordered_map<std::string, Tensor> values_;
  const std::map<std::string, Tensor>* constants_ = nullptr;
  const Scope* parent_;
};

using OpsetMap = std::map<std::string, int64_t>;

// Runs `g` with `inputs` bound to its declared inputs by name (initializers fill the rest and can be
// overridden by an input of the same name). Returns the graph outputs in declaration order.
std::vector<Tensor> run_graph(const ir::Graph& g, const OpsetMap& opsets,
                              const std::unordered_map<std::string, Tensor>& inputs, const Scope* outer = nullptr);

// Runs one node with the given inputs (used for fallback nodes and constant folding).
std::vector<Tensor> run_node(const ir::Node& node, const OpsetMap& opsets, const std::vector<const Tensor*>& inputs,
                             const Scope* scope = nullptr);

}  // namespace onnxgpu::cpu
