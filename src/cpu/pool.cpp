#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_pool(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
