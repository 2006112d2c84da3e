#include "transports/zmq/handshake_watch.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstring>

namespace dt::transport::zmq_detail {
namespace {

constexpr int kEvents = ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                        ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;

std::string monitor_address() {
  static std::atomic<std::uint64_t> next{0};
  return fmt::format("inproc://dt-handshakes-{}", next.fetch_add(1));
}

}  // namespace

HandshakeWatch::HandshakeWatch(zmq::context_t& context, zmq::socket_t& socket)
    : watched_(socket.handle()), pair_(context, zmq::socket_type::pair) {
  const std::string address = monitor_address();
  if (zmq_socket_monitor(watched_, address.c_str(), kEvents) != 0) {
    fail<TransportError>("cannot watch a socket's handshakes: {}", zmq_strerror(zmq_errno()));
  }
  pair_.set(zmq::sockopt::linger, 0);
  pair_.connect(address);
}

HandshakeWatch::~HandshakeWatch() {
  // Stops the monitor while the watched socket still exists (its owner closes it after this).
  (void)zmq_socket_monitor(watched_, nullptr, 0);
}

bool HandshakeWatch::next(Failure& failure) {
  // An event is two frames: 2 bytes of event id and 4 of value, then the endpoint.
  zmq::message_t head;
  zmq::message_t endpoint;
  try {
    if (!pair_.recv(head, zmq::recv_flags::dontwait)) return false;
    if (head.more()) (void)pair_.recv(endpoint, zmq::recv_flags::dontwait);
  } catch (const zmq::error_t&) {
    return false;  // EINTR or the context ending: nothing to report now
  }
  if (head.size() < 6) return false;
  std::uint16_t event = 0;
  std::int32_t value = 0;
  std::memcpy(&event, head.data(), sizeof event);
  std::memcpy(&value, static_cast<const char*>(head.data()) + 2, sizeof value);
  failure = {};
  failure.value = value;
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
    failure.kind = Failure::Kind::kKeyRefused;
  } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
    failure.kind = Failure::Kind::kClosed;
  } else if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
    failure.kind = Failure::Kind::kOtherSecurity;
  } else if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC) {
    failure.kind = Failure::Kind::kCannotDecrypt;
  } else {
    failure.kind = Failure::Kind::kMalformed;
  }
  return true;
}

std::string describe_failure(const HandshakeWatch::Failure& failure) {
  using Kind = HandshakeWatch::Failure::Kind;
  switch (failure.kind) {
    case Kind::kKeyRefused:
      return fmt::format("its CURVE key was refused (authentication status {})", failure.value);
    case Kind::kOtherSecurity:
      return "the two ends use different security (transport.security curve on one side only)";
    case Kind::kCannotDecrypt:
      return "its CURVE handshake could not be decrypted (a server key that is not this "
             "listener's public key)";
    case Kind::kClosed:
      return fmt::format("the other end closed the connection during the handshake ({}); a "
                         "client without CURVE does that",
                         std::strerror(failure.value));
    case Kind::kMalformed:
      break;
  }
  return fmt::format("a malformed handshake (ZeroMQ protocol error {:#x})",
                     static_cast<std::uint32_t>(failure.value));
}

}  // namespace dt::transport::zmq_detail
