// The GPU kernels' interface. A kernel is a function that, given a node and what is known of its
// inputs at plan time (dtype, shape, and the value when it is a constant), sets its outputs' dtypes
// and shapes and emits dispatches of shader::Programs. It runs once per input-shape signature; the
// runtime records the dispatches and replays them. A kernel that cannot handle a case calls
// unsupported(reason): the node then falls back to the CPU alone (or fails under fail_loud).
//
// Kernels are written once for every dtype their ONNX schema admits: the shader layer generates the
// accessors and the arithmetic for each dtype (INT64 included), so no kernel branches on INT64.
// One op family per file (src/webgpu/kernels/<family>.cpp), registered in register_<family>().
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/int64_policy.h"
#include "onnxgpu/tensor.h"
#include "ops/fail.h"
#include "ops/operand.h"
#include "webgpu/shader/program.h"

namespace onnxgpu::webgpu {

struct Limits;

// Thrown by GpuKernelContext::unsupported: the node goes to the CPU, with `what()` as the reason.
class GpuUnsupported : public Error {
 public:
  using Error::Error;
};

// What is known of a value at plan time.
struct GpuValueInfo {
  DType dtype = DType::Undefined;
  Shape shape;
  const Tensor* constant = nullptr;       // the value, when it is an initializer or was folded
  const Tensor* runtime_value = nullptr;  // a graph input's value in this run (see constant())
};

// A tensor a dispatch binds: the node's input i, output i, or a temporary buffer of the node.
struct ValueRef {
  enum class Kind { Input, Output, Temp } kind;
  int index;
};

struct DispatchSpec {
  // The program. Its WGSL is assembled only when a pipeline is made (source()): a refresh of a
  // recorded plan compares programs without assembling them (shader::Program::same_source).
  shader::Program program;
  std::string source() const { return program.source(); }
  std::vector<uint32_t> uniforms;  // slot 0 is filled by the runtime
  std::vector<ValueRef> bindings;  // in the program's tensor order
  uint32_t x = 1, y = 1, z = 1;    // workgroup counts
  // The floating-point operations it computes (2 per multiply-add of a product, a convolution or an
  // attention's two products; 0 where not counted): the profile's GFLOP/s.
  uint64_t flops = 0;
};

struct TempSpec {
  DType dtype;
  Shape shape;
};

class GpuKernelContext {
 public:
  GpuKernelContext(const ir::Node& node, int64_t opset, const Int64Policy& policy, const Limits& limits,
                   std::vector<GpuValueInfo> inputs);

