#pragma once
// A planned leave (fault_tolerance.elastic, docs/elastic.md): a worker process that gets
// SIGTERM during training finishes the step in hand, tells the coordinator it leaves (kLeave),
// and exits 0; the coordinator deals its rows to the others. Only worker processes started as
// `disttrain worker` (WorkerOptions::own_process) take SIGTERM so: worker threads (inproc)
// share the coordinator's process and its signals.
//
// The flag is read where the worker waits for the coordinator (worker.cpp receive_from), never
// in the middle of a step: a leave fired by the `leave` fault at step s always comes after the
// reply to step s, which makes a replayed leave give the same bits.

#include "core/config/config.hpp"
#include "core/worker/worker.hpp"

namespace dt::roles {

// Thrown from the coordinator wait when a leave was asked for; run_worker turns it into
// leave_run. Not an Error: it is no failure.
struct LeaveRequest {};

// With fault_tolerance.elastic in a worker process: SIGTERM asks for a leave from now on.
// Returns whether it does (WorkerOptions::may_leave).
[[nodiscard]] bool arm_leave(const config::Config& config, const WorkerOptions& options);
// Whether a leave was asked for and may happen now (during training).
[[nodiscard]] bool leave_due(const WorkerOptions& options) noexcept;
// Whether a leave is due in a worker process (elastic), for a mode's own checks: a reply that
// says "leaving" makes the leave part of its step on the coordinator's side, whenever the
// kLeave that follows it arrives (parameters mode: the round's merge deals its rows next).
[[nodiscard]] bool leave_asked() noexcept;
// A step's or round's reply, flagged "leaving" when a leave is asked: the coordinator counts the
// leave after that step as it reads the reply, before it deals rows for the next epoch, so a
// leave lands at the same point whichever message it reads first.
void flag_if_leaving(protocol::Envelope& reply);
// For a mode whose workers do not wait for the coordinator while they train (async: they talk
// to the servers), at its own step boundaries: throws LeaveRequest when a leave is due.
void leave_if_asked();
// This worker has done all its training steps (async, before its kDone): a leave asked from now
// on waits for the end of the run, as one during the final evaluation does (nothing to re-plan).
void training_done() noexcept;
// Tells the coordinator this worker leaves (best effort: the coordinator may be gone, then it
// sees the exit); returns the exit code, 0.
[[nodiscard]] int leave_run(transport::Connection& connection, const WorkerOptions& options);

}  // namespace dt::roles
