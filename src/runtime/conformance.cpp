#include "runtime/conformance.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <regex>

#include "ir/graph.h"
#include "loader/model_loader.h"
#include "loader/tensor_proto.h"

namespace fs = std::filesystem;

namespace onnxgpu::runtime {

const std::set<std::string>& in_scope_ops() {
  static const std::set<std::string> ops = {
      "Abs", "Add", "And", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Cast", "Ceil", "Clip", "Concat",
      "Constant", "ConstantOfShape", "Conv", "ConvTranspose", "Cos", "CumSum", "DepthToSpace", "Div", "Dropout",
      "Einsum", "Elu", "Equal", "Erf", "Exp", "Expand", "EyeLike", "Flatten", "Floor", "Gather", "GatherElements",
      "GatherND", "Gelu", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "HardSigmoid",
      "HardSwish", "Identity", "InstanceNormalization", "IsInf", "IsNaN", "LayerNormalization", "LeakyRelu", "Less",
      "LessOrEqual", "Log", "LogSoftmax", "LRN", "MatMul", "Max", "MaxPool", "Mean", "Min", "Mod", "Mul", "Neg",
      "NonZero", "Not", "OneHot", "Or", "Pad", "Pow", "PRelu", "Range", "Reciprocal", "ReduceL1", "ReduceL2",
      "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Relu",
      "Reshape", "Resize", "Round", "ScatterElements", "ScatterND", "Selu", "Shape", "Sigmoid", "Sign", "Sin", "Size",
      "Slice", "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tan",
      "Tanh", "ThresholdedRelu", "Tile", "TopK", "Transpose", "Trilu", "Unsqueeze", "Where", "Xor",
      // second tier
      "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cosh", "Sinh", "BitShift", "CastLike", "Celu", "Compress",
      "Det", "DequantizeLinear", "DynamicQuantizeLinear", "GRU", "Hardmax", "LSTM", "MeanVarianceNormalization",
      "NegativeLogLikelihoodLoss", "NonMaxSuppression", "QuantizeLinear", "ReduceLogSum", "RNN", "Scatter", "Shrink",
      "SoftmaxCrossEntropyLoss", "Unique", "Upsample",
      // control flow
      "If", "Loop", "Scan",
      // implemented beyond the list
      "ConvInteger", "QLinearConv", "MatMulInteger", "MaxUnpool", "LpPool", "GlobalLpPool",
      // ONNX Runtime's transformer ops (tests/data/contrib) and the opset-23 ops that share their kernels
      "SimplifiedLayerNormalization", "RMSNormalization", "com.microsoft.SkipLayerNormalization",
      "com.microsoft.SkipSimplifiedLayerNormalization", "com.microsoft.FastGelu", "com.microsoft.BiasGelu",
      "com.microsoft.Gelu", "com.microsoft.Attention", "com.microsoft.EmbedLayerNormalization",
      "com.microsoft.FusedConv", "com.microsoft.FusedGemm", "com.microsoft.QAttention", "com.microsoft.QEmbedLayerNormalization", "com.microsoft.QLinearWhere", "com.microsoft.FusedMatMul", "com.microsoft.BiasSplitGelu",
      "com.microsoft.MatMulBnb4", "com.microsoft.QuantizeLinear", "com.microsoft.DequantizeLinear", "com.microsoft.QLinearSoftmax",
      "com.microsoft.QuickGelu", "com.microsoft.BiasAdd", "RotaryEmbedding", "com.microsoft.RotaryEmbedding",
      "com.microsoft.MatMulNBits", "com.microsoft.GatherBlockQuantized", "com.microsoft.QLinearAdd",
      "com.microsoft.QLinearMul", "com.microsoft.QLinearSigmoid", "com.microsoft.QLinearLeakyRelu",
      "com.microsoft.QLinearGlobalAveragePool", "com.microsoft.QLinearConcat", "com.microsoft.QLinearAveragePool",
      "com.microsoft.QGemm", "com.microsoft.MatMulIntegerToFloat", "com.microsoft.DynamicQuantizeMatMul",
      "Attention", "com.microsoft.GroupQueryAttention", "com.microsoft.MultiHeadAttention",
      // opsets 18-28
      "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitCast", "CumProd", "Swish", "Mish", "SwiGLU",
      "GridSample", "AffineGrid", "DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix",
      "GroupNormalization", "LpNormalization", "CenterCropPad", "ReverseSequence", "TensorScatter", "Col2Im",
      "RoiAlign", "QLinearMatMul", "DeformConv", "TfIdfVectorizer", "LinearAttention", "CausalConvWithState",
      // ai.onnx.ml (CPU kernels only)
      "ai.onnx.ml.TreeEnsembleRegressor", "ai.onnx.ml.TreeEnsemble", "ai.onnx.ml.LinearRegressor", "ai.onnx.ml.Scaler",
      "ai.onnx.ml.Normalizer", "ai.onnx.ml.Binarizer", "ai.onnx.ml.ArrayFeatureExtractor", "ai.onnx.ml.TreeEnsembleClassifier",
      "ai.onnx.ml.LinearClassifier", "ai.onnx.ml.Imputer", "ai.onnx.ml.OneHotEncoder", "ai.onnx.ml.LabelEncoder", "ai.onnx.ml.SVMRegressor", "ai.onnx.ml.SVMClassifier",
      "ai.onnx.ml.FeatureVectorizer"};
  return ops;
}

namespace {

void collect_ops(const ir::Graph& g, std::set<std::string>& ops, bool& has_strings) {
  for (const auto& v : g.inputs) has_strings |= v.dtype == DType::String || !v.is_tensor;
  for (const auto& v : g.outputs) has_strings |= v.dtype == DType::String || !v.is_tensor;
  for (const auto& n : g.nodes) {
    ops.insert(n.domain.empty() ? n.op_type : n.domain + "." + n.op_type);
    for (const auto& [k, a] : n.attrs) {
      if (a.g) collect_ops(*a.g, ops, has_strings);
      for (const auto& sg : a.graphs) collect_ops(*sg, ops, has_strings);
      if (a.kind == ir::Attribute::Kind::Tensor) has_strings |= a.t.dtype() == DType::String;
    }
  }
}

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> r;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) r.push_back(e.path());
  auto index = [&](const fs::path& p) {
    std::string s = p.filename().string().substr(prefix.size());
    return std::atoi(s.c_str());
  };
  std::sort(r.begin(), r.end(), [&](const fs::path& a, const fs::path& b) { return index(a) < index(b); });
  return r;
}

