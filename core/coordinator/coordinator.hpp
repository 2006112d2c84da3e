#pragma once
// The coordinator: plans the shards, starts and supervises the workers, runs the aggregation
// mode, evaluates, and returns everything the run outputs need. It never writes outputs itself
// (core/outputs/ does) and never includes ZeroMQ (transports/ does).
//
// core/coordinator/: what runs in the coordinator process around the mode: this entry point, the
// plan, the session the modes drive, the worker pool and launcher, lost workers, checkpoints and
// resume, stragglers, the run's evaluation, the rendezvous of launched jobs.
// May use: base/, transports/, core/config/, core/data/, core/models/, core/protocol/,
// core/modes/mode.hpp (the mode it drives), core/worker/worker.hpp (workers as threads, inproc).

#include "core/config/config.hpp"
#include "core/coordinator/plan.hpp"
#include "core/coordinator/result.hpp"

#include <cstdint>
#include <filesystem>

namespace dt::roles {

class Checkpointer;
struct RunKeys;
struct InitialModel;

struct CoordinatorOptions {
  std::filesystem::path worker_log_dir;  // workers/<rank>.log
  int log_level = 2;
  // Writes the run's checkpoints and restores a resumed run (core/coordinator/resume.hpp); none: no
  // checkpoints.
  Checkpointer* checkpointer = nullptr;
  // transport.security curve: the keys run_keys() read (so that `run` checks them before it
  // makes the run folder); null: read them here.
  const RunKeys* keys = nullptr;
  // model.init, read and checked by the caller (warm_start.hpp); null: the seed's weights.
  const InitialModel* init = nullptr;
  // steady_ms() when the `run` command began, so that wall_seconds also counts what came before
  // (reading stdin, decompressing, indexing the CSV, planning); -1: from this call.
  std::int64_t started_ms = -1;
};

// Trains. Throws dt::Error subclasses on failure; `partial` (if given) receives what was done
// so far, so that a failed run still writes its log and summary.
[[nodiscard]] RunResult run_coordinator(const config::Config& config, const Plan& plan,
                                        const CoordinatorOptions& options,
                                        RunResult* partial = nullptr);

}  // namespace dt::roles
