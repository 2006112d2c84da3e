#pragma once
// The ring's steps in batches (core/modes/ring.cpp): the coordinator sends "steps s to s+k-1"
// as one request and gets every step's losses back in one reply, so it wakes once per batch and
// is off the step path (on a step of ~60 us, a coordinator round trip per step cost as much as
// the step). What the batches are, where they end, how long they grow, and the log of a
// finished one are here; the ring's replicas and their state are in ring.cpp.
//
// A batch ends after the first step whose state the coordinator needs (a validation log step,
// a checkpoint), at an epoch's end (the next epoch may deal a lost worker's rows) and at the
// last step, so batching never changes what is computed or written. Its length grows until a
// batch takes about kBatchTarget, up to kMaxBatch; only the timing depends on it.

#include "core/coordinator/session.hpp"
#include "core/protocol/protocol.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace dt::modes::ring {

using Clock = std::chrono::steady_clock;

// Long enough that a coordinator round trip (~0.1 ms) is a few percent of a batch, short enough
// that progress, Ctrl-C and lost workers are seen at once.
inline constexpr double kBatchTarget = 0.005;  // seconds
inline constexpr std::uint64_t kMaxBatch = 64;
// After Ctrl-C the batch in flight is waited for this long, so its finished steps are kept.
inline constexpr std::chrono::milliseconds kFinishGrace{2000};
// A kRingLoss reply's first arrays: the rows and the loss sum of each step of its batch; then
// the leader's parameters, or its state, when asked.
inline constexpr std::size_t kLossArrays = 2;

// Steps [first, end) sent to the workers as one request.
struct Batch {
  std::uint64_t first = 0;
  std::uint64_t end = 0;
  bool want_params = false;  // the leader sends its parameters after the last step
  bool want_state = false;   // ... and its optimizer state (a checkpoint is due)
  Clock::time_point sent;
  [[nodiscard]] std::uint64_t count() const noexcept { return end - first; }
};

// The coordinator's plan of the batches of one run.
class BatchPlanner {
 public:
  // `grow`: false keeps every batch one step long (restart, continue: a re-form goes back to
  // the step the coordinator waits on, which the replicas must be at most one step past).
  BatchPlanner(const roles::CoordinatorSession& session, bool grow);
  // The batch that starts at `first`.
  [[nodiscard]] Batch batch(std::uint64_t first) const;
  // A batch of `count` steps took `seconds`: the next one doubles while batches are short of
  // kBatchTarget, and halves when one is well past it (steps got slower: a shared machine).
  void took(std::uint64_t count, double seconds) noexcept;

 private:
  const roles::CoordinatorSession& session_;
  std::uint64_t steps_;
  std::uint64_t per_epoch_;
  std::uint64_t log_every_;
  bool validation_;
  bool grow_;
  std::uint64_t length_ = 1;
};

// Sends `batch` to every worker still training; returns it stamped with the time it was sent.
[[nodiscard]] Batch send(roles::CoordinatorSession& session, Batch batch);

// The losses of every step of a finished batch into the log, in step order, with each step's
// boundary (a checkpoint where one is due). `on_last(leader's reply)` runs before the last
// step's boundary: the ring keeps the leader's state there for the checkpoint. The leader's
// parameters, when they came, become the session's (the validation pass of a log step).
void record(roles::CoordinatorSession& session, const Batch& batch,
            const std::vector<protocol::Envelope>& replies,
            const std::function<void(const protocol::Envelope&)>& on_last);

// FNV-1a over the parameters' bytes: equal digests say the copies agree bit for bit (up to a
// 2^-64 accident), without sending every copy to the coordinator.
[[nodiscard]] std::uint64_t digest(std::span<const double> values);

}  // namespace dt::modes::ring
