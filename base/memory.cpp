#include "base/memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace dt::memory {

void advise_huge_pages(void* data, std::size_t bytes) noexcept {
#if defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + bytes) & ~(kHuge - 1);
  if (data == nullptr || last <= first) return;
  // The buffer may be heap memory that an earlier buffer touched (glibc serves requests of
  // up to 32 MB from the heap once a buffer that large was freed), whose 4 KiB pages stay in
  // place under MADV_HUGEPAGE: one of the twelve 16 MB vectors of two servers and their copies
  // at 2^22 keys had no huge page. Its content is not read (the contract: before the first
  // write), so dropping those pages lets the first writes fault 2 MiB pages.
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace dt::memory
