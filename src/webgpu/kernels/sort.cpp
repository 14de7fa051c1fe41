#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_sort(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
