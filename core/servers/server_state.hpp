#pragma once
// The pure bookkeeping of the parameter servers, apart from their sockets so that unit tests
// can pin it exactly:
//   KeyRange / split_keys  which contiguous part of the parameter vector each server owns;
//   StepClock              stale-synchronous parallel (SSP): who may start a step;
//   StalenessStats         the distribution of gradient staleness a server observed.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace dt::roles {

// Keys [begin, end) of the flat parameter vector.
struct KeyRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  [[nodiscard]] std::size_t size() const noexcept { return end - begin; }
  friend bool operator==(const KeyRange&, const KeyRange&) = default;
};

// Splits `count` keys into `servers` contiguous ranges in order, whose sizes differ by at most
// one (the first count % servers ranges hold one key more). ConfigError when servers < 1 or
// servers > count: a server with no keys would have nothing to do, and the user should know.
[[nodiscard]] std::vector<KeyRange> split_keys(std::size_t count, int servers);

// Stale-synchronous parallel over `workers` clocks. A worker's clock is the number of steps it
// has completed (pushed). Worker w may start its step c (having completed c steps) only when
// the slowest worker still training has completed at least c - s steps; s = max_staleness,
// nullopt = unbounded, 0 = lock-step. A worker that has completed all its steps no longer holds
// the others back (workers may have different step counts when shards differ in size).
class StepClock {
 public:
  StepClock(std::vector<std::uint64_t> steps_per_worker, std::optional<int> max_staleness);

  [[nodiscard]] int workers() const noexcept { return static_cast<int>(completed_.size()); }
  [[nodiscard]] std::uint64_t completed(int rank) const;
  [[nodiscard]] bool finished(int rank) const;
  [[nodiscard]] bool all_finished() const noexcept { return unfinished_ == 0; }
  // Completed steps of the slowest worker still training; nullopt when all have finished.
  [[nodiscard]] std::optional<std::uint64_t> slowest() const;
  // May `rank` start its next step now? False when it has finished.
  [[nodiscard]] bool may_start(int rank) const;
  // How far `rank` is ahead of the slowest worker still training (0 when all have finished).
  [[nodiscard]] std::uint64_t lead(int rank) const;
  // `rank` completed one more step. TrainingError when it had already finished.
  void complete(int rank);
  // A resumed run: each worker has completed these steps already.
  void resume_at(const std::vector<std::uint64_t>& completed);
  // A worker lost for good (fault_tolerance continue): its plan ends at the steps it has
  // completed, so it holds nobody back any more.
  void retire(int rank);
  // `rank` now plans `steps` steps in all (rows taken over from a lost worker). TrainingError
  // when it has completed more already.
  void set_steps(int rank, std::uint64_t steps);
  // A worker joins into `rank`'s slot (elastic): its clock starts at 0 completed of `steps`.
  void admit(int rank, std::uint64_t steps);

 private:
  std::vector<std::uint64_t> steps_;
  std::vector<std::uint64_t> completed_;
  std::optional<int> max_staleness_;
  int unfinished_ = 0;
};

// Staleness of applied gradients: server version at apply time minus the version the gradient
// was computed from.
struct StalenessStats {
  std::uint64_t count = 0;
  std::uint64_t max = 0;
  std::uint64_t sum = 0;
  std::map<std::uint64_t, std::uint64_t> histogram;  // staleness -> updates

  void add(std::uint64_t staleness);
  [[nodiscard]] double mean() const noexcept;
  // {"max", "mean", "count", "histogram": {"0": n0, "1": n1, ...}}
  [[nodiscard]] nlohmann::json to_json() const;
};

}  // namespace dt::roles
