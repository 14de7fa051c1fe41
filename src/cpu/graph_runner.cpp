#include "cpu/graph_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cpu/kernel.h"

namespace onnxgpu::cpu {

const Tensor* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent_) {
    auto it = s->values_.find(name);
    if (it != s->values_.end()) return &it->second;
    if (s->constants_) {
      auto c = s->constants_->find(name);
      if (c != s->constants_->end()) return &c->second;
    }
  }
  return nullptr;
}

namespace {
int64_t opset_for(const OpsetMap& opsets, const std::string& domain) {
  auto it = opsets.find(domain);
  return it == opsets.end() ? 0 : it->second;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// ONNXGPU_CPU_PROFILE=1: each top-level run_graph prints the time per op type to stderr (where the CPU
// time goes: per-op overhead or compute).
bool profile_ops() {
  static const bool on = [] {
    const char* v = std::getenv("ONNXGPU_CPU_PROFILE");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}
}  // namespace

std::vector<Tensor> run_node(const ir::Node& node, const OpsetMap& opsets, const std::vector<const Tensor*>& inputs,
                             const Scope* scope) {
  const Kernel* k = registry().find(node.op_type, node.domain);
  if (!k)
    throw NotImplemented(node.describe() + ": no CPU kernel for op '" + node.op_type + "'" +
                         (node.domain.empty() ? "" : " in domain '" + node.domain + "'"));
  KernelContext ctx(node, opset_for(opsets, node.domain), inputs);
  ctx.run_subgraph = [&](const ir::Graph& g, const std::vector<Tensor>& sub_inputs) {
    if (sub_inputs.size() != g.inputs.size())
      ctx.fail("subgraph '" + g.name + "' takes " + std::to_string(g.inputs.size()) + " inputs, got " +
               std::to_string(sub_inputs.size()));
    std::unordered_map<std::string, Tensor> named;
    for (size_t i = 0; i < sub_inputs.size(); ++i) named[g.inputs[i].name] = sub_inputs[i];
    return run_graph(g, opsets, named, scope);
  };
  std::vector<Tensor> out;
  try {
    out = (*k)(ctx);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (starts_with(msg, node.describe())) throw;
    if (dynamic_cast<const NotImplemented*>(&e)) throw NotImplemented(node.describe() + ": " + msg);
    throw InvalidArgument(node.describe() + ": " + msg);
  } catch (const std::bad_alloc&) {
    throw InvalidArgument(node.describe() + ": out of host memory");
  } catch (const std::exception& e) {
    throw Error(node.describe() + ": " + e.what());
  }
  if (out.size() > node.outputs.size())
    throw Error(node.describe() + ": kernel returned " + std::to_string(out.size()) + " outputs, the node has " +
                std::to_string(node.outputs.size()));
  for (size_t i = 0; i < out.size(); ++i)
    if (ctx.output_wanted(i) && !out[i].defined())
      throw Error(node.describe() + ": kernel did not produce output '" + node.outputs[i] + "'");
  return out;
}

std::vector<Tensor> run_graph(const ir::Graph& g, const OpsetMap& opsets,
                              const std::unordered_map<std::string, Tensor>& inputs, const Scope* outer) {
  Scope scope(outer);
  scope.set_constants(&g.initializers);  // an input of the same name overrides (found first)
  for (const auto& [name, t] : inputs) scope.set(name, t);
  for (const auto& in : g.inputs)
    if (!scope.find(in.name) && !inputs.count(in.name))
      throw InvalidArgument("graph input '" + in.name + "' was not given");

  // Last use of each value, so intermediate tensors are freed as soon as possible.
  std::unordered_map<std::string, size_t> last_use;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& in : g.nodes[i].inputs) last_use[in] = i;
    for (const auto& [an, a] : g.nodes[i].attrs)  // subgraphs may read outer values by name
      if (a.g || !a.graphs.empty()) for (auto& [n, v] : last_use) v = std::max(v, i);
  }
  std::unordered_map<std::string, bool> is_output;
  for (const auto& o : g.outputs) is_output[o.name] = true;

  const bool profile = profile_ops() && !outer;
  std::map<std::string, std::pair<double, int>> op_ms;  // op type -> (ms, nodes)
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& node = g.nodes[i];
    std::vector<const Tensor*> ins;
    for (const auto& name : node.inputs) {
      if (name.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      const Tensor* t = scope.find(name);
      if (!t) throw InvalidArgument(node.describe() + ": input '" + name + "' has no value");
      ins.push_back(t);
    }
    auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    std::vector<Tensor> outs = run_node(node, opsets, ins, &scope);
    if (profile) {
      auto& [ms, count] = op_ms[node.op_type];
      ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ++count;
    }
    for (size_t k = 0; k < outs.size(); ++k)
      if (!node.outputs[k].empty()) scope.set(node.outputs[k], std::move(outs[k]));
    for (const auto& name : node.inputs) {
      auto it = last_use.find(name);
      if (!name.empty() && it != last_use.end() && it->second == i && !is_output.count(name) &&
          !g.is_initializer(name) && !inputs.count(name))
        scope.erase(name);
    }
  }
  if (profile) {
    std::vector<std::pair<double, std::string>> by_time;
    double total = 0;
    for (const auto& [op, v] : op_ms) by_time.emplace_back(v.first, op), total += v.first;
    std::sort(by_time.rbegin(), by_time.rend());
    std::fprintf(stderr, "[onnxgpu cpu profile] %.3f ms in %zu nodes:", total, g.nodes.size());
    for (const auto& [ms, op] : by_time) std::fprintf(stderr, " %s %.3f (%d)", op.c_str(), ms, op_ms[op].second);
    std::fprintf(stderr, "\n");
  }
  std::vector<Tensor> result;
  for (const auto& o : g.outputs) {
    const Tensor* t = scope.find(o.name);
    if (!t) throw Error("graph output '" + o.name + "' was not computed");
    result.push_back(*t);
  }
  return result;
}

}  // namespace onnxgpu::cpu
