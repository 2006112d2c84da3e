#pragma once
// A worker: connects to the coordinator, loads its shard, and answers the coordinator's messages
// until told to stop. The same code runs as a process (`disttrain worker`) or, for the inproc
// transport, as a thread of the coordinator.
//
// core/worker/: what runs in a worker: its session and loop, its batches, its peer links, its end
// of the parameter servers.
// May use: base/, transports/, core/config/, core/data/, core/models/, core/protocol/,
// core/modes/mode.hpp (the mode it answers for), core/servers/server_state.hpp (the key ranges it
// splits a gradient by), core/coordinator/plan.hpp (the shard plan it is dealt),
// core/coordinator/evaluate.hpp (the scoring the final evaluation shares).

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"
#include "core/models/model.hpp"
#include "core/models/warm_rows.hpp"
#include "core/protocol/protocol.hpp"
#include "core/protocol/faults.hpp"
#include "core/worker/step_times.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dt::transport {
class Transport;
class Connection;
}  // namespace dt::transport

namespace dt::collectives {
class PeerLinks;
class Ring;
}  // namespace dt::collectives

namespace dt::roles {
class HeartbeatClient;

struct WorkerOptions {
  std::string endpoint;  // the coordinator's
  std::uint32_t rank = 0;
  std::uint64_t job_id = 0;
  // Set by the coordinator of an inproc run to stop its worker threads at once.
  const std::atomic<bool>* cancel = nullptr;
  // A worker that joins by itself (`disttrain worker --connect`): job_id 0 (learned from the
  // coordinator), an identity of its own (two workers claiming one rank must not take each
  // other's connection), the hash of its own config when it read one (config::config_hash).
  std::string identity;  // empty: protocol::peer_name(rank)
  std::string config_hash;
  std::filesystem::path data;  // this worker's own copy of the data (`--data`); empty: the source
  // Before heartbeats run (no endpoint for them yet) the wait for the setup ends after this.
  std::chrono::milliseconds startup_timeout{30000};
  // Whether this worker connects with CURVE keys: a coordinator that refuses its key, or does
  // not use CURVE, looks like silence from here, and the timeout says what to check.
  bool curve = false;
  // A process of its own (`disttrain worker`), whose signals are its own; and whether SIGTERM
  // is now a planned leave (fault_tolerance.elastic, during training: leave.hpp).
  bool own_process = false;
  bool may_leave = false;
  bool join = false;  // `--join` (elastic): joins a running job; the setup names its rank
};

// Whether a run's workers open peer links (core/worker/peers.hpp): aggregation.topology ring or
// parallelism.tensor > 1. Star runs open none.
[[nodiscard]] bool needs_peer_links(const config::Config& config);

// Runs a worker to the end; returns the process exit code. Errors are reported to the
// coordinator before returning.
[[nodiscard]] int run_worker(transport::Transport& transport, const WorkerOptions& options);

// What a mode's worker half sees.
class WorkerSession {
 public:
  WorkerSession(const WorkerOptions& options, const config::Config& config,
                transport::Connection& connection, HeartbeatClient& heartbeat,
                models::Model& model, data::Shard& shard, std::uint64_t train_rows,
                std::uint64_t steps_per_epoch);

