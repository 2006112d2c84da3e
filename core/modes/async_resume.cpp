// async mode's resume with a re-plan: see async_resume.hpp and docs/elastic.md.

#include "core/modes/async_resume.hpp"

#include "core/coordinator/checkpoint.hpp"
#include "core/coordinator/plan.hpp"
#include "core/coordinator/resume_read.hpp"
#include "core/modes/async_lost.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

namespace dt::modes {

AsyncResume::AsyncResume(roles::CoordinatorSession& session, const checkpoint::Checkpoint* from)
    : session_(session) {
  const auto& membership = std::as_const(session.result()).membership;
  if (from == nullptr || !session.config().fault_tolerance.elastic || !membership.is_object() ||
      !membership.contains("events") || !membership["events"].is_array()) {
    return;
  }
  const auto& events = membership["events"];
  step_ = from->step();
  // restore_membership records a resize at the checkpoint's step just before the mode runs.
  resized_ = !events.empty() && events.back().value("event", "") == "resize" &&
             events.back().value("step", std::uint64_t{0}) == step_;
  const bool joined = std::any_of(events.begin(), events.end(), [](const nlohmann::json& e) {
    return e.value("event", "") == "join";
  });
  if (!resized_ && !joined) return;  // leaves only: their rows are dealt again (LostWorkers)
  active_ = true;
  const auto& plan = session.plan();
  const auto& training = session.config().training;
  const auto epochs = static_cast<std::uint64_t>(training.epochs);
  // The run's epochs by the updates applied, as the checkpoint's schedule counted them.
  const auto total = roles::manifest_count(from->manifest, "total_steps", from->origin);
  const auto per_epoch = std::max<std::uint64_t>(1, (total + epochs - 1) / epochs);
  from_epoch_ = std::min(epochs, (step_ + per_epoch - 1) / per_epoch);
  skipped_ = std::max(step_, std::min(from_epoch_ * per_epoch, total)) - step_;
  const auto ranks = static_cast<std::size_t>(session.ranks());
  if (resized_) {
    // A new plan: each rank its own shard; the updates so far spread over the new ranks, so
    // that their step clocks start level (max_staleness compares them).
    const auto n = static_cast<std::uint64_t>(plan.starting_ranks());
    done_.assign(ranks, 0);
    for (int r = 0; r < plan.starting_ranks(); ++r) {
      const auto k = static_cast<std::uint64_t>(r);
      done_[static_cast<std::size_t>(r)] = step_ / n + (k < step_ % n ? 1 : 0);
      members_.push_back(r);
      rows_.push_back(plan.shard_rows[static_cast<std::size_t>(r)]);
    }
  } else {
    done_ = roles::read_worker_steps(*from);
    if (done_.size() != ranks) {
      fail<DataError>("{}: the checkpoint counts the pushes of {} workers, this run has {} "
                      "slots (workers and fault_tolerance.elastic.max_workers)",
                      from->origin, done_.size(), ranks);
    }
    members_ = session.alive();
    const auto n = every_row_count(plan);
    for (std::size_t k = 0; k < members_.size(); ++k) {
      rows_.push_back(share_of(n, k, members_.size()));
    }
  }
  plans_ = done_;
  for (std::size_t k = 0; k < members_.size(); ++k) {
    plans_[static_cast<std::size_t>(members_[k])] +=
        (epochs - from_epoch_) * roles::local_steps_per_epoch(training, rows_[k]);
  }
}

void AsyncResume::announce(roles::ServerGroup& servers) {
  auto& result = session_.result();
  const auto& plan = session_.plan();
  const auto m = members_.size();
  nlohmann::json to = nlohmann::json::array();
  for (std::size_t k = 0; k < m; ++k) {
    const int rank = members_[k];
    auto message = servers.servers_message();
    message.fields["start_steps"] = done_;
    message.fields["replan_from_epoch"] = from_epoch_;
    if (!resized_) {  // its share of every row, its whole shard from that epoch on
      auto deal = every_row_deal(plan);
      deal.fields["share"] = k;
      deal.fields["shares"] = m;
      message.fields["reassign"] = deal.fields;
      message.arrays.push_back(deal.arrays.at(0));
    }
    session_.send_to(rank, std::move(message));
    result.workers.at(static_cast<std::size_t>(rank)).rows = rows_[k];
    to.push_back({{"rank", rank}, {"rows", rows_[k]}});
  }
  auto& events = result.membership["events"];
  if (resized_) {  // restore_membership counted the epoch in steps of the plan: updates here
    events.back()["from_epoch"] = from_epoch_;
    events.back()["skipped_steps"] = skipped_;
  } else {
    events.push_back({{"event", "resume"},
                      {"step", step_},
                      {"workers", m},
                      {"from_epoch", from_epoch_},
                      {"skipped_steps", skipped_},
                      {"replanned", {{"from_epoch", from_epoch_}, {"to", to}}}});
  }
  log::notice("--resume: {} among workers {} from epoch {}{}",
              resized_ ? "each worker trains the new plan's shard"
                       : "every training row is re-dealt",
              fmt::join(members_, ", "), from_epoch_ + 1,
              skipped_ > 0 ? fmt::format("; updates {} to {}, the rest of the interrupted epoch, "
                                         "are skipped", step_ + 1, step_ + skipped_)
                           : std::string());
}

}  // namespace dt::modes
