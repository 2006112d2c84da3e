#pragma once
// async mode's `run --resume` of an elastic run whose rows no longer follow the plan's shards
// (docs/elastic.md, "Checkpoints and --resume"): after a join (the coordinator refills the
// joiner's slot with a local worker, resume_membership.hpp) or with another shards.count (a
// resize). A checkpoint keeps each worker's pushes applied, not where in its own epochs each
// worker was nor which shares it held (those travel on server 0's slices), so the resumed run
// re-plans instead of replaying:
//
//   - it goes on from the run's next epoch by the updates applied (loss.csv's epoch axis: the
//     checkpoint's updates over its updates per epoch), as a resize in gradients mode does: the
//     rest of the interrupted epoch is skipped, so no row is trained twice in an epoch;
//   - after a join, every training row is dealt among the ranks training at the checkpoint
//     (share k of m: rows k, k + m, ... of the plan's shards in rank order), each member's share
//     riding on its kServers message; after a resize each worker trains the new plan's shard;
//   - each worker's step count goes on from its pushes counted so far (a resize spreads the
//     checkpoint's updates over the new ranks), so the servers' step clocks, the update count
//     and the log continue; its plan is that count plus its steps from that epoch on.
//
// The membership record gets a `resume` event (same count) or the `resize` event's from_epoch
// and skipped_steps in updates. Coordinator thread only.

#include "core/coordinator/session.hpp"
#include "core/servers/server_group.hpp"

#include <cstdint>
#include <vector>

namespace dt::checkpoint {
struct Checkpoint;
}

namespace dt::modes {

class AsyncResume {
 public:
  // Inactive unless `from` (a resumed run's checkpoint) is elastic with a join before it, or
  // the run resumes it with another worker count.
  AsyncResume(roles::CoordinatorSession& session, const checkpoint::Checkpoint* from);

  [[nodiscard]] bool active() const noexcept { return active_; }
  [[nodiscard]] bool resized() const noexcept { return resized_; }
  // Per rank: the pushes counted before the resumed run (the servers' step clocks start there)
  // and the planned pushes in all (those plus the steps from the re-plan's epoch on).
  [[nodiscard]] const std::vector<std::uint64_t>& done() const noexcept { return done_; }
  [[nodiscard]] const std::vector<std::uint64_t>& plans() const noexcept { return plans_; }
  // Sends every member its kServers message (the servers, its count, the epoch, its share)
  // instead of ServerGroup::announce, and records the re-plan.
  void announce(roles::ServerGroup& servers);

 private:
  roles::CoordinatorSession& session_;
  bool active_ = false;
  bool resized_ = false;
  std::uint64_t step_ = 0;        // the checkpoint's updates
  std::uint64_t from_epoch_ = 0;  // the run's next epoch (0-based)
  std::uint64_t skipped_ = 0;     // updates of the interrupted epoch not trained
  std::vector<int> members_;      // the ranks that train on, ascending
  std::vector<std::uint64_t> rows_;  // per member: its rows from from_epoch_ on
  std::vector<std::uint64_t> done_;
  std::vector<std::uint64_t> plans_;
};

}  // namespace dt::modes
