#pragma once
// Writes a run's checkpoints on a thread of its own, so a training step never waits on a file
// being encoded, written and fsynced (one to a few milliseconds a checkpoint on the development
// VM; with a checkpoint every 100 short steps that was a third of a ring run's time).
//
// The coordinator hands over a finished checkpoint (it owns copies of the state) and goes on. At
// most one waits while another is written; a newer one replaces the one waiting, as the newest
// state is what a resume needs. A checkpoint is on disk whole or not at all (checkpoint::write),
// so a coordinator killed mid-write leaves the previous one.
//
// Threading: submit, take_outcomes and flush from one thread (the coordinator's); the writes on
// the writer's own.

#include "core/coordinator/checkpoint.hpp"

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dt::roles {

class CheckpointWriter {
 public:
  // What became of one checkpoint handed over: written to `path`, or not, saying why;
  // `replaced` when a newer one took its place before its turn (not a failure).
  struct Outcome {
    std::uint64_t step = 0;
    std::filesystem::path path;
    std::optional<std::string> error;
    bool replaced = false;
  };

  explicit CheckpointWriter(std::filesystem::path dir);
  ~CheckpointWriter();  // finishes what was handed over
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  void submit(checkpoint::Checkpoint checkpoint);
  // The outcomes of the writes finished since the last call, oldest first; with `wait`, after
  // every checkpoint handed over is written (or has failed).
  [[nodiscard]] std::vector<Outcome> take_outcomes(bool wait);

 private:
  void run();

  std::filesystem::path dir_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<checkpoint::Checkpoint> waiting_;
  bool writing_ = false;
  bool stop_ = false;
  std::vector<Outcome> outcomes_;
  std::thread thread_;  // last: started once the rest is in place
};

}  // namespace dt::roles
