#pragma once
// The coordinator: plans the shards, starts and supervises the workers, runs the aggregation
// mode, evaluates, and returns everything the run outputs need. It never writes outputs itself
// (run_output does) and never includes ZeroMQ (transports/ does).

#include "core/config/config.hpp"
#include "core/coordinator/launcher.hpp"
#include "core/data/dataset.hpp"
#include "core/models/model.hpp"
#include "core/models/optim.hpp"
#include "core/models/tensor.hpp"
#include "core/protocol/protocol.hpp"
#include "core/protocol/drop_log.hpp"
#include "core/coordinator/stragglers.hpp"
#include "base/error.hpp"
#include "transports/transport.hpp"

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dt::transport {
class Transport;
class Listener;
}  // namespace dt::transport

namespace dt::roles {

class Checkpointer;
class HeartbeatServer;
struct RunKeys;
class WorkerPool;

struct LogRow {
  std::uint64_t step = 0;  // steps completed
  double epoch = 0;        // fractional epochs completed
  double seconds = 0;      // since training started
  double train_loss = 0;   // mean batch loss since the previous row
  std::optional<double> validation_loss;
  std::optional<double> validation_metric;  // accuracy (classification) or mse (regression)
  std::vector<double> worker_loss;          // each worker's mean batch loss since the previous row
};

struct Metrics {
  std::uint64_t rows = 0;
  double loss = 0;
  std::optional<double> mse;
  std::optional<double> accuracy;
  std::optional<double> log_loss;
};

struct WorkerStats {
  int rank = 0;
  std::int64_t pid = 0;
  std::string host;
  std::uint64_t rows = 0;
  protocol::Report report;
};

// What a finished (or failed) run leaves for the outputs.
struct RunResult {
  std::string status = "failed";  // "ok", "failed", "interrupted"
  std::string error;              // the failure, one line
  data::SourceInfo source;
  data::Normalization normalization;
  std::vector<std::string> classes;
  std::vector<double> params;
  std::vector<LogRow> log;
  std::optional<Metrics> final;       // the final model over all training rows
  std::optional<Metrics> validation;  // over the validation split
  std::uint64_t steps = 0;
  std::uint64_t train_rows = 0;
  std::uint64_t validation_rows = 0;
  std::uint64_t samples = 0;  // rows processed in training (for samples per second)
  double wall_seconds = 0;
  double train_seconds = 0;
  std::vector<WorkerStats> workers;
  std::vector<std::string> warnings;
  // summary.json's "checkpoint" when not empty: {"every_steps", "last_step", "resumed_from_step",
  // "resumed_from"} (core/coordinator/resume.hpp, cli run).
  nlohmann::json checkpoint = nlohmann::json::object();
  // Workers persistently slower than straggler_factor x the others (Straggler::to_json each).
  nlohmann::json stragglers = nlohmann::json::array();
  // Workers lost during the run, one object each (rank, pid, host, cause, step, action), and
  // what was done about them (summary.json "failures").
  nlohmann::json failures = nlohmann::json::array();
  // The mode's own statistics, written into summary.json as "aggregation" when not empty.
  nlohmann::json aggregation = nlohmann::json::object();
};

// The plan `validate` prints and `run` follows.
struct Plan {
  data::SourceInfo source;  // strategy files: the columns of every file, rows of all files
  // Strategy files: rank r's own file (its index, rows and path); empty for other strategies.
  std::vector<data::SourceInfo> rank_sources;
  // Held-out source rows (strategy files: numbered across the files in order).
  std::vector<std::uint64_t> validation_rows;
  std::vector<std::vector<data::Segment>> segments;  // per rank
  std::vector<std::uint64_t> shard_rows;             // per rank
  std::uint64_t train_rows = 0;
  std::uint64_t steps_per_epoch = 0;
  std::vector<std::string> warnings;  // e.g. an empty shard; the run lists them in its summary

