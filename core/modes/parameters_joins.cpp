// Parameters mode's joins: see parameters_joins.hpp and docs/elastic.md.

#include "core/modes/parameters_joins.hpp"

#include "core/coordinator/plan.hpp"
#include "core/protocol/step_messages.hpp"
#include "base/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

namespace dt::modes {

void RoundJoins::check_admit_steps(const roles::CoordinatorSession& session,
                                   std::uint64_t rounds,
                                   const std::function<std::uint64_t(std::uint64_t)>& end_step) {
  const auto& elastic = session.config().fault_tolerance.elastic;
  if (!elastic || rounds == 0) return;
  std::vector<std::uint64_t> boundaries;  // where a joiner may come in: after round k < last
  for (std::uint64_t k = 0; k + 1 < rounds; ++k) boundaries.push_back(end_step(k));
  for (const int at : elastic->admit_at_steps) {
    const auto step = static_cast<std::uint64_t>(at);
    if (step == 0 || std::binary_search(boundaries.begin(), boundaries.end(), step)) continue;
    const auto shown = std::min<std::size_t>(6, boundaries.size());
    const std::string ends =
        boundaries.empty()
            ? std::string("this run has one round")
            : fmt::format("the rounds of this run end at steps {}{}",
                          fmt::join(boundaries.begin(),
                                    boundaries.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                          boundaries.size() > shown ? ", ..." : "");
    fail<ConfigError>("fault_tolerance.elastic.admit_at_steps: step {} is not a round boundary; "
                      "in aggregation.mode parameters a joiner is admitted between two rounds, "
                      "and {} (the last, {}, ends training); list 0 or steps among those",
                      step, ends, end_step(rounds - 1));
  }
}

void RoundJoins::boundary(roles::CoordinatorSession& session, std::uint64_t r,
                          const std::function<std::uint64_t(std::uint64_t)>& end_step) {
  auto& per_epoch = session.result().aggregation["local_steps_per_epoch"];
  if (!checked_) {
    check_admit_steps(session, session.result().aggregation["rounds"].get<std::uint64_t>(),
                      end_step);
    // A join slot no worker holds yet has no local steps (its planned shard is empty).
    for (int k = session.plan().starting_ranks(); k < session.ranks(); ++k) {
      const auto at = static_cast<std::size_t>(k);
      if (!session.is_alive(k) && session.plan().shard_rows[at] == 0) per_epoch[at] = 0;
    }
    resumed_joiners(session);
    checked_ = true;
  }
  const std::vector<int> before = session.alive();
  session.admit_joiners(r == 0 ? 0 : end_step(r - 1));
  std::vector<int> fresh;  // joined here
  for (const int rank : session.alive()) {
    if (std::find(before.begin(), before.end(), rank) != before.end()) continue;
    const auto k = static_cast<std::size_t>(rank);
    positions_.at(k) = 0;  // a slot a worker left starts afresh too
    optimizers_.at(k).reset();
    fresh.push_back(rank);
    if (std::find(joiners_.begin(), joiners_.end(), rank) == joiners_.end()) {
      joiners_.push_back(rank);
    }
  }
  // Each member from its next local epoch: the one it starts now at an epoch boundary (always,
  // with sync_every in epochs), else the following one; a joiner (position 0) from its first.
  session.deal_left_rows([&](int rank) {
    const auto k = static_cast<std::size_t>(rank);
    const auto per = std::max<std::uint64_t>(1, per_epoch[k].get<std::uint64_t>());
    return (positions_[k] + per - 1) / per;
  });
  for (const int rank : fresh) {
    const auto k = static_cast<std::size_t>(rank);
    per_epoch[k] =
        roles::local_steps_per_epoch(session.config().training, session.result().workers.at(k).rows);
  }
}

void RoundJoins::resumed_joiners(roles::CoordinatorSession& session) {
  // On --resume, the slots that joiners held at the checkpoint (refilled by this coordinator)
  // count their local steps from the rows their join dealt them, as in the run that never
  // stopped; a slot joined twice counts from its last join.
  const auto& membership = session.result().membership;
  if (membership.is_null()) return;
  auto& per_epoch = session.result().aggregation["local_steps_per_epoch"];
  // Joins before a resize (another worker count on --resume) mean nothing in its new plan.
  const auto& events = membership["events"];
  std::size_t since = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i]["event"] == "resize") since = i + 1;
  }
  for (std::size_t i = since; i < events.size(); ++i) {
    const auto& event = events[i];
    const int rank = event.value("rank", -1);
    if (event["event"] != "join" || !event.contains("replanned") || !session.is_alive(rank)) {
      continue;
    }
    for (const auto& t : event["replanned"]["to"]) {
      if (t["rank"] != rank) continue;
      per_epoch[static_cast<std::size_t>(rank)] = roles::local_steps_per_epoch(
          session.config().training, t["rows"].get<std::uint64_t>());
    }
    if (std::find(joiners_.begin(), joiners_.end(), rank) == joiners_.end()) {
      joiners_.push_back(rank);
    }
  }
}

void RoundJoins::annotate(roles::CoordinatorSession& session, protocol::Envelope& request,
                          int rank) const {
  if (std::find(joiners_.begin(), joiners_.end(), rank) == joiners_.end()) return;
  request.fields["per_epoch"] =
      session.result().aggregation["local_steps_per_epoch"][static_cast<std::size_t>(rank)];
}

std::uint64_t RoundJoins::steps_per_epoch(const roles::WorkerSession& session,
                                          const protocol::Envelope& round) {
  return protocol::count_or(round, "per_epoch", session.local_steps_per_epoch());
}

}  // namespace dt::modes
