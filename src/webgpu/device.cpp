#include "webgpu/device.h"

#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "core/parallel.h"
#include "webgpu/dawn.h"

namespace onnxgpu::webgpu {

// ---- Handles ---------------------------------------------------------------------------------

#define ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(T, Name)                          \
  void HandleOps<T>::add_ref(T h) { dawn().Name##AddRef(h); }           \
  void HandleOps<T>::release(T h) { dawn().Name##Release(h); }
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUInstance, Instance)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUAdapter, Adapter)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUDevice, Device)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUQueue, Queue)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUBuffer, Buffer)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUShaderModule, ShaderModule)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUComputePipeline, ComputePipeline)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUBindGroupLayout, BindGroupLayout)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUBindGroup, BindGroup)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUCommandEncoder, CommandEncoder)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUComputePassEncoder, ComputePassEncoder)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUCommandBuffer, CommandBuffer)
ONNXGPU_WEBGPU_HANDLE_OPS_IMPL(WGPUQuerySet, QuerySet)
#undef ONNXGPU_WEBGPU_HANDLE_OPS_IMPL

namespace {

uint64_t round_up4(uint64_t n) { return (n + 3) / 4 * 4; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Callback state lives on the heap, shared between the waiter and Dawn's callback: if a wait times
// out, the callback (which Dawn always calls exactly once, at the latest when the instance goes)
// still finds it alive.
template <class S>
void* hold(const std::shared_ptr<S>& s) {
  return new std::shared_ptr<S>(s);
}
template <class S>
std::shared_ptr<S> take(void* userdata) {
  auto* p = static_cast<std::shared_ptr<S>*>(userdata);
  std::shared_ptr<S> s = std::move(*p);
  delete p;
  return s;
}

std::chrono::milliseconds resolve_timeout(std::chrono::milliseconds t) {
  if (t.count() > 0) return t;
  if (const char* env = std::getenv("ONNXGPU_GPU_TIMEOUT_MS"); env && *env) {
    char* end = nullptr;
    long long ms = std::strtoll(env, &end, 10);
    if (*end != '\0' || ms <= 0) throw InvalidArgument(std::string("ONNXGPU_GPU_TIMEOUT_MS='") + env + "' is not a positive number of milliseconds");
    return std::chrono::milliseconds(ms);
  }
  return std::chrono::milliseconds(60000);
}

void wait_future(WGPUInstance instance, WGPUFuture future, std::chrono::milliseconds timeout, const char* what) {
  WGPUFutureWaitInfo info{future, 0};
  uint64_t ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count());
  WGPUWaitStatus status = dawn().InstanceWaitAny(instance, 1, &info, ns);
  if (status == WGPUWaitStatus_TimedOut)
    throw GpuError(std::string("WebGPU: timed out after ") + std::to_string(timeout.count()) + " ms waiting for " + what +
                   " (raise ONNXGPU_GPU_TIMEOUT_MS if the GPU is just slow)");
  if (status != WGPUWaitStatus_Success || !info.completed)
    throw GpuError(std::string("WebGPU: waiting for ") + what + " failed (wgpuInstanceWaitAny status " +
                   std::to_string(static_cast<int>(status)) + ")");
}

// memcpy out of a mapped readback buffer. Reading mapped GPU memory runs at a fraction of memory
// bandwidth per thread, so a large copy (GPT-2's 25 MB of logits) is split over a few threads.
void copy_out(void* dst, const void* src, size_t n) {
  const size_t parts = copy_parts(n);
  if (parts < 2) {
    std::memcpy(dst, src, n);
    return;
  }
  const size_t chunk = ((n + parts - 1) / parts + 63) / 64 * 64;  // parts * chunk >= n
  run_parts(parts, [=](size_t p) {
    const size_t at = p * chunk;
    if (at < n) std::memcpy(static_cast<std::byte*>(dst) + at, static_cast<const std::byte*>(src) + at, std::min(chunk, n - at));
  });
}

// Dawn's message without its trailing blank lines.
std::string trimmed(WGPUStringView v) {
  std::string s = to_string(v);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string error_type_name(WGPUErrorType t) {
  switch (t) {
    case WGPUErrorType_Validation: return "validation error";
    case WGPUErrorType_OutOfMemory: return "out of memory";
    case WGPUErrorType_Internal: return "internal error";
    default: return "error";
  }
}

// ---- Adapters ----------------------------------------------------------------------------------

struct BackendName {
  const char* name;
  WGPUBackendType type;
};
constexpr BackendName kBackends[] = {
    {"vulkan", WGPUBackendType_Vulkan}, {"opengles", WGPUBackendType_OpenGLES}, {"opengl", WGPUBackendType_OpenGL},
    {"d3d12", WGPUBackendType_D3D12},   {"d3d11", WGPUBackendType_D3D11},       {"metal", WGPUBackendType_Metal},
    {"webgpu", WGPUBackendType_WebGPU}, {"null", WGPUBackendType_Null},
};

// Backends tried when none is forced, best first. Linux has Vulkan and OpenGL (ES).
constexpr WGPUBackendType kDefaultBackends[] = {WGPUBackendType_Vulkan, WGPUBackendType_OpenGLES};

std::string backend_option(const DeviceOptions& o) {
  if (!o.backend.empty()) return lower(o.backend);
  const char* env = std::getenv("ONNXGPU_BACKEND");
  return env ? lower(env) : std::string{};
}
std::string adapter_option(const DeviceOptions& o) {
  if (!o.adapter.empty()) return o.adapter;
  const char* env = std::getenv("ONNXGPU_ADAPTER");
  return env ? std::string(env) : std::string{};
}

WGPUBackendType parse_backend(const std::string& name) {
  for (const auto& b : kBackends)
    if (name == b.name) return b.type;
  std::string known;
  for (const auto& b : kBackends) known += std::string(known.empty() ? "" : ", ") + b.name;
  throw InvalidArgument("unknown WebGPU backend '" + name + "' (ONNXGPU_BACKEND / --backend): expected one of " + known);
}

const char* kNullRefused =
    "Dawn's Null backend was requested; onnxgpu refuses it: it accepts every call and computes nothing";

std::string no_adapter_help() {
  return "To get one: install the Vulkan driver of your GPU (and the Vulkan loader, libvulkan1), or a CPU Vulkan "
         "driver, which onnxgpu uses by itself when no GPU driver gives an adapter: Debian's chromium package "
         "(SwiftShader; scripts/test and scripts/demo install it), or any ICD file named by ONNXGPU_CPU_VULKAN_ICD.";
}

Limits to_limits(const WGPULimits& l) {
  Limits r;
  r.max_buffer_size = l.maxBufferSize;
  r.max_storage_buffer_binding_size = l.maxStorageBufferBindingSize;
  r.max_uniform_buffer_binding_size = l.maxUniformBufferBindingSize;
  r.max_storage_buffers_per_shader_stage = l.maxStorageBuffersPerShaderStage;
  r.max_uniform_buffers_per_shader_stage = l.maxUniformBuffersPerShaderStage;
  r.max_bind_groups = l.maxBindGroups;
  r.max_bindings_per_bind_group = l.maxBindingsPerBindGroup;
  r.min_storage_buffer_offset_alignment = l.minStorageBufferOffsetAlignment;
  r.min_uniform_buffer_offset_alignment = l.minUniformBufferOffsetAlignment;
  r.max_compute_workgroup_storage_size = l.maxComputeWorkgroupStorageSize;
  r.max_compute_invocations_per_workgroup = l.maxComputeInvocationsPerWorkgroup;
  r.max_compute_workgroup_size_x = l.maxComputeWorkgroupSizeX;
  r.max_compute_workgroup_size_y = l.maxComputeWorkgroupSizeY;
  r.max_compute_workgroup_size_z = l.maxComputeWorkgroupSizeZ;
  r.max_compute_workgroups_per_dimension = l.maxComputeWorkgroupsPerDimension;
  return r;
}

// WGPULimits with every field "undefined" (= default), as WGPU_LIMITS_INIT does.
WGPULimits undefined_limits() {
  WGPULimits l;
  std::memset(&l, 0xff, sizeof l);  // every u32/u64 limit = WGPU_LIMIT_*_UNDEFINED
  l.nextInChain = nullptr;
  return l;
}

// The adapter's own values for the limits the engine relies on; the rest stay at their defaults.
WGPULimits required_limits(const WGPULimits& a) {
  WGPULimits l = undefined_limits();
  l.maxBufferSize = a.maxBufferSize;
  l.maxStorageBufferBindingSize = a.maxStorageBufferBindingSize;
  l.maxUniformBufferBindingSize = a.maxUniformBufferBindingSize;
  l.maxStorageBuffersPerShaderStage = a.maxStorageBuffersPerShaderStage;
  l.maxUniformBuffersPerShaderStage = a.maxUniformBuffersPerShaderStage;
  l.maxBindGroups = a.maxBindGroups;
  l.maxBindingsPerBindGroup = a.maxBindingsPerBindGroup;
  l.maxComputeWorkgroupStorageSize = a.maxComputeWorkgroupStorageSize;
  l.maxComputeInvocationsPerWorkgroup = a.maxComputeInvocationsPerWorkgroup;
  l.maxComputeWorkgroupSizeX = a.maxComputeWorkgroupSizeX;
  l.maxComputeWorkgroupSizeY = a.maxComputeWorkgroupSizeY;
  l.maxComputeWorkgroupSizeZ = a.maxComputeWorkgroupSizeZ;
  l.maxComputeWorkgroupsPerDimension = a.maxComputeWorkgroupsPerDimension;
  return l;
}

struct Candidate {
  AdapterHandle handle;
  AdapterInfo info;
  WGPULimits limits;
};

AdapterInfo describe(WGPUAdapter adapter, WGPUFeatureLevel level, WGPULimits& limits_out) {
  const Dawn& d = dawn();
  AdapterInfo info;
  WGPUAdapterInfo raw{};
  if (d.AdapterGetInfo(adapter, &raw) != WGPUStatus_Success) throw GpuError("WebGPU: wgpuAdapterGetInfo failed");
  info.backend = raw.backendType;
  info.type = raw.adapterType;
  info.feature_level = level;
  info.vendor = to_string(raw.vendor);
  info.architecture = to_string(raw.architecture);
  info.device = to_string(raw.device);
  info.description = to_string(raw.description);
  info.vendor_id = raw.vendorID;
  info.device_id = raw.deviceID;
  info.subgroup_min_size = raw.subgroupMinSize;
  info.subgroup_max_size = raw.subgroupMaxSize;
  d.AdapterInfoFreeMembers(raw);
  // Dawn's OpenGL backends cannot tell the adapter type; a known software rasterizer is a CPU one.
  if (info.type == WGPUAdapterType_Unknown) {
    std::string name = lower(info.device + " " + info.description);
    for (const char* cpu : {"llvmpipe", "softpipe", "lavapipe", "swiftshader", "software"})
      if (name.find(cpu) != std::string::npos) info.type = WGPUAdapterType_CPU;
  }

  limits_out = WGPULimits{};
  if (d.AdapterGetLimits(adapter, &limits_out) != WGPUStatus_Success) throw GpuError("WebGPU: wgpuAdapterGetLimits failed");
  info.limits = to_limits(limits_out);

  WGPUSupportedFeatures features{};
  d.AdapterGetFeatures(adapter, &features);
  for (size_t i = 0; i < features.featureCount; ++i) {
    WGPUFeatureName f = features.features[i];
    info.feature_names.push_back(feature_name(f));
    if (f == WGPUFeatureName_ShaderF16) info.features.shader_f16 = true;
    if (f == WGPUFeatureName_Subgroups) info.features.subgroups = true;
    if (f == WGPUFeatureName_TimestampQuery) info.features.timestamp_query = true;
  }
  d.SupportedFeaturesFreeMembers(features);
  return info;
}

bool same_adapter(const AdapterInfo& a, const AdapterInfo& b) {
  return a.backend == b.backend && a.type == b.type && a.vendor_id == b.vendor_id && a.device_id == b.device_id &&
         a.device == b.device && a.description == b.description;
}

struct AdapterRequest {
  WGPURequestAdapterStatus status = WGPURequestAdapterStatus_Error;
  WGPUAdapter adapter = nullptr;
  std::string message;
};

// Asks Dawn for the adapter of `backend` with each power preference (Dawn has no enumeration entry
// point in this build), keeping the distinct ones. Null adapters are kept here and refused by choose().
void request_adapters(WGPUInstance instance, WGPUBackendType backend, std::chrono::milliseconds timeout,
                      std::vector<Candidate>& out, std::vector<std::string>& notes) {
  const Dawn& d = dawn();
  bool gl = backend == WGPUBackendType_OpenGLES || backend == WGPUBackendType_OpenGL;
  WGPUFeatureLevel level = gl ? WGPUFeatureLevel_Compatibility : WGPUFeatureLevel_Core;
  for (WGPUPowerPreference pref : {WGPUPowerPreference_HighPerformance, WGPUPowerPreference_LowPower}) {
    WGPURequestAdapterOptions options{};
    options.featureLevel = level;
    options.powerPreference = pref;
    options.backendType = backend;
    auto state = std::make_shared<AdapterRequest>();
    WGPURequestAdapterCallbackInfo cb{};
    cb.mode = WGPUCallbackMode_WaitAnyOnly;
    cb.callback = [](WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message, void* u1, void*) {
      auto s = take<AdapterRequest>(u1);
      s->status = status;
      s->adapter = adapter;
      s->message = to_string(message);
    };
    cb.userdata1 = hold(state);
    wait_future(instance, d.InstanceRequestAdapter(instance, &options, cb), timeout, "an adapter");
    if (state->status != WGPURequestAdapterStatus_Success || !state->adapter) {
      std::string note = backend_name(backend) + ": " + (state->message.empty() ? "no adapter" : state->message);
      if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
      if (state->adapter) d.AdapterRelease(state->adapter);
      continue;
    }
    Candidate c{AdapterHandle(state->adapter), {}, {}};
    c.info = describe(c.handle.get(), level, c.limits);
    bool seen = false;
    for (const Candidate& o : out) seen = seen || same_adapter(o.info, c.info);
    if (!seen) out.push_back(std::move(c));
  }
}

int type_rank(WGPUAdapterType t) {
  switch (t) {
    case WGPUAdapterType_DiscreteGPU: return 3;
    case WGPUAdapterType_IntegratedGPU: return 2;
    case WGPUAdapterType_CPU: return 0;
    default: return 1;  // unknown: below real GPUs, above a CPU rasterizer
  }
}

int backend_rank(WGPUBackendType b) {
  switch (b) {
    case WGPUBackendType_Vulkan:
    case WGPUBackendType_D3D12:
    case WGPUBackendType_Metal: return 3;
    case WGPUBackendType_OpenGLES: return 2;
    case WGPUBackendType_OpenGL: return 1;
    default: return 0;
  }
}

bool matches(const AdapterInfo& a, const std::string& filter) {
  if (filter.empty()) return true;
  std::string f = lower(filter);
  for (const std::string* s : {&a.device, &a.description, &a.vendor, &a.architecture})
    if (lower(*s).find(f) != std::string::npos) return true;
  return false;
}

// The best acceptable candidate (-1 if none): never Null; hardware (discrete > integrated) before
// unknown before CPU; then the better backend; then the order found.
int choose(const std::vector<Candidate>& cands, const std::string& filter) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(cands.size()); ++i) {
    const AdapterInfo& a = cands[static_cast<size_t>(i)].info;
    if (a.backend == WGPUBackendType_Null || !matches(a, filter)) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const AdapterInfo& b = cands[static_cast<size_t>(best)].info;
    if (std::pair(type_rank(a.type), backend_rank(a.backend)) > std::pair(type_rank(b.type), backend_rank(b.backend)))
      best = i;
  }
  return best;
}

