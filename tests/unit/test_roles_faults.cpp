// Fault injection's decisions (which step, which message, reproducible draws) and the
// straggler monitor's rule, on synthetic progress. The faults' effects on real processes
// (SIGKILL, SIGSTOP, lost messages) are tested end to end in tests/e2e/test_faults.py.

#include "core/protocol/faults.hpp"
#include "core/coordinator/stragglers.hpp"

#include <doctest/doctest.h>

#include <cmath>

using dt::config::FaultAction;
using dt::config::FaultConfig;
using dt::roles::FaultInjector;
using dt::roles::StragglerMonitor;
using dt::roles::WorkerProgress;

namespace {

FaultConfig at(int rank, FaultAction action, std::uint64_t step, int ms = 100) {
  FaultConfig f;
  f.rank = rank;
  f.action = action;
  f.at_step = step;
  f.ms = ms;
  f.seed = 7;
  return f;
}

FaultConfig drawn(int rank, FaultAction action, double p, std::uint64_t seed = 7, int ms = 100) {
  FaultConfig f;
  f.rank = rank;
  f.action = action;
  f.probability = p;
  f.ms = ms;
  f.seed = seed;
  return f;
}

}  // namespace

TEST_CASE("faults: at_step kills and hangs once, slows every step from then on, only its rank") {
  const FaultInjector one({at(1, FaultAction::kKill, 40), at(1, FaultAction::kSlow, 5, 30),
                           at(1, FaultAction::kSlow, 8, 20), at(2, FaultAction::kHang, 3)},
                          1);
  CHECK_FALSE(one.empty());
  CHECK_FALSE(one.step_faults(39).kill);
  CHECK(one.step_faults(40).kill);
  CHECK_FALSE(one.step_faults(41).kill);
  CHECK(one.step_faults(4).slow_ms == 0);
  CHECK(one.step_faults(5).slow_ms == 30);
  CHECK(one.step_faults(8).slow_ms == 50);  // two slow faults add up
  CHECK(one.step_faults(1000).slow_ms == 50);
  for (std::uint64_t s = 0; s < 50; ++s) CHECK_FALSE(one.step_faults(s).hang);  // rank 2's

  const FaultInjector two({at(1, FaultAction::kKill, 40), at(2, FaultAction::kHang, 3)}, 2);
  CHECK(two.step_faults(3).hang);
  CHECK_FALSE(two.step_faults(40).kill);
  CHECK(FaultInjector({at(1, FaultAction::kKill, 4)}, 0).empty());
}

TEST_CASE("faults: drop and delay at_step touch every message of every step from then on") {
  const FaultInjector f({at(0, FaultAction::kDrop, 10), at(0, FaultAction::kDelay, 4, 25)}, 0);
  CHECK_FALSE(f.message_faults(3, 0).drop);
  CHECK(f.message_faults(3, 0).delay_ms == 0);
  CHECK(f.message_faults(4, 0).delay_ms == 25);
  CHECK_FALSE(f.message_faults(9, 5).drop);
  CHECK(f.message_faults(10, 0).drop);
  CHECK(f.message_faults(11, 3).drop);
  // Message faults never act on a step, step faults never on a message.
  CHECK(f.step_faults(20).slow_ms == 0);
  CHECK_FALSE(FaultInjector({at(0, FaultAction::kSlow, 0)}, 0).message_faults(5, 0).drop);
}

