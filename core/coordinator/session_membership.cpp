// CoordinatorSession's planned leaves (fault_tolerance.elastic): a worker that leaves is taken
// off alive() as `continue` takes a lost one, without a failure: the gather in progress goes on
// without it, and reassign_lost_rows deals its rows at the next epoch (gradients star);
// deal_left_rows at each taker's next local epoch (parameters); a mode with a loss handler
// (async) takes it as a loss under `continue` (its servers deal the rows). Below min_workers the
// run waits join_timeout_ms for joiners (session_joins.cpp admits them at the next step
// boundary), then fails.

#include "core/coordinator/members_file.hpp"
#include "core/coordinator/membership.hpp"
#include "core/coordinator/session.hpp"
#include "core/coordinator/worker_pool.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"

#include <algorithm>
#include <cstdint>
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

namespace {

// The leave of the worker holding `rank` now: the slot's last leave, unless a worker joined
// into the slot since (elastic: a join into a leaver's slot; its own loss is no leave).
std::optional<std::size_t> current_leave(const nlohmann::json& membership, int rank) {
  if (membership.is_null()) return std::nullopt;
  std::optional<std::size_t> found;
  const auto& events = membership["events"];
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].value("rank", -1) != rank) continue;
    if (events[i]["event"] == "leave") found = i;
    if (events[i]["event"] == "join") found.reset();
  }
  return found;
}

}  // namespace

std::optional<std::uint64_t> left_after(const nlohmann::json& membership, int rank) {
  const auto i = current_leave(membership, rank);
  if (!i) return std::nullopt;
  return membership["events"][*i]["step"].get<std::uint64_t>();
}

nlohmann::json* leave_event(nlohmann::json& membership, int rank) {
  const auto i = current_leave(membership, rank);
  return i ? &membership["events"][*i] : nullptr;
}

