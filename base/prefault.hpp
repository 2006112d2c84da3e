#pragma once
// A fresh buffer's pages faulted in beside the code that fills it.

#include <atomic>
#include <cstddef>
#include <thread>

namespace dt::memory {

// Faults in the pages of a fresh buffer [data, data + bytes) on a thread of its own, front to
// back, while the caller fills it (a shard's rows as a CSV is parsed into them): the kernel
// zeroes each fresh page at its first touch, which cost a worker a third of its load's CPU time
// (clear_page under the parse), and this moves that to the other core when one is free. The
// kernel populates (MADV_POPULATE_WRITE) without changing what a page holds, so the caller may
// write anywhere meanwhile; 2 MiB a call, so the caller's own mmap and munmap (a CSV's windows)
// never wait long on the address space's lock. The same CPU time, spent beside the caller
// instead of in it. A no-op for buffers under `min_bytes` and where the kernel offers no
// MADV_POPULATE_WRITE (before Linux 5.14); never fails. The destructor stops the thread and
// joins it: the buffer must outlive this object.
class Prefaulter {
 public:
  static constexpr std::size_t kMinBytes = std::size_t{64} << 20;
  Prefaulter(void* data, std::size_t bytes, std::size_t min_bytes = kMinBytes);
  ~Prefaulter();
  Prefaulter(const Prefaulter&) = delete;
  Prefaulter& operator=(const Prefaulter&) = delete;

 private:
  void populate(void* data, std::size_t bytes);  // the thread: 2 MiB a call until done or stopped
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace dt::memory
