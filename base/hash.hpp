#pragma once
// The feature hash: 64-bit FNV-1a of a value's bytes, and the bucket it falls in. Fixed and
// documented (docs/categorical.md has it in Python) so that predict, export and other tools
// put a value in the same bucket as training did; data.categorical `hash` uses it.

#include <cstdint>
#include <string_view>

namespace dt::hash {

// FNV-1a, 64 bits: h = 14695981039346656037; for each byte b: h = (h xor b) * 1099511628211
// (mod 2^64).
[[nodiscard]] constexpr std::uint64_t fnv1a64(std::string_view bytes) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// The bucket of `value` (its UTF-8 bytes, as read from the cell) among `buckets` (> 0).
[[nodiscard]] constexpr std::uint64_t bucket_of(std::string_view value,
                                                std::uint64_t buckets) noexcept {
  return fnv1a64(value) % buckets;
}

}  // namespace dt::hash
