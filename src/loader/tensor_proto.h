// TensorProto <-> Tensor, and the .pb / .npy tensor files the command line reads and writes.
#pragma once
#include <string>
#include <utility>

#include "onnxgpu/tensor.h"

namespace onnx {
class TensorProto;
}

namespace onnxgpu::loader {

// `base_dir` resolves external data; `what` names the tensor in error messages.
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir, const std::string& what);
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& p);

// ONNX TensorProto file (input_0.pb). Returns (name stored in the file, tensor).
std::pair<std::string, Tensor> read_tensor_pb(const std::string& path);
void write_tensor_pb(const std::string& path, const std::string& name, const Tensor& t);

// NumPy .npy (format 1.0/2.0, little-endian, C order).
Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

// By extension: .npy or .pb.
Tensor read_tensor_file(const std::string& path);

}  // namespace onnxgpu::loader
