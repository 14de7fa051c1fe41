#include "loader/functions.h"

#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "loader/composite_ops.h"
#include "onnxgpu/error.h"

namespace onnxgpu::loader {
namespace {

using google::protobuf::RepeatedPtrField;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// Fields newer than the schema of Debian's libonnx (1.12), read from the unknown fields protobuf keeps.
constexpr int kFunctionAttributeProto = 11;  // FunctionProto.attribute_proto (onnx 1.13): attribute defaults
constexpr int kFunctionOverload = 13;        // FunctionProto.overload (onnx 1.15, IR 10)
constexpr int kNodeOverload = 8;             // NodeProto.overload

// Inlined bodies nest at most this deep, and the graph grows by at most this many nodes (a function
// calling another twice, 64 levels deep, would otherwise be 2^64 nodes).
constexpr int kMaxDepth = 64;
constexpr size_t kMaxInlinedNodes = size_t(1) << 20;

std::vector<std::string> unknown_bytes(const UnknownFieldSet& u, int number) {
  std::vector<std::string> r;
  for (int i = 0; i < u.field_count(); ++i)
    if (u.field(i).number() == number && u.field(i).type() == UnknownField::TYPE_LENGTH_DELIMITED)
      r.push_back(u.field(i).length_delimited());
  return r;
}

std::string unknown_string(const UnknownFieldSet& u, int number) {
  std::vector<std::string> v = unknown_bytes(u, number);
  return v.empty() ? std::string() : v.back();
}

std::string domain_of(const std::string& d) { return d == "ai.onnx" ? "" : d; }

std::string key(const std::string& domain, const std::string& name, const std::string& overload) {
  return domain_of(domain) + "\n" + name + "\n" + overload;
}

std::string describe(const onnx::NodeProto& n) {
  return "node '" + n.name() + "' (" + (domain_of(n.domain()).empty() ? "" : n.domain() + ".") + n.op_type() + ")";
}

struct Function {
  const onnx::FunctionProto* proto = nullptr;
  std::map<std::string, onnx::AttributeProto> defaults;  // attribute_proto, by name
  std::string name;                                      // "domain.name" for messages
  bool imports_checked = false;
  size_t inlined_size = 0;  // the nodes a call becomes (its body's, calls counted inlined); 0: not known yet
  bool sizing = false;      // being sized (a call back to it is recursion)
};

// The names of one inlined call: the call's values for the function's formal inputs and outputs, and a
// prefix for everything else, scope by scope (a subgraph of a body node opens one).
class Renamer {
 public:
  explicit Renamer(std::string prefix) : prefix_(std::move(prefix)) { scopes_.emplace_back(); }
  void bind(const std::string& formal, const std::string& actual) { scopes_.front()[formal] = actual; }
  // A value read: the innermost scope's name for it (a name no scope defines is prefixed: the graph
  // checks after the load report it as undefined).
  std::string ref(const std::string& n) const {
    if (n.empty()) return n;
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      if (auto it = s->find(n); it != s->end()) return it->second;
    return prefix_ + n;
  }
  // A value defined in the current scope.
  std::string def(const std::string& n) {
    if (n.empty()) return n;
    auto& s = scopes_.back();
    if (auto it = s.find(n); it != s.end()) return it->second;
    return s[n] = prefix_ + n;
  }
  void open() { scopes_.emplace_back(); }
  void close() { scopes_.pop_back(); }
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
  std::vector<std::map<std::string, std::string>> scopes_;
};

class Inliner {
 public:
  explicit Inliner(onnx::ModelProto& mp) : mp_(mp) {
    for (const auto& o : mp.opset_import()) composite_.opsets[domain_of(o.domain())] = o.version();
    for (const auto& f : mp.functions()) {
      if (f.name().empty()) throw InvalidArgument("a model-local function has no name");
      Function fn;
      fn.proto = &f;
      fn.name = (f.domain().empty() ? "" : f.domain() + ".") + f.name();
      for (const std::string& bytes : unknown_bytes(f.unknown_fields(), kFunctionAttributeProto)) {
        onnx::AttributeProto a;
        if (!a.ParseFromString(bytes) || a.name().empty())
          throw InvalidArgument("function '" + fn.name + "': an attribute default is malformed");
        fn.defaults[a.name()] = a;
      }
      const std::string overload = unknown_string(f.unknown_fields(), kFunctionOverload);
      const std::string name = fn.name;
      if (!functions_.emplace(key(f.domain(), f.name(), overload), std::move(fn)).second)
        throw InvalidArgument("function '" + name + "'" + (overload.empty() ? "" : " (overload '" + overload + "')") +
                              " is defined twice");
    }
  }

