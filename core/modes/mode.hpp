#pragma once
// An aggregation mode holds both halves of its exchange in one file: what the coordinator does
// per step and what a worker does with each message. The common phases (hello, setup, loading,
// normalization, final evaluation, stop) live in coordinator/ and worker/; a mode only trains.
// A new mode is one new file plus one line in make_mode.
//
// core/modes/: one file per aggregation mode, with both halves of its exchange, and the registry.
// May use: base/, transports/, core/config/, core/data/, core/models/, core/protocol/,
// core/coordinator/, core/worker/, core/servers/.

#include "core/config/config.hpp"
#include "core/protocol/protocol.hpp"

#include <memory>

namespace dt::checkpoint {
struct Checkpoint;
}

namespace dt::roles {
class CoordinatorSession;
class WorkerSession;
struct Plan;
}  // namespace dt::roles

namespace dt::modes {

class Mode {
 public:
  virtual ~Mode() = default;
  // Runs training to the end, leaving the final parameters in the session.
  virtual void coordinate(roles::CoordinatorSession& session) = 0;
  // Before the training clock (summary.json's train_seconds) and after restore_state: set-up
  // that exchanges nothing with the workers, such as the optimizer state or the parameter
  // servers' slices, which a wide model allocates and clears at its full width.
  virtual void prepare(roles::CoordinatorSession& /*session*/) {}
  // Handles one message the common worker loop does not know (kStep, ...).
  virtual void work(roles::WorkerSession& session, const protocol::Envelope& message) = 0;
  // Answers the final kEvaluate itself and returns true, or returns false to let the common
  // worker loop evaluate the full parameters on the whole shard (the default).
  virtual bool evaluate(roles::WorkerSession& /*session*/, const protocol::Envelope& /*message*/) {
    return false;
  }

  // Checkpoints (core/coordinator/resume.hpp). Adds the mode's state after `step` completed steps to
  // `out` ("parameters", the optimizer state, per-worker or per-server state, fields under
  // out.manifest["mode_state"]) and returns true; false when it does not hold that step's state
  // (the previous checkpoint then stands). Called from session.step_boundary(step) inside
  // coordinate(), and after coordinate() has thrown (the stop checkpoint of the last completed
  // step, session.completed_step()).
  virtual bool save_state(roles::CoordinatorSession& /*session*/, std::uint64_t /*step*/,
                          checkpoint::Checkpoint& /*out*/) {
    return false;
  }
  // Before coordinate() on a resumed run: the session's parameters, log and samples are the
  // checkpoint's already; the mode takes its own state from `from` and starts coordinate() at
  // session.first_step().
  virtual void restore_state(roles::CoordinatorSession& /*session*/,
                             const checkpoint::Checkpoint& /*from*/) {}
};

// Chosen by aggregation.mode, aggregation.topology and parallelism.tensor.
[[nodiscard]] std::unique_ptr<Mode> make_mode(const config::Config& config);

// One factory per mode, each in its own file.
[[nodiscard]] std::unique_ptr<Mode> make_gradients_mode();
[[nodiscard]] std::unique_ptr<Mode> make_parameters_mode();

// The steps a run makes, as `validate` prints them and loss.csv counts them: the plan's global
// steps in gradients mode; every worker's local steps in async (each is one update); the largest
// shard's local steps, merged in `rounds` rounds, in parameters mode.
struct StepCount {
  std::uint64_t per_epoch = 0;
  std::uint64_t total = 0;
  std::uint64_t rounds = 0;  // parameters mode only
};
[[nodiscard]] StepCount count_steps(const config::Config& config, const roles::Plan& plan);
[[nodiscard]] StepCount count_parameters_steps(const config::Config& config,
                                               const roles::Plan& plan);
// gradients mode with parallelism.tensor > 1 (core/modes/tensor.cpp).
[[nodiscard]] std::unique_ptr<Mode> make_tensor_mode();
[[nodiscard]] std::unique_ptr<Mode> make_ring_mode();  // gradients over aggregation.topology ring
[[nodiscard]] std::unique_ptr<Mode> make_sharded_gradients_mode();  // gradients, servers > 1
[[nodiscard]] std::unique_ptr<Mode> make_async_mode();

}  // namespace dt::modes
