#pragma once
// async mode's coordinator side of membership (core/modes/async.cpp): each worker's planned
// pushes as they change (lost workers, leaves), what lost workers left undone and who took
// their rows; and every push's staleness merged over the servers. Used on the coordinator's
// thread only.

#include "core/coordinator/membership.hpp"
#include "core/coordinator/session.hpp"
#include "core/coordinator/tensor_plan.hpp"
#include "core/protocol/step_messages.hpp"
#include "core/servers/server_group.hpp"
#include "base/log.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace dt::modes {

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

  void on_loss(int rank, config::FailurePolicy action) {
    const auto r = static_cast<std::size_t>(rank);
    if (action == config::FailurePolicy::kRestart) {
      const auto applied_by = servers_.lose_worker(rank, true);
      auto setup = servers_.servers_message();
      std::vector<std::uint64_t> start(plans_.size(), 0);
      start[r] = *std::min_element(applied_by.begin(), applied_by.end());
      setup.fields["start_steps"] = start;
      session_.send_to(rank, std::move(setup));
      return;
    }
    const auto& plan = session_.plan();
    auto deal = protocol::make_setup({"", "", roles::source_for(plan, r), plan.segments[r]});
    deal.type = protocol::Type::kReassign;
    deal.fields["lost_rank"] = rank;
    std::vector<int> to;
    const auto applied_by = servers_.drop_worker_dealing(rank, std::move(deal), to);
    // Server 0's log counts the updates: the lost worker's pushes it will never apply.
    const auto left = plans_[r] - std::min(applied_by.front(), plans_[r]);
    total_ -= left;
    plans_[r] -= left;
    update_schedule();
    if (auto* event = roles::leave_event(session_.result().membership, rank)) {  // a leave
      (*event)["pushes"] = applied_by.front();
      (*event)["not_done"] = left;
    } else {
      lost_.push_back({{"rank", rank}, {"applied", applied_by.front()}, {"not_done", left}});
    }
    if (to.empty()) return;  // every survivor is on its last step: evaluation only
    session_.rows_dealt(rank);
    dealt_.emplace_back(rank, to);
    log::warn("worker {}'s {} rows are dealt to workers {} from their next local epoch", rank,
              plan.shard_rows[r], fmt::join(to, ", "));
  }

  // A push that states a longer plan (its worker took rows over).
  void replan(std::uint32_t rank, std::uint64_t planned) {
    if (planned == 0 || planned == plans_.at(rank)) return;
    total_ = total_ - plans_[rank] + planned;
    plans_[rank] = planned;
    update_schedule();
  }

  // After training: who trained on which lost rows from when (the survivors' `done`
  // messages say), in summary.json's failures and the survivors' rows.
  void settle(const std::vector<protocol::Envelope>& done) {
    auto& result = session_.result();
    for (const auto& [lost, to] : dealt_) {
      nlohmann::json takers = nlohmann::json::array();
      std::uint64_t from = UINT64_MAX;
      for (const auto& d : done) {
        for (const auto& t : protocol::read_took(d)) {
          if (t.lost_rank != static_cast<std::uint64_t>(lost)) continue;
          const auto rows = t.rows;
          const auto epoch = t.from_epoch;
          takers.push_back({{"rank", d.rank}, {"rows", rows}, {"from_epoch", epoch}});
          result.workers[d.rank].rows += rows;
          from = std::min(from, epoch);
        }
      }
      const nlohmann::json reassigned = {
          {"from_epoch", from == UINT64_MAX ? nlohmann::json() : nlohmann::json(from)},
          {"local_epochs", true},
          {"rows", session_.plan().shard_rows[static_cast<std::size_t>(lost)]},
          {"to", takers}};
      for (auto& f : result.failures) {
        if (f["rank"] == lost && f["action"] == "continue" && !f.contains("reassigned")) {
          f["reassigned"] = reassigned;
        }
      }
      if (auto* event = roles::leave_event(result.membership, lost)) {
        (*event)["reassigned"] = reassigned;
      }
    }
  }

  [[nodiscard]] const nlohmann::json& lost() const noexcept { return lost_; }

 private:
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
  nlohmann::json lost_ = nlohmann::json::array();
  std::vector<std::pair<int, std::vector<int>>> dealt_;
};

}  // namespace dt::modes
