#include "runtime/refresh_ahead.h"

#include <algorithm>
#include <cstdlib>

namespace onnxgpu::runtime {

void SizeTrend::observe(const std::unordered_map<std::string, Tensor>& feeds,
                        const std::unordered_map<std::string, DeviceTensor>& device_feeds) {
  Sizes now;
  now.reserve(feeds.size() + device_feeds.size());
  for (const auto& [name, t] : feeds) now.emplace_back(name, t.shape());
  for (const auto& [name, t] : device_feeds) now.emplace_back(name, t.shape());
  std::sort(now.begin(), now.end());
  last_.push_back(std::move(now));
  if (last_.size() > 3) last_.pop_front();
}

SizeTrend::Next SizeTrend::predict(Sizes& next) const {
  if (last_.size() < 2) return Next::Unknown;
  const Sizes &b = last_[last_.size() - 2], &c = last_.back();
  if (b == c) return Next::Same;
  if (last_.size() < 3) return Next::Unknown;
  const Sizes& a = last_.front();
  if (a.size() != c.size() || b.size() != c.size()) return Next::Unknown;
  next = c;
  for (size_t i = 0; i < c.size(); ++i) {
    const Shape &sa = a[i].second, &sb = b[i].second, &sc = c[i].second;
    if (a[i].first != c[i].first || b[i].first != c[i].first || sa.size() != sc.size() || sb.size() != sc.size())
      return Next::Unknown;
    for (size_t d = 0; d < sc.size(); ++d) {
      const int64_t step = sc[d] - sb[d];
      if (sb[d] - sa[d] != step || sc[d] + step < 0) return Next::Unknown;
      next[i].second[d] = sc[d] + step;
    }
  }
  return Next::Grows;
}

bool predicted_feeds(const SizeTrend::Sizes& next, const std::unordered_map<std::string, Tensor>& feeds,
                     const std::unordered_map<std::string, DeviceTensor>& device_feeds,
                     const std::vector<std::string>& keep, std::unordered_map<std::string, Tensor>& host_out,
                     std::unordered_map<std::string, DeviceTensor>& device_out) {
  for (const auto& [name, shape] : next) {
    if (auto h = feeds.find(name); h != feeds.end()) {
      if (std::find(keep.begin(), keep.end(), name) != keep.end()) {
        if (h->second.shape() != shape) return false;
        host_out.emplace(name, h->second);
      } else {
        if (h->second.dtype() == DType::String) return false;
        host_out.emplace(name, Tensor(h->second.dtype(), shape));
      }
    } else if (auto d = device_feeds.find(name); d != device_feeds.end()) {
      device_out.emplace(name, DeviceTensor(d->second.dtype(), shape, d->second.storage()));
    } else {
      return false;
    }
  }
  return true;
}

bool refreshing_ahead() {
  static const bool on = [] {
    const char* e = std::getenv("ONNXGPU_REFRESH_AHEAD");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

}  // namespace onnxgpu::runtime
