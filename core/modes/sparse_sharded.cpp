// SparseShardedWorker (sparse_sharded.hpp).

#include "core/modes/sparse_sharded.hpp"

#include "core/worker/leave.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/timeline.hpp"

#include <chrono>
#include <utility>

namespace dt::modes {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void SparseShardedWorker::set_start(std::span<const double> start, std::uint64_t start_step) {
  start_.assign(start.begin(), start.end());
  start_step_ = start_step;
  values_step_ = UINT64_MAX;
}

void parameter_indices(const models::SparseBatch& batch, std::uint64_t width, std::size_t outputs,
                       std::vector<std::uint64_t>& out) {
  out.clear();
  for (const std::uint32_t k : batch.keys) {
    for (std::size_t c = 0; c < outputs; ++c) out.push_back(k * outputs + c);
  }
  for (std::size_t c = 0; c < outputs; ++c) out.push_back(width * outputs + c);
}

void SparseShardedWorker::step(roles::WorkerSession& session, roles::ServerClient& client,
                               const protocol::Envelope& message) {
  if (!model_) {
    model_ = models::make_sparse_model(session.model().spec());
    width_ = model_->width();
    outputs_ = model_->outputs();
  }
  const std::uint64_t step = message.step;
  session.begin_step(step);
  const auto start = std::chrono::steady_clock::now();
  timeline::Lap lap(start);  // output.timeline: [pull], compute, push; the next step's pull
  const PreparedBatch& current = batches_.at(session, step);
  if (values_step_ == step) {  // its values, and its indices, came with the last round
    std::swap(local_, next_local_);
    std::swap(indices_, next_indices_);
  } else {
    parameter_indices(current.batch, width_, outputs_, indices_);
  }
  if (values_step_ != step) {
    local_.resize(indices_.size());
    if (start_step_ == step && !start_.empty()) {  // a replacement: the round's parameters
      for (std::size_t i = 0; i < indices_.size(); ++i) local_[i] = start_[indices_[i]];
    } else {
      client.pull_keyed(indices_);
      client.receive_keyed(local_, step);
      lap.mark(timeline::Phase::kPull);  // with the batch's keys read
    }
  }
  start_.clear();
  models::BatchResult result;
  if (ready_step_ == step && values_step_ == step) {  // computed while the coordinator went on
    std::swap(grad_, next_grad_);
    result = ready_result_;
  } else {
    result = gradient(current, local_, grad_);
  }
  ready_step_ = UINT64_MAX;
  // The next step's indices (its batch made ahead, during the last step's wait), unless it
  // starts an epoch (its order is not drawn yet).
  const bool ahead = (step + 1) % session.steps_per_epoch() != 0;
  next_indices_.clear();
  if (ahead) {
    parameter_indices(batches_.at(session, step + 1).batch, width_, outputs_, next_indices_);
  }
  const auto end = std::chrono::steady_clock::now();
  // With the work done ahead for this step since the last one (one add_compute_seconds a
  // step: it also counts the steps).
  session.add_compute_seconds(std::chrono::duration<double>(end - start).count() +
                              std::exchange(ahead_seconds_, 0.0));
  lap.mark(timeline::Phase::kCompute, end);
  const auto rows = static_cast<std::uint64_t>(current.batch.rows());
  client.push_keyed(indices_, grad_, next_indices_, step, rows, result.loss_sum);
  lap.mark(timeline::Phase::kPush);
  protocol::Envelope reply{.type = protocol::Type::kGradient, .step = step};
  reply.fields = {{"rows", rows}, {"loss_sum", result.loss_sum}};
  roles::flag_if_leaving(reply);  // its last step (elastic)
  session.send(std::move(reply));
  values_step_ = UINT64_MAX;
  // The batch after the next, while the servers apply the round.
  const auto made = std::chrono::steady_clock::now();
  (void)batches_.make_ahead(session, step);
  ahead_seconds_ += seconds_since(made);
  if (ahead) {
    timeline::Lap pull;
    next_local_.resize(next_indices_.size());
    client.receive_keyed(next_local_, step + 1);
    values_step_ = step + 1;
    pull.mark(timeline::Phase::kPull);
    // The next step's gradient, now: its values are final (round step + 1's), its batch made,
    // so the kStep that starts it only has to push it. A message other than that kStep (the
    // end, a checkpoint's stop) leaves it unused.
    const auto ready = std::chrono::steady_clock::now();
    ready_result_ = gradient(batches_.at(session, step + 1), next_local_, next_grad_);
    ready_step_ = step + 1;
    ahead_seconds_ += seconds_since(ready);
  }
}

models::BatchResult SparseShardedWorker::gradient(const PreparedBatch& batch,
                                                  std::span<const double> values,
                                                  std::vector<double>& grad) {
  grad.assign(values.size(), 0.0);
  if (batch.batch.rows() == 0) return {};
  return model_->loss_and_gradient(values, batch.batch, batch.y, grad);
}

}  // namespace dt::modes
