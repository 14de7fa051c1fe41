#include "webgpu/kernels/kernel.h"

#include <cstdlib>
#include <cstring>

#include "core/switches.h"
#include "ops/axis.h"
#include "webgpu/device.h"

namespace onnxgpu::webgpu {

GpuKernelContext::GpuKernelContext(const ir::Node& node, int64_t opset, const Int64Policy& policy, const Limits& limits,
                                   std::vector<GpuValueInfo> inputs)
    : node(node), opset(opset), policy(policy), limits(limits), inputs_(std::move(inputs)) {
  outputs.resize(node.outputs.size());
}

const GpuValueInfo& GpuKernelContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but was not given");
  return inputs_[i];
}

const Tensor& GpuKernelContext::constant(size_t i, const char* what) {
  const GpuValueInfo& v = input(i);
  if (v.constant) {
    constants_read.push_back(i);
    return *v.constant;
  }
  if (v.runtime_value) {
    value_keyed_inputs.push_back(i);
    return *v.runtime_value;
  }
  unsupported(std::string("input '") + what + "' is not known before the run (not a constant)");
}

void GpuKernelContext::set_output(size_t i, DType dtype, Shape shape) {
  if (i >= outputs.size()) fail("kernel set output " + std::to_string(i) + " of a node with fewer outputs");
  outputs[i] = OutputSpec{dtype, std::move(shape), -1, true};
}

void GpuKernelContext::alias_output(size_t i, size_t in, Shape shape) {
  if (shape_numel(shape) != shape_numel(input(in).shape)) fail("view of a different element count");
  set_output(i, input(in).dtype, std::move(shape));
  outputs[i].alias_of = int(in);
}

ValueRef GpuKernelContext::temp(DType dtype, Shape shape) {
  temps.push_back({dtype, std::move(shape)});
  return {ValueRef::Kind::Temp, int(temps.size() - 1)};
}

void grid_for(uint64_t threads, uint32_t workgroup_size, const Limits& limits, uint32_t& x, uint32_t& y) {
  uint64_t groups = (threads + workgroup_size - 1) / workgroup_size;
  uint64_t max_dim = limits.max_compute_workgroups_per_dimension ? limits.max_compute_workgroups_per_dimension : 65535;
  if (groups == 0) groups = 1;
  x = uint32_t(std::min<uint64_t>(groups, max_dim));
  y = uint32_t((groups + x - 1) / x);
  if (y > max_dim) throw NotImplemented("dispatch of " + std::to_string(threads) + " invocations exceeds the device's grid");
}

namespace {
// $ONNXGPU_CHECK_WGSL_KEYS=1 (the tests set it): a program matched by key builds its WGSL all the same,
// and dispatch() fails loudly where it differs from the recorded one's (a key that misses a choice).
bool checking_keys() {
  static const bool on = [] {
    const char* e = std::getenv("ONNXGPU_CHECK_WGSL_KEYS");
    return e && std::string(e) == "1";
  }();
  return on;
}
}  // namespace

bool GpuKernelContext::needs_wgsl(shader::Program& p, std::string key) const {
  static const bool reuse = switched_on("ONNXGPU_REUSE_WGSL");  // =0: every call builds its WGSL (measuring)
  static const std::vector<const shader::Program*> none;
  p.keyed(std::move(key), reuse ? recorded : none, checking_keys());
  return p.builds_text();
}

void GpuKernelContext::dispatch(const shader::Program& p, std::vector<ValueRef> bindings, uint32_t x, uint32_t y,
                                uint32_t z) {
  if (bindings.size() != p.tensors().size())
    fail("program " + p.name() + " declares " + std::to_string(p.tensors().size()) + " tensors, dispatch binds " +
         std::to_string(bindings.size()));
  if (std::string why = p.refused_value_use(); !why.empty()) unsupported(why);
  if (const shader::Program* r = p.checked_against(); r && !p.same_text(*r))
    throw Error(node.describe() + ": program " + p.name() + " of key '" + p.key() +
                "' builds another WGSL than the recorded one of that key (the key misses a choice)");
  DispatchSpec d{p, {}, {}};
  d.program.forget_check();
  d.uniforms = p.uniform_data();
  d.bindings = std::move(bindings);
  if (x == 0) {
    if (p.threads() == 0) return;  // nothing to do (empty tensor)
    grid_for(p.threads(), p.workgroup_size(), limits, d.x, d.y);
    d.z = 1;
  } else {
    d.x = x;
    d.y = y;
    d.z = z;
  }
  dispatches.push_back(std::move(d));
}

