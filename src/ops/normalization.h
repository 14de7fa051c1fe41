// LayerNormalization, InstanceNormalization, GroupNormalization, LpNormalization and the transformer normalizations (SkipLayerNormalization,
// SkipSimplifiedLayerNormalization: ONNX Runtime's com.microsoft ops; SimplifiedLayerNormalization:
// ONNX Runtime's, in the ONNX domain; RMSNormalization: ONNX opset 23), the part both kernel sets
// share: the normalized axes and the stash type, the shapes of the inputs, read and checked once.
// Used by the CPU reference (src/cpu/normalization.cpp) and the GPU kernel
// (src/webgpu/kernels/normalization.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/operand.h"
#include "onnxgpu/dtype.h"

namespace onnxgpu::ops {

struct LayerNormParams {
  int64_t axis;  // the first normalized axis, in [0, rank)
  DType stash;   // the type of the mean and inverse standard deviation outputs
};

LayerNormParams layer_norm_params(const ir::Node& node, int64_t rank, const Fail& fail);

// InstanceNormalization: X [N, C, D1, ...] (rank >= 3), scale and B 1-D of X's type with C values.
void check_instance_norm(DType x_dtype, const Shape& x, DType scale_dtype, const Shape& scale, DType b_dtype,
                         const Shape& b, const Fail& fail);

// BatchNormalization's mode: `spatial` (always from opset 9; before, per-channel parameters when 1, else one
// per element of a sample) and training (opset 14's training_mode; before, told by the extra outputs, and
// before opset 7 also by is_test 0). In training mode the statistics are the batch's, over `reduced`: every
// axis but the channel (spatial), or the batch axis only.
struct BatchNormMode {
  bool spatial = true;
  bool training = false;
  std::vector<bool> reduced;  // per axis of X, training mode only
};
BatchNormMode batch_norm_mode(const ir::Node& node, int64_t opset, size_t num_outputs, int64_t rank);

// MeanVarianceNormalization: Y = (X - mean) / (sqrt(variance) + 1e-9) over the reduced axes (opset 9:
// attribute axes, default [0, 2, 3]; MVN-1: the spatial axes of [N, C, ...], the channels too with
// across_channels, and only the mean subtracted when normalize_variance is 0).
struct MvnParams {
  std::vector<bool> reduced;  // per axis of X
  bool normalize_variance = true;
};
MvnParams mvn_params(const ir::Node& node, int64_t opset, int64_t rank, const Fail& fail);

// SkipLayerNormalization and SkipSimplifiedLayerNormalization (com.microsoft): the rows of
// v = input + skip (+ bias) normalized over the last axis, then scaled by gamma (and shifted by beta).
//   inputs   input [B, S, H] or [N, H]; skip of input's shape, or [1, S, H] or [S, H] under a 3-D input
//            (element i of input adds skip element i % skip_numel); gamma [H]; SkipLayerNormalization:
//            beta [H] (optional, input 3), bias [H] (optional, input 4); the simplified op: bias [H]
//            (optional, input 3). All of one float type.
//   outputs  output; mean and inv_std_var (float32, input's shape with the last dim 1; the simplified
//            op's mean is 0); input_skip_bias_sum (v, input's type and shape). All but output optional.
//   epsilon  attribute, default 1e-12 as in ONNX Runtime's schema.
struct SkipNormParams {
  bool simplified;     // no centering: v / sqrt(mean(v^2) + epsilon)
  int64_t hidden;      // H, the normalized length
  int64_t skip_numel;  // skip repeats every skip_numel elements of input
  int beta = -1;       // the input index of beta and bias, -1 when not given
  int bias = -1;
  float epsilon;
  Shape stats;         // the shape of mean and inv_std_var
};
SkipNormParams skip_norm_params(const ir::Node& node, const std::vector<Operand>& inputs, const Fail& fail);

// SimplifiedLayerNormalization (ONNX Runtime's, ai.onnx domain) and RMSNormalization (ONNX, opset 23):
// Y = X / sqrt(mean(X^2 over the axes from `axis` on) + epsilon) * scale, the statistics in stash_type.
// SimplifiedLayerNormalization's scale has the normalized size (its elements read in order; a bias
// input 2 is ignored, as ONNX Runtime does) and its optional output 1 is inv_std_var (stash_type, X's
// leading dims then 1s); RMSNormalization's scale broadcasts to the normalized shape X.shape[axis:].
struct RmsNormParams {
  int64_t axis;        // the first normalized axis
  DType stash;         // the type of inv_std_var
  float epsilon;       // default 1e-5
  Shape normalized;    // X.shape[axis:]
  Shape stats;         // X.shape[:axis] then 1s: the shape of inv_std_var
  bool flat_scale;     // scale element j scales row element j (else: broadcast to `normalized`)
};
// `scale_optional`: a missing scale scales by 1 (the fused RMS norm of runtime/fusion.h, a chain of plain
// ops without a weight; never a model's node).
RmsNormParams rms_norm_params(const ir::Node& node, int64_t opset, const Operand& x, const Operand& scale,
                              const Fail& fail, bool scale_optional = false);

// GroupNormalization: X [N, C, D1, ...] (rank >= 2) in num_groups groups of C / num_groups channels, each
// (batch, group) normalized over its channels and spatial elements (epsilon, default 1e-5); scale and bias
// 1-D of X's type with C values (opset 21) or num_groups values (opset 18).
struct GroupNormParams {
  int64_t groups;
  double epsilon;
  bool per_channel;  // opset 21: scale and bias per channel; opset 18: per group
};
GroupNormParams group_norm_params(const ir::Node& node, int64_t opset, const Operand& x, const Operand& scale,
                                  const Operand& bias, const Fail& fail);

// LpNormalization: x / ||x||_p along `axis` (default -1), p 1 or 2 (default 2); a line of zeros stays zeros.
struct LpNormParams {
  int64_t axis;  // in [0, rank)
  int64_t p;
};
LpNormParams lp_norm_params(const ir::Node& node, const Shape& x, const Fail& fail);

}  // namespace onnxgpu::ops