InstanceHandle create_instance() {
  WGPUInstanceDescriptor desc{};
  desc.capabilities.timedWaitAnyEnable = 1;  // else WaitAny with a timeout fails
  WGPUInstance instance = dawn().CreateInstance(&desc);
  if (!instance) throw GpuError("WebGPU: wgpuCreateInstance failed (Dawn library " + dawn().path + ")");
  return InstanceHandle(instance);
}

// Whether a file matches the glob pattern.
bool any_file_matches(const std::string& pattern) {
  glob_t g{};
  bool found = glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0;
  globfree(&g);
  return found;
}

bool gpu_device_nodes_present() {
  return any_file_matches("/dev/dri/renderD*") || any_file_matches("/dev/nvidia[0-9]*");
}

// A CPU Vulkan driver for machines whose Vulkan loader finds no adapter: $ONNXGPU_CPU_VULKAN_ICD, else
// SwiftShader from Debian's chromium package (what scripts/ install); "" when there is none.
std::string cpu_vulkan_driver() {
  if (const char* env = std::getenv("ONNXGPU_CPU_VULKAN_ICD"); env && *env) return env;
  for (const char* path : {"/usr/lib/chromium/vk_swiftshader_icd.json"})
    if (access(path, R_OK) == 0) return path;
  return "";
}

