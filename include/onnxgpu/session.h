// The public C++ API: load a model, run it on WebGPU (with graph capture) or on the CPU reference.
#pragma once
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnxgpu/int64_policy.h"
#include "onnxgpu/tensor.h"

namespace onnxgpu {

struct SessionOptions {
  std::string ep = "webgpu";  // "webgpu" or "cpu"
  bool capture = true;        // record GPU work once per input-shape signature, replay it after
  Int64Policy int64;
  // Time every GPU dispatch with timestamp queries (adapters with TimestampQuery): each dispatch
  // runs in a compute pass of its own and each segment waits for its timestamps, so runs are
  // slower. Read the result with Session::profile(). Config entry "onnxgpu.profile".
  bool profile = false;
  // Fusion: groups of nodes computed by one GPU kernel (MatMul + bias + residual, folded Transposes,
  // elementwise chains; src/runtime/fusion.h). Config entry "onnxgpu.fusion"; Python turns it off for
  // GraphOptimizationLevel.ORT_DISABLE_ALL.
  bool fusion = true;
  // External data must resolve (after symlinks) inside this folder; "" = the model's own folder (for
  // a model given as bytes: the current directory). Widen it only for models you trust. Config entry
  // "onnxgpu.external_data_root".
  std::string external_data_root;
  // Threads of the CPU kernels' library products (MatMul, Gemm, Conv: src/cpu/blas.h) on the cpu EP and
  // the webgpu EP's CPU nodes; 0 = the number of cores (ONNX Runtime's default). A value > 0 is applied
  // process-wide when the session is created. Config entry "onnxgpu.intra_op_num_threads"; Python's
  // SessionOptions.intra_op_num_threads.
  int intra_op_num_threads = 0;
  // ONNX Runtime-style config entries, e.g. {"gpu_graph_capture", "1"}, {"onnxgpu.int64.strategy", "cast_to_i32"}.
  // Applied on top of the fields above when the session is created.
  std::map<std::string, std::string> config;
  void add_config_entry(const std::string& key, const std::string& value) { config[key] = value; }
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::Undefined;
  bool has_shape = false;
  std::vector<int64_t> shape;           // -1 where the dimension is symbolic or unknown
  std::vector<std::string> dim_params;  // symbolic names ("" where concrete or unnamed)
};

// What the model file says of itself (ONNX Runtime's ModelMetadata): the producer, the graph's name, the
// model's domain, doc strings and version, and its metadata_props (custom_metadata_map).
struct ModelMetadata {
  std::string producer_name, graph_name, domain, description, graph_description;
  int64_t version = 0;
  std::map<std::string, std::string> custom_metadata_map;
};

// A tensor kept in GPU memory (IO binding): an output of one run that feeds the next run without a
// round trip through host memory (e.g. a KV cache). Made by Session::run_on_device.
class DeviceTensor {
 public:
  struct Storage;  // the GPU buffer (src/runtime/shared_device.h)
  DeviceTensor() = default;
  DeviceTensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage)
      : dtype_(dtype), shape_(std::move(shape)), storage_(std::move(storage)) {}
  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  Tensor to_host() const;  // reads it back (waits for the GPU)
  static std::vector<Tensor> to_host(std::span<const DeviceTensor> tensors);  // all of them, one wait
  const std::shared_ptr<Storage>& storage() const { return storage_; }

 private:
  DType dtype_ = DType::Undefined;
  Shape shape_;
  std::shared_ptr<Storage> storage_;
};

