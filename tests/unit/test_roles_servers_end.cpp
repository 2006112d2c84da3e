// An async parameter server told that training is over (training.early_stopping,
// ParameterServer::end_training): held pulls and every push or pull awaiting an answer get
// kEnd, nothing more is applied, and a worker's last push (which awaits nothing) gets nothing.

#include "server_fakes.hpp"

#include <doctest/doctest.h>

using dt::roles::ParameterServer;

TEST_CASE("servers: an ended async server answers the held pull and every awaited push with an "
          "end, applies nothing more, and answers no last push") {
  auto transport = inproc();
  auto o = two_key_options(2, true);
  o.index = 1;
  o.worker_steps = {3, 3};
  o.max_staleness = 0;
  ParameterServer server(*transport, o, {0.0, 0.0});
  FakeWorker w0(*transport, server.endpoint(), 0), w1(*transport, server.endpoint(), 1);
  w0.pull(3);
  w1.pull(3);
  CHECK(w0.slice().first == 0);
  CHECK(w1.slice().first == 0);
  w0.push(0, 0, 1, {1.0, 1.0});
  CHECK(w0.quiet(std::chrono::milliseconds(100)));  // held: lock-step, worker 1 is at step 0
  server.end_training();
  const auto held = w0.next();  // the held pull, answered at the server's next poll
  CHECK(held.type == Type::kEnd);
  CHECK(dt::protocol::count(held, "server") == 1);
  CHECK(dt::protocol::count(held, "version") == 1);  // its push was applied before the end
  w1.push(0, 0, 1, {5.0, 5.0});  // awaits the next step's slice: gets the end, is not applied
  const auto end = w1.next();
  CHECK(end.type == Type::kEnd);
  CHECK(dt::protocol::count(end, "version") == 1);
  w0.push(2, 1, 1, {7.0, 7.0});  // a last step's push (2 + 1 == 3) awaits nothing: no answer
  CHECK(w0.quiet(std::chrono::milliseconds(100)));
  std::vector<double> params(2);
  CHECK(server.copy_slice(params));
  CHECK(params == std::vector<double>{-1.0, -1.0});  // w0's first push only
  CHECK(server.stats().version == 1);
  CHECK(server.stats().worker_steps == std::vector<std::uint64_t>{1, 0});
  server.check();
}
