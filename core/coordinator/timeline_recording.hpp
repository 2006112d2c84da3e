#pragma once
// output.timeline on the coordinator's side: records the coordinator thread's spans while it
// lives, and at the end turns them and every worker's reported spans into RunResult::timeline
// (core/outputs/timeline_file.hpp writes it). Parameter servers add their own tracks
// (core/servers/server_group.cpp). Threading: created, used and finished on the coordinator's
// thread.

#include "core/config/config.hpp"
#include "core/coordinator/result.hpp"
#include "base/timeline.hpp"

#include <memory>
#include <optional>

namespace dt::roles {

// The timeline.json process of the coordinator (and its server threads): after the workers'.
[[nodiscard]] int coordinator_timeline_pid(const config::Config& config);

class TimelineRecording {
 public:
  TimelineRecording(const config::Config& config, RunResult& result);
  // After the workers' reports are in result.workers: the coordinator's track and one per
  // worker, first in result.timeline. A worker on another host (its own CLOCK_MONOTONIC) is
  // shifted by the difference of its clock when it sent its report and the coordinator's now.
  void finish();

 private:
  const config::Config& config_;
  RunResult& result_;
  std::unique_ptr<timeline::Recorder> recorder_;
  std::optional<timeline::Scope> scope_;
};

}  // namespace dt::roles
