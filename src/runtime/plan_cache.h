// The signature cache: the recorded plans of a session, by input signature (each input's name, dtype
// and shape), most recently used first. A plan whose kernels read some input's values at plan time
// (value keys) serves only runs with those values.
#pragma once
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "onnxgpu/session.h"
#include "runtime/plan.h"

namespace onnxgpu::runtime {

std::string signature_of(const std::unordered_map<std::string, Tensor>& feeds,
                         const std::unordered_map<std::string, DeviceTensor>& device_feeds);

class PlanCache {
 public:
  static constexpr size_t kMaxPlans = 8;  // signatures kept recorded

  // The plan that serves this run, moved to the front; null when none does.
  std::shared_ptr<Plan> find(const std::string& signature, const std::unordered_map<std::string, Tensor>& feeds);
  // Keeps a new plan at the front; the least recently used goes beyond kMaxPlans.
  void add(const std::string& signature, std::shared_ptr<Plan> plan);
  // Forgets a plan that no longer fits its signature's runs.
  void drop(const Plan* plan);
  void clear() { plans_.clear(); }

 private:
  std::list<std::pair<std::string, std::shared_ptr<Plan>>> plans_;
};

}  // namespace onnxgpu::runtime
