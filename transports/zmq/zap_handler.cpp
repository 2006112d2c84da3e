#include "transports/zmq/zap_handler.hpp"

#include "base/error.hpp"
#include "base/log.hpp"
#include "transports/security.hpp"
#include "transports/zmq/zmq_socket.hpp"

#include <vector>

namespace dt::transport::zmq_detail {
namespace {

constexpr int kPollMs = 100;
constexpr std::size_t kMaxRequestFrames = 16;

}  // namespace

ZapHandler::ZapHandler(zmq::context_t& context, std::set<std::string> authorized)
    : socket_(context, zmq::socket_type::rep), authorized_(std::move(authorized)) {
  socket_.set(zmq::sockopt::linger, 0);
  try {
    socket_.bind("inproc://zeromq.zap.01");
  } catch (const zmq::error_t& e) {
    fail<TransportError>("cannot start the CURVE authentication handler: {}", e.what());
  }
  thread_ = std::thread([this] { loop(); });
}

ZapHandler::~ZapHandler() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void ZapHandler::loop() {
  while (!stop_.load()) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    try {
      (void)zmq::poll(&item, 1, std::chrono::milliseconds(kPollMs));
      if ((item.revents & ZMQ_POLLIN) != 0) answer(socket_);
      refused_.tick();
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      if (e.num() != EINTR) log::debug("authentication handler: {}", e.what());
    }
  }
}

void ZapHandler::answer(zmq::socket_t& socket) {
  std::vector<std::string> request;
  bool more = true;
  while (more) {
    zmq::message_t frame;
    if (!socket.recv(frame, zmq::recv_flags::dontwait)) return;  // REP delivers whole messages
    more = frame.more();
    if (request.size() < kMaxRequestFrames) request.push_back(frame.to_string());
  }
  const ZapDecision d = decide_zap(request, authorized_);
  if (d.status_code != "200") {
    const std::string who = d.client_key.empty() ? d.address : d.client_key;
    if (refused_.count(who)) {
      if (d.client_key.empty()) {
        log::warn("refused a connection from {}: {} (further ones are counted, not named)",
                  printable(d.address), d.status_text);
      } else {
        log::warn("refused a connection from {}: its CURVE key {} is not authorized; to admit it, "
                  "add it to transport.keys.authorized (further attempts with this key are counted, "
                  "not named)",
                  printable(d.address), d.client_key);
      }
    }
  } else {
    log::debug("admitted {} (key {})", printable(d.address), d.client_key);
  }
  // Reply: version, request id, status code, status text, user id, metadata.
  const std::string id = request.size() > 1 ? request[1] : std::string();
  const std::vector<std::string> reply = {"1.0", id, d.status_code, d.status_text,
                                          d.client_key, ""};
  for (std::size_t i = 0; i < reply.size(); ++i) {
    (void)socket.send(zmq::buffer(reply[i]),
                      i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

}  // namespace dt::transport::zmq_detail