  void run() {
    expand_graph(*mp_.mutable_graph(), 0);
    mp_.clear_functions();
  }

 private:
  onnx::ModelProto& mp_;
  composite::Model composite_;  // the model's opsets (a function's imports join them), and for the composite
                                // ops the ranks and types the main graph declares (read at the first one)
  bool declarations_read_ = false;
  std::map<std::string, Function> functions_;
  std::deque<onnx::FunctionProto> generated_protos_;  // the composite ops' bodies made for calls
  std::deque<Function> generated_;
  size_t calls_ = 0, inlined_nodes_ = 0;
  std::vector<const Function*> stack_;  // the functions whose bodies are being inlined, outermost first
  std::string outermost_;               // the main graph's (or a subgraph's) call being inlined

  // The model's function that n calls, or null.
  Function* model_function(const onnx::NodeProto& n) {
    auto it = functions_.find(key(n.domain(), n.op_type(), unknown_string(n.unknown_fields(), kNodeOverload)));
    return it == functions_.end() ? nullptr : &it->second;
  }

  // The model's function that n calls, else the composition made for n (composite_ops.h; kept in
  // generated_).
  Function* called(const onnx::NodeProto& n) {
    if (Function* f = model_function(n)) return f;
    const composite::Make make = composite::find(n);
    if (!make) return nullptr;
    read_declarations();
    Function& fn = generated_.emplace_back();
    fn.proto = &generated_protos_.emplace_back(make(n, composite_));
    fn.name = "com.microsoft." + n.op_type();
    fn.imports_checked = true;  // a composite op's body uses the model's opsets
    return &fn;
  }
  bool calls(const onnx::NodeProto& n) { return model_function(n) || composite::find(n); }

  // The ranks and types the main graph declares (inputs, outputs, value_info, initializers).
  void read_declarations() {
    if (declarations_read_) return;
    declarations_read_ = true;
    const onnx::GraphProto& g = mp_.graph();
    auto declared = [&](const onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type()) return;
      const auto& tt = v.type().tensor_type();
      if (tt.has_shape()) composite_.ranks[v.name()] = tt.shape().dim_size();
      if (tt.elem_type()) composite_.types[v.name()] = tt.elem_type();
    };
    for (const auto& v : g.input()) declared(v);
    for (const auto& v : g.output()) declared(v);
    for (const auto& v : g.value_info()) declared(v);
    for (const auto& t : g.initializer()) {
      composite_.ranks[t.name()] = t.dims_size();
      composite_.types[t.name()] = t.data_type();
    }
  }

  // The nodes a call of f becomes, counted before anything is built (capped past kMaxInlinedNodes: a
  // function calling another twice, 30 levels deep, would be 2^30).
  size_t inlined_size(Function& f) {
    if (f.inlined_size) return f.inlined_size;
    if (f.sizing) throw InvalidArgument(outermost_ + ": function '" + f.name + "' calls itself");
    f.sizing = true;
    size_t n = 0;
    for (const auto& b : f.proto->node()) {
      Function* g = model_function(b);
      n += g ? inlined_size(*g) : composite::find(b) ? 16 : 1;  // a composite op: a few nodes
      n = std::min(n, kMaxInlinedNodes + 1);
    }
    f.sizing = false;
    return f.inlined_size = std::max<size_t>(n, 1);
  }

  // The function's opset imports join the model's; one domain at two versions is refused.
  void import_opsets(Function& f) {
    if (f.imports_checked) return;
    for (const auto& o : f.proto->opset_import()) {
      const std::string d = domain_of(o.domain());
      auto [it, added] = composite_.opsets.emplace(d, o.version());
      if (added) {
        auto* imp = mp_.add_opset_import();
        imp->set_domain(d);
        imp->set_version(o.version());
      } else if (it->second != o.version()) {
        throw NotImplemented("function '" + f.name + "' imports domain '" + (d.empty() ? "ai.onnx" : d) + "' at version " +
                             std::to_string(o.version()) + " and the model at " + std::to_string(it->second) +
                             " (a model runs each domain at one version)");
      }
    }
    f.imports_checked = true;
  }

  void expand_graph(onnx::GraphProto& g, int depth) {
    bool any = false;
    for (const auto& n : g.node())
      if (calls(n) || has_graph(n)) any = true;
    if (!any) return;
    RepeatedPtrField<onnx::NodeProto> out;
    for (auto& n : *g.mutable_node()) expand_node(std::move(n), out, depth);
    g.mutable_node()->Swap(&out);
  }

  static bool has_graph(const onnx::NodeProto& n) {
    for (const auto& a : n.attribute())
      if (a.has_g() || a.graphs_size()) return true;
    return false;
  }

