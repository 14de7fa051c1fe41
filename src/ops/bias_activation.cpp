#include "ops/bias_activation.h"

#include <string>

namespace onnxgpu::ops {

BiasActivationParams bias_activation_params(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail) {
  BiasActivationParams p;
  const std::string& op = node.op_type;
  size_t min_inputs = 1, max_inputs = 1;
  if (op == "FastGelu") p.op = BiasActivation::FastGelu, max_inputs = 2;
  else if (op == "BiasGelu") p.op = BiasActivation::BiasGelu, min_inputs = max_inputs = 2;
  else if (op == "Gelu") p.op = BiasActivation::BiasGelu;  // com.microsoft's Gelu: BiasGelu without the bias
  else if (op == "QuickGelu") p.op = BiasActivation::QuickGelu;
  else if (op == "BiasAdd") p.op = BiasActivation::BiasAdd, min_inputs = max_inputs = 3;
  else raise(fail, "not a bias activation op");
  if (node.outputs.size() != 1) raise(fail, "has one output (Y), the node has " + std::to_string(node.outputs.size()));
  static const char* names[] = {"X", "bias", "skip"};
  if (in.size() < min_inputs || in.size() > max_inputs)
    raise(fail, "takes " + std::to_string(min_inputs) + (min_inputs == max_inputs ? "" : " to " + std::to_string(max_inputs)) +
                    " inputs, got " + std::to_string(in.size()));
  for (size_t i = 0; i < min_inputs; ++i)
    if (!in[i].given()) raise(fail, "input " + std::to_string(i) + " ('" + names[i] + "') is required");
  const Operand& x = in[0];
  if (!kFloatTypes.has(x.dtype)) raise(fail, "X " + x.describe() + " must be of a float type");
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].given() && in[i].dtype != x.dtype)
      raise(fail, std::string(names[i]) + " " + in[i].describe() + " must be of X's type (" + std::string(dtype_name(x.dtype)) + ")");
  p.bias = in.size() > 1 && in[1].given();
  p.skip = in.size() > 2 && in[2].given();
  if (p.op == BiasActivation::BiasAdd && x.shape.size() != 3)
    raise(fail, "X " + x.describe() + " must be [batch, sequence, channels]");
  if (p.bias) {
    if (x.shape.empty()) raise(fail, "X is a scalar: bias needs a last dim to repeat along");
    p.channels = x.shape.back();
    if (in[1].shape != Shape{p.channels})
      raise(fail, "bias " + in[1].describe() + " must be 1-D with X's last dim " + std::to_string(p.channels) + " (X " +
                      x.describe() + ")");
  }
  if (p.skip && in[2].shape != x.shape) raise(fail, "skip " + in[2].describe() + " must have X's shape " + shape_str(x.shape));
  if (p.op == BiasActivation::QuickGelu) p.alpha = node.attr_float("alpha", 1.702f);
  return p;
}

}  // namespace onnxgpu::ops
