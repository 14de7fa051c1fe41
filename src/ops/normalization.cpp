#include "ops/normalization.h"

#include <string>
#include <utility>

#include "ops/broadcast.h"

namespace onnxgpu::ops {

BatchNormMode batch_norm_mode(const ir::Node& node, int64_t opset, size_t num_outputs, int64_t rank) {
  BatchNormMode m;
  m.spatial = opset >= 9 || node.attr_int("spatial", 1) != 0;
  m.training = opset >= 14 ? node.attr_int("training_mode", 0) != 0
                           : (opset < 7 ? node.attr_int("is_test", 0) == 0 && num_outputs > 1 : num_outputs > 1);
  if (m.training)  // the batch axis always; the spatial axes too when the parameters are per channel
    for (int64_t d = 0; d < rank; ++d) m.reduced.push_back(d == 0 || (m.spatial && d >= 2));
  return m;
}

MvnParams mvn_params(const ir::Node& node, int64_t opset, int64_t rank, const Fail& fail) {
  MvnParams p;
  p.reduced.assign(size_t(rank), false);
  if (opset < 9) {
    if (rank < 2) raise(fail, "X must have rank >= 2, got rank " + std::to_string(rank));
    for (size_t d = 2; d < p.reduced.size(); ++d) p.reduced[d] = true;
    if (node.attr_int("across_channels", 0) != 0) p.reduced[1] = true;
    p.normalize_variance = node.attr_int("normalize_variance", 1) != 0;
    return p;
  }
  for (int64_t a : node.attr_ints("axes", {0, 2, 3})) {
    if (a < -rank || a >= rank)
      raise(fail, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    p.reduced[size_t(a < 0 ? a + rank : a)] = true;
  }
  return p;
}

LayerNormParams layer_norm_params(const ir::Node& node, int64_t rank, const Fail& fail) {
  if (rank == 0) raise(fail, "X is a scalar: LayerNormalization needs an axis to normalize over");
  int64_t axis = node.attr_int("axis", -1);
  if (axis < -rank || axis >= rank)
    raise(fail, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  int64_t stash = node.attr_int("stash_type", 1);
  if (stash < 0 || stash > 64 || !kFloatTypes.has(DType(stash)))
    raise(fail, "stash_type " + std::to_string(stash) + " is not a float type");
  return {axis, DType(stash)};
}

void check_instance_norm(DType x_dtype, const Shape& x, DType scale_dtype, const Shape& scale, DType b_dtype,
                         const Shape& b, const Fail& fail) {
  if (x.size() < 3)
    raise(fail, "input must be [N, C, D1, ...] (rank >= 3), got " + std::string(dtype_name(x_dtype)) + shape_str(x));
  const int64_t C = x[1];
  for (const auto& [dt, s] : {std::pair{scale_dtype, scale}, std::pair{b_dtype, b}})
    if (dt != x_dtype || s.size() != 1 || s[0] != C)
      raise(fail, "scale and B must be 1-D of X's type with " + std::to_string(C) + " values (the channels of input " +
                      shape_str(x) + "), got " + std::string(dtype_name(dt)) + shape_str(s));
}

GroupNormParams group_norm_params(const ir::Node& node, int64_t opset, const Operand& x, const Operand& scale,
                                  const Operand& bias, const Fail& fail) {
  GroupNormParams p;
  if (x.shape.size() < 2) raise(fail, "input 'X' must be [N, C, D1, ...] (rank >= 2), got " + x.describe());
  if (!node.has_attr("num_groups")) raise(fail, "attribute 'num_groups' is required");
  p.groups = node.attr_int("num_groups", 0);
  const int64_t C = x.shape[1];
  if (p.groups <= 0 || C % p.groups != 0)
    raise(fail, "attribute 'num_groups' (" + std::to_string(p.groups) + ") must be positive and divide the " +
                    std::to_string(C) + " channels of input 'X' " + x.describe());
  p.epsilon = node.attr_float("epsilon", 1e-5f);
  p.per_channel = opset >= 21;
  const int64_t want = p.per_channel ? C : p.groups;
  for (const auto& [what, o] : {std::pair{"scale", scale}, std::pair{"bias", bias}})
    if (o.dtype != x.dtype || o.shape.size() != 1 || o.shape[0] != want)
      raise(fail, std::string("input '") + what + "' must be 1-D of X's type with " + std::to_string(want) + " values (" +
                      (p.per_channel ? "the channels" : "the groups") + " of input 'X' " + x.describe() + "), got " +
                      o.describe());
  return p;
}

LpNormParams lp_norm_params(const ir::Node& node, const Shape& x, const Fail& fail) {
  LpNormParams p;
  const int64_t r = int64_t(x.size());
  int64_t axis = node.attr_int("axis", -1);
  if (axis < -r || axis >= r || r == 0)
    raise(fail, "attribute 'axis' (" + std::to_string(axis) + ") is out of range for an input of shape " + shape_str(x));
  p.axis = axis < 0 ? axis + r : axis;
  p.p = node.attr_int("p", 2);
  if (p.p != 1 && p.p != 2) raise(fail, "attribute 'p' must be 1 or 2, got " + std::to_string(p.p));
  return p;
}

namespace {

const DTypeSet kTransformerNormTypes{DType::Float16, DType::Float32, DType::Float64, DType::BFloat16};

std::string describe(const char* what, const Operand& o) { return std::string(what) + " " + o.describe(); }

}  // namespace

SkipNormParams skip_norm_params(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail) {
  SkipNormParams p;
  p.simplified = node.op_type == "SkipSimplifiedLayerNormalization";
  const size_t max_inputs = p.simplified ? 4 : 5;
  if (in.size() < 3 || in.size() > max_inputs)
    raise(fail, "takes 3 to " + std::to_string(max_inputs) + " inputs (input, skip, gamma" +
                    (p.simplified ? ", bias" : ", beta, bias") + "), got " + std::to_string(in.size()));
  if (node.outputs.size() > 4)
    raise(fail, "has at most 4 outputs (output, mean, inv_std_var, input_skip_bias_sum), the node has " +
                    std::to_string(node.outputs.size()));
  const char* names[] = {"input", "skip", "gamma", p.simplified ? "bias" : "beta", "bias"};
  for (size_t i = 0; i < 3; ++i)
    if (!in[i].given()) raise(fail, std::string("input ") + std::to_string(i) + " ('" + names[i] + "') is required");
  const Operand& x = in[0];
  if (!kTransformerNormTypes.has(x.dtype)) raise(fail, describe("input", x) + " must be of a float type");
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].given() && in[i].dtype != x.dtype)
      raise(fail, describe(names[i], in[i]) + " must be of input's type (" + std::string(dtype_name(x.dtype)) + ")");
  if (x.shape.size() != 2 && x.shape.size() != 3)
    raise(fail, describe("input", x) + " must be [batch, sequence, hidden] or [tokens, hidden]");
  p.hidden = x.shape.back();
  if (p.hidden <= 0) raise(fail, describe("input", x) + " has no hidden elements to normalize");
  const Shape& s = in[1].shape;
  const Shape last2(x.shape.end() - 2, x.shape.end());
  bool skip_ok = s == x.shape;
  if (x.shape.size() == 3) skip_ok |= s == last2 || s == Shape{1, x.shape[1], x.shape[2]};
  if (!skip_ok)
    raise(fail, describe("skip", in[1]) + " must have input's shape " + shape_str(x.shape) +
                    (x.shape.size() == 3 ? ", or " + shape_str(Shape{1, x.shape[1], x.shape[2]}) + " or " + shape_str(last2)
                                         : std::string()));
  p.skip_numel = shape_numel(s);
  for (size_t i = 2; i < in.size(); ++i) {
    if (!in[i].given()) continue;
    if (in[i].shape != Shape{p.hidden})
      raise(fail, describe(names[i], in[i]) + " must be 1-D with input's hidden size " + std::to_string(p.hidden));
  }
  if (!p.simplified && in.size() > 3 && in[3].given()) p.beta = 3;
  const size_t bias_at = p.simplified ? 3 : 4;
  if (in.size() > bias_at && in[bias_at].given()) p.bias = int(bias_at);
  p.epsilon = node.attr_float("epsilon", 1e-12f);
  if (!(p.epsilon >= 0)) raise(fail, "epsilon " + std::to_string(p.epsilon) + " must be >= 0");
  p.stats = x.shape;
  p.stats.back() = 1;
  return p;
}

RmsNormParams rms_norm_params(const ir::Node& node, int64_t opset, const Operand& x, const Operand& scale,
                              const Fail& fail, bool scale_optional) {
  const bool rms = node.op_type == "RMSNormalization";
  if (rms && opset < 23)
    raise(fail, "RMSNormalization is an ONNX op from opset 23 on; the model imports opset " + std::to_string(opset));
  if (node.outputs.size() > (rms ? 1u : 2u))
    raise(fail, node.op_type + " has " + (rms ? "one output (Y)" : "two outputs (Y, inv_std_var)") + ", the node has " +
                    std::to_string(node.outputs.size()));
  if (!x.given() || !(scale.given() || scale_optional)) raise(fail, "inputs 0 ('X') and 1 ('scale') are required");
  if (!kTransformerNormTypes.has(x.dtype)) raise(fail, describe("X", x) + " must be of a float type");
  if (scale.given() && scale.dtype != x.dtype)
    raise(fail, describe("scale", scale) + " must be of X's type (" + std::string(dtype_name(x.dtype)) + ")");
  RmsNormParams p;
  const LayerNormParams ln = layer_norm_params(node, int64_t(x.shape.size()), fail);
  p.axis = ln.axis;
  p.stash = ln.stash;
  p.epsilon = node.attr_float("epsilon", 1e-5f);
  p.normalized = Shape(x.shape.begin() + p.axis, x.shape.end());
  p.stats = Shape(x.shape.begin(), x.shape.begin() + p.axis);
  p.stats.resize(x.shape.size(), 1);
  if (!scale.given()) {
    p.flat_scale = true;
  } else if (rms) {
    Shape b;
    try {
      b = broadcast_shapes(scale.shape, p.normalized);
    } catch (const Error&) {
    }
    if (b != p.normalized)
      raise(fail, describe("scale", scale) + " does not broadcast to the normalized shape " + shape_str(p.normalized) +
                      " of X " + shape_str(x.shape) + " (axis " + std::to_string(p.axis) + ")");
    Shape stripped = scale.shape;
    while (!stripped.empty() && stripped.front() == 1) stripped.erase(stripped.begin());
    p.flat_scale = stripped == p.normalized;
  } else {
    if (shape_numel(scale.shape) != shape_numel(p.normalized))
      raise(fail, describe("scale", scale) + " must have the normalized size " +
                      std::to_string(shape_numel(p.normalized)) + " of X " + shape_str(x.shape) + " (axis " +
                      std::to_string(p.axis) + ")");
    p.flat_scale = true;
  }
  return p;
}

}  // namespace onnxgpu::ops