  [[nodiscard]] const config::Config& config() const noexcept { return config_; }
  [[nodiscard]] std::uint32_t rank() const noexcept { return options_.rank; }
  [[nodiscard]] models::Model& model() noexcept { return model_; }
  [[nodiscard]] const data::Shard& shard() const noexcept { return shard_; }
  [[nodiscard]] std::uint64_t rows() const noexcept { return static_cast<std::uint64_t>(shard_.y.size()); }
  [[nodiscard]] std::uint64_t train_rows() const noexcept { return train_rows_; }
  [[nodiscard]] std::uint64_t steps_per_epoch() const noexcept { return steps_per_epoch_; }
  // The next message from the coordinator. Waits while the coordinator heartbeats; a silent
  // coordinator (or a cancel) ends the wait with an error, a planned leave with LeaveRequest.
  // Large frames may come in place, see receive_in_place (transports/transport.hpp).
  [[nodiscard]] protocol::Envelope receive();
  void receive_in_place(std::uint64_t min_frame);
  void send(protocol::Envelope envelope);
  // Reads what the coordinator has sent so far without waiting (receive serves it first, in
  // order); true when a message of `type` is among what waits. For a wait on peers that the
  // coordinator may call off (a ring re-forms after a lost worker).
  [[nodiscard]] bool poll_coordinator(protocol::Type type);
  // Notices: coordinator messages that are not requests (kServerMoved). The handler set for a
  // type takes each one receive() or take_notices() reads (an empty handler: none); they never
  // reach the mode's loop (nor answer_repeat). take_notices reads what has arrived without
  // waiting, for waits on other peers (parameter servers); other messages it reads wait for
  // receive(), as poll_coordinator's do.
  using NoticeHandler = std::function<void(const protocol::Envelope&)>;
  void on_notice(protocol::Type type, NoticeHandler handler);
  void take_notices();
  // This worker's part of the global batch of `step`: rows [floor(s*n/S), floor((s+1)*n/S)) of
  // this epoch's order (shuffled per epoch from the seed when training.shuffle). A shuffled
  // batch picks its rows from the shard where they lie (models::BatchRows); nothing is copied.
  // Valid until the next call that prepares another epoch.
  using Batch = models::BatchRows;
  [[nodiscard]] Batch batch(std::uint64_t step);
  // The batch's rows in order in buffers reused from step to step, for code that needs them
  // contiguous (tensor-parallel slices).
  [[nodiscard]] Batch gathered(const Batch& batch);
  // Idle work (models::RowWarmer): after its step's compute a mode calls warm(next step), and the
  // waits of receive() and of the peer links fetch that batch's rows (shuffled dense rows of the
  // epoch ready) a slice at a time until a message comes or batch() is called. No bit changes.
  void warm(std::uint64_t step);

  // ---- Peer links: direct worker <-> worker collectives (transports/collectives/ring.hpp),
  // only when needs_peer_links(config); usable once the coordinator has sent every worker's
  // endpoint (the common loop handles that first). Worker ranks are 0 .. world_size()-1.
  //   group(ranks): the ring over `ranks` in that order (any subset with this worker: a tensor
  //     group {d*T .. d*T+T-1}, a replica group {t, T+t, ...}), connected on first use, cached;
  //     then group(ranks).allreduce_sum(span) in place. Members call a group's collectives in
  //     one order and agree on one order across groups (else they deadlock until the peer
  //     timeout). Errors: TrainingError without peer links, TransportError/TimeoutError naming
  //     the peer. peers(): the links themselves (byte counters via stats(), the endpoint).
  [[nodiscard]] bool has_peers() const noexcept;
  [[nodiscard]] collectives::PeerLinks& peers();
  [[nodiscard]] collectives::Ring& group(const std::vector<std::uint32_t>& ranks);
  [[nodiscard]] std::uint32_t world_size();
  // Wiring, done by run_worker.
  void set_peer_links(collectives::PeerLinks* links);
  void set_peer_endpoints(std::vector<std::string> endpoints);
  // A re-formed group: a replacement's new endpoint (PeerLinks::update_endpoints).
  void update_peer_endpoints(std::vector<std::string> endpoints,
                             const std::vector<std::uint32_t>& replaced);

  // The run's transport (for modes that connect to parameter servers) and the job id.
  [[nodiscard]] transport::Transport& transport() const;
  void set_transport(transport::Transport& transport) noexcept { transport_ = &transport; }
  [[nodiscard]] std::uint64_t job_id() const noexcept { return options_.job_id; }
  // For waits on other peers than the coordinator: throws when the coordinator has stopped
  // this worker (inproc) or has been silent for worker_timeout_ms (it hosts the servers, so
  // while it answers heartbeats a long wait is the run's pace, not a failure).
  void check_alive() const;
  // Traffic on other sockets than the coordinator's, for the report.
  void add_bytes(std::uint64_t sent, std::uint64_t received) noexcept;
  void add_comm_seconds(double seconds) noexcept { comm_seconds_ += seconds; }

  // For the modes where training.batch_size is per worker (parameters, async): this worker's
  // epoch is S = ceil(rows / batch_size) local steps (1 with `full`), and local step s of an
  // epoch takes rows [floor(s*n/S), floor((s+1)*n/S)) of that epoch's order, so batch sizes
  // differ by at most one row and never exceed batch_size. local_batch keeps the S it is given
  // (parameters mode: its planned one), so rows taken over make its batches larger, not more.
  [[nodiscard]] std::uint64_t local_steps_per_epoch() const noexcept;
  [[nodiscard]] Batch local_batch(std::uint64_t local_step, std::uint64_t per_epoch);