  const ir::Node& node;
  const int64_t opset;
  const Int64Policy& policy;
  const Limits& limits;

  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].dtype != DType::Undefined; }
  const GpuValueInfo& input(size_t i) const;  // fails when omitted
  DType dtype(size_t i) const { return input(i).dtype; }
  const Shape& shape(size_t i) const { return input(i).shape; }
  // Input i's dtype and shape for the shared checks of src/ops (nothing when omitted).
  ops::Operand operand(size_t i) const {
    return has_input(i) ? ops::Operand{inputs_[i].dtype, inputs_[i].shape} : ops::Operand{};
  }
  std::vector<ops::Operand> operands() const {
    std::vector<ops::Operand> r;
    for (size_t i = 0; i < num_inputs(); ++i) r.push_back(operand(i));
    return r;
  }
  // The value of input i when it is known at plan time, else unsupported("input ... is not a constant").
  // A graph input fed from the host counts as known: the plan is then keyed on its value too (a
  // run with another value plans again), so shape-like inputs (Reshape's shape, Slice's starts...)
  // that arrive as graph inputs still run on the GPU. A kernel reads the values of an input of more
  // than one element only through here (constants_read; a scalar it may read from `constant`): a
  // refresh takes one layer's call for another whose weights and biases differ only where the call
  // read none of them (runtime/refresh.cpp, alike_constants).
  const Tensor& constant(size_t i, const char* what);
  bool known(size_t i) const { return has_input(i) && (inputs_[i].constant || inputs_[i].runtime_value); }
  // Input i is an initializer or was folded (the same value in every run).
  bool is_constant(size_t i) const { return has_input(i) && inputs_[i].constant; }
  size_t num_outputs() const { return node.outputs.size(); }
  bool output_wanted(size_t i) const { return i < node.outputs.size() && !node.outputs[i].empty(); }

  // Results.
  void set_output(size_t i, DType dtype, Shape shape);
  // Output i is input `input` seen with another shape (same bytes): no copy, no dispatch.
  void alias_output(size_t i, size_t input, Shape shape);
  ValueRef in(size_t i) const { return {ValueRef::Kind::Input, int(i)}; }
  ValueRef out(size_t i) const { return {ValueRef::Kind::Output, int(i)}; }
  ValueRef temp(DType dtype, Shape shape);

  shader::Program program(const std::string& name, uint32_t workgroup_size = 256) const {
    return shader::Program(node.op_type + "." + name, policy, workgroup_size);
  }
  // Whether the kernel must build `p`'s WGSL: a kernel that builds much calls this right after
  // program(), with the key of its choices (shader::Program::keyed). False when a recorded program
  // (`recorded`) of the same name and key gives p its text.
  bool needs_wgsl(shader::Program& p, std::string key) const;
  // Records a dispatch of `p` with `bindings` (one per tensor declared in p, in order). The workgroup
  // count comes from p.threads() (set_threads) unless given.
  void dispatch(const shader::Program& p, std::vector<ValueRef> bindings, uint32_t x = 0, uint32_t y = 1, uint32_t z = 1);

  // The node cannot run on the GPU in this case: it falls back to the CPU with this reason.
  [[noreturn]] void unsupported(const std::string& reason) const;
  // The model is invalid: an error naming the node.
  [[noreturn]] void fail(const std::string& msg) const;
  // fail() as the src/ops rules take it.
  ops::Fail fail_fn() const { return [this](const std::string& m) { fail(m); }; }
  int64_t normalize_axis(int64_t axis, int64_t rank) const;

  // Set by the runtime before the kernel runs: input `in_place_input` already lies in output 0's
  // buffer at its place (the past of a KV cache appended in place, runtime/resident.h). A kernel that
  // honours it (Concat) neither binds nor copies that input and sets in_place_done; the others ignore it.
  // GroupQueryAttention's is 3: past_key and past_value lie in present_key's and present_value's buffers
  // (a static KV buffer: the same shape), so it writes only the new rows.
  int in_place_input = -1;
  // With in_place_input 0, a Concat of two inputs: input 1's rows are written at their place too (by the
  // kernel that computes them, runtime/resident.h), so a Concat that honours in_place_input copies nothing.
  bool rows_in_place = false;
  bool in_place_done = false;
  // Set by a refresh calling the kernel again: the programs it recorded (needs_wgsl).
  std::vector<const shader::Program*> recorded;

  // Filled by the kernel, read by the runtime.
  struct OutputSpec {
    DType dtype = DType::Undefined;
    Shape shape;
    int alias_of = -1;  // input index when the output is a view
    bool set = false;
  };
  std::vector<OutputSpec> outputs;
  std::vector<TempSpec> temps;
  std::vector<DispatchSpec> dispatches;
  std::vector<size_t> value_keyed_inputs;  // inputs whose run-time value the kernel read
  std::vector<size_t> constants_read;      // inputs whose constant value the kernel read (constant())
  // Counts `flops` (DispatchSpec::flops) on the last dispatch made: a kernel calls it once its work's
  // dispatches are made (a split-K product's sum pass then carries them, the node's sum is the same).
  void count_flops(uint64_t flops) {
    if (!dispatches.empty()) dispatches.back().flops += flops;
  }

 private:
  std::vector<GpuValueInfo> inputs_;
};

using GpuKernel = std::function<void(GpuKernelContext&)>;

// The domain of the nodes the runtime's fusion pass makes (src/runtime/fusion.h): several graph nodes
// computed by one kernel. They exist only inside a GPU plan, never in a model or on the CPU.
inline constexpr const char* kFusedDomain = "onnxgpu.fused";

// A float as an exact WGSL expression (inf and NaN included).
std::string f32_lit(float v);

// A quantization parameter (a scale or zero point: a scalar, or one value per row, column or channel)
// read in WGSL at `index` (a u32 expression). A constant scalar (an initializer, or folded: a model's
// usual quantization parameters) becomes a uniform: no storage buffer, of which a device may bind as
// few as 8 per dispatch (WebGPU's default limit) while a quantized node has up to 9 inputs. Anything
// else (a vector; a graph input, whose new value a replay takes) is bound (`binds`) and read from its
// buffer. The expression is f32 (`as_f32`, a scale) or i32 (a zero point).
// WGSL storing ops::requantize(v, zero, t) as element `at` of output y: round half to even, plus the zero
// point, saturated to t (int8 or uint8). `v` is an f32 expression, `zero` an i32 one.
std::string requantized_store(DType t, const std::string& v, const std::string& zero, const std::string& at = "gi");

struct QuantParam {
  bool uniform = false;
  // 'u' (a uniform) or 'b' (a buffer): for the program's name, which must tell the two WGSL apart.
  char tag() const { return uniform ? 'u' : 'b'; }
  static QuantParam of(const GpuKernelContext& ctx, size_t i);
  std::string bind(GpuKernelContext& ctx, shader::Program& p, std::vector<ValueRef>& binds, const std::string& name, size_t i,
                   const std::string& index, bool as_f32) const;
};
// An unsigned integer as a WGSL u32 literal ("12u").
inline std::string u32_lit(uint64_t v) { return std::to_string(v) + "u"; }

