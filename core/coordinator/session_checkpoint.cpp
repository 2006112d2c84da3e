// The parts of CoordinatorSession that checkpoints and resuming use (core/coordinator/resume.hpp).

#include "core/coordinator/session.hpp"
#include "core/coordinator/resume.hpp"
#include "core/protocol/timing.hpp"
#include "base/timeline.hpp"
#include "base/error.hpp"
#include "transports/transport.hpp"

#include <utility>

namespace dt::roles {

std::uint64_t CoordinatorSession::first_step() const {
  return checkpointer_ != nullptr ? checkpointer_->first_step() : 0;
}

void CoordinatorSession::step_boundary(std::uint64_t step) {
  completed_step_ = step;
  // Every worker takes SIGTERM as a leave from here on: `disttrain leave` may find them.
  publish_members(true);
  if (checkpointer_ != nullptr && checkpointer_->due(step)) {
    const auto span_start = timeline::start();
    checkpointer_->save(*this, step);
    timeline::span_at(timeline::Phase::kCheckpoint, step, span_start);
  }
  if (!joins_.below_min.empty()) check_min_workers(std::exchange(joins_.below_min, {}));
}

bool CoordinatorSession::checkpoint_due(std::uint64_t step) const {
  return checkpointer_ != nullptr && checkpointer_->due(step);
}

void CoordinatorSession::restore_log_window(const nlohmann::json& window, std::uint64_t step,
                                            double seconds, const std::string& where) {
  window_.restore(window, where);
  completed_step_ = step;
  schedule_.resume_clock(seconds);
}

std::optional<protocol::Envelope> CoordinatorSession::receive_from(
    int rank, protocol::Type type, std::chrono::milliseconds timeout) {
  const auto deadline = transport::deadline_in(timeout);
  while (transport::Clock::now() < deadline) {
    auto in = listener_.receive(std::min(deadline, transport::deadline_in(kPollSlice)));
    if (!in || in->peer != addresses_.identity(rank)) continue;
    try {
      auto e = protocol::decode(in->message, job_id_);
      if (e.type == type) return e;
      if (e.type == protocol::Type::kError) return std::nullopt;
    } catch (const ProtocolError&) {
      // a damaged message: keep waiting for the one asked for
    }
  }
  return std::nullopt;
}

}  // namespace dt::roles
