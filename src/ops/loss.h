// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, the part both kernel sets share: the input
// [N, C, d1..dk] seen as [N, C, D]; the target [N, d1..dk] (int32 or int64) and the optional weight
// [C] of the input's type checked against it; attributes 'reduction' and 'ignore_index'.
#pragma once
#include <cstdint>
#include <optional>

#include "ir/graph.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

struct LossShape {
  int64_t n = 0, c = 0, d = 1;
};
// `what` names input 0 in messages ("input", "scores").
LossShape loss_shape(const ir::Node& node, const Shape& x, const char* what, const Fail& fail);

enum class LossReduction { None, Sum, Mean };
struct LossTerms {
  LossReduction reduction = LossReduction::Mean;
  std::optional<int64_t> ignore_index;
};
// Checks inputs 1 (target) and 2 (weight; `weight` Undefined when absent) against input 0 of dtype
// `x_dtype` and shape `x`, and reads the attributes.
LossTerms loss_terms(const ir::Node& node, DType x_dtype, const Shape& x, DType target_dtype, const Shape& target,
                     DType weight_dtype, const Shape& weight, const Fail& fail);

}  // namespace onnxgpu::ops
