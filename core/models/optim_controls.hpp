#pragma once
// training.lr_schedule and training.clip_norm: the learning rate of a step as a pure function of
// the step count (so a run resumed from a checkpoint, whose optimizer state holds the count,
// continues with the same rates), and the clipping of the gradient's global L2 norm before the
// step (PyTorch's clip_grad_norm_). make_optimizer (optim.hpp) wraps a rule with both.

#include "core/config/config.hpp"

#include <cstdint>
#include <span>

namespace dt::models {

// True when `config` has a schedule other than a constant lr without warmup.
[[nodiscard]] bool has_lr_schedule(const config::OptimizerConfig& config) noexcept;

// The learning rate of step t, where t counts the steps taken before it (the first step is
// t = 0, as a PyTorch scheduler stepped once per optimizer step). With W = warmup_steps and
// s = warmup_start: lr * (s + (1 - s) * t / W) while t < W; then, with u = t - W,
//   constant: lr;  step: lr * gamma^floor(u / step_size);  exponential: lr * gamma^u;
//   cosine: min_lr + (lr - min_lr) * (1 + cos(pi * min(u, T) / T)) / 2, with T = t_max, or
//           total_steps - W (at least 1) when t_max is not set.
// TrainingError for a cosine schedule without t_max when total_steps is 0.
[[nodiscard]] double scheduled_lr(const config::OptimizerConfig& config, std::uint64_t t,
                                  std::uint64_t total_steps);

// The factor clip_grad_norm_ multiplies the gradient grad[i] * scale by: min(1, clip /
// (norm + 1e-6)) with norm its L2 norm (summed in index order: deterministic). 1 when clip <= 0.
[[nodiscard]] double clip_factor(std::span<const double> grad, double scale, double clip);
// The same factor from the squared norm (a sum of squares gathered elsewhere: the parameter
// servers' partial sums, core/servers/norm_exchange.hpp).
[[nodiscard]] double clip_coefficient(double sum_of_squares, double clip);

}  // namespace dt::models
