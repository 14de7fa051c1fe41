#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_indexing(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