  // The source rank r's segments refer to.
  [[nodiscard]] const data::SourceInfo& source_of(std::size_t rank) const {
    return rank_sources.empty() ? source : rank_sources.at(rank);
  }
  // parallelism.tensor: rank r is replica r / tensor, slice r % tensor (tensor_plan.hpp).
  int tensor = 1;
  std::vector<models::Range> columns;  // per rank: the feature columns it loads; empty: all
};
[[nodiscard]] Plan make_plan(const config::Config& config);

// Local steps per epoch of a worker with `rows` rows in the modes where training.batch_size is
// per worker (parameters, async): ceil(rows / batch_size), at least 1; 1 with `full`.
[[nodiscard]] std::uint64_t local_steps_per_epoch(const config::TrainingConfig& training,
                                                  std::uint64_t rows);
// The held-out rows, loaded (from every file with strategy files), labels not yet assigned.
[[nodiscard]] data::Shard load_validation(const config::Config& config, const Plan& plan,
                                          data::LabelKind kind);

struct CoordinatorOptions {
  std::filesystem::path worker_log_dir;  // workers/<rank>.log
  int log_level = 2;
  // Writes the run's checkpoints and restores a resumed run (core/coordinator/resume.hpp); none: no
  // checkpoints.
  Checkpointer* checkpointer = nullptr;
  // transport.security curve: the keys run_keys() read (so that `run` checks them before it
  // makes the run folder); null: read them here.
  const RunKeys* keys = nullptr;
};

// Trains. Throws dt::Error subclasses on failure; `partial` (if given) receives what was done
// so far, so that a failed run still writes its log and summary.
[[nodiscard]] RunResult run_coordinator(const config::Config& config, const Plan& plan,
                                        const CoordinatorOptions& options,
                                        RunResult* partial = nullptr);

// What a mode's coordinator half sees.
class CoordinatorSession {
 public:
  CoordinatorSession(const config::Config& config, const Plan& plan,
                     std::vector<double>& params, transport::Listener& listener,
                     WorkerPool& pool, HeartbeatServer& heartbeat, std::uint64_t job_id,
                     RunResult& result);

  [[nodiscard]] const config::Config& config() const noexcept { return config_; }
  [[nodiscard]] const Plan& plan() const noexcept { return plan_; }
  [[nodiscard]] int ranks() const noexcept { return static_cast<int>(plan_.shard_rows.size()); }
  // The coordinator's own model object (validation, regularization); set once the classes
  // are known.
  [[nodiscard]] models::Model& model() noexcept { return *model_; }
  void set_model(std::unique_ptr<models::Model> model) { model_ = std::move(model); }
  [[nodiscard]] std::vector<double>& params() noexcept { return params_; }
  [[nodiscard]] RunResult& result() noexcept { return result_; }
  [[nodiscard]] std::uint64_t total_steps() const noexcept;
  // For modes whose steps are not global steps (async: one step per applied worker batch):
  // the step count that ends training and the steps that make one epoch, for the log.
  void set_schedule(std::uint64_t total_steps, std::uint64_t steps_per_epoch) noexcept {
    schedule_total_ = total_steps;
    schedule_per_epoch_ = steps_per_epoch;
  }

