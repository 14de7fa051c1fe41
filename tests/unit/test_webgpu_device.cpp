// The WebGPU device layer on the real adapter (here: SwiftShader through Vulkan, which the engine finds
// by itself on a machine without a GPU; XDG_RUNTIME_DIR=/tmp silences a loader warning).
// Without an adapter these tests FAIL, naming why, unless ONNXGPU_SKIP_GPU_TESTS=1 (then they skip).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "onnxgpu/error.h"
#include "webgpu/blob_cache.h"
#include "webgpu/device.h"

#include <unistd.h>

namespace onnxgpu::webgpu {
namespace {

// One device for the whole suite (creating one costs ~1 ms on SwiftShader, ~130 ms on a real GPU).
// It is destroyed when the tests end, not at exit: SwiftShader's threads crash if a device is still
// alive while the process tears down its statics.
std::unique_ptr<Device> g_device;
std::string g_device_error;
bool g_device_tried = false;

class DeviceEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { g_device.reset(); }
};
[[maybe_unused]] ::testing::Environment* const g_env = ::testing::AddGlobalTestEnvironment(new DeviceEnvironment);

Device* shared_device(std::string& why) {
  if (!g_device_tried) {
    g_device_tried = true;
    try {
      g_device = std::make_unique<Device>();
    } catch (const std::exception& e) {
      g_device_error = e.what();
    }
  }
  why = g_device_error;
  return g_device.get();
}

bool skip_gpu_tests() {
  const char* s = std::getenv("ONNXGPU_SKIP_GPU_TESTS");
  return s && std::string(s) == "1";
}

// Gives the shared device, or fails (skips with ONNXGPU_SKIP_GPU_TESTS=1) with the reason.
#define GET_DEVICE(dev)                                                                         \
  std::string why_no_device_;                                                                   \
  Device* dev = shared_device(why_no_device_);                                                  \
  if (!dev) {                                                                                   \
    if (skip_gpu_tests()) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS=1 and no WebGPU device: " << why_no_device_; \
    FAIL() << "no WebGPU device (set ONNXGPU_SKIP_GPU_TESTS=1 to skip GPU tests): " << why_no_device_;      \
  }

// Sets an environment variable for the scope, restoring it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    had_ = std::getenv(name) != nullptr;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(WebGpuDevice, CreatesDeviceOnARealAdapter) {
  GET_DEVICE(dev);
  const AdapterInfo& a = dev->adapter();
  EXPECT_NE(a.backend, WGPUBackendType_Null);
  EXPECT_NE(a.backend, WGPUBackendType_Undefined);
  // The device has the adapter's own limits, not WebGPU's defaults.
  EXPECT_EQ(dev->limits().max_buffer_size, a.limits.max_buffer_size);
  EXPECT_EQ(dev->limits().max_storage_buffer_binding_size, a.limits.max_storage_buffer_binding_size);
  EXPECT_EQ(dev->limits().max_compute_invocations_per_workgroup, a.limits.max_compute_invocations_per_workgroup);
  EXPECT_EQ(dev->limits().max_storage_buffers_per_shader_stage, a.limits.max_storage_buffers_per_shader_stage);
  EXPECT_GE(dev->limits().max_compute_invocations_per_workgroup, 64u);
  EXPECT_GE(dev->limits().max_storage_buffers_per_shader_stage, 4u);
  EXPECT_EQ(dev->features().subgroups, a.features.subgroups);
  EXPECT_EQ(dev->features().timestamp_query, a.features.timestamp_query);
  EXPECT_EQ(dev->features().shader_f16, a.features.shader_f16);
  std::printf("[ adapter  ] %s, driver '%s'\n", a.summary().c_str(), a.description.c_str());
}

TEST(WebGpuDevice, ListsAdaptersAndMarksTheChosenOne) {
  GET_DEVICE(dev);
  AdapterList list = list_adapters();
  ASSERT_GE(list.chosen, 0) << list.why_none;
  ASSERT_LT(static_cast<size_t>(list.chosen), list.adapters.size());
  const AdapterInfo& chosen = list.adapters[static_cast<size_t>(list.chosen)];
  EXPECT_EQ(chosen.backend, dev->adapter().backend);
  EXPECT_EQ(chosen.device, dev->adapter().device);
  for (const AdapterInfo& a : list.adapters) EXPECT_NE(a.backend, WGPUBackendType_Null);
}

TEST(WebGpuDevice, RoundTripsBuffersOfEverySize) {
  GET_DEVICE(dev);
  std::mt19937 rng(7);
  for (uint64_t n : {0ull, 1ull, 2ull, 3ull, 4ull, 5ull, 7ull, 255ull, 256ull, 257ull, 1023ull, 4097ull, 65537ull,
                     (1ull << 20), (1ull << 20) + 3, (8ull << 20) + 1, (9ull << 20) + 5, (26ull << 20) + 3}) {  // large: copied by several threads
    std::vector<uint8_t> in(n), out(n + 8, 0xAB);
    for (auto& b : in) b = static_cast<uint8_t>(rng());
    Buffer buf = dev->create_buffer(n);
    EXPECT_EQ(buf.size, n);
    EXPECT_EQ(buf.capacity % 4, 0u);
    EXPECT_GE(buf.capacity, std::max<uint64_t>(n, 4));
    dev->write(buf, in.data(), n);
    dev->read(buf, out.data(), n);
    EXPECT_EQ(0, std::memcmp(in.data(), out.data(), n)) << "size " << n;
    for (size_t i = n; i < n + 8; ++i) ASSERT_EQ(out[i], 0xAB) << "read past the end, size " << n;
  }
}

// Writes over kUploadRingBytes go through the device's own upload buffer (a GPU copy submitted at
// the write), the others through Dawn's queue writes: both must land in the order they were made,
// each from the data given at the time, the upload buffer reused and grown between them.
TEST(WebGpuDevice, LargeWritesKeepTheirOrderWithQueueWrites) {
  GET_DEVICE(dev);
  const uint64_t big = kUploadRingBytes + 4096 + 3;  // odd: the tail is padded
  const uint64_t total = 3 * big + 64;
  Buffer dst = dev->create_buffer(total);
  std::vector<uint8_t> expect(total, 0), data(2 * big + 7);
  std::mt19937 rng(11);
  // Writes the first n bytes of fresh random data at offset, and notes what the buffer must hold.
  auto put = [&](uint64_t offset, uint64_t n) {
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    dev->write(dst, data.data(), n, offset);
    std::memcpy(expect.data() + offset, data.data(), n);
    for (uint64_t i = offset + n; i % 4 != 0; ++i) expect[i] = 0;
  };
  put(0, big);                   // large
  put(8, 1000);                  // small, over it
  put(4, big);                   // large again, over both: the upload buffer reused
  const uint64_t second = (big + 64) / 4 * 4;  // offsets are multiples of 4
  put(second, 0);                // nothing
  put(second, big - 4);          // large, at an offset
  for (uint64_t i = 0; i < 3; ++i) put(i * 4, 12);  // small ones after it
  put(0, 2 * big + 7);           // larger than the upload buffer so far: it grows
  put((2 * big + 7 + 3) / 4 * 4 + 4, 9);
  std::vector<uint8_t> out(total);
  dev->read(dst, out.data(), total);
  for (uint64_t i = 0; i < total; ++i) ASSERT_EQ(out[i], expect[i]) << "byte " << i;
}

TEST(WebGpuDevice, ReadsUnalignedRangesAndSeveralBuffersWithOneWait) {
  GET_DEVICE(dev);
  std::vector<uint8_t> a(1001), b(13);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(200 - i);
  Buffer ba = dev->upload(a.data(), a.size());
  Buffer bb = dev->upload(b.data(), b.size());
  std::vector<uint8_t> ra(5), rb(13), rc(0), rd(998);
  ReadRequest reads[] = {{ba.get(), 3, 5, ra.data()}, {bb.get(), 0, 13, rb.data()}, {ba.get(), 0, 0, rc.data()},
                         {ba.get(), 3, 998, rd.data()}};
  dev->read(reads);
  EXPECT_EQ(0, std::memcmp(ra.data(), a.data() + 3, 5));
  EXPECT_EQ(0, std::memcmp(rb.data(), b.data(), 13));
  EXPECT_EQ(0, std::memcmp(rd.data(), a.data() + 3, 998));
  dev->recycle(std::move(ba));
  dev->recycle(std::move(bb));
}

TEST(WebGpuDevice, PoolReusesBuffersByBucket) {
  GET_DEVICE(dev);
  EXPECT_EQ(BufferPool::bucket(0), 256u);
  EXPECT_EQ(BufferPool::bucket(256), 256u);
  EXPECT_EQ(BufferPool::bucket(257), 512u);
  EXPECT_EQ(BufferPool::bucket(5000), 5120u);        // step 1 KiB below 8 KiB
  EXPECT_LE(BufferPool::bucket(1000001), 1000001u * 9 / 8);
  for (uint64_t n = 1; n < (1u << 22); n = n * 3 + 1) {
    uint64_t b = BufferPool::bucket(n);
    EXPECT_GE(b, n);
    EXPECT_EQ(b % 256, 0u);
    if (n > 2048) {
      EXPECT_LE(b, n + n / 4);
    }
  }
  dev->pool().clear();
  Buffer x = dev->acquire(1000);
  WGPUBuffer raw = x.get();
  EXPECT_EQ(x.size, 1000u);
  dev->recycle(std::move(x));
  EXPECT_EQ(dev->pool().pooled_count(), 1u);
  Buffer y = dev->acquire(900);  // same bucket: the same buffer comes back
  EXPECT_EQ(y.get(), raw);
  EXPECT_EQ(y.size, 900u);
  Buffer z = dev->acquire(100000);  // another bucket: a new one
  EXPECT_NE(z.get(), raw);
  EXPECT_EQ(dev->pool().pooled_count(), 0u);
}

// 64-bit integers as two u32 words (lo, hi), as the engine stores INT64 on the GPU.
const char* kInt64Wgsl = R"(
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  let carry = select(0u, 1u, lo < a.x);
  return vec2<u32>(lo, a.y + b.y + carry);
}
fn sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let borrow = select(0u, 1u, a.x < b.x);
  return vec2<u32>(a.x - b.x, a.y - b.y - borrow);
}
@group(0) @binding(0) var<storage, read> a: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> b: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> sum: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> diff: array<vec2<u32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= arrayLength(&a)) { return; }
  sum[i] = add64(a[i], b[i]);
  diff[i] = sub64(a[i], b[i]);
}
)";

