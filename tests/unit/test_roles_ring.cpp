// The ring topology end to end inside one process: workers are threads over inproc ZeroMQ, the
// same code as processes. Ring training must be the star's arithmetic: the closed-form first
// step, the star's parameters and log to rounding, and the star's divergence message.

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"
#include "core/protocol/protocol.hpp"
#include "core/coordinator/coordinator.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

namespace {

using dt::config::Config;

Config ring_config(int workers, const std::string& topology, const std::string& extra = "") {
  return dt::config::parse(
      "version: 1\nseed: 5\nmodel: {type: linear_regression, l2: 0.05}\n"
      "data: {synthetic: {kind: linear, rows: 301, features: 4, noise: 0.3}, normalize: none}\n"
      "shards: {count: " + std::to_string(workers) + ", strategy: round_robin}\n"
      "aggregation: {mode: gradients, topology: " + topology + "}\n"
      "transport: {type: inproc}\n" + extra,
      "test.yaml", "/tmp");
}

dt::roles::RunResult run_training(const Config& config) {
  const auto plan = dt::roles::make_plan(config);
  return dt::roles::run_coordinator(config, plan, {"/nonexistent", 1});
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 1e-300;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

}  // namespace

TEST_CASE("ring mode: one full-batch step equals the closed-form gradient step") {
  // From zero parameters (l2 adds nothing at zero) one SGD step lands at lr * (2/n) [X^T y; sum y].
  const auto training = "training: {epochs: 1, batch_size: full, shuffle: false, "
                        "optimizer: {type: sgd, lr: 0.1}}\n";
  const Config base = ring_config(1, "ring", training);
  const auto& spec = *base.data.synthetic;
  dt::data::RowMatrix x(spec.rows, spec.features);
  Eigen::VectorXd y(spec.rows);
  dt::data::synthesize(spec, base.seed, 0, static_cast<std::uint64_t>(spec.rows), x, y);
  const double scale = 0.1 * 2.0 / static_cast<double>(spec.rows);
  const Eigen::VectorXd w = scale * (x.transpose() * y);
  for (int workers : {1, 2, 3, 4}) {
    CAPTURE(workers);
    const auto result = run_training(ring_config(workers, "ring", training));
    REQUIRE(result.status == "ok");
    REQUIRE(result.params.size() == 5);
    for (int j = 0; j < 4; ++j) {
      CHECK(result.params[static_cast<std::size_t>(j)] == doctest::Approx(w(j)).epsilon(1e-12));
    }
    CHECK(result.params[4] == doctest::Approx(scale * y.sum()).epsilon(1e-12));
    CHECK(result.aggregation.at("topology") == "ring");
    CHECK(result.aggregation.at("workers").size() == static_cast<std::size_t>(workers));
  }
}

TEST_CASE("ring mode: parameters and log equal the star's over many steps") {
  const auto extra = "training: {epochs: 3, batch_size: 30, optimizer: {type: adam, lr: 0.05}}\n"
                     "output: {log_every: {steps: 4}}\n";
  for (int workers : {2, 3}) {
    CAPTURE(workers);
    auto star_config = ring_config(workers, "star", extra);
    auto ring_config_ = ring_config(workers, "ring", extra);
    star_config.data.validation_fraction = ring_config_.data.validation_fraction = 0.2;
    const auto star = run_training(star_config);
    const auto ring = run_training(ring_config_);
    REQUIRE(ring.status == "ok");
    CHECK(ring.steps == star.steps);
    CHECK(max_relative_difference(ring.params, star.params) < 1e-12);
    REQUIRE(ring.log.size() == star.log.size());
    for (std::size_t i = 0; i < ring.log.size(); ++i) {
      CHECK(ring.log[i].step == star.log[i].step);
      CHECK(ring.log[i].train_loss == doctest::Approx(star.log[i].train_loss).epsilon(1e-12));
      REQUIRE(ring.log[i].validation_loss);
      CHECK(*ring.log[i].validation_loss == doctest::Approx(*star.log[i].validation_loss).epsilon(1e-12));
      REQUIRE(ring.log[i].worker_loss.size() == star.log[i].worker_loss.size());
      for (std::size_t r = 0; r < ring.log[i].worker_loss.size(); ++r) {
        CHECK(ring.log[i].worker_loss[r] == doctest::Approx(star.log[i].worker_loss[r]).epsilon(1e-12));
      }
    }
    REQUIRE(ring.final);
    CHECK(ring.final->loss == doctest::Approx(star.final->loss).epsilon(1e-12));
    CHECK(star.aggregation.empty());
  }
}

TEST_CASE("ring mode: a diverging run fails like the star") {
  auto config = ring_config(3, "ring", "training: {epochs: 50, batch_size: full, shuffle: false}\n");
  config.training.optimizer.lr = 1e6;
  auto star = config;
  star.aggregation.topology = dt::config::Topology::kStar;
  std::string ring_error, star_error;
  try {
    (void)run_training(config);
  } catch (const dt::TrainingError& e) {
    ring_error = e.what();
  }
  try {
    (void)run_training(star);
  } catch (const dt::TrainingError& e) {
    star_error = e.what();
  }
  REQUIRE(ring_error.find("training diverged ") == 0);
  // The same step and advice; the values between may differ in their last bits (the ring and
  // the star add in other orders), and an infinite loss may read inf in the ring (its losses
  // travel as raw doubles) where the star's JSON field turns it into nan.
  const auto step_of = [](const std::string& text) { return text.substr(0, text.find(':')); };
  const auto advice_of = [](const std::string& text) { return text.substr(text.rfind("; lower")); };
  CHECK(step_of(ring_error) == step_of(star_error));
  CHECK(advice_of(ring_error) == advice_of(star_error));
}

TEST_CASE("peer links are opened only when the config needs them") {
  CHECK_FALSE(dt::roles::needs_peer_links(ring_config(2, "star")));
  CHECK(dt::roles::needs_peer_links(ring_config(2, "ring")));
  auto tensor = ring_config(2, "star");
  tensor.parallelism.tensor = 2;
  CHECK(dt::roles::needs_peer_links(tensor));
}

TEST_CASE("protocol: the peer endpoint list round-trips") {
  const std::vector<std::string> endpoints = {"ipc:///tmp/a/p0.sock", "tcp://127.0.0.1:4000"};
  const auto message = dt::protocol::encode(dt::protocol::make_peers(endpoints), 7);
  const auto e = dt::protocol::decode(message, 7);
  CHECK(e.type == dt::protocol::Type::kPeers);
  CHECK(dt::protocol::read_peers(e) == endpoints);
  CHECK(std::string(dt::protocol::name_of(dt::protocol::Type::kPeerChunk)) == "peer chunk");
}
