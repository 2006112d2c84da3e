// The sparse star's key-list check (core/modes/sparse_star.hpp): both ends of a step hash the
// batch's keys, and a worker whose batch is not the one the coordinator sent values for stops.
// The hash must tell apart the lists that a disagreement produces.

#include "core/modes/sparse_star.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace {

using dt::modes::key_list_hash;

std::vector<std::uint32_t> keys_from(std::uint32_t first, std::size_t count, std::uint32_t gap) {
  std::vector<std::uint32_t> keys;
  for (std::size_t i = 0; i < count; ++i) keys.push_back(first + static_cast<std::uint32_t>(i) * gap);
  return keys;
}

TEST_CASE("sparse star: the key-list hash tells apart lists one change away") {
  const auto base = keys_from(3, 18000, 233);
  const std::uint64_t h = key_list_hash(base);
  CHECK(h == key_list_hash(keys_from(3, 18000, 233)));  // a function of the list alone
  std::set<std::uint64_t> seen{h};
  // One key changed at every position of the four lanes and the tail, one key more or fewer,
  // two keys swapped between lanes, and the empty list: each a different hash.
  for (const std::size_t at : {0UL, 1UL, 2UL, 3UL, 4UL, 9000UL, 17996UL, 17999UL}) {
    auto changed = base;
    changed[at] += 1;
    CHECK(seen.insert(key_list_hash(changed)).second);
  }
  auto longer = base;
  longer.push_back(base.back() + 1);
  CHECK(seen.insert(key_list_hash(longer)).second);
  auto shorter = base;
  shorter.pop_back();
  CHECK(seen.insert(key_list_hash(shorter)).second);
  auto swapped = base;
  std::swap(swapped[0], swapped[1]);
  CHECK(seen.insert(key_list_hash(swapped)).second);
  CHECK(seen.insert(key_list_hash({})).second);
  // Lists of 1 to 9 keys (the tail after the last group of four): all distinct.
  for (std::size_t n = 1; n <= 9; ++n) CHECK(seen.insert(key_list_hash(keys_from(0, n, 1))).second);
}

}  // namespace
