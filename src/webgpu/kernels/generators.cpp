#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_generators(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
