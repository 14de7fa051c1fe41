#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_normalization(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