  // Appends `n` to `out`, or for a call its body, renamed, each node of it expanded in turn.
  void expand_node(onnx::NodeProto n, RepeatedPtrField<onnx::NodeProto>& out, int depth) {
    Function* f = called(n);
    if (!f) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) expand_graph(*a.mutable_g(), depth);
        for (auto& sg : *a.mutable_graphs()) expand_graph(sg, depth);
      }
      *out.Add() = std::move(n);
      return;
    }
    if (depth == 0) outermost_ = describe(n);
    if (std::find(stack_.begin(), stack_.end(), f) != stack_.end())
      throw InvalidArgument(outermost_ + ": function '" + f->name + "' calls itself");
    if (depth >= kMaxDepth)
      throw InvalidArgument(outermost_ + ": calls to functions nest deeper than " + std::to_string(kMaxDepth) + " levels");
    const onnx::FunctionProto& fp = *f->proto;
    if (n.input_size() > fp.input_size() || n.output_size() > fp.output_size())
      throw InvalidArgument(describe(n) + ": has " + std::to_string(n.input_size()) + " inputs and " +
                            std::to_string(n.output_size()) + " outputs, function '" + f->name + "' takes " +
                            std::to_string(fp.input_size()) + " and " + std::to_string(fp.output_size()));
    import_opsets(*f);
    Renamer names((n.name().empty() ? n.op_type() : n.name()) + "#" + std::to_string(calls_++) + "/");
    for (int i = 0; i < fp.input_size(); ++i) names.bind(fp.input(i), i < n.input_size() ? n.input(i) : std::string());
    for (int i = 0; i < fp.output_size(); ++i)
      if (i < n.output_size() && !n.output(i).empty()) names.bind(fp.output(i), n.output(i));
    if (depth == 0 && (inlined_nodes_ += inlined_size(*f)) > kMaxInlinedNodes)
      throw InvalidArgument(outermost_ + ": inlining the model's functions makes more than " +
                            std::to_string(kMaxInlinedNodes) + " nodes");
    stack_.push_back(f);
    for (int i = 0; i < fp.node_size(); ++i) {
      onnx::NodeProto b = fp.node(i);
      b.set_name(names.prefix() + (b.name().empty() ? b.op_type() + "_" + std::to_string(i) : b.name()));
      rename_node(b, names, n, *f);
      expand_node(std::move(b), out, depth + 1);
    }
    stack_.pop_back();
  }

  // A body node (or a node of a body node's subgraph): its values renamed, its attribute references
  // resolved against the call.
  void rename_node(onnx::NodeProto& b, Renamer& names, const onnx::NodeProto& call, const Function& f) {
    for (auto& in : *b.mutable_input()) in = names.ref(in);
    for (auto& o : *b.mutable_output()) o = names.def(o);
    RepeatedPtrField<onnx::AttributeProto> attrs;
    for (const auto& a : b.attribute()) {
      if (!a.ref_attr_name().empty()) {
        // The call's attribute, else the function's default, else none. Its graphs (the caller's) keep
        // the caller's names.
        const onnx::AttributeProto* src = nullptr;
        for (const auto& ca : call.attribute())
          if (ca.name() == a.ref_attr_name()) src = &ca;
        if (!src)
          if (auto it = f.defaults.find(a.ref_attr_name()); it != f.defaults.end()) src = &it->second;
        if (!src) continue;
        onnx::AttributeProto r = *src;
        r.set_name(a.name());
        r.clear_ref_attr_name();
        *attrs.Add() = std::move(r);
        continue;
      }
      onnx::AttributeProto r = a;
      if (r.has_g()) rename_graph(*r.mutable_g(), names, call, f);
      for (auto& sg : *r.mutable_graphs()) rename_graph(sg, names, call, f);
      *attrs.Add() = std::move(r);
    }
    b.mutable_attribute()->Swap(&attrs);
  }

  void rename_graph(onnx::GraphProto& g, Renamer& names, const onnx::NodeProto& call, const Function& f) {
    names.open();
    for (auto& v : *g.mutable_input()) v.set_name(names.def(v.name()));
    for (auto& t : *g.mutable_initializer()) t.set_name(names.def(t.name()));
    for (auto& n : *g.mutable_node()) {
      n.set_name(names.prefix() + n.name());
      rename_node(n, names, call, f);
    }
    for (auto& v : *g.mutable_output()) v.set_name(names.ref(v.name()));
    for (auto& v : *g.mutable_value_info()) v.set_name(names.ref(v.name()));
    names.close();
  }
};

}  // namespace

void inline_functions(onnx::ModelProto& mp) { Inliner(mp).run(); }

}  // namespace onnxgpu::loader
