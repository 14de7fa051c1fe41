#include "loader/functions.h"

#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <vector>

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

// Ops the engine runs as a composition of others, inlined as a model's functions are (unless the model
// defines a function of that name itself). Each call gets a body made for it: which optional inputs it
// gives, its attributes and the model's opsets decide the nodes. The bodies import no opset of their own.
namespace builtin {

onnx::NodeProto make_node(const char* op, const char* domain, std::vector<std::string> in, std::vector<std::string> out) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_domain(domain);
  for (auto& s : in) n.add_input(s);
  for (auto& s : out) n.add_output(s);
  return n;
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool given(const onnx::NodeProto& n, int i) { return i < n.input_size() && !n.input(i).empty(); }

onnx::FunctionProto signature(const char* name, std::vector<std::string> in, std::vector<std::string> out) {
  onnx::FunctionProto f;
  f.set_domain("com.microsoft");
  f.set_name(name);
  for (auto& s : in) f.add_input(s);
  for (auto& s : out) f.add_output(s);
  return f;
}

onnx::NodeProto int64_constant(const std::string& out, std::vector<int64_t> values, bool scalar) {
  auto c = make_node("Constant", "", {}, {out});
  auto* v = c.add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) v->mutable_t()->add_dims(int64_t(values.size()));
  for (int64_t x : values) v->mutable_t()->add_int64_data(x);
  return c;
}

// com.microsoft's DynamicQuantizeMatMul(A, B, b_scale, b_zero_point, bias): A quantized to uint8 as
// DynamicQuantizeLinear does, then MatMulIntegerToFloat (ONNX Runtime's definition; its outputs measured
// bit for bit).
onnx::FunctionProto dynamic_quantize_matmul(const onnx::NodeProto&, const std::map<std::string, int64_t>&) {
  onnx::FunctionProto f = signature("DynamicQuantizeMatMul", {"A", "B", "b_scale", "b_zero_point", "bias"}, {"Y"});
  *f.add_node() = make_node("DynamicQuantizeLinear", "", {"A"}, {"a_q", "a_scale", "a_zero_point"});
  *f.add_node() = make_node("MatMulIntegerToFloat", "com.microsoft",
                            {"a_q", "B", "a_scale", "b_scale", "a_zero_point", "b_zero_point", "bias"}, {"Y"});
  return f;
}

// com.microsoft's Attention (ONNX Runtime's BERT- and GPT-2-style fused attention): the packed weights
// [D_in, Dq + Dk + Dv] split into Q, K and V's (constants: folded at plan time), three products, then
// MultiHeadAttention with the packed bias, mask_index as its key_padding_mask ([B] lengths or [B, T] 0/1),
// attention_bias, num_heads, scale, mask_filter_value and unidirectional. A past [2, B, N, P, H] is split
// into MultiHeadAttention's past_key and past_value, and its presents stacked into present [2, B, N, P + S, H].
// past_sequence_length (a shared past and present buffer) and do_rotary are refused.
onnx::FunctionProto attention(const onnx::NodeProto& call, const std::map<std::string, int64_t>& opsets) {
  const std::string what = "node '" + call.name() + "' (com.microsoft.Attention)";
  if (given(call, 6)) throw NotImplemented(what + ": past_sequence_length (a past shared with the present) is not supported");
  const bool past = given(call, 4), present = call.output_size() > 1 && !call.output(1).empty();
  if (present && !past) throw NotImplemented(what + ": a present without a past is not supported");
  const int64_t opset = opsets.count("") ? opsets.at("") : 1;
  if (const auto* r = attribute(call, "do_rotary"); r && r->i() != 0)
    throw NotImplemented(what + ": do_rotary is not supported");
  onnx::FunctionProto f = signature("Attention", {"input", "weights", "bias", "mask_index", "past", "attention_bias",
                                                  "past_sequence_length"}, {"output", "present"});
  auto split = make_node("Split", "", {"weights"}, {"w_q", "w_k", "w_v"});
  auto* axis = split.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  if (const auto* sizes = attribute(call, "qkv_hidden_sizes")) {
    if (opset >= 13) {
      *f.add_node() = int64_constant("qkv_sizes", {sizes->ints().begin(), sizes->ints().end()}, false);
      split.add_input("qkv_sizes");
    } else {
      auto* a = split.add_attribute();
      a->set_name("split");
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t s : sizes->ints()) a->add_ints(s);
    }
  }
  *f.add_node() = split;
  *f.add_node() = make_node("MatMul", "", {"input", "w_q"}, {"q"});
  *f.add_node() = make_node("MatMul", "", {"input", "w_k"}, {"k"});
  *f.add_node() = make_node("MatMul", "", {"input", "w_v"}, {"v"});
  auto mha = make_node("MultiHeadAttention", "com.microsoft", {"q", "k", "v", "bias", "mask_index", "attention_bias"}, {"output"});
  if (past) {
    *f.add_node() = int64_constant("zero", {0}, true);
    *f.add_node() = int64_constant("one", {1}, true);
    *f.add_node() = make_node("Gather", "", {"past", "zero"}, {"past_key"});
    *f.add_node() = make_node("Gather", "", {"past", "one"}, {"past_value"});
    mha.add_input("past_key");
    mha.add_input("past_value");
    if (present) {
      mha.add_output("present_key");
      mha.add_output("present_value");
    }
  }
  for (const char* name : {"num_heads", "scale", "mask_filter_value", "unidirectional"})
    if (const auto* a = attribute(call, name)) *mha.add_attribute() = *a;
  *f.add_node() = mha;
  if (present) {
    // present = [present_key, present_value] stacked on a new first axis.
    for (const char* kv : {"key", "value"}) {
      auto u = make_node("Unsqueeze", "", {std::string("present_") + kv}, {std::string("stacked_") + kv});
      if (opset >= 13) {
        u.add_input("axis0");
      } else {
        auto* axes = u.add_attribute();
        axes->set_name("axes");
        axes->set_type(onnx::AttributeProto::INTS);
        axes->add_ints(0);
      }
      if (opset >= 13 && std::string(kv) == "key") *f.add_node() = int64_constant("axis0", {0}, false);
      *f.add_node() = u;
    }
    auto cat = make_node("Concat", "", {"stacked_key", "stacked_value"}, {"present"});
    auto* ax = cat.add_attribute();
    ax->set_name("axis");
    ax->set_type(onnx::AttributeProto::INT);
    ax->set_i(0);
    *f.add_node() = cat;
  }
  return f;
}

