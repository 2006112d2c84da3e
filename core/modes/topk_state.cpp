#include "core/modes/topk_state.hpp"

#include "core/coordinator/checkpoint.hpp"
#include "core/coordinator/session.hpp"
#include "core/protocol/topk_feedback.hpp"
#include "base/log.hpp"
#include "transports/topk_codec.hpp"

#include <algorithm>

namespace dt::modes {

bool residual_due(const config::Config& config, std::uint64_t completed) {
  const auto every = static_cast<std::uint64_t>(config.fault_tolerance.checkpoint_every_steps);
  return config.aggregation.compression == config::WireCompression::kTopk && every > 0 &&
         completed > 0 && completed % every == 0;
}

void TopkState::sum_in_order(const std::vector<protocol::Envelope>& replies,
                             std::vector<double>& grad, protocol::CompressionTally& tally) {
  std::fill(grad.begin(), grad.end(), 0.0);
  for (const auto& reply : replies) {
    const auto frame = protocol::frame_of(reply, 0);
    wire::add_topk(frame, grad);
    tally.add(grad.size(), frame.size(), wire::topk_entries(frame, grad.size()));
  }
}

void TopkState::keep_residuals(const std::vector<protocol::Envelope>& replies,
                               std::uint64_t completed, std::size_t index) {
  kept_.clear();
  kept_step_ = completed;
  for (const auto& reply : replies) {
    if (reply.arrays.size() <= index) continue;
    const auto frame = protocol::frame_of(reply, index);
    const auto* values = reinterpret_cast<const double*>(frame.data());
    kept_.emplace_back(static_cast<int>(reply.rank),
                       std::vector<double>(values, values + frame.size() / sizeof(double)));
  }
}

bool TopkState::save(const config::Config& config, std::uint64_t step,
                     checkpoint::Checkpoint& out) const {
  if (config.aggregation.compression != config::WireCompression::kTopk) return true;
  if (kept_step_ != step) return false;
  for (const auto& [rank, residual] : kept_) {
    checkpoint::put(out, protocol::topk_residual_key(rank), std::span<const double>(residual));
  }
  return true;
}

namespace {

// Resumed without top-k from a checkpoint with residuals: what the workers had not sent yet is
// dropped (a warning; the run goes on, deterministic, but not the run that kept top-k).
void warn_dropped_residuals(const config::Config& config, const checkpoint::Checkpoint& from) {
  int held = 0;
  const int workers = from.manifest.value("workers", 0);
  for (int rank = 0; rank < workers; ++rank) {
    if (from.has(protocol::topk_residual_key(rank))) ++held;
  }
  if (held == 0) return;
  log::warn("the checkpoint of step {} holds the top-k residuals of {} workers, and "
            "aggregation.compression is now {}: their unsent gradient mass is dropped, so this "
            "run's bytes differ from those of a run that kept top-k",
            from.step(), held, config::name_of(config.aggregation.compression));
}

}  // namespace

void TopkState::restore(roles::CoordinatorSession& session, const checkpoint::Checkpoint& from) {
  if (session.config().aggregation.compression != config::WireCompression::kTopk) {
    warn_dropped_residuals(session.config(), from);
    return;
  }
  const std::size_t p = session.params().size();
  int sent = 0;
  // Residuals belong to a worker's rows: with another worker count they are not carried over.
  const bool same_workers = from.manifest.value("workers", -1) == session.ranks();
  for (int rank = 0; same_workers && rank < session.ranks(); ++rank) {
    if (!session.is_alive(rank)) continue;  // had left (elastic --resume): not started
    const std::string key = protocol::topk_residual_key(rank);
    if (!from.has(key) || from.array(key).size() != p) continue;
    protocol::Envelope state{.type = protocol::Type::kResumeState, .step = from.step()};
    state.arrays.push_back(wire::to_bytes(std::span<const double>(from.array(key))));
    session.send_to(rank, std::move(state));
    ++sent;
  }
  if (sent < static_cast<int>(session.alive().size())) {
    log::warn("the checkpoint of step {} holds the top-k residuals of {} of the {} workers "
              "(it was written without top-k, or with another worker count): the others start "
              "from zero residuals, so this run's bytes differ from an unbroken run's",
              from.step(), sent, session.alive().size());
  }
}

}  // namespace dt::modes
