#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu {

void register_indexing(GpuKernelRegistry& r) {}

}  // namespace onnxgpu::webgpu
