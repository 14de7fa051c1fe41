#include "runtime/plan_cache.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace onnxgpu::runtime {

namespace {
// "name:what" for every input, by name; `what(out, dtype, shape, on_gpu)` appends what of an input the
// key holds. Built in one string (a decode step computes it every run, before its first submit).
template <typename What>
std::string inputs_key(const std::unordered_map<std::string, Tensor>& feeds,
                       const std::unordered_map<std::string, DeviceTensor>& device_feeds, What what) {
  struct Input {
    const std::string* name;
    const Tensor* host;
    const DeviceTensor* gpu;
  };
  std::vector<Input> inputs;
  inputs.reserve(feeds.size() + device_feeds.size());
  for (const auto& [n, t] : feeds) inputs.push_back({&n, &t, nullptr});
  for (const auto& [n, t] : device_feeds) inputs.push_back({&n, nullptr, &t});
  std::sort(inputs.begin(), inputs.end(), [](const Input& a, const Input& b) { return *a.name < *b.name; });
  std::string s;
  s.reserve(inputs.size() * 48);
  for (const Input& in : inputs) {
    if (!s.empty()) s += ' ';
    s += *in.name;
    s += ':';
    if (in.host && !in.host->defined()) s += "<none>";
    else if (in.host) what(s, in.host->dtype(), in.host->shape(), false);
    else what(s, in.gpu->dtype(), in.gpu->shape(), true);
  }
  return s;
}

void append_int(std::string& s, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, end);
}
}  // namespace

std::string signature_of(const std::unordered_map<std::string, Tensor>& feeds,
                         const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  // A GPU input is its own signature: a plan made with that input on the host keeps no KV cache resident
  // for it (runtime/resident.h), so a past that moves to the GPU at the second step (same shape: a static
  // buffer) gets the plan that writes in place rather than the first step's, which copies.
  return inputs_key(feeds, device_feeds, [](std::string& s, DType dtype, const Shape& shape, bool on_gpu) {
    s += dtype_name(dtype);  // dtype and shape as Tensor::describe() writes them
    s += '[';
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i) s += ',';
      append_int(s, shape[i]);
    }
    s += ']';
    if (on_gpu) s += "@gpu";
  });
}

std::string family_of(const std::unordered_map<std::string, Tensor>& feeds,
                      const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  return inputs_key(feeds, device_feeds, [](std::string& s, DType dtype, const Shape& shape, bool on_gpu) {
    s += dtype_name(dtype);
    s += " rank ";
    append_int(s, int64_t(shape.size()));
    if (on_gpu) s += " on the GPU";
  });
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
