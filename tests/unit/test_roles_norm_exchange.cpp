// training.clip_norm over several parameter servers (core/servers/norm_exchange.hpp): the
// partial norms are combined in server order whatever order they arrive in, a round's factor is
// fixed once complete, and two server threads sharing an exchange step their slices by the
// global factor; a server waiting for the other's norm keeps beating and takes in lost workers.

#include "core/models/optim_controls.hpp"
#include "core/servers/norm_exchange.hpp"
#include "base/error.hpp"
#include "server_fakes.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <thread>

using dt::models::clip_coefficient;
using dt::roles::NormExchange;
using dt::roles::ParameterServer;
using dt::roles::ServerOptions;

namespace {

constexpr std::chrono::milliseconds kLong{5000};

// Nine partial norms whose sum depends on the order of the additions: 1 then eight 1.1e-16
// (each lost next to 1) is 1; the eight first (8.8e-16) then 1 is four ulps above it.
constexpr int kServers = 9;
double partial(int k) { return k == 0 ? 1.0 : 1.1e-16; }

}  // namespace

TEST_CASE("norm exchange: the partials are added in server order, whatever order they come in") {
  double backwards = 0.0;
  for (int k = kServers - 1; k >= 0; --k) backwards += partial(k);
  REQUIRE(backwards != 1.0);  // the order shows in the bits
  REQUIRE(clip_coefficient(backwards, 0.5) != clip_coefficient(1.0, 0.5));
  for (const bool reverse : {false, true}) {
    NormExchange exchange(kServers, 0.5);
    for (int i = 0; i < kServers; ++i) {
      const int k = reverse ? kServers - 1 - i : i;
      CHECK_FALSE(exchange.factor(3, std::chrono::milliseconds(0)).has_value());
      exchange.post(3, k, partial(k));
    }
    CHECK(exchange.factor(3, kLong) == clip_coefficient(1.0, 0.5));
  }
}

TEST_CASE("norm exchange: a repost replaces a partial until the round is complete, then the "
          "factor is fixed") {
  NormExchange exchange(2, 1.0);
  exchange.post(0, 0, 100.0);
  exchange.post(0, 0, 9.0);  // a replacement redoing the round its predecessor posted
  exchange.post(0, 1, 16.0);
  const double fixed = clip_coefficient(25.0, 1.0);
  CHECK(exchange.factor(0, kLong) == fixed);
  exchange.post(0, 1, 1e6);  // a replacement redoing a round the others have stepped
  CHECK(exchange.factor(0, kLong) == fixed);
  CHECK(exchange.factor(1, std::chrono::milliseconds(0)) == std::nullopt);
  // Below the clip: 1.
  exchange.post(1, 0, 0.25);
  exchange.post(1, 1, 0.0);
  CHECK(exchange.factor(1, kLong) == 1.0);
  CHECK_THROWS_AS(exchange.post(2, 2, 1.0), dt::TrainingError);
}

TEST_CASE("norm exchange: a waiting thread gets the factor from the last post") {
  NormExchange exchange(2, 1.0);
  exchange.post(5, 1, 4.0);
  std::optional<double> seen;
  std::thread waiter([&] { seen = exchange.factor(5, kLong); });
  exchange.post(5, 0, 5.0);
  waiter.join();
  CHECK(seen == clip_coefficient(9.0, 1.0));
}

namespace {

ServerOptions clipped(int index, dt::roles::KeyRange range, int workers,
                      std::shared_ptr<NormExchange> norms) {
  ServerOptions o;
  o.index = index;
  o.range = range;
  o.workers = workers;
  o.optimizer.lr = 1.0;
  o.optimizer.clip_norm = 1.0;
  o.job_id = kJob;
  o.norms = std::move(norms);
  return o;
}

}  // namespace

TEST_CASE("servers: clip_norm over two servers steps both slices by the global norm's factor") {
  auto transport = inproc();
  auto norms = std::make_shared<NormExchange>(2, 1.0);
  ParameterServer a(*transport, clipped(0, {0, 1}, 1, norms), {0.0});
  ParameterServer b(*transport, clipped(1, {1, 2}, 1, norms), {0.0});
  FakeWorker wa(*transport, a.endpoint(), 0), wb(*transport, b.endpoint(), 0);
  wa.pull(0);
  wb.pull(0);
  (void)wa.slice();
  (void)wb.slice();
  wa.push(0, 0, 1, {3.0});
  wb.push(0, 0, 1, {4.0});
  // The norm of (3, 4) is 5: each key moves by lr * g / (5 + 1e-6), not by about 1 (its own).
  const double f = clip_coefficient(25.0, 1.0);
  const auto sa = wa.slice();
  const auto sb = wb.slice();
  CHECK(sa.first == 1);
  CHECK(sa.second[0] == doctest::Approx(-3.0 * f).epsilon(1e-15));
  CHECK(sb.second[0] == doctest::Approx(-4.0 * f).epsilon(1e-15));
  CHECK(std::hypot(sa.second[0], sb.second[0]) < 1.0);
  a.check();
  b.check();
}

TEST_CASE("servers: a server waiting for the other's norm keeps beating and takes in a dropped "
          "worker; the round completes when the other posts") {
  auto transport = inproc();
  auto norms = std::make_shared<NormExchange>(2, 1.0);
  ParameterServer a(*transport, clipped(0, {0, 1}, 2, norms), {0.0});
  ParameterServer b(*transport, clipped(1, {1, 2}, 2, norms), {0.0});
  FakeWorker w0a(*transport, a.endpoint(), 0), w0b(*transport, b.endpoint(), 0);
  FakeWorker w1a(*transport, a.endpoint(), 1);
  for (auto* w : {&w0a, &w0b, &w1a}) w->pull(0);
  for (auto* w : {&w0a, &w0b, &w1a}) (void)w->slice();
  w0a.push(0, 0, 1, {3.0});
  w1a.push(0, 0, 1, {3.0});  // a's round is complete: it posts and waits for b's norm
  w0b.push(0, 0, 1, {4.0});  // b's waits for worker 1
  CHECK(w0a.quiet(std::chrono::milliseconds(1500)));
  // 1.5 s without a message: a server that blocked in the exchange would be hung for 1 s by now
  // (a waiting server beats every poll slice, 50 ms).
  CHECK(a.failure(1000) == std::nullopt);
  CHECK(a.drop_worker(1, kLong) == 0);  // taken in while it waits
  CHECK(b.drop_worker(1, kLong) == 0);  // b's round completes without worker 1: b posts
  const double f = clip_coefficient(3.0 * 3.0 + 4.0 * 4.0, 1.0);  // (3 + 3) / 2 rows, 4 / 1
  CHECK(w0a.slice().second[0] == doctest::Approx(-3.0 * f).epsilon(1e-15));
  CHECK(w0b.slice().second[0] == doctest::Approx(-4.0 * f).epsilon(1e-15));
  a.check();
  b.check();
}
