#pragma once
// Parameters mode across `run --resume` with another worker count (a resize; docs/elastic.md,
// "Checkpoints and --resume"). The rows are those of the coordinator's plan for the new count,
// made afresh as a run started with it makes them: every training row among the new members.
// The rounds go on from the checkpoint's, on the log's step axis of the checkpoint's run (its
// local steps per epoch S: the rounds, the steps they end at and the epoch column do not
// change, nothing is skipped or trained again on that axis). Per slot:
// - trained at the checkpoint and still in the run: it keeps its kept optimizer state
//   (optimizer_state keep) and goes on at its next local epoch, on its new shard (the rest of an
//   epoch interrupted by the checkpoint, possible with sync_every in steps, is skipped);
// - new (above the old count) or left before the checkpoint: it starts afresh, as a joiner does
//   (position 0, no optimizer state);
// - above the new count: gone; its rows are in the others' new shards.
// Every client is sent the merged model with its round's request; a resumed worker holds none,
// so with fp16/bf16 it gets the model whole. The `resize` event records each member's rows and
// the local epoch it starts them at, and checkpoints keep S (mode_state.steps_per_epoch), so a
// later --resume goes on with the same axis.
// A member of parameters.cpp's mode; the coordinator's thread only.

#include "core/coordinator/checkpoint.hpp"
#include "core/coordinator/session.hpp"
#include "core/models/optim.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace dt::modes {

class RoundsResize {
 public:
  // At restore_state, with the checkpoint's positions and kept optimizer states read (one per
  // slot of this run): on a resize, moves each slot's position and state as above and sets
  // aggregation.local_steps_per_epoch to the new plan's; after a resize now or earlier, keeps
  // the checkpoint's log axis.
  void restore(roles::CoordinatorSession& session, const checkpoint::Checkpoint& from,
               std::vector<std::uint64_t>& positions,
               std::vector<std::optional<models::OptimizerState>>& optimizers);
  // The log's local steps per epoch the rounds keep; 0: the plan's (no resize).
  [[nodiscard]] std::uint64_t steps_per_epoch() const noexcept { return axis_; }
  // Before the first round of a resized run: completes the `resize` event (restore_membership
  // added it) with each member's rows and the local epoch it starts at, and logs it.
  void note(roles::CoordinatorSession& session, std::uint64_t round,
            const std::vector<std::uint64_t>& positions);

 private:
  std::uint64_t axis_ = 0;
  bool pending_ = false;  // a resize now: its event is still to complete
  std::vector<int> fresh_;  // slots that start afresh
};

}  // namespace dt::modes
