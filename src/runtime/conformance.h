// Runs ONNX backend-test folders (model.onnx + test_data_set_N/{input,output}_K.pb) through a Session
// and compares the outputs. A test is "unsupported" only when its model uses an op outside the
// engine's scope (kInScopeOps) or a dtype the engine does not handle (strings); any other error,
// or a mismatch, is "failed".
#pragma once
#include <set>
#include <string>
#include <vector>

#include "onnxgpu/session.h"
#include "runtime/compare.h"

namespace onnxgpu::runtime {

struct ConformanceOptions {
  SessionOptions session;
  std::string filter;  // regex searched in the test name; empty = all
  Tolerance tol;
  int runs = 1;        // runs per data set (>1 checks replays too)
};

struct ConformanceTest {
  std::string name;
  std::string status;  // "passed", "failed", "unsupported"
  std::string detail;
  std::vector<std::string> ops;  // op types in the model (subgraphs included)
  double seconds = 0;
};

// Each path is a test folder or a folder of test folders.
std::vector<ConformanceTest> run_conformance(const std::vector<std::string>& paths, const ConformanceOptions& options);
ConformanceTest run_conformance_test(const std::string& dir, const ConformanceOptions& options);

// The ops the engine implements on the CPU reference (the project's op list).
const std::set<std::string>& in_scope_ops();

}  // namespace onnxgpu::runtime
