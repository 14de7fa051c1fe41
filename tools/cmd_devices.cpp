// onnxgpu devices [--json] [--backend NAME] [--adapter SUBSTRING]: the WebGPU adapters Dawn finds and
// the one onnxgpu would use.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "onnxgpu/error.h"
#include "webgpu/dawn.h"
#include "webgpu/device.h"

namespace onnxgpu::tools {
namespace {

nlohmann::json limits_json(const webgpu::Limits& l) {
  return {
      {"maxBufferSize", l.max_buffer_size},
      {"maxStorageBufferBindingSize", l.max_storage_buffer_binding_size},
      {"maxUniformBufferBindingSize", l.max_uniform_buffer_binding_size},
      {"maxStorageBuffersPerShaderStage", l.max_storage_buffers_per_shader_stage},
      {"maxUniformBuffersPerShaderStage", l.max_uniform_buffers_per_shader_stage},
      {"maxBindGroups", l.max_bind_groups},
      {"maxBindingsPerBindGroup", l.max_bindings_per_bind_group},
      {"minStorageBufferOffsetAlignment", l.min_storage_buffer_offset_alignment},
      {"minUniformBufferOffsetAlignment", l.min_uniform_buffer_offset_alignment},
      {"maxComputeWorkgroupStorageSize", l.max_compute_workgroup_storage_size},
      {"maxComputeInvocationsPerWorkgroup", l.max_compute_invocations_per_workgroup},
      {"maxComputeWorkgroupSizeX", l.max_compute_workgroup_size_x},
      {"maxComputeWorkgroupSizeY", l.max_compute_workgroup_size_y},
      {"maxComputeWorkgroupSizeZ", l.max_compute_workgroup_size_z},
      {"maxComputeWorkgroupsPerDimension", l.max_compute_workgroups_per_dimension},
  };
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

std::string bytes_str(uint64_t b) {
  char buf[32];
  if (b >= (uint64_t{1} << 30) && b % (uint64_t{1} << 20) == 0)
    std::snprintf(buf, sizeof buf, "%.4g GiB", double(b) / double(uint64_t{1} << 30));
  else if (b >= (1u << 20) && b % 1024 == 0)
    std::snprintf(buf, sizeof buf, "%.4g MiB", double(b) / double(1u << 20));
  else if (b >= 1024 && b % 1024 == 0)
    std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>(b / 1024));
  else if (b >= (uint64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.4g GiB", double(b) / double(uint64_t{1} << 30));
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

void run_devices(bool json, const webgpu::DeviceOptions& options) {
  webgpu::AdapterList list = webgpu::list_adapters(options);
  if (list.chosen < 0) throw Error(list.why_none);

  if (json) {
    nlohmann::json out;
    out["dawn_library"] = webgpu::dawn().path;
    out["vulkan_loader"] = webgpu::dawn().vulkan_loader;
    out["chosen"] = list.chosen;
    out["adapters"] = nlohmann::json::array();
    for (size_t i = 0; i < list.adapters.size(); ++i) {
      const webgpu::AdapterInfo& a = list.adapters[i];
      out["adapters"].push_back({
          {"index", i},
          {"chosen", static_cast<int>(i) == list.chosen},
          {"backend", webgpu::backend_name(a.backend)},
          {"adapter_type", webgpu::adapter_type_name(a.type)},
          {"feature_level", a.feature_level == WGPUFeatureLevel_Compatibility ? "compatibility" : "core"},
          {"vendor", a.vendor},
          {"vendor_id", a.vendor_id},
          {"architecture", a.architecture},
          {"device", a.device},
          {"device_id", a.device_id},
          {"driver", a.description},
          {"found_driver", a.found_driver},
          {"subgroup_min_size", a.subgroup_min_size},
          {"subgroup_max_size", a.subgroup_max_size},
          {"limits", limits_json(a.limits)},
          {"features", a.feature_names},
          {"compute_features",
           {{"ShaderF16", a.features.shader_f16},
            {"Subgroups", a.features.subgroups},
            {"TimestampQuery", a.features.timestamp_query}}},
      });
    }
    std::cout << out.dump(2) << "\n";
    return;
  }

  std::cout << "WebGPU adapters (Dawn: " << webgpu::dawn().path << ")\n";
  for (size_t i = 0; i < list.adapters.size(); ++i) {
    const webgpu::AdapterInfo& a = list.adapters[i];
    const webgpu::Limits& l = a.limits;
    bool chosen = static_cast<int>(i) == list.chosen;
    std::cout << (chosen ? "* " : "  ") << "[" << i << "] " << (a.device.empty() ? a.description : a.device) << "\n"
              << "      backend " << webgpu::backend_name(a.backend) << ", " << webgpu::adapter_type_name(a.type)
              << (a.feature_level == WGPUFeatureLevel_Compatibility ? ", compatibility mode" : "") << "\n"
              << "      vendor " << (a.vendor.empty() ? "?" : a.vendor) << " (" << hex(a.vendor_id) << "), device "
              << hex(a.device_id) << (a.architecture.empty() ? "" : ", architecture " + a.architecture) << "\n"
              << "      driver " << a.description << "\n"
              << (a.found_driver.empty() ? ""
                                         : "      no hardware Vulkan adapter: onnxgpu uses the CPU driver " + a.found_driver + "\n")
              << "      limits: buffer " << bytes_str(l.max_buffer_size) << ", storage binding "
              << bytes_str(l.max_storage_buffer_binding_size) << ", " << l.max_storage_buffers_per_shader_stage
              << " storage buffers/stage, workgroup " << l.max_compute_invocations_per_workgroup << " invocations ("
              << l.max_compute_workgroup_size_x << "x" << l.max_compute_workgroup_size_y << "x"
              << l.max_compute_workgroup_size_z << "), " << bytes_str(l.max_compute_workgroup_storage_size)
              << " shared, " << l.max_compute_workgroups_per_dimension << " workgroups/dim\n"
              << "      features:";
    for (const std::string& f : a.feature_names) std::cout << " " << f;
    std::cout << "\n";
  }
  std::cout << "(* = the adapter onnxgpu uses; choose with ONNXGPU_BACKEND / ONNXGPU_ADAPTER or --backend / --adapter)\n";
}

}  // namespace

void add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List the WebGPU adapters and the one onnxgpu would use");
  struct Opts {
    bool json = false;
    webgpu::DeviceOptions device;
  };
  auto opts = std::make_shared<Opts>();
  cmd->add_flag("--json", opts->json, "Print JSON");
  cmd->add_option("--backend", opts->device.backend, "Only this backend (vulkan, opengles, opengl, ...; default $ONNXGPU_BACKEND or any)");
  cmd->add_option("--adapter", opts->device.adapter, "Prefer the adapter whose name contains this (default $ONNXGPU_ADAPTER)");
  cmd->callback([opts] { run_devices(opts->json, opts->device); });
}

}  // namespace onnxgpu::tools
