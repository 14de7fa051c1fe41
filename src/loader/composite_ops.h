// Ops the engine runs as a composition of others: a call is inlined at load as a function's would be
// (functions.h), with a body made for it from the inputs it gives, its attributes and the model's opsets
// (the bodies import no opset of their own). A model that defines a function of the same name keeps its own.
//   - com.microsoft DynamicQuantizeMatMul: DynamicQuantizeLinear, then MatMulIntegerToFloat;
//   - com.microsoft Attention (ONNX Runtime's BERT- and GPT-2-style fused attention): a Split of the packed
//     weights, three MatMuls and MultiHeadAttention (a past split into its keys and values, the presents
//     stacked);
//   - com.microsoft QAttention (Attention on quantized input and weights): MatMulIntegerToFloat of the packed
//     weights, a Split into Q, K and V, then as Attention;
//   - com.microsoft EmbedLayerNormalization (BERT's fused embeddings): Gathers of the tables, their sum,
//     LayerNormalization, the mask's count per sequence;
//   - com.microsoft QEmbedLayerNormalization (on uint8 tables): each table, gamma and beta dequantized, then
//     EmbedLayerNormalization;
//   - com.microsoft QLinearWhere: X and Y dequantized, Where, the result quantized with Z's parameters;
//   - com.microsoft FusedConv (Conv + activation, as ONNX Runtime's optimizer saves it): Conv, Z added, the
//     activation;
//   - com.microsoft FusedGemm (Gemm + activation, as ONNX Runtime's optimizer saves it): Gemm, then the
//     activation with the call's activation_alpha / _beta / _gamma as its alpha / beta / gamma;
//   - com.microsoft FusedMatMul (MatMul with transposed operands and a scale): the last two dims of A and B
//     swapped where asked (a Transpose where the model declares the rank, else an Einsum), MatMul, times
//     alpha (cast to A's type: CastLike from opset 15, else a Cast to A's declared type);
//   - com.microsoft BiasSplitGelu (Stable Diffusion's GEGLU): X + bias split in halves, the first times Gelu of
//     the second;
//   - com.microsoft MatMulBnb4 (bitsandbytes' FP4 / NF4 weights): the codes unpacked, looked up, scaled by
//     their block's absmax (folded at plan time for initializers), then MatMul.
// Each matches ONNX Runtime's CPU EP on tests/data/contrib.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>

namespace onnxgpu::loader::composite {

// What a composition may read of the model.
struct Model {
  std::map<std::string, int64_t> opsets;  // domain ("" for ai.onnx) -> version
  std::map<std::string, int64_t> ranks;   // value -> rank, where the main graph declares its shape
  std::map<std::string, int32_t> types;   // value -> element type (TensorProto.DataType), where declared
  int64_t onnx_opset() const {
    auto it = opsets.find("");
    return it == opsets.end() ? 1 : it->second;
  }
};

// Makes the body for a call; throws NotImplemented for a form the composition does not cover.
using Make = onnx::FunctionProto (*)(const onnx::NodeProto& call, const Model& model);

// The maker for node n's op, or null when n is not a composite op.
Make find(const onnx::NodeProto& n);

}  // namespace onnxgpu::loader::composite
