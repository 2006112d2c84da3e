// Malformed input from the network is dropped, counted and logged once per peer, never thrown at
// the caller, and a well-formed message after it still arrives. The strangers here are raw
// ZeroMQ sockets (their own context: ipc and tcp only) and, for tcp, plain POSIX sockets that
// speak garbage or a hand-made ZMTP handshake.

#include "base/error.hpp"
#include "base/files.hpp"
#include "tests/unit/harness.hpp"
#include "tests/unit/stderr_capture.hpp"
#include "transports/transport.hpp"

#include <doctest/doctest.h>
#include <zmq.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using dt::test::Inproc;
using dt::test::Ipc;
using dt::test::kPatience;
using dt::test::make_transport;
using dt::test::StderrCapture;
using dt::test::count;
using dt::test::Tcp;
using dt::transport::deadline_in;
using dt::transport::TransportOptions;
using dt::wire::Bytes;
using dt::wire::Message;

constexpr std::uint64_t kGarbageJob = 0xBAD;

Message valid_message(std::uint64_t step, std::size_t payload_bytes = 16) {
  Message m;
  m.header.type = 1;
  m.header.step = step;
  m.payload.push_back(Bytes(payload_bytes, std::byte{0x5A}));
  return m;
}

void send_frames(zmq::socket_t& socket, const std::vector<Bytes>& frames) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const auto flags = i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    REQUIRE(socket.send(zmq::buffer(frames[i].data(), frames[i].size()), flags).has_value());
  }
}

Bytes header_frame(std::uint64_t payload_size, std::uint16_t version = dt::wire::kProtocolVersion) {
  dt::wire::Header h;
  h.type = 1;
  h.payload_size = payload_size;
  h.version = version;
  return dt::wire::encode_header(h);
}

}  // namespace

