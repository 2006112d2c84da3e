// The pure parts of the parameter servers: key ranges, the stale-synchronous clock, staleness
// statistics.

#include "core/servers/server_state.hpp"
#include "base/error.hpp"

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

TEST_CASE("servers: a worker joins into a slot with its clock at 0 (elastic, async)") {
  StepClock clock({2, 3, 0}, std::nullopt);  // slot 2: no worker yet, nothing planned
  CHECK(clock.finished(2));
  clock.complete(0);
  clock.complete(0);
  clock.retire(1);  // worker 1 leaves before any step: slot 1 done at 0 of 0
  CHECK(clock.all_finished());
  clock.admit(2, 4);  // a joiner in the fresh slot
  CHECK(clock.completed(2) == 0);
  CHECK(clock.may_start(2));
  CHECK_FALSE(clock.all_finished());
  clock.complete(2);
  CHECK(clock.slowest() == 1u);
  clock.admit(1, 1);  // a joiner in the slot worker 1 left
  CHECK(clock.slowest() == 0u);
  clock.complete(1);
  CHECK(clock.finished(1));
  for (int i = 0; i < 3; ++i) clock.complete(2);
  CHECK(clock.all_finished());
  clock.admit(2, 0);  // admitting with no steps keeps it finished
  CHECK(clock.all_finished());
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

// ---------------------------------------------------------------------------------------------
// One parameter server thread over real inproc sockets, driven by hand-made worker messages.

#include "server_fakes.hpp"

TEST_CASE("servers: a synchronous round adds the pushes in rank order, divides by all rows, adds "
          "L2 on regularized keys only, and sends every worker the new slice") {
  auto transport = inproc();
  dt::roles::ServerOptions o;
  o.range = {4, 7};
  o.workers = 2;
  o.optimizer.lr = 0.5;
  o.l2 = {{0, 1, 0.1}, {2, 3, 0.1}};  // a bias in the middle
  o.job_id = kJob;
  dt::roles::ParameterServer server(*transport, o, {1.0, 1.0, 1.0});
  FakeWorker w0(*transport, server.endpoint(), 0), w1(*transport, server.endpoint(), 1);
  w0.pull(0);
  w1.pull(0);
  CHECK(w0.slice() == std::pair<std::uint64_t, std::vector<double>>{0, {1.0, 1.0, 1.0}});
  CHECK(w1.slice().first == 0);
  w1.push(0, 0, 3, {0.0, 4.0, 4.0});  // arrival order must not matter
  w0.push(0, 0, 1, {4.0, 8.0, 0.0});
  // (grad sum / 4 rows) + l2 * w, then w -= 0.5 * g.
  const std::vector<double> expected{1.0 - 0.5 * (4.0 / 4 + 0.1), 1.0 - 0.5 * (12.0 / 4),
                                     1.0 - 0.5 * (4.0 / 4 + 0.1)};
  for (auto* w : {&w0, &w1}) {
    const auto [version, values] = w->slice();
    CHECK(version == 1);
    CHECK(values == expected);
  }
  REQUIRE(server.wait_version(1, std::chrono::seconds(5)));
  std::vector<double> params(7, 0.0);
  server.copy_slice(params);
  CHECK(params == std::vector<double>{0, 0, 0, 0, expected[0], expected[1], expected[2]});

  // A push for the wrong step fails the server: the wait ends at once (without the version),
  // failure() says why (the coordinator's ServerGroup adds which server) and check() throws.
  w0.push(5, 1, 1, {0.0, 0.0, 0.0});
  CHECK_FALSE(server.wait_version(99, std::chrono::seconds(5)));
  CHECK(server.failure(60000) ==
        "failed: worker 0 pushed its gradient of step 6 while the server is at step 2");
  CHECK_THROWS_WITH_AS(server.check(),
                       "parameter server 0 (keys [4, 7)) failed: worker 0 pushed its gradient of "
                       "step 6 while the server is at step 2",
                       dt::TrainingError);
}

TEST_CASE("servers: async applies each push at once, measures staleness, and holds a lock-step "
          "pull until the slowest worker has caught up") {
  auto transport = inproc();
  dt::roles::ServerOptions o;
  o.range = {0, 2};
  o.workers = 2;
  o.asynchronous = true;
  o.optimizer.lr = 1.0;
  o.job_id = kJob;
  o.worker_steps = {2, 2};
  o.max_staleness = 0;
  o.keep_log = true;
  dt::roles::ParameterServer server(*transport, o, {0.0, 0.0});
  FakeWorker w0(*transport, server.endpoint(), 0), w1(*transport, server.endpoint(), 1);
  w0.pull(2);
  w1.pull(2);
  CHECK(w0.slice().first == 0);
  CHECK(w1.slice().first == 0);

  w0.push(0, 0, 2, {2.0, 4.0});  // applied at once: w = 0 - 1.0 * {1, 2}
  REQUIRE(server.wait_version(1, std::chrono::seconds(5)));
  std::vector<double> params(2);
  server.copy_slice(params);
  CHECK(params == std::vector<double>{-1.0, -2.0});
  // Worker 0's next step is held (worker 1 has not completed step 0), so the slice it gets is
  // the one after worker 1's push: version 2, not 1.
  w1.push(0, 0, 1, {1.0, 1.0});  // staleness 1 (computed from version 0, applied at 1)
  const auto [v0, s0] = w0.slice();
  CHECK(v0 == 2);
  CHECK(s0 == std::vector<double>{-2.0, -3.0});
  CHECK(w1.slice().first == 2);

  w1.push(1, 2, 1, {0.0, 0.0});  // staleness 0
  REQUIRE(server.wait_version(3, std::chrono::seconds(5)));
  w0.push(1, 2, 1, {0.0, 0.0});  // staleness 1
  REQUIRE(server.wait_version(4, std::chrono::seconds(5)));
  const auto stats = server.stats();
  CHECK(stats.staleness.count == 4);
  CHECK(stats.staleness.max == 1);
  CHECK(stats.staleness.histogram == std::map<std::uint64_t, std::uint64_t>{{0, 2}, {1, 2}});
  CHECK(stats.staleness_of == std::vector<std::vector<std::uint64_t>>{{0, 1}, {1, 0}});
  CHECK(stats.max_clock_gap == 0);
  CHECK(stats.worker_steps == std::vector<std::uint64_t>{2, 2});
  const auto log = server.take_log();
  REQUIRE(log.size() == 4);
  CHECK(log[0].rank == 0);
  CHECK(log[1].rank == 1);
  CHECK(log[2].rank == 1);
  CHECK(log[3].rank == 0);
  CHECK(log[0].rows == 2);
  server.check();
}

TEST_CASE("servers: L2 blocks of a range, and the lazy L2 term at sorted offsets") {
  using dt::roles::L2Block;
  // Weights [0, 10) and [12, 20) of a model, a bias at 10 and 11; a server owning [8, 16).
  const std::vector<KeyRange> regularized{{12, 20}, {0, 10}};
  CHECK(dt::roles::l2_blocks(regularized, 0.0, {8, 16}).empty());
  const auto blocks = dt::roles::l2_blocks(regularized, 0.5, {8, 16});
  CHECK(blocks == std::vector<L2Block>{{0, 2, 0.5}, {4, 8, 0.5}});
  const std::vector<double> slice{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<std::uint32_t> offsets{1, 2, 3, 4, 7};
  std::vector<double> sums(offsets.size(), 1.0);
  dt::roles::add_l2_at(blocks, offsets, slice, sums);
  CHECK(sums == std::vector<double>{2.0, 1.0, 1.0, 3.5, 5.0});  // 2, 3 (bias) untouched
  std::vector<double> grad(slice.size(), 0.0);
  dt::roles::add_l2(blocks, slice, grad);
  CHECK(grad == std::vector<double>{0.5, 1.0, 0.0, 0.0, 2.5, 3.0, 3.5, 4.0});
}

TEST_CASE("servers: key marks list the keys with nonzero bits, then the keys marked since") {
  dt::roles::KeyMarks marks;
  std::vector<double> slice(200, 0.0), slot(200, 0.0);
  slice[3] = 1.0;
  slot[64] = -0.0;  // nonzero bits
  slot[199] = 2.0;
  const std::vector<std::span<const double>> vectors{slice, slot};
  marks.reset_from(vectors, 200);
  std::vector<std::uint32_t> listed;
  marks.list(listed);
  CHECK(listed == std::vector<std::uint32_t>{3, 64, 199});
  const std::vector<std::uint64_t> stepped{0, 3, 127, 128};
  marks.mark(stepped);
  marks.list(listed);
  CHECK(listed == std::vector<std::uint32_t>{0, 3, 64, 127, 128, 199});
}