TEST_CASE("faults: probability draws are reproducible, near p, and independent per key") {
  const FaultInjector a({drawn(3, FaultAction::kSlow, 0.25)}, 3);
  const FaultInjector b({drawn(3, FaultAction::kSlow, 0.25)}, 3);
  const FaultInjector other_seed({drawn(3, FaultAction::kSlow, 0.25, 8)}, 3);
  int fired = 0, same = 0;
  constexpr int kSteps = 20000;
  for (std::uint64_t s = 0; s < kSteps; ++s) {
    const bool x = a.step_faults(s).slow_ms > 0;
    CHECK(x == (b.step_faults(s).slow_ms > 0));
    fired += x;
    same += x == (other_seed.step_faults(s).slow_ms > 0);
  }
  // Binomial(20000, 0.25): mean 5000, sd ~61; 6 sd either way.
  CHECK(std::abs(fired - 5000) < 370);
  // Another seed gives other draws (agreement of independent ones: 0.25^2 + 0.75^2 = 62.5%).
  CHECK(same < kSteps * 0.7);

  // Per message: each (step, message index) its own draw.
  const FaultInjector d({drawn(0, FaultAction::kDrop, 0.5)}, 0);
  int dropped = 0, differ = 0;
  for (std::uint64_t s = 0; s < 2000; ++s) {
    const bool m0 = d.message_faults(s, 0).drop;
    const bool m1 = d.message_faults(s, 1).drop;
    CHECK(m0 == d.message_faults(s, 0).drop);
    dropped += m0;
    differ += m0 != m1;
  }
  CHECK(std::abs(dropped - 1000) < 150);
  CHECK(std::abs(differ - 1000) < 150);
  // The same fault on another rank draws differently.
  const FaultInjector r0({drawn(0, FaultAction::kKill, 0.5), drawn(1, FaultAction::kKill, 0.5)}, 0);
  const FaultInjector r1({drawn(0, FaultAction::kKill, 0.5), drawn(1, FaultAction::kKill, 0.5)}, 1);
  int agree = 0;
  for (std::uint64_t s = 0; s < 2000; ++s) {
    agree += r0.step_faults(s).kill == r1.step_faults(s).kill;
  }
  CHECK(std::abs(agree - 1000) < 150);
}

TEST_CASE("faults: messages are faulted only inside a step; server pushes are never dropped") {
  FaultInjector f({at(0, FaultAction::kDrop, 2)}, 0);
  CHECK(f.before_send(true));  // before any step: start-up replies go through
  CHECK(f.begin_step(1) == 0.0);
  CHECK(f.before_send(true));
  CHECK(f.begin_step(2) == 0.0);
  CHECK_FALSE(f.before_send(true));
  CHECK(f.before_send(false));  // a push to a parameter server: only delays apply
  f.end_step();                 // a new request (an evaluation, the stop): not a step's
  CHECK(f.before_send(true));
  CHECK(f.begin_step(3) == 0.0);
  CHECK_FALSE(f.before_send(true));
  f.disarm();
  CHECK(f.empty());
  CHECK(f.begin_step(4) == 0.0);
  CHECK(f.before_send(true));
}

TEST_CASE("faults: a slow step sleeps its milliseconds and says how long") {
  FaultInjector f({at(0, FaultAction::kSlow, 1, 20)}, 0);
  CHECK(f.begin_step(0) == 0.0);
  const double slept = f.begin_step(1);
  CHECK(slept >= 0.020);
  CHECK(slept < 5.0);  // generous: only a sanity bound on a shared machine
}

// ---- Stragglers -------------------------------------------------------------------------

namespace {

// Feeds `intervals` heartbeat intervals of `steps` steps each; rank r's step takes per_step[r].
void feed(StragglerMonitor& m, std::vector<WorkerProgress>& progress,
          const std::vector<double>& per_step, int intervals, std::uint64_t steps = 4) {
  for (int i = 0; i < intervals; ++i) {
    for (std::size_t r = 0; r < progress.size(); ++r) {
      progress[r].steps += steps;
      progress[r].compute_seconds += per_step[r] * static_cast<double>(steps);
      m.observe(static_cast<int>(r), progress[r]);
    }
  }
}

}  // namespace

TEST_CASE("stragglers: a worker persistently k times slower than the others is found once") {
  StragglerMonitor m(2.0, 4);
  std::vector<WorkerProgress> p(4);
  const std::vector<double> pace = {0.004, 0.005, 0.031, 0.004};
  feed(m, p, pace, 4);  // 16 steps: windows full
  CHECK(m.pace(2).has_value());
  CHECK(*m.pace(2) == doctest::Approx(0.031));
  CHECK(m.evaluate().empty());  // suspect only: not yet persistent
  const auto first_seen = p[2].steps;
  std::vector<dt::roles::Straggler> found;
  for (int i = 0; i < 6 && found.empty(); ++i) {
    feed(m, p, pace, 1);
    found = m.evaluate();
  }
  REQUIRE(found.size() == 1);
  CHECK(found[0].rank == 2);
  CHECK(found[0].step_seconds_p50 == doctest::Approx(0.031));
  CHECK(found[0].median_of_others == doctest::Approx(0.004));
  CHECK(found[0].factor == doctest::Approx(0.031 / 0.004));
  CHECK(found[0].first_seen_step == first_seen);
  CHECK(p[2].steps - first_seen >= StragglerMonitor::kWindowSteps);
  const auto j = found[0].to_json();
  CHECK(j["rank"] == 2);
  CHECK(j.contains("median_of_others"));
  CHECK(found[0].describe(2.0).starts_with("worker 2 is a straggler: its steps take 31 ms"));
  // Reported once, however long it stays slow.
  feed(m, p, pace, 10);
  CHECK(m.evaluate().empty());
}