  // ---- Lost workers (fault_tolerance.on_worker_failure). A worker that exits, reports an
  // error or stops heartbeating is reported in one line (rank, pid, host, cause, last completed
  // step, the tail of its log), then:
  //   abort:    the wait throws TrainingError (exit 3);
  //   restart:  a replacement is started under the same rank (up to max_restarts over the run),
  //             set up as at the start, and sent the rank's last request again: the wait goes on;
  //   continue: the rank leaves alive() and the wait goes on without it; its rows are dealt to
  //             the survivors by reassign_lost_rows.
  // Ranks still training, ascending: every rank unless `continue` lost some.
  [[nodiscard]] const std::vector<int>& alive() const noexcept { return alive_; }
  [[nodiscard]] bool is_alive(int rank) const noexcept {
    return alive_flag_[static_cast<std::size_t>(rank)];
  }
  // What run_coordinator sent each rank to start it, per rank: replayed to a replacement.
  void set_startup(std::vector<protocol::Envelope> setups,
                   std::vector<protocol::Envelope> finalizes);
  // `continue` in gradients mode: deals the rows of the workers lost since the last call to
  // the survivors, who train on them from `epoch` on (their share of the global batch grows).
  // Call it before the first step of each epoch.
  void reassign_lost_rows(std::uint64_t epoch);
  // `continue` with tensor parallelism: a worker that cannot go on without a lost one (the
  // other slices of its model replica) is stopped and leaves alive() as if lost; its rows are
  // dealt like a lost worker's. With parallelism.tensor > 1, reassign_lost_rows deals a lost
  // rank's rows only to the surviving ranks of the same slice (they read the same columns).
  void drop_worker(int rank, const std::string& cause);
  // A mode that handles lost workers itself (a ring re-forms, servers forget a lost worker's
  // pushes) sets a handler: lose_worker calls it once the rank has been replaced (restart) or
  // dropped from alive() (continue), instead of sending the replacement the rank's last
  // request. The handler may throw to end the wait it was called from (a ring step that cannot
  // finish). Without a handler the session re-sends the last request (star, parameters).
  using LossHandler = std::function<void(int rank, config::FailurePolicy action)>;
  void set_loss_handler(LossHandler handler) { loss_handler_ = std::move(handler); }
  // A mode that dealt a lost worker's rows itself (async: through its servers) takes the rank
  // off the list reassign_lost_rows deals from.
  void rows_dealt(int rank) { std::erase(lost_unassigned_, rank); }
  // Bumped at every lost worker handled; messages carry the generation they were sent in, and
  // a reply from an earlier generation than its rank's last request is dropped as stale.
  [[nodiscard]] std::uint32_t generation() const noexcept { return generation_; }
  // Counts one replacement (a worker's, or a parameter server's) against
  // fault_tolerance.max_restarts; false when none is left. restarts(): replacements so far.
  [[nodiscard]] bool take_restart() noexcept;
  [[nodiscard]] int restarts() const noexcept { return restarts_; }

  // Sends one message to every worker still training.
  void broadcast(protocol::Envelope envelope);
  // Sends one message (encoded once) to each of `ranks`.
  void broadcast(protocol::Envelope envelope, const std::vector<int>& ranks);
  // Sends one message to one worker.
  void send_to(int rank, protocol::Envelope envelope);
  // Sends every worker still training a notice (kServerMoved): not a request, so no reply is
  // awaited and it is neither re-sent nor replayed to a replacement. A worker it cannot reach
  // is left to the supervision of the waits.
  void notify(protocol::Envelope envelope);
  // One message of `type` from every rank still training, in rank order (each envelope's
  // `rank` says whose). Supervises while it waits: Ctrl-C ends the wait with an error; a lost
  // worker is handled by the failure policy (above). A request whose reply is overdue while
  // its worker still heartbeats (a lost message) is sent again; duplicate and stale replies
  // are dropped.
  [[nodiscard]] std::vector<protocol::Envelope> gather(protocol::Type type);
  // The same, calling `on_idle` every poll slice (~50 ms) without a message, e.g. to check on
  // threads of the coordinator (parameter servers) and to log their progress.
  [[nodiscard]] std::vector<protocol::Envelope> gather(protocol::Type type,
                                                       const std::function<void()>& on_idle);
  // One message of `type` from each of `ranks` (ascending) still training, in their order; the
  // other workers are still supervised (exits, heartbeats) while they idle.
  [[nodiscard]] std::vector<protocol::Envelope> gather_from(protocol::Type type,
                                                            const std::vector<int>& ranks);
  // One round of the supervision gather does while it waits: Ctrl-C, worker exits, heartbeats.
  // For modes that wait on something other than the workers' messages (parameter servers).
  void supervise();

