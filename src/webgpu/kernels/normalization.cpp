#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_normalization(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
