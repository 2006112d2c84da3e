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
//
// On every send, header.payload_size is ignored and written from the payload frames. A receive
// may return std::nullopt before its deadline when a signal interrupts the wait (EINTR), so that
// the caller can look at its interrupt flag; callers loop on short waits anyway. Likewise when a
// Wakeup the socket was told to wake on is raised (a stop from another thread).
//
// transports/: this interface, the wire format (wire.hpp), CURVE keys (security.hpp), wake-ups;
// the ZeroMQ implementation in zmq/, the same-host shared-memory path in shm/, worker-to-worker
// collectives in collectives/.
// May use: base/.

#include "transports/security.hpp"
#include "transports/wakeup.hpp"
#include "transports/wire.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace dt::transport {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

[[nodiscard]] inline Deadline deadline_in(std::chrono::milliseconds ms) { return Clock::now() + ms; }

// Bytes count the header and payload frames of every message (not ZeroMQ's identity frame), so
// one side's bytes_sent matches the other's bytes_received; a message dropped as malformed still
// counts in bytes_received.
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
  // TransportError when the peer is unknown (never connected, or gone) or the deadline passes
  // (TimeoutError). A peer becomes known once its connection handshake is done, which a message
  // from it proves: reply to peers that have spoken first.
  virtual void send(const std::string& peer, const wire::Message& message, Deadline deadline) = 0;
  // std::nullopt when the deadline passes first (or a signal arrives, see above).
  [[nodiscard]] virtual std::optional<Incoming> receive(Deadline deadline) = 0;
  [[nodiscard]] virtual const Counters& counters() const noexcept = 0;
  // From now on receive returns std::nullopt at once while `wakeup` is raised (wakeup.hpp);
  // nullptr: no more. `wakeup` outlives this socket or the next wake_on.
  virtual void wake_on(const Wakeup* wakeup) noexcept = 0;
  // A receive that finds nothing keeps looking for up to `spin` before it sleeps, where looking
  // costs no system call (the shared-memory rings; elsewhere this does nothing). For peers that
  // each have a core and answer within microseconds: a sleeping process takes tens of
  // microseconds to wake, more than such an exchange. Zero (the default): sleep at once.
  virtual void spin_before_sleep(std::chrono::microseconds /*spin*/) noexcept {}
  // From now on payload frames of at least `min_frame` bytes may come as views into the
  // transport's memory (wire::Message::views) instead of copies; 0 (the default): copies. Only
  // the shared-memory rings do (elsewhere this does nothing), one message per peer at a time:
  // until its lease is dropped or released (wire::Lease), which must happen on this socket's
  // thread, the peer's later messages are copied and the ring space stays taken (a big one
  // then travels over ZeroMQ).
  virtual void receive_in_place(std::uint64_t /*min_frame*/) noexcept {}
};

// Why a listener would not talk to a connection, as far as the connection can tell.
struct Refusal {
  enum class Kind {
    kNone,
    kSecurity,  // a CURVE key it does not admit, CURVE on one side only, another server key
    kVersion,   // it speaks another disttrain protocol version
  } kind = Kind::kNone;
  std::string why;  // in words, for an error message
};

class Connection {
 public:
  virtual ~Connection() = default;
  virtual void send(const wire::Message& message, Deadline deadline) = 0;
  [[nodiscard]] virtual std::optional<wire::Message> receive(Deadline deadline) = 0;
  [[nodiscard]] virtual const Counters& counters() const noexcept = 0;
  // As Listener::wake_on.
  virtual void wake_on(const Wakeup* wakeup) noexcept = 0;
  // As Listener::receive_in_place.
  virtual void receive_in_place(std::uint64_t /*min_frame*/) noexcept {}
  // Why the listener will not talk to this connection (a failed handshake, another protocol
  // version); kind kNone while nothing says so. A refused connection never delivers anything,
  // so a caller waiting for a first message asks this rather than wait out its timeout.
  [[nodiscard]] virtual Refusal refusal() { return {}; }
};

// A transport creates sockets. Threads of one process that use inproc endpoints must share one
// Transport object (it owns the ZeroMQ context). Thread-safe: sockets may be created from any
// thread; each socket is then used by one thread only (handing it to another thread through a
// mutex, queue or thread start is fine).
// Destroy sockets before their Transport. One that outlives it is still safe (sockets share the
// context, which goes with the last of them), but an ipc listener's socket file is removed with
// the Transport's directory.
class Transport {
 public:
  virtual ~Transport() = default;
  // `name` is a short label ("coord", "hb"); the transport picks the address:
  //   inproc -> inproc://<job>-<name>; ipc -> a socket file in a private temp dir (removed with
  //   the Transport); tcp -> `host:port` from the config (port 0: a free port); with a fixed
  //   port only the first listener gets it, later ones get a free port on the same host.
  // Names are 1 to 32 of [A-Za-z0-9_-] and, for inproc and ipc, unique per Transport.
  // TransportError when the address cannot be bound ("cannot listen on tcp://...:80: Permission
  // denied").
  [[nodiscard]] virtual std::unique_ptr<Listener> listen(const std::string& name) = 0;
  // `endpoint` is a Listener's endpoint(); `identity` (1 to 255 bytes, not starting with a zero
  // byte) is what the Listener sees as Incoming::peer. Connecting is asynchronous: this returns
  // at once, messages sent meanwhile are queued, and inproc may connect before the bind.
  // Two live connections with one identity: the newer takes the identity over.
  [[nodiscard]] virtual std::unique_ptr<Connection> connect(const std::string& endpoint,
                                                            const std::string& identity) = 0;
  // A Transport like this one (kind, address, job id, ipc folder, size limit) but with other
  // CURVE keys, and so its own context and ZAP handler: workers open their peer links on one,
  // serving and trusting the job's peer key rather than their keys for the coordinator.
  [[nodiscard]] virtual std::unique_ptr<Transport> with_security(const Security& security) const = 0;
};

struct TransportOptions {
  enum class Kind { kInproc, kIpc, kTcp } kind = Kind::kIpc;
  std::string tcp_address = "127.0.0.1:0";  // tcp: host:port to bind listeners on
  // tcp: the host other processes are told to connect to (Listener::endpoint()), when it is
  // not the bound one: a listener on 0.0.0.0, or an address reached through another name.
  // Empty: the bound address as ZeroMQ reports it.
  std::string advertise;
  std::uint64_t job_id = 0;
  // Larger messages are dropped (logged once per peer); ZeroMQ cuts off a peer that sends a
  // frame beyond it before the frame is allocated.
  std::uint64_t max_payload = wire::kDefaultMaxPayload;
  // transport.security curve: every link encrypted, every listener admits only the authorized
  // client keys (ipc and tcp; inproc never leaves the process and ZeroMQ applies no
  // mechanism to it).
  Security security;
  // ipc only: put listeners' socket files in this existing folder, which its owner removes,
  // instead of a private temporary one removed with the Transport. Worker processes that listen
  // (peer links) use the coordinator's folder, so a worker killed outright leaves nothing behind.
  std::filesystem::path ipc_dir;
};

[[nodiscard]] std::unique_ptr<Transport> make_zmq_transport(const TransportOptions& options);

}  // namespace dt::transport
