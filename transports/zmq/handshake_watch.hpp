#pragma once
// Failed connection handshakes of one socket, seen through ZeroMQ's socket monitor: a handshake
// that fails never delivers a message, so without this nobody would hear of it. A listener
// logs clients that do not speak CURVE (the ZAP handler logs refused keys); a connection learns
// that the listener refused it at once instead of at its timeout. Internal to transports/zmq/.

#include <zmq.hpp>

#include <string>

namespace dt::transport::zmq_detail {

class HandshakeWatch {
 public:
  // Watches `socket` (which must outlive this object) through a PAIR socket of `context`.
  HandshakeWatch(zmq::context_t& context, zmq::socket_t& socket);
  ~HandshakeWatch();
  HandshakeWatch(const HandshakeWatch&) = delete;
  HandshakeWatch& operator=(const HandshakeWatch&) = delete;

  struct Failure {
    enum class Kind {
      kKeyRefused,     // the listener's ZAP handler said no (value: its status code)
      kOtherSecurity,  // the two ends use different security mechanisms
      kCannotDecrypt,  // a CURVE client that was given another server key
      kClosed,         // the other end left mid-handshake (value: errno)
      kMalformed,      // anything else (value: ZMQ_PROTOCOL_ERROR_*)
    } kind = Kind::kMalformed;
    int value = 0;
  };
  // Readable (ZMQ_POLLIN) when a failure waits to be drained.
  [[nodiscard]] void* handle() noexcept { return pair_.handle(); }
  // Reads the failures reported since the last call, without waiting; calls `on` for each.
  template <class F>
  void drain(F&& on) {
    Failure f;
    while (next(f)) on(f);
  }

 private:
  [[nodiscard]] bool next(Failure& failure);

  void* watched_;
  zmq::socket_t pair_;
};

// A failure in words: "its CURVE key was refused (authentication status 400)".
[[nodiscard]] std::string describe_failure(const HandshakeWatch::Failure& failure);

}  // namespace dt::transport::zmq_detail
