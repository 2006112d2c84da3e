// The transport contract for endpoints: where ipc sockets live, tcp ports and bind errors, the
// checks on names, endpoints and identities (the rest of the contract: test_transport.cpp).

#include "base/error.hpp"
#include "tests/unit/harness.hpp"
#include "transports/transport.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using dt::test::Inproc;
using dt::test::Ipc;
using dt::test::kPatience;
using dt::test::make_transport;
using dt::test::pattern;
using dt::test::Tcp;
using dt::transport::deadline_in;
using dt::transport::TransportOptions;

constexpr std::uint64_t kEndpointsJob = 0xC0FFEE;

dt::wire::Message endpoints_message(std::uint16_t type, std::uint32_t rank, std::uint64_t step,
                                    std::vector<dt::wire::Bytes> payload) {
  return dt::test::make_message(kEndpointsJob, type, rank, step, std::move(payload));
}

}  // namespace

TEST_CASE("transport: inproc peers may connect before the listener binds") {
  auto transport = make_transport<Inproc>(kEndpointsJob);
  auto connection = transport->connect("inproc://dt-c0ffee-coord", "w0");
  connection->send(endpoints_message(1, 0, 5, {pattern(10, 1)}), deadline_in(kPatience));
  auto listener = transport->listen("coord");
  CHECK(listener->endpoint() == "inproc://dt-c0ffee-coord");
  auto incoming = listener->receive(deadline_in(kPatience));
  REQUIRE(incoming);
  CHECK(incoming->message.header.step == 5);
}

TEST_CASE("transport: the ipc socket directory lives exactly as long as the transport") {
  std::filesystem::path dir;
  {
    auto transport = make_transport<Ipc>(kEndpointsJob);
    auto listener = transport->listen("coord");
    const std::string& endpoint = listener->endpoint();
    REQUIRE(endpoint.starts_with("ipc://"));
    CHECK(endpoint.ends_with("/coord.sock"));
    const std::filesystem::path socket_file = endpoint.substr(6);
    dir = socket_file.parent_path();
    CHECK(dir.filename().string().starts_with("disttrain-"));
    CHECK(std::filesystem::is_directory(dir));
    CHECK(std::filesystem::exists(socket_file));
    CHECK(endpoint.size() < 107);
    auto second = transport->listen("hb");
    CHECK(second->endpoint() == "ipc://" + (dir / "hb.sock").string());
  }
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("transport: a long TMPDIR falls back to /tmp for ipc sockets") {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  const std::string long_dir = "/tmp/" + std::string(90, 'x');
  std::filesystem::create_directories(long_dir);
  ::setenv("TMPDIR", long_dir.c_str(), 1);
  std::string endpoint;
  {
    auto transport = make_transport<Ipc>(kEndpointsJob);
    auto listener = transport->listen("coord");
    endpoint = listener->endpoint();
    // And it works.
    auto connection = transport->connect(endpoint, "w0");
    connection->send(endpoints_message(1, 0, 0, {}), deadline_in(kPatience));
    CHECK(listener->receive(deadline_in(kPatience)));
  }
  if (old) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  std::filesystem::remove_all(long_dir);
  CHECK(endpoint.starts_with("ipc:///tmp/disttrain-"));
}

TEST_CASE("transport: tcp reports the real port and names the address when bind fails") {
  auto transport = make_transport<Tcp>(kEndpointsJob);
  auto listener = transport->listen("coord");
  const std::string& endpoint = listener->endpoint();
  REQUIRE(endpoint.starts_with("tcp://127.0.0.1:"));
  const int port = std::atoi(endpoint.c_str() + std::string_view("tcp://127.0.0.1:").size());
  CHECK(port > 0);
  CHECK(port < 65536);

  TransportOptions same_port = dt::test::options_for<Tcp>(kEndpointsJob);
  same_port.tcp_address = "127.0.0.1:" + std::to_string(port);
  auto other = dt::transport::make_zmq_transport(same_port);
  const std::string expected =
      "cannot listen on tcp://127.0.0.1:" + std::to_string(port) + ": Address already in use";
  CHECK_THROWS_WITH_AS((void)other->listen("coord"), expected.c_str(), dt::TransportError);

  // A fixed port goes to the first listener; a second one gets a free port.
  listener.reset();
  auto fixed = dt::transport::make_zmq_transport(same_port);
  bool bound = false;
  for (int attempt = 0; attempt < 50 && !bound; ++attempt) {  // the port may linger briefly
    try {
      auto coord = fixed->listen("coord");
      bound = true;
      CHECK(coord->endpoint() == "tcp://127.0.0.1:" + std::to_string(port));
      auto hb = fixed->listen("hb");
      CHECK(hb->endpoint().starts_with("tcp://127.0.0.1:"));
      CHECK(hb->endpoint() != coord->endpoint());
    } catch (const dt::TransportError&) {
      std::this_thread::sleep_for(10ms);
    }
  }
  CHECK(bound);

  TransportOptions bad = dt::test::options_for<Tcp>(kEndpointsJob);
  bad.tcp_address = "localhost";
  CHECK_THROWS_WITH_AS((void)dt::transport::make_zmq_transport(bad),
                       "bad tcp address 'localhost': expected host:port, e.g. 127.0.0.1:0 (port 0: "
                       "any free port) or [::1]:5555",
                       dt::TransportError);
  bad.tcp_address = "127.0.0.1:99999";
  CHECK_THROWS_AS((void)dt::transport::make_zmq_transport(bad), dt::TransportError);
}

TEST_CASE("transport: names, endpoints and identities are checked") {
  auto transport = make_transport<Inproc>(kEndpointsJob);
  auto listener = transport->listen("coord");
  CHECK_THROWS_WITH_AS((void)transport->listen("coord"),
                       "cannot listen as 'coord': the name is already used by this transport",
                       dt::TransportError);
  CHECK_THROWS_WITH_AS((void)transport->listen("../x"),
                       "listener name '../x' must be 1 to 32 letters, digits, '-' or '_'",
                       dt::TransportError);
  CHECK_THROWS_AS((void)transport->listen(""), dt::TransportError);
  CHECK_THROWS_WITH_AS((void)transport->connect("http://example.com", "w0"),
                       "cannot connect to 'http://example.com': an endpoint starts with "
                       "inproc://, ipc:// or tcp://",
                       dt::TransportError);
  CHECK_THROWS_AS((void)transport->connect("tcp://", "w0"), dt::TransportError);
  CHECK_THROWS_WITH_AS((void)transport->connect(listener->endpoint(), std::string("\0x", 2)),
                       ("cannot connect to " + listener->endpoint() +
                        " as '\\x00x': an identity is 1 to 255 bytes and does not start with a "
                        "zero byte")
                           .c_str(),
                       dt::TransportError);
  CHECK_THROWS_AS((void)transport->connect(listener->endpoint(), ""), dt::TransportError);
  CHECK_THROWS_AS((void)transport->connect(listener->endpoint(), std::string(256, 'a')),
                  dt::TransportError);
  CHECK_THROWS_WITH_AS((void)transport->connect("tcp://no-port", "w0"),
                       "cannot connect to tcp://no-port: Invalid argument", dt::TransportError);
}
