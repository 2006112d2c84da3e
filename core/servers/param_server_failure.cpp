// ParameterServer's failures: how the coordinator finds out that a server can serve no more
// (failure), the faults a test injects into a server thread, and a worker reconnecting to a
// replacement (async rejoin). The copies a replacement starts from: param_server_copies.cpp.

#include "core/servers/param_server.hpp"

#include "core/protocol/heartbeat.hpp"
#include "core/protocol/step_messages.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

#include <algorithm>
#include <limits>
#include <span>
#include <thread>

namespace dt::roles {

std::optional<std::string> ParameterServer::failure(std::int64_t timeout_ms) const {
  {
    std::lock_guard lock(mu_);
    if (!error_.empty()) {
      const auto prefix = name() + " ";  // loop() words its errors "<name> failed: ..."
      return error_.starts_with(prefix) ? error_.substr(prefix.size()) : error_;
    }
  }
  if (stop_.load()) return std::nullopt;  // stopping on purpose
  if (ended_.load()) return std::string("stopped: its thread ended without a word");
  const auto silent = steady_ms() - beat_ms_.load();
  if (silent > timeout_ms) {
    return fmt::format("is hung: it has not served its socket for {} ms "
                       "(fault_tolerance.worker_timeout_ms = {})",
                       silent, timeout_ms);
  }
  return std::nullopt;
}

bool ParameterServer::injected_fault(const protocol::Envelope& e) {
  if (faults_.empty() || (e.type != protocol::Type::kPush && e.type != protocol::Type::kPull)) {
    return false;
  }
  const std::uint64_t version = stats_.version;  // written by this thread only
  const auto fired = faults_.step_faults(version);
  if (fired.kill) {
    // As a crashed process would: no word to anyone, the socket closes as the thread ends, and
    // the state is gone (NaN, so that any use of it would show in the model).
    log::warn("injected fault: kill at update {} (the server thread ends; its socket and state "
              "go with it)", version);
    std::lock_guard lock(mu_);
    std::fill(slice_.begin(), slice_.end(), std::numeric_limits<double>::quiet_NaN());
    kept_.clear();
    snapshots_.clear();
    dead_ = true;
    return true;
  }
  if (fired.hang) {
    // Alive but silent: the socket stays open and unread until the coordinator gives up on it.
    log::warn("injected fault: hang at update {} (the server thread stops serving)", version);
    while (!stop_.load()) std::this_thread::sleep_for(kPollSlice);
    return true;
  }
  return false;
}

void ParameterServer::on_rejoin(const protocol::Envelope& e) {
  const auto rank = static_cast<int>(e.rank);
  const auto r = static_cast<std::size_t>(rank);
  const auto pushed = protocol::count(e, "rejoin");
  const bool awaiting = protocol::flag(e, "awaiting");
  if (pushed > options_.worker_steps[r]) {
    fail<ProtocolError>("worker {} says it has pushed {} steps of {}", rank, pushed,
                        options_.worker_steps[r]);
  }
  const auto before = clock_->completed(rank);
  if (pushed > before) {
    // The steps the worker pushed since this server's copy was taken: applied to the other
    // slices, lost for this one (their gradients went to the failed server). Counted as done,
    // so that the version still ends at every worker's steps.
    std::vector<std::uint64_t> completed;
    for (int w = 0; w < options_.workers; ++w) completed.push_back(clock_->completed(w));
    completed[r] = pushed;
    clock_->resume_at(completed);
    std::lock_guard lock(mu_);
    stats_.version += pushed - before;
    stats_.worker_steps[r] = pushed;
    stats_.staleness_of[r].resize(pushed, 0);
    cv_.notify_all();
  }
  std::erase(waiting_, rank);
  if (awaiting && !clock_->finished(rank)) waiting_.push_back(rank);
  release_held();
}

}  // namespace dt::roles
