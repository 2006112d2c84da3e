#pragma once
// `parameters` mode (parameters.cpp), the coordinator's decisions that involve no message: how
// long each round trains (the schedule), which workers a round draws (clients_per_round), and
// how the returned models are scored on the validation rows and merged
// (aggregation.parameters.merge; the rules themselves are merge.hpp). parameters.cpp holds the
// exchange, both halves.

#include "core/config/config.hpp"
#include "core/modes/merge.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace dt::roles {
class CoordinatorSession;
struct Plan;
}  // namespace dt::roles

namespace dt::modes::rounds {

// The round schedule (the comment at the top of parameters.cpp gives the formulas).
struct Schedule {
  std::uint64_t steps_per_epoch = 1;  // S: the largest shard's local steps per epoch
  std::uint64_t total_steps = 0;      // training.epochs * S
  std::uint64_t rounds = 0;
  std::uint64_t sync_steps = 0;       // K, or 0 with sync_every in epochs
  std::uint64_t sync_epochs = 0;      // E when sync_steps == 0
  std::uint64_t epochs = 0;           // training.epochs

  // Local steps (steps form) or local epochs (epochs form) of round r.
  [[nodiscard]] std::uint64_t amount(std::uint64_t r) const {
    if (sync_steps > 0) return std::min(sync_steps, total_steps - r * sync_steps);
    return std::min(sync_epochs, epochs - r * sync_epochs);
  }
  // The step (on the log's axis) reached when round r ends.
  [[nodiscard]] std::uint64_t end_step(std::uint64_t r) const {
    if (sync_steps > 0) return std::min((r + 1) * sync_steps, total_steps);
    return std::min((r + 1) * sync_epochs, epochs) * steps_per_epoch;
  }
};

// `steps_per_epoch` > 0 sets S instead of the plan's largest shard: the log's axis of the run's
// start, kept after a resize on --resume (parameters_resize.hpp).
[[nodiscard]] Schedule make_schedule(const config::Config& config, const roles::Plan& plan,
                                     std::uint64_t steps_per_epoch = 0);

// The round's clients, ascending: every rank with fraction 1, otherwise max(1, floor(fraction
// * n)) distinct ranks drawn by a partial Fisher-Yates shuffle from (seed, round).
[[nodiscard]] std::vector<int> sample_clients(std::uint64_t seed, std::uint64_t round, int n,
                                              double fraction);

// Whether the merge rule scores the models on the validation rows (best, validation_weighted).
[[nodiscard]] bool needs_validation(config::MergeRule rule);

// Scores each returned model on the validation rows, for the rules that need it: its mean loss
// (best) and its quality (validation_weighted; merge::regression_qualities and
// merge::accuracy_quality define it). `errors` is scratch, reused across rounds.
void score(roles::CoordinatorSession& session, config::MergeRule rule,
           std::vector<merge::Candidate>& candidates, std::vector<double>& errors);

// The merged model of `c` into `out` by the rule.
merge::Outcome apply_rule(config::MergeRule rule, double trim, std::span<const merge::Candidate> c,
                          std::span<double> out);

}  // namespace dt::modes::rounds
