#include "webgpu/blob_cache.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <system_error>
#include <vector>

namespace onnxgpu::webgpu {

namespace {

constexpr char kMagic[8] = {'o', 'n', 'x', 'g', 'p', 'u', 'B', '1'};

// File layout: magic, key size, value size, FNV-1a of the value (all u64 little-endian as the host
// writes them: a cache folder is not moved between machines), the key, the value.
struct Header {
  char magic[8];
  uint64_t key_size;
  uint64_t value_size;
  uint64_t value_hash;
};

uint64_t fnv1a(const void* data, size_t size, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// The whole file when it is a well-formed entry for this key; empty otherwise.
std::vector<char> read_entry(const std::filesystem::path& file, const void* key, size_t key_size, Header& h) {
  std::ifstream in(file, std::ios::binary);
  if (!in || !in.read(reinterpret_cast<char*>(&h), sizeof h)) return {};
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.key_size != key_size || h.value_size > (uint64_t(1) << 31))
    return {};
  std::vector<char> body(key_size + h.value_size);
  if (!in.read(body.data(), std::streamsize(body.size()))) return {};
  if (std::memcmp(body.data(), key, key_size) != 0) return {};
  if (fnv1a(body.data() + key_size, h.value_size) != h.value_hash) return {};
  return body;
}

}  // namespace

std::filesystem::path BlobCache::default_folder() {
  if (const char* v = std::getenv("ONNXGPU_PIPELINE_CACHE"); v && *v) {
    std::string s(v);
    if (s == "off" || s == "0") return {};
    return s;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "onnxgpu" / "pipelines";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "onnxgpu" / "pipelines";
  return {};
}

BlobCache::BlobCache(std::filesystem::path folder, uint64_t max_bytes) : folder_(std::move(folder)), max_bytes_(max_bytes) {
  if (folder_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec || !std::filesystem::is_directory(folder_, ec)) return;
  uint64_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(folder_, ec))
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  bytes_ = total;
  usable_ = true;
}

std::filesystem::path BlobCache::file_of(const void* key, size_t key_size) const {
  char name[40];
  std::snprintf(name, sizeof name, "%016llx%016llx.blob", static_cast<unsigned long long>(fnv1a(key, key_size)),
                static_cast<unsigned long long>(fnv1a(key, key_size, 0x84222325cbf29ce4ull)));
  return folder_ / name;
}

size_t BlobCache::load(const void* key, size_t key_size, void* value, size_t value_size) {
  if (!usable_ || !key) return 0;
  Header h{};
  std::vector<char> body = read_entry(file_of(key, key_size), key, key_size, h);
  if (body.empty()) return 0;
  if (value && value_size >= h.value_size) {
    std::memcpy(value, body.data() + key_size, h.value_size);
    ++hits_;
  }
  return size_t(h.value_size);
}

void BlobCache::store(const void* key, size_t key_size, const void* value, size_t value_size) {
  if (!usable_ || !key || !value || value_size == 0) return;
  const uint64_t size = sizeof(Header) + key_size + value_size;
  if (bytes_ + size > max_bytes_) return;
  const std::filesystem::path file = file_of(key, key_size);
  std::error_code ec;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::filesystem::path tmp = file;
  tmp += ".tmp" + std::to_string(rng());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.key_size = key_size;
    h.value_size = value_size;
    h.value_hash = fnv1a(value, value_size);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(static_cast<const char*>(key), std::streamsize(key_size));
    out.write(static_cast<const char*>(value), std::streamsize(value_size));
    if (!out.flush()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return;
  }
  bytes_ += size;
  ++stores_;
}

}  // namespace onnxgpu::webgpu
