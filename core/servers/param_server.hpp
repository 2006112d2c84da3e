#pragma once
// Parameter servers (aggregation.servers: K, and async mode). Each server owns one contiguous
// key range of the parameter vector with its own optimizer state for that slice (the
// optimizers and the L2 term are elementwise, so slicing is exact), and runs as a thread of the
// coordinator process with its own Listener on the run's transport. Workers connect to every
// server under their usual identity ("w3"):
//
//   worker -> server  pull   (async: "I want to start my next step"; sync: "send me the start")
//   worker -> server  push   gradient SUM of my batch for your keys + rows + loss sum
//                            + the version of your slice it was computed from
//   server -> worker  slice  your keys of the current parameters + their version
//
// Synchronous rounds (gradients mode): a server waits for every worker's push of the round,
// adds them in rank order, divides by the round's total rows (the sum of the rows the pushes
// carry, the same integer the coordinator sums), adds the L2 term, takes one optimizer step
// and sends the new slice to every worker. Version = rounds done.
// Asynchronous (async mode): each push is applied at once, divided by its own rows; the
// reply (the next pull) is held while the stale-synchronous bound forbids the worker to start
// its next step. Version = pushes applied.
//
// Liveness: a server waits for workers as long as the coordinator lets it: the coordinator
// supervises the workers (exits, heartbeats) and bounds its own waits on the servers; every
// socket wait of a server is a short poll that also watches for the stop.
//
// Threading: the server thread owns the socket and the optimizer; the coordinator thread reads
// the slice, the version, the update log and the statistics under the mutex, and learns of a
// failed server through check() (the failure is also kept for the summary).

#include "core/config/config.hpp"
#include "core/models/next_values.hpp"  // and optim.hpp
#include "core/models/sparse_batch.hpp"
#include "core/protocol/protocol.hpp"
#include "core/protocol/faults.hpp"
#include "core/servers/server_options.hpp"
#include "core/servers/server_state.hpp"
#include "transports/transport.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace dt::roles {

class CoordinatorSession;
class ParameterServer {
 public:
  ParameterServer(transport::Transport& transport, ServerOptions options,
                  std::vector<double> slice);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;
  [[nodiscard]] const std::string& endpoint() const noexcept { return endpoint_; }
  [[nodiscard]] const ServerOptions& options() const noexcept { return options_; }
  // Waits up to `wait` for the version to reach `version`; true when it has.
  [[nodiscard]] bool wait_version(std::uint64_t version, std::chrono::milliseconds wait);
  // Writes its keys of the current parameters into params[range]; false when killed (wiped).
  bool copy_slice(std::span<double> params) const;
  // Writes this server's keys as they were right after update `version` (a snapshot kept by
  // options().snapshot_every) into params[range] and drops the snapshots up to it; false when
  // there is no such snapshot (or the server was killed).
  [[nodiscard]] bool take_snapshot(std::uint64_t version, std::span<double> params);
  void check() const;  // TrainingError naming the server when its thread has failed
  // The state after `version` updates. Sync: the current one (the one before the latest round,
  // which a checkpoint after a stop may ask for while a round is being applied, is the
  // coordinator's copy: ServerGroup::keep). Async: the one kept at that version
  // (options().checkpoint_every), older ones dropped. nullopt otherwise.
  [[nodiscard]] std::optional<ServerState> state_at(std::uint64_t version) const;
  // The same state read where it lies (a wide model's checkpoint copies only what it keeps):
  // sync under the lock, async taken from the kept states and read without it; false: none.
  bool read_state_at(std::uint64_t version, const StateReader& read) const;
  [[nodiscard]] std::vector<AppliedUpdate> take_log();
  [[nodiscard]] ServerStats stats() const;
  void stop();  // stops the thread and joins it (idempotent)

