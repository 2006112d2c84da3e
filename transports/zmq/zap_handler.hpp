#pragma once
// The ZAP handler (ZeroMQ RFC 27) of one ZeroMQ context: a REP socket bound to
// inproc://zeromq.zap.01 that ZeroMQ asks, for every CURVE handshake on a listener of the
// context, whether to admit the client's key. Decisions are transports/security.hpp's
// decide_zap; this class is the socket, its thread and the logging.
//
// Threading: the constructor binds the socket, then hands it to a thread of its own that answers
// requests in waits of at most kPollMs, so that the destructor (which stops and joins it) returns
// promptly. It must be destroyed before its context is terminated (Context sees to that).

#include "base/drop_log.hpp"

#include <zmq.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace dt::transport::zmq_detail {

class ZapHandler {
 public:
  // TransportError when the handler cannot be bound (another one is bound in this context).
  ZapHandler(zmq::context_t& context, std::set<std::string> authorized);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

 private:
  void loop();
  void answer(zmq::socket_t& socket);

  zmq::socket_t socket_;  // used by the thread only once it runs
  const std::set<std::string> authorized_;
  // Refused keys (or addresses): the first few named, the rest counted, so that a flood of
  // made-up keys grows neither memory nor the log. Used by the thread.
  log::DropLog refused_{"refused", "connection"};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace dt::transport::zmq_detail
