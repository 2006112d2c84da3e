#pragma once
// Hints to the kernel about large, long-lived buffers.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dt::memory {

// Asks for transparent huge pages on [data, data + bytes) (the 2 MiB-aligned part of it), before
// the buffer is first written: a shard that training reads in shuffled order then costs one
// TLB entry per 2 MiB instead of per 4 KiB, which made random rows about twice as fast to
// reach, and first-touch faults come 2 MiB at a time (far less kernel time, most of all in a
// virtual machine). A no-op where the kernel offers none (THP "never", other systems) or the buffer is
// small; never fails. It drops the pages the range has already (MADV_DONTNEED: reused heap
// memory keeps its 4 KiB pages otherwise), so whatever the buffer held is lost.
void advise_huge_pages(void* data, std::size_t bytes) noexcept;

// `out` = `count` copies of `value` in a fresh buffer given huge pages before it is written: a
// wide model's weights and optimizer state, which a sparse step reaches at random keys (at 2^24
// keys, 128 MB a vector: a TLB miss and, the first time, a page fault per key otherwise).
// An empty vector with room for `count` elements, allocated and advised for huge pages but not
// yet written: what the helpers below fill.
template <class T>
[[nodiscard]] std::vector<T> reserved_huge(std::size_t count) {
  std::vector<T> fresh;
  fresh.reserve(count);
  advise_huge_pages(fresh.data(), count * sizeof(T));
  return fresh;
}

template <class T>
void assign_huge(std::vector<T>& out, std::size_t count, const T& value) {
  std::vector<T> fresh = reserved_huge<T>(count);
  fresh.assign(count, value);
  out = std::move(fresh);
}

// Room for `count` elements in `v`, when it has less, in a fresh buffer on huge pages (its
// elements moved there): a large array filled by appends and later read at random places (a
// sparse shard's rows, fetched a shuffled batch at a time: a TLB miss a row on 4 KiB pages).
template <class T>
void reserve_huge(std::vector<T>& v, std::size_t count) {
  if (count <= v.capacity()) return;
  std::vector<T> fresh = reserved_huge<T>(count);
  fresh.insert(fresh.end(), v.begin(), v.end());
  v = std::move(fresh);
}

// `to` = `from`, in `to`'s buffer when it has the size already, else in a fresh one on huge
// pages (assign_huge): a copy of a wide model's state that is later written at random keys.
template <class T>
void copy_huge(std::vector<T>& to, const std::vector<T>& from) {
  if (to.size() == from.size()) {
    std::copy(from.begin(), from.end(), to.begin());
    return;
  }
  std::vector<T> fresh = reserved_huge<T>(from.size());  // written once, by the copy
  fresh.assign(from.begin(), from.end());
  to = std::move(fresh);
}

// Asks for every cache line of the `bytes` bytes at `first` (into L2: prefetch hint 1), whether
// or not they start on a line: data read soon from anywhere in a large buffer (a shuffled
// batch's rows), beyond the hardware prefetcher's sight. A hint: nothing is read, no result
// changes, and an address no longer mapped is no error.
//
// Every function whose only effect is prefetching is always inlined (DT_PREFETCH below): GCC
// sees no side effect in __builtin_prefetch, so it finds such a function "pure" and deletes
// every call to it that it did not inline first. Compaction's row prefetch (sparse_batch.cpp)
// was a plain static function and never ran: GCC 12 -O2 and -O3 left no prefetch in compact().
#define DT_PREFETCH [[gnu::always_inline]] inline
DT_PREFETCH void prefetch_lines(const void* first, std::size_t bytes) noexcept {
  constexpr std::uintptr_t kLine = 64;
  const auto start = reinterpret_cast<std::uintptr_t>(first);
  for (std::uintptr_t a = start & ~(kLine - 1); a < start + bytes; a += kLine) {
    __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 1);
  }
}

}  // namespace dt::memory
