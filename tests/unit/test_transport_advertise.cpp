// tcp listeners that tell peers another host than the one they bound (transport.advertise,
// `run --advertise`): a listener on every interface is reached at the advertised name.

#include "tests/unit/harness.hpp"
#include "transports/transport.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

using dt::test::kPatience;
using dt::test::Tcp;
using dt::transport::deadline_in;
using dt::transport::TransportOptions;

constexpr std::uint64_t kAdvertiseJob = 0xAD7E;

dt::wire::Message advertise_hello(std::uint32_t rank) {
  dt::wire::Message m;
  m.header.type = 7;
  m.header.job_id = kAdvertiseJob;
  m.header.rank = rank;
  return m;
}

}  // namespace

TEST_CASE("transport advertise: every interface, advertised as the given host, with its port") {
  TransportOptions options = dt::test::options_for<Tcp>(kAdvertiseJob);
  options.tcp_address = "0.0.0.0:0";
  // Another loopback address than the route's 127.0.0.1: reaches this host, and names no
  // interface ZeroMQ bound by itself (a host name may not resolve on a minimal system).
  options.advertise = "127.0.0.2";
  auto transport = dt::transport::make_zmq_transport(options);
  auto coord = transport->listen("coord");
  auto hb = transport->listen("hb");
  REQUIRE(coord->endpoint().starts_with("tcp://127.0.0.2:"));
  REQUIRE(hb->endpoint().starts_with("tcp://127.0.0.2:"));
  CHECK(coord->endpoint() != hb->endpoint());

  // The advertised endpoint reaches the listener (on the bound port).
  auto connection = transport->connect(hb->endpoint(), "w3");
  connection->send(advertise_hello(3), deadline_in(kPatience));
  auto incoming = hb->receive(deadline_in(kPatience));
  REQUIRE(incoming);
  CHECK(incoming->peer == "w3");
  CHECK(incoming->message.header.rank == 3);
}

TEST_CASE("transport advertise: without it, the bound address as ZeroMQ reports it") {
  TransportOptions options = dt::test::options_for<Tcp>(kAdvertiseJob);
  options.tcp_address = "0.0.0.0:0";
  auto transport = dt::transport::make_zmq_transport(options);
  CHECK(transport->listen("coord")->endpoint().starts_with("tcp://0.0.0.0:"));
}
