#include "dawn_counters.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "webgpu/dawn.h"

namespace onnxgpu::tools {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

DawnCounters g_count;
webgpu::Dawn g_real;  // the original entries

void hooked_submit(WGPUQueue q, size_t n, const WGPUCommandBuffer* cmds) {
  g_count.submits++;
  auto t0 = Clock::now();
  if (!g_count.submitted) g_count.first_submit = t0, g_count.submitted = true;
  g_real.QueueSubmit(q, n, cmds);
  g_count.submit_ms += ms_since(t0);
}
void hooked_dispatch(WGPUComputePassEncoder pass, uint32_t x, uint32_t y, uint32_t z) {
  g_count.dispatches++;
  g_real.ComputePassEncoderDispatchWorkgroups(pass, x, y, z);
}
void hooked_write(WGPUQueue q, WGPUBuffer b, uint64_t offset, const void* data, size_t size) {
  g_count.writes++;
  g_count.write_bytes += size;
  auto t0 = Clock::now();
  g_real.QueueWriteBuffer(q, b, offset, data, size);
  g_count.write_ms += ms_since(t0);
}
// Writes over the device's upload ring go through a mapped upload buffer (webgpu::Device::write_staged):
// counted as writes, from getting its mapped range to unmapping it (the host's copy into it).
std::optional<Clock::time_point> g_mapped_for_write;
void* hooked_mapped_range(WGPUBuffer b, size_t offset, size_t size) {
  g_count.writes++;
  g_count.write_bytes += size;
  g_mapped_for_write = Clock::now();
  return g_real.BufferGetMappedRange(b, offset, size);
}
void hooked_unmap(WGPUBuffer b) {
  g_real.BufferUnmap(b);
  if (g_mapped_for_write) g_count.write_ms += ms_since(*g_mapped_for_write);
  g_mapped_for_write.reset();
}
WGPUWaitStatus hooked_wait(WGPUInstance inst, size_t n, WGPUFutureWaitInfo* infos, uint64_t timeout) {
  auto t0 = Clock::now();
  WGPUWaitStatus s = g_real.InstanceWaitAny(inst, n, infos, timeout);
  g_count.wait_ms += ms_since(t0);
  g_count.last_wait_begin = t0;
  g_count.last_wait_end = Clock::now();
  g_count.waited = true;
  return s;
}
WGPUBuffer hooked_create_buffer(WGPUDevice dev, const WGPUBufferDescriptor* desc) {
  WGPUBuffer b = g_real.DeviceCreateBuffer(dev, desc);
  if (b && desc) {
    g_count.buffers_created++;
    g_count.buffer_bytes_created += desc->size;
  }
  return b;
}

// $ONNXGPU_COUNT_DAWN=1: every entry of the table timed (host time inside Dawn, by entry), for finding
// where a run's host time goes (Dawn's library has no symbols for a sampling profiler).
enum EntryId {
#define ONNXGPU_ENTRY_ID(name, ret, params) kEntry##name,
  WGPU_FUNCTIONS(ONNXGPU_ENTRY_ID)
#undef ONNXGPU_ENTRY_ID
  kEntries
};
const char* const kEntryNames[] = {
#define ONNXGPU_ENTRY_NAME(name, ret, params) #name,
    WGPU_FUNCTIONS(ONNXGPU_ENTRY_NAME)
#undef ONNXGPU_ENTRY_NAME
};
std::atomic<uint64_t> g_entry_calls[kEntries];
std::atomic<uint64_t> g_entry_ns[kEntries];

template <int Id, typename F>
struct Timed;
template <int Id, typename R, typename... A>
struct Timed<Id, R (*)(A...)> {
  static inline R (*real)(A...) = nullptr;
  static R call(A... a) {
    auto t0 = Clock::now();
    struct Count {
      Clock::time_point t0;
      ~Count() {
        g_entry_calls[Id].fetch_add(1, std::memory_order_relaxed);
        g_entry_ns[Id].fetch_add(uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()),
                                 std::memory_order_relaxed);
      }
    } count{t0};
    return real(a...);
  }
};

void install_entry_timers(webgpu::Dawn& table) {
#define ONNXGPU_TIME_ENTRY(name, ret, params)                    \
  if (table.name) {                                               \
    using T = Timed<kEntry##name, WGPUProc##name>;                \
    T::real = table.name;                                         \
    table.name = &T::call;                                        \
  }
  WGPU_FUNCTIONS(ONNXGPU_TIME_ENTRY)
#undef ONNXGPU_TIME_ENTRY
}

}  // namespace

std::vector<EntryTime> dawn_entry_times() {
  std::vector<EntryTime> v;
  for (int k = 0; k < kEntries; ++k)
    if (uint64_t c = g_entry_calls[k].load(std::memory_order_relaxed))
      v.push_back({kEntryNames[k], c, double(g_entry_ns[k].load(std::memory_order_relaxed)) / 1e6});
  return v;
}

