#pragma once
// CoordinatorSession: what a mode's coordinator half sees of the run: the config and plan, the
// parameters, the workers (messages to them, gathers of their replies, supervision, and the
// failure policy for the lost ones), the loss log and checkpoints. Built by run_coordinator
// (coordinator.cpp); its parts are in session.cpp (messages, gathers, the log),
// session_failures.cpp (lost workers), session_checkpoint.cpp (checkpoints, resume),
// session_membership.cpp (planned leaves) and session_joins.cpp (workers joining).

#include "core/config/config.hpp"
#include "core/coordinator/addresses.hpp"
#include "core/coordinator/evaluate.hpp"
#include "core/coordinator/joins.hpp"
#include "core/coordinator/launcher.hpp"
#include "core/coordinator/loss_window.hpp"
#include "core/coordinator/plan.hpp"
#include "core/coordinator/progress.hpp"
#include "core/coordinator/schedule.hpp"
#include "core/coordinator/stragglers.hpp"
#include "core/protocol/drop_log.hpp"
#include "core/protocol/protocol.hpp"
#include "base/error.hpp"
#include "transports/transport.hpp"

#include <nlohmann/json.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dt::roles {
class Checkpointer;
class HeartbeatServer;
class WorkerPool;

class CoordinatorSession {
 public:
  CoordinatorSession(const config::Config& config, const Plan& plan,
                     std::vector<double>& params, transport::Listener& listener,
                     WorkerPool& pool, HeartbeatServer& heartbeat, std::uint64_t job_id,
                     RunResult& result);

  [[nodiscard]] const config::Config& config() const noexcept { return config_; }
  [[nodiscard]] const Plan& plan() const noexcept { return plan_; }
  // Rank slots: the starting workers' and, with elastic, those joiners may take (plan.hpp).
  [[nodiscard]] int ranks() const noexcept { return static_cast<int>(plan_.shard_rows.size()); }
  // The coordinator's own model and the held-out rows (evaluate.hpp), for the modes.
  [[nodiscard]] Evaluation& evaluation() noexcept { return evaluation_; }
  [[nodiscard]] models::Model& model() noexcept { return evaluation_.model(); }
  [[nodiscard]] const data::Shard* validation() const noexcept { return evaluation_.validation(); }
  [[nodiscard]] std::vector<double>& params() noexcept { return params_; }
  [[nodiscard]] RunResult& result() noexcept { return result_; }
  [[nodiscard]] Schedule& schedule() noexcept { return schedule_; }  // steps, epochs, clock
  [[nodiscard]] const Schedule& schedule() const noexcept { return schedule_; }

  // ---- Lost workers (fault_tolerance.on_worker_failure). A worker that exits, reports an
  // error or stops heartbeating is reported in one line (rank, pid, host, cause, last step,
  // its log's tail), then (a planned leave, elastic: like continue): abort: the wait throws
  // TrainingError (exit 3); restart: a replacement is started under the same rank (up to
  // max_restarts), set up as at the start and sent the rank's last request again; continue:
  // the rank leaves alive(), the wait goes on without it, reassign_lost_rows deals its rows.
  // Ranks still training, ascending: the starting ones, less those gone, plus joiners.
  [[nodiscard]] const std::vector<int>& alive() const noexcept { return alive_; }
  [[nodiscard]] bool is_alive(int rank) const noexcept {
    return alive_flag_[static_cast<std::size_t>(rank)];
  }
  // What run_coordinator sent each rank to start it: replayed to a replacement.
  void set_startup(std::vector<protocol::Envelope> setups,
                   std::vector<protocol::Envelope> finalizes);
  // `continue` in gradients mode: deals the rows of the workers lost since the last call to
  // the survivors, who train on them from `epoch` on; after a join, re-deals every row among
  // the members instead (replan_rows). Call it before the first step of each epoch.
  void reassign_lost_rows(std::uint64_t epoch);
  // `continue` with tensor parallelism: a worker that cannot go on without a lost one (the
  // other slices of its replica) is stopped and dealt like a lost one, its rows only to the
  // surviving ranks of the same slice (they read the same columns).
  void drop_worker(int rank, const std::string& cause);
  // A mode that handles lost workers itself (a ring re-forms, servers forget a lost worker's
  // pushes) sets a handler, called once the rank is replaced (restart) or dropped (continue)
  // instead of re-sending the rank's last request (what star and parameters get). It may throw
  // to end the wait it was called from (a ring step that cannot finish).
  using LossHandler = std::function<void(int rank, config::FailurePolicy action)>;
  void set_loss_handler(LossHandler handler) { loss_handler_ = std::move(handler); }
  // A mode that dealt a lost worker's rows itself (async: through its servers) says so.
  void rows_dealt(int rank) { std::erase(lost_unassigned_, rank); }
  // Bumped at every lost worker handled; a reply from an earlier generation than its rank's
  // last request is dropped as stale.
  [[nodiscard]] std::uint32_t generation() const noexcept { return generation_; }
  // Counts one replacement (a worker's or a server's) against max_restarts; false when none
  // is left. restarts(): replacements so far.
  [[nodiscard]] bool take_restart() noexcept;
  [[nodiscard]] int restarts() const noexcept { return restarts_; }

