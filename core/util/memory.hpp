#pragma once
// Hints to the kernel about large buffers.

#include <cstddef>

namespace dt::memory {

// Asks for transparent huge pages over the whole 2 MiB pages inside [data, data + bytes): a
// buffer of hundreds of MB (a shard's rows) is then first touched in 2 MiB faults rather than
// 4 KiB ones, which costs far less kernel time (most of all in a virtual machine). Only a hint:
// where THP is off ("never") or the range holds no whole huge page, nothing changes. The
// contents are unaffected.
void prefer_huge_pages(void* data, std::size_t bytes) noexcept;

}  // namespace dt::memory
