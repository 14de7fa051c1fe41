#include "loader/validate.h"

#include <onnx/defs/schema.h>

#include <map>
#include <utility>

#include "onnxgpu/error.h"

namespace onnxgpu::loader {

namespace {

using Kind = ir::Attribute::Kind;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Float: return "a float";
    case Kind::Int: return "an int";
    case Kind::String: return "a string";
    case Kind::Tensor: return "a tensor";
    case Kind::Graph: return "a graph";
    case Kind::Floats: return "a list of floats";
    case Kind::Ints: return "a list of ints";
    case Kind::Strings: return "a list of strings";
    case Kind::Tensors: return "a list of tensors";
    case Kind::Graphs: return "a list of graphs";
    case Kind::Undefined: break;
  }
  return "of another type";
}

// The ir kind of a schema attribute type; Undefined for types the IR keeps no value of.
Kind kind_of(onnx::AttributeProto::AttributeType t) {
  switch (t) {
    case onnx::AttributeProto::FLOAT: return Kind::Float;
    case onnx::AttributeProto::INT: return Kind::Int;
    case onnx::AttributeProto::STRING: return Kind::String;
    case onnx::AttributeProto::TENSOR: return Kind::Tensor;
    case onnx::AttributeProto::GRAPH: return Kind::Graph;
    case onnx::AttributeProto::FLOATS: return Kind::Floats;
    case onnx::AttributeProto::INTS: return Kind::Ints;
    case onnx::AttributeProto::STRINGS: return Kind::Strings;
    case onnx::AttributeProto::TENSORS: return Kind::Tensors;
    case onnx::AttributeProto::GRAPHS: return Kind::Graphs;
    default: return Kind::Undefined;
  }
}

void check_opsets(const ir::Model& m) {
  if (m.ir_version < 1)
    throw InvalidArgument("the model's IR version " + std::to_string(m.ir_version) + " is not valid (expected 1 to " +
                          std::to_string(kMaxIrVersion) + ")");
  if (m.ir_version > kMaxIrVersion)
    throw InvalidArgument("the model's IR version " + std::to_string(m.ir_version) +
                          " is newer than this engine knows (up to " + std::to_string(kMaxIrVersion) + ")");
  for (const auto& [domain, version] : m.opsets) {
    int64_t max = domain.empty() ? kMaxOnnxOpset
                  : domain == "ai.onnx.ml" ? kMaxOnnxMlOpset
                  : domain == ir::kMsDomain ? kMaxMsOpset
                                            : 0;
    std::string name = domain.empty() ? "ai.onnx" : domain;
    if (version < 1)
      throw InvalidArgument("the model imports opset " + std::to_string(version) + " of domain '" + name +
                            "', which is not valid (opsets start at 1)");
    if (max && version > max)
      throw InvalidArgument("the model imports opset " + std::to_string(version) + " of domain '" + name +
                            "', newer than this engine knows (up to " + std::to_string(max) + ")");
  }
}