  // The run's transport (for modes that open sockets of their own, such as parameter servers).
  [[nodiscard]] transport::Transport& transport() const;
  void set_transport(transport::Transport& transport) noexcept { transport_ = &transport; }
  [[nodiscard]] std::uint64_t job_id() const noexcept { return job_id_; }
  // The identity each rank's connection uses (protocol::peer_name(rank) for the workers this
  // process starts; a worker that joins by itself has its own), by rank.
  void set_peers(std::vector<std::string> peers) { peers_ = std::move(peers); }
  [[nodiscard]] const std::string& peer_of(int rank) const;
  // A run that fails tells its workers that joined by themselves (its own children are
  // stopped by the pool), so that they exit at once saying why instead of finding the
  // coordinator gone a heartbeat timeout later. Best effort, bounded: they may be gone too.
  void end_joined_workers(const Error& why);

  // After kReady: sends every worker the peer endpoints the workers reported (kPeers), when
  // they opened peer links (core/worker/peers.hpp); nothing for a star run.
  void share_peer_endpoints(const std::vector<protocol::Envelope>& ready);
  // Every rank's peer endpoint as last reported (a replacement's replaces the lost worker's);
  // empty for a star run. Sent again when a group re-forms (core/modes/ring_reform.hpp).
  [[nodiscard]] const std::vector<std::string>& peer_endpoints() const noexcept {
    return peer_endpoints_;
  }

  // Records a completed step's losses; writes a log row (with a validation pass) when due.
  void record_step(std::uint64_t step, double loss_sum, std::uint64_t rows,
                   const std::vector<double>& worker_loss_sum,
                   const std::vector<std::uint64_t>& worker_rows);
  void add_samples(std::uint64_t rows) noexcept { result_.samples += rows; }
  // From now on a worker that exits is finishing, not failing (a bad exit is a warning).
  void expect_exits() noexcept { exits_expected_ = true; }
  // Records a worker that exited badly after its work was done, as a warning.
  void note_late_exit(const ChildExit& exit);

  // Validation metrics of `params` on the held-out rows (nullopt without a split).
  [[nodiscard]] std::optional<Metrics> evaluate_validation(const std::vector<double>& params);
  void set_validation(data::Shard shard) { validation_ = std::move(shard); }
  // The held-out rows (normalized, classes assigned), or nullptr without a split.
  [[nodiscard]] const data::Shard* validation() const noexcept {
    return validation_ ? &*validation_ : nullptr;
  }
  [[nodiscard]] double elapsed_seconds() const;
  void start_clock();

  // Checkpoints (core/coordinator/resume.hpp); none in unit tests that build a session by hand.
  void set_checkpointer(Checkpointer* checkpointer) noexcept { checkpointer_ = checkpointer; }
  // Steps already done when training starts: the checkpoint's step on a resumed run, else 0.
  [[nodiscard]] std::uint64_t first_step() const;
  // A mode reports the end of every step (`step` = steps completed, empty steps included) at
  // the point where it holds that step's state: writes a checkpoint when one is due.
  void step_boundary(std::uint64_t step);
  // Will step_boundary(step) write a checkpoint? For modes that must fetch their state from the
  // workers during the step (ring: rank 0 sends its optimizer state along).
  [[nodiscard]] bool checkpoint_due(std::uint64_t step) const;
  [[nodiscard]] std::uint64_t completed_step() const noexcept { return completed_step_; }
  // After a stop (Ctrl-C, a failure): the next `type` message from `rank`, skipping any other
  // (late replies of the abandoned step); nullopt after `timeout`. Does not stop on Ctrl-C, as
  // it serves the checkpoint written because of it.
  [[nodiscard]] std::optional<protocol::Envelope> receive_from(int rank, protocol::Type type,
                                                              std::chrono::milliseconds timeout);
  [[nodiscard]] double epoch_of(std::uint64_t step) const;
  // The log row in progress (its loss accumulators), for a checkpoint, and back.
  [[nodiscard]] nlohmann::json log_window() const;
  void restore_log_window(const nlohmann::json& window, std::uint64_t step, double seconds);

