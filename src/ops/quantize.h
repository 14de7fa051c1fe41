// QuantizeLinear and DequantizeLinear, the rules both kernel sets share.
//   QuantizeLinear:   y = saturate(round_half_to_even(x / y_scale) + y_zero_point)
//   DequantizeLinear: y = (x - x_zero_point) * x_scale
// Scale and zero point are per-tensor (a scalar or one element), from opset 13 per-axis (1-D, of
// length x.shape[axis]) and from opset 21 blocked (x's rank, ceil(x.shape[axis] / block_size) along
// the axis, x's dims elsewhere: element i takes the scale of its block along the axis). The integer
// types: int8, uint8, and from opset 21 int16, uint16 (DequantizeLinear also int32); the scale is
// float32, or from opset 19 float16 / bfloat16, the type DequantizeLinear returns. QuantizeLinear's
// output type is its zero point's, else the attribute output_dtype (opset 21), else uint8. The narrow types
// (dtype.h) too: float8 from opset 19, int4, uint4, int2, uint2 from 21, float4e2m1 from 23; a float8 or
// float4 result is x / scale + zero point rounded to nearest even, saturated unless `saturate` is 0.
// Used by the CPU reference (src/cpu/quantize.cpp) and the GPU kernel (src/webgpu/kernels/quantize.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::ops {

struct LinearQuantParams {
  enum class Mode { Tensor, Axis, Blocked };
  Mode mode = Mode::Tensor;
  int64_t dim = 1;     // Axis, Blocked: x's size along the axis
  int64_t inner = 1;   // elements per step along the axis
  int64_t block = 1;   // Blocked: the block size, and the blocks along the axis: ceil(dim / block)
  int64_t blocks = 1;
  DType out = DType::Undefined;  // the output's type
  int64_t lo = 0, hi = 0;        // QuantizeLinear: the output type's range
  bool zero_point = false;       // given (else 0)
  bool saturate = true;          // QuantizeLinear into float8 / float4: attribute `saturate` (opset 19)
  // The index of element i's scale and zero point.
  int64_t index(int64_t i) const {
    switch (mode) {
      case Mode::Tensor: return 0;
      case Mode::Axis: return (i / inner) % dim;
      case Mode::Blocked: return ((i / (inner * dim)) * blocks + (i / inner) % dim / block) * inner + i % inner;
    }
    return 0;
  }
};

// Whether t is a quantized type at this opset (the types above, not int32); its range when an integer.
bool quantized_type(DType t, int64_t opset, int64_t* lo = nullptr, int64_t* hi = nullptr);

// QuantizeLinear's and DequantizeLinear's checks and parameters at the node's opset; com.microsoft's (ONNX
// Runtime's QDQ ops, for 16-bit and 4-bit types) are read as ONNX's at opset 21.
LinearQuantParams quantize_linear_params(const ir::Node& node, int64_t opset, const std::vector<Operand>& inputs,
                                         const Fail& fail);
LinearQuantParams dequantize_linear_params(const ir::Node& node, int64_t opset, const std::vector<Operand>& inputs,
                                           const Fail& fail);

}  // namespace onnxgpu::ops
