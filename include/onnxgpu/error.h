// Errors are exceptions carrying a message that names what is at fault:
// the model node, the op, the tensor and what was expected.
#pragma once
#include <stdexcept>
#include <string>

namespace onnxgpu {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad model or bad input supplied by the user (malformed file, wrong dtype/shape, missing input...).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// An op, attribute or dtype outside what the engine implements.
class NotImplemented : public Error {
 public:
  using Error::Error;
};

// A failure reported by the GPU layer (Dawn validation, device loss, out of memory...).
class GpuError : public Error {
 public:
  using Error::Error;
};

}  // namespace onnxgpu
