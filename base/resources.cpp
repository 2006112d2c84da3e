#include "base/resources.hpp"

#include "base/error.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>
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

namespace {

std::string mib(std::uint64_t bytes) { return fmt::format("{} MiB", bytes >> 20); }

std::uint64_t fd_limit() noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  return limit.rlim_cur;
}

std::string memory_advice() {
  const std::uint64_t limit = address_space_limit();
  if (limit == 0) return "the machine has no memory left for it: train on more workers or less data";
  return fmt::format("the address-space limit, ulimit -v, is {}: raise it, or train on more "
                     "workers or less data",
                     mib(limit));
}

}  // namespace

std::uint64_t address_space_limit() noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return limit.rlim_cur;
}

std::string describe_exhaustion(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return fmt::format("out of memory ({})", memory_advice());
  }
  const auto* system = dynamic_cast<const std::system_error*>(&e);
  if (system == nullptr) return {};
  const auto& category = system->code().category();
  if (category != std::generic_category() && category != std::system_category()) return {};
  switch (system->code().value()) {
    case EAGAIN:  // what std::thread says when no thread can be made
      return fmt::format("cannot start a thread: out of memory or of threads ({}; or the limit "
                         "on processes, ulimit -u)",
                         memory_advice());
    case ENOMEM: return fmt::format("out of memory ({})", memory_advice());
    case EMFILE:
    case ENFILE: return fmt::format("{}{}", system->what(), fd_limit_advice(std::strerror(EMFILE)));
    default: return {};
  }
}

std::string fd_limit_advice(std::string_view message) {
  if (message.find(std::strerror(EMFILE)) == std::string_view::npos &&
      message.find(std::strerror(ENFILE)) == std::string_view::npos) {
    return {};
  }
  return fmt::format("; raise the limit on open files (ulimit -n, now {}) or run fewer workers "
                     "on this host",
                     fd_limit());
}

std::uint64_t raise_fd_limit() noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
  }
  return fd_limit();
}

void require_fds(std::uint64_t need, std::string_view what) {
  const std::uint64_t limit = raise_fd_limit();
  if (limit == 0 || limit >= need) return;
  fail<IoError>("too many open files ahead: {} needs about {} open files and this process may "
                "open {} (ulimit -n); raise the limit (ulimit -n {}) or run fewer workers on this "
                "host",
                what, need, limit, need);
}

bool can_map(std::size_t bytes) noexcept {
  void* p = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  ::munmap(p, bytes);
  return true;
}

std::size_t thread_stack_bytes() noexcept {
  pthread_attr_t attr;
  std::size_t size = 8 << 20;
  if (::pthread_getattr_default_np(&attr) == 0) {
    (void)::pthread_attr_getstacksize(&attr, &size);
    ::pthread_attr_destroy(&attr);
  }
  return size;
}

}  // namespace dt::resources
