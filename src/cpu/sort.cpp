#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_sort(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