  // ---- Failure (param_server_failure.cpp). Why this server can serve no more, or nullopt:
  // its thread failed (an error), ended without being stopped (a crash; the injected kill), or
  // has not polled its socket for more than `timeout_ms` (hung). Any thread.
  // The text says what happened, not which server ("stopped: its thread ended without a word").
  [[nodiscard]] std::optional<std::string> failure(std::int64_t timeout_ms) const;
  [[nodiscard]] std::string name() const;  // "parameter server 1 (keys [6, 11))"
  // The state now, consistent (taken under the lock the updates hold), into `out` (its buffers
  // reused: one memory copy): the coordinator's copy a replacement would start from.
  void capture(ServerState& out) const;
  // ---- Lost workers (fault_tolerance.on_worker_failure; param_server_workers.cpp). Called by
  // the coordinator thread: the server thread takes the news in at its next poll slice, and
  // the call waits for that (TrainingError when the thread has failed, TimeoutError past
  // `wait`). Both return the rank's pushes this server has applied (async) or its round (sync).
  //   drop_worker (continue): the rank's later messages are ignored. A synchronous round
  //     completes with the pushes of the others (one of the lost worker's that already arrived
  //     is kept: the round divides by the rows it got); the step clock no longer waits for it
  //     and its steps not done leave total_steps() (async).
  //   replace_worker (restart; sync: also a joiner, elastic, counted from the round in
  //     progress): a replacement redoes the rank's first push this server may lack, so every
  //     (rank, round) or (rank, step) is applied exactly once: a push of one
  //     already applied is a duplicate, dropped and answered with the current slice (async:
  //     it also asks for the next step, as every push does). Async: its pull comes first; a
  //     push of the lost worker still on its way before that pull is dropped.
  [[nodiscard]] std::uint64_t drop_worker(int rank, std::chrono::milliseconds wait);
  [[nodiscard]] std::uint64_t replace_worker(int rank, std::chrono::milliseconds wait);
  // Async continue: drop_worker, and deal the lost worker's rows (`deal`: the kReassign
  // message for its shard) to the survivors sure to get another slice from this server (held,
  // or with a step to push that is not their last): share k of those m rides on the next slice
  // each is sent ("reassign" fields, the segments as a second array). Returns the rank's
  // applied pushes and the ranks dealt to, ascending (none: no survivor will ask again).
  struct Dealt { std::uint64_t applied = 0; std::vector<int> to; };
  [[nodiscard]] Dealt drop_worker_dealing(int rank, protocol::Envelope deal,
                                          std::chrono::milliseconds wait);
  // Async joins: join_worker starts `rank`'s slot afresh (its clock at 0 of `steps`); deal_replan
  // deals `deal` (every row) as above among those and its "joiner" (whose share is sent apart).
  void join_worker(int rank, std::uint64_t steps, std::chrono::milliseconds wait);
  [[nodiscard]] std::vector<int> deal_replan(protocol::Envelope deal,
                                             std::chrono::milliseconds wait);
  [[nodiscard]] std::uint64_t total_steps() const;  // async: every plan, less lost steps
  // Async, training.early_stopping (param_server_end.cpp), any thread: training is over; held
  // pulls, then every push (not applied) or pull awaiting an answer, get kEnd, not a slice.
  void end_training() noexcept { end_asked_.store(true); }

