#pragma once
// `gradients` mode over the star on sparse rows (docs/sparse.md, "The sparse exchange"): each
// step the coordinator sends each worker only the parameters of the keys its batch touches, and
// each worker sends back only their gradient, so a step's traffic follows the batch's keys, not
// the model's width. GradientsMode (gradients.cpp) hands its steps here when the data is sparse.
//
//   coordinator -> worker   step s: the values of the worker's keys (weights, then biases),
//                           with their count and hash (a worker whose batch has other keys
//                           stops with a ProtocolError instead of training on wrong values)
//   worker -> coordinator   the local gradient sum at those keys, rows, loss sum, and the key
//                           frame (core/protocol/key_frames.hpp) of its NEXT step's keys
//
// A step's keys come with the reply of the step before, so one round trip a step is enough.
// The first step of an epoch (the order is reshuffled and lost workers' rows may join), of a
// run, and a rank with no keys yet ask the workers for their keys first (kKeyRequest).
// The coordinator adds the gradients in rank order into a full-size buffer at the keys (the
// same bits as the dense star's sum), lists the touched keys in order (models::KeyIndex), and
// steps only them (Optimizer::step_indices): the same bits as the dense run for sgd without
// momentum, adagrad and ftrl; L2 and adam/momentum are lazy (docs/sparse.md).

#include "core/models/next_values.hpp"
#include "core/models/optim.hpp"
#include "core/models/sparse_model.hpp"
#include "core/protocol/protocol.hpp"
#include "core/servers/server_state.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace dt::roles {
class CoordinatorSession;
class WorkerSession;
}  // namespace dt::roles

namespace dt::models {
class Optimizer;
}

namespace dt::modes {

// A worker's batch of step `step` of a sparse shard, compacted, with its labels in batch order.
struct PreparedBatch {
  std::uint64_t step = UINT64_MAX;
  models::SparseBatch batch;
  std::vector<double> y;
  // The star's, when `framed`: the batch's key frame, made with the batch ahead of its step
  // (prepare_batch clears the flag), so that encoding it does not lie between the values of the
  // step before and its reply. (The key list's hash, checked against the step's, is computed
  // from the keys themselves when they are used: a few microseconds.)
  bool framed = false;
  wire::Bytes key_frame;
};
void prepare_batch(roles::WorkerSession& session, std::uint64_t step, PreparedBatch& into);

// A worker's compacted batches of the steps at hand: the one it trains, the next one (whose keys
// its reply or push carries) and the one after, which it compacts once its reply is sent, while
// the coordinator or the servers apply the step (compaction is most of a worker's CPU time a
// step; this takes it off the step's critical path). A batch may be made ahead only within the
// epoch of the step in progress: an epoch's order, and rows dealt at its start, are known then.
class BatchesAhead {
 public:
  // The batch of `step`: the one made ahead, or made now.
  PreparedBatch& at(roles::WorkerSession& session, std::uint64_t step);
  // Makes the batch of `step + 2` while the reply of `step` is on its way, when both step + 1
  // and step + 2 lie in step's epoch. Returns whether it made one (its time is compute time,
  // added to the next step's: add_compute_seconds counts steps).
  bool make_ahead(roles::WorkerSession& session, std::uint64_t step);

 private:
  std::array<PreparedBatch, 3> slots_;
};

class SparseStar {
 public:
  // Trains to the end (GradientsMode::coordinate's loop, on sparse rows).
  void coordinate(roles::CoordinatorSession& session, models::Optimizer& optimizer);
  // Before the clock: marks the keys where `params` or `state` are nonzero (one read of the
  // width); the steps mark the keys they touch from then on (touched_keys).
  void mark_start(std::span<const double> params, const models::OptimizerState& state);
  // The keys outside which the parameters and optimizer state are zero, ascending; false
  // before mark_start (or past 2^32 values).
  [[nodiscard]] bool touched_keys(std::vector<std::uint32_t>& out) const;
  // Answers a kStep of the sparse exchange.
  void work(roles::WorkerSession& session, const protocol::Envelope& message);

 private:
  // Coordinator side.
  void ask_keys(roles::CoordinatorSession& session, std::uint64_t step);
  // The step message of `rank`: its frame read by the last step (prepare_next), or read now.
  [[nodiscard]] protocol::Envelope step_message(const std::vector<double>& params, int rank,
                                                std::uint64_t step);
  // Before the optimizer's step: the work its pass does besides stepping, the marks and (one
  // output) the values of step `next`'s keys of each rank whose keys came with its reply, into
  // a frame of its step message; after it, finish_next adds the bias.
  [[nodiscard]] models::Optimizer::LazyStepWork prepare_next(std::uint64_t next);
  void finish_next(const std::vector<double>& params);
  // Adds the replies' gradients in rank order: the touched coordinates, ascending, in indices_
  // and their sums in sums_.
  void sum_replies(const std::vector<protocol::Envelope>& replies, std::uint64_t step);
  std::uint64_t width_ = 0;
  std::size_t outputs_ = 1;
  std::vector<std::vector<std::uint32_t>> keys_;  // per rank: its keys of step keys_step_[r]
  std::vector<std::uint64_t> keys_step_;
  std::vector<models::KeyedPart> parts_;  // sum_replies': the replies' keys and gradients
  std::vector<std::uint32_t> union_;
  std::vector<std::uint64_t> indices_;
  std::vector<double> sums_;
  roles::KeyMarks marks_;  // mark_start's keys and every step's since
  models::NextValues next_;  // each rank's next step message's values, read by the step

  // Worker side.
  std::unique_ptr<models::SparseModel> model_;
  BatchesAhead batches_;
  double ahead_seconds_ = 0;  // compaction made ahead, counted in the next step's compute
};

// A key list's 64-bit hash (the step message's check that both ends mean the same keys): FNV-1a
// over whole keys in four interleaved lanes, folded with the count.
[[nodiscard]] std::uint64_t key_list_hash(std::span<const std::uint32_t> keys) noexcept;

}  // namespace dt::modes