bool holds_dealt_rows(const nlohmann::json& dealt, int rank) {
  return std::any_of(dealt.begin(), dealt.end(), [rank](const nlohmann::json& d) {
    const auto& to = d["to"];
    return std::find(to.begin(), to.end(), rank) != to.end();
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
  // The leaver's reply to the step in hand, if it came in this gather, is part of that step
  // (parameters mode: of the round in progress, which ends at round_end_); so is one that came
  // in an earlier gather (a leave read during a wait on the servers, or after the worker's
  // exit, before the step is recorded).
  std::uint64_t step = result_.steps;
  if (after_step) step = round_end_ > 0 ? round_end_ : step + 1;
  if (const auto& a = answered_[r]; a.any && (a.type == protocol::Type::kGradient ||
                                                 a.type == protocol::Type::kRingLoss)) {
    step = std::max(step, a.step + 1);
  }
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
  publish_members();
  // A leave read with its last reply completes that step first (step_boundary waits then).
  auto why = fmt::format("worker {} left after step {}", rank, step);
  if (after_step) joins_.below_min = std::move(why);
  else check_min_workers(why);
  // The modes whose workers or servers hold per-worker state (ring, sharded servers) re-plan
  // as for a loss under `continue`; left_after() tells them it was a leave, and after which step.
  if (loss_handler_) loss_handler_(rank, config::FailurePolicy::kContinue);
}

bool CoordinatorSession::left_unread(int rank) {
  // A leaver sends kLeave before it closes its socket, so a send that finds it gone most often
  // comes before that message is read, not after: it is in the stash or on its way.
  if (result_.membership.is_null()) return false;
  const auto is_leave = [&](const transport::Incoming& in) {
    try {
      const auto e = protocol::decode(in.message, job_id_);
      return e.type == protocol::Type::kLeave && static_cast<int>(e.rank) == rank;
    } catch (const ProtocolError&) {
      return false;
    }
  };
  bool found = std::erase_if(stash_, is_leave) > 0;
  const auto until = transport::deadline_in(std::chrono::milliseconds(200));
  while (!found) {
    auto in = listener_.receive(until);
    if (!in) break;
    found = is_leave(*in);
    if (!found) stash_.push_back(std::move(*in));  // for the wait it belongs to
  }
  if (found) worker_left(rank, false);
  return found;
}

bool CoordinatorSession::deal_later(int rank, std::uint64_t epoch) const {
  const auto left = left_after(result_.membership, rank);
  return left && epoch * std::max<std::uint64_t>(1, plan_.steps_per_epoch) <= *left;
}

void CoordinatorSession::set_members_dir(const std::filesystem::path& run_dir) {
  // Workers as threads (inproc) take no signal of their own: elastic refuses them.
  if (!config_.fault_tolerance.elastic) return;
  members_file_ = std::make_shared<MembersFile>(run_dir / kMembersFile, job_id_);
}

void CoordinatorSession::publish_members(bool boundary) {
  // Written first once every worker takes SIGTERM as a leave (the first step boundary); from
  // then on again at every change.
  if (!members_file_ || !members_file_->due(boundary)) return;
  std::vector<Member> workers;
  for (const int rank : alive_) {
    const auto r = static_cast<std::size_t>(rank);
    const std::string host = r < result_.workers.size() ? result_.workers[r].host : "?";
    workers.push_back({rank, pool_.pid_of(rank), host, {}});
  }
  members_file_->publish(std::move(workers), result_.membership["events"]);
}

void CoordinatorSession::deal_left_rows(const std::function<std::uint64_t(int)>& from_epoch) {
  if (result_.membership.is_null() || alive_.empty()) return;
  // After a join (parameters mode admits joiners at a round boundary) every row is re-dealt,
  // each member from its own next local epoch; and once rows follow a re-plan, a leaver's are
  // re-dealt with all the others, as are those of a leaver that held rows dealt to it.
  const bool passes_on = std::any_of(lost_unassigned_.begin(), lost_unassigned_.end(), [&](int r) {
    return has_left(result_.membership, r) && holds_dealt_rows(dealt_, r);
  });
  if (joins_.replan || ((joins_.replanned || passes_on) && !lost_unassigned_.empty())) {
    std::uint64_t first = UINT64_MAX;
    for (const int r : alive_) first = std::min(first, from_epoch(r));
    replan_rows(first, from_epoch);
    return;
  }
  const auto pending = lost_unassigned_;
  for (const int left : pending) {
    if (!has_left(result_.membership, left)) continue;  // lost under continue: its client's
    const auto l = static_cast<std::size_t>(left);
    const std::vector<int> takers = alive_;  // a copy: the gather may lose one of them
    auto to = roles::deal_rows(*this, left, takers, from_epoch);
    std::uint64_t first = UINT64_MAX;
    for (auto& t : to) {
      t["from_epoch"] = from_epoch(t["rank"].get<int>());
      first = std::min(first, t["from_epoch"].get<std::uint64_t>());
    }
    note_rows_dealt(result_.membership, left, first, plan_.shard_rows[l], to);
    // For a checkpoint (resume_membership.cpp): the same deal, each taker's epoch, on --resume.
    nlohmann::json epochs = nlohmann::json::array();
    for (const int t : takers) epochs.push_back(from_epoch(t));
    dealt_.push_back({{"rank", left}, {"from_epochs", std::move(epochs)}, {"to", takers}});
    rows_dealt(left);
    log::notice("worker {}'s {} rows are dealt to workers {}, each from its next local epoch",
                left, plan_.shard_rows[l], fmt::join(takers, ", "));
  }
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
  const std::string how =
      config::admits_joiners(config_)
          ? fmt::format("`disttrain worker --connect {} --join` joins one", listener_.endpoint())
          : fmt::format("workers may join runs of {} yet", config::joinable_modes());
  fail<TrainingError>("{}, leaving {} worker{}, below fault_tolerance.elastic.min_workers = {}, "
                      "and not enough workers joined within join_timeout_ms = {} ms ({}); lower "
                      "min_workers, or rerun with --resume to continue from the last checkpoint",
                      why, alive_.size(), alive_.size() == 1 ? "" : "s", elastic->min_workers,
                      timeout.count(), how);
}

}  // namespace dt::roles
