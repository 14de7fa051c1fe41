#include "runtime/refresh_ahead.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "core/switches.h"

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

HostWorker::~HostWorker() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HostWorker::start(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = std::move(task);
    busy_ = true;
    error_ = nullptr;
  }
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  cv_.notify_all();
}

void HostWorker::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return !busy_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void HostWorker::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || (busy_ && task_); });
    if (stop_) return;
    std::function<void()> task = std::move(task_);
    task_ = nullptr;
    lock.unlock();
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    busy_ = false;
    cv_.notify_all();
  }
}

bool refreshing_ahead() {
  static const bool on = switched_on("ONNXGPU_REFRESH_AHEAD");
  return on;
}

}  // namespace onnxgpu::runtime