TEST_CASE_TEMPLATE("transport garbage: a raw peer's malformed frames are dropped and logged once",
                   K, Ipc, Tcp) {
  auto transport = make_transport<K>(kGarbageJob);
  auto listener = transport->listen("coord");

  zmq::context_t context;
  zmq::socket_t raw(context, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.set(zmq::sockopt::routing_id, "evil");
  raw.connect(listener->endpoint());

  Bytes wrong_magic = header_frame(0);
  wrong_magic[0] = std::byte{'X'};
  send_frames(raw, {Bytes(3)});                               // a 3-byte "header"
  send_frames(raw, {header_frame(16)});                       // payload missing
  send_frames(raw, {wrong_magic});                            // not ours
  send_frames(raw, {header_frame(16), Bytes(8)});             // payload short
  send_frames(raw, {header_frame(0, 7)});                     // another version
  send_frames(raw, {header_frame(8), Bytes(8), Bytes{}});     // fine: an empty frame is a frame
  send_frames(raw, {header_frame(32), Bytes(16), Bytes(16)});  // fine

  StderrCapture capture;
  auto first = listener->receive(deadline_in(kPatience));
  auto second = listener->receive(deadline_in(kPatience));
  const std::string log = capture.finish();

  REQUIRE(first);
  CHECK(first->peer == "evil");
  CHECK(first->message.payload.size() == 2);
  REQUIRE(second);
  CHECK(second->message.header.payload_size == 32);
  CHECK(listener->counters().messages_dropped == 5);
  CHECK(listener->counters().messages_received == 2);
  // Logged once for the peer, with the first reason.
  CHECK(count(log, "dropped a malformed message") == 1);
  CHECK(count(log, "from peer 'evil' on " + listener->endpoint() +
                       ": header frame is 3 bytes, expected 40") == 1);
}

TEST_CASE_TEMPLATE("transport garbage: every kind drops another protocol version", K,
                   DT_ALL_TRANSPORTS) {
  auto transport = make_transport<K>(kGarbageJob);
  auto listener = transport->listen("coord");
  auto connection = transport->connect(listener->endpoint(), "old");
  Message old = valid_message(1);
  old.header.version = 7;
  StderrCapture capture;
  connection->send(old, deadline_in(kPatience));
  connection->send(valid_message(2), deadline_in(kPatience));
  auto incoming = listener->receive(deadline_in(kPatience));
  const std::string log = capture.finish();
  REQUIRE(incoming);
  CHECK(incoming->message.header.step == 2);
  CHECK(listener->counters().messages_dropped == 1);
  CHECK(count(log, "from peer 'old' on " + listener->endpoint() +
                       ": protocol version 7, this build speaks 3") == 1);
}

TEST_CASE_TEMPLATE("transport garbage: a declared payload over the listener's limit is dropped", K,
                   Ipc, Tcp) {
  TransportOptions small = dt::test::options_for<K>(kGarbageJob);
  small.max_payload = 1024;
  auto transport = dt::transport::make_zmq_transport(small);
  auto listener = transport->listen("coord");
  auto sender_transport = make_transport<K>(kGarbageJob);
  auto connection = sender_transport->connect(listener->endpoint(), "big");
  StderrCapture capture;
  connection->send(valid_message(1, 2000), deadline_in(kPatience));
  connection->send(valid_message(2, 1024), deadline_in(kPatience));
  auto incoming = listener->receive(deadline_in(kPatience));
  const std::string log = capture.finish();
  REQUIRE(incoming);
  CHECK(incoming->message.header.step == 2);
  CHECK(listener->counters().messages_dropped == 1);
  CHECK(count(log, "payload of 2000 bytes exceeds the limit of 1024 bytes") == 1);
}

TEST_CASE_TEMPLATE("transport garbage: a connection drops malformed replies", K, Ipc, Tcp) {
  auto transport = make_transport<K>(kGarbageJob);
  // A stranger's ROUTER stands where the coordinator should be.
  zmq::context_t context;
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  const dt::files::TempDir dir("dt-test-");  // libzmq does not always unlink its socket file
  std::string endpoint = "tcp://127.0.0.1:*";
  if (K::kKind == TransportOptions::Kind::kIpc) endpoint = "ipc://" + (dir.path() / "r").string();
  router.bind(endpoint);
  endpoint = router.get(zmq::sockopt::last_endpoint);

  auto connection = transport->connect(endpoint, "w0");
  connection->send(valid_message(1), deadline_in(kPatience));
  zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
  REQUIRE(zmq::poll(&item, 1, std::chrono::milliseconds(kPatience)) == 1);
  std::vector<zmq::message_t> hello;  // identity, header, payload
  do {
    hello.emplace_back();
    REQUIRE(router.recv(hello.back()).has_value());
  } while (hello.back().more());
  REQUIRE(hello.size() == 3);
  CHECK(hello[0].to_string() == "w0");
  const Bytes id(static_cast<const std::byte*>(hello[0].data()),
                 static_cast<const std::byte*>(hello[0].data()) + hello[0].size());
  StderrCapture capture;
  send_frames(router, {id, Bytes(3)});
  send_frames(router, {id, header_frame(8), Bytes(8)});
  auto reply = connection->receive(deadline_in(kPatience));
  const std::string log = capture.finish();
  REQUIRE(reply);
  CHECK(reply->header.payload_size == 8);
  CHECK(connection->counters().messages_dropped == 1);
  CHECK(count(log, "dropped a malformed message from " + endpoint +
                       " (as 'w0'): header frame is 3 bytes, expected 40") == 1);
}

namespace {

// A plain TCP client for the tests below; closes on destruction.
class RawTcp {
 public:
  explicit RawTcp(const std::string& endpoint) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    REQUIRE(fd_ >= 0);
    const auto colon = endpoint.rfind(':');
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(std::stoi(endpoint.substr(colon + 1))));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    timeval tv{};
    tv.tv_sec = 2;  // reads below wait at most this long
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawTcp() { ::close(fd_); }
  RawTcp(const RawTcp&) = delete;
  RawTcp& operator=(const RawTcp&) = delete;

  void write(const std::string& bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }
  // Reads exactly `size` bytes (false on timeout or close).
  bool read(std::size_t size) {
    std::string buffer(size, '\0');
    std::size_t got = 0;
    while (got < size) {
      const ssize_t n = ::recv(fd_, buffer.data() + got, size - got, 0);
      if (n <= 0) return false;
      got += static_cast<std::size_t>(n);
    }
    return true;
  }
  // Reads until the peer closes the connection; false if it is still open after the timeout.
  bool closed_by_peer() {
    char buffer[512];
    for (;;) {
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

 private:
  int fd_;
};

constexpr std::size_t kGreetingSize = 64;

// A ZMTP 3.0 greeting for the NULL mechanism (signature, version 3.0, "NULL", as-server 0).
std::string zmtp_greeting() {
  std::string greeting("\xFF\0\0\0\0\0\0\0\x01\x7F", 10);
  greeting += std::string("\x03\x00", 2);
  greeting += std::string("NULL") + std::string(16, '\0');
  greeting += std::string(1, '\0') + std::string(31, '\0');
  return greeting;
}

// The READY command of a DEALER named `id`, sent once the greetings are exchanged.
std::string zmtp_ready(const std::string& id) {
  const auto property = [](const std::string& name, const std::string& value) {
    std::string p(1, static_cast<char>(name.size()));
    p += name;
    const auto n = static_cast<std::uint32_t>(value.size());
    p += static_cast<char>(n >> 24);
    p += static_cast<char>((n >> 16) & 0xFF);
    p += static_cast<char>((n >> 8) & 0xFF);
    p += static_cast<char>(n & 0xFF);
    p += value;
    return p;
  };
  const std::string body =
      std::string("\x05READY") + property("Socket-Type", "DEALER") + property("Identity", id);
  return '\x04' + std::string(1, static_cast<char>(body.size())) + body;
}

}  // namespace

TEST_CASE("transport garbage: random bytes and a bogus greeting on the tcp port harm nothing") {
  auto transport = make_transport<Tcp>(kGarbageJob);
  auto listener = transport->listen("coord");
  std::mt19937 random(12345);
  {
    // A first byte other than 0xFF reads as a ZMTP 1.0 peer: libzmq waits for the rest of that
    // handshake (at most ZMQ_HANDSHAKE_IVL), and nothing reaches the listener.
    RawTcp http(listener->endpoint());
    http.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  {
    RawTcp noise(listener->endpoint());
    std::string bytes(4096, '\0');
    for (auto& c : bytes) c = static_cast<char>(random() & 0xFF);
    bytes[0] = '\xFF';  // looks like a ZMTP signature at first
    noise.write(bytes);
    CHECK(noise.closed_by_peer());
  }
  {
    // A good signature, then version 3 with a mechanism nobody speaks.
    RawTcp bogus(listener->endpoint());
    std::string greeting = zmtp_greeting();
    greeting.replace(12, 4, "EVIL");
    bogus.write(greeting);
    CHECK(bogus.closed_by_peer());
  }
  CHECK_FALSE(listener->receive(deadline_in(20ms)));
  CHECK(listener->counters().messages_dropped == 0);

  auto connection = transport->connect(listener->endpoint(), "w0");
  connection->send(valid_message(1), deadline_in(kPatience));
  auto incoming = listener->receive(deadline_in(kPatience));
  REQUIRE(incoming);
  CHECK(incoming->peer == "w0");
}

TEST_CASE("transport garbage: a huge frame size is refused before ZeroMQ allocates it") {
  auto transport = make_transport<Tcp>(kGarbageJob);
  auto listener = transport->listen("coord");
  RawTcp raw(listener->endpoint());
  // Greetings first, as libzmq peers do (libzmq 4.3 sometimes closes a connection whose
  // greeting arrives in one piece with what follows it).
  raw.write(zmtp_greeting());
  REQUIRE(raw.read(kGreetingSize));
  raw.write(zmtp_ready("raw"));
  // A short message frame with a 3-byte body: ZeroMQ passes it on, our header check drops it.
  raw.write(std::string("\x00\x03" "abc", 5));
  StderrCapture capture;
  const auto give_up = deadline_in(kPatience);
  while (listener->counters().messages_dropped == 0 && dt::transport::Clock::now() < give_up) {
    CHECK_FALSE(listener->receive(deadline_in(20ms)));
  }
  CHECK(count(capture.finish(), "from peer 'raw' on " + listener->endpoint()) == 1);
  CHECK(listener->counters().messages_dropped == 1);
  // A long frame declaring 2^62 bytes: over ZMQ_MAXMSGSIZE, so the connection is dropped.
  raw.write(std::string("\x02\x40\0\0\0\0\0\0\0", 9));
  CHECK(raw.closed_by_peer());

  auto connection = transport->connect(listener->endpoint(), "w0");
  connection->send(valid_message(1), deadline_in(kPatience));
  REQUIRE(listener->receive(deadline_in(kPatience)));
  CHECK(listener->counters().messages_dropped == 1);
}
