// The transport contract, run over every transport kind (gloo-style harness): each
// TEST_CASE_TEMPLATE below runs once for inproc, ipc and tcp on 127.0.0.1 port 0.

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
using dt::transport::Connection;
using dt::transport::deadline_in;
using dt::transport::Incoming;
using dt::transport::Listener;
using dt::transport::TransportOptions;
using dt::wire::Bytes;
using dt::wire::Message;

constexpr std::uint64_t kJobId = 0xC0FFEE;

Message make_message(std::uint16_t type, std::uint32_t rank, std::uint64_t step,
                     std::vector<Bytes> payload) {
  return dt::test::make_message(kJobId, type, rank, step, std::move(payload));
}

std::uint64_t wire_size(const Message& m) {
  std::uint64_t total = dt::wire::kHeaderSize;
  for (const auto& f : m.payload) total += f.size();
  return total;
}

void check_same(const Message& got, const Message& sent) {
  CHECK(got.header.type == sent.header.type);
  CHECK(got.header.job_id == sent.header.job_id);
  CHECK(got.header.rank == sent.header.rank);
  CHECK(got.header.step == sent.header.step);
  CHECK(got.header.version == dt::wire::kProtocolVersion);
  CHECK(got.header.payload_size == wire_size(sent) - dt::wire::kHeaderSize);
  REQUIRE(got.payload.size() == sent.payload.size());
  for (std::size_t i = 0; i < sent.payload.size(); ++i) {
    CHECK_MESSAGE(got.payload[i] == sent.payload[i], "payload frame " << i << " differs");
  }
}

}  // namespace

TEST_CASE_TEMPLATE("transport: a header and several payload frames arrive byte-exact, both ways",
                   K, DT_ALL_TRANSPORTS) {
  auto transport = make_transport<K>(kJobId);
  auto listener = transport->listen("coord");
  auto connection = transport->connect(listener->endpoint(), "w0");

  const std::vector<double> values{1.0, -2.5, 3.25};
  const Message request = make_message(
      3, 0, 41,
      {dt::wire::to_bytes(values), dt::wire::to_bytes(std::string_view("hello")), Bytes{},
       pattern(1 << 20, 7)});
  connection->send(request, deadline_in(kPatience));

  auto incoming = listener->receive(deadline_in(kPatience));
  REQUIRE(incoming);
  CHECK(incoming->peer == "w0");
  check_same(incoming->message, request);
  const auto doubles = dt::wire::as_doubles(incoming->message.payload[0], 3);
  CHECK(std::vector<double>(doubles.begin(), doubles.end()) == values);
  CHECK(dt::wire::as_text(incoming->message.payload[1]) == "hello");

  const Message reply =
      make_message(4, dt::wire::kCoordinatorRank, 42, {pattern(333, 1), pattern(8, 2)});
  listener->send(incoming->peer, reply, deadline_in(kPatience));
  auto back = connection->receive(deadline_in(kPatience));
  REQUIRE(back);
  check_same(*back, reply);

  // A message with no payload at all.
  connection->send(make_message(9, 0, 0, {}), deadline_in(kPatience));
  auto empty = listener->receive(deadline_in(kPatience));
  REQUIRE(empty);
  CHECK(empty->message.payload.empty());
  CHECK(empty->message.header.type == 9);
}

