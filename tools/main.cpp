#include <cstdio>
#include <exception>
#include <iostream>

#include "commands.h"
#include "onnxgpu/error.h"

int main(int argc, char** argv) {
  CLI::App app{"onnxgpu: run ONNX models on WebGPU, with graph capture and exact INT64"};
  app.require_subcommand(1);
  onnxgpu::tools::add_devices_command(app);
  onnxgpu::tools::add_run_command(app);
  onnxgpu::tools::add_conformance_command(app);
  onnxgpu::tools::add_plan_command(app);
  onnxgpu::tools::add_bench_command(app);
  onnxgpu::tools::add_decode_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "onnxgpu: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
