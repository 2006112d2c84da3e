// CoordinatorSession's lost workers: the failure policy (abort, restart, continue), starting a
// replacement, dealing a lost worker's rows to the survivors, and reading worker exits.

#include "core/coordinator/session.hpp"
#include "core/coordinator/membership.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/coordinator/tensor_plan.hpp"
#include "core/protocol/timing.hpp"
#include "core/coordinator/worker_pool.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"
#include "transports/transport.hpp"

#include <algorithm>

namespace dt::roles {

using transport::deadline_in;

namespace {

// A replacement worker gets as long to start as the first workers did.
constexpr std::chrono::milliseconds kJoinTimeout{30000};

}  // namespace

void CoordinatorSession::lose_worker(int rank, const std::string& cause) {
  const auto r = static_cast<std::size_t>(rank);
  const auto& ft = config_.fault_tolerance;
  const std::string host = r < result_.workers.size() ? result_.workers[r].host : "?";
  std::string line = fmt::format("worker {} (pid {} on {}) {}; last completed step {}", rank,
                                 pool_.pid_of(rank), host, cause, result_.steps);
  const std::string last = pool_.last_words(rank);
  if (!last.empty()) line += fmt::format("; its log ends: {}", last);
  nlohmann::json failure = {{"rank", rank},          {"pid", pool_.pid_of(rank)},
                            {"host", host},          {"cause", cause},
                            {"step", result_.steps}, {"message", line}};
  const auto policy = ft.on_worker_failure;
  if (policy == config::FailurePolicy::kAbort || finalizes_.empty()) {
    // Before training starts (finalizes_ is set then), a lost worker is most likely bad data
    // or a bad host: replacing or dropping it would only hide that.
    failure["action"] = "abort";
    result_.failures.push_back(std::move(failure));
    // At once: a hung (stopped) worker would sit out the SIGTERM grace of stopping the others.
    end_worker(rank);
    throw TrainingError(line);
  }
  end_worker(rank);  // a hung worker must not come back to life in the middle of the run
  heartbeat_.forget(rank);
  ++generation_;
  if (policy == config::FailurePolicy::kRestart) {
    if (restarts_ >= ft.max_restarts) {
      failure["action"] = "abort";
      result_.failures.push_back(std::move(failure));
      throw TrainingError(fmt::format("{}; no restart left (fault_tolerance.max_restarts = {})",
                                      line, ft.max_restarts));
    }
    ++restarts_;
    log::warn("{}; starting a replacement ({} of at most {} restarts)", line, restarts_,
              ft.max_restarts);
    failure["action"] = "restart";
    result_.failures.push_back(std::move(failure));
    auto ready = replace_worker(rank);
    result_.failures.back()["replacement_pid"] = pool_.pid_of(rank);
    log::warn("worker {} is back (pid {}); training goes on", rank, pool_.pid_of(rank));
    publish_members();
    if (loss_handler_) {
      loss_handler_(rank, policy);
    } else if (last_request_[r] && last_request_type_[r] == protocol::Type::kFinalize) {
      // Lost between its finalize and its ready: the replacement was sent the same finalize
      // and answered it. Sending it again would reach a worker that has moved on to training
      // (found by tests/e2e/test_kill_points.py); its ready goes to the gather waiting for it.
      stash_.push_back({addresses_.identity(rank), protocol::encode(std::move(ready), job_id_)});
    } else if (last_request_[r]) {
      send_request(rank, last_request_[r], last_request_type_[r], last_request_step_[r],
                   last_request_generation_[r]);
    }
    return;
  }
  alive_flag_[r] = false;
  std::erase(alive_, rank);
  failure["action"] = "continue";
  result_.failures.push_back(std::move(failure));
  if (alive_.empty()) throw TrainingError(fmt::format("{}; no worker is left", line));
  log::warn("{}; continuing with {} workers", line, alive_.size());
  lost_unassigned_.push_back(rank);
  publish_members();
  check_min_workers(fmt::format("worker {} was lost", rank));  // elastic only
  if (loss_handler_) loss_handler_(rank, policy);
}

bool CoordinatorSession::take_restart() noexcept {
  if (restarts_ >= config_.fault_tolerance.max_restarts) return false;
  ++restarts_;
  return true;
}

std::chrono::milliseconds CoordinatorSession::join_timeout(int rank) const {
  // A joining rank's replacement is started by its launcher (a requeued job, a restarted pod).
  if (joins_by_itself(rank)) {
    return std::chrono::milliseconds(config_.transport.join_timeout_ms);
  }
  return kJoinTimeout;
}

void CoordinatorSession::end_worker(int rank) {
  pool_.kill(rank);
  if (!joins_by_itself(rank)) return;
  // A joined worker is no child of this process, and the heartbeat server still answers it:
  // told to stop, one that was only slow or hung for a while does not train on beside its
  // replacement (best effort: it may be gone).
  try {
    listener_.send(addresses_.identity(rank),
                   protocol::encode(protocol::make_error({"training",
                                                          "gave this worker up (it was found "
                                                          "lost); it stops",
                                                          static_cast<int>(ExitCode::kTrainingFailed)}),
                                    job_id_),
                   deadline_in(kSendDeadline));
  } catch (const TransportError&) {
  }
}

void CoordinatorSession::end_joined_workers(const Error& why) {
  const auto stop = protocol::encode(
      protocol::make_error({"training", fmt::format("ended the run: {}", why.what()),
                            static_cast<int>(why.exit_code())}),
      job_id_);
  for (int rank = 0; rank < ranks(); ++rank) {
    if (!is_alive(rank) || !joins_by_itself(rank)) continue;
    try {
      listener_.send(addresses_.identity(rank), stop, deadline_in(kSendDeadline));
    } catch (const TransportError&) {
    }
  }
}

bool CoordinatorSession::takes_rank(const transport::Incoming& in, int rank) const {
  const auto& header = in.message.header;
  if (header.type != static_cast<std::uint16_t>(protocol::Type::kHello) ||
      header.rank != static_cast<std::uint32_t>(rank) || !joins_by_itself(rank)) {
    return false;  // not a hello for `rank`, or the rank is one this process starts
  }
  try {
    (void)protocol::decode(in.message, header.job_id == 0 ? 0 : job_id_);
    return true;
  } catch (const ProtocolError&) {
    return false;
  }
}

protocol::Envelope CoordinatorSession::await_from(int rank, protocol::Type type,
                                                  transport::Clock::time_point deadline,
                                                  const char* who) {
  for (;;) {
    if (signals::interrupted()) fail<InterruptedError>("interrupted at step {}", result_.steps);
    if (auto in = listener_.receive(deadline_in(kPollSlice))) {
      if (type != protocol::Type::kHello && take_join_hello(*in)) continue;  // another joiner
      if (type == protocol::Type::kHello && takes_rank(*in, rank)) {
        // A worker that joins by itself (a remote rank's replacement) has an identity of its
        // own: from now on the rank is reached under it.
        addresses_.set_identity(rank, in->peer);
      }
      if (in->peer != addresses_.identity(rank)) {
        stash_.push_back(std::move(*in));  // for the gather it belongs to
        continue;
      }
      // A worker joining by itself does not know the job yet: its hello carries job 0.
      const bool joining = type == protocol::Type::kHello && in->message.header.job_id == 0;
      auto decoded = decode_or_drop(*in, joining ? 0 : job_id_);
      if (!decoded) continue;
      protocol::Envelope e = std::move(*decoded);
      if (e.type == protocol::Type::kError) {
        const auto error = protocol::read_error(e);
        fail<TrainingError>("{} worker {} (pid {}) failed: {}", who, rank, pool_.pid_of(rank),
                            error.message);
      }
      if (e.type == type) return e;
      continue;  // a late message of the lost worker
    }
    for (auto& exit : pool_.poll()) {
      if (exit.rank == rank && exit.pid == pool_.pid_of(rank)) {  // not a leaver of its slot
        std::string message = fmt::format("{} worker {} (pid {}) {} before it joined", who, rank,
                                          exit.pid, exit.status.describe());
        const auto last = pool_.last_words(rank);
        if (!last.empty()) message += fmt::format("; its log ends: {}", last);
        throw TrainingError(message);
      }
      pending_exits_.push_back(exit);
    }
    if (transport::Clock::now() >= deadline) {
      const bool remote = joins_by_itself(rank) && rank < plan_.starting_ranks();
      fail<TimeoutError>("{} worker {} did not join in time (no {} message){}", who, rank,
                         protocol::name_of(type),
                         remote ? fmt::format("; its launcher must start it again: disttrain "
                                              "worker --connect {} --rank {}",
                                              listener_.endpoint(), rank)
                                : "");
    }
  }
}

protocol::Envelope CoordinatorSession::replace_worker(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (setups_.size() <= r || finalizes_.size() <= r) {
    fail<TrainingError>("internal error: no start-up messages to replay for worker {}", rank);
  }
  pool_.start(rank, listener_.endpoint());
  const auto deadline = deadline_in(join_timeout(rank));
  const auto hello = protocol::read_hello(await_from(rank, protocol::Type::kHello, deadline));
  result_.workers[r].pid = hello.pid;
  pool_.joined(rank, hello.pid);
  result_.workers[r].host = hello.host;
  const auto send = [&](protocol::Envelope e) {
    e.generation = generation_;  // >= 1: the worker knows it is a replacement (faults stay off)
    listener_.send(addresses_.identity(rank),
                   protocol::encode(std::move(e), job_id_), deadline_in(kSendDeadline));
  };
  send(setups_[r]);
  const auto loaded = await_from(rank, protocol::Type::kLoaded, deadline);
  if (protocol::count(loaded, "rows") != plan_.shard_rows[r]) {
    fail<TrainingError>("the replacement for worker {} loaded {} rows, the shard has {}: did the "
                        "data change during the run?",
                        rank, protocol::count(loaded, "rows"), plan_.shard_rows[r]);
  }
  send(finalizes_[r]);
  const auto ready = await_from(rank, protocol::Type::kReady, deadline);
  if (const auto it = ready.fields.find("peer_endpoint");
      it != ready.fields.end() && it->is_string()) {
    addresses_.replace_endpoint(r, it->get<std::string>());  // a re-formed group is sent it
  }
  joined_ms_[r] = steady_ms();
  return ready;
}

void CoordinatorSession::drop_worker(int rank, const std::string& cause) {
  if (!is_alive(rank)) return;
  const auto r = static_cast<std::size_t>(rank);
  const std::string host = r < result_.workers.size() ? result_.workers[r].host : "?";
  const std::string line = fmt::format("worker {} (pid {} on {}) {}; last completed step {}",
                                       rank, pool_.pid_of(rank), host, cause, result_.steps);
  result_.failures.push_back({{"rank", rank},          {"pid", pool_.pid_of(rank)},
                              {"host", host},          {"cause", cause},
                              {"step", result_.steps}, {"message", line},
                              {"action", "continue"}});
  end_worker(rank);
  heartbeat_.forget(rank);
  alive_flag_[r] = false;
  std::erase(alive_, rank);
  if (alive_.empty()) throw TrainingError(fmt::format("{}; no worker is left", line));
  log::warn("{}; continuing with {} workers", line, alive_.size());
  lost_unassigned_.push_back(rank);
}

void CoordinatorSession::reassign_lost_rows(std::uint64_t epoch) {
  // A worker that leaves or is lost while rows are dealt (the deal's gather reads its leave)
  // joins lost_unassigned_: deal again until no one new is waiting, so its rows, and any share
  // just sent to it, are not dropped.
  for (;;) {
    const std::vector<int> waiting = lost_unassigned_;
    // (Tensor parallelism deals by slice, never by re-plan.)
    const bool passes_on =
        plan_.tensor <= 1 && std::any_of(waiting.begin(), waiting.end(), [&](int r) {
          return !deal_later(r, epoch) && holds_dealt_rows(dealt_, r);
        });
    // After a join (elastic) every row is re-dealt; and once rows follow a re-plan, or a
    // departed worker held rows dealt to it, its rows are not its plan shard's: they are
    // re-dealt with all the others.
    if (joins_.replan || ((joins_.replanned || passes_on) && !waiting.empty())) {
      replan_rows(epoch);
    } else {
      deal_plan_shards(waiting, epoch);
    }
    if (std::all_of(lost_unassigned_.begin(), lost_unassigned_.end(), [&](int r) {
          return std::find(waiting.begin(), waiting.end(), r) != waiting.end();
        })) {
      return;
    }
  }
}

void CoordinatorSession::deal_plan_shards(const std::vector<int>& waiting, std::uint64_t epoch) {
  for (const int lost : waiting) {
    const auto l = static_cast<std::size_t>(lost);
    if (deal_later(lost, epoch)) continue;  // its rows wait for a later epoch
    // Tensor parallelism: only the ranks of the lost one's slice read its columns.
    std::vector<int> survivors;
    for (const int s : alive_) {
      if (plan_.tensor <= 1 || s % plan_.tensor == lost % plan_.tensor) survivors.push_back(s);
    }
    if (survivors.empty()) {  // no rank of its slice is left to read its columns
      rows_dealt(lost);
      continue;
    }
    const auto to = deal_rows(lost, epoch, survivors);
    for (auto& f : result_.failures) {
      if (f["rank"] == lost && f["action"] == "continue" && !f.contains("reassigned")) {
        f["reassigned"] = {{"from_epoch", epoch}, {"rows", plan_.shard_rows[l]}, {"to", to}};
      }
    }
    if (!result_.membership.is_null()) {
      note_rows_dealt(result_.membership, lost, epoch, plan_.shard_rows[l], to);
    }
    log::warn("worker {}'s {} rows are dealt to workers {} from epoch {}", lost,
              plan_.shard_rows[l], fmt::join(survivors, ", "), epoch + 1);
    rows_dealt(lost);
  }
}

nlohmann::json CoordinatorSession::deal_rows(int lost, std::uint64_t epoch,
                                            const std::vector<int>& survivors) {
  auto to = roles::deal_rows(*this, lost, survivors, [epoch](int) { return epoch; });
  // For a checkpoint (resume_membership.hpp): the same deal, again, on --resume.
  dealt_.push_back({{"rank", lost}, {"from_epoch", epoch}, {"to", survivors}});
  return to;
}

nlohmann::json deal_rows(CoordinatorSession& session, int lost, const std::vector<int>& takers,
                         const std::function<std::uint64_t(int)>& from_epoch) {
  const auto& plan = session.plan();
  const auto l = static_cast<std::size_t>(lost);
  // Every taker reads the lost shard and keeps rows k, k + m, k + 2m, ... of it (share k of
  // m): no data is dropped for the rest of training, and the split needs no row index.
  auto to = deal_shares(session, takers, source_for(plan, l), plan.segments[l], from_epoch,
                        {{"lost_rank", lost}});
  for (const auto& t : to) {
    session.result().workers[t["rank"].get<std::size_t>()].rows += t["rows"].get<std::uint64_t>();
  }
  return to;
}

void CoordinatorSession::raise_worker_error(int rank, const protocol::WorkerError& error) {
  // Bad data found by a worker is still bad input (exit 2), but the message says whose rows.
  if (error.exit_code == static_cast<int>(ExitCode::kBadInput)) {
    throw DataError(fmt::format("worker {} (pid {}): {}", rank, pool_.pid_of(rank), error.message));
  }
  lose_worker(rank, "failed: " + error.message);
}

void CoordinatorSession::note_late_exit(const ChildExit& exit) {
  if (exit.status.success()) return;
  // The model is complete, but a worker that ends badly after its work (a sanitizer report,
  // a crash in teardown) is a bug worth seeing.
  result_.warnings.push_back(fmt::format("worker {} (pid {}) {} after it finished", exit.rank,
                                         exit.pid, exit.status.describe()));
  log::warn("{}", result_.warnings.back());
}

void CoordinatorSession::check_workers() {
  stragglers_.check(heartbeat_, result_);  // the idle path of every wait
  auto exits = std::move(pending_exits_);
  pending_exits_.clear();
  for (auto& exit : pool_.poll()) exits.push_back(exit);
  for (std::size_t k = 0; k < exits.size(); ++k) {
    try {
      check_exit(exits[k]);
    } catch (...) {
      // A loss handler may throw out of here (a ring re-forms): the exits not looked at yet are
      // kept for the next check, so a second worker lost at the same moment is seen at once.
      pending_exits_.insert(pending_exits_.end(), exits.begin() + static_cast<std::ptrdiff_t>(k + 1),
                            exits.end());
      throw;
    }
  }
}

void CoordinatorSession::check_exit(const ChildExit& exit) {
  if (exits_expected_) {
    note_late_exit(exit);
    return;
  }
  if (!is_alive(exit.rank) || exit.pid != pool_.pid_of(exit.rank)) {  // handled
    if (has_left(result_.membership, exit.rank)) note_late_exit(exit);  // a leaver exits 0
    return;
  }
  // Give an error report the worker sent just before exiting a moment to arrive: it says more
  // than the exit code. Other workers' messages read meanwhile wait for their gather.
  std::optional<protocol::WorkerError> error;
  bool left = false;  // its planned leave (elastic), read after its exit
  const auto is_its_error = [&](const transport::Incoming& in) {
    try {
      const auto e = protocol::decode(in.message, job_id_);
      if (static_cast<int>(e.rank) != exit.rank) return false;
      left = left || e.type == protocol::Type::kLeave;
      if (e.type != protocol::Type::kError) return left;
      error = protocol::read_error(e);
      return true;
    } catch (const ProtocolError&) {
      return false;
    }
  };
  std::erase_if(stash_, is_its_error);
  const auto until = deadline_in(std::chrono::milliseconds(200));
  while (!error && !left) {
    auto in = listener_.receive(until);
    if (!in) break;
    if (!is_its_error(*in)) stash_.push_back(std::move(*in));
  }
  if (left) {
    worker_left(exit.rank, false);
    return;
  }
  if (error) {
    raise_worker_error(exit.rank, *error);
    return;
  }
  // No report in time (a loaded machine can hold it past the wait), but the exit code says
  // bad input: still exit 2, with the worker's own words from its log.
  if (exit.status.signal == 0 && exit.status.code == static_cast<int>(ExitCode::kBadInput)) {
    std::string words = pool_.last_words(exit.rank);
    if (const auto at = words.rfind("error: "); at != std::string::npos) {
      words = words.substr(at + 7);
      if (const auto end = words.find('\n'); end != std::string::npos) words.resize(end);
    }
    if (words.empty()) {
      words = exit.status.describe() + " (bad input; its report did not arrive: see its log in "
              "the run's workers/ folder)";
    }
    raise_worker_error(exit.rank, {"data", words, static_cast<int>(ExitCode::kBadInput)});
    return;
  }
  lose_worker(exit.rank, exit.status.describe());
}

}  // namespace dt::roles
