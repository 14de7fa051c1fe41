// An input as the shared checks of src/ops see it: its dtype and shape, or nothing for an omitted
// optional input. Both kernel contexts make them (cpu::KernelContext::operand,
// webgpu::GpuKernelContext::operand), so a rule written against Operands serves both kernel sets.
#pragma once
#include "onnxgpu/tensor.h"

namespace onnxgpu::ops {

struct Operand {
  DType dtype = DType::Undefined;  // Undefined: the optional input is omitted
  Shape shape;
  bool given() const { return dtype != DType::Undefined; }
  std::string describe() const { return std::string(dtype_name(dtype)) + shape_str(shape); }  // "float32[2,3]"
};

}  // namespace onnxgpu::ops
