// compact()'s narrow radix sort (sparse_places.hpp).

#include "core/models/sparse_places.hpp"

#include <algorithm>
#include <bit>

namespace dt::models::detail {

namespace {

constexpr std::uint32_t kDigitMask = kDigits - 1;

}  // namespace

bool narrow_places(std::uint32_t largest, SparseBatch& out) {
  const std::size_t count = out.local.size();
  const auto bits = static_cast<unsigned>(std::bit_width(largest));
  const auto place_bits = static_cast<unsigned>(std::bit_width(std::max<std::size_t>(count, 2) - 1));
  if (bits <= kDigitBits || bits > 2 * kDigitBits || place_bits + kDigitBits > 32) return false;
  out.narrow.resize(count);
  out.narrow_spare.resize(count);
  std::uint32_t* first = out.narrow.data();
  std::uint32_t* second = out.narrow_spare.data();
  out.counts.assign(2 * std::size_t{kDigits}, 0);
  std::uint32_t* low_at = out.counts.data();
  std::uint32_t* high_at = low_at + kDigits;
  std::uint32_t* local = out.local.data();
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t key = local[j];
    ++low_at[key & kDigitMask];
    ++high_at[key >> kDigitBits];
  }
  starts_from_counts(low_at);
  starts_from_counts(high_at);
  // By the low digit: (high digit, place), the low digit left behind (local keeps the key).
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t key = local[j];
    first[low_at[key & kDigitMask]++] = ((key >> kDigitBits) << place_bits) | static_cast<std::uint32_t>(j);
  }
  // By the high digit, stably: the places in key order.
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t entry = first[j];
    second[high_at[entry >> place_bits]++] = entry;
  }
  // Each place's key read back before its position replaces it (places are distinct). No
  // branch on a new key (about every other one in a click log's batch): the key is written at
  // the last position either way.
  const std::uint32_t place_mask = (std::uint32_t{1} << place_bits) - 1;
  out.keys.resize(count);
  std::uint32_t* keys = out.keys.data();
  std::uint64_t last = UINT64_MAX;
  std::uint32_t n = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t place = second[j] & place_mask;
    const std::uint32_t key = local[place];
    n += key != last ? 1 : 0;
    keys[n - 1] = key;
    local[place] = n - 1;
    last = key;
  }
  out.keys.resize(n);
  return true;
}

}  // namespace dt::models::detail
