// The coordinator, workers, protocol, heartbeats and launcher. Multi-worker runs use the inproc
// transport: workers are threads over real ZeroMQ sockets, the same code as processes, faster.

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"
#include "core/coordinator/launcher.hpp"
#include "core/protocol/protocol.hpp"
#include "core/coordinator/coordinator.hpp"
#include "core/protocol/heartbeat.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "transports/transport.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <future>
#include <memory>
#include <thread>

namespace {

using dt::config::Config;

Config inproc_config(int workers, const std::string& extra = "") {
  return dt::config::parse(
      "version: 1\nseed: 5\nmodel: {type: linear_regression}\n"
      "data: {synthetic: {kind: linear, rows: 301, features: 4, noise: 0.3}, normalize: none}\n"
      "shards: {count: " + std::to_string(workers) + ", strategy: round_robin}\n"
      "training: {epochs: 1, batch_size: full, shuffle: false, optimizer: {type: sgd, lr: 0.1}}\n"
      "transport: {type: inproc}\n" + extra,
      "test.yaml", "/tmp");
}

dt::roles::RunResult train(const Config& config) {
  const auto plan = dt::roles::make_plan(config);
  return dt::roles::run_coordinator(config, plan, {"/nonexistent", 1});
}

}  // namespace

TEST_CASE("roles: one full-batch step equals the closed-form gradient step, for any worker count") {
  // From zero parameters the MSE gradient is -(2/n) X^T y for the weights and -(2/n) sum(y) for
  // the bias, so one SGD step lands at lr * (2/n) [X^T y; sum y].
  const Config config = inproc_config(1);
  const auto& spec = *config.data.synthetic;
  dt::data::RowMatrix x(spec.rows, spec.features);
  Eigen::VectorXd y(spec.rows);
  dt::data::synthesize(spec, config.seed, 0, static_cast<std::uint64_t>(spec.rows), x, y);
  const double scale = 0.1 * 2.0 / static_cast<double>(spec.rows);
  const Eigen::VectorXd w = scale * (x.transpose() * y);
  const double b = scale * y.sum();

  for (int workers : {1, 2, 3}) {
    CAPTURE(workers);
    const auto result = train(inproc_config(workers));
    REQUIRE(result.status == "ok");
    REQUIRE(result.params.size() == 5);
    for (int j = 0; j < 4; ++j) CHECK(result.params[static_cast<std::size_t>(j)] == doctest::Approx(w(j)).epsilon(1e-12));
    CHECK(result.params[4] == doctest::Approx(b).epsilon(1e-12));
    CHECK(result.steps == 1);
    CHECK(result.workers.size() == static_cast<std::size_t>(workers));
    std::uint64_t rows = 0;
    for (const auto& worker : result.workers) rows += worker.rows;
    CHECK(rows == 301);
    // The final loss is the loss of the final parameters over every training row.
    const Eigen::VectorXd residual = x * w + Eigen::VectorXd::Constant(spec.rows, b) - y;
    REQUIRE(result.final);
    CHECK(result.final->loss == doctest::Approx(residual.squaredNorm() / 301.0).epsilon(1e-12));
  }
}

TEST_CASE("roles: the log has a row per log step and the validation split is evaluated") {
  const auto result = train(dt::config::parse(
      "version: 1\nmodel: {type: logistic_regression}\n"
      "data: {synthetic: {kind: logistic, rows: 400, features: 3}, validation: 0.25}\n"
      "shards: {count: 2}\ntraining: {epochs: 3, batch_size: 100}\n"
      "transport: {type: inproc}\noutput: {log_every: {steps: 2}}\n",
      "t.yaml", "/tmp"));
  REQUIRE(result.status == "ok");
  CHECK(result.steps == 9);  // 300 training rows / 100 per batch, 3 epochs
  REQUIRE(result.log.size() == 5);  // steps 2, 4, 6, 8 and the last one, 9
  CHECK(result.log.back().step == 9);
  CHECK(result.validation_rows == 100);
  REQUIRE(result.validation);
  CHECK(result.validation->rows == 100);
  CHECK(result.validation->accuracy.has_value());
  for (const auto& row : result.log) {
    CHECK(row.validation_loss.has_value());
    CHECK(row.worker_loss.size() == 2);
  }
}

