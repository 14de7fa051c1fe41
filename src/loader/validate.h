// The checks a loaded model passes before either execution provider sees it, so that the CPU
// reference and WebGPU accept and reject the same models: an IR version and opsets the engine knows,
// every node's domain imported, and every attribute of a node of the type its schema declares (the
// ONNX schemas of libonnx; for the ONNX Runtime contrib ops the engine runs, and ONNX ops newer than
// libonnx, the table in validate.cpp). A node of a domain or op the engine has no kernel for passes
// here and fails when it would run, naming the node, op and domain.
#pragma once
#include "ir/graph.h"

namespace onnxgpu::loader {

// The newest versions the engine knows: those of the newest ONNX test suite it runs (onnx 1.23's node
// tests: IR 14, ai.onnx opset 28, ai.onnx.ml 5). A newer model is an error, not a guess.
inline constexpr int64_t kMaxIrVersion = 14;
inline constexpr int64_t kMaxOnnxOpset = 28;
inline constexpr int64_t kMaxOnnxMlOpset = 5;
// ONNX Runtime's contrib domain (ir::kMsDomain) has one opset.
inline constexpr int64_t kMaxMsOpset = 1;

// Throws InvalidArgument naming the version, opset, or node and attribute at fault.
void validate_model(const ir::Model& model);

}  // namespace onnxgpu::loader
