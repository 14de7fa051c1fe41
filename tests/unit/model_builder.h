// Builds small ONNX models in memory for tests (onnx::ModelProto from Debian's libonnx).
#pragma once
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "loader/tensor_proto.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu::testing {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  // A graph input; dims < 0 are symbolic ("d0", "d1", ...).
  ModelBuilder& input(const std::string& name, DType dtype, const std::vector<int64_t>& dims) {
    value_info(model_.mutable_graph()->add_input(), name, dtype, dims);
    return *this;
  }
  ModelBuilder& output(const std::string& name, DType dtype) {
    auto* v = model_.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(int32_t(dtype));
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, const Tensor& t) {
    loader::tensor_to_proto(t, name, *model_.mutable_graph()->add_initializer());
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  std::string bytes() const { return model_.SerializeAsString(); }

 private:
  static void value_info(onnx::ValueInfoProto* v, const std::string& name, DType dtype, const std::vector<int64_t>& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(int32_t(dtype));
    auto* shape = tt->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = shape->add_dim();
      if (dims[i] >= 0) d->set_dim_value(dims[i]);
      else d->set_dim_param("d" + std::to_string(i));
    }
  }
  onnx::ModelProto model_;
};

// `model` importing `domain` at version 1 (its nodes' domains set by the builder): com.microsoft ops.
inline std::string in_domain_import(const std::string& model, const std::string& domain) {
  onnx::ModelProto m;
  m.ParseFromString(model);
  auto* d = m.add_opset_import();
  d->set_domain(domain);
  d->set_version(1);
  return m.SerializeAsString();
}

}  // namespace onnxgpu::testing
