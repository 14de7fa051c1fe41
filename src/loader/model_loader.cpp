#include "loader/model_loader.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include "loader/functions.h"
#include "loader/mapped_file.h"
#include "loader/tensor_proto.h"
#include "loader/validate.h"
#include "loader/wire.h"

namespace onnxgpu::loader {

namespace {

using Kind = ir::Attribute::Kind;

struct Converter {
  ExternalDataDir ext;
  int depth = 0;
  // The raw data parted from the main graph's initializers (wire.h): in `base`, held by `keep` (null
  // when the bytes do not outlive the load: then they are copied).
  const wire::Skeleton* parted = nullptr;
  const uint8_t* base = nullptr;
  std::shared_ptr<const void> keep;

  ir::ValueInfo value_info(const onnx::ValueInfoProto& v) {
    ir::ValueInfo out;
    out.name = v.name();
    if (v.has_type() && !v.type().has_tensor_type()) out.is_tensor = false;
    if (v.has_type() && v.type().has_tensor_type()) {
      const auto& tt = v.type().tensor_type();
      out.dtype = (tt.elem_type() >= 0 && tt.elem_type() <= 16) ? DType(tt.elem_type()) : DType::Undefined;
      if (tt.has_shape()) {
        out.has_shape = true;
        for (const auto& d : tt.shape().dim()) {
          ir::Dim dim;
          if (d.has_dim_value() && d.dim_value() < 0)
            throw InvalidArgument("value '" + v.name() + "': declared dimension " + std::to_string(out.dims.size()) +
                                  " is " + std::to_string(d.dim_value()) + " (a dimension is >= 0, or symbolic)");
          if (d.has_dim_value()) dim.value = d.dim_value();
          else if (d.has_dim_param()) dim.param = d.dim_param();
          out.dims.push_back(dim);
        }
      }
    }
    return out;
  }

  ir::Attribute attribute(onnx::AttributeProto& a, const std::string& where) {
    ir::Attribute r;
    std::string what = where + " attribute '" + a.name() + "'";
    switch (a.type()) {
      case onnx::AttributeProto_AttributeType_FLOAT: r.kind = Kind::Float; r.f = a.f(); break;
      case onnx::AttributeProto_AttributeType_INT: r.kind = Kind::Int; r.i = a.i(); break;
      case onnx::AttributeProto_AttributeType_STRING: r.kind = Kind::String; r.s = a.s(); break;
      case onnx::AttributeProto_AttributeType_TENSOR: r.kind = Kind::Tensor; r.t = take_tensor_from_proto(*a.mutable_t(), ext, what); break;
      case onnx::AttributeProto_AttributeType_GRAPH: r.kind = Kind::Graph; r.g = std::make_shared<ir::Graph>(graph(*a.mutable_g())); break;
      case onnx::AttributeProto_AttributeType_FLOATS: r.kind = Kind::Floats; r.floats.assign(a.floats().begin(), a.floats().end()); break;
      case onnx::AttributeProto_AttributeType_INTS: r.kind = Kind::Ints; r.ints.assign(a.ints().begin(), a.ints().end()); break;
      case onnx::AttributeProto_AttributeType_STRINGS: r.kind = Kind::Strings; r.strings.assign(a.strings().begin(), a.strings().end()); break;
      case onnx::AttributeProto_AttributeType_TENSORS:
        r.kind = Kind::Tensors;
        for (auto& t : *a.mutable_tensors()) r.tensors.push_back(take_tensor_from_proto(t, ext, what));
        break;
      case onnx::AttributeProto_AttributeType_GRAPHS:
        r.kind = Kind::Graphs;
        for (auto& g : *a.mutable_graphs()) r.graphs.push_back(std::make_shared<ir::Graph>(graph(g)));
        break;
      case onnx::AttributeProto_AttributeType_TYPE_PROTO:
      case onnx::AttributeProto_AttributeType_TYPE_PROTOS:
        break;  // type attributes (Optional, sequences) are kept as Undefined; no supported op reads them
      case onnx::AttributeProto_AttributeType_SPARSE_TENSOR:
        throw NotImplemented(what + ": sparse tensors are not supported");
      default:
        // Old exporters leave `type` unset; infer it from the populated field.
        if (a.has_f()) { r.kind = Kind::Float; r.f = a.f(); }
        else if (a.has_i()) { r.kind = Kind::Int; r.i = a.i(); }
        else if (a.has_s()) { r.kind = Kind::String; r.s = a.s(); }
        else if (a.has_t()) { r.kind = Kind::Tensor; r.t = take_tensor_from_proto(*a.mutable_t(), ext, what); }
        else if (a.has_g()) { r.kind = Kind::Graph; r.g = std::make_shared<ir::Graph>(graph(*a.mutable_g())); }
        else if (a.floats_size()) { r.kind = Kind::Floats; r.floats.assign(a.floats().begin(), a.floats().end()); }
        else if (a.ints_size()) { r.kind = Kind::Ints; r.ints.assign(a.ints().begin(), a.ints().end()); }
        else if (a.strings_size()) { r.kind = Kind::Strings; r.strings.assign(a.strings().begin(), a.strings().end()); }
        else throw InvalidArgument(what + ": unknown attribute type " + std::to_string(int(a.type())));
    }
    return r;
  }