TEST(WebGpuDevice, Int64AddSubAsTwoWordsMatchesHost) {
  GET_DEVICE(dev);
  // Edge values, then random ones of every magnitude (beyond 2^32, negatives, near the extremes).
  std::vector<int64_t> edges = {0, 1, -1, 2, -2, INT32_MAX, INT32_MIN, int64_t{UINT32_MAX}, int64_t{1} << 32,
                                (int64_t{1} << 32) - 1, -(int64_t{1} << 32), INT64_MAX, INT64_MIN, INT64_MAX - 1,
                                INT64_MIN + 1, 0x7fffffff00000000, -0x7fffffff00000000, 0x00000000ffffffff};
  std::vector<int64_t> a, b;
  for (int64_t x : edges)
    for (int64_t y : edges) {
      a.push_back(x);
      b.push_back(y);
    }
  std::mt19937_64 rng(2024);
  while (a.size() < 5000) {
    auto pick = [&]() -> int64_t {
      int bits = static_cast<int>(rng() % 64) + 1;
      uint64_t v = bits == 64 ? rng() : rng() & ((uint64_t{1} << bits) - 1);
      return (rng() & 1) ? static_cast<int64_t>(v) : static_cast<int64_t>(0 - v);
    };
    a.push_back(pick());
    b.push_back(pick());
  }
  const uint64_t n = a.size(), bytes = n * 8;

  // Little-endian int64 is already (lo, hi): upload is a plain copy.
  Buffer ba = dev->upload(a.data(), bytes);
  Buffer bb = dev->upload(b.data(), bytes);
  Buffer bsum = dev->acquire(bytes), bdiff = dev->acquire(bytes);
  const Pipeline& p = dev->pipeline(kInt64Wgsl);
  BindGroupHandle group = dev->bind_group(p, {ba, bb, bsum, bdiff});

  CommandBatch batch = dev->batch();
  batch.dispatch(p, group.get(), static_cast<uint32_t>((n + 63) / 64));
  std::vector<int64_t> sum(n), diff(n);
  ReadRequest reads[] = {{bsum.get(), 0, bytes, sum.data()}, {bdiff.get(), 0, bytes, diff.data()}};
  dev->submit_and_read(batch, reads);

  int bad = 0;
  for (uint64_t i = 0; i < n && bad < 10; ++i) {
    // Wrapping arithmetic, computed on unsigned values (signed overflow is UB in C++).
    auto want_sum = static_cast<int64_t>(static_cast<uint64_t>(a[i]) + static_cast<uint64_t>(b[i]));
    auto want_diff = static_cast<int64_t>(static_cast<uint64_t>(a[i]) - static_cast<uint64_t>(b[i]));
    if (sum[i] != want_sum || diff[i] != want_diff) {
      ++bad;
      ADD_FAILURE() << "i=" << i << " a=" << a[i] << " b=" << b[i] << ": sum " << sum[i] << " (want " << want_sum
                    << "), diff " << diff[i] << " (want " << want_diff << ")";
    }
  }
  EXPECT_EQ(bad, 0);
  // INT64_MAX + 1 wraps to INT64_MIN, INT64_MIN - 1 to INT64_MAX.
  size_t k = edges.size();
  size_t imax = 11, imin = 12, ione = 1;
  EXPECT_EQ(sum[imax * k + ione], INT64_MIN);
  EXPECT_EQ(diff[imin * k + ione], INT64_MAX);
}