class GpuKernelRegistry {
 public:
  // An op of a model's domain: "" (ai.onnx) or another one, e.g. ir::kMsDomain.
  void add(const std::string& op_type, GpuKernel k, const std::string& domain = "");
  void add_fused(const std::string& op_type, GpuKernel k);  // an op of kFusedDomain
  const GpuKernel* find(const std::string& op_type, const std::string& domain = "") const;
  // The model ops with a kernel (fused ones excluded): "Op" in ai.onnx, "domain.Op" in another domain
  // (as the conformance reports name them).
  std::vector<std::string> op_types() const;

 private:
  std::map<std::string, std::map<std::string, GpuKernel>> kernels_;  // domain ("" for ai.onnx) -> op -> kernel
  std::map<std::string, GpuKernel> fused_;
};

const GpuKernelRegistry& gpu_registry();

// Families (src/webgpu/kernels/<family>.cpp).
void register_elementwise(GpuKernelRegistry&);    // unary, binary, comparison, logical, bitwise, Where, Cast, BitCast,
                                                  // Clip, activations (Swish, Mish, SwiGLU ...)
void register_views(GpuKernelRegistry&);          // Reshape, Squeeze, Unsqueeze, Flatten, Identity, Dropout
void register_layout(GpuKernelRegistry&);         // Transpose, Concat, Split, Slice, Expand, Tile, Pad, DepthToSpace, SpaceToDepth,
                                                  // CenterCropPad, ReverseSequence
void register_indexing(GpuKernelRegistry&);       // Gather, GatherElements, GatherND, ScatterElements, ScatterND,
                                                  // TensorScatter, Compress
void register_generators(GpuKernelRegistry&);     // Range, ConstantOfShape, Trilu, OneHot, EyeLike
void register_reduce(GpuKernelRegistry&);         // Reduce*, ArgMax, ArgMin, CumSum, CumProd
void register_softmax(GpuKernelRegistry&);        // Softmax, LogSoftmax, Hardmax
void register_sort(GpuKernelRegistry&);           // TopK
void register_matmul(GpuKernelRegistry&);         // MatMul, Gemm, MatMulInteger, QLinearMatMul, MatMulIntegerToFloat, Det, Einsum;
                                                  // the fused MatMul
void register_attention(GpuKernelRegistry&);      // the fused attention (Softmax(e(Q K)) V)
void register_normalization(GpuKernelRegistry&);  // LayerNormalization, BatchNormalization, InstanceNormalization,
                                                  // GroupNormalization, LpNormalization,
                                                  // RMSNormalization, SimplifiedLayerNormalization; com.microsoft
                                                  // SkipLayerNormalization, SkipSimplifiedLayerNormalization
void register_conv(GpuKernelRegistry&);           // Conv, ConvInteger, QLinearConv, ConvTranspose, Col2Im, DeformConv
void register_pool(GpuKernelRegistry&);           // AveragePool, QLinearAveragePool, MaxPool, GlobalAveragePool, GlobalMaxPool, LRN, RoiAlign
void register_resize(GpuKernelRegistry&);         // Resize
void register_loss(GpuKernelRegistry&);           // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void register_bias_activation(GpuKernelRegistry&);  // com.microsoft FastGelu, BiasGelu, Gelu, QuickGelu, BiasAdd
void register_rotary(GpuKernelRegistry&);         // RotaryEmbedding (opset 23) and com.microsoft RotaryEmbedding
void register_block_quant(GpuKernelRegistry&);    // com.microsoft MatMulNBits, GatherBlockQuantized
void register_quantize(GpuKernelRegistry&);       // QuantizeLinear, DequantizeLinear
void register_attention_ops(GpuKernelRegistry&);  // com.microsoft GroupQueryAttention
void register_grid(GpuKernelRegistry&);           // GridSample, AffineGrid
void register_qlinear(GpuKernelRegistry&);         // com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
                                                  // QLinearGlobalAveragePool, QLinearConcat, QGemm, QLinearSoftmax (QLinearAveragePool: register_pool)
void register_spectral(GpuKernelRegistry&);       // DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix
void register_rnn(GpuKernelRegistry&);            // RNN, GRU, LSTM
void register_linear_attention(GpuKernelRegistry&);  // LinearAttention, CausalConvWithState

// Workgroup counts for `threads` invocations of `workgroup_size`, within the device's per-dimension limit.
void grid_for(uint64_t threads, uint32_t workgroup_size, const Limits& limits, uint32_t& x, uint32_t& y);

}  // namespace onnxgpu::webgpu
