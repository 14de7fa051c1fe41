#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_cast(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
