// The ZeroMQ Transport: picks addresses, makes ROUTER (Listener) and DEALER (Connection) sockets
// and owns what they share (the context, the ipc socket directory).

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/resources.hpp"
#include "transports/shm/shm_links.hpp"
#include "transports/transport.hpp"
#include "transports/zmq/zmq_socket.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string_view>

namespace dt::transport {
namespace {

using zmq_detail::Context;
using zmq_detail::Socket;

constexpr std::size_t kMaxNameLength = 32;
constexpr std::size_t kMaxIdentityLength = 255;  // ZeroMQ's limit on a routing id
// sun_path holds 107 bytes plus the terminator on Linux; stay well under it.
constexpr std::size_t kMaxIpcPath = 100;
constexpr std::string_view kDirPrefix = "disttrain-";

void check_name(const std::string& name) {
  const bool ok = !name.empty() && name.size() <= kMaxNameLength &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '-' || c == '_';
                  });
  if (!ok) {
    fail<TransportError>("listener name '{}' must be 1 to {} letters, digits, '-' or '_'",
                         zmq_detail::printable(name), kMaxNameLength);
  }
}

// Where a Transport's ipc socket directory goes: temp_root(), unless a socket path under it
// could overflow sun_path ($TMPDIR can be long: macOS-style /var/folders/..., CI work dirs), then
// /tmp.
std::filesystem::path socket_base() {
  const std::filesystem::path base = files::temp_root();
  const std::size_t longest = base.native().size() + 1 + kDirPrefix.size() + 6 + 1 +
                              kMaxNameLength + std::string_view(".sock").size();
  return longest > kMaxIpcPath ? std::filesystem::path("/tmp") : base;
}

struct TcpAddress {
  std::string host;  // as given, "[::1]" keeps its brackets
  std::uint16_t port = 0;
};

TcpAddress parse_tcp_address(const std::string& address) {
  const auto colon = address.rfind(':');
  TcpAddress out;
  bool ok = colon != std::string::npos && colon > 0 && colon + 1 < address.size();
  if (ok) {
    out.host = address.substr(0, colon);
    const char* first = address.data() + colon + 1;
    const char* last = address.data() + address.size();
    const auto [end, ec] = std::from_chars(first, last, out.port);
    ok = ec == std::errc{} && end == last;
    // An IPv6 literal needs brackets, or its colons read as the port separator.
    if (out.host.find(':') != std::string::npos) {
      ok = ok && out.host.front() == '[' && out.host.back() == ']';
    }
  }
  if (!ok) {
    fail<TransportError>("bad tcp address '{}': expected host:port, e.g. 127.0.0.1:0 (port 0: any "
                         "free port) or [::1]:5555",
                         address);
  }
  return out;
}

// ZeroMQ takes a Z85 key as 41 bytes with its terminator (40 would be read as binary).
void set_key(zmq::socket_t& socket, int option, const std::string& key) {
  if (zmq_setsockopt(socket.handle(), option, key.c_str(), key.size() + 1) != 0) {
    fail<TransportError>("cannot set a CURVE key: {}", zmq_strerror(zmq_errno()));
  }
}

void check_security(const Security& security) {
  if (!security.curve) return;
  if (!is_key(security.own.secret_key) || !is_key(security.own.public_key)) {
    fail<TransportError>("transport.security curve needs this process's key pair");
  }
  if (!security.server_key.empty() && !is_key(security.server_key)) {
    fail<TransportError>("transport.security curve: the server key is not a CURVE public key");
  }
  for (const auto& key : security.authorized) {
    if (!is_key(key)) fail<TransportError>("transport.security curve: an authorized key is not a "
                                           "CURVE public key");
  }
}

// How long a connection may take to complete its handshake before ZeroMQ drops it: a peer
// that connects and says nothing (or too little) holds no resources for long.
constexpr int kHandshakeMs = 10000;
constexpr const char* kZapDomain = "disttrain";

class ZmqTransport final : public Transport {
 public:
  explicit ZmqTransport(const TransportOptions& options)
      : options_(options), context_(std::make_shared<Context>()) {
    if (options_.kind == TransportOptions::Kind::kTcp) {
      tcp_ = parse_tcp_address(options_.tcp_address);
    }
    check_security(options_.security);
    if (curve()) {
      // Before any listener exists: ZeroMQ admits every client of a CURVE server whose
      // context has no ZAP handler.
      context_->zap = std::make_unique<zmq_detail::ZapHandler>(
          context_->context, std::set<std::string>(options_.security.authorized.begin(),
                                                   options_.security.authorized.end()));
    }
  }

