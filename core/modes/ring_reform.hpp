#pragma once
// A ring that loses a member (fault_tolerance.on_worker_failure restart or continue) re-forms
// and redoes the step it was in. The coordinator's half is here; the replicas' half is in
// ring.cpp (RingMode::reform).
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
//   3. With replacements, the lowest-ranked member that is not fresh sends its state after
//      `step` steps (kStateRequest -> kResumeState) and the coordinator relays it to them.
//   4. The caller sends the step again. With restart the members, their order and their state
//      are those of the lost attempt, so the sums and the model are bit-identical to a run
//      without the failure; with continue the survivors' sum is divided by their rows.
// A worker lost during a re-form starts it again (each loss uses a restart or a worker, so
// this ends). Reform is not a dt::Error (nor a std::exception): no handler on the way catches
// it by accident.

#include "core/roles/coordinator.hpp"

#include <cstdint>
#include <set>

namespace dt::modes {

struct RingReform {};  // thrown by the loss handler; caught by the ring's step loop

class RingReformer {
 public:
  // Sets the session's loss handler unless the policy is abort.
  explicit RingReformer(roles::CoordinatorSession& session);
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

 private:
  roles::CoordinatorSession& session_;
  bool active_ = false;
  bool armed_ = true;
  bool pending_ = false;
  std::set<int> fresh_;  // replacements that have not received a replica's state yet
  int reforms_ = 0;
};

}  // namespace dt::modes
