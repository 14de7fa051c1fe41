#include "runtime/plan_cache.h"

#include <map>

namespace onnxgpu::runtime {

std::string signature_of(const std::unordered_map<std::string, Tensor>& feeds,
                         const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  std::map<std::string, std::string> sorted;
  for (const auto& [n, t] : feeds) sorted[n] = t.describe();
  for (const auto& [n, t] : device_feeds) sorted[n] = std::string(dtype_name(t.dtype())) + shape_str(t.shape());
  std::string s;
  for (const auto& [n, d] : sorted) s += (s.empty() ? "" : " ") + n + ":" + d;
  return s;
}

std::shared_ptr<Plan> PlanCache::find(const std::string& signature,
                                      const std::unordered_map<std::string, Tensor>& feeds) {
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    if ((*it)->signature != signature || !(*it)->serves(feeds)) continue;
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
