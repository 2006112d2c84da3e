// async mode's joins: see async_joins.hpp and docs/elastic.md.

#include "core/modes/async_joins.hpp"

#include "core/coordinator/plan.hpp"
#include "base/log.hpp"

#include <fmt/ranges.h>

#include <algorithm>

namespace dt::modes {

void AsyncJoins::poll(std::uint64_t applied) {
  const auto& elastic = session_.config().fault_tolerance.elastic;
  if (!elastic || servers_.ended()) return;
  const auto& at = elastic->admit_at_steps;
  // A resumed run: the listed steps before its checkpoint's are behind it.
  while (next_ < at.size() && static_cast<std::uint64_t>(at[next_]) < session_.first_step()) {
    ++next_;
  }
  std::uint64_t step = applied;
  if (next_ < at.size() && static_cast<std::uint64_t>(at[next_]) <= applied) {
    step = static_cast<std::uint64_t>(at[next_++]);  // the session waits for a joiner there
  }
  const std::vector<int> before = session_.alive();
  session_.admit_joiners(step);
  for (const int rank : session_.alive()) {
    if (std::find(before.begin(), before.end(), rank) != before.end()) continue;
    // The workers trained on while the admission (or the wait for a joiner) took its time:
    // the epoch the re-plan starts from is counted from server 0's updates now.
    take(rank, std::max(applied, servers_.stats().front().version));
  }
}

void AsyncJoins::take(int rank, std::uint64_t applied) {
  const auto& plan = session_.plan();
  const auto& training = session_.config().training;
  const auto epochs = static_cast<std::uint64_t>(training.epochs);
  // The run's next epoch by the updates applied (the log's epoch axis).
  const auto per_epoch = std::max<std::uint64_t>(1, (lost_.total() + epochs - 1) / epochs);
  const auto from = std::min(epochs, applied / per_epoch + 1);
  auto deal = every_row_deal(plan);
  deal.fields["from_epoch"] = from;
  deal.fields["joiner"] = static_cast<std::uint64_t>(rank);
  deal.fields["joined"] = static_cast<std::uint64_t>(rank);  // the members' `done` name the join whose share they took
  const auto to = servers_.deal_replan(deal);
  const auto k = static_cast<std::size_t>(std::find(to.begin(), to.end(), rank) - to.begin());
  const auto m = to.size();
  const auto n = every_row_count(plan);
  const auto share_rows = [&](std::size_t s) { return share_of(n, s, m); };
  const auto rows = k < m ? share_rows(k) : 0;
  const auto steps = rows == 0 ? 0 : (epochs - from) * roles::local_steps_per_epoch(training, rows);
  servers_.join_worker(rank, steps);
  lost_.join(static_cast<std::uint32_t>(rank), steps);
  auto servers = servers_.servers_message();
  servers.fields["join_from_epoch"] = from;
  if (rows > 0) {  // its share rides on the message, as the others' on a slice
    deal.fields.erase("joiner");
    deal.fields["share"] = k;
    deal.fields["shares"] = m;
    servers.fields["reassign"] = deal.fields;
    servers.arrays.push_back(deal.arrays.at(0));
  }
  session_.send_to(rank, std::move(servers));
  // The record: the join event gets the re-plan (each member takes it from the run's next epoch,
  // or its own next local epoch when past it) and the updates applied at the admission.
  auto& result = session_.result();
  nlohmann::json shares = nlohmann::json::array();
  for (std::size_t s = 0; s < m; ++s) {
    shares.push_back({{"rank", to[s]}, {"rows", share_rows(s)}});
    if (to[s] == rank) shares.back()["from_epoch"] = from;  // the others' come with their done
    result.workers.at(static_cast<std::size_t>(to[s])).rows = share_rows(s);
  }
  auto& events = result.membership["events"];
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if ((*it)["event"] != "join" || (*it)["rank"] != rank) continue;
    (*it)["updates"] = applied;
    (*it)["replanned"] = {{"from_epoch", from}, {"to", shares}};
    break;
  }
  log::notice("worker {} joins after {} updates: every training row is re-dealt among workers "
              "{} from epoch {}; it trains {} steps",
              rank, applied, fmt::join(to, ", "), from + 1, steps);
}

void AsyncJoins::settle(const std::vector<protocol::Envelope>& done) {
  auto& events = session_.result().membership["events"];
  if (events.is_null()) return;
  for (const auto& d : done) {
    if (!d.fields.contains("replans")) continue;
    for (const auto& taken : d.fields.at("replans")) {
      for (auto& event : events) {
        if (event["event"] != "join" || event["rank"] != taken["joined"] ||
            !event.contains("replanned")) {
          continue;
        }
        for (auto& t : event["replanned"]["to"]) {
          if (t["rank"] == d.rank) t["from_epoch"] = taken["from_epoch"];
        }
      }
    }
  }
}

}  // namespace dt::modes
