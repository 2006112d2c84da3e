#include "core/protocol/heartbeat.hpp"

#include "core/protocol/protocol.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

namespace dt::roles {

using transport::Clock;
using transport::deadline_in;

std::int64_t steady_ms() noexcept {
  return std::chrono::duration_cast<Milliseconds>(Clock::now().time_since_epoch()).count();
}

namespace {
constexpr Milliseconds kSendDeadline{200};
}  // namespace

HeartbeatServer::HeartbeatServer(transport::Transport& transport, std::uint64_t job_id, int ranks,
                                 Milliseconds poll_slice)
    : job_id_(job_id),
      last_seen_ms_(static_cast<std::size_t>(ranks)),
      progress_(static_cast<std::size_t>(ranks)),
      poll_slice_(poll_slice) {
  for (auto& t : last_seen_ms_) t.store(-1);
  auto listener = transport.listen("hb");
  endpoint_ = listener->endpoint();
  listener->wake_on(&wakeup_);
  thread_ = std::thread([this, l = std::move(listener)]() mutable { loop(std::move(l)); });
}

HeartbeatServer::~HeartbeatServer() {
  stop_.store(true);
  wakeup_.raise();
  if (thread_.joinable()) thread_.join();
}

std::int64_t HeartbeatServer::silent_ms(int rank) const noexcept {
  const std::int64_t seen = last_seen_ms_[static_cast<std::size_t>(rank)].load();
  return seen < 0 ? -1 : steady_ms() - seen;
}

WorkerProgress HeartbeatServer::progress(int rank) const {
  const std::lock_guard lock(progress_mutex_);
  return progress_.at(static_cast<std::size_t>(rank));
}

void HeartbeatServer::loop(std::unique_ptr<transport::Listener> listener) {
  while (!stop_.load()) {
    try {
      auto incoming = listener->receive(deadline_in(poll_slice_));
      if (!incoming) continue;
      const auto ping = protocol::decode(incoming->message, job_id_);
      if (ping.type != protocol::Type::kPing || ping.rank >= last_seen_ms_.size() ||
          incoming->peer != fmt::format("h{}", ping.rank)) {
        continue;  // only rank r's own heartbeat socket speaks for rank r
      }
      last_seen_ms_[ping.rank].store(steady_ms());
      if (ping.fields.contains("steps")) {
        const std::lock_guard lock(progress_mutex_);
        progress_[ping.rank] = {protocol::count(ping, "steps"),
                                protocol::number(ping, "compute_seconds")};
      }
      protocol::Envelope pong{.type = protocol::Type::kPong};
      listener->send(incoming->peer, protocol::encode(pong, job_id_), deadline_in(kSendDeadline));
    } catch (const Error& e) {
      // A pong that cannot be delivered (the worker just exited) is not the server's problem:
      // the coordinator learns about dead workers from their silence and their exit status.
      log::debug("heartbeat: {}", e.what());
    }
  }
}

HeartbeatClient::HeartbeatClient(transport::Transport& transport, const std::string& endpoint,
                                 std::uint64_t job_id, std::uint32_t rank, Milliseconds interval,
                                 Milliseconds poll_slice)
    : job_id_(job_id),
      rank_(rank),
      interval_(interval),
      last_seen_ms_(steady_ms()),
      poll_slice_(poll_slice) {
  auto connection = transport.connect(endpoint, fmt::format("h{}", rank));
  connection->wake_on(&wakeup_);
  thread_ = std::thread([this, c = std::move(connection)]() mutable { loop(std::move(c)); });
}

HeartbeatClient::~HeartbeatClient() {
  stop_.store(true);
  wakeup_.raise();
  if (thread_.joinable()) thread_.join();
}

std::int64_t HeartbeatClient::silent_ms() const noexcept { return steady_ms() - last_seen_ms_.load(); }

void HeartbeatClient::set_progress(std::uint64_t steps, double compute_seconds) {
  const std::lock_guard lock(progress_mutex_);
  progress_ = {steps, compute_seconds};
}

void HeartbeatClient::loop(std::unique_ptr<transport::Connection> connection) {
  auto next_ping = Clock::now();
  while (!stop_.load()) {
    try {
      if (Clock::now() >= next_ping) {
        protocol::Envelope ping{.type = protocol::Type::kPing, .rank = rank_};
        {
          const std::lock_guard lock(progress_mutex_);
          ping.fields = {{"steps", progress_.steps},
                         {"compute_seconds", progress_.compute_seconds}};
        }
        connection->send(protocol::encode(ping, job_id_), deadline_in(kSendDeadline));
        next_ping = Clock::now() + interval_;
      }
      const auto wait_until = std::min(next_ping, Clock::now() + poll_slice_);
      auto reply = connection->receive(wait_until);
      if (reply && protocol::decode(*reply, job_id_).type == protocol::Type::kPong) {
        last_seen_ms_.store(steady_ms());
      }
    } catch (const Error& e) {
      log::debug("heartbeat: {}", e.what());
    }
  }
}

}  // namespace dt::roles
