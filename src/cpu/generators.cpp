#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_generators(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
