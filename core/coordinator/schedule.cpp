#include "core/coordinator/schedule.hpp"

#include "core/protocol/heartbeat.hpp"

namespace dt::roles {

Schedule::Schedule(const config::Config& config, const Plan& plan)
    : config_(config), plan_(plan), start_ms_(steady_ms()) {}

std::uint64_t Schedule::total_steps() const noexcept {
  if (total_ > 0) return total_;
  return static_cast<std::uint64_t>(config_.training.epochs) * plan_.steps_per_epoch;
}

std::uint64_t Schedule::steps_per_epoch() const noexcept {
  return per_epoch_ > 0 ? per_epoch_ : plan_.steps_per_epoch;
}

double Schedule::epoch_of(std::uint64_t step) const {
  return static_cast<double>(step) / static_cast<double>(steps_per_epoch());
}

void Schedule::start_clock() { start_ms_ = steady_ms(); }

double Schedule::elapsed_seconds() const {
  return seconds_before_ + static_cast<double>(steady_ms() - start_ms_) / 1000.0;
}

}  // namespace dt::roles
