// The pure parts of the parameter servers: key ranges, the stale-synchronous clock, staleness
// statistics, and the test-delay hook's parsing.

#include "core/roles/server_state.hpp"
#include "core/roles/test_delay.hpp"
#include "core/util/error.hpp"

#include <doctest/doctest.h>

#include <numeric>

using dt::roles::KeyRange;
using dt::roles::StalenessStats;
using dt::roles::StepClock;
using dt::roles::split_keys;

TEST_CASE("servers: key ranges are contiguous, cover every key once, and differ by at most one") {
  CHECK(split_keys(10, 3) == std::vector<KeyRange>{{0, 4}, {4, 7}, {7, 10}});
  CHECK(split_keys(9, 3) == std::vector<KeyRange>{{0, 3}, {3, 6}, {6, 9}});
  CHECK(split_keys(5, 1) == std::vector<KeyRange>{{0, 5}});
  CHECK(split_keys(3, 3) == std::vector<KeyRange>{{0, 1}, {1, 2}, {2, 3}});
  for (std::size_t count : {1u, 2u, 7u, 64u, 1001u}) {
    for (int k = 1; k <= static_cast<int>(std::min<std::size_t>(count, 9)); ++k) {
      CAPTURE(count);
      CAPTURE(k);
      const auto ranges = split_keys(count, k);
      REQUIRE(ranges.size() == static_cast<std::size_t>(k));
      CHECK(ranges.front().begin == 0);
      CHECK(ranges.back().end == count);
      std::size_t lo = count, hi = 0;
      for (std::size_t i = 0; i < ranges.size(); ++i) {
        if (i > 0) CHECK(ranges[i].begin == ranges[i - 1].end);
        lo = std::min(lo, ranges[i].size());
        hi = std::max(hi, ranges[i].size());
      }
      CHECK(lo >= 1);
      CHECK(hi - lo <= 1);
    }
  }
}

TEST_CASE("servers: more servers than parameters is a config error that says what to do") {
  try {
    (void)split_keys(3, 4);
    FAIL("expected an error");
  } catch (const dt::ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "aggregation.servers is 4 but the model has only 3 parameter(s): every server must own "
          "at least one; set aggregation.servers to at most 3");
  }
  CHECK_THROWS_AS((void)split_keys(3, 0), dt::ConfigError);
}

TEST_CASE("servers: lock-step (max_staleness 0) lets nobody start step c before all completed c") {
  StepClock clock({3, 3, 3}, 0);
  CHECK(clock.may_start(0));
  clock.complete(0);  // worker 0 completed step 0
  CHECK_FALSE(clock.may_start(0));  // workers 1 and 2 have not
  CHECK(clock.may_start(1));
  clock.complete(1);
  CHECK_FALSE(clock.may_start(0));
  clock.complete(2);
  CHECK(clock.may_start(0));
  CHECK(clock.lead(0) == 0);
}

TEST_CASE("servers: max_staleness s lets the fastest worker run exactly s steps ahead") {
  StepClock clock({10, 10}, 2);
  int started = 0;
  while (clock.may_start(0)) {
    CHECK(clock.lead(0) <= 2);
    clock.complete(0);
    ++started;
  }
  CHECK(started == 3);  // steps 0, 1, 2 while worker 1 is at 0: it would start step 3 = 0 + 2 + 1
  CHECK(clock.completed(0) == 3);
  CHECK(clock.lead(0) == 3);  // after completing; the bound holds at every start
  CHECK(clock.slowest() == 0u);
  clock.complete(1);
  CHECK(clock.may_start(0));
}

TEST_CASE("servers: unbounded staleness never holds anyone back") {
  StepClock clock({5, 5}, std::nullopt);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(clock.may_start(0));
    clock.complete(0);
  }
  CHECK(clock.finished(0));
  CHECK_FALSE(clock.may_start(0));  // nothing left to start
  CHECK(clock.lead(1) == 0);
}

TEST_CASE("servers: a finished worker does not hold back workers with more steps") {
  StepClock clock({1, 4}, 0);
  clock.complete(0);
  CHECK(clock.finished(0));
  clock.complete(1);
  CHECK(clock.may_start(1));  // worker 0 is done; only worker 1 is still training
  CHECK(clock.slowest() == 1u);
  clock.complete(1);
  clock.complete(1);
  clock.complete(1);
  CHECK(clock.all_finished());
  CHECK_FALSE(clock.slowest().has_value());
  CHECK_THROWS_AS(clock.complete(1), dt::TrainingError);
}

TEST_CASE("servers: a worker with no steps is finished from the start") {
  StepClock clock({0, 2}, 0);
  CHECK(clock.finished(0));
  CHECK(clock.may_start(1));
  CHECK_THROWS_AS(StepClock({1}, -1), dt::ConfigError);
}

TEST_CASE("servers: staleness statistics") {
  StalenessStats s;
  for (std::uint64_t v : {0u, 2u, 2u, 5u}) s.add(v);
  CHECK(s.count == 4);
  CHECK(s.max == 5);
  CHECK(s.mean() == doctest::Approx(9.0 / 4.0));
  const auto j = s.to_json();
  CHECK(j["histogram"]["2"] == 2);
  CHECK(j["histogram"]["5"] == 1);
  CHECK(j["max"] == 5);
  CHECK(StalenessStats{}.mean() == 0.0);
}

TEST_CASE("servers: the test delay hook parses rank:ms lists and rejects anything else") {
  using dt::roles::parse_test_delay;
  using std::chrono::milliseconds;
  CHECK(parse_test_delay("1:30", 1) == milliseconds(30));
  CHECK(parse_test_delay("1:30", 0) == milliseconds(0));
  CHECK(parse_test_delay("0:5,2:50", 2) == milliseconds(50));
  CHECK(parse_test_delay("0:5,2:50", 0) == milliseconds(5));
  for (const char* bad : {"", "1", "1:", ":5", "a:5", "1:5,", "1:-5", "1:5ms", "1:700000"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)parse_test_delay(bad, 0), dt::ConfigError);
  }
  try {
    (void)parse_test_delay("1:x", 0);
  } catch (const dt::ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "DISTTRAIN_TEST_DELAY_MS='1:x': '1:x' is not rank:milliseconds (a worker rank and a "
          "delay of at most 600000 ms, e.g. \"1:30\" or \"0:10,2:50\"); this variable is a test "
          "hook, unset it for real runs");
  }
}