 private:
  // Applies the failure policy to `rank`, lost for `cause` ("was killed by signal 9 (SIGKILL)").
  // Throws under abort (and when nothing can be done); returns once the rank is replaced or
  // dropped.
  void lose_worker(int rank, const std::string& cause);
  void raise_worker_error(int rank, const protocol::WorkerError& error);
  void check_workers();
  void check_exit(const ChildExit& exit);  // one worker's exit, seen by check_workers
  void replace_worker(int rank);
  // The next message of `rank` of `type` while a replacement starts; other ranks' messages
  // wait in stash_ for the gather they belong to.
  [[nodiscard]] protocol::Envelope await_from(int rank, protocol::Type type,
                                              transport::Clock::time_point deadline);
  // Ends `rank`'s worker at once: this process's child is killed, a joined one told to stop.
  void end_worker(int rank);
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
                                                            const std::function<void()>& on_idle);

  const config::Config& config_;
  const Plan& plan_;
  std::unique_ptr<models::Model> model_;
  std::vector<double>& params_;
  transport::Listener& listener_;
  transport::Transport* transport_ = nullptr;
  std::uint64_t schedule_total_ = 0;      // 0: epochs * plan.steps_per_epoch
  std::uint64_t schedule_per_epoch_ = 0;  // 0: plan.steps_per_epoch
  WorkerPool& pool_;
  HeartbeatServer& heartbeat_;
  std::uint64_t job_id_;
  RunResult& result_;
  std::optional<data::Shard> validation_;
  std::int64_t start_ms_ = 0;
  bool exits_expected_ = false;
  bool progress_bar_ = false;
  Checkpointer* checkpointer_ = nullptr;
  std::uint64_t completed_step_ = 0;
  double seconds_before_ = 0;  // a resumed run's seconds continue from the checkpoint's
  // Accumulated since the last log row.
  double window_loss_ = 0;
  std::uint64_t window_rows_ = 0;
  std::vector<double> window_worker_loss_;
  std::vector<std::uint64_t> window_worker_rows_;
  StragglerMonitor stragglers_{config_.fault_tolerance.straggler_factor, plan_.shard_rows.size()};
  // Failure handling.
  std::vector<int> alive_;
  std::vector<bool> alive_flag_;
  std::vector<int> lost_unassigned_;  // continue: lost ranks whose rows no survivor holds yet
  int restarts_ = 0;
  std::uint32_t generation_ = 0;      // bumped at every failure handled
  std::vector<protocol::Envelope> setups_;
  std::vector<protocol::Envelope> finalizes_;
  std::vector<std::int64_t> joined_ms_;  // when each rank's current worker became ready
  std::vector<std::string> peers_;       // see peer_of
  DropLog drops_;                        // strangers' and malformed messages
  std::deque<transport::Incoming> stash_;
  std::vector<ChildExit> pending_exits_;
  // The last request sent to each rank (re-sent when its reply is lost, and to a replacement)
  // and its step; the type and step of the last reply each rank gave in a finished gather.
  std::vector<std::shared_ptr<const wire::Message>> last_request_;
  std::vector<std::uint64_t> last_request_step_;
  std::vector<protocol::Type> last_request_type_;
  std::vector<std::uint32_t> last_request_generation_;
  LossHandler loss_handler_;
  std::vector<std::string> peer_endpoints_;  // by rank; empty without peer links
  struct Answered {
    protocol::Type type{};
    std::uint64_t step = 0;
    bool any = false;
  };
  std::vector<Answered> answered_;
  double reply_ms_ = 0;  // moving average of how long a gather waits for its slowest reply
};

// Loss and metric sums of `params` over every row of `shard`, in chunks so that the model's
// scratch memory stays bounded whatever the shard size.
[[nodiscard]] models::BatchResult evaluate_rows(models::Model& model,
                                                std::span<const double> params,
                                                const data::Shard& shard);

// Turns a Metrics for the task into loss/metric numbers.
[[nodiscard]] Metrics to_metrics(config::Task task, double loss_sum, double correct,
                                 double squared_error_sum, std::uint64_t rows);

}  // namespace dt::roles
