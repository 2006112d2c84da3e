#include "base/resources.hpp"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <thread>

namespace dt::resources {

std::uint64_t peak_rss_bytes() noexcept {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss < 0) return 0;
  // Linux reports kibibytes (macOS would report bytes; it is not a target).
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

int usable_cores() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace dt::resources
