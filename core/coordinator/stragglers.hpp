#pragma once
// Straggler detection on the coordinator: warns when one worker is persistently slower than
// fault_tolerance.straggler_factor (k) times the median of the others: the question users of
// other systems can only answer by reading a trace.
//
// Input: each worker's progress (steps done, their compute seconds), which its heartbeat pings
// carry in every mode (core/protocol/heartbeat.hpp). Compute time excludes waits on the
// coordinator, the parameter servers and the peers (ring and tensor all-reduces count as
// communication), so a worker held back by a slow peer does not look slow itself.
//
// A worker's pace is the weighted median of its per-step compute time over its last
// kWindowSteps steps (at least kMinSamples heartbeat intervals, each weighted by its steps).
// It is suspect while pace > k * (median of the others' paces) and pace exceeds that median by
// at least kMinExcessSeconds (differences of microseconds are scheduler noise, not
// stragglers). A worker suspect without a break for kWindowSteps more of its steps and
// kMinSamples more heartbeat intervals is a straggler: one warning line, one summary entry.
// One slow step never is: it sits in one interval among several of a window.

#include "core/protocol/heartbeat.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace dt::roles {

struct RunResult;

struct Straggler {
  int rank = 0;
  double step_seconds_p50 = 0;  // its pace when detected
  double median_of_others = 0;  // the others' median pace then
  double factor = 0;            // the ratio of the two
  std::uint64_t first_seen_step = 0;  // its own step count when it first looked slow
  [[nodiscard]] nlohmann::json to_json() const;
  [[nodiscard]] std::string describe(double straggler_factor) const;
};

class StragglerMonitor {
 public:
  static constexpr std::uint64_t kWindowSteps = 10;
  static constexpr std::size_t kMinSamples = 3;
  static constexpr double kMinExcessSeconds = 0.001;

  // `factor` 0 disables it.
  StragglerMonitor(double factor, std::size_t ranks);

  // Records what a rank's heartbeat said (only changes matter; a smaller step count means a
  // replacement worker started over).
  void observe(int rank, const WorkerProgress& progress);
  // Compares the paces; returns the workers newly found to be stragglers.
  [[nodiscard]] std::vector<Straggler> evaluate();
  // A rank's pace (nullopt before its window is full).
  [[nodiscard]] std::optional<double> pace(int rank) const;

  // The coordinator's call: reads every rank's progress from the heartbeats (at most every
  // few ms), warns on stderr and records each new straggler in the run's warnings and its
  // summary's "stragglers".
  void check(const HeartbeatServer& heartbeat, RunResult& result);

 private:
  struct Sample {
    std::uint64_t steps = 0;
    double seconds = 0;
  };
  struct Rank {
    std::deque<Sample> history;  // cumulative snapshots, oldest first
    std::optional<Sample> suspect_since;
    std::size_t samples_since_suspect = 0;
    bool reported = false;
  };

  double factor_;
  std::vector<Rank> ranks_;
  std::int64_t last_check_ms_ = -1;
};

}  // namespace dt::roles
