// Session config entries (ONNX Runtime style key/value strings) -> SessionOptions fields.
#pragma once
#include "onnxgpu/session.h"

namespace onnxgpu::runtime {

// Known keys:
//   gpu_graph_capture            "1"/"0"  (ONNX Runtime-style key) -> options.capture
//   onnxgpu.ep                   "webgpu"/"cpu"
//   onnxgpu.int64.strategy       "bitcast_to_i32" | "cast_to_i32" | "per_op_optin"
//   onnxgpu.int64.fail_loud      "1"/"0"
//   onnxgpu.int64.fallback_per_op "1"/"0"
//   onnxgpu.external_data_root   a folder external data may resolve inside (default: the model's folder)
// Unknown "onnxgpu." keys are errors; other keys are ignored as ONNX Runtime does.
void apply_config_entries(SessionOptions& options);

}  // namespace onnxgpu::runtime
