// ONNX Runtime's QOperator contrib ops (com.microsoft), which its quantizer writes for int8 models in the
// QOperator format (the ONNX model zoo's *-int8 models): quantized tensors, int8 or uint8, each with a
// float scale and a zero point of its type (scalars; an omitted zero point is 0), computed as ONNX
// Runtime's CPU EP defines them, in float32, then rounded half to even, plus the output's zero point,
// saturated to its type:
//   QLinearAdd       C = ((a_s (A - a_z) + b_s (B - b_z)) * (1 / c_s))           (numpy broadcasting)
//   QLinearMul       C = ((a_s (A - a_z)) (b_s (B - b_z)) * (1 / c_s))
//   QLinearSigmoid, QLinearLeakyRelu (alpha, default 0.01)
//                    Y = f(x_s (X - x_z)) / y_s, through a table of the 256 values of X (as ONNX Runtime)
//   QLinearGlobalAveragePool (channels_last, default 0: X [N, C, spatial...], else [N, spatial..., C])
//                    Y = (sum(X) - n x_z) * (x_s / (y_s n)), n = the spatial size; Y keeps X's rank, 1s
//                    for the spatial dims
//   QLinearAveragePool  AveragePool's windows and attributes (ops::pool_params; channels_last 0 only):
//                    Y = (sum over the window of x_s (X - x_z), in float32 in the window's order) / count / y_s
//   QGemm            A [M, K] (transA), a_scale, a_zero_point, B [K, N] (transB), b_scale, b_zero_point (scalars
//                    or one per column), C (optional int32, broadcast to [M, N]), y_scale, y_zero_point
//                    (optional: without them Y is float32); alpha:
//                    acc = sum (A - a_z)(B - b_z) + C, f = alpha a_s b_s (per column),
//                    Y = acc f (float32), or requantize(acc (f / y_s)) (ONNX Runtime's, measured bit for bit)
//   QLinearConcat    inputs y_scale, y_zero_point, then (X, x_scale, x_zero_point) per tensor; axis:
//                    each X requantized to Y's parameters through its table, then concatenated
//   QLinearSoftmax   ONNX Runtime's table of exponentials and float32 row sums (QLinearSoftmaxParams)
// Used by the CPU reference (src/cpu/qlinear.cpp) and the GPU kernels (src/webgpu/kernels/qlinear.cpp),
// which compute the same float32 expressions (and read the same tables), so the two agree bit for bit
// except where a GPU contracts a multiply-add.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::ops {

// A quantized tensor's input indices: the tensor (kNone: an output's parameters), its scale and zero point.
struct QuantizedInput {
  static constexpr size_t kNone = size_t(-1);
  size_t x = 0, scale = 1, zero = 2;
};

// Checks a quantized tensor's dtype (int8 / uint8, `same_as` when given) and its scalar scale (float) and
// zero point (of x's type, optional unless `zero_required`), naming them by `what` ("A", "X").
void check_quantized(const std::vector<Operand>& in, const QuantizedInput& q, const std::string& what, const Fail& fail,
                     DType same_as = DType::Undefined);

// round_half_to_even(v) + zero_point, saturated to t's range (int8 or uint8).
int32_t requantize(float v, int32_t zero_point, DType t);

// The 256 outputs of a quantized map: entry b is Y for the X whose byte is b (int8 values as their two's
// complement byte): requantize(f(x_s (X - x_z)) / y_s, y_z, y_type).
using QLinearTable = std::array<int32_t, 256>;
QLinearTable qlinear_table(DType x_type, float x_scale, int32_t x_zero, float y_scale, int32_t y_zero, DType y_type,
                           const std::function<float(float)>& f);

