#pragma once
// How far training is: the steps that end it and the steps that make one epoch (the plan's, or
// a mode's own when its steps are not global steps: async counts applied worker batches,
// parameters local steps), and the training clock (a resumed run's seconds go on from its
// checkpoint's).

#include "core/config/config.hpp"
#include "core/coordinator/plan.hpp"

#include <cstdint>

namespace dt::roles {

class Schedule {
 public:
  Schedule(const config::Config& config, const Plan& plan);

  [[nodiscard]] std::uint64_t total_steps() const noexcept;
  [[nodiscard]] std::uint64_t steps_per_epoch() const noexcept;
  [[nodiscard]] double epoch_of(std::uint64_t step) const;
  // For modes whose steps are not global steps: the step count that ends training and the
  // steps that make one epoch, for the log.
  void set(std::uint64_t total_steps, std::uint64_t steps_per_epoch) noexcept {
    total_ = total_steps;
    per_epoch_ = steps_per_epoch;
  }

  void start_clock();
  void resume_clock(double seconds) noexcept { seconds_before_ = seconds; }
  [[nodiscard]] double elapsed_seconds() const;

 private:
  const config::Config& config_;
  const Plan& plan_;
  std::uint64_t total_ = 0;      // 0: epochs * plan.steps_per_epoch
  std::uint64_t per_epoch_ = 0;  // 0: plan.steps_per_epoch
  std::int64_t start_ms_ = 0;
  double seconds_before_ = 0;
};

}  // namespace dt::roles