// Whether the Vulkan loader has a driver to look at: an ICD file in one of the folders it searches
// (the XDG config and data folders' vulkan/icd.d, /etc/vulkan/icd.d). Without one, asking Dawn for a
// Vulkan adapter only prints the loader's "found no drivers" warnings.
bool system_vulkan_drivers_present() {
  std::vector<std::string> dirs{"/etc/vulkan/icd.d"};
  auto add_list = [&](const char* var, const char* fallback) {
    const char* v = std::getenv(var);
    std::istringstream in(v && *v ? v : fallback);
    for (std::string d; std::getline(in, d, ':');)
      if (!d.empty()) dirs.push_back(d + "/vulkan/icd.d");
  };
  add_list("XDG_CONFIG_DIRS", "/etc/xdg");
  add_list("XDG_DATA_DIRS", "/usr/local/share:/usr/share");
  if (const char* home = std::getenv("XDG_DATA_HOME"); home && *home) dirs.push_back(std::string(home) + "/vulkan/icd.d");
  else if (const char* h = std::getenv("HOME"); h && *h) dirs.push_back(std::string(h) + "/.local/share/vulkan/icd.d");
  for (const auto& d : dirs)
    if (any_file_matches(d + "/*.json")) return true;
  return false;
}

// Whether the user chose the Vulkan drivers (the loader's VK_ICD_FILENAMES / VK_DRIVER_FILES).
bool vulkan_drivers_chosen() {
  for (const char* var : {"VK_ICD_FILENAMES", "VK_DRIVER_FILES"})
    if (const char* v = std::getenv(var); v && *v) return true;
  return false;
}

struct Enumeration {
  InstanceHandle instance;  // the instance the candidates belong to
  std::vector<Candidate> candidates;
  std::vector<std::string> notes;  // why a backend gave nothing
  int chosen = -1;
  std::string why_none;
};

// Finds the adapters, trying the backends in order. Later backends are skipped once an acceptable
// adapter is found, unless it is a CPU one and the machine has a GPU device node (so OpenGL ES, whose
// probing prints EGL warnings, is not tried when Vulkan works).
//
// When Vulkan gives no adapter and the user chose no Vulkan driver, the CPU Vulkan driver
// (cpu_vulkan_driver) is tried in a new instance before the next backend: a machine without a GPU
// then works with no variable set, and says so (AdapterInfo::found_driver). Setting VK_ICD_FILENAMES
// for this process makes later instances see the same driver.
Enumeration enumerate(const DeviceOptions& options, std::chrono::milliseconds timeout) {
  Enumeration e;
  e.instance = create_instance();
  std::string backend = backend_option(options);
  std::string filter = adapter_option(options);
  std::vector<WGPUBackendType> backends;
  if (backend.empty() || backend == "any" || backend == "auto")
    backends.assign(std::begin(kDefaultBackends), std::end(kDefaultBackends));
  else
    backends.push_back(parse_backend(backend));

  for (WGPUBackendType b : backends) {
    if (e.chosen >= 0) {
      // A later backend can only win with a hardware adapter, which needs a GPU device node.
      if (e.candidates[static_cast<size_t>(e.chosen)].info.is_hardware() || !gpu_device_nodes_present()) break;
    }
    const bool cpu_driver_only = b == WGPUBackendType_Vulkan && !vulkan_drivers_chosen() && !system_vulkan_drivers_present();
    if (!cpu_driver_only) request_adapters(e.instance.get(), b, timeout, e.candidates, e.notes);
    if (b == WGPUBackendType_Vulkan && e.candidates.empty() && !vulkan_drivers_chosen()) {
      std::string driver = cpu_vulkan_driver();
      if (!driver.empty()) {
        setenv("VK_ICD_FILENAMES", driver.c_str(), 1);
        e.instance = create_instance();
        request_adapters(e.instance.get(), b, timeout, e.candidates, e.notes);
        for (Candidate& c : e.candidates) c.info.found_driver = driver;
        if (e.candidates.empty()) e.notes.push_back("vulkan: the CPU driver " + driver + " gave no adapter either");
      }
    }
    e.chosen = choose(e.candidates, filter);
  }
  if (e.chosen >= 0) return e;

  // Explain why nothing is acceptable.
  bool only_null = !e.candidates.empty();
  for (const Candidate& c : e.candidates) only_null = only_null && c.info.backend == WGPUBackendType_Null;
  if (only_null) {
    e.why_none = std::string(kNullRefused) + ".";
    if (backends.size() != 1 || backends[0] != WGPUBackendType_Null) e.why_none += " " + no_adapter_help();
    return e;
  }
  if (!e.candidates.empty()) {
    e.why_none = "no WebGPU adapter matches '" + filter + "' (ONNXGPU_ADAPTER / --adapter); found:";
    for (const Candidate& c : e.candidates) e.why_none += "\n  " + c.info.summary();
    return e;
  }
  std::string tried;
  for (WGPUBackendType b : backends) tried += std::string(tried.empty() ? "" : ", ") + backend_name(b);
  e.why_none = "no WebGPU adapter found (backends tried: " + tried + ")";
  for (const std::string& n : e.notes) e.why_none += "\n  " + n;
  if (dawn().vulkan_loader.empty())
    e.why_none += "\n  (no Vulkan loader, libvulkan.so.1, could be loaded: install libvulkan1, or chromium, whose copy "
                  "onnxgpu uses; or set ONNXGPU_VULKAN_LOADER)";
  e.why_none += "\n" + no_adapter_help();
  return e;
}

}  // namespace

