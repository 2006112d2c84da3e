// AsyncKeyedWorker (async_keyed.hpp).

#include "core/modes/async_keyed.hpp"

#include "core/modes/sparse_sharded.hpp"
#include "core/worker/server_client.hpp"
#include "core/worker/worker.hpp"

#include <chrono>

namespace dt::modes {

AsyncKeyedWorker::AsyncKeyedWorker(roles::WorkerSession& session)
    : session_(session), model_(models::make_sparse_model(session.model().spec())) {}

void AsyncKeyedWorker::read(At at, PreparedBatch& into, std::vector<std::uint64_t>& indices) {
  models::compact_batch(session_.local_batch_at(at.first, at.second), into.batch, into.y);
  parameter_indices(into.batch, model_->width(), model_->outputs(), indices);
}

void AsyncKeyedWorker::start(roles::ServerClient& client, At first, std::uint64_t steps) {
  read(first, current_, indices_);
  client.pull_keyed(indices_, steps);
}

void AsyncKeyedWorker::receive(roles::ServerClient& client) {
  local_.resize(indices_.size());
  client.receive_keyed(local_, 0);
}

models::BatchResult AsyncKeyedWorker::compute(std::optional<At> next) {
  grad_.assign(indices_.size(), 0.0);
  models::BatchResult result;
  if (current_.batch.rows() > 0) {
    result = model_->loss_and_gradient(local_, current_.batch, current_.y, grad_);
  }
  next_indices_.clear();
  if (next && ahead_at_ == next) {  // made while the last push waited for its answer
    std::swap(next_, ahead_);
    std::swap(next_indices_, ahead_indices_);
  } else if (next) {
    read(*next, next_, next_indices_);
  }
  ahead_at_.reset();
  return result;
}

void AsyncKeyedWorker::read_ahead(At at) {
  const auto start = std::chrono::steady_clock::now();
  read(at, ahead_, ahead_indices_);
  ahead_at_ = at;
  ahead_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void AsyncKeyedWorker::push(roles::ServerClient& client, std::uint64_t step,
                            const models::BatchResult& result, std::uint64_t planned,
                            const PushClip* clip) {
  std::optional<double> factor;
  if (clip != nullptr) factor = clip->factor_at(indices_, local_, grad_, rows());
  client.push_keyed(indices_, grad_, next_indices_, step, rows(), result.loss_sum, planned,
                    factor);
  std::swap(current_, next_);
  std::swap(indices_, next_indices_);
}

}  // namespace dt::modes
