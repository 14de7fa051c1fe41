// Measuring switches: $NAME=0 turns an optimisation off, to measure what it buys side by side
// (bench/env_ab.py). Every such switch reads through here.
#pragma once
#include <cstdlib>
#include <string_view>

namespace onnxgpu {

// Whether the optimisation behind $`name` is on: unless the variable is "0". Read at each call; a
// caller on a hot path keeps the answer in a static.
inline bool switched_on(const char* name) {
  const char* e = std::getenv(name);
  return !(e && std::string_view(e) == "0");
}

}  // namespace onnxgpu
