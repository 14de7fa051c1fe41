#include "loader/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxgpu/error.h"

namespace onnxgpu::loader {

MappedFile::MappedFile(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw InvalidArgument("cannot open '" + path + "'");
  struct stat st{};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw InvalidArgument("'" + path + "' is not a regular file");
  }
  size_ = size_t(st.st_size);
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd_, 0);
  if (p == MAP_FAILED) {
    ::close(fd_);
    throw InvalidArgument("cannot map '" + path + "' into memory");
  }
  data_ = p;
  ::madvise(data_, size_, MADV_SEQUENTIAL | MADV_WILLNEED);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
}

std::shared_ptr<MappedFile> MappedFiles::get(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<MappedFile>& f = files_[path];
  if (!f) f = std::make_shared<MappedFile>(path);
  return f;
}

}  // namespace onnxgpu::loader
