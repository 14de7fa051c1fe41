#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_unary(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
