// A cache of Dawn's compiled shaders and pipelines that outlives the process, so that a second process
// running the same model starts faster. Dawn hands the device a key and a blob through its blob-cache
// callbacks (WGPUDawnCacheDeviceDescriptor): the translated SPIR-V of each shader and the driver's
// VkPipelineCache data of each pipeline. Its keys already hold Dawn's version, the adapter, the
// device's features and toggles, so one folder serves every adapter and Dawn build.
//
// One file per key in a folder: a header, the key (compared on load: a hash collision is a miss) and
// the value with its checksum (a damaged file is a miss). Files are written to a temporary name and
// renamed, so a reader never sees half a file, also with several processes at once. The cache is an
// optimisation: every failure to read or write it is a miss, never an error.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace onnxgpu::webgpu {

class BlobCache {
 public:
  // The folder the engine uses: $ONNXGPU_PIPELINE_CACHE; else $XDG_CACHE_HOME/onnxgpu/pipelines; else
  // $HOME/.cache/onnxgpu/pipelines. Empty (no cache) when the variable is "off" or "0", or no folder
  // can be named.
  static std::filesystem::path default_folder();

  // A cache in `folder` (created when missing) holding at most `max_bytes`: stores that would pass it
  // are dropped (what is there stays useful; a user clears the folder to start afresh).
  explicit BlobCache(std::filesystem::path folder, uint64_t max_bytes = uint64_t(1) << 30);

  // Dawn's load: the size of the value stored for the key (0 when none); with a buffer of that size,
  // the value is copied into it too.
  size_t load(const void* key, size_t key_size, void* value, size_t value_size);
  // Dawn's store: keeps the value for the key, replacing what was kept (Dawn stores a pipeline's
  // driver cache again when it has grown).
  void store(const void* key, size_t key_size, const void* value, size_t value_size);

  const std::filesystem::path& folder() const { return folder_; }
  bool usable() const { return usable_; }
  // Counts since this cache was made: loads that found a value, stores written.
  uint64_t hits() const { return hits_; }
  uint64_t stores() const { return stores_; }

 private:
  std::filesystem::path file_of(const void* key, size_t key_size) const;

  std::filesystem::path folder_;
  uint64_t max_bytes_;
  bool usable_ = false;
  std::atomic<uint64_t> bytes_{0};  // in the folder, as counted when made plus what this process stored
  std::atomic<uint64_t> hits_{0}, stores_{0};
};

}  // namespace onnxgpu::webgpu
