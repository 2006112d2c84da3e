#pragma once
// compact()'s last stage for most batches above the KeyIndex's widths (sparse_batch.cpp): the
// nonzeros' global keys (in SparseBatch::local) made into the sorted distinct keys
// (SparseBatch::keys) and each nonzero's position among them (in local). Internal to core/models.

#include "core/models/sparse_batch.hpp"

#include <cstdint>
#include <utility>

namespace dt::models::detail {

// The radix digits of compact's sorts (sparse_batch.cpp, sparse_places.cpp): 4096 counts a pass,
// 16 KB, in L1 beside the entries' streams.
inline constexpr unsigned kDigitBits = 12;
inline constexpr std::uint32_t kDigits = 1u << kDigitBits;

// A pass's counts made into exclusive prefix sums: each digit's first slot.
inline void starts_from_counts(std::uint32_t* at) noexcept {
  std::uint32_t sum = 0;
  for (std::uint32_t d = 0; d < kDigits; ++d) sum += std::exchange(at[d], sum);
}

// Two radix passes of 12-bit digits on 32-bit entries instead of compact's 64-bit (key, place)
// pairs: the first pass reads the keys where they lie and writes (high digit, place), the second
// sorts those by the high digit, and the walk reads a place's key back from `local` (where it
// then writes the position). Half the bytes scattered, no pass that builds the pairs. Only when
// it fits: keys of more than 12 and at most 24 bits (`largest`) and the high digit's bits plus
// the place's within 32 (a batch of up to 2^20 nonzeros at 2^24). Returns false, having done
// nothing, otherwise.
[[nodiscard]] bool narrow_places(std::uint32_t largest, SparseBatch& out);

}  // namespace dt::models::detail
