#include "commands.h"

namespace onnxgpu::tools {

void add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "(not yet implemented)");
  cmd->callback([] { throw std::runtime_error("devices: not yet implemented"); });
}

}  // namespace onnxgpu::tools
