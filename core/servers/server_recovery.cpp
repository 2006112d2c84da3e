// A parameter server that fails (sharded servers, async): the coordinator's copies of the
// servers' state, finding a failed server, the policy, starting a replacement from the copy.
// The workers' side of a replacement is ServerClient::on_moved (core/worker/server_client.cpp).
//
// Why the copy is exact in sync mode: the coordinator copies every server's slice, optimizer
// state and round count at each round boundary, when every server has applied the round and
// none can start the next (the workers wait for the coordinator's next step). A server that
// fails during round s therefore has a copy of the state before round s. Its replacement starts
// from that copy, and every worker sends it the push of round s again (the same bytes, kept by
// ServerClient): it adds them in rank order and steps its optimizer as the failed server would
// have, so the run ends with the same bits as one without the failure. A worker that had
// already received the failed server's answer to round s drops the replacement's repeat of it
// (a slice older than the round it waits for).
//
// Async mode has no round boundary: each server leaves a copy of its state with the coordinator
// every N updates (N workers: one update per worker, on average), and the updates it applied
// since (fewer than N, and the pushes on their way) are lost for its slice (they stay in the
// other slices). A worker reconnecting says how many steps it has pushed; the replacement counts
// the lost ones as done, so the run still ends after every worker's planned steps.

#include "core/servers/server_group.hpp"

#include "core/coordinator/session.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

namespace dt::roles {

using transport::Clock;
using transport::deadline_in;

namespace {

// A failed server's traffic and compression counts, added to those of its range's earlier ones
// (summary.json counts every frame that travelled, the replaced servers' too).
void retire_stats(ServerStats& into, const ServerStats& gone) {
  into.traffic.bytes_sent += gone.traffic.bytes_sent;
  into.traffic.bytes_received += gone.traffic.bytes_received;
  into.traffic.messages_sent += gone.traffic.messages_sent;
  into.traffic.messages_received += gone.traffic.messages_received;
  into.half_values += gone.half_values;
  into.half_bytes += gone.half_bytes;
  into.topk_entries += gone.topk_entries;
}

}  // namespace

void ServerGroup::check() {
  const std::int64_t timeout = session_.config().fault_tolerance.worker_timeout_ms;
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    if (auto cause = servers_[k]->failure(timeout)) lose_server(k, *cause);
  }
}

void ServerGroup::keep(std::uint64_t version) {
  const auto start = Clock::now();
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    servers_[k]->capture(copies_[k]);
    if (copies_[k].version != version) {
      fail<TrainingError>("internal error: {} is at update {} at the boundary of round {}",
                          servers_[k]->name(), copies_[k].version, version);
    }
  }
  keep_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
}

double ServerGroup::keep_seconds() const {
  double seconds = keep_seconds_;
  for (const auto& left : left_) {
    if (!left) continue;
    std::lock_guard lock(left->mu);
    seconds += left->seconds;
  }
  return seconds;
}

void ServerGroup::lose_server(std::size_t k, const std::string& cause) {
  const auto& ft = session_.config().fault_tolerance;
  auto& result = session_.result();
  const auto& failed = *servers_[k];
  const auto range = failed.options().range;
  const std::string line = fmt::format("parameter server {} (keys [{}, {}) on {}) {}; last "
                                       "completed step {}",
                                       k, range.begin, range.end, failed.endpoint(), cause,
                                       result.steps);
  nlohmann::json failure = {{"server", k},
                            {"keys", {range.begin, range.end}},
                            {"endpoint", failed.endpoint()},
                            {"cause", cause},
                            {"step", result.steps},
                            {"message", line}};
  if (left_[k]) {
    std::lock_guard lock(left_[k]->mu);  // async: the copy the server left
    copies_[k] = left_[k]->state;
  }
  const auto give_up = [&](const std::string& why) {
    failure["action"] = "abort";
    result.failures.push_back(std::move(failure));
    lost_[k] = true;
    servers_[k]->stop();  // a hung one must not come back to life
    throw TrainingError(line + why);
  };
  if (ft.on_worker_failure == config::FailurePolicy::kAbort) {
    give_up(fmt::format(" (fault_tolerance.on_worker_failure is abort; restart or continue "
                        "would start a new server from the copy of update {})",
                        copies_[k].version));
  }
  if (!session_.take_restart()) {
    give_up(fmt::format("; no restart left (fault_tolerance.max_restarts = {})", ft.max_restarts));
  }
  const auto& copy = copies_[k];
  log::warn("{}; starting a replacement from the copy of update {} ({} of at most {} restarts)",
            line, copy.version, session_.restarts(), ft.max_restarts);

  ServerOptions o = failed.options();
  o.faults.clear();  // as a replacement worker, it runs without the injected faults
  o.recorder.reset();  // output.timeline: a failed server's thread may still hold its recorder
  o.incarnation = ++incarnations_[k];
  o.start_version = copy.version;
  o.optimizer_state = copy.optimizer;
  if (o.asynchronous) o.start_completed = copy.worker_steps;
  servers_[k]->stop();
  retire_stats(retired_[k], servers_[k]->stats());
  servers_[k] = std::make_unique<ParameterServer>(session_.transport(), std::move(o), copy.slice);
  ++replacements_;
  auto& now = *servers_[k];
  // Workers lost under `continue` before the failure: the new server must not wait for them.
  for (const int rank : dropped_) (void)now.drop_worker(rank, std::chrono::milliseconds(5000));
  if (ended_) now.end_training();  // training.early_stopping: the end stands for it too

  failure["action"] = "restart";
  failure["restored_update"] = copy.version;
  failure["replacement_endpoint"] = now.endpoint();
  result.failures.push_back(std::move(failure));
  log::warn("parameter server {} is back on {} at update {}; training goes on", k,
            now.endpoint(), copy.version);
  protocol::Envelope moved{.type = protocol::Type::kServerMoved, .step = copy.version};
  moved.fields = {{"server", k}, {"endpoint", now.endpoint()}, {"version", copy.version}};
  session_.notify(std::move(moved));
}

}  // namespace dt::roles
