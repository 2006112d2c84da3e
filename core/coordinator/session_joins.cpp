// CoordinatorSession's joins (fault_tolerance.elastic, docs/elastic.md): a worker started with
// `disttrain worker --connect ADDR --join` says hello (job 0, `join`) at any time; every wait of
// the session queues that hello (take_join_hello), and the mode's admit_joiners, at the next
// step boundary, gives it a free rank slot, sends it the config (no rows yet), the
// normalization and classes, and adds it to alive(): the next step's request carries the
// parameters, so it trains from that step. Its rows come at the next epoch: replan_rows deals
// every training row among the members (member k of m keeps rows k, k + m, ... of the plan's
// shards in rank order), so each row is in every epoch exactly once.

#include "core/coordinator/members_file.hpp"
#include "core/coordinator/membership.hpp"
#include "core/coordinator/session.hpp"
#include "core/coordinator/tensor_plan.hpp"
#include "core/coordinator/worker_pool.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"

#include <algorithm>
#include <thread>

namespace dt::roles {

using transport::deadline_in;

void CoordinatorSession::set_joiner_setup(protocol::Envelope setup) {
  joins_.setup = std::move(setup);
  joins_.used.assign(static_cast<std::size_t>(ranks()), false);
  joins_.taken_over.assign(static_cast<std::size_t>(ranks()), false);
  std::fill_n(joins_.used.begin(), plan_.starting_ranks(), true);
}

bool CoordinatorSession::joins_by_itself(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  // (A join slot held by this process's child, started again on --resume, is not.)
  return (rank >= plan_.starting_ranks() - config_.transport.remote_workers &&
          rank < plan_.starting_ranks()) ||
         (r < joins_.taken_over.size() && joins_.taken_over[r]);
}

bool CoordinatorSession::take_join_hello(transport::Incoming& in) {
  const auto& header = in.message.header;
  if (header.job_id != 0 || header.type != static_cast<std::uint16_t>(protocol::Type::kHello)) {
    return false;
  }
  protocol::Hello hello;
  try {
    hello = protocol::read_hello(protocol::decode(in.message, 0));
  } catch (const ProtocolError&) {
    return false;
  }
  if (!hello.join) return false;  // a replacement's hello: await_from's
  if (!config_.fault_tolerance.elastic) {  // (with it, a hello before training waits queued)
    refuse_joiner({in.peer, hello}, "this run admits no joiners: it has no "
                  "fault_tolerance.elastic (its config would need elastic: {max_workers: N})", 2);
    return true;
  }
  if (!config::admits_joiners(config_)) {
    refuse_joiner({in.peer, hello}, fmt::format("workers may join a run of {} yet; this run can "
                                                "only lose workers (docs/elastic.md)",
                                                config::joinable_modes()), 2);
    return true;
  }
  // A joiner says hello every second until its setup comes: once queued (or admitted), again.
  for (const auto& p : joins_.pending) {
    if (p.peer == in.peer) return true;
  }
  for (int r = 0; r < ranks(); ++r) {
    if (addresses_.identity(r) == in.peer) return true;
  }
  log::info("a worker asks to join (pid {} on {}); it is admitted at the next step boundary",
            hello.pid, hello.host);
  joins_.pending.push_back({in.peer, hello});
  return true;
}

void CoordinatorSession::drain_joiners() {
  std::erase_if(stash_, [this](transport::Incoming& in) { return take_join_hello(in); });
  while (auto in = listener_.receive(transport::Clock::now())) {
    if (!take_join_hello(*in)) stash_.push_back(std::move(*in));
  }
}

void CoordinatorSession::refuse_joiner(const PendingJoin& joiner, const std::string& why,
                                       int exit_code) {
  log::warn("refused a worker asking to join (pid {} on {}): {}", joiner.hello.pid,
            joiner.hello.host, why);
  const auto error =
      protocol::make_error({"config", "refused this worker's join: " + why, exit_code});
  try {  // it exits with these words; it may be gone already
    listener_.send(joiner.peer, protocol::encode(error, 0), deadline_in(kSendDeadline));
  } catch (const TransportError&) {
  }
}

void CoordinatorSession::admit_joiners(std::uint64_t step) {
  const auto& elastic = config_.fault_tolerance.elastic;
  if (!elastic) return;
  drain_joiners();
  const auto& at = elastic->admit_at_steps;
  const bool below = static_cast<int>(alive_.size()) < elastic->min_workers;
  if (at.empty() || below) {
    while (!joins_.pending.empty()) {
      const auto joiner = joins_.pending.front();
      joins_.pending.pop_front();
      (void)admit(joiner, step);
    }
    if (below) check_min_workers(fmt::format("after step {}", step));
    return;
  }
  // Testing (admit_at_steps): one joiner at each listed step, waited for, admitted or refused
  // (a refusal is what a test of max_workers needs to see at a fixed step); none in between.
  auto& next = joins_.next_admit;
  while (next < at.size() && static_cast<std::uint64_t>(at[next]) < step) ++next;  // resumed
  if (next >= at.size() || static_cast<std::uint64_t>(at[next]) != step) return;
  ++next;
  const auto timeout = std::chrono::milliseconds(elastic->join_timeout_ms);
  const auto deadline = deadline_in(timeout);
  for (;;) {
    while (!joins_.pending.empty()) {
      const auto joiner = joins_.pending.front();
      joins_.pending.pop_front();
      (void)admit(joiner, step);
      return;
    }
    if (transport::Clock::now() >= deadline) {
      fail<TimeoutError>("fault_tolerance.elastic.admit_at_steps: no worker joined after step {} "
                         "within join_timeout_ms = {} ms; start one with `disttrain worker "
                         "--connect {} --join`",
                         step, timeout.count(), listener_.endpoint());
    }
    supervise();  // Ctrl-C, the workers' exits and heartbeats while they idle
    std::this_thread::sleep_for(kPollSlice);
    drain_joiners();
  }
}

void CoordinatorSession::close_admissions() {
  if (!config_.fault_tolerance.elastic) return;
  drain_joiners();
  for (const auto& joiner : joins_.pending) {
    refuse_joiner(joiner, "the run finished training before a step boundary admitted it", 2);
  }
  joins_.pending.clear();
}

bool CoordinatorSession::admit(const PendingJoin& joiner, std::uint64_t step) {
  const auto& elastic = *config_.fault_tolerance.elastic;
  const auto& hello = joiner.hello;
  if (!hello.config_hash.empty() && hello.config_hash != config::config_hash(config_)) {
    refuse_joiner(joiner, "its config differs from the coordinator's; join with the same config "
                  "file, or without --config (it then takes the coordinator's)", 2);
    return false;
  }
  if (static_cast<int>(alive_.size()) >= elastic.max_workers) {
    refuse_joiner(joiner, fmt::format("the run has {} workers, its "
                                      "fault_tolerance.elastic.max_workers; raise max_workers, or "
                                      "join when a worker has left",
                                      alive_.size()), 2);
    return false;
  }
  // The slot: the one asked for (--rank) if free; else the lowest never used, so that while
  // there are such a rank names one process over the run (its worker_stats, its log); else the
  // lowest a worker left (or was lost from).
  int slot = -1;
  if (hello.rank != protocol::kAnyRank) {
    const auto asked = static_cast<int>(hello.rank);
    if (hello.rank >= static_cast<std::uint32_t>(ranks()) || is_alive(asked)) {
      refuse_joiner(joiner, fmt::format("rank {} is not free (the run's ranks are 0 to {}; free "
                                        "now: those not training); leave --rank out to take "
                                        "the lowest free one",
                                        hello.rank, ranks() - 1), 2);
      return false;
    }
    slot = asked;
  }
  for (int r = 0; r < ranks() && slot < 0; ++r) {
    if (!joins_.used[static_cast<std::size_t>(r)]) slot = r;
  }
  for (int r = 0; r < ranks() && slot < 0; ++r) {
    if (!is_alive(r)) slot = r;
  }
  const auto r = static_cast<std::size_t>(slot);
  const bool was_taken = joins_.taken_over[r];
  const std::string before = addresses_.identity(slot);
  addresses_.set_identity(slot, joiner.peer);
  joins_.taken_over[r] = true;
  pool_.taken_over(slot, hello.pid);
  // Bounded like any worker's silence: a joiner that connects but does not complete its
  // admission is given up, and the run goes on without it.
  const auto deadline =
      deadline_in(std::chrono::milliseconds(config_.fault_tolerance.worker_timeout_ms));
  try {
    auto setup = joins_.setup;
    setup.fields["rank"] = slot;
    listener_.send(joiner.peer, protocol::encode(std::move(setup), job_id_),
                   deadline_in(kSendDeadline));
    (void)await_from(slot, protocol::Type::kLoaded, deadline, "the worker joining as");
    listener_.send(joiner.peer, protocol::encode(finalizes_.at(0), job_id_),
                   deadline_in(kSendDeadline));
    const auto ready = await_from(slot, protocol::Type::kReady, deadline, "the worker joining as");
    if (const auto it = ready.fields.find("peer_endpoint");  // the ring re-forms with it
        it != ready.fields.end() && it->is_string()) {
      addresses_.replace_endpoint(r, it->get<std::string>());
    }
  } catch (const InterruptedError&) {
    throw;
  } catch (const Error& e) {
    log::warn("a worker asking to join (pid {} on {}) did not complete its admission: {}; the "
              "run goes on without it",
              hello.pid, hello.host, e.what());
    refuse_joiner(joiner, fmt::format("it did not complete its admission: {}", e.what()), 3);
    addresses_.set_identity(slot, before);
    joins_.taken_over[r] = was_taken;
    return false;
  }
  while (result_.workers.size() <= r) {  // pid 0: a slot no worker took (not in worker_stats)
    result_.workers.push_back({static_cast<int>(result_.workers.size()), 0, {}, 0, {}});
  }
  for (auto& event : result_.membership["events"]) {  // a leaver's rows, before its slot goes
    if (event["event"] == "leave" && event["rank"] == slot && !event.contains("reassigned")) {
      event["rows_held"] = result_.workers[r].rows;
    }
  }
  result_.workers[r] = {slot, hello.pid, hello.host, 0, {}};
  alive_flag_[r] = true;
  alive_.insert(std::upper_bound(alive_.begin(), alive_.end(), slot), slot);
  // A new membership, a new generation: a ring re-formed with the joiner is a new group even
  // when its members are those of an earlier ring (a join into a leaver's slot).
  ++generation_;
  std::erase(lost_unassigned_, slot);  // its old holder's rows: dealt by the re-plan with all
  heartbeat_.forget(slot);             // silent since its admission until it pings
  joined_ms_[r] = steady_ms();
  last_request_[r] = nullptr;
  last_request_step_[r] = 0;
  last_request_type_[r] = protocol::Type::kSetup;
  last_request_generation_[r] = generation_;
  answered_[r] = {};
  joins_.used[r] = true;
  joins_.replan = true;
  result_.membership["events"].push_back({{"event", "join"},
                                          {"rank", slot},
                                          {"pid", hello.pid},
                                          {"step", step},
                                          {"workers", alive_.size()}});
  if (members_file_) members_file_->mark_stale();  // listed once it trains (members_file.hpp)
  log::notice("worker {} joined the run (pid {} on {}) after step {}: {} workers train from "
              "step {}; it is dealt rows from the next epoch",
              slot, hello.pid, hello.host, step, alive_.size(), step + 1);
  return true;
}

nlohmann::json deal_shares(CoordinatorSession& session, const std::vector<int>& members,
                           const data::SourceInfo& source,
                           const std::vector<data::Segment>& segments,
                           const std::function<std::uint64_t(int)>& from_epoch,
                           const nlohmann::json& fields) {
  for (std::size_t k = 0; k < members.size(); ++k) {
    // A member gone since (a re-plan dealt again on --resume) keeps its share: none is sent.
    if (!session.is_alive(members[k])) continue;
    const auto epoch = from_epoch(members[k]);
    auto e = protocol::make_setup({"", "", source, segments});
    e.type = protocol::Type::kReassign;
    e.step = epoch;
    e.fields.update(fields);
    e.fields["share"] = k;
    e.fields["shares"] = members.size();
    e.fields["from_epoch"] = epoch;
    session.send_to(members[k], std::move(e));
  }
  nlohmann::json to = nlohmann::json::array();
  for (const auto& a : session.gather_from(protocol::Type::kReassigned, members)) {
    to.push_back({{"rank", a.rank}, {"rows", protocol::count(a, "rows")}});
  }
  return to;
}

std::vector<data::Segment> rows_in_plan_order(const Plan& plan) {
  std::vector<data::Segment> every;
  for (int r = 0; r < plan.starting_ranks(); ++r) {
    const auto& s = plan.segments[static_cast<std::size_t>(r)];
    every.insert(every.end(), s.begin(), s.end());
  }
  return every;
}

// Every training row dealt among the members, from `epoch`; or, with `from` (parameters mode,
// whose workers count their own epochs), each member from its own from(rank), recorded in its
// `to` entry, `epoch` being the earliest.
void CoordinatorSession::replan_rows(std::uint64_t epoch,
                                     const std::function<std::uint64_t(int)>& from) {
  const std::vector<int> waiting = lost_unassigned_;  // one that leaves during the deal stays
  const std::vector<int> members = alive_;
  std::function<std::uint64_t(int)> each = [epoch](int) { return epoch; };
  if (from) each = from;
  auto to = deal_every_row(*this, members, each);
  // For a checkpoint (resume_membership.cpp): the same re-plan, again, on --resume.
  nlohmann::json record = {{"replan", true}, {"from_epoch", epoch}, {"to", members}};
  if (from) {
    for (auto& t : to) t["from_epoch"] = from(t["rank"].get<int>());
    record["from_epochs"] = nlohmann::json::array();
    for (const int m : members) record["from_epochs"].push_back(from(m));
  }
  dealt_.push_back(std::move(record));
  // The events since the last re-plan: joins get the new plan, leaves (and workers lost under
  // continue) the rows they held, now dealt with every other row. (A run without elastic
  // re-plans too, after a second loss under continue, and has no membership record.)
  const nlohmann::json replanned = {{"from_epoch", epoch}, {"to", to}};
  auto no_events = nlohmann::json::array();
  auto& events = result_.membership.is_null() ? no_events : result_.membership["events"];
  for (auto& event : events) {
    const int rank = event.value("rank", -1);  // none in a resize or resume event
    if (event["event"] == "join" && !event.contains("replanned")) event["replanned"] = replanned;
    const bool waited = std::find(waiting.begin(), waiting.end(), rank) != waiting.end();
    if (event["event"] == "leave" && waited && !event.contains("reassigned")) {
      const auto held =
          event.value("rows_held", result_.workers[static_cast<std::size_t>(rank)].rows);
      event.erase("rows_held");
      event["reassigned"] = {{"from_epoch", epoch}, {"rows", held}, {"to", to}};
    }
  }
  for (auto& f : result_.failures) {
    if (f["action"] == "continue" && !f.contains("reassigned")) {
      f["reassigned"] = {{"from_epoch", epoch}, {"to", to}};
    }
  }
  for (const auto& t : to) {
    result_.workers[t["rank"].get<std::size_t>()].rows = t["rows"].get<std::uint64_t>();
  }
  log::notice("re-planned the rows for {} workers from epoch {}: every training row is dealt "
              "among workers {}",
              members.size(), epoch + 1, fmt::join(members, ", "));
  joins_.replan = false;
  joins_.replanned = true;
  std::erase_if(lost_unassigned_, [&](int r) {
    return std::find(waiting.begin(), waiting.end(), r) != waiting.end();
  });
}

nlohmann::json deal_every_row(CoordinatorSession& session, const std::vector<int>& members,
                              const std::function<std::uint64_t(int)>& from_epoch) {
  const auto& plan = session.plan();
  return deal_shares(session, members, source_for(plan, 0), rows_in_plan_order(plan), from_epoch,
                     {{"replan", true}});
}

}  // namespace dt::roles
