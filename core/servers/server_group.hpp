#pragma once
// The coordinator's end of the parameter servers as the modes use them: ServerGroup starts the
// K server threads on the slices of the session's parameters, announces their endpoints to the
// workers, waits on them under the session's supervision, replaces a failed one, gathers the
// final parameters and their statistics. The workers' end is core/worker/server_client.hpp.
//
// core/servers/: the parameter servers (threads of the coordinator process), their group, their
// state and their recovery.
// May use: base/, transports/, core/config/, core/models/, core/protocol/, core/coordinator/ (the
// session that supervises them).

#include "core/servers/param_server.hpp"
#include "core/servers/server_state.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace dt::transport {
class Connection;
}

namespace dt::checkpoint {
struct Checkpoint;
}

namespace dt::roles {

class CoordinatorSession;

struct AsyncServing {
  std::vector<std::uint64_t> worker_steps;  // steps each worker will push
  std::optional<int> max_staleness;
  bool staleness_lr = false;
  std::uint64_t snapshot_every = 0;  // see ServerOptions::snapshot_every
  std::uint64_t checkpoint_every = 0;  // see ServerOptions::checkpoint_every
  // A resumed run that re-plans (core/modes/async_resume.hpp): each worker's pushes counted so
  // far, instead of the checkpoint's (empty: the checkpoint's).
  std::vector<std::uint64_t> start_steps;
};

class ServerGroup {
 public:
  // Splits the session's parameters into config.aggregation.servers key ranges (ConfigError
  // when there are more servers than parameters) and starts one server per range. Synchronous
  // rounds without `async`.
  // `from`: a resumed run's checkpoint (sync mode), whose servers' optimizer states and round
  // count the servers continue from (the parameters are the session's already).
  ServerGroup(CoordinatorSession& session, std::optional<AsyncServing> async,
              const checkpoint::Checkpoint* from = nullptr);

  [[nodiscard]] const std::vector<KeyRange>& ranges() const noexcept { return ranges_; }
  // Sends every worker the servers' endpoints (a `servers` message).
  void announce();
  // ---- Failed servers (server_recovery.cpp). check() finds a server that failed (an error,
  // its thread ended, or hung past fault_tolerance.worker_timeout_ms) and reports it in one line
  // and in summary.json `failures` ({"server": k, ...}). Then, by on_worker_failure:
  //   abort:             TrainingError (exit 3); the stop checkpoint reads that server's slice
  //                      from the last copy;
  //   restart, continue: a replacement (one of max_restarts) starts from the last copy of the
  //                      server's state on a new endpoint, and the workers are told
  //                      (kServerMoved); they send it again what it lacks (ServerClient).
  // Call it from every wait of the coordinator on the workers or the servers.
  void check();
  // Sync: copies every server's state after `version` rounds; call it at each round boundary
  // (every server is at `version` and idle). A replacement redoes the round in progress.
  void keep(std::uint64_t version);
  // (Async servers leave their copy themselves, every `workers` updates: the updates applied to
  // a slice since its copy are lost when its server fails.)
  // Seconds spent copying (keep, and the async servers' copies), and servers replaced so far.
  [[nodiscard]] double keep_seconds() const;
  [[nodiscard]] int replacements() const noexcept { return replacements_; }
  // That message, for one worker (a replacement) to be sent with fields of its own.
  [[nodiscard]] protocol::Envelope servers_message() const;
  // Waits until every server's version reaches `version`, supervising the workers meanwhile;
  // TimeoutError after `timeout_ms` (the servers' own timeouts fire first in sync mode).
  void wait_version(std::uint64_t version, std::int64_t timeout_ms);
  // The current parameters, assembled from every server's slice.
  void copy_params(std::vector<double>& params) const;
  // The parameters right after update `version` (async: a multiple of snapshot_every or the
  // last), from every server's snapshot; the current ones for a server that kept none.
  void copy_params_at(std::uint64_t version, std::vector<double>& params);
  // Adds every server's state after `version` rounds to a checkpoint ("parameters" assembled,
  // "server.<k>.optimizer"); false when a server is at neither that version nor the next.
  [[nodiscard]] bool save_state(std::uint64_t version, checkpoint::Checkpoint& out) const;
  // Server 0's applied updates since the last call (async mode's loss log).
  [[nodiscard]] std::vector<AppliedUpdate> take_log();
  // Each server's stats; the compression counts (half_values, half_bytes, topk_entries) add
  // those of the range's replaced servers, whose frames travelled too.
  [[nodiscard]] std::vector<ServerStats> stats() const;
  void stop();