std::string backend_name(WGPUBackendType b) {
  for (const auto& n : kBackends)
    if (n.type == b) return n.name;
  return "undefined";
}

std::string adapter_type_name(WGPUAdapterType t) {
  switch (t) {
    case WGPUAdapterType_DiscreteGPU: return "discrete";
    case WGPUAdapterType_IntegratedGPU: return "integrated";
    case WGPUAdapterType_CPU: return "cpu";
    default: return "unknown";
  }
}

std::string feature_name(WGPUFeatureName f) {
  switch (f) {
#define ONNXGPU_WEBGPU_FEATURE_CASE(name, value) \
  case WGPUFeatureName_##name: return #name;
    WGPU_FEATURE_NAMES(ONNXGPU_WEBGPU_FEATURE_CASE)
#undef ONNXGPU_WEBGPU_FEATURE_CASE
    default: {
      std::ostringstream s;
      s << "0x" << std::hex << static_cast<uint32_t>(f);
      return s.str();
    }
  }
}

std::string AdapterInfo::summary() const {
  std::string name = device.empty() ? description : device;
  std::string s = name + " [" + backend_name(backend) + ", " + adapter_type_name(type) + "]";
  if (!found_driver.empty()) s += " (no hardware Vulkan adapter: onnxgpu uses the CPU driver " + found_driver + ")";
  return s;
}

AdapterList list_adapters(const DeviceOptions& options) {
  Enumeration e = enumerate(options, resolve_timeout(options.timeout));
  AdapterList list;
  for (Candidate& c : e.candidates) list.adapters.push_back(std::move(c.info));
  list.chosen = e.chosen;
  list.why_none = e.why_none;
  return list;
}

// ---- Errors ------------------------------------------------------------------------------------

struct Device::ErrorState {
  std::mutex mu;
  std::vector<std::string> errors;  // uncaptured errors since the last check()
  std::string lost;                 // why the device was lost ("" while it is alive)
};

bool Device::lost() const {
  std::lock_guard lock(errors_->mu);
  return !errors_->lost.empty();
}

void Device::check() {
  std::lock_guard lock(errors_->mu);
  if (!errors_->lost.empty()) throw GpuError("WebGPU device lost: " + errors_->lost);
  if (errors_->errors.empty()) return;
  std::string msg = "WebGPU " + errors_->errors.front();
  for (size_t i = 1; i < errors_->errors.size(); ++i) msg += "\n" + errors_->errors[i];
  errors_->errors.clear();
  throw GpuError(msg);
}

namespace {

struct ScopeResult {
  WGPUPopErrorScopeStatus status = WGPUPopErrorScopeStatus_Error;
  WGPUErrorType type = WGPUErrorType_NoError;
  std::string message;
};

// Captures the validation, out-of-memory and internal errors of the calls made while it is open.
class ErrorScope {
 public:
  ErrorScope(WGPUDevice device, WGPUInstance instance, std::chrono::milliseconds timeout)
      : device_(device), instance_(instance), timeout_(timeout) {
    for (WGPUErrorFilter f : kFilters) dawn().DevicePushErrorScope(device_, f);
  }
  ~ErrorScope() {
    if (open_) try {
        pop();
      } catch (...) {
      }
  }
  // Closes the scope: "" when nothing failed, else the errors, one per line.
  std::string pop() {
    open_ = false;
    std::string errors;
    for (size_t i = 0; i < std::size(kFilters); ++i) {
      auto state = std::make_shared<ScopeResult>();
      WGPUPopErrorScopeCallbackInfo cb{};
      cb.mode = WGPUCallbackMode_WaitAnyOnly;
      cb.callback = [](WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void* u1, void*) {
        auto s = take<ScopeResult>(u1);
        s->status = status;
        s->type = type;
        s->message = trimmed(message);
      };
      cb.userdata1 = hold(state);
      wait_future(instance_, dawn().DevicePopErrorScope(device_, cb), timeout_, "an error scope");
      if (state->status == WGPUPopErrorScopeStatus_Success && state->type != WGPUErrorType_NoError)
        errors += (errors.empty() ? "" : "\n") + error_type_name(state->type) + ": " + state->message;
    }
    return errors;
  }

 private:
  static constexpr WGPUErrorFilter kFilters[] = {WGPUErrorFilter_Validation, WGPUErrorFilter_OutOfMemory,
                                                 WGPUErrorFilter_Internal};
  WGPUDevice device_;
  WGPUInstance instance_;
  std::chrono::milliseconds timeout_;
  bool open_ = true;
};

struct DeviceRequest {
  WGPURequestDeviceStatus status = WGPURequestDeviceStatus_Error;
  WGPUDevice device = nullptr;
  std::string message;
};

}  // namespace

// ---- Device ------------------------------------------------------------------------------------

