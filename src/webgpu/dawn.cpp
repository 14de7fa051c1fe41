#include "webgpu/dawn.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "onnxgpu/error.h"

#ifndef ONNXGPU_DEFAULT_DAWN_LIB
#define ONNXGPU_DEFAULT_DAWN_LIB ""
#endif

namespace onnxgpu::webgpu {
namespace {

constexpr const char* kLibName = "libwebgpu_wrapper.so";

std::string next_to_executable() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string exe(buf, static_cast<size_t>(n));
  auto slash = exe.rfind('/');
  return slash == std::string::npos ? std::string{} : exe.substr(0, slash + 1) + kLibName;
}

}  // namespace

std::vector<std::string> dawn_candidate_paths() {
  if (const char* env = std::getenv("ONNXGPU_DAWN_LIB"); env && *env) return {env};
  std::vector<std::string> paths;
  if (std::strlen(ONNXGPU_DEFAULT_DAWN_LIB) > 0) paths.push_back(ONNXGPU_DEFAULT_DAWN_LIB);
  if (auto p = next_to_executable(); !p.empty()) paths.push_back(p);
  return paths;
}

namespace {

// Dawn's Vulkan backend dlopens "libvulkan.so.1". Where the system has no Vulkan loader (Debian's
// libvulkan1 is not installed) but Debian's chromium is, load chromium's copy first: the dynamic
// linker then hands it to Dawn, as its SONAME is libvulkan.so.1. Returns the loader's path ("" if none).
std::string preload_vulkan_loader() {
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_GLOBAL);
  std::vector<std::string> fallbacks;
  if (const char* env = std::getenv("ONNXGPU_VULKAN_LOADER"); env && *env) fallbacks.push_back(env);
  fallbacks.push_back("/usr/lib/chromium/libvulkan.so.1");
  for (size_t i = 0; !lib && i < fallbacks.size(); ++i) lib = dlopen(fallbacks[i].c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!lib) return {};
  Dl_info info{};
  void* sym = dlsym(lib, "vkGetInstanceProcAddr");
  return sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "libvulkan.so.1";
}

}  // namespace

Dawn open_dawn(const std::vector<std::string>& paths) {
  std::string tried;
  for (const std::string& path : paths) {
    // RTLD_LOCAL keeps Dawn's bundled symbols (abseil, SPIRV-Tools) away from everyone else.
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      tried += "\n  " + path + ": " + (why ? why : "cannot be loaded");
      continue;
    }
    Dawn d;
    d.path = path;
    std::string missing;
#define ONNXGPU_DAWN_RESOLVE(name, ret, params)                                    \
  d.name = reinterpret_cast<WGPUProc##name>(dlsym(lib, "wgpu" #name));             \
  if (!d.name) missing += std::string(missing.empty() ? "" : ", ") + "wgpu" #name;
    WGPU_FUNCTIONS(ONNXGPU_DAWN_RESOLVE)
#undef ONNXGPU_DAWN_RESOLVE
    if (missing.empty()) {  // the library stays loaded for the life of the process
      d.vulkan_loader = preload_vulkan_loader();
      return d;
    }
    dlclose(lib);
    tried += "\n  " + path + ": lacks " + missing + " (not the Dawn build onnxgpu expects)";
  }
  if (tried.empty()) tried = "\n  (no candidate path: set ONNXGPU_DAWN_LIB)";
  throw Error(std::string("cannot load Dawn's WebGPU library ") + kLibName + "; tried:" + tried +
              "\nRun scripts/build (it fetches and verifies Dawn) or point ONNXGPU_DAWN_LIB at the file.");
}

const Dawn& dawn() {
  // A throwing initializer leaves the static uninitialized, so the next call tries again. Never
  // freed, so that handles released by static destructors still find the table.
  static const Dawn* loaded = new Dawn(open_dawn(dawn_candidate_paths()));
  return *loaded;
}

std::string to_string(WGPUStringView v) {
  if (!v.data) return {};
  if (v.length == WGPU_STRLEN) return std::string(v.data);
  return std::string(v.data, v.length);
}

}  // namespace onnxgpu::webgpu
