#include "commands.h"

namespace onnxgpu::tools {

void add_conformance_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("conformance", "(not yet implemented)");
  cmd->callback([] { throw std::runtime_error("conformance: not yet implemented"); });
}

}  // namespace onnxgpu::tools
