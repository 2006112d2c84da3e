// WorkerSession's data side: the rows of each step (global batches in gradients mode, local
// batches in parameters and async), the epoch's shuffled order, and rows adopted from lost
// workers (continue).

#include "core/worker/worker.hpp"

#include "core/coordinator/plan.hpp"
#include "base/error.hpp"
#include "base/random.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <string_view>

namespace dt::roles {

void WorkerSession::adopt_rows(data::Shard rows, std::uint64_t from_epoch, bool replace) {
  // A re-plan's rows are the whole shard from their epoch: rows adopted for that epoch or a
  // later one and not yet joined (an earlier re-plan's, a lost worker's) are superseded.
  if (replace) {
    std::erase_if(adopted_, [&](const Adopted& a) { return a.from_epoch >= from_epoch; });
  }
  adopted_.push_back({std::move(rows), from_epoch, replace});
}

void WorkerSession::adopt_all() {
  for (auto& a : adopted_) a.from_epoch = 0;
  prepare_epoch(epoch_ == UINT64_MAX ? 0 : epoch_);
}

std::uint64_t WorkerSession::take_share(const protocol::Envelope& reassign,
                                        std::uint64_t from_epoch) {
  if (!share_taker_) fail<TrainingError>("internal error: this worker cannot take rows over");
  return share_taker_(reassign, from_epoch);
}

std::uint64_t WorkerSession::rows_in_epoch(std::uint64_t epoch) const {
  auto rows = this->rows();
  for (const auto& a : adopted_) {  // in the order prepare_epoch takes them
    if (a.from_epoch > epoch) continue;
    const auto n = static_cast<std::uint64_t>(a.rows.y.size());
    rows = a.replace ? n : rows + n;  // a re-plan replaces the shard, it does not add to it
  }
  return rows;
}

WorkerSession::Batch WorkerSession::local_batch_at(std::uint64_t epoch, std::uint64_t s) {
  if (epoch != epoch_) prepare_epoch(epoch);  // rows taken over join here
  return slice(epoch, s, local_steps_per_epoch());
}

void WorkerSession::prepare_epoch(std::uint64_t epoch) {
  warmer_.disarm();  // the shard may grow (move) and the order changes
  epoch_ = epoch;
  // Rows taken over from lost workers join at the epoch they were dealt for, in the order
  // they were dealt: every survivor's row order stays a function of the run's history.
  for (auto a = adopted_.begin(); a != adopted_.end();) {
    if (a->from_epoch > epoch) {
      ++a;
      continue;
    }
    if (a->replace) {  // an elastic re-plan: the rows dealt are the whole shard now
      shard_ = std::move(a->rows);
      a = adopted_.erase(a);
      continue;
    }
    const auto old_rows = shard_.x.rows();
    const auto add = a->rows.x.rows();
    shard_.x.conservativeResize(old_rows + add, Eigen::NoChange);
    shard_.x.bottomRows(add) = a->rows.x;
    shard_.y.conservativeResize(old_rows + add);
    shard_.y.tail(add) = a->rows.y;
    if (shard_.sparse && a->rows.sparse) shard_.sparse->append_rows(*a->rows.sparse);
    a = adopted_.erase(a);
  }
  if (!config_.training.shuffle) return;
  if (order_.size() != rows()) {
    order_.resize(rows());
  }
  std::iota(order_.begin(), order_.end(), std::uint64_t{0});
  // Keyed by the data shard, not the rank: the T ranks of a tensor-parallel group share one
  // shard and must walk it in the same order (rank / tensor is the rank when tensor = 1).
  const auto shard_index =
      options_.rank / static_cast<std::uint32_t>(std::max(1, config_.parallelism.tensor));
  random::Generator gen(config_.seed, random::stream::kEpochShuffle,
                        random::hash(epoch, shard_index, 0, 0));
  random::shuffle(std::span(order_), gen);
}

WorkerSession::Batch WorkerSession::batch(std::uint64_t step) {
  return slice(step / steps_per_epoch_, step % steps_per_epoch_, steps_per_epoch_);
}

std::uint64_t WorkerSession::local_steps_per_epoch() const noexcept {
  return roles::local_steps_per_epoch(config_.training, rows());
}

WorkerSession::Batch WorkerSession::local_batch(std::uint64_t local_step,
                                               std::uint64_t per_epoch) {
  return slice(local_step / per_epoch, local_step % per_epoch, per_epoch);
}

void WorkerSession::warm(std::uint64_t step) {
  // DISTTRAIN_WARM=0 turns warming off, to compare (the results are the same bits).
  static const bool enabled = [] {
    const char* value = std::getenv("DISTTRAIN_WARM");
    return value == nullptr || std::string_view(value) != "0";
  }();
  warmer_.disarm();
  // Preparing another epoch's order now could take in rows adopted later (continue) too soon:
  // the first step of an epoch is not warmed.
  if (!enabled || shard_.sparse || step / steps_per_epoch_ != epoch_) return;
  warmer_.arm(slice(epoch_, step % steps_per_epoch_, steps_per_epoch_));
}

WorkerSession::Batch WorkerSession::slice(std::uint64_t epoch, std::uint64_t s,
                                          std::uint64_t per_epoch) {
  warmer_.disarm();  // a step takes its rows: what was left to warm is read now anyway
  if (epoch != epoch_) prepare_epoch(epoch);
  const std::uint64_t n = rows();
  const auto begin = static_cast<std::int64_t>(s * n / per_epoch);
  const auto end = static_cast<std::int64_t>((s + 1) * n / per_epoch);
  const auto count = end - begin;
  if (shard_.sparse) return sparse_slice(begin, count);
  // An empty pick means every row: an empty batch (tiny shards) is 0 rows of the shard instead.
  if (!config_.training.shuffle || count == 0) {
    return {shard_.x.middleRows(begin, count), shard_.y.segment(begin, count), {}};
  }
  return {shard_.x, shard_.y,
          std::span<const std::uint64_t>(order_).subspan(static_cast<std::size_t>(begin),
                                                         static_cast<std::size_t>(count))};
}

WorkerSession::Batch WorkerSession::sparse_slice(std::int64_t begin, std::int64_t count) {
  const auto& rows = *shard_.sparse;
  // Made again (with its scan for values other than 1.0) only when the shard's arrays change.
  const models::CsrView* view = &sparse_view_.view(rows.width, rows.row_start, rows.keys, rows.values);
  // Sparse batches always pick their rows (an empty pick would mean the whole shard).
  std::span<const std::uint64_t> pick;
  if (count > 0 && config_.training.shuffle) {
    pick = std::span<const std::uint64_t>(order_).subspan(static_cast<std::size_t>(begin),
                                                          static_cast<std::size_t>(count));
  } else if (count > 0) {
    range_.resize(static_cast<std::size_t>(count));
    std::iota(range_.begin(), range_.end(), static_cast<std::uint64_t>(begin));
    pick = range_;
  }
  if (pick.empty()) return {shard_.x.middleRows(begin, 0), shard_.y.segment(begin, 0), {}, view};
  return {shard_.x, shard_.y, pick, view};
}

WorkerSession::Batch WorkerSession::gathered(const Batch& batch) {
  // A 0-row batch keeps the shard's columns: a tensor slice checks them even when its
  // replica's share is 0 rows.
  return models::gather(batch, batch_x_, batch_y_);
}

}  // namespace dt::roles
