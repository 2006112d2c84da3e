#pragma once
// The transport interface: all that core/ and the collectives see of the network. Two kinds of
// socket, each owned and used by one thread:
//   Listener   binds an endpoint and talks to many peers, each known by the identity it
//              connected with (ZeroMQ ROUTER);
//   Connection connects to one Listener under an identity (ZeroMQ DEALER).
// Messages are queued: send returns once the message is handed to the transport (or fails when
// it cannot be within the deadline); receive waits until a message arrives or the deadline
// passes. Every wait takes a deadline. Malformed input from the network (bad header, wrong
// version, sizes that do not add up) is dropped and logged once per peer, never thrown at the
// caller: a stranger cannot take a run down.

#include "transports/wire.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace dt::transport {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

[[nodiscard]] inline Deadline deadline_in(std::chrono::milliseconds ms) { return Clock::now() + ms; }

struct Counters {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t messages_dropped = 0;  // malformed input dropped
};

struct Incoming {
  std::string peer;  // the sender's identity
  wire::Message message;
};

class Listener {
 public:
  virtual ~Listener() = default;
  // The endpoint peers connect to ("ipc:///tmp/dt-x/coord", "tcp://127.0.0.1:40123").
  [[nodiscard]] virtual const std::string& endpoint() const noexcept = 0;
  // TransportError when the peer is unknown (never connected, or gone) or the deadline passes.
  virtual void send(const std::string& peer, const wire::Message& message, Deadline deadline) = 0;
  // std::nullopt when the deadline passes first.
  [[nodiscard]] virtual std::optional<Incoming> receive(Deadline deadline) = 0;
  [[nodiscard]] virtual const Counters& counters() const noexcept = 0;
};

class Connection {
 public:
  virtual ~Connection() = default;
  virtual void send(const wire::Message& message, Deadline deadline) = 0;
  [[nodiscard]] virtual std::optional<wire::Message> receive(Deadline deadline) = 0;
  [[nodiscard]] virtual const Counters& counters() const noexcept = 0;
};

// A transport creates sockets. Threads of one process that use inproc endpoints must share one
// Transport object (it owns the ZeroMQ context). Thread-safe: sockets may be created from any
// thread; each socket is then used by one thread only.
class Transport {
 public:
  virtual ~Transport() = default;
  // `name` is a short label ("coord", "hb"); the transport picks the address:
  //   inproc -> inproc://<job>-<name>; ipc -> a socket file in a private temp dir (removed with
  //   the Transport); tcp -> `host:port` from the config (port 0: a free port).
  [[nodiscard]] virtual std::unique_ptr<Listener> listen(const std::string& name) = 0;
  [[nodiscard]] virtual std::unique_ptr<Connection> connect(const std::string& endpoint,
                                                            const std::string& identity) = 0;
};

struct TransportOptions {
  enum class Kind { kInproc, kIpc, kTcp } kind = Kind::kIpc;
  std::string tcp_address = "127.0.0.1:0";  // tcp: host:port to bind listeners on
  std::uint64_t job_id = 0;
  std::uint64_t max_payload = wire::kDefaultMaxPayload;
};

[[nodiscard]] std::unique_ptr<Transport> make_zmq_transport(const TransportOptions& options);

}  // namespace dt::transport