  // Tensors take the bytes of their protos (which are left without them) instead of copying them.
  ir::Graph graph(onnx::GraphProto& g) {
    if (++depth > 64) throw InvalidArgument("graph nesting is deeper than 64 levels");
    ir::Graph out;
    out.name = g.name();
    out.doc_string = g.doc_string();
    for (int i = 0; i < g.initializer_size(); ++i) {
      auto& t = *g.mutable_initializer(i);
      if (t.name().empty()) throw InvalidArgument("graph '" + g.name() + "': an initializer has no name");
      const std::string what = "initializer '" + t.name() + "'";
      const wire::Span* part = nullptr;
      if (depth == 1 && parted)
        if (auto it = parted->raw.find(size_t(i)); it != parted->raw.end()) part = &it->second;
      if (part)
        out.initializers[t.name()] = tensor_from_proto_and_bytes(t, base + part->offset, part->size, keep, ext, what);
      else
        out.initializers[t.name()] = take_tensor_from_proto(t, ext, what);
    }
    if (g.sparse_initializer_size()) throw NotImplemented("graph '" + g.name() + "': sparse initializers are not supported");
    for (const auto& v : g.input()) out.inputs.push_back(value_info(v));
    for (const auto& v : g.output()) out.outputs.push_back(value_info(v));
    for (const auto& v : g.value_info()) out.value_infos.push_back(value_info(v));
    std::map<std::string, int> name_count;
    for (int i = 0; i < g.node_size(); ++i) {
      auto& n = *g.mutable_node(i);
      ir::Node node;
      node.op_type = n.op_type();
      if (node.op_type.empty()) throw InvalidArgument("graph '" + g.name() + "': node " + std::to_string(i) + " has no op_type");
      node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
      node.name = n.name().empty() ? node.op_type + "_" + std::to_string(i) : n.name();
      node.inputs.assign(n.input().begin(), n.input().end());
      node.outputs.assign(n.output().begin(), n.output().end());
      for (auto& a : *n.mutable_attribute()) {
        if (a.name().empty()) throw InvalidArgument(node.describe() + ": an attribute has no name");
        if (!a.ref_attr_name().empty())
          throw InvalidArgument(node.describe() + ": attribute '" + a.name() + "' refers to a function's attribute ('" +
                                a.ref_attr_name() + "') outside any function");
        node.attrs[a.name()] = attribute(a, node.describe());
      }
      out.nodes.push_back(std::move(node));
    }
    --depth;
    return out;
  }
};

// Sorts nodes topologically and checks that every input is produced by a node, a graph input, an
// initializer or (for subgraphs) an enclosing scope. `outer` holds the names visible from outside.
void check_and_sort(ir::Graph& g, const std::set<std::string>& outer) {
  std::set<std::string> available = outer;
  for (const auto& v : g.inputs) available.insert(v.name);
  for (const auto& [name, t] : g.initializers) available.insert(name);
  std::set<std::string> produced;
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty()) {
        if (!produced.insert(o).second || g.is_initializer(o))
          throw InvalidArgument(n.describe() + ": output '" + o + "' is also produced elsewhere in the graph");
      }
  std::vector<ir::Node> sorted;
  std::vector<bool> done(g.nodes.size(), false);
  // Nodes usually come sorted already: a single pass suffices; otherwise repeat until stuck.
  for (bool progress = true; progress && sorted.size() < g.nodes.size();) {
    progress = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (done[i]) continue;
      const ir::Node& n = g.nodes[i];
      bool ready = true;
      for (const auto& in : n.inputs)
        if (!in.empty() && !available.count(in)) {
          if (!produced.count(in))
            throw InvalidArgument(n.describe() + ": input '" + in +
                                  "' is not a graph input, an initializer, nor the output of any node");
          ready = false;
          break;
        }
      if (!ready) continue;
      for (const auto& o : n.outputs)
        if (!o.empty()) available.insert(o);
      done[i] = true;
      sorted.push_back(n);
      progress = true;
    }
  }
  if (sorted.size() != g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!done[i]) throw InvalidArgument(g.nodes[i].describe() + ": is part of a cycle in the graph");
  }
  g.nodes = std::move(sorted);
  for (const auto& o : g.outputs)
    if (!available.count(o.name))
      throw InvalidArgument("graph output '" + o.name + "' is not produced by any node, input or initializer");
  // Subgraphs see everything available at this level.
  for (auto& n : g.nodes)
    for (auto& [name, a] : n.attrs) {
      if (a.g) check_and_sort(*a.g, available);
      for (auto& sg : a.graphs) check_and_sort(*sg, available);
    }
}

}  // namespace

