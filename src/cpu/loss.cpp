#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_loss(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
