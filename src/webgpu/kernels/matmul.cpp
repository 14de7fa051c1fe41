#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_matmul(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
