#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_detection(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
