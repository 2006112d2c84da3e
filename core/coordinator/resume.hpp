#pragma once
// Checkpoints of a run and resuming from them (fault_tolerance.checkpoint_every, run --resume).
//
// A checkpoint holds what the coordinator needs to continue exactly where a step boundary left
// off: the step and epoch, the loss log so far and the accumulators of the log row in progress,
// the samples count, the fingerprints that say whether the config and data still fit, and the
// mode's own state (parameters, optimizer state, per-worker or per-server state; each mode's
// save_state/restore_state). Batches are pure functions of (seed, epoch, step) and the clients
// of a parameters-mode round of (seed, round), so no RNG state needs saving: a synchronous run
// resumed from a checkpoint computes the same bits as one that never stopped.
//
// Threading: the coordinator thread only (the files are written on CheckpointWriter's own).

#include "core/config/config.hpp"
#include "core/models/optim.hpp"
#include "core/coordinator/checkpoint.hpp"
#include "core/coordinator/checkpoint_writer.hpp"
#include "core/coordinator/resume_read.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dt::modes {
class Mode;
}

namespace dt::roles {

class CoordinatorSession;
struct Plan;

// <output.dir>/checkpoint
[[nodiscard]] std::filesystem::path checkpoint_dir(const std::filesystem::path& run_dir);

// The checkpoint `--resume` continues from: the newest usable one in run_dir/checkpoint,
// checked against the config and the plan. UsageError (exit 2) when there is none, saying where
// it looked; ConfigError (exit 2) naming every key that changed incompatibly and what to do.
// Keys that keep the checkpoint loadable but change the numbers (lr, batch size, seed, ...)
// are returned as warnings.
// With fault_tolerance.elastic (resume_membership.hpp) the worker count may differ from the
// checkpoint's: `from_workers` is then the count training at the checkpoint, and `start_step` the
// first step of the next epoch (else 0 and the checkpoint's step).
struct ResumePoint {
  checkpoint::Checkpoint checkpoint;
  std::filesystem::path path;
  std::vector<std::string> warnings;
  int from_workers = 0;
  std::uint64_t start_step = 0;
};
[[nodiscard]] ResumePoint find_resume_point(const std::filesystem::path& run_dir,
                                            const config::Config& config, const Plan& plan);

// The run's checkpoint writer: periodic checkpoints at the step boundaries the modes report,
// and the one written when a run stops early (interrupted, failed).
class Checkpointer {
 public:
  Checkpointer(const config::Config& config, const Plan& plan, std::filesystem::path run_dir);

  void set_mode(modes::Mode* mode) noexcept { mode_ = mode; }
  // The checkpoint this run resumed from (restored by restore()), if any.
  void set_resume(ResumePoint point) { resume_ = std::move(point); }
  [[nodiscard]] const ResumePoint* resume() const noexcept { return resume_ ? &*resume_ : nullptr; }
  [[nodiscard]] std::uint64_t first_step() const;

  // Does a checkpoint fall at `step` (steps completed): the first step boundary at or after
  // each multiple of checkpoint_every since the last one saved?
  [[nodiscard]] bool due(std::uint64_t step) const noexcept;
  // Hands the checkpoint of `step`, with the mode's state, to the writer's thread; a write error
  // is a warning (training goes on), as a full disk should not kill a run that can still finish.
  void save(CoordinatorSession& session, std::uint64_t step);
  // Waits until every checkpoint handed over is on disk (or failed): at the end of training,
  // before last_written() is read.
  void flush(CoordinatorSession& session);
  // After a run stopped early: writes a checkpoint of the last completed step when the mode
  // holds that step's state and it is newer than the last one written. Never throws.
  void save_on_stop(CoordinatorSession& session) noexcept;
  // Before the mode runs on a resumed run: the session's log, samples and parameters, then the
  // mode's own state.
  void restore(CoordinatorSession& session);

  [[nodiscard]] std::uint64_t last_written() const noexcept { return last_written_; }
  [[nodiscard]] bool any_written() const noexcept { return written_; }

 private:
  [[nodiscard]] checkpoint::Checkpoint common(CoordinatorSession& session, std::uint64_t step) const;
  void note(CoordinatorSession& session, const std::vector<CheckpointWriter::Outcome>& outcomes);
  // The steps (async: updates) this config trains in all; a checkpoint at it is a finished run.
  [[nodiscard]] std::uint64_t planned_steps(const CoordinatorSession& session) const;

  const config::Config& config_;
  const Plan& plan_;
  std::filesystem::path dir_;
  modes::Mode* mode_ = nullptr;
  std::optional<ResumePoint> resume_;
  std::unique_ptr<CheckpointWriter> writer_;  // made at the first save
  std::uint64_t last_saved_ = 0;    // handed to the writer
  std::uint64_t last_written_ = 0;  // on disk
  bool written_ = false;
};

}  // namespace dt::roles
