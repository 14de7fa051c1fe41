// Output comparison used by `run --data-set` and the conformance runner:
// floats within |got - want| <= atol + rtol * |want| (NaN matches NaN, inf must match exactly),
// integers, bools and strings exactly; dtype and shape must match.
#pragma once
#include <string>

#include "onnxgpu/tensor.h"

namespace onnxgpu::runtime {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

struct CompareResult {
  bool passed = true;
  double max_abs_diff = 0;
  std::string message;  // why it failed: "dtype", "shape", "element 17: got 1.5, expected 2"
};

CompareResult compare_tensors(const Tensor& got, const Tensor& want, Tolerance tol = {});

}  // namespace onnxgpu::runtime