TEST(WebGpuDevice, EncodesManyDispatchesInOnePassAndCachesPipelines) {
  GET_DEVICE(dev);
  const char* wgsl = R"(
@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x < arrayLength(&x)) { x[gid.x] = x[gid.x] + 1u; }
})";
  size_t before = dev->pipeline_cache_size();
  const Pipeline& p = dev->pipeline(wgsl);
  const Pipeline& again = dev->pipeline(std::string(wgsl));
  EXPECT_EQ(p.get(), again.get());
  EXPECT_EQ(dev->pipeline_cache_size(), before + 1);

  std::vector<uint32_t> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint32_t>(i);
  Buffer buf = dev->upload(v.data(), v.size() * 4);
  BindGroupHandle g = dev->bind_group(p, {BufferBinding(buf.get(), 0, v.size() * 4)});
  CommandBatch batch = dev->batch();
  for (int r = 0; r < 50; ++r) batch.dispatch(p, g.get(), (1000 + 63) / 64);
  EXPECT_EQ(batch.dispatch_count(), 50u);
  dev->submit(batch);
  EXPECT_TRUE(batch.empty());
  // Replay the same recording twice more, then read.
  for (int rep = 0; rep < 2; ++rep) {
    for (int r = 0; r < 50; ++r) batch.dispatch(p, g.get(), (1000 + 63) / 64);
    dev->submit(batch);
  }
  dev->wait_idle();
  std::vector<uint32_t> out(v.size());
  dev->read(buf, out.data(), out.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(out[i], i + 150) << i;
}

