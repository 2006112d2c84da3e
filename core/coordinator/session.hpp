#pragma once
// CoordinatorSession: what a mode's coordinator half sees of the run: the config and plan, the
// parameters, the workers (messages, gathers of replies, supervision, the failure policy for the
// lost ones), the loss log and checkpoints. Built by run_coordinator; its parts are session.cpp
// (messages, gathers, the log), session_failures.cpp (lost workers), session_checkpoint.cpp.

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
class MembersFile;
class WorkerPool;

class CoordinatorSession {
 public:
  CoordinatorSession(const config::Config& config, const Plan& plan,
                     std::vector<double>& params, transport::Listener& listener,
                     WorkerPool& pool, HeartbeatServer& heartbeat, std::uint64_t job_id,
                     RunResult& result);

  [[nodiscard]] const config::Config& config() const noexcept { return config_; }
  [[nodiscard]] const Plan& plan() const noexcept { return plan_; }
  [[nodiscard]] int ranks() const noexcept { return static_cast<int>(plan_.shard_rows.size()); }
  // The coordinator's own model and held-out rows (evaluate.hpp); model(), validation(): theirs.
  [[nodiscard]] Evaluation& evaluation() noexcept { return evaluation_; }
  [[nodiscard]] models::Model& model() noexcept { return evaluation_.model(); }
  [[nodiscard]] const data::Shard* validation() const noexcept { return evaluation_.validation(); }
  [[nodiscard]] std::vector<double>& params() noexcept { return params_; }
  [[nodiscard]] RunResult& result() noexcept { return result_; }
  [[nodiscard]] Schedule& schedule() noexcept { return schedule_; }  // steps, epochs, clock
  [[nodiscard]] const Schedule& schedule() const noexcept { return schedule_; }

