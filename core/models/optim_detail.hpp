#pragma once
// What optim.cpp and optim_adaptive.cpp share: the checks every step makes, the state restore,
// and the constructors of the per-coordinate optimizers. Internal to core/models.

#include "base/memory.hpp"
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
// TrainingError unless every key of `work`'s gathers is below `expected`.
void check_gathers(std::size_t expected, const Optimizer::LazyStepWork& work);
// Replaces `current` with `state` after checking that it fits: `slots` slots of `size` values,
// in either layout; `current` gets `interleaved`'s (OptimizerState::interleaved).
void restore(OptimizerState& current, OptimizerState state, std::size_t slots, std::size_t size,
             const char* name, std::size_t interleaved = 0);

// A lazy step's coordinates lie far apart in a wide model, each a cache miss (or three, with
// two slots of state) unless fetched early: the loops of step_indices call this for the index
// kIndicesAhead places on, for the parameters and each slot they write. 32 rather than 16: ftrl's
// lazy step at 2^22 and 2^24 keys took 13-14 ns a key instead of 17-19 (35,000 random keys a
// step, huge pages; 11 ns at 2^18, where the vectors sit in the caches: its arithmetic).
inline constexpr std::size_t kIndicesAhead = 32;
DT_PREFETCH void prefetch_indices_ahead(std::span<const std::uint64_t> indices, std::size_t i,
                                   const double* a,
                           const double* b = nullptr, const double* c = nullptr) noexcept {
  if (i + kIndicesAhead >= indices.size()) return;
  const std::uint64_t k = indices[i + kIndicesAhead];
  __builtin_prefetch(a + k, 1, 1);
  if (b != nullptr) __builtin_prefetch(b + k, 1, 1);
  if (c != nullptr) __builtin_prefetch(c + k, 1, 1);
}

[[nodiscard]] std::unique_ptr<Optimizer> make_adagrad(const config::OptimizerConfig& config,
                                                      std::size_t size);
[[nodiscard]] std::unique_ptr<Optimizer> make_ftrl(const config::OptimizerConfig& config,
                                                   std::size_t size);
[[nodiscard]] std::unique_ptr<Optimizer> make_adamw(const config::OptimizerConfig& config,
                                                    std::size_t size);
[[nodiscard]] std::unique_ptr<Optimizer> make_rmsprop(const config::OptimizerConfig& config,
                                                      std::size_t size);
// `inner` under the config's lr schedule and clip_norm (optim_controls.cpp).
[[nodiscard]] std::unique_ptr<Optimizer> make_controlled(std::unique_ptr<Optimizer> inner,
                                                         const config::OptimizerConfig& config,
                                                         std::uint64_t total_steps);

}  // namespace dt::models::detail
