#pragma once
// What every libFuzzer harness of tests/fuzz/ shares (see tests/fuzz/CMakeLists.txt and
// scripts/fuzz). A harness feeds one input to the code the product runs on outside input.
// dt::Error is the documented refusal of bad input (exit 2 or 3 with a message): fine. Anything
// else is a finding: another exception escapes (std::terminate, libFuzzer reports a deadly
// signal), a sanitizer report, a leak, a timeout, or an allocation past -malloc_limit_mb.
// A harness checks its own invariants with expect(), which aborts with the reason.

#include "base/error.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace dt::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `f`; a dt::Error it throws is the product refusing the input, which is what it should do.
template <class F>
void refusal_is_fine(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

// A property of the product that must hold for every input it accepted.
inline void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz: property broken: %s\n", what);
    std::abort();
  }
}

// The readers that take a path (CSV) read this: an in-memory regular file (memfd) holding the
// current input, named by /proc/self/fd/N. One file for the whole fuzzing process, rewritten for
// each input: no file system traffic and nothing left behind.
class MemoryFile {
 public:
  MemoryFile() : fd_(::memfd_create("fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::perror("fuzz: memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  ~MemoryFile() { ::close(fd_); }

  // Replaces the content; returns the path to read it by.
  const std::string& hold(std::string_view bytes) {
    if (::ftruncate(fd_, 0) != 0 ||
        ::pwrite(fd_, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
      std::perror("fuzz: writing the memory file");
      std::abort();
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace dt::fuzz
