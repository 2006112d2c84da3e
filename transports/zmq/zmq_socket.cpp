#include "transports/zmq/zmq_socket.hpp"

#include "base/error.hpp"
#include "base/log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <thread>

namespace dt::transport::zmq_detail {
namespace {

using std::chrono::milliseconds;

// Past this many distinct misbehaving peers a socket stops remembering (and warning about) new
// ones, so a flood of made-up identities cannot grow memory.
constexpr std::size_t kMaxAnsweredPeers = 1024;
// Handshakes the listener cuts off before a connection counts as refused (ZeroMQ retries every
// 100 ms).
constexpr int kClosedHandshakesToRefuse = 3;

[[nodiscard]] milliseconds time_left(Deadline deadline) {
  return std::max(std::chrono::ceil<milliseconds>(deadline - Clock::now()), milliseconds{0});
}

[[nodiscard]] std::span<const std::byte> bytes_of(const zmq::message_t& frame) {
  return {static_cast<const std::byte*>(frame.data()), frame.size()};
}

class ZmqListener final : public Listener {
 public:
  explicit ZmqListener(Socket socket) : socket_(std::move(socket)) {}
  [[nodiscard]] const std::string& endpoint() const noexcept override {
    return socket_.endpoint();
  }
  void send(const std::string& peer, const wire::Message& message, Deadline deadline) override {
    socket_.send(peer, message, deadline);
  }
  [[nodiscard]] std::optional<Incoming> receive(Deadline deadline) override {
    return socket_.receive(deadline);
  }
  [[nodiscard]] const Counters& counters() const noexcept override { return socket_.counters(); }
  void wake_on(const Wakeup* wakeup) noexcept override { socket_.wake_on(wakeup); }

 private:
  Socket socket_;
};

class ZmqConnection final : public Connection {
 public:
  explicit ZmqConnection(Socket socket) : socket_(std::move(socket)) {}
  void send(const wire::Message& message, Deadline deadline) override {
    socket_.send({}, message, deadline);
  }
  [[nodiscard]] std::optional<wire::Message> receive(Deadline deadline) override {
    auto incoming = socket_.receive(deadline);
    if (!incoming) return std::nullopt;
    return std::move(incoming->message);
  }
  [[nodiscard]] const Counters& counters() const noexcept override { return socket_.counters(); }
  [[nodiscard]] Refusal refusal() override { return socket_.check_handshakes(); }
  void wake_on(const Wakeup* wakeup) noexcept override { socket_.wake_on(wakeup); }

 private:
  Socket socket_;
};

}  // namespace

Socket::Socket(std::shared_ptr<Context> context, zmq::socket_type type, std::uint64_t max_payload,
               std::string identity) try
    : context_(std::move(context)),
      socket_(context_->context, type),
      type_(type),
      max_payload_(max_payload),
      identity_(std::move(identity)) {
  socket_.set(zmq::sockopt::linger, kLingerMs);
  socket_.set(zmq::sockopt::sndhwm, kHighWaterMark);
  socket_.set(zmq::sockopt::rcvhwm, kHighWaterMark);
  // ZeroMQ checks every incoming frame against this before allocating it and drops the
  // connection of a peer that exceeds it; our header check then covers the sum of the frames.
  constexpr auto kInt64Max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  const std::uint64_t frame_limit = std::min(max_payload, kInt64Max - wire::kHeaderSize - 4096);
  socket_.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(frame_limit + 4096));
  if (is_router()) {
    // A send to a peer the ROUTER does not know fails (EHOSTUNREACH) instead of vanishing.
    socket_.set(zmq::sockopt::router_mandatory, true);
    // A peer that reconnects under its identity (a DEALER reconnecting after a network blip,
    // while the old TCP connection is not yet known dead) takes the identity over instead of
    // being silently ignored. Until CURVE, any peer can claim any identity anyway.
    socket_.set(zmq::sockopt::router_handover, true);
  } else {
    socket_.set(zmq::sockopt::routing_id, identity_);
  }
} catch (const zmq::error_t& e) {
  // Out of file descriptors, or more sockets than a context allows (1023 by default).
  fail<TransportError>("cannot create a ZeroMQ socket: {}", e.what());
}