  // One message (encoded once) to every worker still training, to each of `ranks`, to one.
  void broadcast(protocol::Envelope envelope);
  void broadcast(protocol::Envelope envelope, const std::vector<int>& ranks);
  void send_to(int rank, protocol::Envelope envelope);
  // Sends every worker still training a notice (kServerMoved): not a request (no reply, never
  // re-sent or replayed). A worker it cannot reach is left to the supervision of the waits.
  void notify(protocol::Envelope envelope);
  // One message of `type` from every rank still training, in rank order (each envelope's
  // `rank` says whose). Supervises while it waits: Ctrl-C ends the wait with an error; a lost
  // worker is handled by the failure policy (above). An overdue request of a worker that still
  // heartbeats is sent again; duplicate and stale replies are dropped. `on_idle` runs every
  // poll slice (~50 ms) without a message (parameter servers' checks). After Ctrl-C the wait
  // goes on for up to `grace`: the replies to a request of several steps are kept.
  [[nodiscard]] std::vector<protocol::Envelope> gather(
      protocol::Type type, const std::function<void()>& on_idle = {},
      std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  // One message of `type` from each of `ranks` (ascending) still training, in their order; the
  // other workers are still supervised (exits, heartbeats) while they idle.
  [[nodiscard]] std::vector<protocol::Envelope> gather_from(protocol::Type type,
                                                            const std::vector<int>& ranks);
  // One round of the supervision a gather does (Ctrl-C, exits, heartbeats), for modes that
  // wait on something else (parameter servers).
  void supervise();

  [[nodiscard]] transport::Transport& transport() const;  // for sockets of a mode's own (servers)
  void set_transport(transport::Transport& transport) noexcept { transport_ = &transport; }
  [[nodiscard]] std::uint64_t job_id() const noexcept { return job_id_; }
  [[nodiscard]] WorkerAddresses& addresses() noexcept { return addresses_; }  // addresses.hpp
  // A run that fails tells its workers that joined by themselves (its own children are
  // stopped by the pool), so that they exit at once saying why. Best effort, bounded.
  void end_joined_workers(const Error& why);

  // ---- Joins (elastic; session_joins.cpp). A joiner's hello (`worker --join`) is queued by
  // every wait; admit_joiners, called by the mode at each step boundary (`step` steps done),
  // admits the queued ones into free slots (refused above max_workers); close_admissions
  // refuses those still queued when training ends.
  void set_joiner_setup(protocol::Envelope setup);
  void admit_joiners(std::uint64_t step);
  void close_admissions();

  // After kReady: sends the workers their peer endpoints (kPeers); nothing for a star run.
  void share_peer_endpoints(const std::vector<protocol::Envelope>& ready);

  // Records a completed step's losses; writes a log row (with a validation pass) when due.
  void record_step(std::uint64_t step, double loss_sum, std::uint64_t rows,
                   const std::vector<double>& worker_loss_sum,
                   const std::vector<std::uint64_t>& worker_rows);
  void add_samples(std::uint64_t rows) noexcept { result_.samples += rows; }
  // From now on a worker that exits is finishing, not failing; note_late_exit records one
  // that exited badly after its work was done, as a warning.
  void expect_exits() noexcept { exits_expected_ = true; }
  void note_late_exit(const ChildExit& exit);

  void set_checkpointer(Checkpointer* checkpointer) noexcept { checkpointer_ = checkpointer; }
  // Steps already done when training starts: the checkpoint's step on a resumed run, else 0.
  [[nodiscard]] std::uint64_t first_step() const;
  // A mode reports the end of every step (`step` = steps completed): a checkpoint when due.
  void step_boundary(std::uint64_t step);
  [[nodiscard]] bool checkpoint_due(std::uint64_t step) const;  // will step_boundary write one?
  [[nodiscard]] std::uint64_t completed_step() const noexcept { return completed_step_; }
  // After a stop (Ctrl-C, a failure): the next `type` message from `rank`, skipping others;
  // nullopt after `timeout`. Does not stop on Ctrl-C (it serves the checkpoint of the stop).
  [[nodiscard]] std::optional<protocol::Envelope> receive_from(int rank, protocol::Type type,
                                                              std::chrono::milliseconds timeout);
  [[nodiscard]] const LossWindow& loss_window() const noexcept { return window_; }  // checkpoints
  void restore_log_window(const nlohmann::json& window, std::uint64_t step, double seconds,
                          const std::string& where);

 private:
  // Applies the failure policy to `rank`, lost for `cause`: throws under abort (and when
  // nothing can be done); returns once replaced or dropped.
  void lose_worker(int rank, const std::string& cause);
  // elastic (session_membership.cpp): `rank` left on purpose (kLeave), after the step in hand
  // when `after_step`; below min_workers, admits joiners up to join_timeout_ms, then throws.
  void worker_left(int rank, bool after_step);
  void check_min_workers(const std::string& why);
  [[nodiscard]] bool take_join_hello(transport::Incoming& in);  // queues a joiner's hello
  void drain_joiners();  // reads what the listener holds now (others' messages: stash_)
  [[nodiscard]] bool admit(const PendingJoin& joiner, std::uint64_t step);
  void refuse_joiner(const PendingJoin& joiner, const std::string& why, int exit_code);
  void replan_rows(std::uint64_t epoch);  // every training row dealt among the members
  [[nodiscard]] bool joins_by_itself(int rank) const;  // no child of this process
  void raise_worker_error(int rank, const protocol::WorkerError& error);
  void check_workers();
  void check_exit(const ChildExit& exit);  // one worker's exit, seen by check_workers
  [[nodiscard]] protocol::Envelope replace_worker(int rank);  // returns its ready message
  // The next message of `rank` of `type` while a replacement (`who`) starts; other ranks'
  // messages wait in stash_ for the gather they belong to.
  [[nodiscard]] protocol::Envelope await_from(int rank, protocol::Type type,
                                              transport::Clock::time_point deadline,
                                              const char* who = "the replacement for");
  // Ends `rank`'s worker at once: this process's child is killed, a joined one told to stop.
  void end_worker(int rank);
  // Whether `in` is the hello of a worker joining by itself to take `rank` (a replacement).
  [[nodiscard]] bool takes_rank(const transport::Incoming& in, int rank) const;
  [[nodiscard]] std::chrono::milliseconds join_timeout(int rank) const;
  [[nodiscard]] std::optional<transport::Incoming> next_message(transport::Clock::time_point until);
  [[nodiscard]] std::optional<protocol::Envelope> decode_or_drop(transport::Incoming& in,
                                                                std::uint64_t job);
  void send_request(int rank, std::shared_ptr<const wire::Message> message, protocol::Type type,
                    std::uint64_t step, std::uint32_t generation);
  [[nodiscard]] std::int64_t resend_after_ms() const;
  [[nodiscard]] std::vector<protocol::Envelope> gather_impl(protocol::Type type,
                                                            const std::vector<int>& wanted,
                                                            const std::function<void()>& on_idle,
                                                            std::chrono::milliseconds grace);

  const config::Config& config_;
  const Plan& plan_;
  Evaluation evaluation_;
  std::vector<double>& params_;
  transport::Listener& listener_;
  transport::Transport* transport_ = nullptr;
  Schedule schedule_{config_, plan_};
  WorkerPool& pool_;
  HeartbeatServer& heartbeat_;
  std::uint64_t job_id_;
  RunResult& result_;
  bool exits_expected_ = false;
  progress::TrainingLine progress_;  // the live or plain progress lines
  Checkpointer* checkpointer_ = nullptr;
  std::uint64_t completed_step_ = 0;
  LossWindow window_{plan_.shard_rows.size()};  // since the last log row
  StragglerMonitor stragglers_{config_.fault_tolerance.straggler_factor, plan_.shard_rows.size()};
  std::vector<int> alive_;
  std::vector<bool> alive_flag_;
  std::vector<int> lost_unassigned_;  // continue: lost ranks whose rows no survivor holds yet
  int restarts_ = 0;
  std::uint32_t generation_ = 0;  // bumped at every failure handled
  std::vector<protocol::Envelope> setups_;
  std::vector<protocol::Envelope> finalizes_;
  std::vector<std::int64_t> joined_ms_;  // when each rank's current worker became ready
  WorkerAddresses addresses_{plan_.shard_rows.size()};
  DropLog drops_;                        // strangers' and malformed messages
  std::deque<transport::Incoming> stash_;
  std::vector<ChildExit> pending_exits_;
  // The last request sent to each rank (re-sent when lost, and to a replacement), and the last
  // reply each rank gave in a finished gather.
  std::vector<std::shared_ptr<const wire::Message>> last_request_;
  std::vector<std::uint64_t> last_request_step_;
  std::vector<protocol::Type> last_request_type_;
  std::vector<std::uint32_t> last_request_generation_;
  LossHandler loss_handler_;
  struct Answered {
    protocol::Type type{};
    std::uint64_t step = 0;
    bool any = false;
  };
  std::vector<Answered> answered_;
  double reply_ms_ = 0;  // moving average of how long a gather waits for its slowest reply
  JoinState joins_;      // elastic: joiners waiting, slots used, re-plans (joins.hpp)
};

}  // namespace dt::roles