// ONNX 1.12's test data stores bfloat16 tensors as uint16 (same bits): read them as declared.
Tensor as_declared(Tensor t, DType declared) {
  if (declared != DType::BFloat16 || t.dtype() != DType::UInt16) return t;
  Tensor r(DType::BFloat16, t.shape());
  if (t.nbytes()) std::memcpy(r.raw(), t.raw(), t.nbytes());
  return r;
}

}  // namespace

ConformanceTest run_conformance_test(const std::string& dir, const ConformanceOptions& options) {
  ConformanceTest t;
  t.name = fs::path(dir).filename().string();
  auto start = std::chrono::steady_clock::now();
  std::string model_path = (fs::path(dir) / "model.onnx").string();
  try {
    bool has_strings = false;
    std::set<std::string> ops;
    {
      ir::Model m = loader::load_model(model_path);
      collect_ops(m.graph, ops, has_strings);
    }
    t.ops.assign(ops.begin(), ops.end());
    std::vector<std::string> out_of_scope;
    for (const auto& op : ops)
      if (!in_scope_ops().count(op)) out_of_scope.push_back(op);
    if (!out_of_scope.empty() || has_strings) {
      t.status = "unsupported";
      t.detail = has_strings ? "string, sequence and optional values are out of scope"
                             : "op out of scope: " + out_of_scope.front() + (out_of_scope.size() > 1 ? " (and others)" : "");
      return t;
    }
    Session session(model_path, options.session);
    auto sets = sorted_files(dir, "test_data_set_");
    if (sets.empty()) throw InvalidArgument("no test_data_set_* folder in '" + dir + "'");
    for (const auto& set : sets) {
      std::unordered_map<std::string, Tensor> feeds;
      auto input_files = sorted_files(set, "input_");
      for (size_t k = 0; k < input_files.size(); ++k) {
        auto [name, tensor] = loader::read_tensor_pb(input_files[k].string());
        bool by_name = std::any_of(session.inputs().begin(), session.inputs().end(),
                                   [&](const TensorInfo& i) { return i.name == name; });
        if (!by_name) {
          if (k >= session.inputs().size()) throw InvalidArgument(input_files[k].string() + ": more input files than model inputs");
          name = session.inputs()[k].name;
        }
        for (const auto& i : session.inputs())
          if (i.name == name) tensor = as_declared(std::move(tensor), i.dtype);
        feeds[name] = std::move(tensor);
      }
      auto output_files = sorted_files(set, "output_");
      // A data set without expected outputs would pass whatever the model computed.
      if (output_files.empty()) throw InvalidArgument(set.string() + ": no output_*.pb to compare with");
      for (int run = 0; run < std::max(1, options.runs); ++run) {
        std::vector<Tensor> outs = session.run(feeds);
        if (outs.size() < output_files.size())
          throw Error("model produced " + std::to_string(outs.size()) + " outputs, data set has " +
                      std::to_string(output_files.size()));
        for (size_t k = 0; k < output_files.size(); ++k) {
          Tensor want = as_declared(loader::read_tensor_pb(output_files[k].string()).second, outs[k].dtype());
          CompareResult c = compare_tensors(outs[k], want, options.tol);
          if (!c.passed) {
            t.status = "failed";
            t.detail = set.filename().string() + " output " + std::to_string(k) + " ('" + session.outputs()[k].name +
                       "'): " + c.message + (run ? " (run " + std::to_string(run + 1) + ")" : "");
            return t;
          }
        }
      }
    }
    t.status = "passed";
  } catch (const std::exception& e) {
    t.status = "failed";
    t.detail = e.what();
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}

std::vector<ConformanceTest> run_conformance(const std::vector<std::string>& paths, const ConformanceOptions& options) {
  std::vector<std::string> dirs;
  for (const auto& p : paths) {
    if (fs::exists(fs::path(p) / "model.onnx")) {
      dirs.push_back(p);
      continue;
    }
    if (!fs::is_directory(p)) throw InvalidArgument("conformance path '" + p + "' is not a folder");
    std::vector<std::string> sub;
    for (const auto& e : fs::directory_iterator(p))
      if (fs::exists(e.path() / "model.onnx")) sub.push_back(e.path().string());
    std::sort(sub.begin(), sub.end());
    dirs.insert(dirs.end(), sub.begin(), sub.end());
  }
  std::regex re(options.filter.empty() ? "" : options.filter);
  std::vector<ConformanceTest> results;
  for (const auto& d : dirs) {
    std::string name = fs::path(d).filename().string();
    if (!options.filter.empty() && !std::regex_search(name, re)) continue;
    results.push_back(run_conformance_test(d, options));
  }
  return results;
}

}  // namespace onnxgpu::runtime
