#include "base/prefault.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <system_error>

namespace dt::memory {

Prefaulter::Prefaulter(void* data, std::size_t bytes, std::size_t min_bytes) {
#if defined(__linux__)
  if (data == nullptr || bytes < min_bytes) return;
  try {
    thread_ = std::thread([this, data, bytes] { populate(data, bytes); });
  } catch (const std::system_error&) {
    // No thread to be had: the caller's own writes fault the pages in, as without this.
  }
#else
  (void)data;
  (void)bytes;
  (void)min_bytes;
#endif
}

void Prefaulter::populate(void* data, std::size_t bytes) {
#if defined(__linux__)
  constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14), if the headers lack it
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t step = std::max(std::uintptr_t{2} << 20, page);
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t end = (begin + bytes) & ~(page - 1);
  // Whole pages only: the partial pages at either end may be shared with other memory.
  for (std::uintptr_t a = (begin + page - 1) & ~(page - 1); a < end;) {
    if (stop_.load(std::memory_order_relaxed)) return;
    const std::uintptr_t next = std::min((a + step) & ~(step - 1), end);
    if (::madvise(reinterpret_cast<void*>(a), next - a, kPopulateWrite) != 0) return;
    a = next;
  }
#else
  (void)data;
  (void)bytes;
#endif
}

Prefaulter::~Prefaulter() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

}  // namespace dt::memory