// com.microsoft's EmbedLayerNormalization (BERT's embeddings as ONNX Runtime's optimizer fuses them):
// word (+ position + segment) embeddings gathered and summed, then LayerNormalization over the hidden dim
// (epsilon: the call's, else ONNX Runtime's default 1e-12). Positions are position_ids when given, else
// 0 .. S-1. Outputs: the normalized sum; mask_index, each sequence's count of mask (int32 [B]; zeros
// without a mask); embedding_sum, the sum before the normalization.
onnx::FunctionProto embed_layer_normalization(const onnx::NodeProto& call, const std::map<std::string, int64_t>& opsets) {
  const int64_t opset = opsets.count("") ? opsets.at("") : 1;
  const std::string what = "node '" + call.name() + "' (com.microsoft.EmbedLayerNormalization)";
  onnx::FunctionProto f = signature("EmbedLayerNormalization",
                                    {"input_ids", "segment_ids", "word_embedding", "position_embedding", "segment_embedding",
                                     "gamma", "beta", "mask", "position_ids"},
                                    {"output", "mask_index", "embedding_sum"});
  *f.add_node() = make_node("Gather", "", {"word_embedding", "input_ids"}, {"words"});
  if (given(call, 8)) {
    *f.add_node() = make_node("Gather", "", {"position_embedding", "position_ids"}, {"positions"});
  } else {
    if (opset < 11) throw NotImplemented(what + ": positions without position_ids need opset 11 (Range); the model imports " + std::to_string(opset));
    *f.add_node() = make_node("Shape", "", {"input_ids"}, {"ids_shape"});
    *f.add_node() = int64_constant("one", {1}, true);
    *f.add_node() = int64_constant("zero", {0}, true);
    *f.add_node() = make_node("Gather", "", {"ids_shape", "one"}, {"seq_len"});
    *f.add_node() = make_node("Range", "", {"zero", "seq_len", "one"}, {"position_range"});
    *f.add_node() = make_node("Gather", "", {"position_embedding", "position_range"}, {"positions"});
  }
  const bool segments = given(call, 1) && given(call, 4);
  *f.add_node() = make_node("Add", "", {"words", "positions"}, {segments ? "words_positions" : "embedding_sum"});
  if (segments) {
    *f.add_node() = make_node("Gather", "", {"segment_embedding", "segment_ids"}, {"segments"});
    *f.add_node() = make_node("Add", "", {"words_positions", "segments"}, {"embedding_sum"});
  }
  auto ln = make_node("LayerNormalization", "", {"embedding_sum", "gamma", "beta"}, {"output"});
  auto* eps = ln.add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  const auto* e = attribute(call, "epsilon");
  eps->set_f(e ? e->f() : 1e-12f);
  auto* ax = ln.add_attribute();
  ax->set_name("axis");
  ax->set_type(onnx::AttributeProto::INT);
  ax->set_i(-1);
  *f.add_node() = ln;
  if (call.output_size() > 1 && !call.output(1).empty()) {
    auto sum = make_node("ReduceSum", "", {given(call, 7) ? "mask" : "no_mask"}, {"mask_sum"});
    if (!given(call, 7)) {
      *f.add_node() = make_node("Cast", "", {"input_ids"}, {"ids_i32"});
      auto& cast = *f.mutable_node(f.node_size() - 1);
      auto* to = cast.add_attribute();
      to->set_name("to");
      to->set_type(onnx::AttributeProto::INT);
      to->set_i(onnx::TensorProto::INT32);
      *f.add_node() = make_node("Sub", "", {"ids_i32", "ids_i32"}, {"no_mask"});
    }
    auto* keep = sum.add_attribute();
    keep->set_name("keepdims");
    keep->set_type(onnx::AttributeProto::INT);
    keep->set_i(0);
    if (opset >= 13) {
      *f.add_node() = int64_constant("mask_axes", {1}, false);
      sum.add_input("mask_axes");
    } else {
      auto* axes = sum.add_attribute();
      axes->set_name("axes");
      axes->set_type(onnx::AttributeProto::INTS);
      axes->add_ints(1);
    }
    *f.add_node() = sum;
    auto cast = make_node("Cast", "", {"mask_sum"}, {"mask_index"});
    auto* to = cast.add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(onnx::TensorProto::INT32);
    *f.add_node() = cast;
  }
  return f;
}

