// TensorProto <-> Tensor, and the .pb / .npy tensor files the command line reads and writes.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "onnxgpu/tensor.h"

namespace onnx {
class TensorProto;
}

namespace onnxgpu::loader {

// Where a tensor's external data is read from. `dir` is the folder its location is relative to (the
// model's or the tensor file's; "" = the current directory); the file must resolve, after symlinks,
// inside `root` ("" = `dir`), as ONNX requires: an absolute location, "..", or a link out of the folder
// is an error, so a model can never make the engine read a file it does not ship.
// `files`: where the files are mapped, once for the whole load, and the tensors' storage is their pages
// (null: each tensor's bytes are read into memory of its own).
class MappedFiles;  // mapped_file.h
struct ExternalDataDir {
  std::string dir;
  std::string root;
  std::shared_ptr<MappedFiles> files = nullptr;
};

// `what` names the tensor in error messages.
Tensor tensor_from_proto(const onnx::TensorProto& p, const ExternalDataDir& ext, const std::string& what);
// The same, taking the proto's raw bytes into the tensor instead of copying them (the proto is left
// without them).
Tensor take_tensor_from_proto(onnx::TensorProto& p, const ExternalDataDir& ext, const std::string& what);
// The same for a proto parted from its raw data (loader/wire.h), which is `size` bytes at `raw_data`:
// the tensor's storage is those bytes themselves when `keep` holds them and they are aligned
// to the element size, else a copy.
Tensor tensor_from_proto_and_bytes(const onnx::TensorProto& p, const void* raw_data, size_t size,
                                   std::shared_ptr<const void> keep, const ExternalDataDir& ext, const std::string& what);
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& p);

// ONNX TensorProto file (input_0.pb). Returns (name stored in the file, tensor). External data must
// resolve inside the file's folder.
std::pair<std::string, Tensor> read_tensor_pb(const std::string& path);
void write_tensor_pb(const std::string& path, const std::string& name, const Tensor& t);

// NumPy .npy (format 1.0/2.0, little-endian, C order).
Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

// By extension: .npy or .pb.
Tensor read_tensor_file(const std::string& path);

}  // namespace onnxgpu::loader
