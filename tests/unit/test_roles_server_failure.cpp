// A parameter server that fails, in-process: the injected kill and hang as the coordinator sees
// them (failure()), the state a killed server no longer gives out, and an async replacement
// taking back workers that have moved on (rejoin). Whole runs with a server replaced are in
// tests/e2e/test_server_failure.py.

#include "core/servers/param_server.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using dt::config::FaultAction;
using dt::config::FaultConfig;
using dt::roles::ParameterServer;
using dt::roles::ServerOptions;
using dt::transport::deadline_in;
namespace protocol = dt::protocol;

namespace {

constexpr std::uint64_t kFailureJob = 4242;

ServerOptions failure_options(int workers, bool asynchronous) {
  ServerOptions o;
  o.index = 0;
  o.range = {0, 3};
  o.workers = workers;
  o.asynchronous = asynchronous;
  o.optimizer.lr = 0.5;
  o.job_id = kFailureJob;
  return o;
}

FaultConfig server_fault(FaultAction action, std::uint64_t at) {
  FaultConfig f;
  f.rank = -1;
  f.server = 0;
  f.action = action;
  f.at_step = at;
  return f;
}

void send(dt::transport::Connection& c, protocol::Envelope e) {
  c.send(protocol::encode(std::move(e), kFailureJob), deadline_in(dt::test::kPatience));
}

protocol::Envelope push(std::uint32_t rank, std::uint64_t step, std::uint64_t version) {
  protocol::Envelope e{.type = protocol::Type::kPush, .rank = rank, .step = step};
  e.fields = {{"rows", 1}, {"loss_sum", 1.0}, {"version", version}};
  const std::vector<double> grad{1.0, 2.0, 3.0};
  e.arrays.push_back(dt::wire::to_bytes(std::span<const double>(grad)));
  return e;
}

protocol::Envelope slice_from(dt::transport::Connection& c) {
  auto m = c.receive(deadline_in(std::chrono::seconds(5)));
  REQUIRE(m.has_value());
  auto e = protocol::decode(*m, kFailureJob);
  REQUIRE(e.type == protocol::Type::kSlice);
  return e;
}

// Polls failure() until it says something (or 5 s pass).
std::string failure_of(const ParameterServer& server, std::int64_t timeout_ms) {
  const auto until = deadline_in(std::chrono::seconds(5));
  while (dt::transport::Clock::now() < until) {
    if (auto f = server.failure(timeout_ms)) return *f;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

}  // namespace

TEST_CASE("server failure: a killed server ends without a word and gives out no state") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kFailureJob);
  auto o = failure_options(1, false);
  o.faults = {server_fault(FaultAction::kKill, 1)};
  ParameterServer server(*transport, o, {1.0, 1.0, 1.0});
  auto worker = transport->connect(server.endpoint(), protocol::peer_name(0));
  CHECK_FALSE(server.failure(60000).has_value());
  send(*worker, push(0, 0, 0));  // round 1 is applied: update 1
  CHECK(protocol::count(slice_from(*worker), "version") == 1);
  dt::roles::ServerState copy;
  server.capture(copy);
  CHECK(copy.version == 1);
  CHECK(copy.slice == std::vector<double>{0.5, 0.0, -0.5});  // 1 - 0.5 * g
  send(*worker, push(0, 1, 1));  // the kill fires at update 1
  CHECK(failure_of(server, 60000) == "stopped: its thread ended without a word");
  std::vector<double> params(3, 7.0);
  CHECK_FALSE(server.copy_slice(params));
  CHECK(params == std::vector<double>(3, 7.0));
  CHECK_FALSE(server.state_at(1).has_value());
  server.stop();
  CHECK_FALSE(server.failure(60000).has_value());  // stopped on purpose
}

TEST_CASE("server failure: a hung server is found by its silence and stops when told") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kFailureJob);
  auto o = failure_options(1, false);
  o.faults = {server_fault(FaultAction::kHang, 0)};
  ParameterServer server(*transport, o, {1.0, 1.0, 1.0});
  auto worker = transport->connect(server.endpoint(), protocol::peer_name(0));
  send(*worker, push(0, 0, 0));
  const auto f = failure_of(server, 100);
  CHECK(f.starts_with("is hung: it has not served its socket for "));
  CHECK(f.ends_with(" ms (fault_tolerance.worker_timeout_ms = 100)"));
  CHECK_FALSE(worker->receive(deadline_in(std::chrono::milliseconds(100))).has_value());
  server.stop();  // returns: the hang waits for the stop
}

TEST_CASE("server failure: an async replacement counts the steps it lost as done") {
  auto transport = dt::test::make_transport<dt::test::Inproc>(kFailureJob);
  auto o = failure_options(2, true);
  o.worker_steps = {10, 10};
  // The copy it starts from: 4 updates, 2 of each worker.
  o.start_version = 4;
  o.start_completed = {2, 2};
  o.incarnation = 1;
  o.copy = std::make_shared<dt::roles::ServerCopy>();  // left with the coordinator
  o.copy_every = 2;
  ParameterServer server(*transport, o, {1.0, 1.0, 1.0});
  CHECK(server.endpoint().ends_with("ps0r1"));  // a new endpoint
  auto w0 = transport->connect(server.endpoint(), protocol::peer_name(0));
  auto w1 = transport->connect(server.endpoint(), protocol::peer_name(1));
  // Worker 0 has pushed 5 steps (3 lost with the failed server) and waits for a slice.
  protocol::Envelope rejoin{.type = protocol::Type::kPull, .rank = 0};
  rejoin.fields = {{"steps", 10}, {"rejoin", 5}, {"awaiting", true}};
  send(*w0, rejoin);
  CHECK(protocol::count(slice_from(*w0), "version") == 7);
  // Worker 1 is done (10 pushed): it waits for nothing.
  rejoin.rank = 1;
  rejoin.fields = {{"steps", 10}, {"rejoin", 10}, {"awaiting", false}};
  send(*w1, rejoin);
  CHECK(server.wait_version(15, std::chrono::seconds(5)));
  // Worker 0's next push is its step 5, applied as update 16.
  send(*w0, push(0, 5, 7));
  CHECK(protocol::count(slice_from(*w0), "version") == 16);
  const auto stats = server.stats();
  CHECK(stats.worker_steps == std::vector<std::uint64_t>{6, 10});
  CHECK(stats.staleness_of[0].size() == 6);  // aligned with the steps, lost ones as 0
  {
    // Update 16 is a multiple of copy_every: the copy is of it (a rejoin leaves none).
    std::lock_guard lock(o.copy->mu);
    CHECK(o.copy->state.version == 16);
    CHECK(o.copy->state.worker_steps == std::vector<std::uint64_t>{6, 10});
    CHECK(o.copy->state.slice == std::vector<double>{0.5, 0.0, -0.5});
  }
  CHECK_FALSE(w1->receive(deadline_in(std::chrono::milliseconds(50))).has_value());
  server.stop();
}