  // `continue`: rows of a lost worker this worker trains on from `from_epoch` on (normalized,
  // classes assigned). They join the shard when that epoch's order is prepared; `replace`
  // (an elastic re-plan after a join): they are the whole shard from then on.
  void adopt_rows(data::Shard rows, std::uint64_t from_epoch, bool replace = false);
  void adopt_all();  // training is over: every adopted row joins the shard (final evaluation)
  // Loads share k of m of a lost worker's rows (a kReassign message) to train on from
  // `from_epoch` (adopt_rows); returns how many. Set up by run_worker, which holds the
  // normalization and classes the rows need.
  using ShareTaker = std::function<std::uint64_t(const protocol::Envelope&, std::uint64_t)>;
  void set_share_taker(ShareTaker taker) { share_taker_ = std::move(taker); }
  std::uint64_t take_share(const protocol::Envelope& reassign, std::uint64_t from_epoch);
  // Async, where local epochs differ in length once rows taken over join: the rows local epoch
  // `epoch` (>= the current one) will have, and local step `s` of it (as local_batch).
  [[nodiscard]] std::uint64_t rows_in_epoch(std::uint64_t epoch) const;
  [[nodiscard]] Batch local_batch_at(std::uint64_t epoch, std::uint64_t s);

  // Compute time, measured by the mode: each call is one step; it also tells the heartbeat
  // (the coordinator's straggler check). Communication is measured by receive/send.
  void add_compute_seconds(double seconds);

  // ---- Fault injection (core/protocol/faults.hpp) and repeated requests.
  // Every mode's worker half calls begin_step at the start of each of its steps, before it
  // starts timing the step: injected faults fire here, and a `slow` fault's sleep is added to
  // the step's add_compute_seconds (so the step-time statistics see it).
  void begin_step(std::uint64_t step);
  // The common loop's first look at each request. True when it repeats the last one handled
  // (same type, step, generation and fields: the coordinator asks again for an overdue reply);
  // the reply cached by send has then been sent again, and the request must not be worked on
  // twice (a second ring all-reduce, a second round of local training).
  [[nodiscard]] bool answer_repeat(const protocol::Envelope& request);
  void disarm_faults();  // a replacement for a lost worker runs without faults (restart)
  void before_server_push() { (void)faults_.before_send(false); }  // delays only: no retry
  [[nodiscard]] protocol::Report report() const;

 private:
  void prepare_epoch(std::uint64_t epoch);
  // Rows [floor(s*n/S), floor((s+1)*n/S)) of `epoch`'s order.
  [[nodiscard]] Batch slice(std::uint64_t epoch, std::uint64_t s, std::uint64_t per_epoch);
  [[nodiscard]] Batch sparse_slice(std::int64_t begin, std::int64_t count);  // of a sparse shard

  const WorkerOptions& options_;
  const config::Config& config_;
  transport::Connection& connection_;
  transport::Transport* transport_ = nullptr;
  HeartbeatClient& heartbeat_;
  models::Model& model_;
  data::Shard& shard_;
  std::uint64_t train_rows_;
  std::uint64_t steps_per_epoch_;
  std::uint64_t epoch_ = UINT64_MAX;
  std::vector<std::uint64_t> order_;
  data::RowMatrix batch_x_;
  Eigen::VectorXd batch_y_;
  models::OnesView sparse_view_;       // a sparse shard's rows, as batches point to them
  std::vector<std::uint64_t> range_;   // a sparse batch's rows when not shuffled
  models::RowWarmer warmer_;           // warm(): the next batch's rows, during waits
  double compute_seconds_ = 0, comm_seconds_ = 0;
  std::uint64_t extra_bytes_sent_ = 0;
  std::uint64_t extra_bytes_received_ = 0;
  std::uint64_t steps_ = 0;
  StepTimes step_seconds_;
  collectives::PeerLinks* peers_ = nullptr;  // owned by run_worker
  FaultInjector faults_;
  double fault_seconds_ = 0;  // slept by a slow fault, not yet in add_compute_seconds
  struct RequestKey {
    protocol::Type type{};
    std::uint64_t step = 0;
    std::uint32_t generation = 0;
    nlohmann::json fields;
    std::vector<std::size_t> array_sizes;
    [[nodiscard]] bool operator==(const RequestKey&) const = default;
  };
  std::optional<RequestKey> last_request_;
  std::optional<wire::Message> last_reply_;  // to last_request_, as sent (or dropped)
  std::map<protocol::Type, NoticeHandler> notice_handlers_;
  struct Adopted {
    data::Shard rows;
    std::uint64_t from_epoch = 0;
    bool replace = false;
  };
  std::vector<Adopted> adopted_;
  ShareTaker share_taker_;
  std::deque<protocol::Envelope> early_;  // read by poll_coordinator, not yet by receive
};

}  // namespace dt::roles