  [[nodiscard]] std::unique_ptr<Listener> listen(const std::string& name) override {
    check_name(name);
    Socket socket(context_, zmq::socket_type::router, options_.max_payload);
    const std::string address = reserve_address(name);
    try {
      if (options_.kind == TransportOptions::Kind::kTcp && tcp_.host.starts_with('[')) {
        socket.raw().set(zmq::sockopt::ipv6, true);
      }
      socket.raw().set(zmq::sockopt::handshake_ivl, kHandshakeMs);
      if (curve()) {
        socket.raw().set(zmq::sockopt::curve_server, true);
        set_key(socket.raw(), ZMQ_CURVE_SECRETKEY, options_.security.own.secret_key);
        socket.raw().set(zmq::sockopt::zap_domain, kZapDomain);
      }
      socket.raw().bind(address);
      if (options_.kind != TransportOptions::Kind::kInproc) socket.watch_handshakes();
    } catch (const zmq::error_t& e) {
      release(name, address);
      fail<TransportError>("cannot listen on {}: {}", address, e.what());
    }
    if (options_.kind == TransportOptions::Kind::kTcp) {
      // With port 0 the address says "*"; the socket knows the port it got.
      std::string bound = socket.raw().get(zmq::sockopt::last_endpoint);
      if (!options_.advertise.empty()) {
        bound = fmt::format("tcp://{}:{}", options_.advertise, bound.substr(bound.rfind(':') + 1));
      }
      socket.set_endpoint(bound);
    } else {
      socket.set_endpoint(address);
    }
    if (options_.kind == TransportOptions::Kind::kIpc) {
      // Same host: peers may switch to shared memory (transports/shm). A listener always
      // accepts offers; DISTTRAIN_SHM=0 stops connections from making them.
      const std::filesystem::path path(address.substr(std::string_view("ipc://").size()));
      const shm::LinkOptions link{.zmq_fd = socket.raw().get(zmq::sockopt::fd),
                                  .folder = path.parent_path(),
                                  .name = name,
                                  .max_payload = options_.max_payload,
                                  .job_id = options_.job_id};
      return shm::wrap_listener(zmq_detail::make_listener(std::move(socket)), link);
    }
    return zmq_detail::make_listener(std::move(socket));
  }

  [[nodiscard]] std::unique_ptr<Connection> connect(const std::string& endpoint,
                                                    const std::string& identity) override {
    const bool known_scheme = std::any_of(
        std::begin(kSchemes), std::end(kSchemes), [&](std::string_view scheme) {
          return endpoint.size() > scheme.size() && endpoint.starts_with(scheme);
        });
    if (!known_scheme) {
      fail<TransportError>("cannot connect to '{}': an endpoint starts with inproc://, ipc:// or "
                           "tcp://",
                           zmq_detail::printable(endpoint));
    }
    // ZeroMQ reserves routing ids that start with a zero byte for the ones it makes up.
    if (identity.empty() || identity.size() > kMaxIdentityLength || identity.front() == '\0') {
      fail<TransportError>("cannot connect to {} as '{}': an identity is 1 to {} bytes and does "
                           "not start with a zero byte",
                           endpoint, zmq_detail::printable(identity), kMaxIdentityLength);
    }
    Socket socket(context_, zmq::socket_type::dealer, options_.max_payload, identity);
    if (endpoint.starts_with("tcp://[")) socket.raw().set(zmq::sockopt::ipv6, true);
    if (curve()) {
      if (options_.security.server_key.empty()) {
        fail<TransportError>("cannot connect to {}: transport.security curve needs the public "
                             "key of the listener (the coordinator's .pub file)",
                             endpoint);
      }
      set_key(socket.raw(), ZMQ_CURVE_SERVERKEY, options_.security.server_key);
      set_key(socket.raw(), ZMQ_CURVE_PUBLICKEY, options_.security.own.public_key);
      set_key(socket.raw(), ZMQ_CURVE_SECRETKEY, options_.security.own.secret_key);
    }
    try {
      // Asynchronous: returns at once and (re)connects in the background; messages sent
      // meanwhile are queued.
      if (!endpoint.starts_with("inproc://")) socket.watch_handshakes();
      socket.raw().connect(endpoint);
    } catch (const zmq::error_t& e) {
      fail<TransportError>("cannot connect to {}: {}", endpoint, e.what());
    }
    socket.set_endpoint(endpoint);
    if (endpoint.starts_with("ipc://") && endpoint.ends_with(".sock") && shm::enabled()) {
      const std::filesystem::path path(endpoint.substr(std::string_view("ipc://").size()));
      const shm::LinkOptions link{.zmq_fd = socket.raw().get(zmq::sockopt::fd),
                                  .folder = path.parent_path(),
                                  .name = identity,
                                  .listener = path.stem().string(),
                                  .max_payload = options_.max_payload,
                                  .job_id = options_.job_id};
      return shm::wrap_connection(zmq_detail::make_connection(std::move(socket)), link);
    }
    return zmq_detail::make_connection(std::move(socket));
  }

