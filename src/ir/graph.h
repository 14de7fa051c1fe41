// The engine's graph IR: what the loader produces and every runtime consumes.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnxgpu/tensor.h"

namespace onnxgpu::ir {

struct Graph;
struct FusedExpr;  // ir/fused_expr.h

// ONNX Runtime's contrib domain: the com.microsoft ops of its optimized transformer models
// (SkipLayerNormalization, FastGelu, RotaryEmbedding, ...), run by both kernel sets.
inline constexpr const char* kMsDomain = "com.microsoft";
// ONNX's domain of classical machine-learning models (tree ensembles, linear models, scalers): CPU kernels only.
inline constexpr const char* kMlDomain = "ai.onnx.ml";

struct Attribute {
  enum class Kind { Undefined, Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs };
  Kind kind = Kind::Undefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  onnxgpu::Tensor t;
  std::shared_ptr<ir::Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<onnxgpu::Tensor> tensors;
  std::vector<std::shared_ptr<ir::Graph>> graphs;
};

struct Node {
  std::string name;     // may be empty in the file; the loader fills "<op>_<index>"
  std::string op_type;
  std::string domain;   // "" for the default ONNX domain
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::map<std::string, Attribute> attrs;
  // The elementwise expression a fused node's kernel evaluates: set only on the nodes the runtime's
  // fusion pass makes (src/runtime/fusion.h), never on a loaded model's; null elsewhere.
  std::shared_ptr<const FusedExpr> fused;

  bool has_attr(const std::string& n) const { return attrs.count(n) != 0; }
  const Attribute* attr(const std::string& n) const;
  // Typed getters: the default when absent; an InvalidArgument naming the node when the kind is wrong.
  int64_t attr_int(const std::string& n, int64_t def) const;
  float attr_float(const std::string& n, float def) const;
  std::string attr_string(const std::string& n, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& n, const std::vector<int64_t>& def = {}) const;
  std::vector<float> attr_floats(const std::string& n, const std::vector<float>& def = {}) const;
  std::vector<std::string> attr_strings(const std::string& n) const;
  const onnxgpu::Tensor* attr_tensor(const std::string& n) const;
  const Graph* attr_graph(const std::string& n) const;

  // "node 'name' (OpType)" for error messages.
  std::string describe() const;
  // The values this node's subgraphs (If/Loop/Scan bodies) read from enclosing scopes, sorted.
  std::vector<std::string> implicit_inputs() const;
};

// A symbolic or concrete dimension of a declared graph input/output.
struct Dim {
  int64_t value = -1;   // >= 0 when concrete
  std::string param;    // symbolic name ("batch"), empty when concrete or unnamed
  bool concrete() const { return value >= 0; }
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::Undefined;
  bool has_shape = false;  // false: rank unknown
  bool is_tensor = true;   // false for sequence, optional and map types (out of scope)
  std::vector<Dim> dims;
  std::string shape_str() const;  // "[batch,16]" / "?"
};

struct Graph {
  std::string name;
  std::string doc_string;
  std::vector<Node> nodes;  // in topological order (the loader checks and sorts)
  std::vector<ValueInfo> inputs;   // declared inputs, including those with an initializer
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_infos;
  std::map<std::string, onnxgpu::Tensor> initializers;

  // Inputs the user must (or may) feed: declared inputs; those with an initializer are optional overrides.
  bool is_initializer(const std::string& n) const { return initializers.count(n) != 0; }
};

struct Model {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  std::string producer_name, producer_version, domain, doc_string;
  int64_t model_version = 0;
  std::map<std::string, std::string> metadata;
  std::string path;  // where it was loaded from ("" for bytes)
  Graph graph;

  int64_t opset(const std::string& domain) const;  // 0 when not imported
};

}  // namespace onnxgpu::ir
