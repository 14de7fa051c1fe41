#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_conv(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
