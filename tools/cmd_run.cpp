#include "commands.h"

namespace onnxgpu::tools {

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "(not yet implemented)");
  cmd->callback([] { throw std::runtime_error("run: not yet implemented"); });
}

}  // namespace onnxgpu::tools
