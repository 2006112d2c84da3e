// Peers of different disttrain protocol versions: each drops the other's messages, and the
// listener sends its own version back once, so that a connection of another build learns why
// nobody answers it (Connection::refusal) instead of waiting out its timeout.

#include "tests/unit/harness.hpp"
#include "transports/transport.hpp"
#include "transports/wire.hpp"

#include <doctest/doctest.h>
#include <zmq.hpp>

#include <string>

namespace {

using namespace std::chrono_literals;
using dt::test::kPatience;
using dt::test::Tcp;
using dt::transport::deadline_in;
using dt::wire::kProtocolVersion;

constexpr std::uint64_t kVersionJob = 0x7E5;
constexpr std::uint16_t kOther = kProtocolVersion + 5;

dt::wire::Bytes header_of_version(std::uint16_t version) {
  dt::wire::Header h;
  h.type = 1;
  h.version = version;
  return dt::wire::encode_header(h);
}

std::span<const std::byte> bytes_of(const zmq::message_t& m) {
  return {static_cast<const std::byte*>(m.data()), m.size()};
}

}  // namespace

TEST_CASE("transport version: a listener answers another version with its own, once per peer") {
  auto transport = dt::test::make_transport<Tcp>(kVersionJob);
  auto listener = transport->listen("coord");
  zmq::context_t context;
  zmq::socket_t old(context, zmq::socket_type::dealer);
  old.set(zmq::sockopt::linger, 0);
  old.set(zmq::sockopt::rcvtimeo, 2000);
  old.set(zmq::sockopt::routing_id, "old-build");
  old.connect(listener->endpoint());
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto frame = header_of_version(kOther);
    old.send(zmq::buffer(frame.data(), frame.size()), zmq::send_flags::none);
    CHECK_FALSE(listener->receive(deadline_in(300ms)));  // dropped
  }
  zmq::message_t notice;
  REQUIRE(old.recv(notice));
  CHECK(dt::wire::peek_version(bytes_of(notice)) == kProtocolVersion);
  // The second message of that peer got no second notice.
  old.set(zmq::sockopt::rcvtimeo, 300);
  zmq::message_t again;
  CHECK_FALSE(old.recv(again));
  CHECK(listener->counters().messages_dropped == 2);
}

TEST_CASE("transport version: a connection told another version says so as its refusal") {
  zmq::context_t context;
  zmq::socket_t other(context, zmq::socket_type::router);
  other.set(zmq::sockopt::linger, 0);
  other.set(zmq::sockopt::rcvtimeo, 5000);
  other.bind("tcp://127.0.0.1:*");
  auto transport = dt::test::make_transport<Tcp>(kVersionJob);
  auto connection = transport->connect(other.get(zmq::sockopt::last_endpoint), "w1");
  CHECK(connection->refusal().kind == dt::transport::Refusal::Kind::kNone);

  dt::wire::Message hello;
  hello.header.type = 1;
  connection->send(hello, deadline_in(kPatience));
  zmq::message_t identity;
  zmq::message_t header;
  REQUIRE(other.recv(identity));
  REQUIRE(other.recv(header));
  CHECK(dt::wire::peek_version(bytes_of(header)) == kProtocolVersion);
  const auto reply = header_of_version(kOther);
  other.send(identity, zmq::send_flags::sndmore);
  other.send(zmq::buffer(reply.data(), reply.size()), zmq::send_flags::none);

  CHECK_FALSE(connection->receive(deadline_in(2000ms)));
  const auto refused = connection->refusal();
  CHECK(refused.kind == dt::transport::Refusal::Kind::kVersion);
  CHECK(refused.why == fmt::format("it speaks disttrain protocol version {}, this build speaks "
                                   "{}: run the same disttrain release on every host",
                                   kOther, kProtocolVersion));
}

TEST_CASE("transport version: peek_version reads any build's header, not other bytes") {
  CHECK(dt::wire::peek_version(header_of_version(9)) == std::uint16_t{9});
  const auto h = header_of_version(9);
  CHECK(dt::wire::peek_version(std::span(h).first(6)) == std::uint16_t{9});  // a shorter header
  CHECK_FALSE(dt::wire::peek_version(std::span(h).first(5)));
  dt::wire::Bytes junk(40, std::byte{0x41});
  CHECK_FALSE(dt::wire::peek_version(junk));
}
