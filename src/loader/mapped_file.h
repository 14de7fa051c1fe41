// Files mapped into memory, privately: a model's tensors use their pages as their storage (a tensor
// written in place gets a private copy of the page; the file never changes), so loading a model copies
// none of its weights.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace onnxgpu::loader {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // InvalidArgument naming the file when it cannot be mapped
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

// The external data files of one load, each mapped once (by its resolved path) and held for as long as
// a tensor uses its pages.
class MappedFiles {
 public:
  std::shared_ptr<MappedFile> get(const std::string& path);

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
};

}  // namespace onnxgpu::loader
