// async mode's coordinator side of membership: see async_lost.hpp.

#include "core/modes/async_lost.hpp"
#include "base/error.hpp"

namespace dt::modes {

void LostWorkers::on_loss(int rank, config::FailurePolicy action) {
  const auto r = static_cast<std::size_t>(rank);
  if (action == config::FailurePolicy::kRestart) {
    // A replacement plans its steps from the plan's shard: it cannot redo a plan that a
    // re-plan (a join, a leave) or rows taken over had changed, which the servers count by.
    // Ending the run here, clearly, beats a replacement the servers never finish.
    if (replanned_ || took_rows(rank)) {
      session_.result().failures.back()["action"] = "abort";
      fail<TrainingError>("worker {} was lost after its rows changed ({}); async mode cannot "
                          "restart a worker on re-planned rows: resume the run from its last "
                          "checkpoint (--resume), or use on_worker_failure: continue",
                          rank, replanned_ ? "every row was re-dealt after a join or a leave"
                                           : "it had taken a departed worker's rows");
    }
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
  // After a join the rows follow its re-plan: a leaver's share goes with every other row. So
  // do the rows of one that took rows of an earlier departed worker: passing on its plan
  // shard alone would drop the share it held (as holds_dealt_rows in gradients mode).
  const bool replan = replanned_ || took_rows(rank);
  const auto held = rows_held(rank);  // before the re-plan changes the record
  if (replan) deal = every_row_deal(plan);
  deal.fields["lost_rank"] = rank;
  deal.fields["deal"] = dealt_.size();  // the takers' `done` name it (a slot may leave twice)
  std::vector<int> to;
  const auto applied_by = servers_.drop_worker_dealing(rank, std::move(deal), to);
  // Server 0's log counts the updates: the lost worker's pushes it will never apply.
  const auto left = plans_[r] - std::min(applied_by.front(), plans_[r]);
  total_ -= left;
  plans_[r] -= left;
  update_schedule();
  auto& membership = session_.result().membership;
  std::optional<std::size_t> event_at;  // its leave event (settle writes its deal there)
  if (auto* event = roles::leave_event(membership, rank)) {  // a leave
    (*event)["pushes"] = applied_by.front();
    (*event)["not_done"] = left;
    for (std::size_t i = 0; i < membership["events"].size(); ++i) {
      if (&membership["events"][i] == event) event_at = i;
    }
  } else {
    lost_.push_back({{"rank", rank}, {"applied", applied_by.front()}, {"not_done", left}});
  }
  if (to.empty()) return;  // every survivor is on its last step: evaluation only
  session_.rows_dealt(rank);
  dealt_.push_back({rank, to, held, replan, event_at});
  if (replan) {  // each taker's whole shard from now on (settle writes what each reports)
    replanned_ = true;
    for (std::size_t k = 0; k < to.size(); ++k) {
      session_.result().workers.at(static_cast<std::size_t>(to[k])).rows =
          share_of(every_row_count(plan), k, to.size());
    }
  }
  log::warn("worker {}'s {} rows are dealt to workers {} from their next local epoch{}", rank,
            held, fmt::join(to, ", "), replan ? ", with every other row (a re-plan)" : "");
}

void LostWorkers::forget_departed(bool replanned) {
  if (replanned) {
    servers_.forget_departed();
    for (int r = 0; r < session_.plan().starting_ranks(); ++r) {
      if (!session_.is_alive(r)) session_.rows_dealt(r);
    }
    replanned_ = true;
    return;
  }
  for (int r = 0; r < session_.plan().starting_ranks(); ++r) {
    if (!session_.is_alive(r)) on_loss(r, config::FailurePolicy::kContinue);
  }
}

void LostWorkers::settle(const std::vector<protocol::Envelope>& done) {
  auto& result = session_.result();
  for (std::size_t k = 0; k < dealt_.size(); ++k) {
    const auto& [lost, to, held, replan, event_at] = dealt_[k];
    nlohmann::json takers = nlohmann::json::array();
    std::uint64_t from = UINT64_MAX;
    for (const auto& d : done) {
      const auto took = protocol::read_took(d);
      for (std::size_t i = 0; i < took.size(); ++i) {
        const auto& t = took[i];
        if (t.lost_rank != static_cast<std::uint64_t>(lost)) continue;
        if (d.fields.at("took")[i].value("deal", k) != k) continue;  // another deal of it
        const auto rows = t.rows;
        const auto epoch = t.from_epoch;
        takers.push_back({{"rank", d.rank}, {"rows", rows}, {"from_epoch", epoch}});
        // A re-plan's share is the taker's whole shard; after a join a leaver's rows taken
        // before it are in the join's shares already.
        auto& holds = result.workers[d.rank].rows;
        if (replan) {
          holds = rows;
        } else if (!replanned_) {
          holds += rows;
        }
        from = std::min(from, epoch);
      }
    }
    const nlohmann::json reassigned = {
        {"from_epoch", from == UINT64_MAX ? nlohmann::json() : nlohmann::json(from)},
        {"local_epochs", true},
        {"rows", held},
        {"to", takers}};
    for (auto& f : result.failures) {
      if (f["rank"] == lost && f["action"] == "continue" && !f.contains("reassigned")) {
        f["reassigned"] = reassigned;
      }
    }
    if (event_at) result.membership["events"][*event_at]["reassigned"] = reassigned;
  }
}

bool LostWorkers::took_rows(int rank) const {
  return std::any_of(dealt_.begin(), dealt_.end(), [rank](const Dealt& d) {
    return std::find(d.to.begin(), d.to.end(), rank) != d.to.end();
  });
}

std::uint64_t LostWorkers::rows_held(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  if (replanned_) return session_.result().workers.at(r).rows;
  std::uint64_t rows = session_.plan().shard_rows[r];
  for (const auto& d : dealt_) {
    const auto at = std::find(d.to.begin(), d.to.end(), rank);
    if (at == d.to.end()) continue;
    rows += share_of(d.rows, static_cast<std::size_t>(at - d.to.begin()), d.to.size());
  }
  return rows;
}

}  // namespace dt::modes
