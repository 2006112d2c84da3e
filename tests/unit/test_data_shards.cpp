// The validation split, shard plans and segments.

#include "core/data/csv.hpp"
#include "core/data/dataset.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace {

using dt::config::ShardStrategy;
using dt::data::plan_shards;
using dt::data::validation_rows;
using dt::test::data_error;
using Rows = std::vector<std::uint64_t>;

// Checks the invariants every plan must have and returns the shard sizes.
std::vector<std::size_t> check_partition(const std::vector<Rows>& shards, std::uint64_t rows,
                                         const Rows& held_out) {
  Rows expected;
  for (std::uint64_t r = 0; r < rows; ++r) {
    if (!std::binary_search(held_out.begin(), held_out.end(), r)) expected.push_back(r);
  }
  Rows all;
  std::vector<std::size_t> sizes;
  for (const auto& shard : shards) {
    CHECK(std::is_sorted(shard.begin(), shard.end()));
    all.insert(all.end(), shard.begin(), shard.end());
    sizes.push_back(shard.size());
  }
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());  // disjoint
  CHECK(all == expected);                                          // union = training rows
  const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
  CHECK(*hi - *lo <= 1);
  return sizes;
}

}  // namespace

TEST_CASE("validation_rows: count, sorted, deterministic by seed") {
  CHECK(validation_rows(1000, 0.0, 7).empty());
  const Rows a = validation_rows(1000, 0.1, 7);
  CHECK(a.size() == 100);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(std::adjacent_find(a.begin(), a.end()) == a.end());
  CHECK(a.back() < 1000);
  CHECK(a == validation_rows(1000, 0.1, 7));
  CHECK(a != validation_rows(1000, 0.1, 8));
  CHECK(validation_rows(10, 0.25, 1).size() == 3);  // round(2.5) = 3
  CHECK(validation_rows(10, 0.24, 1).size() == 2);
  // Spread over the whole file, not a prefix.
  CHECK(a.front() < 100);
  CHECK(a.back() > 900);
}

