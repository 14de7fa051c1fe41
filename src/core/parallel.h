// Large host copies split over a few threads (a readback of many megabytes, weights put side by side at
// plan time): one thread copies at a fraction of the memory's bandwidth.
#pragma once
#include <cstddef>
#include <functional>

namespace onnxgpu {

// How many parts a copy of n bytes is worth: at least 4 MiB a part, at most one a core and 8.
size_t copy_parts(size_t n);

// Calls part(p) for every p in [0, parts): part 0 on this thread, each other on a thread of its own (on
// this one when no thread can be had); returns when all are done. `part` must not throw.
void run_parts(size_t parts, const std::function<void(size_t)>& part);

}  // namespace onnxgpu
