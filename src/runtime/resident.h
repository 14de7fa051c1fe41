// KV caches appended in place.
//
// A graph output `present` = Concat(past, new, ...) of a graph input `past` that nothing else reads
// (Shape and Size aside) is what a decode step's KV cache is: the caller feeds each run's present back
// as the next run's past. In a plan whose past arrives as a DeviceTensor, such a pair is *resident*:
// its values live in one buffer with spare room along the concat axis, [outer, rows, inner] elements
// with the tensor's first shape[axis] positions filled. The present is handed out as a DeviceTensor
// of that buffer (no copy); fed back as the past, it is already in place, so the Concat writes only
// the new rows, and every kernel that reads the past or present reads the buffer through its pitch
// (shader::Program::pitch, applied by the runtime to the bindings that lie in the buffer: no kernel
// knows of it).
//
// GroupQueryAttention over a static KV buffer is the other KV cache: present_key / present_value (graph
// outputs) of past_key / past_value (graph inputs nothing else reads) with the same shape, the new token's
// keys written at its position in the buffer (seqlens_k). Such a pair is resident the same way, in a
// buffer of exactly the tensor's size (`exact`: nothing to pitch): the kernel writes only the new rows into
// it (GpuKernelContext::in_place_input 3) and the present is handed out as that buffer. As with ONNX
// Runtime's shared past/present buffers, the positions past the total length then hold what the buffer held
// (zeros in a loop that starts from a zero past and writes forward) rather than the zeros of the copying
// path, and an older present of the same buffer sees the rows written after it, which lie past its total.
//
// The new rows too need no copy when the node that computes them writes them at their place: a Concat
// input that only views (Reshape, a Transpose that moves only axes of size 1, ...) lead to from a GPU
// kernel's output, read by nothing else. That output is then bound in the buffer, pitched to start at
// the past's length in each row (Program::pitch's start), so its kernel, which knows nothing of it, writes
// the rows where the Concat would have copied them, and the Concat copies nothing (a decode step's new
// keys and values, written by the q, k, v product: no dispatch per cache and step).
//
// Any other past (a host tensor, a contiguous DeviceTensor, an older present of the same buffer) is
// copied into the buffer first; and when presents handed out still hold the buffer, the plan takes a
// new one before copying, so nothing a caller holds is ever overwritten. An append writes only
// positions beyond the newest present's, which no older present reads. Capacity grows geometrically
// (to the next power of two): outgrowing it is one run that copies the past into a larger buffer.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/session.h"
#include "runtime/shared_device.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu::runtime {

struct Plan;

// Where a tensor lies in a buffer: [outer, rows, inner] elements, its first `used` of the `rows`
// positions along its axis filled (rows == used: contiguous).
struct RowLayout {
  uint64_t outer = 1, used = 0, rows = 0, inner = 1;
};
// The layout of a tensor of `shape` along `axis` in a buffer with room for `rows` positions there.
RowLayout row_layout(const Shape& shape, int64_t axis, int64_t rows);

// A DeviceTensor read back to the host, whatever its storage's layout (the caller holds the device lock).
Tensor read_device_tensor(const DeviceTensor& t);
// Several, with one wait for the contiguous ones (all on one device).
std::vector<Tensor> read_device_tensors(std::span<const DeviceTensor> tensors);
// Encodes the copy of a DeviceTensor into a buffer: contiguous at the start of `dst` (axis < 0), or
// laid out along `axis` with room for `rows` positions.
void copy_device_tensor(webgpu::CommandBatch& batch, const DeviceTensor& t, WGPUBuffer dst, int64_t axis = -1,
                        int64_t rows = 0);

// How many nodes read each value other than for its shape (Shape and Size fold from it), subgraphs'
// reads included.
std::unordered_map<std::string, int> value_readers(const ir::Graph& g);

// The pitch words (Program::pitch's len, stride, start) of a value of `numel` elements in a buffer laid out
// as `l`, starting `start` elements into each row.
std::array<uint32_t, 3> pitch_of(const RowLayout& l, uint64_t numel, uint64_t start = 0);

// The nodes of a graph that could append in place: a Concat whose graph output concatenates, first, a
// graph input read by nothing else but Shape / Size; a GroupQueryAttention's present_key and present_value
// (graph outputs) over its past_key and past_value (graph inputs read by nothing else). Whether a plan keeps
// one resident also depends on the run (the past fed as a DeviceTensor; 32- or 64-bit elements on the GPU;
// for GroupQueryAttention, a present as long as its past: a static buffer).
struct AppendPair {
  size_t node = 0;  // the Concat or GroupQueryAttention
  std::string input, output;
  size_t output_index = 0;  // among the graph's outputs
  bool gqa = false;         // GroupQueryAttention: input 3 -> output 1, input 4 -> output 2
  size_t node_output = 0;   // the output's index among the node's
};
std::vector<AppendPair> append_pairs(const ir::Graph& g);

// A pair a plan keeps resident: the buffer (a DeviceTensor storage, shared with the presents handed
// out) bound as the plan's slot for both values.
struct Resident {
  AppendPair pair;
  int slot = -1;
  int64_t axis = 0;
  DType dtype = DType::Undefined;
  RowLayout layout;  // outer, rows, inner (used: the newest present's length, as `storage->filled`)
  bool exact = false;  // the buffer holds the tensor as it is (GroupQueryAttention's static buffer): no pitch
  bool rows_in_place = false;  // the new rows are written at their place by the kernel computing them
  std::shared_ptr<DeviceTensor::Storage> storage;
};

// The room to make for `needed` positions: the next power of two (16 at least), within the device's
// binding size and 32-bit element indexing; an error naming the output when even `needed` does not fit.
int64_t resident_rows(const webgpu::Device& dev, const Resident& r, const RowLayout& layout, int64_t needed,
                      const Int64Policy& policy);
// A new buffer for resident `r` laid out as `layout`, bound as its slot's buffer; the recorded
// dispatches that bind the slot are bound anew.
void give_buffer(Plan& plan, Resident& r, const RowLayout& layout, const Int64Policy& policy);

// The layout of the resident whose buffer is slot `slot`, or null.
using ResidentLayouts = std::function<const RowLayout*(int slot)>;
ResidentLayouts resident_layouts(const Plan& plan);
// Pitches the bindings of `d` that lie in a resident buffer (per binding: its slot, or -1, the element
// count of the value bound and, for new rows written in place, where they start in each row: the past's
// length x inner; `starts` empty: every binding from the row's start).
void pitch_bindings(webgpu::DispatchSpec& d, const std::vector<int>& slots, const std::vector<uint64_t>& numel,
                    const ResidentLayouts& layouts, const std::vector<uint64_t>& starts = {});

// Before a run: each resident's past is in place (the newest present of its buffer) or copied in,
// into a new buffer when presents handed out hold the old one or the layout changed. Counts the
// in-place ones in the plan's report.
void prepare_residents(Plan& plan, const std::unordered_map<std::string, DeviceTensor>& device,
                       const std::unordered_map<std::string, Tensor>& host, const Int64Policy& policy,
                       webgpu::CommandBatch& batch);

}  // namespace onnxgpu::runtime