TEST_CASE("plan_shards: contiguous ranges, first shards take the extra rows") {
  const auto shards = plan_shards(10, {}, 3, ShardStrategy::kContiguous, 1);
  CHECK(shards == std::vector<Rows>{{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  const Rows held = {2, 5};
  const auto with_held = plan_shards(10, held, 3, ShardStrategy::kContiguous, 1);
  CHECK(with_held == std::vector<Rows>{{0, 1, 3}, {4, 6, 7}, {8, 9}});
  CHECK(check_partition(plan_shards(1001, held, 4, ShardStrategy::kContiguous, 1), 1001, held) ==
        std::vector<std::size_t>{250, 250, 250, 249});
}

TEST_CASE("plan_shards: round robin") {
  const auto shards = plan_shards(7, {1}, 2, ShardStrategy::kRoundRobin, 1);
  CHECK(shards == std::vector<Rows>{{0, 3, 5}, {2, 4, 6}});
  const Rows held = validation_rows(503, 0.2, 3);
  CHECK(check_partition(plan_shards(503, held, 5, ShardStrategy::kRoundRobin, 1), 503, held)
            .size() == 5);
}

TEST_CASE("plan_shards: random is a seeded partition with sorted shards") {
  const Rows held = validation_rows(1000, 0.1, 9);
  const auto a = plan_shards(1000, held, 3, ShardStrategy::kRandom, 42);
  CHECK(check_partition(a, 1000, held) == std::vector<std::size_t>{300, 300, 300});
  CHECK(a == plan_shards(1000, held, 3, ShardStrategy::kRandom, 42));
  CHECK(a != plan_shards(1000, held, 3, ShardStrategy::kRandom, 43));
  // Not contiguous: shard 0 has rows from the whole file.
  CHECK(a[0].front() < 50);
  CHECK(a[0].back() > 950);
  // One shard is the whole training set, whatever the strategy.
  for (auto strategy : {ShardStrategy::kContiguous, ShardStrategy::kRoundRobin, ShardStrategy::kRandom}) {
    const auto one = plan_shards(20, {3}, 1, strategy, 5);
    REQUIRE(one.size() == 1);
    CHECK(one[0].size() == 19);
  }
}

TEST_CASE("plan_shards: too few rows for the workers") {
  CHECK(data_error([] { (void)plan_shards(3, {}, 4, ShardStrategy::kContiguous, 1); }) ==
        "3 training rows cannot be split across 4 workers; use fewer shards (shards.count) or "
        "more data");
  const Rows held = validation_rows(10, 0.5, 1);
  CHECK(data_error([&] { (void)plan_shards(10, held, 8, ShardStrategy::kRandom, 1); }) ==
        "5 training rows cannot be split across 8 workers; use fewer shards (shards.count) or "
        "more data (data.validation holds out 5 of the 10 rows)");
  CHECK(plan_shards(4, {}, 4, ShardStrategy::kRoundRobin, 1).size() == 4);
}

TEST_CASE("to_segments: runs of consecutive rows, with offsets from the index") {
  const auto segments = dt::data::to_segments({0, 1, 2, 5, 7, 8}, std::nullopt);
  REQUIRE(segments.size() == 3);
  CHECK(segments[0].first_row == 0);
  CHECK(segments[0].count == 3);
  CHECK(segments[1].first_row == 5);
  CHECK(segments[1].count == 1);
  CHECK(segments[2].first_row == 7);
  CHECK(segments[2].count == 2);
  CHECK(segments[2].byte_offset == 0);
  CHECK(dt::data::to_segments({}, std::nullopt).empty());

  const dt::test::CsvFile csv("a,b\n1,2\n\"3\n\",4\n5,6\n", "d.csv");
  const auto index = dt::data::index_csv(csv.path);
  const auto with_csv = dt::data::to_segments({1, 2}, index);
  REQUIRE(with_csv.size() == 1);
  CHECK(with_csv[0].byte_offset == 8);
  CHECK(with_csv[0].line == 3);
  CHECK(with_csv[0].count == 2);
}

TEST_CASE("chunk_segments: pieces of at most max_rows, cut where a piece's start is known") {
  using dt::data::chunk_segments;
  using dt::data::Segment;
  const std::vector<Segment> segments{{0, 5, 0, 0}, {7, 2, 0, 0}, {10, 4, 0, 0}};
  const auto rows_of = [](const std::vector<Segment>& piece) {
    Rows out;
    for (const auto& s : piece) {
      for (std::uint64_t r = s.first_row; r < s.first_row + s.count; ++r) out.push_back(r);
    }
    return out;
  };
  // Synthetic rows are cut anywhere: every row once, in order, 4 to a piece.
  const auto pieces = chunk_segments(segments, 4, std::nullopt, true);
  REQUIRE(pieces.size() == 3);
  CHECK(rows_of(pieces[0]) == Rows{0, 1, 2, 3});
  CHECK(rows_of(pieces[1]) == Rows{4, 7, 8, 10});
  CHECK(rows_of(pieces[2]) == Rows{11, 12, 13});
  // A CSV without its index cannot be cut inside a segment: one segment per piece at most.
  const auto whole = chunk_segments(segments, 4, std::nullopt, false);
  REQUIRE(whole.size() == 3);
  CHECK(rows_of(whole[0]) == Rows{0, 1, 2, 3, 4});
  CHECK(whole[1].size() == 1);
  // No rows: one empty piece (an empty shard is still read, as an empty shard).
  const auto none = chunk_segments({}, 4, std::nullopt, true);
  REQUIRE(none.size() == 1);
  CHECK(none[0].empty());

  // With the index a cut piece starts at its row's byte offset and line.
  const dt::test::CsvFile csv("a,b\n1,2\n\"3\n\",4\n5,6\n", "d.csv");
  const auto index = dt::data::index_csv(csv.path);
  const auto cut = chunk_segments(dt::data::to_segments({0, 1, 2}, index), 1, index, false);
  REQUIRE(cut.size() == 3);
  CHECK(cut[1][0].first_row == 1);
  CHECK(cut[1][0].byte_offset == 8);
  CHECK(cut[1][0].line == 3);
  CHECK(cut[2][0].line == 5);
}

TEST_CASE("contiguous_segments: the segments of plan_shards' contiguous shards, without rows") {
  using dt::data::contiguous_segments;
  using dt::data::to_segments;
  const auto same = [](const std::vector<dt::data::Segment>& a,
                       const std::vector<dt::data::Segment>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].first_row != b[i].first_row || a[i].count != b[i].count ||
          a[i].byte_offset != b[i].byte_offset || a[i].line != b[i].line) {
        return false;
      }
    }
    return true;
  };
  for (const std::uint64_t rows : {1ULL, 7ULL, 10ULL, 101ULL, 1000ULL}) {
    for (const double fraction : {0.0, 0.1, 0.5}) {
      const auto held = validation_rows(rows, fraction, rows + 3);
      for (const int count : {1, 2, 3, 7}) {
        if (rows - held.size() < static_cast<std::uint64_t>(count)) {
          CHECK(data_error([&] { (void)contiguous_segments(rows, held, count, std::nullopt); }) ==
                data_error([&] {
                  (void)plan_shards(rows, held, count, ShardStrategy::kContiguous, 1);
                }));
          continue;
        }
        const auto shards = plan_shards(rows, held, count, ShardStrategy::kContiguous, 1);
        const auto direct = contiguous_segments(rows, held, count, std::nullopt);
        REQUIRE(direct.size() == shards.size());
        for (std::size_t w = 0; w < shards.size(); ++w) {
          CHECK_MESSAGE(same(direct[w], to_segments(shards[w], std::nullopt)),
                        "rows " << rows << " held " << held.size() << " shard " << w);
        }
      }
    }
  }
  // With the index, each segment starts at its row's byte offset and line.
  const dt::test::CsvFile csv("a,b\n1,2\n\"3\n\",4\n5,6\n7,8\n", "d.csv");
  const auto index = dt::data::index_csv(csv.path);
  const auto with_csv = contiguous_segments(4, {1}, 2, index);
  REQUIRE(with_csv.size() == 2);
  CHECK(same(with_csv[0], to_segments({0, 2}, index)));
  CHECK(same(with_csv[1], to_segments({3}, index)));
}
