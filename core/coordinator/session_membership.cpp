// CoordinatorSession's planned leaves (fault_tolerance.elastic): a worker that leaves is taken
// off alive() as `continue` takes a lost one, without a failure: the gather in progress goes on
// without it, and reassign_lost_rows deals its rows at the next epoch. Below min_workers the
// run waits join_timeout_ms for joiners (session_joins.cpp admits them at the next step
// boundary), then fails.

#include "core/coordinator/membership.hpp"
#include "core/coordinator/session.hpp"
#include "core/coordinator/worker_pool.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"

#include <algorithm>
#include <thread>

namespace dt::roles {

nlohmann::json start_membership(const config::Config& config, int workers) {
  const auto& e = *config.fault_tolerance.elastic;
  return {{"min_workers", e.min_workers},
          {"max_workers", e.max_workers},
          {"workers", workers},
          {"events", nlohmann::json::array()},
          {"rows_per_epoch", nlohmann::json::array()}};
}

void count_epoch_rows(nlohmann::json& membership, std::uint64_t epoch, std::uint64_t rows) {
  auto& counts = membership["rows_per_epoch"];
  while (counts.size() <= epoch) counts.push_back(0);
  counts[epoch] = counts[epoch].get<std::uint64_t>() + rows;
}

bool has_left(const nlohmann::json& membership, int rank) {
  if (membership.is_null()) return false;
  const auto& events = membership["events"];
  return std::any_of(events.begin(), events.end(), [rank](const nlohmann::json& e) {
    return e["event"] == "leave" && e["rank"] == rank;
  });
}

void note_rows_dealt(nlohmann::json& membership, int rank, std::uint64_t from_epoch,
                     std::uint64_t rows, const nlohmann::json& to) {
  for (auto& event : membership["events"]) {
    if (event["rank"] == rank && event["event"] == "leave" && !event.contains("reassigned")) {
      event["reassigned"] = {{"from_epoch", from_epoch}, {"rows", rows}, {"to", to}};
    }
  }
}

void CoordinatorSession::worker_left(int rank, bool after_step) {
  const auto r = static_cast<std::size_t>(rank);
  // The leaver's reply to the step in hand, if it came in this gather, is part of that step.
  const std::uint64_t step = result_.steps + (after_step ? 1 : 0);
  heartbeat_.forget(rank);  // it exits by itself, with status 0 (check_exit ignores it then)
  alive_flag_[r] = false;
  std::erase(alive_, rank);
  lost_unassigned_.push_back(rank);  // dealt at the next epoch, as a lost worker's rows
  result_.membership["events"].push_back({{"event", "leave"},
                                          {"rank", rank},
                                          {"pid", pool_.pid_of(rank)},
                                          {"step", step},
                                          {"workers", alive_.size()}});
  log::notice("worker {} (pid {}) left the run after step {} (a planned leave); {} worker{} go "
              "on, and its {} rows are dealt to them from the next epoch",
              rank, pool_.pid_of(rank), step, alive_.size(), alive_.size() == 1 ? "" : "s",
              joins_.replanned ? result_.workers[r].rows : plan_.shard_rows[r]);
  check_min_workers(fmt::format("worker {} left after step {}", rank, step));
}

void CoordinatorSession::check_min_workers(const std::string& why) {
  const auto& elastic = config_.fault_tolerance.elastic;
  if (!elastic || static_cast<int>(alive_.size()) >= elastic->min_workers) return;
  const auto timeout = std::chrono::milliseconds(elastic->join_timeout_ms);
  log::warn("{}: {} worker{} left, below fault_tolerance.elastic.min_workers = {}; waiting up "
            "to {} ms for workers to join",
            why, alive_.size(), alive_.size() == 1 ? " is" : "s are", elastic->min_workers,
            timeout.count());
  // Joiners queue (drain_joiners); they are admitted at the next step boundary (admit_joiners),
  // so the step in hand ends with the workers it has. Messages of the workers still here wait
  // in stash_ for the gathers that follow.
  const auto deadline = transport::deadline_in(timeout);
  for (;;) {
    if (signals::interrupted()) fail<InterruptedError>("interrupted at step {}", result_.steps);
    drain_joiners();
    if (static_cast<int>(alive_.size() + joins_.pending.size()) >= elastic->min_workers) {
      log::notice("{} worker{} asked to join; the run goes on", joins_.pending.size(),
                  joins_.pending.size() == 1 ? "" : "s");
      return;
    }
    if (transport::Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::min<transport::Clock::duration>(
        kPollSlice, deadline - transport::Clock::now()));
  }
  fail<TrainingError>("{}, leaving {} worker{}, below fault_tolerance.elastic.min_workers = {}, "
                      "and not enough workers joined within join_timeout_ms = {} ms (`disttrain "
                      "worker --connect {} --join` joins one); lower min_workers, or rerun with "
                      "--resume to continue from the last checkpoint",
                      why, alive_.size(), alive_.size() == 1 ? "" : "s", elastic->min_workers,
                      timeout.count(), listener_.endpoint());
}

}  // namespace dt::roles