  // ---- Lost workers (fault_tolerance.on_worker_failure; see ParameterServer::drop_worker and
  // replace_worker): every server forgets `rank` (continue) or expects its replacement
  // (restart). Returns what each server answered: the rank's pushes it applied (async), its
  // round (sync).
  [[nodiscard]] std::vector<std::uint64_t> lose_worker(int rank, bool replaced);
  // Sync, a run resumed without the ranks that had left (elastic, resume_membership.hpp): every
  // server forgets them before the first round, so no round waits for their pushes.
  void forget_departed();
  // fault_tolerance.elastic, sync: a worker joined as `rank` between two rounds; every server
  // waits for its pushes from the round in progress on (ParameterServer::replace_worker).
  void admit_worker(int rank);
  // The ranks dropped so far (continue, a leave, and sync: the slots no worker holds at the
  // start): a server started later, to take over a failed one, must be told of them
  // (drop_worker) or its synchronous rounds would wait for them.
  [[nodiscard]] const std::vector<int>& dropped() const noexcept { return dropped_; }
  // Async continue: lose_worker(rank, false), and server 0 deals the rank's rows (`deal`: the
  // kReassign message of its shard) to the survivors it will send a slice again
  // (ParameterServer::drop_worker_dealing), listed in `dealt_to`.
  [[nodiscard]] std::vector<std::uint64_t> drop_worker_dealing(int rank, protocol::Envelope deal,
                                                               std::vector<int>& dealt_to);
  // Async elastic joins (core/modes/async_joins.cpp): server 0 deals `deal` (every training
  // row, "joiner": its rank) among the workers it will send a slice again and the joiner (the
  // ranks, ascending; ParameterServer::deal_replan); join_worker tells every server that the
  // joiner's slot starts afresh with a plan of `steps`.
  [[nodiscard]] std::vector<int> deal_replan(protocol::Envelope deal);
  void join_worker(int rank, std::uint64_t steps);
  // Sync: the parameters at the start of round `round`, while every server is at that round or
  // has just applied it (a replacement redoes the round from there). TrainingError otherwise.
  void copy_params_of_round(std::uint64_t round, std::vector<double>& params) const;
  // Async: waits until every server has applied its total_steps() (which lost workers lower),
  // supervising the workers meanwhile; TimeoutError after `timeout_ms`.
  void wait_all_applied(std::int64_t timeout_ms);
  // Async, training.early_stopping: every server (and any replacement started later) answers
  // the workers with kEnd from now on (ParameterServer::end_training). Idempotent.
  void end_training();
  [[nodiscard]] bool ended() const noexcept { return ended_; }
  // Async: waits up to `wait` for server 0 (whose log the coordinator reads) to reach `version`.
  [[nodiscard]] bool wait_update(std::uint64_t version, std::chrono::milliseconds wait);
  // [{"index", "keys": [begin, end], "bytes_received", "bytes_sent", "messages_received",
  //   "messages_sent", "version"}, ...]
  [[nodiscard]] nlohmann::json servers_json() const;

 private:
  CoordinatorSession& session_;
  bool timeline_taken_ = false;  // stop() added the servers' tracks to the run's timeline
  std::vector<KeyRange> ranges_;
  std::vector<std::unique_ptr<ParameterServer>> servers_;
  std::shared_ptr<NormExchange> norms_;  // sync clip_norm: the servers' partial norms
  std::vector<std::uint64_t> start_steps_;  // a resumed async run: each worker's steps done

  // Failed servers (server_recovery.cpp).
  void lose_server(std::size_t k, const std::string& cause);
  void copy_kept(std::size_t k, std::vector<double>& params) const;
  std::vector<ServerState> copies_;             // the last copy of every server's state
  std::vector<std::shared_ptr<ServerCopy>> left_;  // async: the copies the servers leave
  std::vector<int> incarnations_;               // replacements of each key range
  std::vector<bool> lost_;                      // failed, not replaced (abort)
  std::vector<ServerStats> retired_;  // traffic and compression counts of each range's failed servers
  double keep_seconds_ = 0;
  int replacements_ = 0;
  std::vector<int> dropped_;                // lost under continue
  bool ended_ = false;                      // end_training() was called
};

}  // namespace dt::roles
