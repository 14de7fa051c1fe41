#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_conv(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