TEST(WebGpuDevice, ShaderCompileErrorIsGpuErrorWithDawnsMessage) {
  GET_DEVICE(dev);
  const std::string wgsl =
      "@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n"
      "@compute @workgroup_size(1)\n"
      "fn main() {\n"
      "  x[0] = undefined_thing + 1u;\n"
      "}\n";
  try {
    dev->pipeline(wgsl);
    FAIL() << "expected a GpuError";
  } catch (const GpuError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("undefined_thing"), std::string::npos) << msg;  // Dawn/Tint names the identifier
    EXPECT_NE(msg.find("error"), std::string::npos) << msg;
    EXPECT_NE(msg.find("line 4"), std::string::npos) << msg;              // where
    EXPECT_NE(msg.find("x[0] = undefined_thing + 1u;"), std::string::npos) << msg;  // the offending line
  }
  // The device stays usable.
  EXPECT_NO_THROW(dev->check());
  std::vector<uint8_t> one = {42};
  Buffer b = dev->upload(one.data(), 1);
  uint8_t back = 0;
  dev->read(b, &back, 1);
  EXPECT_EQ(back, 42);
}

// Several pipelines made at once (compiled on Dawn's workers) are the ones pipeline() then gives,
// and they compute.
TEST(WebGpuDevice, MakesAPlansPipelinesTogether) {
  GET_DEVICE(dev);
  std::vector<std::string> sources;
  for (int k = 1; k <= 6; ++k)
    sources.push_back("@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n"
                      "@compute @workgroup_size(64)\n"
                      "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n"
                      "  if (gid.x < arrayLength(&x)) { x[gid.x] = x[gid.x] * " + std::to_string(k + 100) + "u; }\n"
                      "}\n");
  sources.push_back(sources[0]);  // asked twice: made once
  const size_t before = dev->pipeline_cache_size();
  dev->make_pipelines(sources);
  EXPECT_EQ(dev->pipeline_cache_size(), before + 6);
  dev->make_pipelines(sources);  // all made: nothing to do
  EXPECT_EQ(dev->pipeline_cache_size(), before + 6);
  std::vector<uint32_t> v = {1, 2, 3};
  Buffer buf = dev->upload(v.data(), v.size() * 4);
  CommandBatch batch = dev->batch();
  std::vector<BindGroupHandle> groups;
  for (int k = 0; k < 6; ++k) {
    const Pipeline& p = dev->pipeline(sources[size_t(k)]);
    groups.push_back(dev->bind_group(p, {BufferBinding(buf.get(), 0, v.size() * 4)}));
    batch.dispatch(p, groups.back().get(), 1);
  }
  dev->submit(batch);
  std::vector<uint32_t> out(3);
  dev->read(buf, out.data(), out.size() * 4);
  const uint32_t product = 101u * 102u * 103u * 104u * 105u * 106u;
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(out[i], v[i] * product) << i;
  EXPECT_EQ(dev->pipeline_cache_size(), before + 6);
}

