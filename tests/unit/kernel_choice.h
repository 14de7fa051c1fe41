// Kernel-choice tests: which programs a GPU kernel dispatches for given shapes and device limits, made
// without a device (the programs are built, never run).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/int64_policy.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu {

// Limits of a usual device: 256 invocations per workgroup, 16 KiB of workgroup memory, 8 storage buffers.
inline webgpu::Limits usual_limits() {
  webgpu::Limits limits;
  limits.max_compute_invocations_per_workgroup = 256;
  limits.max_compute_workgroup_size_x = 256;
  limits.max_compute_workgroup_storage_size = 16384;
  limits.max_compute_workgroups_per_dimension = 65535;
  limits.max_storage_buffers_per_shader_stage = 8;
  return limits;
}

// The programs (name, workgroup size) node `node` of the given inputs dispatches.
inline std::vector<std::pair<std::string, uint32_t>> kernel_programs(const ir::Node& node,
                                                                     const std::vector<webgpu::GpuValueInfo>& inputs,
                                                                     const webgpu::Limits& l, int64_t opset = 13) {
  Int64Policy policy;
  webgpu::GpuKernelContext ctx(node, opset, policy, l, inputs);
  (*webgpu::gpu_registry().find(node.op_type, node.domain))(ctx);
  std::vector<std::pair<std::string, uint32_t>> r;
  for (const auto& d : ctx.dispatches) r.push_back({d.program.name(), d.program.workgroup_size()});
  return r;
}

}  // namespace onnxgpu
