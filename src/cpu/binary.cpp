#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_binary(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
