#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_layout(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
