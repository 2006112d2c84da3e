#pragma once
// The worker's half of `async` mode on sparse rows: the keyed exchange
// (core/servers/param_server_keyed.cpp) instead of whole slices. Each step pushes the gradient
// at the batch's parameter indices, each server's part to that server, with the indices of the
// NEXT batch, whose values come back as the answer (held by the staleness bound as a dense
// slice is): a step moves its keys, not the width. Only the first step (of a run, or of a
// replacement) pulls its values first.
//
// Why the next batch may be read a step ahead even across an epoch (sync keyed rounds pull at
// each epoch's first step instead): a share of a lost worker's rows (continue) joins from the
// local epoch AFTER the step whose answer brings it, and the epoch's order is a function of the
// seed, the epoch and the shard. So the batch made at step s's push is the batch the dense loop
// would make at step s + 1: every share it can contain arrived with an answer before.

#include "core/models/sparse_model.hpp"
#include "core/modes/push_clip.hpp"
#include "core/modes/sparse_star.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace dt::roles {
class ServerClient;
class WorkerSession;
}  // namespace dt::roles

namespace dt::modes {

class AsyncKeyedWorker {
 public:
  // A local step: its local epoch and its step within it.
  using At = std::pair<std::uint64_t, std::uint64_t>;
  explicit AsyncKeyedWorker(roles::WorkerSession& session);
  // Starts training (ServerClient::pull_keyed with `steps`, the worker's plan) with the values
  // of the batch at `first`.
  void start(roles::ServerClient& client, At first, std::uint64_t steps);
  // Waits for the current batch's values (the answer to the pull or to the last push).
  void receive(roles::ServerClient& client);
  // The current batch's gradient sum at its indices; then reads the batch at `next` (none on
  // the worker's last step) and its indices, unless read_ahead made it.
  models::BatchResult compute(std::optional<At> next);
  // Reads the batch at `at` (the step after the next) and its indices now, while the push just
  // made waits for its answer: compaction is most of a worker's CPU a step, and this takes it
  // off the path from an answer to the next push. The caller asks only for a batch in the local
  // epoch of the next step: that epoch's order and rows are fixed (a share that an answer
  // brings joins from a later epoch), so it is the batch compute() would read. Its time counts
  // in the next step's compute (take_ahead_seconds).
  void read_ahead(At at);
  [[nodiscard]] double take_ahead_seconds() noexcept { return std::exchange(ahead_seconds_, 0.0); }
  [[nodiscard]] std::uint64_t rows() const noexcept {
    return static_cast<std::uint64_t>(current_.batch.rows());
  }
  // Pushes the gradient with the next batch's indices (and its clip factor with `clip`: clip_norm
  // over several servers); the next batch becomes the current one.
  void push(roles::ServerClient& client, std::uint64_t step, const models::BatchResult& result,
            std::uint64_t planned, const PushClip* clip);

 private:
  void read(At at, PreparedBatch& into, std::vector<std::uint64_t>& indices);
  roles::WorkerSession& session_;
  std::unique_ptr<models::SparseModel> model_;
  PreparedBatch current_;
  PreparedBatch next_;
  std::vector<std::uint64_t> indices_;
  std::vector<std::uint64_t> next_indices_;
  std::vector<double> local_;  // the values of indices_
  std::vector<double> grad_;
  PreparedBatch ahead_;  // read_ahead's batch, at ahead_at_, and its indices
  std::vector<std::uint64_t> ahead_indices_;
  std::optional<At> ahead_at_;
  double ahead_seconds_ = 0;
};

}  // namespace dt::modes