namespace {

// Raw data of at least this many bytes is parted from the protobuf (see wire.h).
constexpr size_t kPartMinBytes = 4096;

ir::Model load(const void* bytes, size_t size, const ExternalDataDir& ext, std::shared_ptr<const void> keep) {
  onnx::ModelProto mp;
  if (size == 0) throw InvalidArgument("the model is empty (0 bytes)");
  if (size > size_t(std::numeric_limits<int>::max()))
    throw InvalidArgument("the model is " + std::to_string(size) +
                          " bytes: a protobuf file holds at most 2 GB (larger models keep their weights in external data)");
  // The weights are parted from the file before protobuf parses it (never copied into its strings);
  // bytes this cannot read are parsed as they are, so protobuf says what is wrong.
  Converter c{ext, 0, nullptr, nullptr, nullptr};
  const auto* data = static_cast<const uint8_t*>(bytes);
  std::optional<wire::Skeleton> skeleton = wire::split(data, size, kPartMinBytes);
  if (skeleton && mp.ParseFromString(skeleton->bytes)) {
    c.parted = &*skeleton;
    c.base = data;
    c.keep = std::move(keep);
  } else if (!mp.ParseFromArray(bytes, int(size))) {
    throw InvalidArgument("the model is not a valid ONNX ModelProto (truncated or corrupted file?)");
  }
  if (!mp.has_graph()) throw InvalidArgument("the model has no graph");
  inline_functions(mp);  // before the opsets are read: a function's imports join the model's
  ir::Model m;
  m.ir_version = mp.ir_version();
  for (const auto& o : mp.opset_import()) {
    std::string d = o.domain() == "ai.onnx" ? "" : o.domain();
    m.opsets[d] = o.version();
  }
  if (mp.opset_import_size() == 0) m.opsets[""] = 1;  // IR v2 models without imports
  m.producer_name = mp.producer_name();
  m.producer_version = mp.producer_version();
  m.domain = mp.domain();
  m.model_version = mp.model_version();
  m.doc_string = mp.doc_string();
  for (const auto& kv : mp.metadata_props()) m.metadata[kv.key()] = kv.value();
  try {
    m.graph = c.graph(*mp.mutable_graph());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // a standard-library error on malformed data (every known one is an Error)
    throw InvalidArgument(std::string("malformed model: ") + e.what());
  }
  check_and_sort(m.graph, {});
  validate_model(m);
  return m;
}

}  // namespace

ir::Model load_model_from_memory(const void* bytes, size_t size, const ExternalDataDir& ext) {
  return load(bytes, size, ext, nullptr);
}

ir::Model load_model_from_bytes(const std::string& bytes, const ExternalDataDir& ext) {
  return load(bytes.data(), bytes.size(), ext, nullptr);
}

ir::Model load_model(const std::string& path, const std::string& external_data_root) {
  std::shared_ptr<MappedFile> file;
  try {
    file = std::make_shared<MappedFile>(path);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("model: ") + e.what());
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  try {
    ir::Model m = load(file->data(), file->size(), {dir, external_data_root, std::make_shared<MappedFiles>()}, file);
    m.path = path;
    return m;
  } catch (const NotImplemented& e) {
    throw NotImplemented("model '" + path + "': " + e.what());
  } catch (const Error& e) {
    throw InvalidArgument("model '" + path + "': " + e.what());
  }
}

}  // namespace onnxgpu::loader
