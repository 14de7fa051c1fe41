// Range, the part both kernel sets share: the checks of start, limit and delta and the element count
// max(ceil((limit - start) / delta), 0), exact for integers (in 128 bits) and bounded for floats.
#pragma once
#include <cstdint>

#include "onnxgpu/tensor.h"
#include "ops/fail.h"

namespace onnxgpu::ops {

// Fails unless the three are scalars of one type Range admits and delta is not 0; returns the count.
int64_t range_count(const Tensor& start, const Tensor& limit, const Tensor& delta, const Fail& fail);

}  // namespace onnxgpu::ops
