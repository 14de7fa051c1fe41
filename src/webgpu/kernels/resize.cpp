#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_resize(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