using Make = onnx::FunctionProto (*)(const onnx::NodeProto&, const std::map<std::string, int64_t>&);
Make find(const onnx::NodeProto& n) {
  if (domain_of(n.domain()) != "com.microsoft") return nullptr;
  if (n.op_type() == "DynamicQuantizeMatMul") return dynamic_quantize_matmul;
  if (n.op_type() == "Attention") return attention;
  if (n.op_type() == "EmbedLayerNormalization") return embed_layer_normalization;
  return nullptr;
}

}  // namespace builtin

class Inliner {
 public:
  explicit Inliner(onnx::ModelProto& mp) : mp_(mp) {
    for (const auto& o : mp.opset_import()) opsets_[domain_of(o.domain())] = o.version();
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
      if (!functions_.emplace(key(f.domain(), f.name(), overload), std::move(fn)).second)
        throw InvalidArgument("function '" + (f.domain().empty() ? "" : f.domain() + ".") + f.name() + "'" +
                              (overload.empty() ? "" : " (overload '" + overload + "')") + " is defined twice");
    }
  }

  void run() {
    expand_graph(*mp_.mutable_graph(), 0);
    mp_.clear_functions();
  }

 private:
  onnx::ModelProto& mp_;
  std::map<std::string, int64_t> opsets_;
  std::map<std::string, Function> functions_;
  std::deque<onnx::FunctionProto> generated_protos_;  // the built-in bodies made for calls
  std::deque<Function> generated_;
  size_t calls_ = 0, inlined_nodes_ = 0;
  std::vector<const Function*> stack_;  // the functions whose bodies are being inlined, outermost first
  std::string outermost_;               // the main graph's (or a subgraph's) call being inlined

  // The model's function that n calls, else the built-in composition made for n (kept in generated_).
  Function* called(const onnx::NodeProto& n) {
    auto it = functions_.find(key(n.domain(), n.op_type(), unknown_string(n.unknown_fields(), kNodeOverload)));
    if (it != functions_.end()) return &it->second;
    const builtin::Make make = builtin::find(n);
    if (!make) return nullptr;
    Function& fn = generated_.emplace_back();
    fn.proto = &generated_protos_.emplace_back(make(n, opsets_));
    fn.name = "com.microsoft." + n.op_type();
    fn.imports_checked = true;  // a built-in body uses the model's opsets
    return &fn;
  }
  bool calls(const onnx::NodeProto& n) {
    return functions_.count(key(n.domain(), n.op_type(), unknown_string(n.unknown_fields(), kNodeOverload))) ||
           builtin::find(n);
  }

  // The nodes a call of f becomes, counted before anything is built (capped past kMaxInlinedNodes: a
  // function calling another twice, 30 levels deep, would be 2^30).
  size_t inlined_size(Function& f) {
    if (f.inlined_size) return f.inlined_size;
    if (f.sizing) throw InvalidArgument(outermost_ + ": function '" + f.name + "' calls itself");
    f.sizing = true;
    size_t n = 0;
    for (const auto& b : f.proto->node()) {
      auto it = functions_.find(key(b.domain(), b.op_type(), unknown_string(b.unknown_fields(), kNodeOverload)));
      n += it != functions_.end() ? inlined_size(it->second) : builtin::find(b) ? 8 : 1;  // a built-in: a few nodes
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
      auto [it, added] = opsets_.emplace(d, o.version());
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
