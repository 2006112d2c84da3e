// `async` mode: asynchronous parameter-server SGD (PaddlePaddle's async mode; DataPredict's
// DistributedGradients applying each child gradient as it arrives). No barrier: each worker
// loops over its own batches (training.batch_size rows of its shard per step, training.epochs
// local epochs):
//
//   worker -> server k   pull (once, to start)
//   server k -> worker   keys of server k of the current parameters + their version
//   worker -> server k   keys of server k of the gradient SUM of its next batch, its rows and
//                        loss sum, the version it was computed from; this push is also the
//                        pull of the next step
//
// On sparse rows the exchange is keyed (async_keyed.hpp, core/servers/param_server_keyed.cpp):
// a push carries the gradient at its batch's parameter indices and the indices of the next
// batch, and the answer only their values; the rules below are the same.
//
// A server applies each push at once: the sum divided by that batch's rows, plus the L2 term,
// one optimizer step (with staleness_lr the step is divided by 1 + staleness). The staleness of
// a push at a server is the server's version (pushes it has applied) at apply time minus the
// version the gradient was computed from. With K servers every server applies every push to
// its own slice and keeps its own version; a gradient's staleness is the largest over the
// servers, and staleness_lr scales each slice's step by that server's own staleness.
//
// max_staleness s (stale-synchronous parallel): a server holds its reply to a worker about to
// start its step c until the slowest worker still training has completed at least c - s steps.
// The clock gap reported is, at every step start, the starting worker's completed steps minus
// the slowest's: never more than s. A push can then be at most (N - 1)(2s + 1) updates stale.
//
// The coordinator is the servers' host: it starts them, supervises the workers (exits,
// heartbeats) while they train, logs a loss.csv row every log_every applied updates (the mean
// loss of the batches applied since the previous row; validation on the parameters as they are
// when the row is written), checks each batch loss for divergence, and gathers the final
// parameters once every push has been applied.
//
// training.early_stopping: a check is a log row's validation pass, on the servers' snapshot of
// the update that row ends at; its step (loss.csv's, stopped_at, best_step) counts the updates
// server 0 has applied. The coordinator follows server 0 from log step to log step; once
// patience runs out it ends training (ServerGroup::end_training): each server answers the next
// push or pull of every worker with kEnd instead of a slice and applies nothing more, and the
// workers send kDone with the steps they pushed. The pushes applied between the stopping check
// and the end (those on their way: a few) are in aggregation.updates, not in the log; model.json
// holds the best check's parameters, as in every mode.
//
// Lost workers (fault_tolerance.on_worker_failure): the coordinator tells the servers (threads
// of its process) directly.
//   restart: the replacement resumes at the fewest of the lost worker's pushes any server has
//     applied. A push in flight when the worker died counts as applied where it arrived: a
//     server that has it drops the replacement's push of that step (the replacement's gradient
//     of it is used by the servers that lack it), so every (worker, step) is applied exactly
//     once per server and the run's updates still add up to every worker's plan.
//   continue: the servers stop waiting for the lost worker (the staleness bound, the updates
//     to apply), and its steps not done leave the schedule. Server 0 deals its rows to the
//     survivors it will send a slice again (share k of m rides on that slice: an async worker
//     hears nothing from the coordinator while it trains); each loads its share and trains on
//     it from its next local epoch, which lengthens its plan: its pushes say so, and the
//     servers' step clocks, the coordinator's count of updates and the log's epochs follow.
//     When no survivor will ask again (all on their last step) the rows join the survivors for
//     the final evaluation only, as in every mode.
// A planned leave (fault_tolerance.elastic) is taken as a loss under `continue`, with no
// failure: the leaver stops between two steps, once every server has answered its last push,
// so nothing of it is in flight (its membership event says its pushes and the steps not done).

#include "core/modes/mode.hpp"
#include "core/modes/async_keyed.hpp"
#include "core/modes/async_joins.hpp"
#include "core/modes/async_lost.hpp"
#include "core/modes/async_resume.hpp"
#include "core/protocol/step_messages.hpp"
#include "core/protocol/timing.hpp"
#include "core/modes/server_mode.hpp"
#include "core/coordinator/session.hpp"
#include "core/servers/server_group.hpp"
#include "core/worker/server_client.hpp"
#include "core/coordinator/membership.hpp"
#include "core/coordinator/tensor_plan.hpp"
#include "core/worker/leave.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/text.hpp"
#include "base/timeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <tuple>