TEST_CASE("roles: a diverging run fails with the step and what to do") {
  const auto config = inproc_config(2, "");
  auto bad = config;
  bad.training.optimizer.lr = 1e6;
  bad.training.epochs = 50;
  try {
    (void)train(bad);
    FAIL("expected a TrainingError");
  } catch (const dt::TrainingError& e) {
    // A loss 1e4 times the first step's, or past it a non-finite one: whichever comes first.
    CHECK(std::string(e.what()).find("training diverged ") != std::string::npos);
    CHECK(std::string(e.what()).find("lower training.optimizer.lr (now 1000000)") != std::string::npos);
  }
}

TEST_CASE("roles: a final model that is not finite fails the run even after the last step") {
  auto config = inproc_config(2, "");
  config.training.optimizer.lr = 1e300;  // one step from zero lands near 1e300: the loss overflows
  try {
    (void)train(config);
    FAIL("expected a TrainingError");
  } catch (const dt::TrainingError& e) {
    INFO(std::string(e.what()));
    CHECK(std::string(e.what()) ==
          "training diverged: the final model's loss over the training rows is nan; lower "
          "training.optimizer.lr (now 1e+300) or normalize the data");
  }
}

TEST_CASE("protocol: exchanges round-trip and bad messages are refused by name") {
  dt::protocol::Setup setup;
  setup.config_yaml = "version: 1\n";
  setup.heartbeat_endpoint = "inproc://hb";
  setup.source.columns = {"a", "b", "y"};
  setup.source.features = {"a", "b"};
  setup.source.label = "y";
  setup.source.label_index = 2;
  setup.source.rows = 10;
  setup.segments = {{0, 3, 6, 2}, {7, 2, 40, 9}};
  const auto message = dt::protocol::encode(dt::protocol::make_setup(setup), 42);
  const auto back = dt::protocol::read_setup(dt::protocol::decode(message, 42));
  CHECK(back.config_yaml == setup.config_yaml);
  CHECK(back.source.features == setup.source.features);
  REQUIRE(back.segments.size() == 2);
  CHECK(back.segments[1].byte_offset == 40);
  CHECK(back.segments[1].line == 9);

  CHECK_THROWS_WITH_AS((void)dt::protocol::decode(message, 43),
                       "setup message from rank 4294967295 belongs to job 000000000000002a, not "
                       "this job 000000000000002b",
                       dt::ProtocolError);
  dt::protocol::Loaded loaded;
  loaded.rows = 3;
  loaded.stats.count = 3;
  loaded.stats.mean = {1.0, 2.0};
  loaded.stats.m2 = loaded.stats.min = loaded.stats.max = {0.0, 0.0};
  const auto env = dt::protocol::decode(dt::protocol::encode(dt::protocol::make_loaded(loaded), 1), 1);
  CHECK(dt::protocol::read_loaded(env, 2).stats.mean == std::vector<double>{1.0, 2.0});
  CHECK_THROWS_AS((void)dt::protocol::read_loaded(env, 3), dt::ProtocolError);  // wrong width
  dt::protocol::Envelope empty{.type = dt::protocol::Type::kGradient, .rank = 2};
  CHECK_THROWS_WITH_AS((void)dt::protocol::field(empty, "rows"),
                       "gradient message from rank 2 lacks field 'rows'", dt::ProtocolError);
}

