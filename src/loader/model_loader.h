// ONNX files in: protobuf (Debian's libonnx) -> ir::Model. Every malformed, truncated or unsupported
// model is an InvalidArgument naming what is wrong; the loader never crashes on bad bytes.
#pragma once
#include <string>

#include "ir/graph.h"

namespace onnxgpu::loader {

ir::Model load_model(const std::string& path);
// `base_dir` is where external-data files are looked up ("" = current directory).
ir::Model load_model_from_bytes(const std::string& bytes, const std::string& base_dir = "");

}  // namespace onnxgpu::loader
