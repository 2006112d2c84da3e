#pragma once
// The pure bookkeeping of the parameter servers, apart from their sockets so that unit tests
// can pin it exactly:
//   KeyRange / split_keys  which contiguous part of the parameter vector each server owns;
//   StepClock              stale-synchronous parallel (SSP): who may start a step;
//   StalenessStats         the distribution of gradient staleness a server observed;
//   L2Block / add_l2       a range's L2 coefficients as runs of keys, and the L2 term;
//   KeyMarks               the keys of a copy of a server's state that may be nonzero.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
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

// Keys [begin, end) of a server's range (offsets into its slice) that share one nonzero L2
// coefficient: the model's regularized blocks (weights; biases have none). Runs of keys rather
// than a coefficient a key: at 2^24 keys a width-sized vector of them is 64 MB a server to make,
// and a keyed round would read it at every touched key (a cache miss each).
struct L2Block {
  std::size_t begin = 0;
  std::size_t end = 0;
  double l2 = 0.0;
  friend bool operator==(const L2Block&, const L2Block&) = default;
};

// The blocks of `range` from the model's regularized blocks (`regularized`: [begin, end) of the
// whole parameter vector, any order), in key order; none when l2 is 0.
[[nodiscard]] std::vector<L2Block> l2_blocks(const std::vector<KeyRange>& regularized, double l2,
                                             const KeyRange& range);

// sums[i] += l2 * slice[offsets[i]] for each offset (ascending) inside a block: the keyed
// rounds' lazy L2 term, the same arithmetic as a coefficient a key.
void add_l2_at(std::span<const L2Block> blocks, std::span<const std::uint32_t> offsets,
               std::span<const double> slice, std::span<double> sums);

// grad[i] += l2 * slice[i] for every key of every block: the dense rounds' L2 term.
void add_l2(std::span<const L2Block> blocks, std::span<const double> slice, std::span<double> grad);

// The keys of a server's range whose value or optimizer state may have nonzero bits in a copy
// of its state (ServerState), a bit a key (1 MB at 2^23 keys), so that a checkpoint of a wide
// sparse model reads the keys the run has touched instead of its whole width: every key left
// unmarked is zero in every vector of the copy. `version`: the copy's version the marks are
// true of (UINT64_MAX: none; then the checkpoint reads the width).
class KeyMarks {
 public:
  std::uint64_t version = UINT64_MAX;
  // Marks exactly the keys with nonzero bits in any of `vectors`, each of `keys` values or of
  // a record of v.size() / keys values a key (an interleaved optimizer state's one vector).
  void reset_from(std::span<const std::span<const double>> vectors, std::size_t keys);
  void mark(std::span<const std::uint64_t> keys);  // keys < the size reset_from gave
  void list(std::vector<std::uint32_t>& out) const;  // the marked keys, ascending
  void clear(std::size_t keys);  // none of `keys` keys marked
  void move_into(KeyMarks& into);  // marks these keys in `into` (of the same size); clears them
  // The bits (bit k of word k / 64), for a loop that marks keys while it passes them.
  [[nodiscard]] std::uint64_t* words() noexcept { return words_.data(); }

 private:
  std::vector<std::uint64_t> words_;
};

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
