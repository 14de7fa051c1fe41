// The checks a loaded model passes before either execution provider sees it, so that the CPU
// reference and WebGPU accept and reject the same models: an IR version and opsets the engine knows,
// and every attribute of an ONNX-domain node of the type its ONNX schema declares.
#pragma once
#include "ir/graph.h"

namespace onnxgpu::loader {

// The newest versions the engine knows (ONNX 1.23's IR and default-domain opset; ai.onnx.ml's).
inline constexpr int64_t kMaxIrVersion = 11;
inline constexpr int64_t kMaxOnnxOpset = 24;
inline constexpr int64_t kMaxOnnxMlOpset = 5;

// Throws InvalidArgument naming the version, opset, or node and attribute at fault.
void validate_model(const ir::Model& model);

}  // namespace onnxgpu::loader