// One bad shader among several: a GpuError naming it; the good ones are made, the device stays usable.
TEST(WebGpuDevice, ABadShaderAmongTogetherIsAGpuError) {
  GET_DEVICE(dev);
  const std::string good = "@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n"
                           "@compute @workgroup_size(1) fn main() { x[0] = 7u; }\n";
  const std::string bad = "@compute @workgroup_size(1) fn main() { let y = not_declared_here; }\n";
  try {
    dev->make_pipelines(std::vector<std::string>{good, bad});
    FAIL() << "expected a GpuError";
  } catch (const GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("not_declared_here"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(dev->check());
  EXPECT_NO_THROW(dev->pipeline(good));
}

TEST(BlobCache, KeepsValuesAcrossInstancesAndMissesOnDamage) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("onnxgpu-blob-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string key = "a key", other = "another key", value(5000, 'v');
  {
    BlobCache c(dir);
    ASSERT_TRUE(c.usable());
    EXPECT_EQ(c.load(key.data(), key.size(), nullptr, 0), 0u);
    c.store(key.data(), key.size(), value.data(), value.size());
    EXPECT_EQ(c.stores(), 1u);
  }
  BlobCache c(dir);
  ASSERT_EQ(c.load(key.data(), key.size(), nullptr, 0), value.size());
  std::string got(value.size(), '\0');
  EXPECT_EQ(c.load(key.data(), key.size(), got.data(), got.size()), value.size());
  EXPECT_EQ(got, value);
  EXPECT_EQ(c.hits(), 1u);
  EXPECT_EQ(c.load(other.data(), other.size(), nullptr, 0), 0u);
  // A damaged file (here: its last byte changed) is a miss, not garbage handed to Dawn.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('x');
  }
  EXPECT_EQ(c.load(key.data(), key.size(), nullptr, 0), 0u);
  // Past its size limit a cache stores nothing more.
  BlobCache small(dir, 100);
  small.store(other.data(), other.size(), value.data(), value.size());
  EXPECT_EQ(small.stores(), 0u);
  std::filesystem::remove_all(dir);
}

TEST(BlobCache, FolderFromTheEnvironment) {
  {
    ScopedEnv off("ONNXGPU_PIPELINE_CACHE", "off");
    EXPECT_TRUE(BlobCache::default_folder().empty());
  }
  {
    ScopedEnv named("ONNXGPU_PIPELINE_CACHE", "/some/where");
    EXPECT_EQ(BlobCache::default_folder(), std::filesystem::path("/some/where"));
  }
  ScopedEnv unset("ONNXGPU_PIPELINE_CACHE", "");
  ScopedEnv xdg("XDG_CACHE_HOME", "/x/cache");
  EXPECT_EQ(BlobCache::default_folder(), std::filesystem::path("/x/cache/onnxgpu/pipelines"));
}

// A second device on the same cache folder finds what the first stored (Dawn's SPIR-V and pipeline
// data), as a second process does.
TEST(WebGpuDevice, ASecondDeviceReadsThePipelineCache) {
  GET_DEVICE(dev);
  (void)dev;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("onnxgpu-pipelines-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string wgsl = "@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n"
                           "@compute @workgroup_size(32) fn main() { x[0] = 123457u; }\n";
  DeviceOptions o;
  o.pipeline_cache = dir.string();
  {
    Device first(o);
    ASSERT_NE(first.blob_cache(), nullptr);
    first.pipeline(wgsl);
    EXPECT_GT(first.blob_cache()->stores(), 0u);
  }
  Device second(o);
  ASSERT_NE(second.blob_cache(), nullptr);
  second.make_pipelines(std::vector<std::string>{wgsl});
  EXPECT_GT(second.blob_cache()->hits(), 0u);
  std::vector<uint32_t> v = {0};
  Buffer b = second.upload(v.data(), 4);
  const Pipeline& p = second.pipeline(wgsl);
  BindGroupHandle g = second.bind_group(p, {BufferBinding(b.get(), 0, 4)});
  CommandBatch batch = second.batch();
  batch.dispatch(p, g.get(), 1);
  second.submit(batch);
  second.read(b, v.data(), 4);
  EXPECT_EQ(v[0], 123457u);
  o.pipeline_cache = "off";
  Device none(o);
  EXPECT_EQ(none.blob_cache(), nullptr);
  std::filesystem::remove_all(dir);
}

TEST(WebGpuDevice, MissingEntryPointIsGpuError) {
  GET_DEVICE(dev);
  EXPECT_THROW(dev->pipeline("@compute @workgroup_size(1) fn main() {}", "not_there"), GpuError);
}

TEST(WebGpuDevice, OversizedBufferIsGpuError) {
  GET_DEVICE(dev);
  uint64_t too_big = dev->limits().max_buffer_size + 4;
  try {
    dev->create_buffer(too_big);
    FAIL() << "expected a GpuError";
  } catch (const GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("maxBufferSize"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dev->create_buffer(std::numeric_limits<uint64_t>::max() - 2), GpuError);
}

TEST(WebGpuDevice, OutOfMemoryAllocationIsGpuError) {
  GET_DEVICE(dev);
  // Dawn's test hook makes the allocation fail as out of memory: the error scope must catch it.
  try {
    dev->create_buffer(1024, kStorageUsage, "oom test", /*fake_oom_for_testing=*/true);
    FAIL() << "expected a GpuError";
  } catch (const GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(dev->check());
  EXPECT_NO_THROW(dev->create_buffer(1024));
}

TEST(WebGpuDevice, ValidationErrorInACommandBecomesGpuError) {
  GET_DEVICE(dev);
  const char* wgsl = R"(
@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@compute @workgroup_size(1)
fn main() { x[0] = 1u; })";
  const Pipeline& p = dev->pipeline(wgsl);
  Buffer buf = dev->create_buffer(16);
  BindGroupHandle g = dev->bind_group(p, {buf});
  CommandBatch batch = dev->batch();
  // More workgroups than maxComputeWorkgroupsPerDimension: invalid, reported when the batch finishes.
  batch.dispatch(p, g.get(), dev->limits().max_compute_workgroups_per_dimension + 1);
  EXPECT_THROW(dev->submit(batch), GpuError);
  EXPECT_NO_THROW(dev->check());  // reported once
  // A bad bind group request fails at once.
  EXPECT_THROW(dev->bind_group(p, {buf, buf}), GpuError);
}

TEST(WebGpuDevice, RefusesTheNullBackend) {
  {
    ScopedEnv env("ONNXGPU_BACKEND", "null");
    try {
      Device d;
      FAIL() << "the Null backend was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Null"), std::string::npos) << e.what();
    }
  }
  DeviceOptions o;
  o.backend = "null";
  EXPECT_THROW(Device{o}, Error);
  o.backend = "no-such-backend";
  EXPECT_THROW(Device{o}, InvalidArgument);
}

TEST(WebGpuDevice, AdapterFilterThatMatchesNothingIsAClearError) {
  GET_DEVICE(dev);
  DeviceOptions o;
  o.adapter = "no adapter is called this";
  try {
    Device d(o);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("no adapter is called this"), std::string::npos) << msg;
    EXPECT_NE(msg.find(dev->adapter().device), std::string::npos) << msg;  // lists what exists
  }
  // A filter that matches the current adapter chooses it.
  o.adapter = dev->adapter().device.substr(0, 5);
  Device same(o);
  EXPECT_EQ(same.adapter().device, dev->adapter().device);
}

}  // namespace
}  // namespace onnxgpu::webgpu
