// The ops composite_ops.h lists, each call's body built from its inputs, attributes and the model's opsets.
#include "loader/composite_ops.h"

#include <map>
#include <string>
#include <vector>

#include "onnxgpu/error.h"

namespace onnxgpu::loader::composite {
namespace {

onnx::NodeProto make_node(const char* op, const char* domain, std::vector<std::string> in, std::vector<std::string> out) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_domain(domain);
  for (auto& s : in) n.add_input(s);
  for (auto& s : out) n.add_output(s);
  return n;
}

void set_int(onnx::NodeProto& n, const char* name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_ints(onnx::NodeProto& n, const char* name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void set_float(onnx::NodeProto& n, const char* name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void set_string(onnx::NodeProto& n, const char* name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

onnx::NodeProto cast_node(const std::string& in, const std::string& out, int32_t to) {
  onnx::NodeProto c;
  c.set_op_type("Cast");
  c.add_input(in);
  c.add_output(out);
  set_int(c, "to", to);
  return c;
}

// A Constant node of output `out` holding t.
onnx::NodeProto constant(const std::string& out, onnx::TensorProto t) {
  onnx::NodeProto c;
  c.set_op_type("Constant");
  c.add_output(out);
  auto* v = c.add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  *v->mutable_t() = std::move(t);
  return c;
}

// Constants of int64 and float values: a scalar, or 1-D.
onnx::NodeProto int64_constant(const std::string& out, const std::vector<int64_t>& values, bool scalar) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t.add_dims(int64_t(values.size()));
  for (int64_t x : values) t.add_int64_data(x);
  return constant(out, std::move(t));
}

onnx::NodeProto float_constant(const std::string& out, const std::vector<float>& values, bool scalar) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  if (!scalar) t.add_dims(int64_t(values.size()));
  for (float x : values) t.add_float_data(x);
  return constant(out, std::move(t));
}

// An opset-13 op's int64 list given as input `input` (a Constant added to f), or before opset 13 as
// attribute `attr` (Split's sizes, Unsqueeze's and ReduceSum's axes).
void int64s_by_opset(onnx::FunctionProto& f, onnx::NodeProto& n, int64_t opset, const char* attr, const std::string& input,
                     const std::vector<int64_t>& v) {
  if (opset < 13) {
    set_ints(n, attr, v);
    return;
  }
  *f.add_node() = int64_constant(input, v, false);
  n.add_input(input);
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

// The float attributes of the activations ONNX Runtime fuses into FusedConv and FusedGemm, in the order
// FusedConv's activation_params gives them, with ONNX's defaults; nullptr for another op.
using ActivationParams = std::vector<std::pair<const char*, float>>;
const ActivationParams* activation_params(const std::string& op) {
  static const std::map<std::string, ActivationParams> kParams = {
      {"Relu", {}}, {"Tanh", {}}, {"Sigmoid", {}}, {"Softsign", {}}, {"Softplus", {}},
      {"LeakyRelu", {{"alpha", 0.01f}}}, {"Elu", {{"alpha", 1.0f}}}, {"ThresholdedRelu", {{"alpha", 1.0f}}},
      {"HardSigmoid", {{"alpha", 0.2f}, {"beta", 0.5f}}},
      {"Selu", {{"alpha", 1.67326319217681884765625f}, {"gamma", 1.05070102214813232421875f}}}};
  auto it = kParams.find(op);
  return it == kParams.end() ? nullptr : &it->second;
}

// An activation node `op` from `in` to `out` with float attributes.
onnx::NodeProto activation_node(const std::string& op, const std::string& in, const std::string& out, const ActivationParams& attrs) {
  auto n = make_node(op.c_str(), "", {in}, {out});
  for (const auto& [name, v] : attrs) set_float(n, name, v);
  return n;
}

// "node 'name' (com.microsoft.Op)", for the errors.
std::string describe(const onnx::NodeProto& call) { return "node '" + call.name() + "' (com.microsoft." + call.op_type() + ")"; }

// com.microsoft's DynamicQuantizeMatMul(A, B, b_scale, b_zero_point, bias): A quantized to uint8 as
// DynamicQuantizeLinear does, then MatMulIntegerToFloat (ONNX Runtime's definition; its outputs measured
// bit for bit).
onnx::FunctionProto dynamic_quantize_matmul(const onnx::NodeProto&, const Model&) {
  onnx::FunctionProto f = signature("DynamicQuantizeMatMul", {"A", "B", "b_scale", "b_zero_point", "bias"}, {"Y"});
  *f.add_node() = make_node("DynamicQuantizeLinear", "", {"A"}, {"a_q", "a_scale", "a_zero_point"});
  *f.add_node() = make_node("MatMulIntegerToFloat", "com.microsoft",
                            {"a_q", "B", "a_scale", "b_scale", "a_zero_point", "b_zero_point", "bias"}, {"Y"});
  return f;
}

// Attention's and QAttention's part after the projections q, k, v: MultiHeadAttention with the packed bias,
// mask_index as its key_padding_mask ([B] lengths or [B, T] 0/1), `attention_bias` (a formal input, or "" for
// none), num_heads, scale, mask_filter_value and unidirectional. A past [2, B, N, P, H] is split into
// MultiHeadAttention's past_key and past_value, and its presents stacked into present [2, B, N, P + S, H].
void attend(onnx::FunctionProto& f, const onnx::NodeProto& call, const Model& model, bool past,
            const std::string& attention_bias) {
  const std::string what = describe(call);
  const bool present = call.output_size() > 1 && !call.output(1).empty();
  if (present && !past) throw NotImplemented(what + ": a present without a past is not supported");
  if (const auto* r = attribute(call, "do_rotary"); r && r->i() != 0)
    throw NotImplemented(what + ": do_rotary is not supported");
  auto mha = make_node("MultiHeadAttention", "com.microsoft", {"q", "k", "v", "bias", "mask_index", attention_bias}, {"output"});
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
      int64s_by_opset(f, u, model.onnx_opset(), "axes", std::string("axis0_") + kv, {0});
      *f.add_node() = u;
    }
    auto cat = make_node("Concat", "", {"stacked_key", "stacked_value"}, {"present"});
    set_int(cat, "axis", 0);
    *f.add_node() = cat;
  }
}

// com.microsoft's Attention (ONNX Runtime's BERT- and GPT-2-style fused attention): the packed weights
// [D_in, Dq + Dk + Dv] split into Q, K and V's (constants: folded at plan time), three products, then
// attend(). past_sequence_length (a shared past and present buffer), do_rotary and a present without a past
// are refused.
onnx::FunctionProto attention(const onnx::NodeProto& call, const Model& model) {
  const std::string what = describe(call);
  if (given(call, 6)) throw NotImplemented(what + ": past_sequence_length (a past shared with the present) is not supported");
  onnx::FunctionProto f = signature("Attention", {"input", "weights", "bias", "mask_index", "past", "attention_bias",
                                                  "past_sequence_length"}, {"output", "present"});
  auto split = make_node("Split", "", {"weights"}, {"w_q", "w_k", "w_v"});
  set_int(split, "axis", 1);
  if (const auto* sizes = attribute(call, "qkv_hidden_sizes"))
    int64s_by_opset(f, split, model.onnx_opset(), "split", "qkv_sizes", {sizes->ints().begin(), sizes->ints().end()});
  else if (model.onnx_opset() >= 18)
    set_int(split, "num_outputs", 3);
  *f.add_node() = split;
  *f.add_node() = make_node("MatMul", "", {"input", "w_q"}, {"q"});
  *f.add_node() = make_node("MatMul", "", {"input", "w_k"}, {"k"});
  *f.add_node() = make_node("MatMul", "", {"input", "w_v"}, {"v"});
  attend(f, call, model, given(call, 4), "attention_bias");
  return f;
}

// com.microsoft's QAttention (Attention on a quantized input and weights, as ONNX Runtime's quantize_dynamic
// writes it after its optimizer): the packed product as MatMulIntegerToFloat (input_scale times weight_scale,
// per tensor or per column, and the zero points), split into Q, K and V, then as Attention. Refused as
// Attention's forms are, and past_present_share_buffer.
onnx::FunctionProto qattention(const onnx::NodeProto& call, const Model& model) {
  const std::string what = describe(call);
  if (const auto* a = attribute(call, "past_present_share_buffer"); a && a->i() != 0)
    throw NotImplemented(what + ": past_present_share_buffer is not supported");
  onnx::FunctionProto f = signature("QAttention", {"input", "weight", "bias", "input_scale", "weight_scale", "mask_index",
                                                   "input_zero_point", "weight_zero_point", "past"}, {"output", "present"});
  *f.add_node() = make_node("MatMulIntegerToFloat", "com.microsoft",
                            {"input", "weight", "input_scale", "weight_scale", "input_zero_point", "weight_zero_point"}, {"qkv"});
  auto split = make_node("Split", "", {"qkv"}, {"q", "k", "v"});
  set_int(split, "axis", -1);
  if (model.onnx_opset() >= 18) set_int(split, "num_outputs", 3);
  *f.add_node() = split;
  attend(f, call, model, given(call, 8), "");
  return f;
}

// com.microsoft's EmbedLayerNormalization (BERT's embeddings as ONNX Runtime's optimizer fuses them):
// word (+ position + segment) embeddings gathered and summed, then LayerNormalization over the hidden dim
// (epsilon: the call's, else ONNX Runtime's default 1e-12). Positions are position_ids when given, else
// 0 .. S-1. Outputs: the normalized sum; mask_index, each sequence's count of mask (int32 [B]; zeros
// without a mask); embedding_sum, the sum before the normalization.
onnx::FunctionProto embed_layer_normalization(const onnx::NodeProto& call, const Model& model) {
  const int64_t opset = model.onnx_opset();
  const std::string what = describe(call);
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
  const auto* e = attribute(call, "epsilon");
  set_float(ln, "epsilon", e ? e->f() : 1e-12f);
  set_int(ln, "axis", -1);
  *f.add_node() = ln;
  if (call.output_size() > 1 && !call.output(1).empty()) {
    auto sum = make_node("ReduceSum", "", {given(call, 7) ? "mask" : "no_mask"}, {"mask_sum"});
    if (!given(call, 7)) {  // no mask: zeros
      *f.add_node() = cast_node("input_ids", "ids_i32", onnx::TensorProto::INT32);
      *f.add_node() = make_node("Sub", "", {"ids_i32", "ids_i32"}, {"no_mask"});
    }
    set_int(sum, "keepdims", 0);
    int64s_by_opset(f, sum, opset, "axes", "mask_axes", {1});
    *f.add_node() = sum;
    *f.add_node() = cast_node("mask_sum", "mask_index", onnx::TensorProto::INT32);
  }
  return f;
}

// com.microsoft's QEmbedLayerNormalization (EmbedLayerNormalization on uint8 tables, as ONNX Runtime's
// quantize_dynamic writes it): each table, gamma and beta dequantized with its scale and zero point (all
// initializers: folded at plan time), then EmbedLayerNormalization with the call's epsilon.
onnx::FunctionProto qembed_layer_normalization(const onnx::NodeProto& call, const Model&) {
  onnx::FunctionProto f = signature("QEmbedLayerNormalization",
                                    {"input_ids", "segment_ids", "word_q", "position_q", "segment_q", "gamma_q", "beta_q", "mask",
                                     "word_scale", "position_scale", "segment_scale", "gamma_scale", "beta_scale", "word_zero_point",
                                     "position_zero_point", "segment_zero_point", "gamma_zero_point", "beta_zero_point"},
                                    {"output", "mask_index"});
  const bool segments = given(call, 4);
  for (const char* t : {"word", "position", "segment", "gamma", "beta"}) {
    if (std::string(t) == "segment" && !segments) continue;
    const std::string n = t;
    *f.add_node() = make_node("DequantizeLinear", "", {n + "_q", n + "_scale", n + "_zero_point"}, {n});
  }
  auto embed = make_node("EmbedLayerNormalization", "com.microsoft",
                         {"input_ids", "segment_ids", "word", "position", segments ? "segment" : "", "gamma", "beta", "mask"},
                         {"output", "mask_index"});
  if (const auto* e = attribute(call, "epsilon")) *embed.add_attribute() = *e;
  *f.add_node() = embed;
  return f;
}

// com.microsoft's QLinearWhere (Where on quantized X and Y, as ONNX Runtime's QOperator quantizer writes it):
// X and Y dequantized, Where, the result quantized with z's scale and zero point. ONNX Runtime's tables give
// the same bytes: x_scale * (x - x_zero_point), then round-half-even(v / z_scale) + z_zero_point, saturated.
onnx::FunctionProto qlinear_where(const onnx::NodeProto&, const Model&) {
  onnx::FunctionProto f = signature("QLinearWhere", {"condition", "X", "x_scale", "x_zero_point", "Y", "y_scale", "y_zero_point",
                                                     "z_scale", "z_zero_point"}, {"Z"});
  *f.add_node() = make_node("DequantizeLinear", "", {"X", "x_scale", "x_zero_point"}, {"x"});
  *f.add_node() = make_node("DequantizeLinear", "", {"Y", "y_scale", "y_zero_point"}, {"y"});
  *f.add_node() = make_node("Where", "", {"condition", "x", "y"}, {"z"});
  *f.add_node() = make_node("QuantizeLinear", "", {"z", "z_scale", "z_zero_point"}, {"Z"});
  return f;
}

// com.microsoft's FusedConv (ONNX Runtime's Conv + activation, saved by its optimizer): Conv with the
// call's convolution attributes, plus Z when given, then `activation` with activation_params (Relu, Tanh,
// Sigmoid, LeakyRelu alpha, Clip min max, HardSigmoid alpha beta). The engine's own fusion joins them
// again on the GPU.
onnx::FunctionProto fused_conv(const onnx::NodeProto& call, const Model& model) {
  const int64_t opset = model.onnx_opset();
  const std::string what = describe(call);
  onnx::FunctionProto f = signature("FusedConv", {"X", "W", "B", "Z"}, {"Y"});
  auto conv = make_node("Conv", "", {"X", "W", "B"}, {given(call, 3) ? "conv" : "pre"});
  for (const char* name : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    if (const auto* a = attribute(call, name)) *conv.add_attribute() = *a;
  *f.add_node() = conv;
  if (given(call, 3)) *f.add_node() = make_node("Add", "", {"conv", "Z"}, {"pre"});
  std::vector<float> params;
  if (const auto* p = attribute(call, "activation_params")) params.assign(p->floats().begin(), p->floats().end());
  auto param = [&](size_t i, float fallback) { return i < params.size() ? params[i] : fallback; };
  const auto* act = attribute(call, "activation");
  const std::string op = act ? act->s() : "";
  if (op == "Clip") {  // bounds as attributes before opset 11, inputs after
    auto n = make_node("Clip", "", {"pre"}, {"Y"});
    if (opset < 11) {
      set_float(n, "min", param(0, -3.402823466e38f));
      set_float(n, "max", param(1, 3.402823466e38f));
    } else {  // float32 bounds: ONNX Runtime's FusedConv is float32
      *f.add_node() = float_constant("clip_min", {param(0, -3.402823466e38f)}, true);
      *f.add_node() = float_constant("clip_max", {param(1, 3.402823466e38f)}, true);
      n.add_input("clip_min");
      n.add_input("clip_max");
    }
    *f.add_node() = n;
    return f;
  }
  // The other activations take their parameters in order, as their attributes alpha, beta.
  const ActivationParams* known = activation_params(op);
  if (!known || (op != "Relu" && op != "Tanh" && op != "Sigmoid" && op != "LeakyRelu" && op != "HardSigmoid"))
    throw NotImplemented(what + ": activation '" + op + "' is not supported (Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid are)");
  ActivationParams attrs = *known;
  for (size_t i = 0; i < attrs.size(); ++i) attrs[i].second = param(i, attrs[i].second);
  *f.add_node() = activation_node(op, "pre", "Y", attrs);
  return f;
}

// com.microsoft's FusedGemm (Gemm + activation, as ONNX Runtime's optimizer saves it): Gemm with its
// transA, transB, alpha and beta, then the activation, which takes the call's activation_<name>
// attributes as its own <name> (ONNX Runtime's rule), those of ONNX's schema only.
onnx::FunctionProto fused_gemm(const onnx::NodeProto& call, const Model&) {
  const std::string what = describe(call);
  onnx::FunctionProto f = signature("FusedGemm", {"A", "B", "C"}, {"Y"});
  const auto* act = attribute(call, "activation");
  const std::string op = act ? act->s() : "";
  auto gemm = make_node("Gemm", "", {"A", "B"}, {op.empty() ? "Y" : "pre"});
  if (given(call, 2)) gemm.add_input("C");
  for (const char* name : {"transA", "transB", "alpha", "beta"})
    if (const auto* a = attribute(call, name)) *gemm.add_attribute() = *a;
  *f.add_node() = gemm;
  if (op.empty()) return f;
  const ActivationParams* known = activation_params(op);
  if (!known)
    throw NotImplemented(what + ": activation '" + op +
                         "' is not supported (Relu, Tanh, Sigmoid, Softsign, Softplus, LeakyRelu, Elu, ThresholdedRelu, HardSigmoid, Selu are)");
  ActivationParams attrs = *known;
  for (auto& [name, v] : attrs)
    if (const auto* a = attribute(call, std::string("activation_") + name)) v = a->f();
  *f.add_node() = activation_node(op, "pre", "Y", attrs);
  return f;
}

// com.microsoft's FusedMatMul (ONNX Runtime's MatMul with transposed operands and a scale): A and B with
// their last two dims swapped where transA / transB say (a Transpose where the model declares the value's
// rank, which the engine's fusion folds into the product; else an Einsum "...ij->...ji"), MatMul, then
// times alpha (cast to A's type: CastLike from opset 15, else a Cast to A's declared type). transBatchA /
// transBatchB are refused.
onnx::FunctionProto fused_matmul(const onnx::NodeProto& call, const Model& model) {
  const std::string what = describe(call);
  auto flag = [&](const char* name) {
    const auto* a = attribute(call, name);
    return a && a->i() != 0;
  };
  if (flag("transBatchA") || flag("transBatchB")) throw NotImplemented(what + ": transBatchA / transBatchB are not supported");
  onnx::FunctionProto f = signature("FusedMatMul", {"A", "B"}, {"Y"});
  auto operand = [&](const char* formal, int input, bool trans) -> std::string {
    if (!trans) return formal;
    const std::string out = std::string(formal) + "_t";
    auto rank = model.ranks.find(input < call.input_size() ? call.input(input) : "");
    if (rank != model.ranks.end() && rank->second >= 2) {
      std::vector<int64_t> perm(size_t(rank->second));
      for (size_t d = 0; d < perm.size(); ++d) perm[d] = int64_t(d);
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      auto t = make_node("Transpose", "", {formal}, {out});
      set_ints(t, "perm", perm);
      *f.add_node() = t;
    } else {
      auto e = make_node("Einsum", "", {formal}, {out});
      set_string(e, "equation", "...ij->...ji");
      *f.add_node() = e;
    }
    return out;
  };
  const std::string a = operand("A", 0, flag("transA")), b = operand("B", 1, flag("transB"));
  const auto* alpha = attribute(call, "alpha");
  const bool scaled = alpha && alpha->f() != 1.0f;
  *f.add_node() = make_node("MatMul", "", {a, b}, {scaled ? "product" : "Y"});
  if (scaled) {
    *f.add_node() = float_constant("alpha_f32", {alpha->f()}, true);
    std::string factor = "alpha_f32";
    auto type = model.types.find(call.input(0));
    if (model.onnx_opset() >= 15) {
      *f.add_node() = make_node("CastLike", "", {"alpha_f32", "A"}, {"alpha"});
      factor = "alpha";
    } else if (type != model.types.end() && type->second != onnx::TensorProto::FLOAT) {
      *f.add_node() = cast_node("alpha_f32", "alpha", type->second);
      factor = "alpha";
    }
    *f.add_node() = make_node("Mul", "", {"product", factor}, {"Y"});
  }
  return f;
}

// com.microsoft's BiasSplitGelu(X, bias) (Stable Diffusion's GEGLU): X + bias split in halves along the
// last dim, the first times Gelu of the second (com.microsoft's Gelu: erf).
onnx::FunctionProto bias_split_gelu(const onnx::NodeProto&, const Model& model) {
  onnx::FunctionProto f = signature("BiasSplitGelu", {"X", "bias"}, {"Y"});
  *f.add_node() = make_node("Add", "", {"X", "bias"}, {"biased"});
  auto split = make_node("Split", "", {"biased"}, {"left", "right"});
  set_int(split, "axis", -1);
  if (model.onnx_opset() >= 18) set_int(split, "num_outputs", 2);
  *f.add_node() = split;
  *f.add_node() = make_node("Gelu", "com.microsoft", {"right"}, {"gelu"});
  *f.add_node() = make_node("Mul", "", {"left", "gelu"}, {"Y"});
  return f;
}

// com.microsoft's MatMulBnb4 (bitsandbytes' 4-bit weights; transformers.js's "bnb4" models): Y = A W with
// W [K, N] dequantized from B, the codes of the flat [N, K] weight two per byte (the first in the high
// nibble), each through the FP4 or NF4 table (quant_type 0 / 1) times its block's absmax. B and absmax are
// initializers in such models, so the dequantization is folded at plan time (W stored in A's type).
onnx::FunctionProto matmul_bnb4(const onnx::NodeProto& call, const Model& model) {
  const std::string what = "node '" + call.name() + "' (com.microsoft.MatMulBnb4)";
  auto int_attr = [&](const char* name, int64_t fallback) {
    const auto* a = attribute(call, name);
    return a ? a->i() : fallback;
  };
  const int64_t K = int_attr("K", 0), N = int_attr("N", 0), block = int_attr("block_size", 0), quant = int_attr("quant_type", 1);
  if (K <= 0 || N <= 0 || block <= 0) throw InvalidArgument(what + ": attributes K, N and block_size must be positive");
  if (quant != 0 && quant != 1) throw InvalidArgument(what + ": quant_type must be 0 (FP4) or 1 (NF4), got " + std::to_string(quant));
  if (model.onnx_opset() < 13) throw NotImplemented(what + ": needs opset 13 (the model imports " + std::to_string(model.onnx_opset()) + ")");
  static const float kFp4[16] = {0.0f, 5.208333333e-03f, 0.66666667f, 1.0f, 0.33333333f, 0.5f, 0.16666667f, 0.25f,
                                 -0.0f, -5.208333333e-03f, -0.66666667f, -1.0f, -0.33333333f, -0.5f, -0.16666667f, -0.25f};
  static const float kNf4[16] = {-1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
                                 -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
                                 0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
                                 0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};
  onnx::FunctionProto f = signature("MatMulBnb4", {"A", "B", "absmax"}, {"Y"});
  for (const auto& [name, v] : {std::pair{"four", 4}, std::pair{"sixteen", 16}}) {  // uint8 scalars
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::UINT8);
    t.add_int32_data(v);
    *f.add_node() = constant(name, std::move(t));
  }
  auto hi = make_node("BitShift", "", {"B", "four"}, {"hi"});
  set_string(hi, "direction", "RIGHT");
  *f.add_node() = hi;
  *f.add_node() = make_node("Mod", "", {"B", "sixteen"}, {"lo"});
  *f.add_node() = int64_constant("pair_axis", {1}, false);
  *f.add_node() = make_node("Unsqueeze", "", {"hi", "pair_axis"}, {"hi2"});
  *f.add_node() = make_node("Unsqueeze", "", {"lo", "pair_axis"}, {"lo2"});
  auto pairs = make_node("Concat", "", {"hi2", "lo2"}, {"pairs"});
  set_int(pairs, "axis", 1);
  *f.add_node() = pairs;
  *f.add_node() = int64_constant("flat", {-1}, false);
  *f.add_node() = make_node("Reshape", "", {"pairs", "flat"}, {"codes_padded"});
  *f.add_node() = int64_constant("codes_start", {0}, false);
  *f.add_node() = int64_constant("codes_end", {N * K}, false);
  *f.add_node() = make_node("Slice", "", {"codes_padded", "codes_start", "codes_end"}, {"codes"});
  const float* table = quant == 0 ? kFp4 : kNf4;
  *f.add_node() = float_constant("table", std::vector<float>(table, table + 16), false);
  *f.add_node() = cast_node("codes", "codes_i32", onnx::TensorProto::INT32);
  *f.add_node() = make_node("Gather", "", {"table", "codes_i32"}, {"normalized"});
  // Each element's block: its flat index / block_size, read from absmax.
  *f.add_node() = int64_constant("zero", {0}, true);
  *f.add_node() = int64_constant("count", {N * K}, true);
  *f.add_node() = int64_constant("one", {1}, true);
  *f.add_node() = make_node("Range", "", {"zero", "count", "one"}, {"index"});
  *f.add_node() = int64_constant("block", {block}, true);
  *f.add_node() = make_node("Div", "", {"index", "block"}, {"block_of"});
  *f.add_node() = make_node("Gather", "", {"absmax", "block_of"}, {"scales"});
  // W in float32 (as ONNX Runtime dequantizes it), the product in float32 too when A is another float type:
  // A cast to float32, Y back to A's type (a Cast to A's declared type, else CastLike from opset 15).
  auto type = model.types.find(call.input_size() > 0 ? call.input(0) : "");
  const bool declared = type != model.types.end();
  const bool other = declared ? type->second != onnx::TensorProto::FLOAT : model.onnx_opset() >= 15;
  *f.add_node() = cast_node("scales", "scales_f32", onnx::TensorProto::FLOAT);
  *f.add_node() = make_node("Mul", "", {"normalized", "scales_f32"}, {"w_flat"});
  *f.add_node() = int64_constant("nk", {N, K}, false);
  *f.add_node() = make_node("Reshape", "", {"w_flat", "nk"}, {"w_nk"});
  auto t = make_node("Transpose", "", {"w_nk"}, {"w"});
  set_ints(t, "perm", {1, 0});
  *f.add_node() = t;
  if (!other) {
    *f.add_node() = make_node("MatMul", "", {"A", "w"}, {"Y"});
    return f;
  }
  *f.add_node() = cast_node("A", "a_f32", onnx::TensorProto::FLOAT);
  *f.add_node() = make_node("MatMul", "", {"a_f32", "w"}, {"y_f32"});
  if (declared) {
    *f.add_node() = cast_node("y_f32", "Y", type->second);
  } else {
    *f.add_node() = make_node("CastLike", "", {"y_f32", "A"}, {"Y"});
  }
  return f;
}

}  // namespace

Make find(const onnx::NodeProto& n) {
  if (n.domain() != "com.microsoft") return nullptr;
  if (n.op_type() == "DynamicQuantizeMatMul") return dynamic_quantize_matmul;
  if (n.op_type() == "Attention") return attention;
  if (n.op_type() == "QAttention") return qattention;
  if (n.op_type() == "EmbedLayerNormalization") return embed_layer_normalization;
  if (n.op_type() == "QEmbedLayerNormalization") return qembed_layer_normalization;
  if (n.op_type() == "FusedConv") return fused_conv;
  if (n.op_type() == "QLinearWhere") return qlinear_where;
  if (n.op_type() == "FusedGemm") return fused_gemm;
  if (n.op_type() == "FusedMatMul") return fused_matmul;
  if (n.op_type() == "BiasSplitGelu") return bias_split_gelu;
  if (n.op_type() == "MatMulBnb4") return matmul_bnb4;
  return nullptr;
}


}  // namespace onnxgpu::loader::composite
