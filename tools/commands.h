// The onnxgpu command: each subcommand lives in its own tools/cmd_<name>.cpp and registers itself here.
// Exit codes: 0 success, 1 runtime error ("onnxgpu: error: ..." on stderr), 2 usage error.
#pragma once
#include <CLI/CLI.hpp>

namespace onnxgpu::tools {

void add_devices_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_conformance_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_decode_command(CLI::App& app);

}  // namespace onnxgpu::tools
