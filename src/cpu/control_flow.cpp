#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_control_flow(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
