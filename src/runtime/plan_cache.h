// The plan cache: the recorded plans of a session, most recently used first. Each serves one input
// signature (each input's name, dtype and shape) now, and can be refreshed for the other signatures
// of its family (names, dtypes and ranks: planner.h). A family may hold several plans, one per set
// of guards (kernel choices that depend on sizes). A plan whose kernels read some input's values at
// plan time (value keys) serves only runs with those values.
#pragma once
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onnxgpu/session.h"
#include "runtime/plan.h"

namespace onnxgpu::runtime {

// A run's input signature: each input's name, dtype and shape.
std::string signature_of(const std::unordered_map<std::string, Tensor>& feeds,
                         const std::unordered_map<std::string, DeviceTensor>& device_feeds);
// Its family: names, dtypes and ranks, and which inputs are on the GPU. A plan can be refreshed for
// any signature of its family (refresh.h).
std::string family_of(const std::unordered_map<std::string, Tensor>& feeds,
                      const std::unordered_map<std::string, DeviceTensor>& device_feeds);

class PlanCache {
 public:
  static constexpr size_t kMaxPlans = 8;  // signatures kept recorded

  // The plan that serves this signature now, moved to the front; null when none does.
  std::shared_ptr<Plan> find(const std::string& signature, const std::unordered_map<std::string, Tensor>& feeds);
  // The plans of this family that serve these values, most recently used first.
  std::vector<std::shared_ptr<Plan>> family(const std::string& family, const std::unordered_map<std::string, Tensor>& feeds) const;
  void touch(const Plan* plan);  // moves a plan to the front
  // Keeps a new plan at the front; the least recently used goes beyond kMaxPlans.
  void add(std::shared_ptr<Plan> plan);
  // Forgets a plan that no longer fits its signature's runs.
  void drop(const Plan* plan);
  void clear() { plans_.clear(); }

 private:
  std::list<std::shared_ptr<Plan>> plans_;
};

}  // namespace onnxgpu::runtime
