// Parameter servers and lost workers (fault_tolerance continue and restart): a dropped worker
// is waited for no more, a replaced one has each of its pushes applied exactly once.

#include "core/servers/server_state.hpp"
#include "base/error.hpp"
#include "server_fakes.hpp"

#include <doctest/doctest.h>

using dt::roles::ParameterServer;
using dt::roles::StepClock;
using Slice = std::pair<std::uint64_t, std::vector<double>>;

namespace {

constexpr std::chrono::milliseconds kWait{5000};

}  // namespace

TEST_CASE("servers: a retired worker holds nobody back and ends its plan where it stopped") {
  StepClock clock({3, 3}, 0);
  clock.complete(0);
  CHECK_FALSE(clock.may_start(0));  // worker 1 has not completed step 0
  clock.retire(1);
  CHECK(clock.finished(1));
  CHECK(clock.may_start(0));
  clock.complete(0);
  clock.complete(0);
  CHECK(clock.all_finished());
  CHECK_THROWS_AS(clock.complete(1), dt::TrainingError);
}

TEST_CASE("servers: a worker that takes rows over plans more steps, and can be unfinished again") {
  StepClock clock({2, 2}, std::nullopt);
  clock.complete(0);
  clock.complete(0);
  CHECK(clock.finished(0));
  clock.set_steps(0, 3);
  CHECK_FALSE(clock.finished(0));
  CHECK(clock.may_start(0));
  CHECK(clock.slowest() == 0u);  // worker 1's clock
  CHECK_THROWS_AS(clock.set_steps(0, 1), dt::TrainingError);
}

TEST_CASE("servers: a synchronous round completes without a dropped worker, divided by the rows "
          "that came, and its later pushes are ignored") {
  auto transport = inproc();
  ParameterServer server(*transport, two_key_options(3, false), {0.0, 0.0});
  FakeWorker w0(*transport, server.endpoint(), 0), w1(*transport, server.endpoint(), 1),
      w2(*transport, server.endpoint(), 2);
  for (auto* w : {&w0, &w1, &w2}) w->pull(0);
  for (auto* w : {&w0, &w1, &w2}) CHECK(w->slice().first == 0);
  w0.push(0, 0, 1, {1.0, 2.0});
  w2.push(0, 0, 3, {3.0, 6.0});
  CHECK(w0.quiet(std::chrono::milliseconds(100)));  // the round waits for worker 1
  CHECK(server.stats().missing == std::vector<int>{1});
  CHECK(server.drop_worker(1, kWait) == 0);
  // (1 + 3) / 4 rows and (2 + 6) / 4: w = 0 - 1.0 * {1, 2}.
  CHECK(w0.slice() == Slice{1, {-1.0, -2.0}});
  CHECK(w2.slice() == Slice{1, {-1.0, -2.0}});
  w1.push(1, 1, 100, {100.0, 100.0});  // the lost worker's last words: ignored
  w0.push(1, 1, 1, {1.0, 1.0});
  w2.push(1, 1, 1, {1.0, 1.0});
  CHECK(w0.slice() == Slice{2, {-2.0, -3.0}});
  CHECK(server.stats().missing.empty());
  server.check();
}

TEST_CASE("servers: a replacement's push of a round is applied once, whether or not the lost "
          "worker's push of it arrived") {
  auto transport = inproc();
  ParameterServer server(*transport, two_key_options(2, false), {0.0, 0.0});
  FakeWorker w0(*transport, server.endpoint(), 0);
  auto w1 = std::make_unique<FakeWorker>(*transport, server.endpoint(), 1);
  w0.pull(0);
  w1->pull(0);
  (void)w0.slice();
  (void)w1->slice();
  w1->push(0, 0, 1, {2.0, 2.0});  // the lost worker's push of round 1 got there
  REQUIRE(w0.quiet(std::chrono::milliseconds(50)));
  w1.reset();
  CHECK(server.replace_worker(1, kWait) == 0);
  FakeWorker again(*transport, server.endpoint(), 1);
  again.push(0, 0, 1, {2.0, 2.0});  // redone: a duplicate, dropped
  w0.push(0, 0, 1, {0.0, 0.0});
  CHECK(w0.slice() == Slice{1, {-1.0, -1.0}});  // (2 + 0) / 2 rows, counted once
  CHECK(again.slice() == Slice{1, {-1.0, -1.0}});
  // A push of a round already applied (the lost worker's got there and the round went on):
  // answered with the current slice, applied no more.
  again.push(0, 0, 1, {2.0, 2.0});
  CHECK(again.slice() == Slice{1, {-1.0, -1.0}});
  REQUIRE(server.wait_version(1, kWait));
  CHECK_FALSE(server.wait_version(2, std::chrono::milliseconds(50)));
  server.check();
}