// dawn() hands out a const reference to a table allocated once with `new` (not a const object), and
// every engine call goes through that reference, so replacing entries here is seen everywhere.
void install_counting_hooks() {
  static bool done = false;
  if (done) return;
  auto& table = const_cast<webgpu::Dawn&>(webgpu::dawn());
  g_real = table;
  table.QueueSubmit = hooked_submit;
  table.ComputePassEncoderDispatchWorkgroups = hooked_dispatch;
  table.QueueWriteBuffer = hooked_write;
  table.BufferGetMappedRange = hooked_mapped_range;
  table.BufferUnmap = hooked_unmap;
  table.InstanceWaitAny = hooked_wait;
  table.DeviceCreateBuffer = hooked_create_buffer;
  if (const char* e = std::getenv("ONNXGPU_COUNT_DAWN"); e && std::string(e) == "1") install_entry_timers(table);
  done = true;
}

const DawnCounters& counted() { return g_count; }
void mark_step() { g_count.submitted = g_count.waited = false; }

nlohmann::json profile_summary(const Profile& p, size_t top) {
  std::map<std::string, std::pair<double, int>> by_op;  // op -> (ms, dispatches)
  std::map<std::string, uint64_t> op_bytes, op_flops;
  for (const auto& n : p.nodes) {
    by_op[n.op].first += n.gpu_ms;
    by_op[n.op].second += n.dispatches;
    op_bytes[n.op] += n.bytes;
    op_flops[n.op] += n.flops;
  }
  // Achieved bandwidth: the bytes of the tensors a node's dispatches declare over its GPU time; achieved
  // rate: its floating-point operations over its GPU time (products, convolutions, attention).
  auto giga_per_s = [](uint64_t count, double ms) { return ms > 0 ? double(count) / (ms * 1e6) : 0.0; };
  std::vector<std::pair<std::string, std::pair<double, int>>> ops(by_op.begin(), by_op.end());
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  nlohmann::json j;
  j["runs"] = p.runs;
  j["gpu_ms_per_run"] = p.gpu_ms;
  j["scope"] = "sum of per-dispatch GPU timestamps (each dispatch in a pass of its own), mean per run";
  j["by_op"] = nlohmann::json::array();
  for (const auto& [op, v] : ops)
    j["by_op"].push_back({{"op", op}, {"gpu_ms", v.first}, {"dispatches", v.second},
                          {"share", p.gpu_ms > 0 ? v.first / p.gpu_ms : 0}, {"bytes", op_bytes[op]},
                          {"gb_per_s", giga_per_s(op_bytes[op], v.first)}, {"flops", op_flops[op]},
                          {"gflop_per_s", giga_per_s(op_flops[op], v.first)}});
  std::vector<NodeTiming> nodes = p.nodes;
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.gpu_ms > b.gpu_ms; });
  j["top_nodes"] = nlohmann::json::array();
  for (size_t i = 0; i < nodes.size() && i < top; ++i)
    j["top_nodes"].push_back({{"node", nodes[i].node}, {"op", nodes[i].op}, {"gpu_ms", nodes[i].gpu_ms},
                              {"dispatches", nodes[i].dispatches}, {"bytes", nodes[i].bytes},
                              {"gb_per_s", giga_per_s(nodes[i].bytes, nodes[i].gpu_ms)}, {"flops", nodes[i].flops},
                              {"gflop_per_s", giga_per_s(nodes[i].flops, nodes[i].gpu_ms)}});
  return j;
}

void print_profile(const nlohmann::json& p) {
  std::printf("GPU time per run (timestamps, %d runs): %.3f ms\n", p["runs"].get<int>(), p["gpu_ms_per_run"].get<double>());
  // GFLOP/s where the op's kernels count their work (products, convolutions, attention), else blank.
  auto rate = [](const nlohmann::json& x) {
    char buf[32] = "";
    if (x["flops"].get<uint64_t>() > 0) std::snprintf(buf, sizeof buf, "%9.1f GFLOP/s", x["gflop_per_s"].get<double>());
    return std::string(buf);
  };
  for (const auto& o : p["by_op"])
    std::printf("  %-24s %9.3f ms  %5.1f%%  %4d dispatches  %8.1f GB/s%s\n", o["op"].get<std::string>().c_str(),
                o["gpu_ms"].get<double>(), 100 * o["share"].get<double>(), o["dispatches"].get<int>(),
                o["gb_per_s"].get<double>(), rate(o).c_str());
  std::printf("slowest nodes:\n");
  for (const auto& n : p["top_nodes"])
    std::printf("  %-40s %-20s %8.4f ms  %d dispatches  %9.3f MB  %8.1f GB/s%s\n", n["node"].get<std::string>().c_str(),
                n["op"].get<std::string>().c_str(), n["gpu_ms"].get<double>(), n["dispatches"].get<int>(),
                n["bytes"].get<uint64_t>() / 1e6, n["gb_per_s"].get<double>(), rate(n).c_str());
}

}  // namespace onnxgpu::tools
