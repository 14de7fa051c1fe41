#include "ops/rnn.h"

#include <algorithm>
#include <cctype>

namespace onnxgpu::ops {

namespace {

const char* const kInputNames[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};

std::string label(const ir::Node& node, size_t i) {
  return "input " + std::to_string(i) + " '" + kInputNames[i] + "' ('" + (i < node.inputs.size() ? node.inputs[i] : "") + "')";
}

std::vector<RnnActivation> parse_activations(const ir::Node& node, const std::vector<std::string>& defaults,
                                             int64_t num_directions, const Fail& fail) {
  const size_t per_dir = defaults.size();
  std::vector<std::string> names = node.has_attr("activations") ? node.attr_strings("activations") : std::vector<std::string>{};
  if (names.empty()) {
    for (int64_t d = 0; d < num_directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == per_dir && num_directions == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = twice;
  }
  if (names.size() != per_dir * size_t(num_directions))
    raise(fail, "attribute 'activations' has " + std::to_string(names.size()) + " entries, expected " +
                    std::to_string(per_dir * size_t(num_directions)) + " (" + std::to_string(per_dir) + " per direction)");
  std::vector<float> alphas = node.attr_floats("activation_alpha");
  std::vector<float> betas = node.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  auto next = [](const std::vector<float>& v, size_t& i, float def) { return i < v.size() ? v[i++] : def; };
  std::vector<RnnActivation> acts;
  for (const std::string& name : names) {
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    RnnActivation a;
    if (n == "relu") a.kind = RnnActKind::Relu;
    else if (n == "tanh") a.kind = RnnActKind::Tanh;
    else if (n == "sigmoid") a.kind = RnnActKind::Sigmoid;
    else if (n == "softsign") a.kind = RnnActKind::Softsign;
    else if (n == "softplus") a.kind = RnnActKind::Softplus;
    else if (n == "affine") a.kind = RnnActKind::Affine, a.alpha = next(alphas, ai, 1.0f), a.beta = next(betas, bi, 0.0f);
    else if (n == "leakyrelu") a.kind = RnnActKind::LeakyRelu, a.alpha = next(alphas, ai, 0.01f);
    else if (n == "thresholdedrelu") a.kind = RnnActKind::ThresholdedRelu, a.alpha = next(alphas, ai, 1.0f);
    else if (n == "scaledtanh") a.kind = RnnActKind::ScaledTanh, a.alpha = next(alphas, ai, 1.0f), a.beta = next(betas, bi, 1.0f);
    else if (n == "hardsigmoid") a.kind = RnnActKind::HardSigmoid, a.alpha = next(alphas, ai, 0.2f), a.beta = next(betas, bi, 0.5f);
    else if (n == "elu") a.kind = RnnActKind::Elu, a.alpha = next(alphas, ai, 1.0f);
    else raise(fail, "attribute 'activations' names an unknown activation function '" + name + "'");
    acts.push_back(a);
  }
  return acts;
}

}  // namespace

RnnConfig rnn_config(const ir::Node& node, int64_t opset, RnnCell cell, const Fail& fail) {
  RnnConfig c;
  c.cell = cell;
  c.gates = cell == RnnCell::Lstm ? 4 : cell == RnnCell::Gru ? 3 : 1;
  const std::string direction = node.attr_string("direction", "forward");
  if (direction == "forward") {
  } else if (direction == "reverse") {
    c.rev_only = true, c.fwd_only = false;
  } else if (direction == "bidirectional") {
    c.nd = 2, c.fwd_only = false;
  } else {
    raise(fail, "attribute 'direction' is '" + direction + "', expected forward, reverse or bidirectional");
  }
  c.layout = opset >= 14 ? node.attr_int("layout", 0) : 0;
  if (c.layout != 0 && c.layout != 1) raise(fail, "attribute 'layout' is " + std::to_string(c.layout) + ", expected 0 or 1");
  c.has_clip = node.has_attr("clip");
  c.clip = node.attr_float("clip", 0.0f);
  if (c.has_clip && !(c.clip >= 0)) raise(fail, "attribute 'clip' must be non-negative");
  c.linear_before_reset = cell == RnnCell::Gru && node.attr_int("linear_before_reset", 0) != 0;
  c.input_forget = cell == RnnCell::Lstm && node.attr_int("input_forget", 0) != 0;
  std::vector<std::string> defaults = cell == RnnCell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                      : cell == RnnCell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                             : std::vector<std::string>{"Tanh"};
  c.nacts = defaults.size();
  c.acts = parse_activations(node, defaults, c.nd, fail);
  return c;
}

RnnDims rnn_dims(const ir::Node& node, const RnnConfig& c, const std::vector<Operand>& in, const Fail& fail) {
  auto given = [&](size_t i) { return i < in.size() && in[i].given(); };
  for (size_t i : {kRnnX, kRnnW, kRnnR})
    if (!given(i)) raise(fail, label(node, i) + " is required");
  const Operand& X = in[kRnnX];
  const size_t last_input = c.cell == RnnCell::Lstm ? kRnnP : kRnnInitH;
  for (size_t i = kRnnW; i <= last_input; ++i) {
    if (i == kRnnSeqLens || !given(i)) continue;
    if (in[i].dtype != X.dtype)
      raise(fail, label(node, i) + " has type " + std::string(dtype_name(in[i].dtype)) + ", expected " +
                      std::string(dtype_name(X.dtype)) + " like input 'X'");
  }
  for (size_t i : {kRnnX, kRnnW, kRnnR})
    if (in[i].shape.size() != 3) raise(fail, label(node, i) + " has shape " + shape_str(in[i].shape) + ", expected rank 3");
  RnnDims d;
  d.S = c.layout == 0 ? X.shape[0] : X.shape[1];
  d.N = c.layout == 0 ? X.shape[1] : X.shape[0];
  d.I = X.shape[2];
  d.H = node.has_attr("hidden_size") ? node.attr_int("hidden_size", 0) : in[kRnnR].shape[2];
  const int64_t nd = c.nd, G = c.gates, H = d.H, N = d.N, S = d.S;
  if (H <= 0) raise(fail, "attribute 'hidden_size' is " + std::to_string(H) + ", expected a positive number");
  auto expect = [&](size_t i, const Shape& want) {
    if (given(i) && in[i].shape != want)
      raise(fail, label(node, i) + " has shape " + shape_str(in[i].shape) + ", expected " + shape_str(want));
  };
  expect(kRnnW, {nd, G * H, d.I});
  expect(kRnnR, {nd, G * H, H});
  expect(kRnnB, {nd, 2 * G * H});
  d.state_shape = c.layout == 0 ? Shape{nd, N, H} : Shape{N, nd, H};
  expect(kRnnInitH, d.state_shape);
  if (c.cell == RnnCell::Lstm) expect(kRnnInitC, d.state_shape);
  if (c.cell == RnnCell::Lstm) expect(kRnnP, {nd, 3 * H});
  if (given(kRnnSeqLens)) {
    if (in[kRnnSeqLens].dtype != DType::Int32)
      raise(fail, label(node, kRnnSeqLens) + " has type " + std::string(dtype_name(in[kRnnSeqLens].dtype)) + ", expected int32");
    expect(kRnnSeqLens, {N});
  }
  d.y_shape = c.layout == 0 ? Shape{S, nd, N, H} : Shape{N, S, nd, H};
  return d;
}

}  // namespace onnxgpu::ops
