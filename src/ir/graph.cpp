#include "ir/graph.h"

#include <set>

namespace onnxgpu::ir {

const Attribute* Node::attr(const std::string& n) const {
  auto it = attrs.find(n);
  return it == attrs.end() ? nullptr : &it->second;
}

namespace {
[[noreturn]] void wrong_kind(const Node& node, const std::string& n, const char* want) {
  throw InvalidArgument(node.describe() + ": attribute '" + n + "' is not of type " + want);
}
}  // namespace

int64_t Node::attr_int(const std::string& n, int64_t def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::Int) wrong_kind(*this, n, "int");
  return a->i;
}

float Node::attr_float(const std::string& n, float def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (a->kind == Attribute::Kind::Int) return float(a->i);
  if (a->kind != Attribute::Kind::Float) wrong_kind(*this, n, "float");
  return a->f;
}

std::string Node::attr_string(const std::string& n, const std::string& def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::String) wrong_kind(*this, n, "string");
  return a->s;
}

std::vector<int64_t> Node::attr_ints(const std::string& n, const std::vector<int64_t>& def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::Ints) wrong_kind(*this, n, "ints");
  return a->ints;
}

std::vector<float> Node::attr_floats(const std::string& n, const std::vector<float>& def) const {
  const Attribute* a = attr(n);
  if (!a) return def;
  if (a->kind != Attribute::Kind::Floats) wrong_kind(*this, n, "floats");
  return a->floats;
}

std::vector<std::string> Node::attr_strings(const std::string& n) const {
  const Attribute* a = attr(n);
  if (!a) return {};
  if (a->kind != Attribute::Kind::Strings) wrong_kind(*this, n, "strings");
  return a->strings;
}

const onnxgpu::Tensor* Node::attr_tensor(const std::string& n) const {
  const Attribute* a = attr(n);
  if (!a) return nullptr;
  if (a->kind != Attribute::Kind::Tensor) wrong_kind(*this, n, "tensor");
  return &a->t;
}

const Graph* Node::attr_graph(const std::string& n) const {
  const Attribute* a = attr(n);
  if (!a) return nullptr;
  if (a->kind != Attribute::Kind::Graph) wrong_kind(*this, n, "graph");
  return a->g.get();
}

std::string Node::describe() const { return "node '" + name + "' (" + op_type + ")"; }

namespace {
// Names a subgraph reads from enclosing scopes.
void free_names(const Graph& g, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const auto& v : g.inputs) defined.insert(v.name);
  for (const auto& [n, t] : g.initializers) defined.insert(n);
  for (const auto& n : g.nodes) {
    for (const auto& i : n.inputs)
      if (!i.empty() && !defined.count(i)) out.insert(i);
    for (const auto& i : n.implicit_inputs())
      if (!defined.count(i)) out.insert(i);
    for (const auto& o : n.outputs) defined.insert(o);
  }
}
}  // namespace

std::vector<std::string> Node::implicit_inputs() const {
  std::set<std::string> names;
  for (const auto& [k, a] : attrs) {
    if (a.g) free_names(*a.g, names);
    for (const auto& sg : a.graphs) free_names(*sg, names);
  }
  return {names.begin(), names.end()};
}

std::string ValueInfo::shape_str() const {
  if (!has_shape) return "?";
  std::string r = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) r += ",";
    r += dims[i].concrete() ? std::to_string(dims[i].value) : (dims[i].param.empty() ? "?" : dims[i].param);
  }
  return r + "]";
}

int64_t Model::opset(const std::string& d) const {
  std::string key = (d == "ai.onnx") ? "" : d;
  auto it = opsets.find(key);
  return it == opsets.end() ? 0 : it->second;
}

}  // namespace onnxgpu::ir
