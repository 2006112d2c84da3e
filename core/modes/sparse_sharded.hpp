#pragma once
// The worker's half of `gradients` over sharded parameter servers on sparse rows: the keyed
// exchange (core/servers/param_server_keyed.cpp) instead of whole slices. Each step it pushes
// the gradient at its batch's parameter indices, each server's part to that server, with the
// indices of its next batch, whose values come back with the round; the first step of an epoch
// (and of a run) pulls its values first. A replacement (restart) starts from the parameters of
// the round it redoes, which the coordinator sends it.

#include "core/modes/sparse_star.hpp"
#include "core/worker/server_client.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace dt::modes {

// A sparse batch's parameter indices, ascending: key k's outputs k*K .. k*K + K - 1 (K =
// `outputs`), then the K biases after the width * K weights. The order of the batch's local
// vector (SparseModel::loss_and_gradient), and what the keyed exchanges ask servers for.
void parameter_indices(const models::SparseBatch& batch, std::uint64_t width, std::size_t outputs,
                       std::vector<std::uint64_t>& out);

class SparseShardedWorker {
 public:
  // kServers: `start` (a replacement's) are the full parameters of the round `start_step`.
  void set_start(std::span<const double> start, std::uint64_t start_step);
  // One kStep.
  void step(roles::WorkerSession& session, roles::ServerClient& client,
            const protocol::Envelope& message);

 private:
  // The batch's loss and gradient sum at `values` (its parameter indices'), into `grad`.
  models::BatchResult gradient(const PreparedBatch& batch, std::span<const double> values,
                               std::vector<double>& grad);
  std::unique_ptr<models::SparseModel> model_;
  std::uint64_t width_ = 0;
  std::size_t outputs_ = 1;
  BatchesAhead batches_;
  std::vector<std::uint64_t> indices_;
  std::vector<std::uint64_t> next_indices_;
  std::vector<double> local_;       // the values of current_'s indices, once values_step_ is its step
  std::vector<double> next_local_;  // those of next_'s, received with the round
  std::uint64_t values_step_ = UINT64_MAX;
  std::vector<double> grad_;
  // The gradient of step ready_step_, computed as soon as its values came (the end of the step
  // before), before its kStep: the worker's compute overlaps the coordinator's part of a round.
  std::vector<double> next_grad_;
  models::BatchResult ready_result_;
  std::uint64_t ready_step_ = UINT64_MAX;
  double ahead_seconds_ = 0;  // compaction and gradient done ahead: the next step's compute
  std::vector<double> start_;
  std::uint64_t start_step_ = UINT64_MAX;
};

}  // namespace dt::modes
