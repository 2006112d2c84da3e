#pragma once
// A ring that loses a member (fault_tolerance.on_worker_failure restart or continue) re-forms
// and redoes the step it was in; so does one a member leaves (fault_tolerance.elastic), without
// a failure, unless the leaver finished the step (then before the next one). The coordinator's
// half is here; the replicas' half is in ring.cpp (RingMode::reform). Tensor parallelism (tensor.cpp) re-forms its groups the same
// way, with another hand-over (the replacement is sent its slice setup; the coordinator holds
// the parameters).
//
//   1. The session reports the loss (CoordinatorSession::set_loss_handler) once the rank is
//      replaced (restart) or dropped from alive() (continue). The handler throws Reform, which
//      unwinds the wait of the step (gather, broadcast) to the mode's step loop.
//   2. reform(step) sends every member kRingReform: the step to go back to, the members (the
//      ranks alive, ascending: with restart the same ring as before), every peer endpoint (a
//      replacement has a new one) and the ranks that hold no state ("fresh": replacements).
//      A replica stuck in the step's all-reduce sees the message while it waits on its peers
//      (WorkerSession::poll_coordinator, about every 50 ms) and abandons the collective; every
//      replica then goes back to its state before the step if it had finished it (each keeps
//      the state before its latest step), and builds the ring of the new generation (a new
//      group id: no chunk of the abandoned collective can be taken for the new one).
//   3. With replacements, the hand-over: by default (the ring) the lowest-ranked member that is
//      not fresh sends its state after `step` steps (kStateRequest -> kResumeState) and the
//      coordinator relays it to them.
//   4. The caller sends the step again. With restart the members, their order and their state
//      are those of the lost attempt, so the sums and the model are bit-identical to a run
//      without the failure; with continue the survivors' sum is divided by their rows.
// A worker lost during a re-form starts it again (each loss uses a restart or a worker, so
// this ends). Reform is not a dt::Error (nor a std::exception): no handler on the way catches
// it by accident.

#include "core/coordinator/session.hpp"
#include "core/modes/ring_batches.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dt::modes {

// Whether a replica may have to go back one step (a re-form): under restart and continue, and
// with fault_tolerance.elastic (a leave). Then every batch of steps is one step long.
[[nodiscard]] bool may_reform(const config::Config& config);

struct RingReform {};  // thrown by the loss handler; caught by the ring's step loop
// Thrown on a worker from the peer links' wait (PeerLinks::set_interrupt) when the coordinator's
// kRingReform has arrived: only the collective's caller catches it.
struct GroupAbandoned {};

class RingReformer {
 public:
  // What replacements need before the step is done again, after every member has the re-form
  // message; it may wait on workers (a loss there starts the re-form again).
  using HandOver = std::function<void(const std::vector<int>& fresh, std::uint64_t step)>;
  // Sets the session's loss handler unless the policy is abort. Without `hand_over`, a
  // replica's state is relayed (step 3); `after` becomes the session's loss handler once this
  // object goes (none: the session's own handling).
  explicit RingReformer(roles::CoordinatorSession& session, HandOver hand_over = {},
                        roles::CoordinatorSession::LossHandler after = {});
  ~RingReformer();
  RingReformer(const RingReformer&) = delete;
  RingReformer& operator=(const RingReformer&) = delete;

  // While disarmed a loss is only noted (pending()); the caller re-forms before its next step.
  // For waits that must not be cut short (dealing a lost worker's rows to the survivors).
  void arm(bool armed) noexcept { armed_ = armed; }
  [[nodiscard]] bool pending() const noexcept { return pending_; }
  // Brings the members alive to their state after `step` steps over a ring of this generation
  // (steps 2-3 above). Throws TrainingError when no replica holding the state is left.
  void reform(std::uint64_t step);
  [[nodiscard]] int reforms() const noexcept { return reforms_; }
  // A run resumed without the ranks that had left (elastic, resume_membership.hpp): the
  // replicas, at `step` (the checkpoint's), build their first ring over the members alive.
  // Nothing is done again and no re-form is counted. A no-op when every starting rank trains.
  void form_over_members(std::uint64_t step);
  // Before each step: joiners are admitted (elastic), at an epoch start the rows of workers
  // lost under `continue` (or every row, after a join) are dealt (once per epoch: a step done
  // again after a re-form does not deal them twice), then a pending re-form is done: a joiner
  // is fresh, handed a member's state like a replacement. `per_epoch`: the plan's steps per
  // epoch.
  void before_step(std::uint64_t step, std::uint64_t per_epoch);
  // Called first for every loss the handler sees (tensor, continue: drop the lost rank's
  // replica-mates).
  void set_on_loss(roles::CoordinatorSession::LossHandler on_loss) { on_loss_ = std::move(on_loss); }
  // fault_tolerance.elastic: the mode's batch in flight. A worker that leaves after its last
  // step of it (its reply came) is re-formed without before the next batch and the wait goes
  // on; one that left before (its peers wait on it in the all-reduce) at once, as a loss.
  void follow_batches(const std::optional<ring::Batch>& in_flight) noexcept {
    in_flight_ = &in_flight;
  }
  // How the log says it ("the ring re-forms", the default).
  void set_wording(std::string wording) { wording_ = std::move(wording); }

 private:
  void relay_state(const std::vector<int>& fresh, std::uint64_t step);
  // kRingReform to every member: go back to `step`, the ring over `members`, every endpoint.
  void send_members(std::uint64_t step, const std::vector<int>& members,
                    const std::vector<int>& fresh);
  void admit_joiners(std::uint64_t step);  // fault_tolerance.elastic: before_step's first part
  [[nodiscard]] bool left_after_batch(int rank) const;

  roles::CoordinatorSession& session_;
  HandOver hand_over_;
  roles::CoordinatorSession::LossHandler after_;
  roles::CoordinatorSession::LossHandler on_loss_;
  const std::optional<ring::Batch>* in_flight_ = nullptr;  // follow_batches
  bool active_ = false;
  bool armed_ = true;
  bool pending_ = false;
  std::set<int> fresh_;  // replacements that have not received a replica's state yet
  int reforms_ = 0;
  bool joined_ = false;  // the pending re-form takes in joiners (the log says so)
  std::uint64_t dealt_epoch_ = UINT64_MAX;  // the epoch whose start dealt lost workers' rows
  std::string wording_ = "the ring re-forms";
};

}  // namespace dt::modes