// QLinearSigmoid's, QLinearLeakyRelu's and QLinearAveragePool's inputs: X (0) with its scale (1) and zero
// point (2), then Y's scale (3) and zero point (4), of X's type (returned, Y's type too).
DType check_qlinear_unary(const std::vector<Operand>& in, const Fail& fail);
// QLinearAveragePool's inputs (check_qlinear_unary) and layout: X [N, C, D...] (channels_last 0 only).
void check_qlinear_average_pool(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail);

// QLinearSigmoid's and QLinearLeakyRelu's f (the node's alpha read here).
std::function<float(float)> qlinear_unary_function(const ir::Node& node);

// QLinearAdd / QLinearMul: A, B and C's dtype (A's; B must match); inputs as above.
DType check_qlinear_binary(const std::vector<Operand>& in, const Fail& fail);
// The value before requantization (1 / c_s passed as `inv_c`).
inline float qlinear_binary_value(bool mul, float a_s, int32_t a, int32_t a_z, float b_s, int32_t b, int32_t b_z, float inv_c) {
  const float va = a_s * float(a - a_z), vb = b_s * float(b - b_z);
  return (mul ? va * vb : va + vb) * inv_c;
}

// QLinearGlobalAveragePool's geometry.
struct QLinearPoolGeometry {
  bool channels_last = false;
  int64_t batch = 0, channels = 0, spatial = 0;
  Shape out;
};
QLinearPoolGeometry qlinear_global_pool_geometry(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail);
// Its factor: x_s / (y_s n).
inline float qlinear_pool_factor(float x_scale, float y_scale, int64_t n) { return x_scale / (y_scale * float(n)); }

// QGemm's shapes and attributes (inputs checked: types, parameter counts, C's shape).
struct QGemmParams {
  int64_t M = 0, K = 0, N = 0;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f;
  bool quantized = false;  // y_scale and y_zero_point given: Y is int8 / uint8
  DType out = DType::Float32;
};
QGemmParams qgemm_params(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail);
// Column n's factor f (before the division by y_scale).
inline float qgemm_factor(float alpha, float a_scale, float b_scale) { return alpha * a_scale * b_scale; }

// QLinearConcat: checks the inputs; returns the output's dtype and shape (axis normalized in `axis`).
DType check_qlinear_concat(const ir::Node& node, const std::vector<Operand>& in, int64_t& axis, Shape& out, const Fail& fail);

// QLinearSoftmax (inputs X, x_scale, x_zero_point, y_scale, y_zero_point as check_qlinear_unary's; attributes
// opset, required, and axis, default 1 below opset 13, else -1): ONNX Runtime's approximation, reproduced.
// Rows of D values: below opset 13 the dims from axis on, flattened; from 13 the axis alone (`inner` apart).
// Each value's exponential is read from a table of 256 float32 entries by its distance to the row's maximum,
//   e(x) = table[255 - (max - x)],  table[k] = float(exp((k - 255 + shift) x_s)),
//   shift = max(0, ln(FLT_MAX / D) - 5) / x_s  (the sum of a row stays finite),
// the row's sum s is accumulated in float32 in the row's order, and
//   y = round_half_to_even(e(x) * floor(1 / y_s) / s) + y_z  (float32 arithmetic), saturated to Y's type.
// X's zero point does not enter (a softmax does not see a shift). Where ONNX Runtime wraps an int8 result
// above 127 (its conversion), it is saturated here.
struct QLinearSoftmaxParams {
  DType type = DType::UInt8;
  int64_t outer = 0, D = 0, inner = 1;  // X is [outer, D, inner]
  std::array<float, 256> table{};
  float y_factor = 0.0f;  // floor(1 / y_s)
  int32_t y_zero = 0;
};
// The scales and zero point are the values of inputs 1, 3 and 4 (`scales`: x_s, y_s; `y_zero`).
QLinearSoftmaxParams qlinear_softmax_params(const ir::Node& node, const std::vector<Operand>& in, float x_scale,
                                            float y_scale, int32_t y_zero, const Fail& fail);

}  // namespace onnxgpu::ops