TEST_CASE("protocol: the setup message carries a sparse source's key layout") {
  dt::protocol::Setup setup;
  setup.source.columns = {"C1", "C2", "n", "click"};
  setup.source.label = "click";
  setup.source.label_index = 3;
  setup.source.sparse = dt::data::SparseSource{(1u << 20) + 1, 0, 20, {"C1", "C2"},
                                               {{"C1", "C2"}}, {"n"}};
  const auto back = dt::protocol::read_setup(dt::protocol::make_setup(setup));
  REQUIRE(back.source.sparse);
  CHECK(back.source.sparse->width == (1u << 20) + 1);
  CHECK(back.source.sparse->hash_bits == 20);
  CHECK(back.source.sparse->hashed == setup.source.sparse->hashed);
  CHECK(back.source.sparse->crosses == setup.source.sparse->crosses);
  CHECK(back.source.sparse->numeric == std::vector<std::string>{"n"});
  setup.source.sparse.reset();
  CHECK_FALSE(dt::protocol::read_setup(dt::protocol::make_setup(setup)).source.sparse);
  auto bad = dt::protocol::make_setup(setup);
  bad.fields["sparse"] = {{"width", 3}};
  CHECK_THROWS_WITH_AS((void)dt::protocol::read_setup(bad),
                       "setup message: field 'sparse' is malformed", dt::ProtocolError);
}

TEST_CASE("protocol: an integer field takes only a whole number in its range") {
  // nlohmann converts any number with a static_cast: 1e30 as an int is undefined behaviour, and
  // a count of -1 wrapped to 2^64 - 1. Now both are a ProtocolError naming the field.
  auto error = dt::protocol::make_error({.kind = "data", .message = "bad", .exit_code = 2});
  error.rank = 3;
  CHECK(dt::protocol::read_error(error).exit_code == 2);
  error.fields["exit_code"] = 1e30;
  CHECK_THROWS_WITH_AS((void)dt::protocol::read_error(error),
                       "error message from rank 3: field 'exit_code' is not a whole number from "
                       "-2147483648 to 2147483647",
                       dt::ProtocolError);
  auto report = dt::protocol::make_report({.steps = 4});
  report.rank = 1;
  CHECK(dt::protocol::read_report(report).steps == 4);
  report.fields["steps"] = -1;
  CHECK_THROWS_WITH_AS((void)dt::protocol::read_report(report),
                       "report message from rank 1: field 'steps' is not a whole number from 0 "
                       "to 18446744073709551615",
                       dt::ProtocolError);
}

TEST_CASE("heartbeats: the server hears the client and the client hears the answers") {
  dt::transport::TransportOptions options;
  options.kind = dt::transport::TransportOptions::Kind::kInproc;
  options.job_id = 7;
  auto transport = dt::transport::make_zmq_transport(options);
  dt::roles::HeartbeatServer server(*transport, 7, 2);
  CHECK(server.silent_ms(1) == -1);
  dt::roles::HeartbeatClient client(*transport, server.endpoint(), 7, 1,
                                    std::chrono::milliseconds(10));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server.silent_ms(1) < 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(server.silent_ms(1) >= 0);
  CHECK(server.silent_ms(1) < 1000);
  CHECK(server.silent_ms(0) == -1);  // rank 0 never pinged
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(client.silent_ms() < 1000);
}

TEST_CASE("heartbeats: a stop ends both threads at once, not at the end of a poll slice") {
  dt::transport::TransportOptions options;
  options.kind = dt::transport::TransportOptions::Kind::kInproc;
  options.job_id = 8;
  // Slices (and the ping interval) of an hour: the threads are inside their socket waits when
  // the destructors stop them, and only the stop's wakeup can end those waits.
  constexpr auto kHour = std::chrono::milliseconds(std::chrono::hours(1));
  struct Pair {
    std::unique_ptr<dt::transport::Transport> transport;
    std::unique_ptr<dt::roles::HeartbeatServer> server;
    std::unique_ptr<dt::roles::HeartbeatClient> client;
  };
  auto pair = std::make_shared<Pair>();
  pair->transport = dt::transport::make_zmq_transport(options);
  pair->server = std::make_unique<dt::roles::HeartbeatServer>(*pair->transport, 8, 1, kHour);
  pair->client = std::make_unique<dt::roles::HeartbeatClient>(*pair->transport,
                                                              pair->server->endpoint(), 8, 0,
                                                              kHour, kHour);
  // The first ping (sent at once) and its pong: both threads are now in hour-long waits.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pair->server->silent_ms(0) < 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(pair->server->silent_ms(0) >= 0);

  auto stopped = std::make_shared<std::promise<void>>();
  auto done = stopped->get_future();
  std::thread([pair, stopped]() mutable {
    pair->client.reset();
    pair->server.reset();
    stopped->set_value();
  }).detach();  // a stop that failed to wake would block for an hour: reported below, not waited
  REQUIRE_MESSAGE(done.wait_for(std::chrono::seconds(60)) == std::future_status::ready,
                  "the heartbeat threads did not stop: the stop waits for the poll slice");
}

