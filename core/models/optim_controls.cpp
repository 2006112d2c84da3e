#include "core/models/optim_controls.hpp"
#include "core/models/optim_detail.hpp"

#include "base/error.hpp"

#include <cmath>
#include <numbers>
#include <optional>
#include <utility>

namespace dt::models {

bool has_lr_schedule(const config::OptimizerConfig& config) noexcept {
  return config.schedule.type != config::LrScheduleType::kConstant ||
         config.schedule.warmup_steps > 0;
}

double scheduled_lr(const config::OptimizerConfig& config, std::uint64_t t,
                    std::uint64_t total_steps) {
  const config::LrScheduleConfig& l = config.schedule;
  const double lr = config.lr;
  if (t < l.warmup_steps) {
    const double s = l.warmup_start;
    return lr * (s + (1.0 - s) * static_cast<double>(t) / static_cast<double>(l.warmup_steps));
  }
  const std::uint64_t u = t - l.warmup_steps;
  switch (l.type) {
    case config::LrScheduleType::kConstant:
      return lr;
    case config::LrScheduleType::kStep:
      return lr * std::pow(l.gamma, static_cast<double>(u / l.step_size));
    case config::LrScheduleType::kExponential:
      return lr * std::pow(l.gamma, static_cast<double>(u));
    case config::LrScheduleType::kCosine: {
      std::uint64_t span = l.t_max;
      if (span == 0) {
        if (total_steps == 0) {
          fail<TrainingError>(
              "lr_schedule cosine: the run's total step count is unknown here; set "
              "training.lr_schedule.t_max");
        }
        span = total_steps > l.warmup_steps ? total_steps - l.warmup_steps : 1;
      }
      const double progress =
          static_cast<double>(std::min(u, span)) / static_cast<double>(span);
      return l.min_lr + (lr - l.min_lr) * (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
    }
  }
  return lr;
}

double clip_factor(std::span<const double> grad, double scale, double clip) {
  if (!(clip > 0.0)) return 1.0;
  double sum = 0.0;
  for (const double g : grad) {
    const double v = g * scale;
    sum += v * v;
  }
  return clip_coefficient(sum, clip);
}

double clip_coefficient(double sum_of_squares, double clip) {
  if (!(clip > 0.0)) return 1.0;
  const double coef = clip / (std::sqrt(sum_of_squares) + 1e-6);
  return coef < 1.0 ? coef : 1.0;
}

namespace detail {

namespace {

// A rule under a schedule and clip_norm: before each step the rule's lr is set to the
// schedule's rate at the step count, and the gradient's scale multiplied by the clip factor
// (the same factor for every coordinate, so the rule sees the clipped gradient).
class Controlled final : public Optimizer {
 public:
  Controlled(std::unique_ptr<Optimizer> inner, const config::OptimizerConfig& config,
             std::uint64_t total_steps)
      : inner_(std::move(inner)),
        config_(config),
        total_steps_(total_steps),
        scheduled_(has_lr_schedule(config)) {}

  void step_scaled(std::span<const double> from, std::span<const double> grad_sum, double scale,
                   std::span<double> to) override {
    before_step();
    inner_->step_scaled(from, grad_sum, scale * clip_factor(grad_sum, scale, config_.clip_norm),
                        to);
    after_step();
  }

  // Sparse: the norm is over the touched keys' values (the others' gradient is zero).
  void step_indices(std::span<const std::uint64_t> indices, std::span<const double> grad_sum,
                    double scale, std::span<double> params) override {
    before_step();
    inner_->step_indices(indices, grad_sum,
                         scale * clip_factor(grad_sum, scale, config_.clip_norm), params);
    after_step();
  }
  void step_indices_with(std::span<const std::uint64_t> indices, std::span<const double> grad_sum,
                         double scale, std::span<double> params,
                         const LazyStepWork& work) override {
    before_step();
    inner_->step_indices_with(indices, grad_sum,
                              scale * clip_factor(grad_sum, scale, config_.clip_norm), params,
                              work);
    after_step();
  }

  [[nodiscard]] const OptimizerState& state() const noexcept override { return inner_->state(); }
  void set_state(OptimizerState state) override { inner_->set_state(std::move(state)); }
  void set_lr(double lr) override { config_.lr = lr; }  // the schedule's base rate
  void set_schedule_step(std::uint64_t step, std::uint64_t total_steps) override {
    position_ = step;
    total_steps_ = total_steps;
  }

 private:
  void before_step() {
    if (!scheduled_) return;
    const std::uint64_t t = position_.value_or(inner_->state().steps);
    inner_->set_lr(scheduled_lr(config_, t, total_steps_));
  }
  void after_step() {
    if (position_) ++*position_;
  }

  std::unique_ptr<Optimizer> inner_;
  config::OptimizerConfig config_;
  std::uint64_t total_steps_;
  bool scheduled_;
  std::optional<std::uint64_t> position_;  // set_schedule_step's count, else state().steps
};

}  // namespace

std::unique_ptr<Optimizer> make_controlled(std::unique_ptr<Optimizer> inner,
                                           const config::OptimizerConfig& config,
                                           std::uint64_t total_steps) {
  return std::make_unique<Controlled>(std::move(inner), config, total_steps);
}

}  // namespace detail

}  // namespace dt::models
