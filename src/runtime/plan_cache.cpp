#include "runtime/plan_cache.h"

#include <map>

namespace onnxgpu::runtime {

namespace {
// "name:what" for every input, by name; `what` says what of a host or a GPU input the key holds.
template <typename Host, typename Gpu>
std::string inputs_key(const std::unordered_map<std::string, Tensor>& feeds,
                       const std::unordered_map<std::string, DeviceTensor>& device_feeds, Host host, Gpu gpu) {
  std::map<std::string, std::string> sorted;
  for (const auto& [n, t] : feeds) sorted[n] = host(t);
  for (const auto& [n, t] : device_feeds) sorted[n] = gpu(t);
  std::string s;
  for (const auto& [n, d] : sorted) s += (s.empty() ? "" : " ") + n + ":" + d;
  return s;
}
}  // namespace

std::string signature_of(const std::unordered_map<std::string, Tensor>& feeds,
                         const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  // A GPU input is its own signature: a plan made with that input on the host keeps no KV cache resident
  // for it (runtime/resident.h), so a past that moves to the GPU at the second step (same shape: a static
  // buffer) gets the plan that writes in place rather than the first step's, which copies.
  return inputs_key(feeds, device_feeds, [](const Tensor& t) { return t.describe(); },
                    [](const DeviceTensor& t) { return std::string(dtype_name(t.dtype())) + shape_str(t.shape()) + "@gpu"; });
}

std::string family_of(const std::unordered_map<std::string, Tensor>& feeds,
                      const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  auto rank = [](DType dtype, const Shape& shape) {
    return std::string(dtype_name(dtype)) + " rank " + std::to_string(shape.size());
  };
  return inputs_key(feeds, device_feeds, [&](const Tensor& t) { return rank(t.dtype(), t.shape()); },
                    [&](const DeviceTensor& t) { return rank(t.dtype(), t.shape()) + " on the GPU"; });
}

std::shared_ptr<Plan> PlanCache::find(const std::string& signature,
                                      const std::unordered_map<std::string, Tensor>& feeds) {
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    if ((*it)->report.signature != signature || !(*it)->serves(feeds)) continue;
    plans_.splice(plans_.begin(), plans_, it);
    return plans_.front();
  }
  return nullptr;
}

std::vector<std::shared_ptr<Plan>> PlanCache::family(const std::string& family,
                                                     const std::unordered_map<std::string, Tensor>& feeds) const {
  std::vector<std::shared_ptr<Plan>> out;
  for (const auto& p : plans_)
    if (p->family == family && p->serves(feeds)) out.push_back(p);
  return out;
}

void PlanCache::touch(const Plan* plan) {
  for (auto it = plans_.begin(); it != plans_.end(); ++it)
    if (it->get() == plan) {
      plans_.splice(plans_.begin(), plans_, it);
      return;
    }
}

void PlanCache::add(std::shared_ptr<Plan> plan) {
  plans_.push_front(std::move(plan));
  if (plans_.size() > kMaxPlans) plans_.pop_back();
}

void PlanCache::drop(const Plan* plan) {
  plans_.remove_if([&](const auto& p) { return p.get() == plan; });
}

}  // namespace onnxgpu::runtime
