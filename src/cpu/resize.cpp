#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_resize(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
