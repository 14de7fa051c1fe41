#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_softmax(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