namespace dt::modes {
namespace {

// Early stopping: how long the coordinator follows server 0 with no update before it leaves the
// run to the gather of the workers' kDone (see coordinate).
constexpr std::chrono::milliseconds kFollowStall{1000};

class AsyncMode final : public ServerGroupMode {
 public:
  void coordinate(roles::CoordinatorSession& session) override {
    auto& params = session.params();
    const auto& config = session.config();
    const auto& async = config.aggregation.async;
    const int ranks = session.ranks();
    const auto ri = [](int r) { return static_cast<std::size_t>(r); };

    roles::AsyncServing serving;
    serving.max_staleness = async.max_staleness;
    serving.staleness_lr = async.staleness_lr;
    // The loss log evaluates validation at every log_every-th update: the servers keep the
    // parameters of those updates, as they have moved on by the time the log is drained (whole
    // copies of the model: none without a split, which has nothing to score).
    const bool scored = session.evaluation().validation() != nullptr;
    serving.snapshot_every =
        scored ? static_cast<std::uint64_t>(config.output.log_every_steps) : 0;
    // Checkpoints take the servers' state at each multiple of checkpoint_every updates.
    serving.checkpoint_every =
        static_cast<std::uint64_t>(config.fault_tolerance.checkpoint_every_steps);
    for (int r = 0; r < ranks; ++r) {
      const auto local = roles::local_steps_per_epoch(config.training, session.plan().shard_rows[ri(r)]);
      // A join slot (elastic max_workers) plans no steps until a worker joins into it.
      const bool slot = r >= session.plan().starting_ranks();
      const auto epochs = static_cast<std::uint64_t>(config.training.epochs);
      serving.worker_steps.push_back(slot ? 0 : local * epochs);
    }
    // Resumed after a join or with another worker count: a re-plan (async_resume.hpp).
    AsyncResume resume(session, from_);
    if (resume.active()) {
      serving.worker_steps = resume.plans();
      serving.start_steps = resume.done();
    }
    servers_ = std::make_unique<roles::ServerGroup>(session, serving, from_);
    auto& servers = *servers_;
    LostWorkers lost(session, servers, serving.worker_steps);  // sets the schedule
    AsyncJoins joins(session, servers, lost);  // elastic: joiners between two pushes
    // training.early_stopping: a check is each log row's validation pass (on the servers'
    // snapshot of that update); once patience runs out the servers answer with an end.
    const auto& early_stop = session.evaluation().early_stop();
    if (early_stop.stopped()) servers.end_training();  // resumed from a checkpoint of the stop
    const LossHandlerScope scope(session, [&](int rank, config::FailurePolicy action) {
      lost.on_loss(rank, action);
    });
    lost.forget_departed(resume.active() && !resume.resized());
    session.schedule().start_clock();
    // The workers start training when they learn the servers.
    if (resume.active()) {
      resume.announce(servers);
    } else {
      servers.announce();
    }

    const auto every = static_cast<std::uint64_t>(config.output.log_every_steps);
    std::vector<double> worker_loss(ri(ranks), 0.0);
    std::vector<std::uint64_t> worker_rows(ri(ranks), 0);
    std::uint64_t applied = session.first_step();
    bool training = true;
    const auto drain = [&] {
      servers.check();
      for (const auto& u : servers.take_log()) {
        // Server 0's replacement numbers its updates on from its copy, and counts the pushes
        // it lost as done: an update already logged is not logged twice, lost ones not at all.
        if (u.version <= applied) continue;
        lost.replan(static_cast<std::uint32_t>(u.rank), u.planned);
        // After an early stop the updates still applied are not logged (stopped_at is the last).
        if (early_stop.stopped()) continue;
        const auto before = applied;
        applied = u.version;
        const auto total = lost.total();
        if (u.rows > 0 && !std::isfinite(u.loss_sum)) {
          fail<TrainingError>("training diverged at update {} (worker {}, its step {}): the "
                              "batch loss is {}; lower training.optimizer.lr (now {}) or "
                              "normalize the data",
                              applied, u.rank, u.step + 1,
                              text::format_double(u.loss_sum / static_cast<double>(u.rows)),
                              text::format_double(config.training.optimizer.lr));
        }
        if (scored && (applied / every != before / every || applied == total)) {
          servers.copy_params_at(applied, params);
        }
        worker_loss[ri(u.rank)] = u.loss_sum;
        worker_rows[ri(u.rank)] = u.rows;
        session.add_samples(u.rows);
        session.record_step(applied, u.loss_sum, u.rows, worker_loss, worker_rows);
        worker_loss[ri(u.rank)] = 0.0;
        worker_rows[ri(u.rank)] = 0;
        session.step_boundary(applied);
        if (early_stop.stopped()) servers.end_training();
      }
      if (training) joins.poll(applied);  // not once every worker is done
    };
    // With early stopping the coordinator follows server 0 to each log step as it gets there
    // (the gather below drains once a poll slice, ~50 ms: many async updates), so that the end
    // reaches the workers soon after the check that stops. Supervised as every wait is; a run
    // with no update for a while is left to the gather, which also re-sends a lost kServers.
    using Clock = std::chrono::steady_clock;
    auto supervised = Clock::now();
    auto progressed = supervised;
    std::uint64_t past = 0;  // server 0 reached a version it has not logged: wait beyond it
    while (early_stop.enabled() && !early_stop.stopped() && applied < lost.total() &&
           Clock::now() - progressed < kFollowStall) {
      const auto next = std::max(std::min((applied / every + 1) * every, lost.total()), past);
      const bool reached = servers.wait_update(next, roles::kPollSlice);
      if (Clock::now() - supervised >= roles::kPollSlice) {
        session.supervise();
        supervised = Clock::now();
      }
      const auto before = applied;
      drain();
      // A replacement of server 0 counts the pushes it lost as done, unlogged.
      if (applied > before) {
        progressed = Clock::now();
        past = 0;
      } else if (reached) {
        past = next + 1;
      }
    }
    const auto done = session.gather(protocol::Type::kDone, drain);
    training = false;
    if (!servers.ended()) servers.wait_all_applied(config.fault_tolerance.worker_timeout_ms);
    drain();  // every plan a push stated is known now
    for (const auto& d : done) {  // the survivors' only, after a continue
      const auto steps = protocol::count(d, "steps");
      // Ended early (training.early_stopping): fewer steps than planned.
      if (steps != lost.plan(d.rank) && !(servers.ended() && steps < lost.plan(d.rank))) {
        fail<ProtocolError>("worker {} finished after {} steps, {} were planned", d.rank, steps,
                            lost.plan(d.rank));
      }
    }
    lost.settle(done);
    joins.settle(done);
    servers.copy_params(params);
    servers.stop();

    const auto stats = servers.stats();
    std::uint64_t gap = 0;
    for (const auto& st : stats) gap = std::max(gap, st.max_clock_gap);
    auto& out = session.result().aggregation;
    out["servers"] = servers.servers_json();
    out["max_staleness"] = async.max_staleness ? nlohmann::json(*async.max_staleness) : nlohmann::json();
    out["staleness_lr"] = async.staleness_lr;
    out["staleness"] = merged_staleness(stats).to_json();
    if (async.max_staleness) {
      out["staleness_bound"] = static_cast<std::uint64_t>(ranks - 1) *
                               (2 * static_cast<std::uint64_t>(*async.max_staleness) + 1);
    }
    out["max_clock_gap"] = gap;
    out["worker_steps"] = stats.front().worker_steps;
    // Ended early: the updates server 0 applied (stopped_at, and those on their way then).
    out["updates"] = servers.ended() ? stats.front().version : lost.total();
    out["server_copy_seconds"] = servers.keep_seconds();
    if (!lost.lost().empty()) out["lost_steps"] = lost.lost();
  }