TEST_CASE("servers: async stops waiting for a dropped worker: the lock-step hold is released "
          "and its steps not done leave the total") {
  auto transport = inproc();
  auto o = two_key_options(2, true);
  o.worker_steps = {3, 3};
  o.max_staleness = 0;
  ParameterServer server(*transport, o, {0.0, 0.0});
  FakeWorker w0(*transport, server.endpoint(), 0), w1(*transport, server.endpoint(), 1);
  w0.pull(3);
  w1.pull(3);
  (void)w0.slice();
  (void)w1.slice();
  w0.push(0, 0, 1, {1.0, 1.0});
  CHECK(w0.quiet(std::chrono::milliseconds(100)));  // held: worker 1 has not done step 0
  CHECK(server.total_steps() == 6);
  CHECK(server.drop_worker(1, kWait) == 0);
  CHECK(server.total_steps() == 3);
  CHECK(w0.slice().first == 1);  // released
  w1.push(0, 0, 1, {9.0, 9.0});  // ignored
  w0.push(1, 1, 1, {1.0, 1.0});
  CHECK(w0.slice().first == 2);
  w0.push(2, 2, 1, {1.0, 1.0});
  REQUIRE(server.wait_version(server.total_steps(), kWait));
  std::vector<double> params(2);
  server.copy_slice(params);
  CHECK(params == std::vector<double>{-3.0, -3.0});
  CHECK(server.stats().worker_steps == std::vector<std::uint64_t>{3, 0});
  server.check();
}

TEST_CASE("servers: async deals a dropped worker's rows on the next slice to the survivors sure to "
          "get one, and a push that states a longer plan lengthens the run") {
  auto transport = inproc();
  auto o = two_key_options(3, true);
  o.worker_steps = {3, 1, 3};
  ParameterServer server(*transport, o, {0.0, 0.0});
  FakeWorker w0(*transport, server.endpoint(), 0), w1(*transport, server.endpoint(), 1),
      w2(*transport, server.endpoint(), 2);
  for (auto* w : {&w0, &w1, &w2}) w->pull(o.worker_steps[w->rank]);
  for (auto* w : {&w0, &w1, &w2}) (void)w->slice();
  w0.push(0, 0, 1, {1.0, 1.0});
  CHECK(w0.slice().first == 1);
  // Worker 0 has a step to push that is not its last; worker 1 is on its last step.
  Envelope deal{.type = Type::kReassign};
  deal.fields = {{"lost_rank", 2}};
  deal.arrays.push_back(dt::wire::to_bytes(std::span<const double>(std::vector<double>{7.0})));
  const auto dealt = server.drop_worker_dealing(2, deal, kWait);
  CHECK(dealt.applied == 0);
  CHECK(dealt.to == std::vector<int>{0});
  CHECK(server.total_steps() == 4);  // 3 + 1: worker 2's three steps are gone
  // Worker 0 now plans 5 steps: its pushes say so, and the server waits for them. The share
  // rides on the slice that answers.
  Envelope push{.type = Type::kPush, .rank = 0, .step = 1};
  push.fields = {{"rows", 1}, {"loss_sum", 1.0}, {"version", 1}, {"steps", 5}};
  push.arrays.push_back(dt::wire::to_bytes(std::span<const double>(std::vector<double>{0.0, 0.0})));
  w0.connection->send(dt::protocol::encode(push, kJob), deadline_in(kWait));
  const auto e = w0.next();
  CHECK(dt::protocol::count(e, "version") == 2);
  CHECK(e.fields["reassign"]["lost_rank"] == 2);
  CHECK(e.fields["reassign"]["share"] == 0);
  CHECK(e.fields["reassign"]["shares"] == 1);
  REQUIRE(e.arrays.size() == 2);
  CHECK(e.arrays[1] == deal.arrays[0]);
  CHECK(server.total_steps() == 6);
  w0.push(2, 2, 1, {0.0, 0.0});
  CHECK_FALSE(w0.next().fields.contains("reassign"));  // once
  server.check();
}

TEST_CASE("servers: an async replacement pulls first, and its push of a step this server has "
          "applied already is dropped and taken as the pull of its next step") {
  auto transport = inproc();
  auto o = two_key_options(2, true);
  o.worker_steps = {2, 2};
  o.keep_log = true;
  ParameterServer server(*transport, o, {0.0, 0.0});
  FakeWorker w0(*transport, server.endpoint(), 0);
  auto w1 = std::make_unique<FakeWorker>(*transport, server.endpoint(), 1);
  w0.pull(2);
  w1->pull(2);
  (void)w0.slice();
  (void)w1->slice();
  w1->push(0, 0, 1, {1.0, 1.0});  // applied here; another server may have missed it
  CHECK(w1->slice().first == 1);
  w1.reset();
  CHECK(server.replace_worker(1, kWait) == 1);
  // The replacement resumes at step 0 (the fewest any server applied): its redone push of
  // step 0 is a duplicate here.
  FakeWorker again(*transport, server.endpoint(), 1);
  again.pull(2);
  CHECK(again.slice().first == 1);
  again.push(0, 1, 1, {5.0, 5.0});
  CHECK(again.slice().first == 1);  // dropped, not applied: still version 1
  again.push(1, 1, 1, {1.0, 1.0});
  w0.push(0, 0, 1, {1.0, 1.0});
  (void)w0.slice();
  w0.push(1, 1, 1, {1.0, 1.0});
  REQUIRE(server.wait_version(4, kWait));
  CHECK(server.total_steps() == 4);
  const auto stats = server.stats();
  CHECK(stats.worker_steps == std::vector<std::uint64_t>{2, 2});
  CHECK(stats.staleness_of[1].size() == 2);
  CHECK(server.take_log().size() == 4);
  std::vector<double> params(2);
  server.copy_slice(params);
  CHECK(params == std::vector<double>{-4.0, -4.0});
  server.check();
}