std::string Socket::describe(const std::string& peer) const {
  if (is_router()) return fmt::format("peer '{}' on {}", printable(peer), endpoint_);
  return fmt::format("{} (as '{}')", endpoint_, printable(identity_));
}

void Socket::send(const std::string& peer, const wire::Message& message, Deadline deadline) {
  const auto start = Clock::now();
  const std::uint64_t total = wire::payload_total(message);
  if (total > max_payload_) {
    fail<ProtocolError>("send to {}: payload of {} bytes exceeds the limit of {} bytes",
                        describe(peer), total, max_payload_);
  }
  if (message.payload.size() > kMaxFrames) {
    fail<ProtocolError>("send to {}: {} payload frames, at most {} are allowed", describe(peer),
                        message.payload.size(), kMaxFrames);
  }
  // The size field is derived from the frames, so it can never disagree with them.
  wire::Header header = message.header;
  header.payload_size = total;
  const wire::Bytes head = wire::encode_header(header);
  while (!try_send(peer, head, message)) {
    if (Clock::now() >= deadline) {
      const auto waited = std::chrono::ceil<milliseconds>(deadline - start);
      fail<TimeoutError>("send to {}: timed out after {} ms", describe(peer),
                         std::max(waited, milliseconds{0}).count());
    }
    wait_writable(deadline);
  }
  counters_.bytes_sent += head.size() + total;
  ++counters_.messages_sent;
}

bool Socket::try_send(const std::string& peer, const wire::Bytes& header,
                      const wire::Message& message) {
  // False when the socket cannot take the frame now (EAGAIN).
  const auto send_frame = [&](zmq::const_buffer data, bool last) {
    const auto flags = last ? zmq::send_flags::dontwait
                            : zmq::send_flags::dontwait | zmq::send_flags::sndmore;
    for (;;) {
      try {
        return socket_.send(data, flags).has_value();
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;  // nothing was queued; try the same frame again
        if (e.num() == EHOSTUNREACH) {
          fail<TransportError>("send to {}: peer unknown or disconnected", describe(peer));
        }
        fail<TransportError>("send to {}: {}", describe(peer), e.what());
      }
    }
  };
  const auto& payload = message.payload;
  if (is_router() && !send_frame(zmq::buffer(peer), false)) return false;
  // A ROUTER has now committed the message to the peer's pipe; a DEALER commits with the header
  // frame. Either way the rest cannot hit the high-water mark, which counts whole messages.
  if (!send_frame(zmq::buffer(header.data(), header.size()), payload.empty())) {
    if (!is_router()) return false;
    fail<TransportError>("send to {}: message cut short after its identity frame", describe(peer));
  }
  for (std::size_t i = 0; i < payload.size(); ++i) {
    const auto frame = wire::frame(message, i);  // a lent frame is copied here too
    if (!send_frame(zmq::buffer(frame.data(), frame.size()), i + 1 == payload.size())) {
      fail<TransportError>("send to {}: message cut short at payload frame {} of {}",
                           describe(peer), i + 1, payload.size());
    }
  }
  return true;
}

void Socket::wait_writable(Deadline deadline) {
  const auto left = time_left(deadline);
  if (is_router()) {
    // A mandatory ROUTER reports POLLOUT when *any* peer has room, so polling could spin while
    // the one we want is full: back off briefly instead.
    std::this_thread::sleep_for(std::min(left, milliseconds{1}));
    return;
  }
  zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLOUT, 0};
  try {
    (void)zmq::poll(&item, 1, left);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) fail<TransportError>("send to {}: {}", describe({}), e.what());
  }
}

