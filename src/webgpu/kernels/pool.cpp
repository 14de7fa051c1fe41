#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_pool(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
