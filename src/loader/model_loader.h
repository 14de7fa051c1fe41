// ONNX files in: protobuf (Debian's libonnx) -> ir::Model. A file is mapped and parsed in place, and
// tensors take the bytes protobuf parsed: a weight is copied once on its way in. Every malformed, truncated or unsupported
// model is an InvalidArgument naming what is wrong; the loader never crashes on bad bytes.
#pragma once
#include <string>

#include "ir/graph.h"
#include "loader/tensor_proto.h"

namespace onnxgpu::loader {

// External data is read from the model's folder and must resolve inside `external_data_root`
// ("" = the model's folder; a wider folder only for models the caller trusts).
ir::Model load_model(const std::string& path, const std::string& external_data_root = "");
// `ext.dir` is where external-data files are looked up ("" = the current directory).
ir::Model load_model_from_bytes(const std::string& bytes, const ExternalDataDir& ext = {});
ir::Model load_model_from_memory(const void* bytes, size_t size, const ExternalDataDir& ext = {});

}  // namespace onnxgpu::loader
