// Counting wrappers around the Dawn function table, for the commands that time runs (bench, decode).
//
// The engine calls Dawn only through webgpu::dawn()'s table, so wrappers put into it before a session
// exists see every call: queue submits, dispatches, queue writes (upload bytes), time blocked in
// wgpuInstanceWaitAny (GPU work + readback the host waited for) and buffer creation. They cost a
// counter increment and, for timed calls, two clock reads.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxgpu/session.h"

namespace onnxgpu::tools {

struct DawnCounters {
  uint64_t submits = 0;
  uint64_t dispatches = 0;
  uint64_t writes = 0;
  uint64_t write_bytes = 0;
  uint64_t buffers_created = 0;
  uint64_t buffer_bytes_created = 0;
  double wait_ms = 0;    // host time blocked in wgpuInstanceWaitAny
  double submit_ms = 0;  // host time in wgpuQueueSubmit
  double write_ms = 0;   // host time in wgpuQueueWriteBuffer, or filling the mapped upload buffer
  // Host-clock marks since mark_step(): the first submit's start, the last wait's start and end (for a
  // run's timeline: the host's part before the GPU has work, while it runs, after it finished).
  std::chrono::steady_clock::time_point first_submit, last_wait_begin, last_wait_end;
  bool submitted = false, waited = false;
};
void mark_step();  // clears the marks

// Host time inside each Dawn entry, totals since the hooks were installed: only with
// $ONNXGPU_COUNT_DAWN=1 (else empty).
struct EntryTime {
  std::string name;
  uint64_t calls = 0;
  double ms = 0;
};
std::vector<EntryTime> dawn_entry_times();

void install_counting_hooks();         // idempotent; before the first session
const DawnCounters& counted();         // totals since the hooks were installed

// A session profile (SessionOptions::profile) as JSON: GPU time per op type and the `top` slowest nodes.
nlohmann::json profile_summary(const Profile& p, size_t top);
void print_profile(const nlohmann::json& summary);  // the summary as text on stdout

}  // namespace onnxgpu::tools