// The attribute types of ops that libonnx has no schema for and the engine runs: ONNX Runtime's
// contrib ops (com.microsoft, and SimplifiedLayerNormalization, which ONNX Runtime declares in the
// ONNX domain), as its contrib schemas declare them, and ONNX ops newer than libonnx's schemas.
using AttributeKinds = std::map<std::string, Kind>;
const AttributeKinds* extra_schema(const std::string& domain, const std::string& op) {
  static const std::map<std::pair<std::string, std::string>, AttributeKinds> table = {
      {{ir::kMsDomain, "SkipLayerNormalization"}, {{"epsilon", Kind::Float}}},
      {{ir::kMsDomain, "SkipSimplifiedLayerNormalization"}, {{"epsilon", Kind::Float}}},
      {{ir::kMsDomain, "FastGelu"}, {}},
      {{ir::kMsDomain, "BiasGelu"}, {}},
      {{ir::kMsDomain, "Gelu"}, {}},
      {{ir::kMsDomain, "FusedMatMul"},
       {{"alpha", Kind::Float}, {"transA", Kind::Int}, {"transB", Kind::Int}, {"transBatchA", Kind::Int}, {"transBatchB", Kind::Int}}},
      {{ir::kMsDomain, "BiasSplitGelu"}, {}},
      {{ir::kMsDomain, "MatMulBnb4"}, {{"K", Kind::Int}, {"N", Kind::Int}, {"block_size", Kind::Int}, {"quant_type", Kind::Int}}},
      {{ir::kMsDomain, "FusedConv"},
       {{"activation", Kind::String}, {"activation_params", Kind::Floats}, {"auto_pad", Kind::String}, {"dilations", Kind::Ints},
        {"group", Kind::Int}, {"kernel_shape", Kind::Ints}, {"pads", Kind::Ints}, {"strides", Kind::Ints}}},
      {{ir::kMsDomain, "FusedGemm"},
       {{"activation", Kind::String}, {"activation_alpha", Kind::Float}, {"activation_beta", Kind::Float},
        {"activation_gamma", Kind::Float}, {"alpha", Kind::Float}, {"beta", Kind::Float}, {"transA", Kind::Int}, {"transB", Kind::Int}}},
      {{ir::kMsDomain, "EmbedLayerNormalization"}, {{"epsilon", Kind::Float}, {"mask_index_type", Kind::Int}}},
      {{ir::kMsDomain, "QEmbedLayerNormalization"}, {{"epsilon", Kind::Float}}},
      {{ir::kMsDomain, "Attention"},
       {{"num_heads", Kind::Int}, {"unidirectional", Kind::Int}, {"qkv_hidden_sizes", Kind::Ints}, {"mask_filter_value", Kind::Float},
        {"scale", Kind::Float}, {"do_rotary", Kind::Int}, {"rotary_embedding_dim", Kind::Int}, {"past_present_share_buffer", Kind::Int}}},
      {{ir::kMsDomain, "QAttention"},
       {{"num_heads", Kind::Int}, {"unidirectional", Kind::Int}, {"do_rotary", Kind::Int}, {"past_present_share_buffer", Kind::Int},
        {"mask_filter_value", Kind::Float}, {"scale", Kind::Float}}},
      {{ir::kMsDomain, "QuickGelu"}, {{"alpha", Kind::Float}}},
      {{ir::kMsDomain, "BiasAdd"}, {}},
      {{ir::kMsDomain, "RotaryEmbedding"},
       {{"interleaved", Kind::Int}, {"is_packed_batching", Kind::Int}, {"num_heads", Kind::Int},
        {"rotary_embedding_dim", Kind::Int}, {"scale", Kind::Float}}},
      {{ir::kMsDomain, "MatMulNBits"},
       {{"K", Kind::Int}, {"N", Kind::Int}, {"bits", Kind::Int}, {"block_size", Kind::Int},
        {"accuracy_level", Kind::Int}, {"weight_prepacked", Kind::Int}}},
      {{ir::kMsDomain, "GatherBlockQuantized"},
       {{"bits", Kind::Int}, {"block_size", Kind::Int}, {"gather_axis", Kind::Int}, {"quantize_axis", Kind::Int}}},
      {{ir::kMsDomain, "QLinearAdd"}, {}},
      {{ir::kMsDomain, "QLinearMul"}, {}},
      {{ir::kMsDomain, "QLinearWhere"}, {}},
      {{ir::kMsDomain, "QLinearSigmoid"}, {}},
      {{ir::kMsDomain, "QLinearLeakyRelu"}, {{"alpha", Kind::Float}}},
      {{ir::kMsDomain, "QLinearGlobalAveragePool"}, {{"channels_last", Kind::Int}}},
      {{ir::kMsDomain, "QLinearConcat"}, {{"axis", Kind::Int}}},
      {{ir::kMsDomain, "MatMulIntegerToFloat"}, {}},
      {{ir::kMsDomain, "DynamicQuantizeMatMul"}, {}},
      {{ir::kMsDomain, "QGemm"}, {{"alpha", Kind::Float}, {"transA", Kind::Int}, {"transB", Kind::Int}}},
      {{ir::kMsDomain, "QLinearAveragePool"},
       {{"auto_pad", Kind::String}, {"ceil_mode", Kind::Int}, {"channels_last", Kind::Int}, {"count_include_pad", Kind::Int},
        {"kernel_shape", Kind::Ints}, {"pads", Kind::Ints}, {"strides", Kind::Ints}}},
      {{ir::kMsDomain, "GroupQueryAttention"},
       {{"num_heads", Kind::Int}, {"kv_num_heads", Kind::Int}, {"scale", Kind::Float}, {"softcap", Kind::Float},
        {"local_window_size", Kind::Int}, {"do_rotary", Kind::Int}, {"rotary_interleaved", Kind::Int},
        {"smooth_softmax", Kind::Int}, {"qk_output", Kind::Int}}},
      {{ir::kMsDomain, "MultiHeadAttention"},
       {{"num_heads", Kind::Int}, {"scale", Kind::Float}, {"mask_filter_value", Kind::Float}, {"unidirectional", Kind::Int}}},
      {{"", "Attention"},
       {{"is_causal", Kind::Int}, {"kv_num_heads", Kind::Int}, {"q_num_heads", Kind::Int}, {"qk_matmul_output_mode", Kind::Int},
        {"scale", Kind::Float}, {"softcap", Kind::Float}, {"softmax_precision", Kind::Int}, {"left_window_size", Kind::Int},
        {"right_window_size", Kind::Int}}},
      {{"", "SimplifiedLayerNormalization"}, {{"axis", Kind::Int}, {"epsilon", Kind::Float}, {"stash_type", Kind::Int}}},
      {{"", "RMSNormalization"}, {{"axis", Kind::Int}, {"epsilon", Kind::Float}, {"stash_type", Kind::Int}}},
      {{"", "RotaryEmbedding"}, {{"interleaved", Kind::Int}, {"num_heads", Kind::Int}, {"rotary_embedding_dim", Kind::Int}}},
      {{"", "BitwiseAnd"}, {}},
      {{"", "BitwiseOr"}, {}},
      {{"", "BitwiseXor"}, {}},
      {{"", "BitwiseNot"}, {}},
      {{"", "BitCast"}, {{"to", Kind::Int}}},
      {{"", "CumProd"}, {{"exclusive", Kind::Int}, {"reverse", Kind::Int}}},
      {{"", "Swish"}, {{"alpha", Kind::Float}}},
      {{"", "Mish"}, {}},
      {{"", "SwiGLU"}, {{"alpha", Kind::Float}}},
      {{"", "GridSample"}, {{"align_corners", Kind::Int}, {"mode", Kind::String}, {"padding_mode", Kind::String}}},
      {{"", "AffineGrid"}, {{"align_corners", Kind::Int}}},
      {{"", "GroupNormalization"}, {{"epsilon", Kind::Float}, {"num_groups", Kind::Int}, {"stash_type", Kind::Int}}},
      {{"", "CenterCropPad"}, {{"axes", Kind::Ints}}},
      {{"", "TensorScatter"}, {{"axis", Kind::Int}, {"mode", Kind::String}}},
      {{"", "Col2Im"}, {{"dilations", Kind::Ints}, {"pads", Kind::Ints}, {"strides", Kind::Ints}}},
      {{"", "DeformConv"},
       {{"dilations", Kind::Ints}, {"group", Kind::Int}, {"kernel_shape", Kind::Ints}, {"offset_group", Kind::Int},
        {"pads", Kind::Ints}, {"strides", Kind::Ints}}},
      {{"", "DFT"}, {{"axis", Kind::Int}, {"inverse", Kind::Int}, {"onesided", Kind::Int}}},
  };
  auto it = table.find({domain, op});
  return it == table.end() ? nullptr : &it->second;
}

