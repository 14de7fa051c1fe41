// The WebGPU device layer: one Dawn instance, the chosen adapter, its device and queue, and the few
// things the engine does with them (storage buffers, WGSL compute pipelines, bind groups, batches of
// dispatches, readback). Every Dawn handle is held by a Handle<T> (released on destruction); every
// Dawn error becomes an onnxgpu::GpuError; every wait has a timeout.
//
// Made for record-once/replay-many: create a pipeline once (cached by WGSL + entry point), create a
// bind group once from (buffer, offset, size) ranges, then per run: write() the inputs, encode all
// dispatches into one CommandBatch (one compute pass), and submit_and_read() it: one submit, one wait
// for every buffer read back.
#pragma once
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onnxgpu/error.h"
#include "webgpu/abi.h"
#include "webgpu/blob_cache.h"

namespace onnxgpu::webgpu {

// ---- Handles ---------------------------------------------------------------------------------

template <class T>
struct HandleOps;  // add_ref / release for each handle type (defined in device.cpp)
#define ONNXGPU_WEBGPU_HANDLE_OPS(T)   \
  template <>                          \
  struct HandleOps<T> {                \
    static void add_ref(T h);          \
    static void release(T h);          \
  };
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUInstance)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUAdapter)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUDevice)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUQueue)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUBuffer)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUShaderModule)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUComputePipeline)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUBindGroupLayout)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUBindGroup)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUCommandEncoder)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUComputePassEncoder)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUCommandBuffer)
ONNXGPU_WEBGPU_HANDLE_OPS(WGPUQuerySet)
#undef ONNXGPU_WEBGPU_HANDLE_OPS

// Owns one reference to a Dawn object. Copying adds a reference, destruction releases one.
template <class T>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T adopted) : h_(adopted) {}  // takes over a reference the caller owned
  Handle(const Handle& o) : h_(o.h_) {
    if (h_) HandleOps<T>::add_ref(h_);
  }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~Handle() {
    if (h_) HandleOps<T>::release(h_);
  }
  T get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  T h_ = nullptr;
};

using InstanceHandle = Handle<WGPUInstance>;
using AdapterHandle = Handle<WGPUAdapter>;
using DeviceHandle = Handle<WGPUDevice>;
using QueueHandle = Handle<WGPUQueue>;
using BufferHandle = Handle<WGPUBuffer>;
using ShaderModuleHandle = Handle<WGPUShaderModule>;
using ComputePipelineHandle = Handle<WGPUComputePipeline>;
using BindGroupLayoutHandle = Handle<WGPUBindGroupLayout>;
using BindGroupHandle = Handle<WGPUBindGroup>;
using CommandEncoderHandle = Handle<WGPUCommandEncoder>;
using ComputePassHandle = Handle<WGPUComputePassEncoder>;
using CommandBufferHandle = Handle<WGPUCommandBuffer>;
using QuerySetHandle = Handle<WGPUQuerySet>;

// ---- Adapters --------------------------------------------------------------------------------

// The limits that matter for compute; a device gets its adapter's own values (never assumed ones).
struct Limits {
  uint64_t max_buffer_size = 0;
  uint64_t max_storage_buffer_binding_size = 0;
  uint64_t max_uniform_buffer_binding_size = 0;
  uint32_t max_storage_buffers_per_shader_stage = 0;
  uint32_t max_uniform_buffers_per_shader_stage = 0;
  uint32_t max_bind_groups = 0;
  uint32_t max_bindings_per_bind_group = 0;
  uint32_t min_storage_buffer_offset_alignment = 0;
  uint32_t min_uniform_buffer_offset_alignment = 0;
  uint32_t max_compute_workgroup_storage_size = 0;
  uint32_t max_compute_invocations_per_workgroup = 0;
  uint32_t max_compute_workgroup_size_x = 0;
  uint32_t max_compute_workgroup_size_y = 0;
  uint32_t max_compute_workgroup_size_z = 0;
  uint32_t max_compute_workgroups_per_dimension = 0;
};

// The optional features the engine can use (requested on the device when the adapter has them).
struct Features {
  bool shader_f16 = false;
  bool subgroups = false;
  bool timestamp_query = false;
};

struct AdapterInfo {
  WGPUBackendType backend = WGPUBackendType_Undefined;
  WGPUAdapterType type = WGPUAdapterType_Unknown;
  WGPUFeatureLevel feature_level = WGPUFeatureLevel_Core;
  std::string vendor, architecture, device, description;
  uint32_t vendor_id = 0, device_id = 0;
  uint32_t subgroup_min_size = 0, subgroup_max_size = 0;
  Limits limits;
  Features features;
  std::vector<std::string> feature_names;  // every feature the adapter reports