Device::Device(const DeviceOptions& options)
    : timeout_(resolve_timeout(options.timeout)), errors_(std::make_shared<ErrorState>()) {
  const Dawn& d = dawn();
  Enumeration e = enumerate(options, timeout_);
  instance_ = std::move(e.instance);
  if (e.chosen < 0) throw Error(e.why_none);
  Candidate& chosen = e.candidates[static_cast<size_t>(e.chosen)];
  adapter_ = chosen.handle;
  adapter_info_ = chosen.info;

  std::vector<WGPUFeatureName> required;
  if (adapter_info_.features.shader_f16) required.push_back(WGPUFeatureName_ShaderF16);
  if (adapter_info_.features.subgroups) required.push_back(WGPUFeatureName_Subgroups);
  if (adapter_info_.features.timestamp_query) required.push_back(WGPUFeatureName_TimestampQuery);
  WGPULimits limits = required_limits(chosen.limits);

  // Dawn rounds timestamps to a coarse grain by default (against timing attacks in browsers): a
  // native engine's profile wants them exact.
  std::vector<std::string> on, off{"timestamp_quantization"};
  // $ONNXGPU_DAWN_TOGGLES="+name,-name ...": more Dawn device toggles turned on (+) or off (-), separated by
  // commas or spaces (bench/env_ab.py's variants separate their variables with commas).
  if (const char* env = std::getenv("ONNXGPU_DAWN_TOGGLES"); env && *env) {
    std::string list(env);
    std::replace(list.begin(), list.end(), ',', ' ');
    std::istringstream in(list);
    for (std::string t; in >> t;)
      if (t.size() > 1 && (t[0] == '+' || t[0] == '-')) (t[0] == '+' ? on : off).push_back(t.substr(1));
  }
  std::vector<const char*> on_c, off_c;
  for (const auto& t : on) on_c.push_back(t.c_str());
  for (const auto& t : off) off_c.push_back(t.c_str());
  WGPUDawnTogglesDescriptor toggles{};
  toggles.chain.sType = WGPUSType_DawnTogglesDescriptor;
  toggles.enabledToggleCount = on_c.size();
  toggles.enabledToggles = on_c.data();
  toggles.disabledToggleCount = off_c.size();
  toggles.disabledToggles = off_c.data();

  // The persistent shader and pipeline cache, when a folder for it can be used.
  WGPUDawnCacheDeviceDescriptor cache{};
  if (options.pipeline_cache != "off") {
    auto cache_folder = options.pipeline_cache.empty() ? BlobCache::default_folder()
                                                       : std::filesystem::path(options.pipeline_cache);
    if (!cache_folder.empty()) {
      blob_cache_ = std::make_unique<BlobCache>(cache_folder);
      if (!blob_cache_->usable()) blob_cache_.reset();
    }
  }
  if (blob_cache_) {
    cache.chain.sType = WGPUSType_DawnCacheDeviceDescriptor;
    cache.isolationKey = WGPUStringView{nullptr, WGPU_STRLEN};
    cache.loadDataFunction = [](const void* key, size_t key_size, void* value, size_t value_size, void* u) {
      return static_cast<BlobCache*>(u)->load(key, key_size, value, value_size);
    };
    cache.storeDataFunction = [](const void* key, size_t key_size, const void* value, size_t value_size, void* u) {
      static_cast<BlobCache*>(u)->store(key, key_size, value, value_size);
    };
    cache.functionUserdata = blob_cache_.get();
    toggles.chain.next = &cache.chain;
  }

  WGPUDeviceDescriptor desc{};
  desc.nextInChain = &toggles.chain;
  desc.label = to_view("onnxgpu");
  desc.requiredFeatureCount = required.size();
  desc.requiredFeatures = required.data();
  desc.requiredLimits = &limits;
  desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  desc.deviceLostCallbackInfo.callback = [](const WGPUDevice*, WGPUDeviceLostReason reason, WGPUStringView message,
                                            void* u1, void*) {
    // Called exactly once, at the latest when the device is released; it owns a reference to the
    // state so that the uncaptured-error callback (which borrows it) never outlives it.
    auto s = take<ErrorState>(u1);
    if (reason == WGPUDeviceLostReason_Destroyed || reason == WGPUDeviceLostReason_CallbackCancelled) return;
    std::lock_guard lock(s->mu);
    s->lost = trimmed(message);
    if (s->lost.empty()) s->lost = "reason " + std::to_string(static_cast<int>(reason));
  };
  desc.deviceLostCallbackInfo.userdata1 = hold(errors_);
  desc.uncapturedErrorCallbackInfo.callback = [](const WGPUDevice*, WGPUErrorType type, WGPUStringView message,
                                                 void* u1, void*) {
    auto* s = static_cast<ErrorState*>(u1);
    std::lock_guard lock(s->mu);
    s->errors.push_back(error_type_name(type) + ": " + trimmed(message));
  };
  desc.uncapturedErrorCallbackInfo.userdata1 = errors_.get();

  auto state = std::make_shared<DeviceRequest>();
  WGPURequestDeviceCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void* u1, void*) {
    auto s = take<DeviceRequest>(u1);
    s->status = status;
    s->device = device;
    s->message = to_string(message);
  };
  cb.userdata1 = hold(state);
  wait_future(instance_.get(), d.AdapterRequestDevice(adapter_.get(), &desc, cb), timeout_, "the device");
  if (state->status != WGPURequestDeviceStatus_Success || !state->device) {
    if (state->device) d.DeviceRelease(state->device);
    throw GpuError("WebGPU: creating a device on " + adapter_info_.summary() + " failed: " + state->message);
  }
  device_ = DeviceHandle(state->device);
  queue_ = QueueHandle(d.DeviceGetQueue(device_.get()));

  WGPULimits got{};
  if (d.DeviceGetLimits(device_.get(), &got) != WGPUStatus_Success) throw GpuError("WebGPU: wgpuDeviceGetLimits failed");
  limits_ = to_limits(got);
  features_.shader_f16 = d.DeviceHasFeature(device_.get(), WGPUFeatureName_ShaderF16);
  features_.subgroups = d.DeviceHasFeature(device_.get(), WGPUFeatureName_Subgroups);
  features_.timestamp_query = d.DeviceHasFeature(device_.get(), WGPUFeatureName_TimestampQuery);
}

Device::~Device() {
  // Dawn objects first (they hold the device), then queue, device, adapter, instance.
  pipelines_.clear();
  staging_ = Buffer{};
  upload_.buffer = Buffer{};  // a pending map is cancelled; its callback runs when the instance goes
  pool_.clear();
  queue_ = QueueHandle();
  device_ = DeviceHandle();
  if (instance_) dawn().InstanceProcessEvents(instance_.get());
}

void Device::wait(WGPUFuture future, const char* what) { wait_future(instance_.get(), future, timeout_, what); }

// ---- Buffers -----------------------------------------------------------------------------------

Buffer Device::create_buffer(uint64_t bytes, WGPUBufferUsage usage, const std::string& label, bool fake_oom_for_testing) {
  check();
  if (bytes > limits_.max_buffer_size || round_up4(bytes) > limits_.max_buffer_size)
    throw GpuError("WebGPU: cannot allocate a buffer of " + std::to_string(bytes) + " bytes: the device's maxBufferSize is " +
                   std::to_string(limits_.max_buffer_size) + " (" + adapter_info_.summary() + ")");
  uint64_t capacity = std::max<uint64_t>(4, round_up4(bytes));
  WGPUDawnFakeBufferOOMForTesting fake{};
  fake.chain.sType = WGPUSType_DawnFakeBufferOOMForTesting;
  fake.fakeOOMAtDevice = 1;
  WGPUBufferDescriptor desc{};
  desc.nextInChain = fake_oom_for_testing ? &fake.chain : nullptr;
  desc.label = to_view(label);
  desc.usage = usage;
  desc.size = capacity;
  ErrorScope scope(device_.get(), instance_.get(), timeout_);
  BufferHandle handle(dawn().DeviceCreateBuffer(device_.get(), &desc));
  if (std::string errors = scope.pop(); !errors.empty())
    throw GpuError("WebGPU: allocating a buffer of " + std::to_string(bytes) + " bytes failed: " + errors);
  if (!handle) throw GpuError("WebGPU: wgpuDeviceCreateBuffer returned no buffer");
  return Buffer{std::move(handle), bytes, capacity, usage};
}

Buffer Device::acquire(uint64_t bytes, WGPUBufferUsage usage) {
  uint64_t capacity = BufferPool::bucket(bytes);
  Buffer b;
  if (!pool_.take(capacity, usage, b)) b = create_buffer(capacity, usage);
  b.size = bytes;
  return b;
}

Buffer Device::upload(const void* data, uint64_t bytes) {
  Buffer b = acquire(bytes);
  write(b, data, bytes);
  return b;
}

