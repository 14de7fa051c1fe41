#include "cpu/kernel.h"

#include <mutex>
#include <string_view>

#include "ops/axis.h"

namespace onnxgpu::cpu {

const Tensor& KernelContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but was not given");
  return *inputs_[i];
}

void KernelContext::fail(const std::string& msg) const { throw InvalidArgument(node.describe() + ": " + msg); }

void KernelContext::unsupported(const std::string& msg) const {
  throw NotImplemented(node.describe() + ": " + msg);
}

int64_t KernelContext::normalize_axis(int64_t axis, int64_t rank) const {
  return ops::normalize_axis(axis, rank, [&](const std::string& m) { fail(m); });
}

void KernelRegistry::add(const std::string& op_type, Kernel k, const std::string& domain) {
  kernels_[domain][op_type] = std::move(k);
}

const Kernel* KernelRegistry::find(const std::string& op_type, const std::string& domain) const {
  auto d = kernels_.find(domain == "ai.onnx" ? std::string_view() : std::string_view(domain));
  if (d == kernels_.end()) return nullptr;
  auto it = d->second.find(op_type);
  return it == d->second.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::op_types() const {
  std::vector<std::string> r;
  for (const auto& [domain, ops] : kernels_)
    for (const auto& [op, k] : ops) r.push_back(domain.empty() ? op : domain + "." + op);
  return r;
}

const KernelRegistry& registry() {
  static const KernelRegistry reg = [] {
    KernelRegistry r;
    register_unary(r);
    register_binary(r);
    register_cast(r);
    register_reduce(r);
    register_softmax(r);
    register_sort(r);
    register_cumsum(r);
    register_shape_ops(r);
    register_layout(r);
    register_generators(r);
    register_indexing(r);
    register_matmul(r);
    register_conv(r);
    register_pool(r);
    register_normalization(r);
    register_resize(r);
    register_rnn(r);
    register_loss(r);
    register_quantize(r);
    register_detection(r);
    register_control_flow(r);
    register_bias_activation(r);
    register_rotary(r);
    register_block_quant(r);
    register_attention(r);
    register_grid(r);
    register_spectral(r);
    register_qlinear(r);
    register_text(r);
    register_ml(r);
    register_linear_attention(r);
    return r;
  }();
  return reg;
}

}  // namespace onnxgpu::cpu