 public:
  // Checkpoints (ServerGroupMode): the servers' state at a multiple of checkpoint_every applied
  // updates (kept by the servers as they pass it) and each worker's applied steps; a stop
  // between two such counts leaves the last periodic checkpoint.

  void work(roles::WorkerSession& session, const protocol::Envelope& message) override {
    if (message.type != protocol::Type::kServers) {
      fail<ProtocolError>("async mode: unexpected {} message from the coordinator",
                          protocol::name_of(message.type));
    }
    auto& model = session.model();
    // Sparse rows: the keyed exchange (async_keyed.hpp): no vector of the model's width here.
    std::optional<AsyncKeyedWorker> keyed;
    if (session.shard().sparse) keyed.emplace(session);
    const std::size_t p = keyed ? 0 : model.parameter_count();
    // Kept past the last step: a worker done with its steps still tells a failed server's
    // replacement so (ServerClient::on_moved).
    client_ = std::make_unique<roles::ServerClient>(session, message);
    auto& client = *client_;
    // clip_norm over several servers: this worker's factor rides on each push (push_clip.hpp).
    std::optional<PushClip> clip;
    const double clip_norm = session.config().training.optimizer.clip_norm;
    if (clip_norm > 0.0 && client.ranges().size() > 1) clip.emplace(model, clip_norm);
    std::vector<double> params(p, 0.0);
    std::vector<double> grad(p, 0.0);
    const auto& training = session.config().training;
    const auto epochs = static_cast<std::uint64_t>(training.epochs);
    // Local steps of each local epoch: all alike, until rows taken over from a lost worker
    // (continue) lengthen the epochs from the one they join.
    std::vector<std::uint64_t> per_epoch(epochs, 0);
    std::uint64_t first = 0;  // a resumed run or a replacement: the steps the servers applied
    if (const auto it = message.fields.find("start_steps"); it != message.fields.end()) {
      first = it->at(session.rank()).get<std::uint64_t>();
    }
    // An elastic joiner: its share of every row rides on this message; it trains from the
    // run's next epoch (async_joins.hpp), its epochs before that have no steps. So does a
    // worker of a resumed run that re-plans (async_resume.hpp), its step count going on from
    // its start_steps (`base`, in no epoch of its plan).
    const bool resumed = message.fields.contains("replan_from_epoch");
    const std::uint64_t base = resumed ? first : 0;
    const auto plan_from = [&](std::uint64_t first_epoch) {
      for (auto e = first_epoch; e < epochs; ++e) {
        per_epoch[e] = roles::local_steps_per_epoch(training, session.rows_in_epoch(e));
      }
      return base + std::accumulate(per_epoch.begin(), per_epoch.end(), std::uint64_t{0});
    };
    const auto join_from = protocol::count_or(message, resumed ? "replan_from_epoch"
                                                               : "join_from_epoch", 0);
    if (const auto it = message.fields.find("reassign"); it != message.fields.end()) {
      protocol::Envelope share{.type = protocol::Type::kReassign, .fields = *it};
      share.arrays.push_back(message.arrays.at(0));
      (void)session.take_share(share, join_from);
    }
    (void)plan_from(0);
    std::fill_n(per_epoch.begin(), std::min(join_from, epochs), std::uint64_t{0});
    std::uint64_t steps =
        base + std::accumulate(per_epoch.begin(), per_epoch.end(), std::uint64_t{0});
    std::uint64_t epoch = resumed ? std::min(join_from, epochs) : 0;  // the local epoch of
    std::uint64_t in_epoch = resumed ? 0 : first;                      // `step`, its step in it
    while (epoch < epochs && in_epoch >= per_epoch[epoch]) in_epoch -= per_epoch[epoch++];
    nlohmann::json took = nlohmann::json::array();
    nlohmann::json replans = nlohmann::json::array();  // elastic re-plans taken
    bool restated = false;  // the plan changed once: every push states it from then on
    if (keyed && first < steps) {
      keyed->start(client, {epoch, in_epoch}, steps);
    } else {
      client.pull(steps);
    }
    for (std::uint64_t step = first; step < steps; ++step) {
      // output.timeline: pull, compute and push end to end, on this worker's own step axis.
      timeline::set_step(step + 1);
      timeline::Lap lap;
      // Held by the server while the staleness bound says wait.
      if (keyed) {
        keyed->receive(client);
      } else {
        client.receive(params);
      }
      lap.mark(timeline::Phase::kPull);
      // A planned leave (elastic) between two steps: every server has applied this worker's
      // last push (this receive is their answer to it), so nothing of it is in flight.
      roles::leave_if_asked();
      if (auto notice = client.take_notice()) {
        // A share of a lost worker's rows, from the next local epoch (this one keeps its order);
        // an elastic re-plan's share of every row, from the epoch it names if that is later.
        const auto from = std::max(epoch + 1, protocol::count_or(*notice, "from_epoch", 0));
        const auto rows = session.take_share(*notice, from);
        steps = plan_from(std::min(from, epochs));
        restated = true;
        if (const auto joined = notice->fields.find("joined"); joined != notice->fields.end()) {
          replans.push_back({{"joined", *joined}, {"rows", rows}, {"from_epoch", from}});
        } else {  // a lost worker's rows (after a join: with every other row, a re-plan)
          took.push_back({{"lost_rank", protocol::count(*notice, "lost_rank")}, {"rows", rows},
                          {"from_epoch", from}, {"deal", notice->fields.value("deal", 0)}});
        }
      }
      if (client.ended()) {  // training.early_stopping: a server answered with the end
        steps = step;
        break;
      }
      session.begin_step(step);
      const auto start = std::chrono::steady_clock::now();
      AsyncKeyedWorker::At next{epoch, in_epoch + 1};  // the next step's place
      if (next.second == per_epoch[epoch]) next = {epoch + 1, 0};
      const auto plan = restated ? steps : 0;  // 0: as the coordinator planned it
      models::BatchResult result;
      std::uint64_t rows = 0;  // dense: the batch's rows (keyed: the worker keeps them)
      if (keyed) {
        result = keyed->compute(step + 1 < steps ? std::optional(next) : std::nullopt);
      } else {
        std::fill(grad.begin(), grad.end(), 0.0);
        const auto batch = session.local_batch_at(epoch, in_epoch);
        if (batch.rows() > 0) result = model.batch_loss_and_gradient(params, batch, grad);
        rows = static_cast<std::uint64_t>(batch.rows());
      }
      const auto end = std::chrono::steady_clock::now();
      // With the batch read ahead since the last step (one add_compute_seconds a step).
      session.add_compute_seconds(std::chrono::duration<double>(end - start).count() +
                                  (keyed ? keyed->take_ahead_seconds() : 0.0));
      lap.mark(timeline::Phase::kCompute, end);
      if (keyed) {
        keyed->push(client, step, result, plan, clip ? &*clip : nullptr);
      } else {
        std::optional<double> factor;  // clip_norm over several servers: the worker's factor
        if (clip) factor = clip->factor(params, grad, rows);
        client.push(grad, step, rows, result.loss_sum, plan, factor);
      }
      lap.mark(timeline::Phase::kPush);
      std::tie(epoch, in_epoch) = next;
      // The batch after the next, while the push waits for its answer; only within the next
      // step's local epoch, whose rows and order an answer's share cannot change. Not a span
      // of the timeline (a step's phases stay pull, compute, push), as the star's and the
      // servers' batches made ahead are not; its time is the next step's compute time.
      if (keyed && step + 2 < steps && epoch < epochs && in_epoch + 1 < per_epoch[epoch]) {
        keyed->read_ahead({epoch, in_epoch + 1});
      }
    }
    roles::training_done();  // a leave from now on waits for the end: nothing is left to re-plan
    protocol::Envelope done{.type = protocol::Type::kDone, .step = steps};
    done.fields = {{"steps", steps}};
    if (!took.empty()) done.fields["took"] = took;
    if (!replans.empty()) done.fields["replans"] = replans;
    session.send(std::move(done));
  }

 private:
  std::unique_ptr<roles::ServerClient> client_;  // worker side
};

}  // namespace

std::unique_ptr<Mode> make_async_mode() { return std::make_unique<AsyncMode>(); }

}  // namespace dt::modes
