// Refreshing ahead. A decode loop's runs grow in steps (the past by one position a run), so while the
// GPU runs step k the host can already re-derive the plan for step k+1's sizes (refresh.h) and encode
// its commands (replay.h, encoding ahead): step k+1 then finds a plan serving its signature and only
// writes its inputs and submits. The refresh's decisions (Refresh::decide, host work alone) are made
// on a worker thread while step k's commands are submitted; they are applied to the plan (and the
// GPU) and the commands encoded while the host waits for step k's results.
// The next sizes are predicted from the plan's last runs: when the last two runs each changed the
// inputs' dims by the same amounts, the next is expected to change them by those amounts again. A
// wrong guess costs the next run what it would have cost anyway: the plan is refreshed again, from
// the guessed sizes to those that came.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onnxgpu/session.h"

namespace onnxgpu::runtime {

// The input sizes of a plan's last runs, and what they suggest of the next run's.
class SizeTrend {
 public:
  using Sizes = std::vector<std::pair<std::string, Shape>>;  // each input's shape, by name (sorted)

  void observe(const std::unordered_map<std::string, Tensor>& feeds,
               const std::unordered_map<std::string, DeviceTensor>& device_feeds);
  enum class Next {
    Unknown,  // no two equal steps (yet)
    Same,     // the last two runs had the same sizes
    Grows,    // the last two runs changed them by the same amounts: `next` has the sizes that follow
  };
  Next predict(Sizes& next) const;

 private:
  std::deque<Sizes> last_;  // the last three runs' sizes, the newest at the back
};

// Feeds of the predicted sizes for a refresh (which reads sizes, and the values of value-keyed inputs
// only): host inputs as zeros, but those named in `keep` (value-keyed: the plan serves only their
// values, which the trend keeps unchanged) as this run's; GPU inputs as this run's tensors with the
// new shapes. False when the prediction changes the size of a kept input.
bool predicted_feeds(const SizeTrend::Sizes& next, const std::unordered_map<std::string, Tensor>& feeds,
                     const std::unordered_map<std::string, DeviceTensor>& device_feeds,
                     const std::vector<std::string>& keep, std::unordered_map<std::string, Tensor>& host_out,
                     std::unordered_map<std::string, DeviceTensor>& device_out);

// A thread that runs one task at a time beside its caller.
class HostWorker {
 public:
  HostWorker() = default;
  HostWorker(const HostWorker&) = delete;
  HostWorker& operator=(const HostWorker&) = delete;
  ~HostWorker();
  void start(std::function<void()> task);  // after the last task's wait()
  void wait();                             // until the task has run; rethrows what it threw

 private:
  void loop();
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> task_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
};

// $ONNXGPU_REFRESH_AHEAD=0 turns refreshing ahead off (for measuring what it buys).
bool refreshing_ahead();

}  // namespace onnxgpu::runtime