  // ---- Lost workers (on_worker_failure): one that exits, reports an error or stops heartbeating
  // is reported, then abort: the wait throws TrainingError (exit 3); restart: a replacement takes
  // the rank (set up as at the start, sent its last request); continue (and a planned leave):
  // the rank leaves alive() (ranks training, ascending), reassign_lost_rows deals its rows.
  [[nodiscard]] const std::vector<int>& alive() const noexcept { return alive_; }
  [[nodiscard]] bool is_alive(int rank) const noexcept {
    return alive_flag_[static_cast<std::size_t>(rank)];
  }
  // What run_coordinator sent each rank to start it, per rank: replayed to a replacement.
  void set_startup(std::vector<protocol::Envelope> setups,
                   std::vector<protocol::Envelope> finalizes);
  // Gradients, before epoch `epoch`'s first step: deals departed workers' rows to the others.
  void reassign_lost_rows(std::uint64_t epoch);
  // `continue`, tensor parallelism: a worker that cannot go on without a lost one (its replica's
  // other slices) is stopped as if lost; its rows go to its slice's survivors (same columns).
  void drop_worker(int rank, const std::string& cause);
  // A mode that handles lost workers itself (a ring re-forms, servers forget a lost worker's
  // pushes) sets a handler, called once the rank is replaced (restart) or off alive() (continue,
  // and a planned leave: membership.hpp's left_after says so) instead of the re-send of its last
  // request (star, parameters). It may throw to end its wait (a ring step that cannot finish).
  using LossHandler = std::function<void(int rank, config::FailurePolicy action)>;
  void set_loss_handler(LossHandler handler) { loss_handler_ = std::move(handler); }
  // A mode that dealt a lost worker's rows itself (async, through its servers) takes it off.
  void rows_dealt(int rank) { std::erase(lost_unassigned_, rank); }
  // Elastic, parameters mode: deals leavers' rows to the others, each from from_epoch(rank) on.
  void deal_left_rows(const std::function<std::uint64_t(int rank)>& from_epoch);
  // Parameters mode: the step the round in progress ends at (a leave with its reply: its step).
  void set_round_end(std::uint64_t step) noexcept { round_end_ = step; }
  // Bumped at every lost worker handled and joiner admitted; an earlier one's reply is stale.
  [[nodiscard]] std::uint32_t generation() const noexcept { return generation_; }
  // Counts a replacement (a worker's or a server's) against max_restarts; false if none is left.
  [[nodiscard]] bool take_restart() noexcept;
  [[nodiscard]] int restarts() const noexcept { return restarts_; }
  // Sends one message to every worker still training; to each of `ranks` (encoded once); to one.
  void broadcast(protocol::Envelope envelope);
  void broadcast(protocol::Envelope envelope, const std::vector<int>& ranks);
  void send_to(int rank, protocol::Envelope envelope);
  // Sends every worker still training a notice (kServerMoved): not a request, never re-sent nor
  // replayed; a worker it cannot reach is left to the supervision of the waits.
  void notify(protocol::Envelope envelope);
  // One message of `type` from every rank training, in rank order. Supervises: Ctrl-C ends it, a
  // lost worker meets the failure policy, an overdue request of a heartbeating worker is sent
  // again, duplicate and stale replies are dropped. `on_idle` runs every idle poll slice (~50
  // ms); after Ctrl-C it goes on up to `grace` (a ring batch's replies are kept).
  [[nodiscard]] std::vector<protocol::Envelope> gather(
      protocol::Type type, const std::function<void()>& on_idle = {},
      std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  // One message of `type` from each of `ranks` (ascending) still training, in their order; the
  // other workers are still supervised (exits, heartbeats) while they idle.
  [[nodiscard]] std::vector<protocol::Envelope> gather_from(protocol::Type type,
                                                            const std::vector<int>& ranks);
  void receive_in_place(std::uint64_t min_frame) noexcept;  // Listener::receive_in_place
  // One round of the gather's supervision (Ctrl-C, exits, heartbeats), for other waits (servers).
  void supervise();
  [[nodiscard]] transport::Transport& transport() const;  // for sockets of a mode's own (servers)
  void set_transport(transport::Transport& transport) noexcept { transport_ = &transport; }
  [[nodiscard]] std::uint64_t job_id() const noexcept { return job_id_; }
  // Each rank's identity on the coordinator's listener and its peer endpoint (addresses.hpp).
  [[nodiscard]] WorkerAddresses& addresses() noexcept { return addresses_; }
  // A failed run tells the workers that joined by themselves (the pool stops its children) so
  // that they exit at once saying why. Best effort, bounded: they may be gone too.
  void end_joined_workers(const Error& why);
  // fault_tolerance.elastic: `run_dir`/members.json, for `disttrain leave` (members_file.hpp).
  void set_members_dir(const std::filesystem::path& run_dir);
  // ---- Joins (elastic; session_joins.cpp): a joiner's hello (`worker --join`) is queued by
  // every wait; admit_joiners (the mode, at each step boundary, `step` done) admits them into
  // free slots (refused above max_workers); close_admissions refuses those left at the end.
  void set_joiner_setup(protocol::Envelope setup);
  void admit_joiners(std::uint64_t step);
  void close_admissions();
  // After kReady: the peer endpoints the workers reported, to each (kPeers; not in a star).
  void share_peer_endpoints(const std::vector<protocol::Envelope>& ready);
  // Records a completed step's losses; writes a log row (with a validation pass) when due.
  void record_step(std::uint64_t step, double loss_sum, std::uint64_t rows,
                   const std::vector<double>& worker_loss_sum,
                   const std::vector<std::uint64_t>& worker_rows);
  void add_samples(std::uint64_t rows) noexcept { result_.samples += rows; }
  // From now on an exit is an end, not a failure: note_late_exit records a bad one as a warning.
  void expect_exits() noexcept { exits_expected_ = true; }
  void note_late_exit(const ChildExit& exit);

  // Checkpoints (core/coordinator/resume.hpp); none in unit tests that build a session by hand.
  void set_checkpointer(Checkpointer* checkpointer) noexcept { checkpointer_ = checkpointer; }
  // Elastic across --resume (resume_membership.hpp): ranks not started again, state and back.
  void set_departed(const std::vector<bool>& departed);
  [[nodiscard]] nlohmann::json membership_state() const;
  void restore_membership(const nlohmann::json& saved, int from_workers, std::uint64_t step,
                          std::uint64_t start_step, const std::string& where);
  // Steps already done when training starts: the checkpoint's step on a resumed run, else 0.
  [[nodiscard]] std::uint64_t first_step() const;
  // A mode reports the end of every step (`step` = steps completed, empty ones included) where
  // it holds that step's state: writes a checkpoint when due (and members.json at the first).
  void step_boundary(std::uint64_t step);
  // Will step_boundary(step) write a checkpoint? (ring: rank 0 sends its optimizer state along)
  [[nodiscard]] bool checkpoint_due(std::uint64_t step) const;
  [[nodiscard]] std::uint64_t completed_step() const noexcept { return completed_step_; }
  // After a stop: the next `type` message from `rank`, skipping others (late replies); nullopt
  // after `timeout`. Ctrl-C does not stop it: it serves the checkpoint written for it.
  [[nodiscard]] std::optional<protocol::Envelope> receive_from(int rank, protocol::Type type,
                                                              std::chrono::milliseconds timeout);
  // The log row in progress (loss sums), for a checkpoint, and back.
  [[nodiscard]] const LossWindow& loss_window() const noexcept { return window_; }
  void restore_log_window(const nlohmann::json& window, std::uint64_t step, double seconds,
                          const std::string& where);

 private:
  // Applies the failure policy to `rank`, lost for `cause` ("was killed by signal 9 (SIGKILL)").
  // Throws under abort (and when nothing can be done); returns once replaced or dropped.
  void lose_worker(int rank, const std::string& cause);
  // fault_tolerance.elastic (session_membership.cpp): `rank` left on purpose (kLeave), after the
  // step in hand when `after_step`; below min_workers, waits for joiners, then throws. Its rows
  // wait for an epoch after its last step + 1 (deal_later); left_unread: a send found it gone.
  void worker_left(int rank, bool after_step);
  void check_min_workers(const std::string& why);
  void publish_members(bool boundary = false);  // members.json, when due (members_file.hpp)
  [[nodiscard]] bool take_join_hello(transport::Incoming& in);  // queues a joiner's hello
  void drain_joiners();  // reads what the listener holds now (others' messages: stash_)
  [[nodiscard]] bool admit(const PendingJoin& joiner, std::uint64_t step);
  void refuse_joiner(const PendingJoin& joiner, const std::string& why, int exit_code);
  void replan_rows(std::uint64_t epoch, const std::function<std::uint64_t(int)>& from = {});
  [[nodiscard]] bool joins_by_itself(int rank) const;  // no child of this process
  [[nodiscard]] bool deal_later(int rank, std::uint64_t epoch) const;
  [[nodiscard]] bool left_unread(int rank);
  // Deals `lost`'s rows to `survivors` (share k of m to the k-th) from `epoch`; their rows.
  nlohmann::json deal_rows(int lost, std::uint64_t epoch, const std::vector<int>& survivors);
  void deal_plan_shards(const std::vector<int>& waiting, std::uint64_t epoch);  // by deal_rows
  void raise_worker_error(int rank, const protocol::WorkerError& error);
  void check_workers();
  void check_exit(const ChildExit& exit);  // one worker's exit, seen by check_workers
  [[nodiscard]] protocol::Envelope replace_worker(int rank);  // returns its ready message
  // The next `type` message of `rank` while a replacement (`who`) starts (others: stash_).
  [[nodiscard]] protocol::Envelope await_from(int rank, protocol::Type type,
                                              transport::Clock::time_point deadline,
                                              const char* who = "the replacement for");
  void end_worker(int rank);  // at once: a child is killed, a joined worker is told to stop
  // Whether `in` is the hello of a worker joining by itself to take `rank`.
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
  nlohmann::json dealt_ = nlohmann::json::array();  // every deal_rows so far, for checkpoints
  int restarts_ = 0;
  std::uint32_t generation_ = 0;      // bumped at every failure handled
  std::vector<protocol::Envelope> setups_;
  std::vector<protocol::Envelope> finalizes_;
  std::vector<std::int64_t> joined_ms_;  // when each rank's current worker became ready
  WorkerAddresses addresses_{plan_.shard_rows.size()};
  DropLog drops_;                        // strangers' and malformed messages
  std::deque<transport::Incoming> stash_;
  std::vector<ChildExit> pending_exits_;
  // Each rank's last request (re-sent when lost, and to a replacement), and its last reply.
  std::vector<std::shared_ptr<const wire::Message>> last_request_;
  std::vector<std::uint64_t> last_request_step_;
  std::vector<protocol::Type> last_request_type_;
  std::vector<std::uint32_t> last_request_generation_;
  LossHandler loss_handler_;
  std::shared_ptr<MembersFile> members_file_;
  JoinState joins_;  // elastic: joiners waiting, slots used, re-plans (joins.hpp)
  struct Answered { protocol::Type type{}; std::uint64_t step = 0; bool any = false; };
  std::uint64_t round_end_ = 0;  // set_round_end
  std::vector<Answered> answered_;
  double reply_ms_ = 0;  // moving average of how long a gather waits for its slowest reply
};

}  // namespace dt::roles