void Socket::watch_handshakes() {
  watch_ = std::make_unique<HandshakeWatch>(context_->context, socket_);
}

const Refusal& Socket::check_handshakes() {
  if (watch_) {
    using Kind = HandshakeWatch::Failure::Kind;
    watch_->drain([&](const HandshakeWatch::Failure& f) {
      if (is_router()) {
        // Refused keys are logged by the ZAP handler, with the key; the rest once per kind.
        const auto bit = 1U << static_cast<unsigned>(f.kind);
        if (f.kind == Kind::kKeyRefused || (warned_handshakes_ & bit) != 0) return;
        warned_handshakes_ |= bit;
        log::warn("a connection to {} failed its handshake and was dropped: {} (further ones "
                  "like it are not logged)",
                  endpoint_, describe_failure(f));
      } else if (refusal_.kind == Refusal::Kind::kNone) {
        // Definite answers at once. A handshake cut off by the other end can be a listener
        // going away; several in a row are its answer (no CURVE there, or another key).
        if (f.kind == Kind::kClosed && ++closed_handshakes_ < kClosedHandshakesToRefuse) return;
        refusal_.kind = Refusal::Kind::kSecurity;
        refusal_.why = f.kind == Kind::kClosed
                       ? fmt::format("it closed the connection during the handshake {} times "
                                     "({}): either it does not use transport.security curve "
                                     "and this process does, or the other way round, or this "
                                     "process was given a server key that is not its public key",
                                     closed_handshakes_, std::strerror(f.value))
                       : describe_failure(f);
      }
    });
  }
  return refusal_;
}

std::optional<Incoming> Socket::receive(Deadline deadline) {
  drops_.tick();  // the counts of a flood, once they are due
  for (;;) {
    auto frames = receive_frames(deadline);
    if (!frames) return std::nullopt;
    std::string peer;
    if (is_router()) peer = (*frames)[0].to_string();
    try {
      auto message = parse(*frames);
      ++counters_.messages_received;
      return Incoming{std::move(peer), std::move(message)};
    } catch (const ProtocolError& e) {
      const std::size_t head = is_router() ? 1 : 0;
      if (frames->size() > head) {
        const auto version = wire::peek_version(bytes_of((*frames)[head]));
        if (version && *version != wire::kProtocolVersion) other_version(peer, *version);
      }
      drop(peer, e.message());
    }
    // A stream of garbage must not keep a caller past its deadline.
    if (Clock::now() >= deadline) return std::nullopt;
  }
}

std::optional<std::vector<zmq::message_t>> Socket::receive_frames(Deadline deadline) {
  for (;;) {
    // A failed handshake wakes the wait too, so that it is reported when it happens; a raised
    // Wakeup ends it (a stop).
    zmq::pollitem_t items[3] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}};
    std::size_t n = 1;
    zmq::pollitem_t* handshakes = nullptr;
    zmq::pollitem_t* wakeup = nullptr;
    if (watch_) {
      handshakes = &items[n];
      items[n++] = {watch_->handle(), 0, ZMQ_POLLIN, 0};
    }
    if (wakeup_ != nullptr) {
      wakeup = &items[n];
      items[n++] = {nullptr, wakeup_->fd(), ZMQ_POLLIN, 0};
    }
    const zmq::pollitem_t& item = items[0];
    try {
      (void)zmq::poll(items, n, time_left(deadline));
    } catch (const zmq::error_t& e) {
      // A signal: return at once so the caller can look at its interrupt flag.
      if (e.num() == EINTR) return std::nullopt;
      fail<TransportError>("receive on {}: {}", endpoint_, e.what());
    }
    if (handshakes != nullptr && (handshakes->revents & ZMQ_POLLIN) != 0) (void)check_handshakes();
    if (wakeup != nullptr && (wakeup->revents & ZMQ_POLLIN) != 0) return std::nullopt;
    if ((item.revents & ZMQ_POLLIN) == 0) {
      if (Clock::now() >= deadline) return std::nullopt;
      continue;
    }
    // ZeroMQ delivers a multipart message whole: once its first frame is readable, all are.
    std::vector<zmq::message_t> frames;
    std::size_t count = 0;
    bool more = true;
    while (more) {
      zmq::message_t frame;
      zmq::recv_result_t got;
      try {
        got = socket_.recv(frame, zmq::recv_flags::dontwait);
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) fail<TransportError>("receive on {}: {}", endpoint_, e.what());
        if (count == 0) return std::nullopt;
        continue;
      }
      if (!got) {
        if (count == 0) break;  // nothing after all; poll again
        fail<TransportError>("receive on {}: message cut short after {} frames", endpoint_, count);
      }
      more = frame.more();
      // The identity frame is added locally by the ROUTER; everything else crossed the network.
      if (count > 0 || !is_router()) counters_.bytes_received += frame.size();
      ++count;
      // Keep one frame past the limit so parse() sees that there were too many.
      if (frames.size() <= kMaxFrames + 2) frames.push_back(std::move(frame));
    }
    if (count > 0) return frames;
  }
}