TEST_CASE("launcher: exit codes and signals are reported, logs captured, children reaped") {
  const dt::files::TempDir dir("dt-launcher-test");
  dt::Launcher launcher;
  const auto failing = launcher.spawn(0, "/bin/sh", {"-c", "echo before the end; exit 3"},
                                      dir.path() / "0.log");
  const auto sleeper = launcher.spawn(1, "/bin/sh", {"-c", "sleep 30"}, dir.path() / "1.log");
  CHECK(launcher.pid_of(1) == sleeper);
  std::vector<dt::ChildExit> exits;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (exits.empty() && std::chrono::steady_clock::now() < deadline) {
    exits = launcher.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(exits.size() == 1);
  CHECK(exits[0].pid == failing);
  CHECK(exits[0].status.describe() == "exited with code 3");
  CHECK(dt::tail_of(dir.path() / "0.log", 3) == "before the end");
  CHECK(launcher.running(1));
  ::kill(sleeper, SIGKILL);
  REQUIRE(launcher.wait_all(std::chrono::seconds(10)));
  CHECK_FALSE(launcher.running(1));
  // wait_all keeps what it reaped for poll, and every exit is reported once.
  const auto late = launcher.poll();
  REQUIRE(late.size() == 1);
  CHECK(late[0].pid == sleeper);
  CHECK(late[0].status.describe() == "was killed by signal 9 (SIGKILL)");
  CHECK(launcher.poll().empty());

  dt::Launcher other;
  other.spawn(0, "/bin/sh", {"-c", "sleep 30"}, dir.path() / "2.log");
  other.stop_all(std::chrono::milliseconds(2000));
  CHECK_FALSE(other.running(0));
  CHECK(dt::ExitStatus{0, SIGKILL}.describe() == "was killed by signal 9 (SIGKILL)");
}

TEST_CASE("launcher: await_child waits for one child's end, and its exit comes from poll") {
  // What a failed send to a worker relies on (CoordinatorSession::send_request): a worker that
  // is dying has closed its sockets a moment before it can be reaped.
  const dt::files::TempDir dir("dt-launcher-await");
  dt::Launcher launcher;
  const auto dying = launcher.spawn(0, "/bin/sh", {"-c", "sleep 0.3; kill -9 $$"},
                                    dir.path() / "0.log");
  launcher.spawn(1, "/bin/sh", {"-c", "sleep 30"}, dir.path() / "1.log");
  CHECK_FALSE(launcher.await_child(1, std::chrono::milliseconds(50)));  // still running
  REQUIRE(launcher.await_child(0, std::chrono::seconds(10)));
  CHECK_FALSE(launcher.running(0));
  CHECK(launcher.running(1));
  const auto exits = launcher.poll();
  REQUIRE(exits.size() == 1);
  CHECK(exits[0].pid == dying);
  CHECK(exits[0].status.describe() == "was killed by signal 9 (SIGKILL)");
  CHECK(launcher.await_child(0, std::chrono::milliseconds(0)));  // ended already: no wait
  CHECK(launcher.poll().empty());  // reported once
}
