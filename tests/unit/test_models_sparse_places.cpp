// compact()'s narrow radix sort (core/models/sparse_places.hpp): the sorted distinct keys and
// each nonzero's position, at the thresholds that choose it (keys of 13 to 24 bits, up to 2^20
// nonzeros), with repeated keys, empty rows and a batch after a batch; and the same batch
// through compact() at widths on both sides of it.

#include "core/models/sparse_places.hpp"
#include "base/random.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

namespace {

using dt::models::SparseBatch;

// A batch as compact() leaves it before its last stage: `keys` (global) in local.
SparseBatch with_keys(std::vector<std::uint32_t> keys) {
  SparseBatch b;
  b.local = std::move(keys);
  return b;
}

// `count` keys below `limit`, drawn so that about half repeat (as a click log's batch), with
// `largest` among them.
std::vector<std::uint32_t> drawn_keys(std::size_t count, std::uint32_t limit, std::uint32_t largest,
                                      std::uint64_t seed) {
  std::vector<std::uint32_t> keys;
  keys.reserve(count);
  const std::uint32_t pool = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(count / 2));
  for (std::size_t j = 0; j < count; ++j) {
    const auto which = static_cast<std::uint64_t>(dt::random::uniform(seed, 1, j) * pool);
    keys.push_back(static_cast<std::uint32_t>(dt::random::uniform(seed, 2, which) * limit));
  }
  if (count > 0) keys[count / 3] = largest;
  return keys;
}

// The places' keys and the key list, checked against the keys the batch was given.
void check_places(const std::vector<std::uint32_t>& given, const SparseBatch& b) {
  std::vector<std::uint32_t> want = given;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  CHECK(b.keys == want);
  REQUIRE(b.local.size() == given.size());
  std::size_t wrong = 0;
  for (std::size_t j = 0; j < given.size(); ++j) {
    wrong += b.local[j] < b.keys.size() && b.keys[b.local[j]] == given[j] ? 0 : 1;
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("sparse places: the narrow sort at the key widths and batch sizes that choose it") {
  using dt::models::detail::narrow_places;
  SUBCASE("keys of 13 bits (the narrowest) and of 24 bits (the widest)") {
    for (const std::uint32_t largest : {4096u, 8191u, (1u << 24) - 1}) {
      CAPTURE(largest);
      const auto keys = drawn_keys(5000, largest, largest, 3);
      SparseBatch b = with_keys(keys);
      CHECK(narrow_places(largest, b));
      check_places(keys, b);
      CHECK(b.keys.size() < keys.size());  // repeats
    }
  }
  SUBCASE("keys of 12 bits or fewer, or of 25, are left to the 64-bit sort, untouched") {
    for (const std::uint32_t largest : {0u, 4095u, 1u << 24, UINT32_MAX}) {
      CAPTURE(largest);
      const auto keys = drawn_keys(100, largest, largest, 4);
      SparseBatch b = with_keys(keys);
      CHECK_FALSE(narrow_places(largest, b));
      CHECK(b.local == keys);
      CHECK(b.keys.empty());
    }
  }
  SUBCASE("2^20 nonzeros fit (20 bits of place), 2^20 + 1 do not") {
    const std::uint32_t largest = (1u << 24) - 1;
    const auto keys = drawn_keys((std::size_t{1} << 20) + 1, largest, largest, 5);
    SparseBatch over = with_keys(keys);
    CHECK_FALSE(narrow_places(largest, over));
    const std::vector<std::uint32_t> fit(keys.begin(), keys.end() - 1);
    SparseBatch b = with_keys(fit);
    CHECK(narrow_places(largest, b));
    check_places(fit, b);
  }
  SUBCASE("one nonzero, one key many times, and no nonzeros") {
    for (const auto& keys : {std::vector<std::uint32_t>{70000},
                             std::vector<std::uint32_t>(300, 123456),
                             std::vector<std::uint32_t>{}}) {
      CAPTURE(keys.size());
      SparseBatch b = with_keys(keys);
      const std::uint32_t largest = keys.empty() ? 70000 : keys.front();
      CHECK(narrow_places(largest, b));
      check_places(keys, b);
    }
  }
  SUBCASE("a batch after a larger one: nothing of the first is left") {
    SparseBatch b = with_keys(drawn_keys(3000, 1u << 22, (1u << 22) - 1, 6));
    CHECK(narrow_places((1u << 22) - 1, b));
    const auto keys = drawn_keys(700, 1u << 18, (1u << 18) - 1, 7);
    b.local = keys;
    CHECK(narrow_places((1u << 18) - 1, b));
    check_places(keys, b);
  }
}

TEST_CASE("sparse places: compact gives the same batch on both sides of the narrow sort") {
  // The same rows (repeated keys within a row, empty rows) at 2^21, where the narrow sort runs,
  // and at 2^32 with every key moved up by 2^24, where the 64-bit sort runs: the same places,
  // the keys moved up by as much.
  std::vector<std::uint64_t> starts{0};
  std::vector<std::uint32_t> keys;
  for (std::uint64_t row = 0; row < 400; ++row) {
    for (std::uint64_t j = 0; row % 9 != 4 && j < 1 + row % 40; ++j) {
      const double u = dt::random::uniform(8, 1, row % 150, j);  // rows 150 apart share keys
      keys.push_back(static_cast<std::uint32_t>(u * (1u << 21)));
    }
    if (row % 5 == 0 && starts.back() < keys.size()) keys.push_back(keys[starts.back()]);
    starts.push_back(keys.size());
  }
  const std::vector<double> values(keys.size(), 1.0);
  std::vector<std::uint32_t> moved = keys;
  for (auto& k : moved) k += 1u << 24;
  std::vector<std::uint64_t> pick;
  for (std::uint64_t i = 0; i < 400; ++i) pick.push_back((i * 37 + 11) % 400);
  SparseBatch narrow;
  SparseBatch wide;
  dt::models::compact({std::uint64_t{1} << 21, starts, keys, values}, pick, narrow);
  dt::models::compact({std::uint64_t{1} << 32, starts, moved, values}, pick, wide);
  CHECK(narrow.local == wide.local);
  CHECK(narrow.row_start == wide.row_start);
  REQUIRE(narrow.keys.size() == wide.keys.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < narrow.keys.size(); ++i) {
    wrong += narrow.keys[i] + (1u << 24) == wide.keys[i] ? 0 : 1;
  }
  CHECK(wrong == 0);
}