// Where a model's nodes ran for one input-shape signature, and how.
struct PlanFallback {
  std::string node, op, reason;
  std::vector<std::string> dtypes;  // the node's input dtypes
};
struct PlanReport {
  std::string ep;
  std::string adapter;    // the WebGPU adapter, and the CPU driver onnxgpu chose when it chose one
  std::string signature;  // input shapes the plan was built for
  int nodes = 0;          // nodes of the graph
  int gpu_nodes = 0;      // run by GPU kernels (views included)
  int cpu_nodes = 0;      // fell back to the CPU at run time
  int folded_nodes = 0;   // computed once at plan time (constants, shape arithmetic)
  int fused_nodes = 0;    // of the GPU nodes, those computed together by one kernel (e.g. MatMul + bias Add)
  int segments = 0;       // captured GPU segments (a CPU node splits the GPU work)
  int dispatches = 0;     // GPU dispatches per run
  bool captured = false;  // recorded once and replayed
  bool replayed = false;  // the last run was a replay
  // The last run submitted commands encoded during the run before's wait for the GPU (a replay
  // repeated: its encoding overlapped the GPU's work instead of preceding it).
  bool encoded_ahead = false;
  // Shape families: a run whose input shapes differ from the plan's only in sizes (same names, dtypes,
  // ranks and value-keyed values) re-derives the recorded plan for them (sizes, workgroup counts,
  // shape arithmetic, buffer capacities) instead of recording anew, then replays it.
  bool refreshed = false;                  // the last run re-derived the plan for new sizes
  // ... during the wait of the run before, for the sizes predicted from the plan's last runs (a
  // decode loop's past growing by a row a run): the run itself spent no host time on it (plan_ms 0);
  // refresh_ahead_ms is what the refresh took then.
  bool refreshed_ahead = false;
  double refresh_ahead_ms = 0;
  std::vector<std::string> symbolic_dims;  // input dims that took several sizes in this plan: "past_key_0[2]"
  // Nodes whose kernel saw other sizes in a refresh: their kernel ran again and chose the same
  // programs (tiles, paths), the plan's guards; another choice plans anew, kept beside this plan.
  std::vector<std::string> guarded_nodes;
  int capacity_growths = 0;  // buffers this plan regrew (geometrically) for larger sizes
  std::string refresh_refused;  // why the last refresh of this plan was refused (a guard), if it was
  // KV caches appended in place: graph outputs Concat(past input, new) kept in a buffer with spare
  // room, handed out without a copy; when the caller feeds one back as its past, the next run writes
  // only the new rows (how many of them did so in the last run: appended_in_place).
  std::vector<std::string> appended_outputs;
  int appended_in_place = 0;
  // Of those, the ones whose new rows the kernel computing them writes straight into the buffer (a
  // decode step's keys and values by their product): the Concat copies nothing.
  std::vector<std::string> rows_written_in_place;
  double plan_ms = 0;        // host time the last run spent planning or refreshing (0: plain replay)
  bool whole_graph_fallback = false;
  std::vector<PlanFallback> fallbacks;
  std::string int64_strategy;
  int int64_tensors = 0;  // int64 values computed at run time
  int int64_on_gpu = 0;   // of those, how many live on the GPU
  uint64_t gpu_buffer_bytes = 0;
  // Graph inputs whose values shaped the plan (e.g. a Reshape's shape fed as an input): a run with
  // other values of these is planned (and recorded) again.
  std::vector<std::string> value_keyed_inputs;
  // If nodes on a flag input whose branch the run took in place of the If ("node: flag=1, then_branch"):
  // the plan is that of the taken branches.
  std::vector<std::string> branches_taken;
};

// GPU time per node, from timestamp queries (SessionOptions::profile), over the runs made since the
// session was created (or since the last reset_profile()).
struct NodeTiming {
  std::string node, op;  // op: "MatMul (fused)" etc. where a fused kernel computes several nodes
  int dispatches = 0;   // per run (the last profiled run's)
  double gpu_ms = 0;    // mean per profiled run
  // The bytes of the tensors its dispatches declare (each read or written once by each dispatch that
  // declares it, at least; a product: A, B and the result, a split-K product its partial sums twice):
  // bytes / gpu_ms is the bandwidth it achieved.
  uint64_t bytes = 0;
  // The floating-point operations it computes (2 per multiply-add of a product, a convolution or an
  // attention's two products; 0 for other nodes): flops / gpu_ms is the rate it achieved.
  uint64_t flops = 0;
};
struct Profile {
  int runs = 0;                   // profiled runs
  double gpu_ms = 0;              // mean per run, the sum of the nodes' times
  std::vector<NodeTiming> nodes;  // in graph order, nodes with at least one dispatch
};

class Session {
 public:
  Session(const std::string& model_path, SessionOptions options = {});
  static Session from_bytes(const std::string& model_bytes, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Inputs the caller must feed (graph inputs without an initializer), and the outputs, in graph order.
  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  const SessionOptions& options() const;
  ModelMetadata metadata() const;

  // Runs the model. Every required input must be given, with the declared dtype and a shape that
  // matches every concrete declared dimension. Returns the outputs in graph order.
  std::vector<Tensor> run(const std::unordered_map<std::string, Tensor>& feeds);

  // IO binding (webgpu ep only): inputs from host tensors and/or tensors already on the GPU; the outputs
  // stay on the GPU (read one back with DeviceTensor::to_host, or feed it to the next run).
  std::vector<DeviceTensor> run_on_device(const std::unordered_map<std::string, Tensor>& feeds,
                                          const std::unordered_map<std::string, DeviceTensor>& device_feeds = {});

  // IO binding (webgpu ep only): a copy of a host tensor in GPU memory, to feed runs as a device input
  // (run_on_device's device_feeds) without uploading it again, as an input bound to GPU memory is.
  DeviceTensor to_device(const Tensor& tensor);

  // The plan of the last run (placement, segments, fallbacks, INT64 representation).
  PlanReport last_plan() const;

  // GPU time per node (webgpu ep with SessionOptions::profile; empty otherwise).
  Profile profile() const;
  void reset_profile();

  struct Impl;

 private:
  Session() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onnxgpu
