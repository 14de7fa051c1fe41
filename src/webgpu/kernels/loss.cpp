#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_loss(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