void Device::write(WGPUBuffer dst, const void* data, uint64_t bytes, uint64_t offset) {
  check();
  if (offset % 4 != 0) throw InvalidArgument("WebGPU: buffer write offset " + std::to_string(offset) + " is not a multiple of 4");
  if (bytes == 0) return;
  if (bytes > kUploadRingBytes) {
    write_staged(dst, data, bytes, offset);
    return;
  }
  const auto* src = static_cast<const uint8_t*>(data);
  uint64_t whole = bytes / 4 * 4;
  if (whole > 0) dawn().QueueWriteBuffer(queue_.get(), dst, offset, src, whole);
  if (whole < bytes) {
    uint8_t tail[4] = {0, 0, 0, 0};
    std::memcpy(tail, src + whole, bytes - whole);
    dawn().QueueWriteBuffer(queue_.get(), dst, offset + whole, tail, 4);
  }
  check();
}

void Device::start_upload_map() {
  upload_.status = std::make_shared<int>(WGPUMapAsyncStatus_Error);
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView, void* u1, void*) { *take<int>(u1) = status; };
  cb.userdata1 = hold(upload_.status);
  upload_.future = dawn().BufferMapAsync(upload_.buffer.get(), WGPUMapMode_Write, 0,
                                         static_cast<size_t>(upload_.buffer.capacity), cb);
  upload_.pending = true;
}

void Device::map_upload() {
  if (!upload_.pending) start_upload_map();
  try {
    wait(upload_.future, "mapping the upload buffer");
  } catch (...) {
    upload_ = Upload{};  // its map may still be pending: never reuse it
    throw;
  }
  upload_.pending = false;
  if (*upload_.status != WGPUMapAsyncStatus_Success) {
    upload_ = Upload{};
    check();
    throw GpuError("WebGPU: mapping the upload buffer failed");
  }
  upload_.mapped = true;
}

void Device::write_staged(WGPUBuffer dst, const void* data, uint64_t bytes, uint64_t offset) {
  const Dawn& d = dawn();
  const uint64_t size = round_up4(bytes);
  if (!upload_.buffer.handle || upload_.buffer.capacity < size) {
    if (upload_.pending) map_upload();  // let the old map finish before the buffer goes
    upload_ = Upload{};
    upload_.buffer = create_buffer(BufferPool::bucket(size), WGPUBufferUsage_MapWrite | WGPUBufferUsage_CopySrc,
                                   "onnxgpu upload");
  }
  if (!upload_.mapped) map_upload();
  auto* mapped = static_cast<uint8_t*>(d.BufferGetMappedRange(upload_.buffer.get(), 0, static_cast<size_t>(size)));
  if (!mapped) {
    upload_ = Upload{};
    check();
    throw GpuError("WebGPU: the mapped upload buffer has no data");
  }
  std::memcpy(mapped, data, bytes);
  if (size > bytes) std::memset(mapped + bytes, 0, size - bytes);
  d.BufferUnmap(upload_.buffer.get());
  upload_.mapped = false;
  CommandBatch b = batch();
  b.copy(upload_.buffer.get(), 0, dst, offset, size);
  submit(b);  // ordered with queue writes and submits as a queue write made now would be
  start_upload_map();  // done once the copy is: the next write rarely waits
}

Buffer& Device::staging(uint64_t bytes) {
  if (!staging_.handle || staging_.capacity < bytes)
    staging_ = create_buffer(BufferPool::bucket(bytes), WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "onnxgpu staging");
  return staging_;
}

void Device::read(WGPUBuffer src, void* dst, uint64_t bytes, uint64_t offset) {
  ReadRequest r{src, offset, bytes, dst};
  read(std::span<const ReadRequest>(&r, 1));
}

void Device::read(std::span<const ReadRequest> requests) {
  CommandBatch b = batch();
  submit_and_read(b, requests);
}

namespace {
struct MapResult {
  WGPUMapAsyncStatus status = WGPUMapAsyncStatus_Error;
  std::string message;
};
}  // namespace

QuerySetHandle Device::timestamp_queries(uint32_t count) {
  if (!features_.timestamp_query) throw GpuError("WebGPU: this device has no TimestampQuery feature (profiling needs it)");
  WGPUQuerySetDescriptor desc{};
  desc.label = to_view("onnxgpu timestamps");
  desc.type = WGPUQueryType_Timestamp;
  desc.count = count;
  QuerySetHandle set(dawn().DeviceCreateQuerySet(device_.get(), &desc));
  check();
  return set;
}

void Device::submit(CommandBatch& batch) { submit_and_read(batch, {}); }

CommandBufferHandle Device::finish(CommandBatch& batch) {
  CommandBufferHandle commands = batch.finish();
  check();
  return commands;
}

void Device::submit(CommandBufferHandle commands) {
  check();
  WGPUCommandBuffer raw = commands.get();
  if (raw) dawn().QueueSubmit(queue_.get(), 1, &raw);
  check();
}

void Device::submit_and_read(CommandBatch& batch, std::span<const ReadRequest> reads,
                             const std::function<void()>& while_waiting) {
  check();
  const Dawn& d = dawn();
  // Place each read's 4-byte-aligned cover of [offset, offset+size) in the staging buffer.
  std::vector<uint64_t> begin(reads.size()), where(reads.size());
  uint64_t total = 0;
  for (size_t i = 0; i < reads.size(); ++i) {
    const ReadRequest& r = reads[i];
    begin[i] = r.offset / 4 * 4;
    where[i] = total;
    if (r.size > 0) total += round_up4(r.offset + r.size) - begin[i];
  }
  WGPUBuffer stage = total > 0 ? staging(total).get() : nullptr;
  for (size_t i = 0; i < reads.size(); ++i) {
    const ReadRequest& r = reads[i];
    if (r.size > 0) batch.copy(r.buffer, begin[i], stage, where[i], round_up4(r.offset + r.size) - begin[i]);
  }
  if (!batch.empty()) {
    // No error scope here (it would cost waits on every run): Dawn reports a bad command buffer
    // to the uncaptured-error callback during these calls, and check() turns it into a GpuError.
    CommandBufferHandle commands = batch.finish();
    WGPUCommandBuffer raw = commands.get();
    d.QueueSubmit(queue_.get(), 1, &raw);
    check();
  }
  if (total == 0) {
    if (while_waiting) while_waiting();
    return;
  }

  auto state = std::make_shared<MapResult>();
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView message, void* u1, void*) {
    auto s = take<MapResult>(u1);
    s->status = status;
    s->message = to_string(message);
  };
  cb.userdata1 = hold(state);
  try {
    WGPUFuture mapped_future = d.BufferMapAsync(stage, WGPUMapMode_Read, 0, static_cast<size_t>(total), cb);
    if (while_waiting) while_waiting();
    wait(mapped_future, "a buffer readback");
  } catch (...) {
    staging_ = Buffer{};  // its map may still be pending: never reuse it
    throw;
  }
  if (state->status != WGPUMapAsyncStatus_Success) {
    check();
    throw GpuError("WebGPU: mapping the readback buffer failed: " + state->message);
  }
  const auto* mapped = static_cast<const uint8_t*>(d.BufferGetConstMappedRange(stage, 0, static_cast<size_t>(total)));
  if (!mapped) {
    d.BufferUnmap(stage);
    throw GpuError("WebGPU: the mapped readback buffer has no data");
  }
  for (size_t i = 0; i < reads.size(); ++i) {
    const ReadRequest& r = reads[i];
    if (r.size > 0) copy_out(r.dst, mapped + where[i] + (r.offset - begin[i]), r.size);
  }
  d.BufferUnmap(stage);
  check();
}

