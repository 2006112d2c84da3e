// SparseShardedWorker (sparse_sharded.hpp).

#include "core/modes/sparse_sharded.hpp"

#include "core/worker/leave.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/timeline.hpp"

#include <chrono>

namespace dt::modes {

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
  if (current_.step != step) {
    if (next_.step == step) {
      std::swap(current_, next_);
      std::swap(local_, next_local_);
    } else {
      prepare_batch(session, step, current_);
    }
  }
  parameter_indices(current_.batch, width_, outputs_, indices_);
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
  grad_.assign(indices_.size(), 0.0);
  models::BatchResult result;
  if (current_.batch.rows() > 0) {
    result = model_->loss_and_gradient(local_, current_.batch, current_.y, grad_);
  }
  // The next step's indices, unless it starts an epoch (its order is not drawn yet).
  const bool ahead = (step + 1) % session.steps_per_epoch() != 0;
  next_indices_.clear();
  if (ahead) {
    prepare_batch(session, step + 1, next_);
    parameter_indices(next_.batch, width_, outputs_, next_indices_);
  }
  const auto end = std::chrono::steady_clock::now();
  session.add_compute_seconds(std::chrono::duration<double>(end - start).count());
  lap.mark(timeline::Phase::kCompute, end);
  const auto rows = static_cast<std::uint64_t>(current_.batch.rows());
  client.push_keyed(indices_, grad_, next_indices_, step, rows, result.loss_sum);
  lap.mark(timeline::Phase::kPush);
  protocol::Envelope reply{.type = protocol::Type::kGradient, .step = step};
  reply.fields = {{"rows", rows}, {"loss_sum", result.loss_sum}};
  roles::flag_if_leaving(reply);  // its last step (elastic)
  session.send(std::move(reply));
  values_step_ = UINT64_MAX;
  if (ahead) {
    timeline::Lap pull;
    next_local_.resize(next_indices_.size());
    client.receive_keyed(next_local_, step + 1);
    values_step_ = step + 1;
    pull.mark(timeline::Phase::kPull);
  }
}

}  // namespace dt::modes