TEST_CASE_TEMPLATE("transport: many peers, replies routed back by identity", K,
                   DT_ALL_TRANSPORTS) {
  constexpr int kPeers = 8;
  auto transport = make_transport<K>(kJobId);
  auto listener = transport->listen("coord");
  const std::string endpoint = listener->endpoint();

  // Each peer sends its rank and expects rank * 10 back, tagged with its own step.
  std::vector<double> replies(kPeers, -1.0);
  std::vector<std::exception_ptr> errors(kPeers);
  std::vector<std::thread> peers;
  for (int r = 0; r < kPeers; ++r) {
    peers.emplace_back([&, r] {
      try {
        auto connection = transport->connect(endpoint, fmt::format("w{}", r));
        const std::vector<double> mine{static_cast<double>(r)};
        const auto rank = static_cast<std::uint32_t>(r);
        connection->send(make_message(1, rank, rank, {dt::wire::to_bytes(mine)}),
                         deadline_in(kPatience));
        auto reply = connection->receive(deadline_in(kPatience));
        if (!reply) throw std::runtime_error(fmt::format("no reply for w{}", r));
        if (reply->header.step != static_cast<std::uint64_t>(r)) {
          throw std::runtime_error(fmt::format("w{} got someone else's reply", r));
        }
        replies[static_cast<std::size_t>(r)] = dt::wire::as_doubles(reply->payload.at(0), 1)[0];
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }

  double rank_sum = 0;
  for (int i = 0; i < kPeers; ++i) {
    auto incoming = listener->receive(deadline_in(kPatience));
    REQUIRE(incoming);
    const auto rank = incoming->message.header.rank;
    CHECK(incoming->peer == fmt::format("w{}", rank));
    const double value = dt::wire::as_doubles(incoming->message.payload.at(0), 1)[0];
    rank_sum += value;
    const std::vector<double> answer{value * 10};
    listener->send(incoming->peer,
                   make_message(2, dt::wire::kCoordinatorRank, rank, {dt::wire::to_bytes(answer)}),
                   deadline_in(kPatience));
  }
  for (auto& t : peers) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  CHECK(rank_sum == kPeers * (kPeers - 1) / 2);
  for (int r = 0; r < kPeers; ++r) CHECK(replies[static_cast<std::size_t>(r)] == r * 10.0);
  CHECK(listener->counters().messages_received == kPeers);
  CHECK(listener->counters().messages_sent == kPeers);
}

TEST_CASE_TEMPLATE("transport: receive returns nothing once the deadline passes", K,
                   DT_ALL_TRANSPORTS) {
  auto transport = make_transport<K>(kJobId);
  auto listener = transport->listen("coord");
  auto connection = transport->connect(listener->endpoint(), "w0");

  for (int side = 0; side < 2; ++side) {
    const auto start = dt::transport::Clock::now();
    const bool got = side == 0 ? listener->receive(deadline_in(50ms)).has_value()
                               : connection->receive(deadline_in(50ms)).has_value();
    const auto waited = dt::transport::Clock::now() - start;
    CHECK_FALSE(got);
    CHECK(waited >= 49ms);
    CHECK(waited < 1s);
  }
  // A deadline already past still returns a message that is waiting.
  connection->send(make_message(1, 0, 0, {}), deadline_in(kPatience));
  REQUIRE(listener->receive(deadline_in(kPatience)));
  CHECK_FALSE(listener->receive(dt::transport::Clock::now() - 1s));
}

TEST_CASE_TEMPLATE("transport: a raised wakeup ends a receive, before or during the wait", K,
                   DT_ALL_TRANSPORTS) {
  auto transport = make_transport<K>(kJobId);
  auto listener = transport->listen("coord");
  auto connection = transport->connect(listener->endpoint(), "w0");
  connection->send(make_message(1, 0, 0, {}), deadline_in(kPatience));
  REQUIRE(listener->receive(deadline_in(kPatience)));  // the link is up

  // Raised before the wait: a deadline of hours does not hold the receive (a stop that comes
  // just before its thread starts waiting is not lost).
  dt::transport::Wakeup early;
  listener->wake_on(&early);
  connection->wake_on(&early);
  early.raise();
  CHECK(early.raised());
  CHECK_FALSE(listener->receive(deadline_in(std::chrono::hours(1))));
  CHECK_FALSE(connection->receive(deadline_in(std::chrono::hours(1))));

  // Raised from another thread while the receive waits.
  dt::transport::Wakeup later;
  CHECK_FALSE(later.raised());
  connection->wake_on(&later);
  std::thread stopper([&] { later.raise(); });
  CHECK_FALSE(connection->receive(deadline_in(std::chrono::hours(1))));
  stopper.join();

  // Told to wake on nothing, the sockets wait for messages again.
  listener->wake_on(nullptr);
  connection->wake_on(nullptr);
  connection->send(make_message(2, 0, 0, {}), deadline_in(kPatience));
  const auto got = listener->receive(deadline_in(kPatience));
  REQUIRE(got);
  CHECK(got->message.header.type == 2);
}

TEST_CASE_TEMPLATE("transport: a send to an unknown or departed peer fails with its name", K,
                   DT_ALL_TRANSPORTS) {
  auto transport = make_transport<K>(kJobId);
  auto listener = transport->listen("coord");
  const std::string expected =
      "send to peer 'w3' on " + listener->endpoint() + ": peer unknown or disconnected";
  CHECK_THROWS_WITH_AS(listener->send("w3", make_message(1, 0, 0, {}), deadline_in(100ms)),
                       expected.c_str(), dt::TransportError);

  // w3 connects, speaks, leaves: sends to it fail again once the departure is noticed.
  auto connection = transport->connect(listener->endpoint(), "w3");
  connection->send(make_message(1, 3, 0, {}), deadline_in(kPatience));
  REQUIRE(listener->receive(deadline_in(kPatience)));
  listener->send("w3", make_message(2, 0, 0, {}), deadline_in(kPatience));
  connection.reset();
  const auto give_up = deadline_in(kPatience);
  bool failed = false;
  while (!failed && dt::transport::Clock::now() < give_up) {
    try {
      listener->send("w3", make_message(2, 0, 0, {}), deadline_in(100ms));
      std::this_thread::sleep_for(2ms);
    } catch (const dt::TransportError& e) {
      CHECK(std::string(e.what()) == expected);
      failed = true;
    }
  }
  CHECK(failed);
}

TEST_CASE_TEMPLATE("transport: counters add up on both sides", K, DT_ALL_TRANSPORTS) {
  auto transport = make_transport<K>(kJobId);
  auto listener = transport->listen("coord");
  auto connection = transport->connect(listener->endpoint(), "w0");

  std::uint64_t up = 0;
  std::uint64_t down = 0;
  for (unsigned i = 0; i < 5; ++i) {
    const Message m = make_message(1, 0, i, {pattern(i * 100, i), pattern(7, i)});
    up += wire_size(m);
    connection->send(m, deadline_in(kPatience));
    auto incoming = listener->receive(deadline_in(kPatience));
    REQUIRE(incoming);
    const Message r = make_message(2, 0, i, {pattern(i, i)});
    down += wire_size(r);
    listener->send(incoming->peer, r, deadline_in(kPatience));
    REQUIRE(connection->receive(deadline_in(kPatience)));
  }
  const auto& c = connection->counters();
  const auto& l = listener->counters();
  CHECK(c.bytes_sent == up);
  CHECK(l.bytes_received == up);
  CHECK(l.bytes_sent == down);
  CHECK(c.bytes_received == down);
  CHECK(c.messages_sent == 5);
  CHECK(l.messages_received == 5);
  CHECK(l.messages_sent == 5);
  CHECK(c.messages_received == 5);
  CHECK(l.messages_dropped == 0);
  CHECK(c.messages_dropped == 0);
}

TEST_CASE_TEMPLATE("transport: a send that cannot be queued times out with the deadline", K,
                   DT_ALL_TRANSPORTS) {
  auto transport = make_transport<K>(kJobId);
  // Nobody listens here: messages queue up to the high-water mark, then sends must wait.
  std::string nowhere = "inproc://dt-nobody";
  if (K::kKind == TransportOptions::Kind::kIpc) nowhere = "ipc:///nonexistent-dir/dt-nobody.sock";
  if (K::kKind == TransportOptions::Kind::kTcp) nowhere = "tcp://127.0.0.1:1";
  auto connection = transport->connect(nowhere, "w0");
  std::string message;
  for (int i = 0; i < 10000 && message.empty(); ++i) {
    try {
      connection->send(make_message(1, 0, 0, {}), deadline_in(20ms));
    } catch (const dt::TimeoutError& e) {
      message = e.what();
    }
  }
  const std::string prefix = "send to " + nowhere + " (as 'w0'): timed out after ";
  CHECK(message.starts_with(prefix));
  CHECK(message.ends_with(" ms"));
  CHECK(connection->counters().messages_sent >= 1000);
}

TEST_CASE("transport: a listener's send to a peer that does not read times out") {
  auto transport = make_transport<Inproc>(kJobId);
  auto listener = transport->listen("coord");
  auto connection = transport->connect(listener->endpoint(), "w0");
  connection->send(make_message(1, 0, 0, {}), deadline_in(kPatience));
  REQUIRE(listener->receive(deadline_in(kPatience)));
  std::string message;
  for (int i = 0; i < 10000 && message.empty(); ++i) {
    try {
      listener->send("w0", make_message(1, 0, 0, {}), deadline_in(20ms));
    } catch (const dt::TimeoutError& e) {
      message = e.what();
    }
  }
  const std::string prefix = "send to peer 'w0' on " + listener->endpoint() + ": timed out after ";
  CHECK(message.starts_with(prefix));
}

TEST_CASE("transport: a payload over the limit is refused before it is sent") {
  TransportOptions options = dt::test::options_for<Inproc>(kJobId);
  options.max_payload = 1024;
  auto transport = dt::transport::make_zmq_transport(options);
  auto listener = transport->listen("coord");
  auto connection = transport->connect(listener->endpoint(), "w0");
  const std::string expected = "send to " + listener->endpoint() +
                               " (as 'w0'): payload of 1025 bytes exceeds the limit of 1024 bytes";
  CHECK_THROWS_WITH_AS(
      connection->send(make_message(1, 0, 0, {pattern(1000, 1), pattern(25, 2)}),
                       deadline_in(kPatience)),
      expected.c_str(), dt::ProtocolError);
  CHECK(connection->counters().messages_sent == 0);
  connection->send(make_message(1, 0, 0, {pattern(1024, 1)}), deadline_in(kPatience));
  CHECK(listener->receive(deadline_in(kPatience)));
}

TEST_CASE("transport: sockets may outlive their transport") {
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Connection> connection;
  {
    auto transport = make_transport<Inproc>(kJobId);
    listener = transport->listen("coord");
    connection = transport->connect(listener->endpoint(), "w0");
  }
  connection->send(make_message(1, 0, 0, {}), deadline_in(kPatience));
  CHECK(listener->receive(deadline_in(kPatience)));
  connection.reset();
  listener.reset();
}

TEST_CASE("transport: a signal ends a receive early so the caller can look at its flags") {
  struct sigaction action {};
  action.sa_handler = [](int) {};
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  REQUIRE(::sigaction(SIGUSR1, &action, &previous) == 0);

  auto transport = make_transport<Inproc>(kJobId);
  auto listener = transport->listen("coord");
  const pthread_t receiver = ::pthread_self();
  std::atomic<bool> done{false};
  // Poke until the receive returns: a signal that lands before the wait starts is not lost on
  // the test, the next one interrupts it.
  std::thread poke([&] {
    while (!done.load()) {
      std::this_thread::sleep_for(20ms);
      if (!done.load()) ::pthread_kill(receiver, SIGUSR1);
    }
  });
  const auto start = dt::transport::Clock::now();
  const bool got = listener->receive(deadline_in(kPatience)).has_value();
  const auto waited = dt::transport::Clock::now() - start;
  done.store(true);
  poke.join();
  ::sigaction(SIGUSR1, &previous, nullptr);
  CHECK_FALSE(got);
  CHECK(waited < 1s);
}

// Frames a sender lends (wire::Message::views set by the sender: the star coordinator's
// parameters) are copied during send(): they arrive byte-exact, count in the payload size and
// the counters, and a change to the lender's memory after the send reaches nobody.
TEST_CASE_TEMPLATE("transport: a lent frame arrives byte-exact, copied during the send", K,
                   DT_ALL_TRANSPORTS) {
  auto transport = make_transport<K>(kJobId);
  auto listener = transport->listen("coord");
  auto connection = transport->connect(listener->endpoint(), "w0");
  // A round trip first, so that ipc has switched to its ring (a first big message may go over
  // ZeroMQ).
  connection->send(make_message(1, 0, 0, {pattern(10, 1)}), deadline_in(kPatience));
  REQUIRE(listener->receive(deadline_in(kPatience)));
  listener->send("w0", make_message(1, 0, 0, {pattern(10, 2)}), deadline_in(kPatience));
  REQUIRE(connection->receive(deadline_in(kPatience)));
  const auto lending = [](std::uint64_t step, const Bytes& lent) {
    Message m = make_message(5, dt::wire::kCoordinatorRank, step, {pattern(7, 3), {}});
    m.views = {{}, lent};
    return m;
  };

  const auto sent_before = listener->counters().bytes_sent;
  for (const std::size_t size : {std::size_t{24}, std::size_t{800'000}}) {
    Bytes lent = pattern(size, 7);
    const Bytes original = lent;
    listener->send("w0", lending(size, lent), deadline_in(kPatience));
    lent.assign(lent.size(), std::byte{0});  // after the send: must reach nobody
    auto got = connection->receive(deadline_in(kPatience));
    REQUIRE(got);
    CHECK(got->header.step == size);
    CHECK(got->header.payload_size == 7 + size);
    REQUIRE(got->payload.size() == 2);
    const auto frame = dt::wire::frame(*got, 1);
    CHECK(Bytes(frame.begin(), frame.end()) == original);
  }
  CHECK(listener->counters().bytes_sent - sent_before ==
        2 * (dt::wire::kHeaderSize + 7) + 24 + 800'000);

  const Bytes up = pattern(300'000, 4);  // and from a connection
  connection->send(lending(9, up), deadline_in(kPatience));
  auto in = listener->receive(deadline_in(kPatience));
  REQUIRE(in);
  const auto frame = dt::wire::frame(in->message, 1);
  CHECK(Bytes(frame.begin(), frame.end()) == up);
}