 private:
  void loop(std::unique_ptr<transport::Listener> listener);
  void handle(const protocol::Envelope& e);
  void on_pull(const protocol::Envelope& e);
  void on_sync_push(const protocol::Envelope& e);
  void on_async_push(const protocol::Envelope& e);
  // Sync: sums the round; finish_round steps by `factor` (clip_norm: param_server_clip.cpp).
  void apply_round();
  void finish_round(double factor);
  void exchange_norm(std::chrono::milliseconds wait);
  // The summed round: waiting for its clip factor (clip_norm), its rows, its span's start.
  struct { bool waits = false; std::uint64_t rows = 0; std::int64_t start = 0; } round_;
  void release_held();
  void reply(int rank);
  // Sends `rank` a slice message (whole or keyed), with its dealt share when one waits.
  void send_slice(int rank, protocol::Envelope slice);
  // Failure (param_server_failure.cpp), on the server thread. An injected fault that fires at
  // this message: true when the thread is to end (kill, or a hang released by stop()).
  [[nodiscard]] bool injected_fault(const protocol::Envelope& e);
  // Async: a worker that reconnects to this replacement says how many steps it has pushed and
  // whether it waits for a slice; the updates this server lost are counted as done.
  void on_rejoin(const protocol::Envelope& e);
  // Async: after an update, under mu_: writes options().copy when one is due. Keyed pushes
  // only: after this server's first copy, only the offsets changed since the last one.
  void leave_copy();
  // Keyed async: the offsets stepped since the last copy (at most copy_every pushes' keys,
  // repeats and all), and whether the copy is this server's state but at them.
  std::vector<std::uint32_t> changed_;
  bool copy_in_part_ = false;
  // end_training on the server thread: take_end answers held pulls, screen_ended the rest.
  void take_end();
  [[nodiscard]] bool screen_ended(const protocol::Envelope& e);
  void send_end(int rank);
  std::atomic<bool> end_asked_{false};
  bool training_ended_ = false;  // thread-only
  // Lost workers (param_server_workers.cpp), on the server thread.
  [[nodiscard]] Dealt post_news(WorkerNews news, std::chrono::milliseconds wait);
  void take_news();
  [[nodiscard]] std::uint64_t forget_worker(int rank);
  [[nodiscard]] std::vector<int> deal_rows(protocol::Envelope deal);
  void admit_worker(int rank, std::uint64_t steps);  // a joiner's slot, afresh
  // Async: the worker's plan as a push states it (rows taken over lengthen it).
  void update_plan(const protocol::Envelope& e);
  [[nodiscard]] std::uint64_t readmit_worker(int rank);
  [[nodiscard]] bool round_complete() const;
  void note_missing();  // stats_.missing for the round in progress; takes mu_
  // True when the message was handled as (or dropped for) a lost or replaced worker.
  [[nodiscard]] bool screen_lost(const protocol::Envelope& e);
  // Keyed exchange (sparse rows): pulls and pushes name offsets into the slice (key frames);
  // param_server_keyed.cpp says how sync rounds and async pushes step and answer them.
  void start_keyed();
  void on_keyed_pull(const protocol::Envelope& e);
  void take_keyed_push(const protocol::Envelope& e);  // on_sync_push's part for a keyed push
  void sum_keyed_round();                 // into sums_ at touched_list_ (finish_round steps)
  void reply_keyed(int rank);
  void take_next_offsets(const protocol::Envelope& e);  // a keyed push's, for reply_keyed
  void take_pull_offsets(const protocol::Envelope& e);  // async: a keyed pull's or rejoin's
  // Async: a keyed push's offsets (into touched_list_) and its gradient sum at them.
  [[nodiscard]] std::span<const double> take_async_keyed_push(const protocol::Envelope& e);
  // Async, under mu_: the dense async apply at touched_list_ (rows > 0); f: the clip factor.
  void apply_keyed_push(std::span<const double> g, std::uint64_t rows, std::uint64_t s, double f);
  void send_values(int rank, std::span<const std::uint32_t> offsets, std::optional<wire::Bytes> = {});
  bool keyed_ = false;                                  // a keyed message has come
  std::vector<std::vector<std::uint32_t>> pending_offsets_;
  std::vector<std::vector<std::uint32_t>> next_offsets_;
  std::vector<bool> has_next_;
  std::vector<models::KeyedPart> parts_;  // the round's pushes, in rank order
  std::vector<std::uint32_t> touched_list_;
  std::vector<std::uint64_t> touched_index_;
  std::vector<double> sums_;
  models::NextValues next_values_;  // sync keyed: the next slices' values, read by the step
  // Under mu_: the coordinates the last keyed round stepped and the version it started from:
  // all capture() copies into a copy of that version (not the width, the keys, a round).
  std::vector<std::uint64_t> stepped_;
  std::uint64_t stepped_from_ = UINT64_MAX;
  transport::Listener* listener_ = nullptr;  // the thread's, while it runs
  ServerOptions options_;
  std::string endpoint_;
  std::unique_ptr<models::Optimizer> optimizer_;
  std::vector<double> slice_;  // written by the thread under mu_, read by others under mu_
  mutable std::map<std::uint64_t, ServerState> kept_;  // async: by version, for checkpoints; under mu_
  mutable ServerState spare_;  // the last of kept_ a checkpoint read (first: the start's copy)
  // Async, sparse rows, under mu_ (param_server_copies.cpp): the keys that may be nonzero (at
  // the start, stepped since; version UINT64_MAX after a dense push), where keep_state writes;
  // those stepped since the state kept last (at `since`: its version), which the steps mark.
  void start_marks();
  void keep_state();  // every checkpoint_every updates
  KeyMarks marks_;
  struct { KeyMarks stepped; std::uint64_t since = UINT64_MAX; std::vector<std::uint32_t> listed; } keys_;
  // Thread-only state.
  std::vector<std::vector<double>> pending_;  // sync: each rank's push of the current round
  std::vector<std::uint64_t> pending_rows_;
  std::vector<bool> have_;
  int received_ = 0;
  std::vector<double> grad_;
  std::vector<double> before_;
  std::optional<StepClock> clock_;
  std::vector<int> waiting_;  // async: ranks whose pull is held, in arrival order
  std::vector<bool> gone_;        // dropped (continue): their messages are ignored
  std::vector<bool> replaced_;    // restarted: duplicates of applied pushes are expected
  std::vector<bool> await_pull_;  // async restart: the replacement's pull has not come yet
  mutable std::mutex mu_;
  std::condition_variable cv_;
  ServerStats stats_;
  std::vector<AppliedUpdate> log_;
  std::map<std::uint64_t, std::vector<double>> snapshots_;  // by version; under mu_
  std::uint64_t total_steps_ = 0;                            // async: every worker's steps
  std::string error_;
  FaultInjector faults_;                 // thread-only
  bool dead_ = false;                    // killed by an injected fault: state_at has nothing; under mu_
  std::atomic<std::int64_t> beat_ms_{0};  // the thread's last poll of its socket
  std::atomic<bool> ended_{false};        // the thread has returned
  // Lost workers posted by the coordinator thread (WorkerNews), and the answers (by ticket).
  std::vector<WorkerNews> news_;                     // under mu_
  std::uint64_t news_posted_ = 0;                    // under mu_
  std::uint64_t news_taken_ = 0;                     // under mu_
  std::map<std::uint64_t, Dealt> answers_;           // under mu_
  std::map<int, protocol::Envelope> notices_;  // thread: a share of lost rows for the next slice
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace dt::roles
