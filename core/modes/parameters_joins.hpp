#pragma once
// Parameters mode's joins (fault_tolerance.elastic, docs/elastic.md): a worker started with
// `disttrain worker --connect ADDR --join` is admitted at a round boundary (never inside a
// round) into a free rank slot, which starts afresh: its position in its data 0 and no kept
// optimizer state (a new FedAvg client). It is sent the merged model with the round's request,
// as every client is, and dealt rows by the re-plan at the same boundary: every training row
// among the members, each member from its own next local epoch (the joiner from its first).
// A member of parameters.cpp's mode; the coordinator's half runs on its thread only.

#include "core/coordinator/session.hpp"
#include "core/models/optim.hpp"
#include "core/protocol/protocol.hpp"
#include "core/worker/worker.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace dt::modes {

class RoundJoins {
 public:
  // The mode's per-rank state that a joiner's slot resets.
  RoundJoins(std::vector<std::uint64_t>& positions,
             std::vector<std::optional<models::OptimizerState>>& optimizers)
      : positions_(positions), optimizers_(optimizers) {}

  // Before round r (of the run's rounds, which end at the log steps end_step(0), ...): admits
  // the joiners waiting (after step end_step(r - 1), or 0), then deals the rows of workers that
  // left, or after a join every training row, each member from its next local epoch
  // (CoordinatorSession::deal_left_rows), and sets each joiner's local steps per epoch (from
  // the rows it was dealt) in summary.json's aggregation.local_steps_per_epoch. At the first
  // call, checks admit_at_steps against the round boundaries (ConfigError: exit 2).
  void boundary(roles::CoordinatorSession& session, std::uint64_t r,
                const std::function<std::uint64_t(std::uint64_t)>& end_step);

  // A joiner's round request carries its local steps per epoch: it has no planned shard of its
  // own to count them from.
  void annotate(roles::CoordinatorSession& session, protocol::Envelope& request, int rank) const;

  // Worker side, at its first round: its local steps per epoch (the coordinator's, for a joiner).
  [[nodiscard]] static std::uint64_t steps_per_epoch(const roles::WorkerSession& session,
                                                     const protocol::Envelope& round);

 private:
  // admit_at_steps in this mode lists round boundaries: 0, or a step a round ends at (the last
  // round's excepted).
  static void check_admit_steps(const roles::CoordinatorSession& session, std::uint64_t rounds,
                                const std::function<std::uint64_t(std::uint64_t)>& end_step);

  // At the first boundary of a resumed run: the joiners' slots and their local steps.
  void resumed_joiners(roles::CoordinatorSession& session);

  std::vector<std::uint64_t>& positions_;
  std::vector<std::optional<models::OptimizerState>>& optimizers_;
  bool checked_ = false;
  std::vector<int> joiners_;  // slots held by a worker that joined
};

}  // namespace dt::modes