void check_kind(const ir::Node& n, const std::string& name, const ir::Attribute& a, Kind want) {
  if (want != Kind::Undefined && a.kind != want)
    throw InvalidArgument(n.describe() + ": attribute '" + name + "' is " + kind_name(a.kind) + ", " + n.op_type +
                          " expects " + kind_name(want));
}

// Every node's domain is imported, and its attribute types are those of its op's schema at the model's
// opset (libonnx's for ONNX ops, else extra_schema's). Attributes a schema does not list are left to the
// kernels (schemas of opsets newer than libonnx's may have them).
void check_attributes(const ir::Graph& g, const ir::Model& m) {
  for (const auto& n : g.nodes) {
    if (!n.domain.empty() && n.domain != "ai.onnx" && m.opset(n.domain) == 0)
      throw InvalidArgument(n.describe() + " is in domain '" + n.domain +
                            "', which the model does not import (no opset_import entry for it)");
    const std::string domain = n.domain == "ai.onnx" ? std::string() : n.domain;
    const onnx::OpSchema* schema =
        domain.empty() ? onnx::OpSchemaRegistry::Schema(n.op_type, int(m.opset("")), "") : nullptr;
    if (schema) {
      for (const auto& [name, a] : n.attrs) {
        auto it = schema->attributes().find(name);
        if (it != schema->attributes().end()) check_kind(n, name, a, kind_of(it->second.type));
      }
    } else if (const AttributeKinds* kinds = extra_schema(domain, n.op_type)) {
      for (const auto& [name, a] : n.attrs) {
        auto it = kinds->find(name);
        if (it != kinds->end()) check_kind(n, name, a, it->second);
      }
    }
    for (const auto& [name, a] : n.attrs) {
      if (a.g) check_attributes(*a.g, m);
      for (const auto& sg : a.graphs) check_attributes(*sg, m);
    }
  }
}

}  // namespace

void validate_model(const ir::Model& model) {
  check_opsets(model);
  check_attributes(model.graph, model);
}

}  // namespace onnxgpu::loader
