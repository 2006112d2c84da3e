#pragma once
// async mode's coordinator side of membership (core/modes/async.cpp): each worker's planned
// pushes as they change (lost workers, leaves, joins), what lost workers left undone and who
// took their rows; and every push's staleness merged over the servers. Used on the
// coordinator's thread only. LostWorkers' longer members are in async_lost.cpp.

#include "core/coordinator/membership.hpp"
#include "core/coordinator/session.hpp"
#include "core/coordinator/tensor_plan.hpp"
#include "core/protocol/step_messages.hpp"
#include "core/servers/server_group.hpp"
#include "base/log.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace dt::modes {

// The kReassign of an elastic re-plan: every training row (the plan's shards in rank order),
// which each worker dealt a share of keeps as its whole shard from the epoch it takes it.
inline protocol::Envelope every_row_deal(const roles::Plan& plan) {
  auto deal =
      protocol::make_setup({"", "", roles::source_for(plan, 0), roles::rows_in_plan_order(plan)});
  deal.type = protocol::Type::kReassign;
  deal.fields["replan"] = true;
  return deal;
}

// How many rows every_row_deal deals: the shards of the plan's starting ranks.
inline std::uint64_t every_row_count(const roles::Plan& plan) {
  std::uint64_t n = 0;
  for (int r = 0; r < plan.starting_ranks(); ++r) {
    n += plan.shard_rows[static_cast<std::size_t>(r)];
  }
  return n;
}

// Share k of m of n rows: data::every_nth_row's count of rows k, k + m, ...
inline std::uint64_t share_of(std::uint64_t n, std::size_t k, std::size_t m) {
  return k < n ? (n - k + m - 1) / m : 0;
}

// Every push's staleness as the largest over the servers (each server measures its own).
inline roles::StalenessStats merged_staleness(const std::vector<roles::ServerStats>& stats) {
  roles::StalenessStats out;
  if (stats.empty()) return out;
  const auto ranks = stats.front().staleness_of.size();
  for (std::size_t r = 0; r < ranks; ++r) {
    // A worker lost under `continue` may have reached one server with its last push and not
    // another: count the steps every server applied.
    std::size_t steps = stats.front().staleness_of[r].size();
    for (const auto& st : stats) steps = std::min(steps, st.staleness_of[r].size());
    for (std::size_t c = 0; c < steps; ++c) {
      std::uint64_t s = 0;
      for (const auto& st : stats) {
        // A failed server's replacement has none for the steps before it took over.
        if (c < st.staleness_of[r].size()) s = std::max(s, st.staleness_of[r][c]);
      }
      out.add(s);
    }
  }
  return out;
}

// The coordinator's side of lost workers: each worker's plan and the run's updates as they
// change, what lost workers left undone, and who took their rows.
class LostWorkers {
 public:
  LostWorkers(roles::CoordinatorSession& session, roles::ServerGroup& servers,
              std::vector<std::uint64_t> plans)
      : session_(session), servers_(servers), plans_(std::move(plans)) {
    for (const auto p : plans_) total_ += p;
    update_schedule();
  }

  [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
  [[nodiscard]] std::uint64_t plan(std::uint32_t rank) const { return plans_.at(rank); }

  // The session's loss handler: a replacement under restart is sent where to resume; a rank
  // lost under continue, or a leave, is dropped by the servers and server 0 deals its rows (a
  // re-plan of every row when the rows follow one, or when it held rows dealt to it).
  void on_loss(int rank, config::FailurePolicy action);

  // A run resumed without the ranks that had left (elastic): the servers stop counting them
  // and deal their rows again, to each taker from its next local epoch (a taker starts again
  // from its own plan: the deals of the run before the stop are not replayed). When the resumed
  // run re-plans every row among the members (`replanned`, async_resume.hpp), their rows are in
  // it: the servers only forget them, and a later leave re-plans too.
  void forget_departed(bool replanned);

  // An elastic join into `rank`'s slot with a plan of `steps`: the pushes of the slot's
  // earlier holder (a leaver's) stay in the total. From now on the rows follow a re-plan.
  void join(std::uint32_t rank, std::uint64_t steps) {
    plans_.at(rank) = steps;
    total_ += steps;
    replanned_ = true;
    update_schedule();
  }

  // A push that states a longer plan (its worker took rows over). Not a departed worker's: its
  // plan was settled at its loss (its pushes from before may be read from the log after it).
  void replan(std::uint32_t rank, std::uint64_t planned) {
    if (planned == 0 || planned == plans_.at(rank)) return;
    if (!session_.is_alive(static_cast<int>(rank))) return;
    total_ = total_ - plans_[rank] + planned;
    plans_[rank] = planned;
    update_schedule();
  }

  // After training: who trained on which lost rows from when (the survivors' `done`
  // messages say), in summary.json's failures and the survivors' rows.
  void settle(const std::vector<protocol::Envelope>& done);

  [[nodiscard]] const nlohmann::json& lost() const noexcept { return lost_; }

 private:
  // Whether `rank` was dealt a share of an earlier departed worker's rows.
  [[nodiscard]] bool took_rows(int rank) const;
  // The rows `rank` holds: after a re-plan its share (recorded at the deal), else its plan shard
  // and its shares of the departed workers' rows dealt to it.
  [[nodiscard]] std::uint64_t rows_held(int rank) const;

  void update_schedule() {
    // Epochs in the log are the share of the plan done: updates applied / (updates / epochs),
    // exact until a lost worker changes the plan, then rounded so as never to claim more.
    const auto epochs = static_cast<std::uint64_t>(session_.config().training.epochs);
    session_.schedule().set(total_, std::max<std::uint64_t>(1, (total_ + epochs - 1) / epochs));
  }

  roles::CoordinatorSession& session_;
  roles::ServerGroup& servers_;
  std::vector<std::uint64_t> plans_;  // each worker's planned pushes (its own, as they change)
  std::uint64_t total_ = 0;
  bool replanned_ = false;  // the rows follow a re-plan of every row (a join, a leave, a resume)
  nlohmann::json lost_ = nlohmann::json::array();
  struct Dealt {
    int rank = 0;
    std::vector<int> to;
    std::uint64_t rows = 0;  // the rows it held
    bool replan = false;     // dealt with every other row (a re-plan)
    std::optional<std::size_t> event;  // its leave event's index in membership.events
  };
  std::vector<Dealt> dealt_;
};


}  // namespace dt::modes
