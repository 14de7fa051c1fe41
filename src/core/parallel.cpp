#include "core/parallel.h"

#include <algorithm>
#include <system_error>
#include <thread>
#include <vector>

namespace onnxgpu {

size_t copy_parts(size_t n) {
  constexpr size_t kPerPart = size_t(4) << 20;
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  return std::max<size_t>(1, std::min<size_t>({n / kPerPart, hw, 8}));
}

void run_parts(size_t parts, const std::function<void(size_t)>& part) {
  std::vector<std::thread> helpers;
  for (size_t p = 1; p < parts; ++p) {
    try {
      helpers.emplace_back(part, p);
    } catch (const std::system_error&) {
      part(p);
    }
  }
  if (parts > 0) part(0);
  for (auto& t : helpers) t.join();
}

}  // namespace onnxgpu
