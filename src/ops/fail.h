// How src/ops reports a bad node: through the caller's `fail` (a kernel context's, which throws an
// error naming the node), never returning.
#pragma once
#include <functional>
#include <string>

#include "onnxgpu/error.h"

namespace onnxgpu::ops {

using Fail = std::function<void(const std::string&)>;  // must throw (the kernel context's fail)

// Calls `fail` with the message; throws InvalidArgument itself should `fail` return.
[[noreturn]] inline void raise(const Fail& fail, const std::string& message) {
  fail(message);
  throw InvalidArgument(message);
}

}  // namespace onnxgpu::ops
