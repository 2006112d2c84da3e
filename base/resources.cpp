#include "base/resources.hpp"

#include <sys/resource.h>

namespace dt::resources {

std::uint64_t peak_rss_bytes() noexcept {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss < 0) return 0;
  // Linux reports kibibytes (macOS would report bytes; it is not a target).
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace dt::resources
