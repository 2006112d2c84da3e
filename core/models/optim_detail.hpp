#pragma once
// What optim.cpp and optim_adaptive.cpp share: the checks every step makes, the state restore,
// and the constructors of the per-coordinate optimizers. Internal to core/models.

#include "core/models/optim.hpp"

#include <cstdint>
#include <memory>
#include <span>

namespace dt::models::detail {

// TrainingError unless `from`, `grad` and `to` all hold `expected` values.
void check_step(std::size_t expected, std::span<const double> from, std::span<const double> grad,
                std::span<const double> to);
// TrainingError unless `indices` is strictly increasing, below `expected`, as long as `grad`,
// and `params` holds `expected` values.
void check_indices(std::size_t expected, std::span<const std::uint64_t> indices,
                   std::span<const double> grad, std::span<const double> params);
// Replaces `current` with `state` after checking that it fits: `slots` vectors of `size` values.
void restore(OptimizerState& current, OptimizerState state, std::size_t slots, std::size_t size,
             const char* name);

[[nodiscard]] std::unique_ptr<Optimizer> make_adagrad(const config::OptimizerConfig& config,
                                                      std::size_t size);
[[nodiscard]] std::unique_ptr<Optimizer> make_ftrl(const config::OptimizerConfig& config,
                                                   std::size_t size);

}  // namespace dt::models::detail
