// Options shared by the onnxgpu subcommands (execution provider, capture, INT64 policy, inputs).
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "onnxgpu/session.h"

namespace onnxgpu::tools {

struct EngineFlags {
  std::string ep = "webgpu";
  bool capture = true;
  bool no_capture = false;
  std::string int64 = "bitcast";
  bool fail_loud = false;
  std::vector<std::string> config;  // KEY=VALUE session config entries
  void add_to(CLI::App* cmd);
  SessionOptions options() const;
};

struct InputFlags {
  std::vector<std::string> inputs;  // NAME=FILE.pb|.npy
  std::vector<std::string> shapes;  // NAME=2x13
  std::string data_set;             // ONNX test_data_set_N folder
  uint64_t seed = 0;
  void add_to(CLI::App* cmd);
  // Feeds for `session`: files first, then the data set, then generated values for the rest.
  std::unordered_map<std::string, Tensor> feeds(const Session& session) const;
  // Expected outputs from the data set (output_K.pb), empty when none.
  std::vector<Tensor> expected_outputs() const;
};

nlohmann::json plan_json(const PlanReport& p);  // the plan contract of DESIGN.md
std::string checksum(const Tensor& t);  // fnv1a64 of the raw bytes, hex
nlohmann::json tensor_summary(const std::string& name, const Tensor& t);

}  // namespace onnxgpu::tools