void Device::wait_idle() {
  check();
  auto state = std::make_shared<WGPUQueueWorkDoneStatus>(WGPUQueueWorkDoneStatus_Error);
  WGPUQueueWorkDoneCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUQueueWorkDoneStatus status, WGPUStringView, void* u1, void*) {
    *take<WGPUQueueWorkDoneStatus>(u1) = status;
  };
  cb.userdata1 = hold(state);
  wait(dawn().QueueOnSubmittedWorkDone(queue_.get(), cb), "the queue to finish");
  check();
  if (*state != WGPUQueueWorkDoneStatus_Success) throw GpuError("WebGPU: waiting for the queue failed");
}

// ---- Buffer pool -------------------------------------------------------------------------------

uint64_t BufferPool::bucket(uint64_t bytes) {
  if (bytes <= 256) return 256;
  uint64_t step = std::max<uint64_t>(256, std::bit_ceil(bytes) / 8);
  return (bytes + step - 1) / step * step;
}

static uint64_t pool_key(uint64_t capacity, WGPUBufferUsage usage) { return capacity ^ (usage << 52) ^ (usage >> 12); }

bool BufferPool::take(uint64_t capacity, WGPUBufferUsage usage, Buffer& out) {
  auto it = free_.find(pool_key(capacity, usage));
  if (it == free_.end()) return false;
  for (size_t i = it->second.size(); i-- > 0;) {
    if (it->second[i].capacity != capacity || it->second[i].usage != usage) continue;
    out = std::move(it->second[i]);
    it->second.erase(it->second.begin() + static_cast<std::ptrdiff_t>(i));
    pooled_bytes_ -= capacity;
    return true;
  }
  return false;
}

void BufferPool::put(Buffer buffer) {
  if (!buffer.handle) return;
  pooled_bytes_ += buffer.capacity;
  free_[pool_key(buffer.capacity, buffer.usage)].push_back(std::move(buffer));
}

void BufferPool::clear() {
  free_.clear();
  pooled_bytes_ = 0;
}

size_t BufferPool::pooled_count() const {
  size_t n = 0;
  for (const auto& [key, list] : free_) n += list.size();
  return n;
}

// ---- Pipelines and bind groups -----------------------------------------------------------------

namespace {

// "line 3:7: error: ...\n    <the source line>\n    ^" for each message of Dawn's compilation info.
std::string compilation_messages(WGPUShaderModule module, const std::string& wgsl, WGPUInstance instance,
                                 std::chrono::milliseconds timeout) {
  auto state = std::make_shared<std::string>();
  auto source = std::make_shared<std::string>(wgsl);
  WGPUCompilationInfoCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUCompilationInfoRequestStatus status, const WGPUCompilationInfo* info, void* u1, void* u2) {
    auto out = take<std::string>(u1);
    auto src = take<std::string>(u2);
    if (status != WGPUCompilationInfoRequestStatus_Success || !info) return;
    std::vector<std::string> lines;
    std::istringstream in(*src);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    for (size_t i = 0; i < info->messageCount; ++i) {
      const WGPUCompilationMessage& m = info->messages[i];
      const char* kind = m.type == WGPUCompilationMessageType_Error     ? "error"
                         : m.type == WGPUCompilationMessageType_Warning ? "warning"
                                                                        : "note";
      *out += "\n  line " + std::to_string(m.lineNum) + ":" + std::to_string(m.linePos) + ": " + kind + ": " +
              trimmed(m.message);
      if (m.lineNum >= 1 && m.lineNum <= lines.size()) {
        *out += "\n    " + lines[m.lineNum - 1];
        if (m.linePos >= 1) *out += "\n    " + std::string(m.linePos - 1, ' ') + "^";
      }
    }
  };
  cb.userdata1 = hold(state);
  cb.userdata2 = hold(source);
  wait_future(instance, dawn().ShaderModuleGetCompilationInfo(module, cb), timeout, "shader compilation messages");
  return *state;
}

}  // namespace

namespace {

// A shader module of `wgsl`; a WGSL error is a GpuError with the compilation messages.
ShaderModuleHandle shader_module(WGPUDevice device, WGPUInstance instance, const std::string& wgsl,
                                 std::chrono::milliseconds timeout) {
  WGPUShaderSourceWGSL source{};
  source.chain.sType = WGPUSType_ShaderSourceWGSL;
  source.code = to_view(wgsl);
  WGPUShaderModuleDescriptor module_desc{};
  module_desc.nextInChain = &source.chain;
  ErrorScope module_scope(device, instance, timeout);
  ShaderModuleHandle module(dawn().DeviceCreateShaderModule(device, &module_desc));
  if (std::string errors = module_scope.pop(); !errors.empty()) {
    // Prefer the compilation messages (line:column, the source line, a caret); Dawn's own error
    // text is the fallback when there are none.
    std::string where = module ? compilation_messages(module.get(), wgsl, instance, timeout) : std::string{};
    throw GpuError("WebGPU: WGSL shader failed to compile:" + (where.empty() ? " " + errors : where));
  }
  return module;
}

}  // namespace

Pipeline Device::finish_pipeline(WGPUComputePipeline handle, const std::string& entry_point) {
  Pipeline p;
  p.handle = ComputePipelineHandle(handle);
  p.layout0 = BindGroupLayoutHandle(dawn().ComputePipelineGetBindGroupLayout(p.get(), 0));
  p.entry_point = entry_point;
  return p;
}

const Pipeline& Device::pipeline(const std::string& wgsl, const std::string& entry_point) {
  std::string key = entry_point + '\n' + wgsl;
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  check();
  ShaderModuleHandle module = shader_module(device_.get(), instance_.get(), wgsl, timeout_);
  WGPUComputePipelineDescriptor desc{};
  desc.compute.module = module.get();
  desc.compute.entryPoint = to_view(entry_point);
  ErrorScope pipeline_scope(device_.get(), instance_.get(), timeout_);
  WGPUComputePipeline handle = dawn().DeviceCreateComputePipeline(device_.get(), &desc);
  if (std::string errors = pipeline_scope.pop(); !errors.empty()) {
    if (handle) dawn().ComputePipelineRelease(handle);
    std::string where = compilation_messages(module.get(), wgsl, instance_.get(), timeout_);
    throw GpuError("WebGPU: creating the compute pipeline (entry point '" + entry_point + "') failed: " + errors + where);
  }
  Pipeline p = finish_pipeline(handle, entry_point);
  check();
  return pipelines_.emplace(std::move(key), std::move(p)).first->second;
}