  // The Vulkan driver (ICD file) onnxgpu chose itself because the Vulkan loader found no adapter
  // (see cpu_vulkan_driver()); "" when the adapter came from the machine's own drivers.
  std::string found_driver;

  bool is_hardware() const { return type == WGPUAdapterType_DiscreteGPU || type == WGPUAdapterType_IntegratedGPU; }
  std::string summary() const;  // "SwiftShader Device (Subzero) [vulkan, CPU]" (+ the driver onnxgpu found)
};

std::string backend_name(WGPUBackendType b);      // "vulkan", "opengles", "null", ...
std::string adapter_type_name(WGPUAdapterType t);  // "discrete", "integrated", "cpu", "unknown"
std::string feature_name(WGPUFeatureName f);       // "ShaderF16", ... (hex for unknown values)

struct DeviceOptions {
  // Backend to use: "" = any (unless $ONNXGPU_BACKEND is set); else vulkan, opengles, opengl, d3d12,
  // d3d11, metal, webgpu. "null" is accepted as a name but always refused (Dawn's Null backend
  // computes nothing).
  std::string backend;
  // Case-insensitive substring of the adapter's device name, description, vendor or architecture:
  // "" = the best adapter (unless $ONNXGPU_ADAPTER is set).
  std::string adapter;
  // Longest wait for any GPU operation (adapter/device requests, map, work done); 0 = $ONNXGPU_GPU_TIMEOUT_MS
  // or 60 s.
  std::chrono::milliseconds timeout{0};
  // Folder of the persistent shader and pipeline cache (blob_cache.h); empty = BlobCache::default_folder(),
  // "off" = none.
  std::string pipeline_cache;
};

// Every adapter found for the options' backend(s) and the one a Device would choose.
struct AdapterList {
  std::vector<AdapterInfo> adapters;
  int chosen = -1;           // index into adapters, -1 when none is acceptable
  std::string why_none;      // when chosen == -1: what was tried and how to get an adapter
};
AdapterList list_adapters(const DeviceOptions& options = {});

// ---- Buffers, pipelines, bindings ------------------------------------------------------------

inline constexpr WGPUBufferUsage kStorageUsage =
    WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
inline constexpr WGPUBufferUsage kUniformUsage = WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst;
// Dawn's upload ring (DynamicUploader::kRingBufferSize): a queue write up to this size is staged in
// memory Dawn keeps; a larger one in a buffer Dawn allocates for that write alone.
inline constexpr uint64_t kUploadRingBytes = uint64_t(4) << 20;

// A GPU buffer. `size` is what was asked for (may be 0 or odd); `capacity` is what exists on the
// GPU (a multiple of 4, at least 4: WebGPU cannot bind an empty buffer or copy partial words).
struct Buffer {
  BufferHandle handle;
  uint64_t size = 0;
  uint64_t capacity = 0;
  WGPUBufferUsage usage = 0;
  WGPUBuffer get() const { return handle.get(); }
};

// A range of a buffer bound to @binding(index of the entry) of a bind group.
struct BufferBinding {
  WGPUBuffer buffer = nullptr;
  uint64_t offset = 0;
  uint64_t size = WGPU_WHOLE_SIZE;
  BufferBinding(WGPUBuffer b, uint64_t off, uint64_t sz) : buffer(b), offset(off), size(sz) {}
  // The buffer's requested size rounded up to 4 bytes (not its whole capacity).
  BufferBinding(const Buffer& b) : buffer(b.get()), size(b.size == 0 ? 4 : (b.size + 3) / 4 * 4) {}
};

// A range to read back into host memory.
struct ReadRequest {
  WGPUBuffer buffer = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
  void* dst = nullptr;
};

// A compute pipeline and the bind group layout of its group 0 (layout "auto").
struct Pipeline {
  ComputePipelineHandle handle;
  BindGroupLayoutHandle layout0;
  std::string entry_point;
  WGPUComputePipeline get() const { return handle.get(); }
};

// Free buffers kept for reuse, by (capacity, usage). Sizes round up to buckets (at most 1/8 waste
// above 2 KiB) so that a recycled buffer serves the next request of the same bucket. Use it through
// Device::acquire / Device::recycle. Not thread-safe, like Device.
class BufferPool {
 public:
  static uint64_t bucket(uint64_t bytes);  // the capacity a request of `bytes` gets
  bool take(uint64_t capacity, WGPUBufferUsage usage, Buffer& out);  // false when none is free
  void put(Buffer buffer);
  void clear();  // release every pooled buffer
  uint64_t pooled_bytes() const { return pooled_bytes_; }
  size_t pooled_count() const;