TEST_CASE("stragglers: one slow step, small differences and factor 0 are not stragglers") {
  SUBCASE("a single slow interval among fast ones") {
    StragglerMonitor m(2.0, 3);
    std::vector<WorkerProgress> p(3);
    for (int i = 0; i < 30; ++i) {
      // Rank 1 has one very slow interval (one step of 1 s), then is as fast as the others.
      feed(m, p, {0.004, i == 6 ? 0.25 : 0.004, 0.004}, 1);
      CHECK(m.evaluate().empty());
    }
  }
  SUBCASE("slower by less than k") {
    StragglerMonitor m(2.0, 3);
    std::vector<WorkerProgress> p(3);
    for (int i = 0; i < 30; ++i) {
      feed(m, p, {0.004, 0.0075, 0.004}, 1);
      CHECK(m.evaluate().empty());
    }
  }
  SUBCASE("k times slower, but by microseconds") {
    StragglerMonitor m(2.0, 3);
    std::vector<WorkerProgress> p(3);
    for (int i = 0; i < 30; ++i) {
      feed(m, p, {0.00001, 0.0001, 0.00001}, 1);
      CHECK(m.evaluate().empty());
    }
  }
  SUBCASE("factor 0 disables it") {
    StragglerMonitor m(0.0, 3);
    std::vector<WorkerProgress> p(3);
    for (int i = 0; i < 30; ++i) {
      feed(m, p, {0.004, 0.5, 0.004}, 1);
      CHECK(m.evaluate().empty());
    }
  }
  SUBCASE("a replacement worker starts a new window") {
    StragglerMonitor m(2.0, 2);
    std::vector<WorkerProgress> p(2);
    feed(m, p, {0.004, 0.004}, 6);
    p[1] = {};  // restarted: counts from 0
    m.observe(1, p[1]);
    CHECK_FALSE(m.pace(1).has_value());
    feed(m, p, {0.004, 0.004}, 6);
    CHECK(m.pace(1).has_value());
    CHECK(m.evaluate().empty());
  }
}

TEST_CASE("faults: a server's faults are its own, apart from the workers'") {
  FaultConfig server_kill = at(-1, FaultAction::kKill, 40);
  server_kill.server = 1;
  FaultConfig server_hang = drawn(-1, FaultAction::kHang, 0.5);
  server_hang.server = 0;
  const std::vector<FaultConfig> faults{at(1, FaultAction::kKill, 40), server_kill, server_hang};
  // Worker 1 has its own kill only; no worker gets a server's fault.
  const FaultInjector worker0(faults, 0), worker1(faults, 1);
  CHECK(worker0.empty());
  CHECK(worker1.step_faults(40).kill);
  // Server 1 is killed at its update 40 and only then; server 0 hangs on its own draws.
  const auto server1 = FaultInjector::for_server(faults, 1);
  CHECK(server1.step_faults(40).kill);
  CHECK_FALSE(server1.step_faults(39).kill);
  CHECK_FALSE(server1.step_faults(41).kill);
  CHECK_FALSE(server1.step_faults(40).hang);
  const auto server0 = FaultInjector::for_server(faults, 0);
  int hangs = 0;
  for (std::uint64_t v = 0; v < 1000; ++v) {
    const auto f = server0.step_faults(v);
    CHECK_FALSE(f.kill);
    hangs += f.hang ? 1 : 0;
    CHECK(f.hang == FaultInjector::for_server(faults, 0).step_faults(v).hang);  // reproducible
  }
  CHECK(hangs > 400);
  CHECK(hangs < 600);
  CHECK(FaultInjector::for_server(faults, 2).empty());
}
