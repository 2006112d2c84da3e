#include "base/subnormals.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <cstdint>

namespace dt::subnormals {

namespace {

#if defined(__x86_64__) || defined(__i386__)
constexpr unsigned kFlushToZero = 0x8000;      // MXCSR.FTZ: subnormal results become zero
constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR.DAZ: subnormal inputs read as zero
constexpr unsigned kBoth = kFlushToZero | kDenormalsAreZero;
#elif defined(__aarch64__)
constexpr std::uint64_t kFlushToZero = std::uint64_t{1} << 24;  // FPCR.FZ: inputs and results

std::uint64_t read_fpcr() noexcept {
  std::uint64_t fpcr = 0;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  return fpcr;
}
#endif

}  // namespace

void flush() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(_mm_getcsr() | kBoth);
#elif defined(__aarch64__)
  const std::uint64_t fpcr = read_fpcr() | kFlushToZero;
  asm volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

bool flushed() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return (_mm_getcsr() & kBoth) == kBoth;
#elif defined(__aarch64__)
  return (read_fpcr() & kFlushToZero) != 0;
#else
  return false;
#endif
}

}  // namespace dt::subnormals