 private:
  std::unordered_map<uint64_t, std::vector<Buffer>> free_;  // key: capacity, usage mixed in
  uint64_t pooled_bytes_ = 0;
};

// One command encoder with (at most) one open compute pass: dispatches go into the pass, a copy or
// clear ends it (the next dispatch opens a new one). Hand it to Device::submit / submit_and_read.
class CommandBatch {
 public:
  CommandBatch(CommandBatch&&) = default;
  CommandBatch& operator=(CommandBatch&&) = default;
  CommandBatch(const CommandBatch&) = delete;
  CommandBatch& operator=(const CommandBatch&) = delete;
  void dispatch(const Pipeline& pipeline, WGPUBindGroup group0, uint32_t x, uint32_t y = 1, uint32_t z = 1);
  void dispatch(const Pipeline& pipeline, std::span<const WGPUBindGroup> groups, uint32_t x, uint32_t y = 1,
                uint32_t z = 1);
  void copy(WGPUBuffer src, uint64_t src_offset, WGPUBuffer dst, uint64_t dst_offset, uint64_t bytes);
  void clear(WGPUBuffer buffer, uint64_t offset, uint64_t bytes);  // zero-fill; multiples of 4
  // Profiling (devices with TimestampQuery): the dispatch runs in a compute pass of its own whose
  // start and end times go to timestamps 2*pair and 2*pair+1 of `queries`; resolve() copies
  // timestamps [first, first+count) into `dst` (a QueryResolve buffer) as u64 nanoseconds.
  void timed_dispatch(const Pipeline& pipeline, WGPUBindGroup group0, uint32_t x, uint32_t y, uint32_t z,
                      WGPUQuerySet queries, uint32_t pair);
  void resolve(WGPUQuerySet queries, uint32_t first, uint32_t count, WGPUBuffer dst, uint64_t dst_offset);
  size_t dispatch_count() const { return dispatches_; }
  bool empty() const { return !encoder_; }

 private:
  friend class Device;
  explicit CommandBatch(WGPUDevice device) : device_(device) {}
  WGPUCommandEncoder encoder();
  void end_pass();
  CommandBufferHandle finish();

  WGPUDevice device_;
  CommandEncoderHandle encoder_;
  ComputePassHandle pass_;
  WGPUComputePipeline current_pipeline_ = nullptr;
  size_t dispatches_ = 0;
};

// ---- The device ------------------------------------------------------------------------------

