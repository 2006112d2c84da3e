// The parts of CoordinatorSession that checkpoints and resuming use (core/coordinator/resume.hpp).

#include "core/coordinator/coordinator.hpp"
#include "core/coordinator/resume.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "transports/transport.hpp"

namespace dt::roles {

std::uint64_t CoordinatorSession::first_step() const {
  return checkpointer_ != nullptr ? checkpointer_->first_step() : 0;
}

void CoordinatorSession::step_boundary(std::uint64_t step) {
  completed_step_ = step;
  if (checkpointer_ != nullptr && checkpointer_->due(step)) checkpointer_->save(*this, step);
}

bool CoordinatorSession::checkpoint_due(std::uint64_t step) const {
  return checkpointer_ != nullptr && checkpointer_->due(step);
}

double CoordinatorSession::epoch_of(std::uint64_t step) const {
  const auto per_epoch = schedule_per_epoch_ > 0 ? schedule_per_epoch_ : plan_.steps_per_epoch;
  return static_cast<double>(step) / static_cast<double>(per_epoch);
}

nlohmann::json CoordinatorSession::log_window() const {
  return {{"loss", window_loss_},
          {"rows", window_rows_},
          {"worker_loss", window_worker_loss_},
          {"worker_rows", window_worker_rows_}};
}

void CoordinatorSession::restore_log_window(const nlohmann::json& window, std::uint64_t step,
                                            double seconds) {
  window_loss_ = window.at("loss").get<double>();
  window_rows_ = window.at("rows").get<std::uint64_t>();
  window_worker_loss_ = window.at("worker_loss").get<std::vector<double>>();
  window_worker_rows_ = window.at("worker_rows").get<std::vector<std::uint64_t>>();
  window_worker_loss_.resize(plan_.shard_rows.size());
  window_worker_rows_.resize(plan_.shard_rows.size());
  completed_step_ = step;
  seconds_before_ = seconds;
}

std::optional<protocol::Envelope> CoordinatorSession::receive_from(
    int rank, protocol::Type type, std::chrono::milliseconds timeout) {
  const auto deadline = transport::deadline_in(timeout);
  while (transport::Clock::now() < deadline) {
    auto in = listener_.receive(std::min(deadline, transport::deadline_in(kPollSlice)));
    if (!in || in->peer != peer_of(rank)) continue;
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