void Device::make_pipelines(std::span<const std::string> wgsl) {
  const std::string entry_point = "main";
  struct Pending {
    std::string key;
    const std::string* wgsl;
    ShaderModuleHandle module;
    WGPUFuture future{};
    WGPUCreatePipelineAsyncStatus status = WGPUCreatePipelineAsyncStatus_InternalError;
    WGPUComputePipeline handle = nullptr;
    std::string message;
  };
  std::vector<std::unique_ptr<Pending>> pending;
  std::unordered_map<std::string, bool> asked;
  for (const std::string& w : wgsl) {
    std::string key = entry_point + '\n' + w;
    if (pipelines_.count(key) || asked.count(key)) continue;
    asked[key] = true;
    auto p = std::make_unique<Pending>();
    p->key = std::move(key);
    p->wgsl = &w;
    pending.push_back(std::move(p));
  }
  if (pending.empty()) return;
  check();
  // Shader modules are made here (Dawn parses WGSL on the calling thread); pipelines on its workers.
  // Every started creation is waited for, also when one fails, so no callback outlives its Pending.
  std::exception_ptr failure;
  size_t started = 0;
  try {
    for (auto& p : pending) {
      p->module = shader_module(device_.get(), instance_.get(), *p->wgsl, timeout_);
      WGPUComputePipelineDescriptor desc{};
      desc.compute.module = p->module.get();
      desc.compute.entryPoint = to_view(entry_point);
      WGPUCreateComputePipelineAsyncCallbackInfo cb{};
      cb.mode = WGPUCallbackMode_WaitAnyOnly;
      cb.callback = [](WGPUCreatePipelineAsyncStatus status, WGPUComputePipeline pipeline, WGPUStringView message,
                       void* u1, void*) {
        auto* q = static_cast<Pending*>(u1);
        q->status = status;
        q->handle = pipeline;
        q->message = to_string(message);
      };
      cb.userdata1 = p.get();
      p->future = dawn().DeviceCreateComputePipelineAsync(device_.get(), &desc, cb);
      ++started;
    }
  } catch (...) {
    failure = std::current_exception();
  }
  for (size_t i = 0; i < started; ++i) {
    try {
      wait(pending[i]->future, "a compute pipeline");
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  for (size_t i = 0; i < started; ++i) {
    Pending& p = *pending[i];
    if (p.status == WGPUCreatePipelineAsyncStatus_Success && p.handle) {
      pipelines_.emplace(std::move(p.key), finish_pipeline(p.handle, entry_point));
      continue;
    }
    if (p.handle) dawn().ComputePipelineRelease(p.handle);
    if (!failure) {
      std::string where = compilation_messages(p.module.get(), *p.wgsl, instance_.get(), timeout_);
      failure = std::make_exception_ptr(GpuError("WebGPU: creating the compute pipeline (entry point '" +
                                                 entry_point + "') failed: " + p.message + where));
    }
  }
  if (failure) std::rethrow_exception(failure);
  check();
}

BindGroupHandle Device::bind_group(const Pipeline& pipeline, std::initializer_list<BufferBinding> entries, uint32_t group) {
  return bind_group(pipeline, std::span<const BufferBinding>(entries.begin(), entries.size()), group);
}

BindGroupHandle Device::bind_group(const Pipeline& pipeline, std::span<const BufferBinding> entries, uint32_t group) {
  check();
  const Dawn& d = dawn();
  BindGroupLayoutHandle layout =
      group == 0 ? pipeline.layout0 : BindGroupLayoutHandle(d.ComputePipelineGetBindGroupLayout(pipeline.get(), group));
  std::vector<WGPUBindGroupEntry> raw(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    raw[i] = WGPUBindGroupEntry{};
    raw[i].binding = static_cast<uint32_t>(i);
    raw[i].buffer = entries[i].buffer;
    raw[i].offset = entries[i].offset;
    raw[i].size = entries[i].size;
  }
  WGPUBindGroupDescriptor desc{};
  desc.layout = layout.get();
  desc.entryCount = raw.size();
  desc.entries = raw.data();
  ErrorScope scope(device_.get(), instance_.get(), timeout_);
  BindGroupHandle bg(d.DeviceCreateBindGroup(device_.get(), &desc));
  if (std::string errors = scope.pop(); !errors.empty())
    throw GpuError("WebGPU: creating a bind group (group " + std::to_string(group) + ", " +
                   std::to_string(entries.size()) + " bindings, entry point '" + pipeline.entry_point + "') failed: " + errors);
  return bg;
}

// ---- Command batches ---------------------------------------------------------------------------

WGPUCommandEncoder CommandBatch::encoder() {
  if (!encoder_) {
    WGPUCommandEncoderDescriptor desc{};
    encoder_ = CommandEncoderHandle(dawn().DeviceCreateCommandEncoder(device_, &desc));
  }
  return encoder_.get();
}

void CommandBatch::end_pass() {
  if (!pass_) return;
  dawn().ComputePassEncoderEnd(pass_.get());
  pass_ = ComputePassHandle();
  current_pipeline_ = nullptr;
}

void CommandBatch::dispatch(const Pipeline& pipeline, WGPUBindGroup group0, uint32_t x, uint32_t y, uint32_t z) {
  dispatch(pipeline, std::span<const WGPUBindGroup>(&group0, 1), x, y, z);
}

void CommandBatch::dispatch(const Pipeline& pipeline, std::span<const WGPUBindGroup> groups, uint32_t x, uint32_t y,
                            uint32_t z) {
  const Dawn& d = dawn();
  if (!pass_) {
    WGPUComputePassDescriptor desc{};
    pass_ = ComputePassHandle(d.CommandEncoderBeginComputePass(encoder(), &desc));
  }
  if (current_pipeline_ != pipeline.get()) {
    d.ComputePassEncoderSetPipeline(pass_.get(), pipeline.get());
    current_pipeline_ = pipeline.get();
  }
  for (size_t i = 0; i < groups.size(); ++i)
    d.ComputePassEncoderSetBindGroup(pass_.get(), static_cast<uint32_t>(i), groups[i], 0, nullptr);
  d.ComputePassEncoderDispatchWorkgroups(pass_.get(), x, y, z);
  ++dispatches_;
}

void CommandBatch::copy(WGPUBuffer src, uint64_t src_offset, WGPUBuffer dst, uint64_t dst_offset, uint64_t bytes) {
  end_pass();
  dawn().CommandEncoderCopyBufferToBuffer(encoder(), src, src_offset, dst, dst_offset, bytes);
}

void CommandBatch::clear(WGPUBuffer buffer, uint64_t offset, uint64_t bytes) {
  end_pass();
  dawn().CommandEncoderClearBuffer(encoder(), buffer, offset, bytes);
}

void CommandBatch::timed_dispatch(const Pipeline& pipeline, WGPUBindGroup group0, uint32_t x, uint32_t y, uint32_t z,
                                  WGPUQuerySet queries, uint32_t pair) {
  const Dawn& d = dawn();
  end_pass();
  WGPUPassTimestampWrites writes{};
  writes.querySet = queries;
  writes.beginningOfPassWriteIndex = 2 * pair;
  writes.endOfPassWriteIndex = 2 * pair + 1;
  WGPUComputePassDescriptor desc{};
  desc.timestampWrites = &writes;
  pass_ = ComputePassHandle(d.CommandEncoderBeginComputePass(encoder(), &desc));
  dispatch(pipeline, group0, x, y, z);
  end_pass();
}

void CommandBatch::resolve(WGPUQuerySet queries, uint32_t first, uint32_t count, WGPUBuffer dst, uint64_t dst_offset) {
  end_pass();
  dawn().CommandEncoderResolveQuerySet(encoder(), queries, first, count, dst, dst_offset);
}

CommandBufferHandle CommandBatch::finish() {
  end_pass();
  WGPUCommandBufferDescriptor desc{};
  CommandBufferHandle commands(dawn().CommandEncoderFinish(encoder(), &desc));
  encoder_ = CommandEncoderHandle();
  dispatches_ = 0;
  return commands;
}

}  // namespace onnxgpu::webgpu
