#include "cpu/kernel.h"

namespace onnxgpu::cpu {

void register_rnn(KernelRegistry& r) {}

}  // namespace onnxgpu::cpu
