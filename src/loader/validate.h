// The checks a loaded model passes before either execution provider sees it, so that the CPU
// reference and WebGPU accept and reject the same models: an IR version and opsets the engine knows,
// and every attribute of an ONNX-domain node of the type its ONNX schema declares.
#pragma once
#include "ir/graph.h"

namespace onnxgpu::loader {

// The newest versions the engine knows: those of the newest ONNX test suite it runs (onnx 1.23's node
// tests: IR 14, ai.onnx opset 28, ai.onnx.ml 5). A newer model is an error, not a guess.
inline constexpr int64_t kMaxIrVersion = 14;
inline constexpr int64_t kMaxOnnxOpset = 28;
inline constexpr int64_t kMaxOnnxMlOpset = 5;

// Throws InvalidArgument naming the version, opset, or node and attribute at fault.
void validate_model(const ir::Model& model);

}  // namespace onnxgpu::loader