void GpuKernelContext::unsupported(const std::string& reason) const { throw GpuUnsupported(reason); }

void GpuKernelContext::fail(const std::string& msg) const { throw InvalidArgument(node.describe() + ": " + msg); }

int64_t GpuKernelContext::normalize_axis(int64_t axis, int64_t rank) const {
  return ops::normalize_axis(axis, rank, [&](const std::string& m) { fail(m); });
}

void GpuKernelRegistry::add(const std::string& op_type, GpuKernel k, const std::string& domain) {
  kernels_[domain == "ai.onnx" ? std::string() : domain][op_type] = std::move(k);
}

void GpuKernelRegistry::add_fused(const std::string& op_type, GpuKernel k) { fused_[op_type] = std::move(k); }

const GpuKernel* GpuKernelRegistry::find(const std::string& op_type, const std::string& domain) const {
  const std::map<std::string, GpuKernel>* table = &fused_;
  if (domain != kFusedDomain) {
    auto d = kernels_.find(domain == "ai.onnx" ? std::string() : domain);
    if (d == kernels_.end()) return nullptr;
    table = &d->second;
  }
  auto it = table->find(op_type);
  return it == table->end() ? nullptr : &it->second;
}

std::vector<std::string> GpuKernelRegistry::op_types() const {
  std::vector<std::string> r;
  for (const auto& [domain, ops] : kernels_)
    for (const auto& [op, k] : ops) r.push_back(domain.empty() ? op : domain + "." + op);
  return r;
}

const GpuKernelRegistry& gpu_registry() {
  static const GpuKernelRegistry reg = [] {
    GpuKernelRegistry r;
    register_elementwise(r);
    register_views(r);
    register_layout(r);
    register_indexing(r);
    register_generators(r);
    register_reduce(r);
    register_softmax(r);
    register_sort(r);
    register_matmul(r);
    register_attention(r);
    register_normalization(r);
    register_conv(r);
    register_pool(r);
    register_resize(r);
    register_loss(r);
    register_bias_activation(r);
    register_rotary(r);
    register_block_quant(r);
    register_quantize(r);
    register_attention_ops(r);
    register_grid(r);
    register_spectral(r);
    register_qlinear(r);
    register_rnn(r);
    register_linear_attention(r);
    return r;
  }();
  return reg;
}

std::string requantized_store(DType t, const std::string& v, const std::string& zero, const std::string& at) {
  const bool s8 = t == DType::Int8;
  return "  let q = clamp(round(" + v + ") + f32(" + zero + "), " + (s8 ? "-128.0, 127.0" : "0.0, 255.0") + ");\n" +
         "  y_store(" + at + ", " + (s8 ? "i32(q)" : "u32(q)") + ");";
}

QuantParam QuantParam::of(const GpuKernelContext& ctx, size_t i) {
  return {ctx.is_constant(i) && shape_numel(ctx.shape(i)) == 1};
}

std::string QuantParam::bind(GpuKernelContext& ctx, shader::Program& p, std::vector<ValueRef>& binds, const std::string& name,
                             size_t i, const std::string& index, bool as_f32) const {
  if (uniform) {
    const double v = ctx.constant(i, name.c_str()).double_at(0);
    if (as_f32)
      p.uniform_f32(name, float(v));
    else
      p.uniform_i32(name, int32_t(v));
    return name + "()";
  }
  p.input(name, ctx.dtype(i), ctx.shape(i));
  binds.push_back(ctx.in(i));
  const std::string load = name + "_load(select(0u, " + index + ", " + name + "_numel() > 1u))";
  return as_f32 ? "to_f32_$" + name + "(" + load + ")" : "i32(" + load + ")";
}

std::string f32_lit(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u) return (bits & 0x007fffffu) ? "f32_nan()" : (bits >> 31 ? "-f32_inf()" : "f32_inf()");
  return "bitcast<f32>(" + std::to_string(bits) + "u)";
}

}  // namespace onnxgpu::webgpu
