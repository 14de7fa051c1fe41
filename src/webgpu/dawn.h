// Loading Dawn (libwebgpu_wrapper.so) at run time and resolving the functions declared in abi.h.
//
// The library is found in this order:
//   1. $ONNXGPU_DAWN_LIB, when set (then only that path: a user who names a file means that file);
//   2. the path built in at compile time (ONNXGPU_DEFAULT_DAWN_LIB, set by CMake to the verified copy);
//   3. libwebgpu_wrapper.so next to the running executable.
// A missing file or function is an onnxgpu::Error naming the paths tried and what failed.
//
// Dawn's Vulkan backend needs the Vulkan loader, libvulkan.so.1. When the system has none, the
// copy in $ONNXGPU_VULKAN_LOADER or in Debian's chromium package (/usr/lib/chromium) is loaded first.
#pragma once
#include <string>
#include <vector>

#include "webgpu/abi.h"

namespace onnxgpu::webgpu {

// The resolved function table: dawn().CreateInstance(...) calls wgpuCreateInstance.
struct Dawn {
#define ONNXGPU_DAWN_MEMBER(name, ret, params) WGPUProc##name name = nullptr;
  WGPU_FUNCTIONS(ONNXGPU_DAWN_MEMBER)
#undef ONNXGPU_DAWN_MEMBER
  std::string path;           // the file that was loaded
  std::string vulkan_loader;  // the Vulkan loader (libvulkan.so.1) found for it, "" when none
};

// Loads the library on first use (thread-safe) and returns the table; throws onnxgpu::Error when
// it cannot. Later calls after a failure try again.
const Dawn& dawn();

// The paths dawn() tries, in order, and the loader itself (opens the first path that loads and has
// every function; throws onnxgpu::Error listing each path and why it failed). For tests and tools.
std::vector<std::string> dawn_candidate_paths();
Dawn open_dawn(const std::vector<std::string>& paths);

// Makes a WGPUStringView of a std::string (not owned) and a std::string of a WGPUStringView.
inline WGPUStringView to_view(const std::string& s) { return WGPUStringView{s.data(), s.size()}; }
inline WGPUStringView to_view(const char* s) { return WGPUStringView{s, WGPU_STRLEN}; }
std::string to_string(WGPUStringView v);

}  // namespace onnxgpu::webgpu