wire::Message Socket::parse(const std::vector<zmq::message_t>& frames) const {
  const std::size_t head = is_router() ? 1 : 0;
  if (frames.size() <= head) fail<ProtocolError>("message has no header frame");
  const std::size_t payload_frames = frames.size() - head - 1;
  if (payload_frames > kMaxFrames) {
    fail<ProtocolError>("message has more than {} payload frames", kMaxFrames);
  }
  wire::Message message;
  message.header = wire::decode_header(bytes_of(frames[head]), max_payload_);
  std::uint64_t total = 0;
  for (std::size_t i = head + 1; i < frames.size(); ++i) total += frames[i].size();
  wire::check_payload(message.header, total, payload_frames);  // before copying anything
  message.payload.reserve(payload_frames);
  for (std::size_t i = head + 1; i < frames.size(); ++i) {
    const auto bytes = bytes_of(frames[i]);
    message.payload.emplace_back(bytes.begin(), bytes.end());
  }
  return message;
}

void Socket::other_version(const std::string& peer, std::uint16_t version) {
  if (!is_router()) {
    if (refusal_.kind == Refusal::Kind::kNone) {
      refusal_ = {Refusal::Kind::kVersion,
                  fmt::format("it speaks disttrain protocol version {}, this build speaks {}: run "
                              "the same disttrain release on every host",
                              version, wire::kProtocolVersion)};
    }
    return;
  }
  // Once per peer: this build's version back, so that the peer's build can name both (best
  // effort, never waits: the peer may be gone).
  if (answered_.size() >= kMaxAnsweredPeers || !answered_.insert(peer).second) return;
  try {
    const wire::Bytes notice = wire::version_notice();
    if (socket_.send(zmq::buffer(peer), zmq::send_flags::dontwait | zmq::send_flags::sndmore)) {
      (void)socket_.send(zmq::buffer(notice.data(), notice.size()), zmq::send_flags::dontwait);
    }
  } catch (const zmq::error_t&) {
  }
}

void Socket::drop(const std::string& peer, std::string_view reason) {
  ++counters_.messages_dropped;
  if (!drops_.count(peer)) return;
  log::warn("dropped a malformed message from {}: {} (further ones from there are counted, not "
            "named)",
            describe(peer), reason);
}

std::unique_ptr<Listener> make_listener(Socket socket) {
  return std::make_unique<ZmqListener>(std::move(socket));
}

std::unique_ptr<Connection> make_connection(Socket socket) {
  return std::make_unique<ZmqConnection>(std::move(socket));
}

std::string printable(std::string_view text) {
  constexpr std::size_t kMaxShown = 64;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out;
}

}  // namespace dt::transport::zmq_detail
