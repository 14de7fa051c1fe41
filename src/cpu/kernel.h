// The CPU reference kernels' interface. One op family per file (src/cpu/<family>.cpp); each family
// registers its ops in register_<family>(). Kernels compute output shapes themselves and follow ONNX
// semantics exactly: they are the source of truth every GPU result is compared with.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/tensor.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::cpu {

class KernelContext {
 public:
  KernelContext(const ir::Node& node, int64_t opset, std::vector<const Tensor*> inputs)
      : node(node), opset(opset), inputs_(std::move(inputs)) {}

  const ir::Node& node;
  int64_t opset;  // the model's opset version for this node's domain

  size_t num_inputs() const { return inputs_.size(); }  // including omitted optionals before the last given one
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] && inputs_[i]->defined(); }
  const Tensor& input(size_t i) const;  // throws, naming the node and the input, when omitted
  // Input i's dtype and shape for the shared checks of src/ops (nothing when omitted).
  ops::Operand operand(size_t i) const {
    return has_input(i) ? ops::Operand{inputs_[i]->dtype(), inputs_[i]->shape()} : ops::Operand{};
  }
  std::vector<ops::Operand> operands() const {
    std::vector<ops::Operand> r;
    for (size_t i = 0; i < num_inputs(); ++i) r.push_back(operand(i));
    return r;
  }
  size_t num_outputs() const { return node.outputs.size(); }
  bool output_wanted(size_t i) const { return i < node.outputs.size() && !node.outputs[i].empty(); }

  // Runs a subgraph attribute (If/Loop/Scan bodies) with `inputs` bound to its declared inputs; the
  // subgraph sees the values of the enclosing scopes. Set by the graph runner.
  std::function<std::vector<Tensor>(const ir::Graph&, const std::vector<Tensor>&)> run_subgraph;

  // Throws InvalidArgument "node 'n' (Op): msg".
  [[noreturn]] void fail(const std::string& msg) const;
  // fail() as the src/ops rules take it.
  ops::Fail fail_fn() const { return [this](const std::string& m) { fail(m); }; }
  // Throws NotImplemented "node 'n' (Op): msg".
  [[noreturn]] void unsupported(const std::string& msg) const;

  // Helpers for the common checks.
  int64_t normalize_axis(int64_t axis, int64_t rank) const;  // handles negatives, range-checks
  std::string input_name(size_t i) const { return i < node.inputs.size() ? node.inputs[i] : std::string(); }

 private:
  std::vector<const Tensor*> inputs_;
};

// Returns the node's outputs in order (an omitted optional output may be returned as an undefined Tensor;
// trailing ones may be left out).
using Kernel = std::function<std::vector<Tensor>(KernelContext&)>;

class KernelRegistry {
 public:
  // An op of a model's domain: "" (ai.onnx) or another one, e.g. ir::kMsDomain.
  void add(const std::string& op_type, Kernel k, const std::string& domain = "");
  const Kernel* find(const std::string& op_type, const std::string& domain = "") const;
  std::vector<std::string> op_types() const;  // "Op" in ai.onnx, "domain.Op" in another domain

 private:
  // domain -> op_type -> kernel; found without building a key string (once per node and run).
  std::map<std::string, std::map<std::string, Kernel, std::less<>>, std::less<>> kernels_;
};

// The registry with every family registered (built once).
const KernelRegistry& registry();

// Families (src/cpu/<family>.cpp).
void register_unary(KernelRegistry&);          // Abs, Exp, Relu, Sigmoid, Gelu, Swish, Mish, IsNaN, Not, BitwiseNot, ...
void register_binary(KernelRegistry&);         // Add..Pow, And/Or/Xor, BitShift, Bitwise*, SwiGLU, comparisons, Where,
                                               // Max/Min/Sum/Mean, PRelu
void register_cast(KernelRegistry&);           // Cast, CastLike, Clip, BitCast
void register_reduce(KernelRegistry&);         // Reduce*, ArgMax, ArgMin
void register_softmax(KernelRegistry&);        // Softmax, LogSoftmax, Hardmax
void register_sort(KernelRegistry&);           // TopK, Unique, NonZero
void register_cumsum(KernelRegistry&);         // CumSum, CumProd
void register_shape_ops(KernelRegistry&);      // Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, Identity, Dropout, ...
void register_layout(KernelRegistry&);         // Transpose, Concat, Split, Slice, Expand, Tile, Pad, DepthToSpace, ...,
                                               // CenterCropPad, ReverseSequence
void register_generators(KernelRegistry&);     // Constant, ConstantOfShape, Range, EyeLike, OneHot, Trilu
void register_indexing(KernelRegistry&);       // Gather*, Scatter*, Compress, TensorScatter
void register_matmul(KernelRegistry&);         // MatMul, MatMulInteger, QLinearMatMul, MatMulIntegerToFloat, Gemm, Einsum, Det
void register_conv(KernelRegistry&);           // Conv, ConvInteger, QLinearConv, ConvTranspose, Col2Im, DeformConv
void register_pool(KernelRegistry&);           // AveragePool, MaxPool, Global*Pool, LRN, RoiAlign
void register_normalization(KernelRegistry&);  // BatchNormalization, InstanceNormalization, LayerNormalization, MVN,
                                               // GroupNormalization, LpNormalization,
                                               // RMSNormalization, SimplifiedLayerNormalization; com.microsoft
                                               // SkipLayerNormalization, SkipSimplifiedLayerNormalization
void register_resize(KernelRegistry&);         // Resize, Upsample
void register_rnn(KernelRegistry&);            // RNN, GRU, LSTM
void register_loss(KernelRegistry&);           // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void register_quantize(KernelRegistry&);       // QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
void register_detection(KernelRegistry&);      // NonMaxSuppression
void register_control_flow(KernelRegistry&);   // If, Loop, Scan
void register_bias_activation(KernelRegistry&);  // com.microsoft FastGelu, BiasGelu, Gelu, QuickGelu, BiasAdd
void register_rotary(KernelRegistry&);         // RotaryEmbedding (opset 23) and com.microsoft RotaryEmbedding
void register_block_quant(KernelRegistry&);    // com.microsoft MatMulNBits, GatherBlockQuantized
void register_attention(KernelRegistry&);      // Attention; com.microsoft GroupQueryAttention, MultiHeadAttention
void register_grid(KernelRegistry&);           // GridSample, AffineGrid
void register_qlinear(KernelRegistry&);         // com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
                                               // QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QGemm, QLinearSoftmax
void register_text(KernelRegistry&);           // TfIdfVectorizer
void register_ml(KernelRegistry&);             // ai.onnx.ml TreeEnsembleRegressor/Classifier, TreeEnsemble, Linear*, Scaler,
                                               // Normalizer, Binarizer, ArrayFeatureExtractor, Imputer, OneHotEncoder,
                                               // LabelEncoder (numbers), SVMRegressor, SVMClassifier, FeatureVectorizer
void register_linear_attention(KernelRegistry&);  // LinearAttention, CausalConvWithState
void register_spectral(KernelRegistry&);       // DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix

}  // namespace onnxgpu::cpu
