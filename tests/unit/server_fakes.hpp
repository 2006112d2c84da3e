#pragma once
// One parameter server thread over real inproc sockets, driven by hand-made worker messages:
// the worker side the server tests share.

#include "core/protocol/protocol.hpp"
#include "core/servers/param_server.hpp"
#include "transports/transport.hpp"

#include <doctest/doctest.h>

namespace {

constexpr std::uint64_t kJob = 77;
using dt::protocol::Envelope;
using dt::protocol::Type;
using dt::transport::deadline_in;

struct FakeWorker {
  std::uint32_t rank;
  std::unique_ptr<dt::transport::Connection> connection;

  FakeWorker(dt::transport::Transport& t, const std::string& endpoint, std::uint32_t r)
      : rank(r), connection(t.connect(endpoint, dt::protocol::peer_name(r))) {}

  void pull(std::uint64_t steps) {
    Envelope e{.type = Type::kPull, .rank = rank};
    e.fields = {{"steps", steps}};
    connection->send(dt::protocol::encode(std::move(e), kJob), deadline_in(std::chrono::seconds(5)));
  }
  void push(std::uint64_t step, std::uint64_t version, std::uint64_t rows,
            std::vector<double> grad) {
    Envelope e{.type = Type::kPush, .rank = rank, .step = step};
    e.fields = {{"rows", rows}, {"loss_sum", 1.0}, {"version", version}};
    e.arrays.push_back(dt::wire::to_bytes(std::span<const double>(grad)));
    connection->send(dt::protocol::encode(std::move(e), kJob), deadline_in(std::chrono::seconds(5)));
  }
  // True when nothing comes within `wait` (a slice the server must not send).
  bool quiet(std::chrono::milliseconds wait) {
    return !connection->receive(deadline_in(wait)).has_value();
  }
  // The next message, whole. Fails the test after 5 s.
  Envelope next() {
    auto m = connection->receive(deadline_in(std::chrono::seconds(5)));
    REQUIRE(m.has_value());
    return dt::protocol::decode(*m, kJob);
  }
  // The next slice: {version, values}. Fails the test after 5 s.
  std::pair<std::uint64_t, std::vector<double>> slice() {
    auto m = connection->receive(deadline_in(std::chrono::seconds(5)));
    REQUIRE(m.has_value());
    const auto e = dt::protocol::decode(*m, kJob);
    REQUIRE(e.type == Type::kSlice);
    const auto d = dt::protocol::doubles(e, 0);
    return {dt::protocol::count(e, "version"), {d.begin(), d.end()}};
  }
};

// A server of keys [0, 2) for `workers`, stepping plain SGD at lr 1 with no L2.
[[maybe_unused]] dt::roles::ServerOptions two_key_options(int workers, bool asynchronous) {
  dt::roles::ServerOptions o;
  o.range = {0, 2};
  o.workers = workers;
  o.asynchronous = asynchronous;
  o.optimizer.lr = 1.0;
  o.job_id = kJob;
  return o;
}

[[maybe_unused]] std::unique_ptr<dt::transport::Transport> inproc() {
  dt::transport::TransportOptions o;
  o.kind = dt::transport::TransportOptions::Kind::kInproc;
  o.job_id = kJob;
  return dt::transport::make_zmq_transport(o);
}

}  // namespace