// Destroy every Device before the process exits (not from a static destructor): some drivers,
// SwiftShader among them, crash when a device outlives their own teardown.
class Device {
 public:
  // Chooses an adapter (see list_adapters) and creates the device; throws onnxgpu::Error when no
  // acceptable adapter exists and GpuError when Dawn fails.
  explicit Device(const DeviceOptions& options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const AdapterInfo& adapter() const { return adapter_info_; }
  const Limits& limits() const { return limits_; }      // the device's (= the adapter's) limits
  const Features& features() const { return features_; }  // the features enabled on the device

  // Buffers. create_buffer rounds up to 4 bytes (min 4); a size over maxBufferSize or an
  // allocation failure is a GpuError. write() uses a queue write (offset a multiple of 4; an odd
  // tail is padded with zeros up to the next 4 bytes); a write larger than Dawn's upload ring
  // (kUploadRingBytes) goes through the device's own upload buffer instead (write_staged).
  // read() waits for everything submitted.
  Buffer create_buffer(uint64_t bytes, WGPUBufferUsage usage = kStorageUsage, const std::string& label = {},
                       bool fake_oom_for_testing = false);
  void write(WGPUBuffer dst, const void* data, uint64_t bytes, uint64_t offset = 0);
  void write(const Buffer& dst, const void* data, uint64_t bytes, uint64_t offset = 0) {
    write(dst.get(), data, bytes, offset);
  }
  void read(WGPUBuffer src, void* dst, uint64_t bytes, uint64_t offset = 0);
  void read(const Buffer& src, void* dst, uint64_t bytes, uint64_t offset = 0) { read(src.get(), dst, bytes, offset); }
  void read(std::span<const ReadRequest> requests);  // one submit, one wait

  // Pooled buffers: acquire() reuses a recycled buffer of the same bucket and usage or creates one;
  // recycle() gives it back (contents kept, not cleared). upload() = acquire + write.
  Buffer acquire(uint64_t bytes, WGPUBufferUsage usage = kStorageUsage);
  void recycle(Buffer buffer) { pool_.put(std::move(buffer)); }
  Buffer upload(const void* data, uint64_t bytes);
  BufferPool& pool() { return pool_; }

  // Pipelines, cached by (WGSL source, entry point): the second call with the same text is a lookup.
  // A WGSL or pipeline error is a GpuError carrying Dawn's messages and the offending source lines.
  const Pipeline& pipeline(const std::string& wgsl, const std::string& entry_point = "main");
  size_t pipeline_cache_size() const { return pipelines_.size(); }
  // Makes the pipelines of these sources (entry point "main") that are not made yet, all at once: Dawn
  // compiles them on its worker threads, so a plan's first run waits for the slowest, not the sum.
  void make_pipelines(std::span<const std::string> wgsl);
  // The persistent cache of compiled shaders and pipelines, or null when there is none.
  const BlobCache* blob_cache() const { return blob_cache_.get(); }

  // A bind group for group `group` of the pipeline; entry i is @binding(i).
  BindGroupHandle bind_group(const Pipeline& pipeline, std::initializer_list<BufferBinding> entries,
                             uint32_t group = 0);
  BindGroupHandle bind_group(const Pipeline& pipeline, std::span<const BufferBinding> entries, uint32_t group = 0);

  // Timestamp queries for profiling (requires features().timestamp_query).
  QuerySetHandle timestamp_queries(uint32_t count);

  // Recording and submitting.
  CommandBatch batch() { return CommandBatch(device_.get()); }
  void submit(CommandBatch& batch);                                             // no wait
  // One submit, one wait; `while_waiting` runs after the submit, before the wait (host work that
  // overlaps the GPU's).
  void submit_and_read(CommandBatch& batch, std::span<const ReadRequest> reads,
                       const std::function<void()>& while_waiting = {});
  // A command buffer finished ahead (finish()), submitted later.
  CommandBufferHandle finish(CommandBatch& batch);
  void submit(CommandBufferHandle commands);
  void wait_idle();  // waits until the queue has finished everything submitted

  // Throws GpuError for an error Dawn reported since the last check (uncaptured validation / OOM
  // errors, device loss). Every method above calls it; call it yourself after raw Dawn calls.
  void check();
  // Whether Dawn reported the device lost (it is of no further use).
  bool lost() const;

  WGPUInstance raw_instance() const { return instance_.get(); }
  WGPUDevice raw_device() const { return device_.get(); }
  WGPUQueue raw_queue() const { return queue_.get(); }
  std::chrono::milliseconds timeout() const { return timeout_; }

  struct ErrorState;  // shared with Dawn's callbacks (device.cpp)

 private:
  void wait(WGPUFuture future, const char* what);
  Buffer& staging(uint64_t bytes);
  void write_staged(WGPUBuffer dst, const void* data, uint64_t bytes, uint64_t offset);
  void start_upload_map();
  void map_upload();  // waits until upload_ is mapped (starting the map if none is pending)

  Pipeline finish_pipeline(WGPUComputePipeline handle, const std::string& entry_point);

  std::chrono::milliseconds timeout_;
  std::unique_ptr<BlobCache> blob_cache_;  // outlives the device: Dawn's worker threads call into it
  InstanceHandle instance_;
  AdapterHandle adapter_;
  DeviceHandle device_;
  QueueHandle queue_;
  AdapterInfo adapter_info_;
  Limits limits_;
  Features features_;
  std::shared_ptr<ErrorState> errors_;
  BufferPool pool_;
  Buffer staging_;  // MapRead|CopyDst, reused by reads
  // Large writes: Dawn stages a queue write larger than its 4 MiB upload ring in a host-visible
  // buffer it allocates (and faults in) every time, which costs more than the copy itself (an
  // image batch fed every run). upload_ is a MapWrite|CopySrc buffer kept across writes: filled
  // while mapped, copied on the GPU, then mapped again at once, so the next write finds it ready.
  struct Upload {
    Buffer buffer;
    bool mapped = false;   // mapped for writing now
    bool pending = false;  // a map was asked for and not yet waited for
    WGPUFuture future{};
    std::shared_ptr<int> status;  // WGPUMapAsyncStatus of the pending map
  } upload_;
  std::unordered_map<std::string, Pipeline> pipelines_;
};

}  // namespace onnxgpu::webgpu