  [[nodiscard]] std::unique_ptr<Transport> with_security(const Security& security) const override {
    TransportOptions options = options_;
    options.security = security;
    return std::make_unique<ZmqTransport>(options);
  }

 private:
  static constexpr std::string_view kSchemes[] = {"inproc://", "ipc://", "tcp://"};

  // inproc never leaves the process, and ZeroMQ runs no security mechanism over it.
  [[nodiscard]] bool curve() const noexcept {
    return options_.security.curve && options_.kind != TransportOptions::Kind::kInproc;
  }

  // The address to bind for `name`. Names are unique per Transport for inproc and ipc: ZeroMQ
  // silently replaces an ipc socket file that is in use, and a closed listener's file is
  // unlinked asynchronously, so reusing a name could cut off a live listener.
  // tcp: a configured port can be bound once, so the first listener gets it (the one peers are
  // told about, "coord") and later ones ("hb") a free port on the same host, which peers learn
  // from the first.
  [[nodiscard]] std::string reserve_address(const std::string& name) {
    using Kind = TransportOptions::Kind;
    std::lock_guard lock(mutex_);
    if (options_.kind == Kind::kTcp) {
      const bool fixed = tcp_.port != 0 && !fixed_port_taken_;
      fixed_port_taken_ = fixed_port_taken_ || fixed;
      return fmt::format("tcp://{}:{}", tcp_.host, fixed ? std::to_string(tcp_.port) : "*");
    }
    if (!names_.insert(name).second) {
      fail<TransportError>("cannot listen as '{}': the name is already used by this transport",
                           name);
    }
    if (options_.kind == Kind::kInproc) {
      return fmt::format("inproc://dt-{:x}-{}", options_.job_id, name);
    }
    if (!options_.ipc_dir.empty()) {
      const auto path = options_.ipc_dir / (name + ".sock");
      if (path.native().size() > kMaxIpcPath) {
        fail<TransportError>("cannot listen as '{}' in {}: the socket path would exceed {} bytes",
                             name, options_.ipc_dir.string(), kMaxIpcPath);
      }
      return fmt::format("ipc://{}", path.string());
    }
    if (!dir_) {
      // Folders of coordinators killed with SIGKILL (which cannot remove their own) go first.
      (void)files::sweep_orphans(socket_base(), kDirPrefix);
      try {
        dir_.emplace(kDirPrefix, socket_base());
      } catch (const IoError& e) {
        TransportError error(e.message());  // listen() fails with TransportError only
        error.add_context("cannot create a directory for ipc sockets");
        throw error;
      }
    }
    return fmt::format("ipc://{}/{}.sock", dir_->path().string(), name);
  }

  // Undoes reserve_address() after a failed bind.
  void release(const std::string& name, const std::string& address) {
    std::lock_guard lock(mutex_);
    names_.erase(name);
    if (tcp_.port != 0 && address.ends_with(fmt::format(":{}", tcp_.port))) {
      fixed_port_taken_ = false;
    }
  }

  TransportOptions options_;
  TcpAddress tcp_;
  // Destroyed after dir_: sockets still open keep the context alive through their own reference.
  std::shared_ptr<Context> context_;
  std::mutex mutex_;  // guards what follows: listen() may be called from any thread
  bool fixed_port_taken_ = false;
  std::set<std::string> names_;
  // The directory of the ipc socket files: made by the first ipc listen(), removed with them
  // when the Transport goes.
  std::optional<files::TempDir> dir_;
};

}  // namespace

std::unique_ptr<Transport> make_zmq_transport(const TransportOptions& options) {
  // libzmq aborts the process when it cannot start its I/O thread or its reaper (under a low
  // ulimit -v): their stacks, and some room, must fit first.
  if (!resources::can_map(2 * resources::thread_stack_bytes() + (32 << 20))) {
    fail<TransportError>("cannot start the transport: {}",
                         resources::describe_exhaustion(std::bad_alloc()));
  }
  try {
    return std::make_unique<ZmqTransport>(options);
  } catch (const zmq::error_t& e) {
    fail<TransportError>("cannot create a ZeroMQ context: {}", e.what());
  }
}

}  // namespace dt::transport
