#include "core/modes/ring_batches.hpp"

#include "core/modes/step.hpp"

#include <algorithm>
#include <cstring>
#include <span>

namespace dt::modes::ring {

BatchPlanner::BatchPlanner(const roles::CoordinatorSession& session, bool grow)
    : session_(session),
      steps_(session.schedule().total_steps()),
      per_epoch_(std::max<std::uint64_t>(1, session.plan().steps_per_epoch)),
      log_every_(static_cast<std::uint64_t>(session.config().output.log_every_steps)),
      validation_(!session.plan().validation_rows.empty()),
      grow_(grow) {}

Batch BatchPlanner::batch(std::uint64_t first) const {
  // record_step evaluates the validation split on exactly these steps (`done` = steps done).
  const auto wants_params = [&](std::uint64_t done) {
    return validation_ && (done % log_every_ == 0 || done == steps_);
  };
  // A multiple of checkpoint_every in (first, done]: counted from `first`, as the batch after a
  // checkpoint's is planned before that checkpoint is written (ring.cpp sends it first), when
  // checkpoint_due still counts from the one before.
  const auto every = static_cast<std::uint64_t>(
      session_.config().fault_tolerance.checkpoint_every_steps);
  const auto wants_state = [&](std::uint64_t done) {
    return every > 0 && done / every > first / every && session_.checkpoint_due(done);
  };
  const std::uint64_t limit = std::min(steps_, (first / per_epoch_ + 1) * per_epoch_);
  std::uint64_t end = first + 1;
  while (end < limit && end - first < length_ && !wants_params(end) && !wants_state(end)) ++end;
  const bool state = wants_state(end);
  return {first, end, state || wants_params(end), state, {}};
}

void BatchPlanner::took(std::uint64_t count, double seconds) noexcept {
  if (!grow_) return;
  if (seconds < kBatchTarget / 2) {
    length_ = std::min(kMaxBatch, 2 * count);
  } else if (seconds > 2 * kBatchTarget) {
    length_ = std::max<std::uint64_t>(1, count / 2);
  } else {
    length_ = count;
  }
}

Batch send(roles::CoordinatorSession& session, Batch batch) {
  protocol::Envelope request{.type = protocol::Type::kStep, .step = batch.first};
  request.fields = {{"steps", batch.count()},
                    {"send_parameters", batch.want_params},
                    {"send_state", batch.want_state}};
  batch.sent = Clock::now();
  session.broadcast(std::move(request));
  return batch;
}

void record(roles::CoordinatorSession& session, const Batch& batch,
            const std::vector<protocol::Envelope>& replies,
            const std::function<void(const protocol::Envelope&)>& on_last) {
  auto& params = session.params();
  const std::uint64_t count = batch.count();
  const auto n = static_cast<std::size_t>(session.ranks());
  std::vector<double> worker_loss(n);
  std::vector<std::uint64_t> worker_rows(n);
  // Each reply's rows and losses, checked once (their length is the batch's).
  struct Columns {
    std::size_t rank;
    std::span<const double> rows, loss;
  };
  std::vector<Columns> columns;
  for (const auto& reply : replies) {  // by rank: under continue some are gone
    columns.push_back({static_cast<std::size_t>(reply.rank), protocol::doubles(reply, 0, count),
                       protocol::doubles(reply, 1, count)});
  }
  for (std::uint64_t j = 0; j < count; ++j) {
    const std::uint64_t done = batch.first + j + 1;
    const bool last = done == batch.end;
    double loss_sum = 0;
    std::uint64_t rows = 0;
    std::fill(worker_loss.begin(), worker_loss.end(), 0.0);
    std::fill(worker_rows.begin(), worker_rows.end(), 0);
    for (const auto& c : columns) {
      worker_rows[c.rank] = static_cast<std::uint64_t>(c.rows[j]);
      worker_loss[c.rank] = c.loss[j];
      loss_sum += worker_loss[c.rank];
      rows += worker_rows[c.rank];
    }
    // replies[0] is the leader's (the lowest rank alive), which sends what is asked.
    if (last) on_last(replies.at(0));
    if (rows > 0) {  // else an empty step (only possible with tiny shards)
      check_batch_loss(session.config(), done, loss_sum, rows);
      if (last && batch.want_params) {
        const auto got = protocol::doubles(replies.at(0), kLossArrays, params.size());
        std::copy(got.begin(), got.end(), params.begin());
      }
      session.add_samples(rows);
      session.record_step(done, loss_sum, rows, worker_loss, worker_rows);
    }
    session.step_boundary(done);
  }
}

std::uint64_t digest(std::span<const double> values) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const double v : values) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    for (int i = 0; i < 8; ++i) {
      h ^= (bits >> (8 * i)) & 0xFF;
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

}  // namespace dt::modes::ring
