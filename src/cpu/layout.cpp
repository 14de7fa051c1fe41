#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_layout(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
