#pragma once
// Internals of the ZeroMQ transport, shared by zmq_socket.cpp and zmq_transport.cpp; nothing
// outside transports/zmq/ includes this (core/ never sees ZeroMQ).
//
// transports/zmq/: the ZeroMQ implementation of the transport interface: sockets, the transport,
// CURVE's ZAP handler, handshake watching. The only folder that includes ZeroMQ.
// May use: base/, transports/ (the interface, the wire format, keys, and shm/ for the fast path it
// offers).

#include "base/drop_log.hpp"
#include "transports/transport.hpp"
#include "transports/zmq/handshake_watch.hpp"
#include "transports/zmq/zap_handler.hpp"

#include <zmq.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace dt::transport::zmq_detail {

// The ZeroMQ context, shared by a Transport and every socket it made. zmq_ctx_term blocks until
// every socket of the context is closed, so each socket holds a reference and the context goes
// away with the last of them, whatever order the owners are destroyed in. With CURVE the
// context's ZAP handler lives exactly as long: a listener never outlives the handler that
// vets its clients (without one, ZeroMQ would admit every client key).
struct Context {
  zmq::context_t context{1};
  std::unique_ptr<ZapHandler> zap;  // declared after context: stopped before it is terminated
};

inline constexpr int kHighWaterMark = 1000;  // messages queued per peer before send waits
// How long unsent messages may delay the context's termination once the last socket of a
// Transport is gone. zmq_close itself never blocks; this bounds the wait at exit while giving a
// final message ("done", "bye") a chance to leave.
inline constexpr int kLingerMs = 200;
// A message with more frames than this is dropped as malformed (bounds what one receive keeps).
inline constexpr std::size_t kMaxFrames = 65536;

// One ZeroMQ socket and the framing both socket kinds share. A ROUTER's messages carry the
// peer's identity as an extra first frame (added by ZeroMQ on receive, consumed on send); a
// DEALER's do not. Used by one thread at a time.
class Socket {
 public:
  // A ROUTER backs a Listener; a DEALER backs a Connection and connects under `identity`.
  Socket(std::shared_ptr<Context> context, zmq::socket_type type, std::uint64_t max_payload,
         std::string identity = {});
  Socket(Socket&&) = default;
  // Assigning would close socket_ before watch_ stops watching it.
  Socket& operator=(Socket&&) = delete;

  [[nodiscard]] zmq::socket_t& raw() noexcept { return socket_; }
  [[nodiscard]] const Counters& counters() const noexcept { return counters_; }
  [[nodiscard]] const std::string& endpoint() const noexcept { return endpoint_; }
  void set_endpoint(std::string endpoint) {
    drops_.set_where(" on " + endpoint);
    endpoint_ = std::move(endpoint);
  }

  // `peer` is the destination identity on a ROUTER and ignored on a DEALER.
  void send(const std::string& peer, const wire::Message& message, Deadline deadline);
  // The next well-formed message, or std::nullopt when the deadline passes or a signal
  // interrupts the wait. Incoming::peer is the sender's identity on a ROUTER, empty on a DEALER.
  [[nodiscard]] std::optional<Incoming> receive(Deadline deadline);

  // receive returns std::nullopt while `wakeup` is raised (nullptr: never).
  void wake_on(const Wakeup* wakeup) noexcept { wakeup_ = wakeup; }
  // Reports failed handshakes from now on (tcp and ipc; ZeroMQ runs none over inproc).
  void watch_handshakes();
  // Reads the failed handshakes reported so far: a ROUTER logs them (once per kind), a DEALER
  // keeps the listener's refusal, which it returns (Connection::refusal).
  const Refusal& check_handshakes();

 private:
  [[nodiscard]] bool is_router() const noexcept { return type_ == zmq::socket_type::router; }
  // "peer 'w3' on tcp://..." or "tcp://... (as 'w3')": who is at the other end, for messages.
  [[nodiscard]] std::string describe(const std::string& peer) const;
  [[nodiscard]] bool try_send(const std::string& peer, const wire::Bytes& header,
                              const wire::Message& message);
  void wait_writable(Deadline deadline);
  [[nodiscard]] std::optional<std::vector<zmq::message_t>> receive_frames(Deadline deadline);
  [[nodiscard]] wire::Message parse(const std::vector<zmq::message_t>& frames) const;
  void drop(const std::string& peer, std::string_view reason);
  // A message of another protocol version: a ROUTER tells the peer its own version once, a
  // DEALER takes it as the listener's refusal.
  void other_version(const std::string& peer, std::uint16_t version);

  std::shared_ptr<Context> context_;  // declared first: destroyed after socket_
  zmq::socket_t socket_;
  zmq::socket_type type_;
  std::uint64_t max_payload_;
  std::string identity_;  // a DEALER's own identity
  std::string endpoint_;
  Counters counters_;
  // Malformed messages: the first few peers named, the rest counted (a flood of connections is
  // a flood of peers).
  log::DropLog drops_{"dropped", "malformed message"};
  std::unordered_set<std::string> answered_;  // peers told this build's version (bounded)
  Refusal refusal_;
  const Wakeup* wakeup_ = nullptr;  // not owned
  int closed_handshakes_ = 0;  // a DEALER's handshakes cut off by the listener
  unsigned warned_handshakes_ = 0;  // a ROUTER warns once per kind of failed handshake
  // Declared last: stops watching before socket_ closes.
  std::unique_ptr<HandshakeWatch> watch_;
};

[[nodiscard]] std::unique_ptr<Listener> make_listener(Socket socket);
[[nodiscard]] std::unique_ptr<Connection> make_connection(Socket socket);

// Network-supplied text made safe to print: non-printable bytes as \xNN, long text cut.
[[nodiscard]] std::string printable(std::string_view text);

}  // namespace dt::transport::zmq_detail
