#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_reduce(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
