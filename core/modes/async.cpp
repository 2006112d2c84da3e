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
// Lost workers (fault_tolerance.on_worker_failure): the coordinator tells the servers (threads
// of its process) directly.
//   restart: the replacement resumes at the fewest of the lost worker's pushes any server has
//     applied. A push in flight when the worker died counts as applied where it arrived: a
//     server that has it drops the replacement's push of that step (the replacement's gradient
//     of it is used by the servers that lack it), so every (worker, step) is applied exactly
//     once per server and the run's updates still add up to every worker's plan.
//   continue: the servers stop waiting for the lost worker (the staleness bound, the updates
//     to apply); its steps not done leave the schedule (`updates`, the last log row), and its
//     rows join the survivors for the final evaluation. They are not trained on: an async
//     worker runs its whole plan without a word from the coordinator, so there is no point at
//     which to hand it more rows (README, "When a worker dies").

#include "core/modes/mode.hpp"
#include "core/modes/server_mode.hpp"
#include "core/roles/coordinator.hpp"
#include "core/roles/server_group.hpp"
#include "core/roles/worker.hpp"
#include "core/util/error.hpp"
#include "core/util/text.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace dt::modes {
namespace {

// Every push's staleness as the largest over the servers (each server measures its own).
roles::StalenessStats merged_staleness(const std::vector<roles::ServerStats>& stats) {
  roles::StalenessStats out;
  if (stats.empty()) return out;
  const auto ranks = stats.front().staleness_of.size();
  for (std::size_t r = 0; r < ranks; ++r) {
    // A worker lost under `continue` may have reached one server with its last push and not
    // another: count the steps every server applied.
    std::size_t steps = stats.front().staleness_of[r].size();
    for (const auto& st : stats) steps = std::min(steps, st.staleness_of[r].size());
    for (std::size_t c = 0; c < steps; ++c) {
      std::uint64_t s = 0;
      for (const auto& st : stats) s = std::max(s, st.staleness_of[r].at(c));
      out.add(s);
    }
  }
  return out;
}

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
    // parameters of those updates, as they have moved on by the time the log is drained.
    serving.snapshot_every = static_cast<std::uint64_t>(config.output.log_every_steps);
    // Checkpoints take the servers' state at each multiple of checkpoint_every updates.
    serving.checkpoint_every =
        static_cast<std::uint64_t>(config.fault_tolerance.checkpoint_every_steps);
    std::uint64_t total = 0;
    std::uint64_t per_epoch = 0;
    nlohmann::json lost_steps = nlohmann::json::array();  // continue: what lost workers left
    for (int r = 0; r < ranks; ++r) {
      const auto local = roles::local_steps_per_epoch(config.training, session.plan().shard_rows[ri(r)]);
      serving.worker_steps.push_back(local * static_cast<std::uint64_t>(config.training.epochs));
      total += serving.worker_steps.back();
      per_epoch += local;
    }
    session.set_schedule(total, per_epoch);
    servers_ = std::make_unique<roles::ServerGroup>(session, serving, from_);
    auto& servers = *servers_;
    const LossHandlerScope scope(session, [&](int rank, config::FailurePolicy action) {
      const bool restart = action == config::FailurePolicy::kRestart;
      const auto applied_by = servers.lose_worker(rank, restart);
      if (restart) {
        auto setup = servers.servers_message();
        std::vector<std::uint64_t> start(ri(ranks), 0);
        start[ri(rank)] = *std::min_element(applied_by.begin(), applied_by.end());
        setup.fields["start_steps"] = start;
        session.send_to(rank, std::move(setup));
        return;
      }
      // Server 0's log counts the updates: the lost worker's pushes it will never apply.
      const auto left = serving.worker_steps[ri(rank)] -
                        std::min(applied_by.front(), serving.worker_steps[ri(rank)]);
      total -= left;
      session.set_schedule(total, per_epoch);
      lost_steps.push_back({{"rank", rank}, {"applied", applied_by.front()}, {"not_done", left}});
    });
    session.start_clock();
    servers.announce();  // the workers start training when they learn the servers

    const auto every = static_cast<std::uint64_t>(config.output.log_every_steps);
    std::vector<double> worker_loss(ri(ranks), 0.0);
    std::vector<std::uint64_t> worker_rows(ri(ranks), 0);
    std::uint64_t applied = session.first_step();
    const auto drain = [&] {
      servers.check();
      for (const auto& u : servers.take_log()) {
        ++applied;
        if (u.rows > 0 && !std::isfinite(u.loss_sum)) {
          fail<TrainingError>("training diverged at update {} (worker {}, its step {}): the "
                              "batch loss is {}; lower training.optimizer.lr (now {}) or "
                              "normalize the data",
                              applied, u.rank, u.step + 1,
                              text::format_double(u.loss_sum / static_cast<double>(u.rows)),
                              text::format_double(config.training.optimizer.lr));
        }
        if (applied % every == 0 || applied == total) servers.copy_params_at(applied, params);
        worker_loss[ri(u.rank)] = u.loss_sum;
        worker_rows[ri(u.rank)] = u.rows;
        session.add_samples(u.rows);
        session.record_step(applied, u.loss_sum, u.rows, worker_loss, worker_rows);
        worker_loss[ri(u.rank)] = 0.0;
        worker_rows[ri(u.rank)] = 0;
        session.step_boundary(applied);
      }
    };
    const auto done = session.gather(protocol::Type::kDone, drain);
    for (const auto& d : done) {  // the survivors' only, after a continue
      const auto steps = protocol::count(d, "steps");
      if (steps != serving.worker_steps[d.rank]) {
        fail<ProtocolError>("worker {} finished after {} steps, {} were planned", d.rank, steps,
                            serving.worker_steps[d.rank]);
      }
    }
    servers.wait_all_applied(config.fault_tolerance.worker_timeout_ms);
    drain();
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
    out["updates"] = total;
    if (!lost_steps.empty()) out["lost_steps"] = lost_steps;
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
    const std::size_t p = model.parameter_count();
    roles::ServerClient client(session, message);
    std::vector<double> params(p, 0.0);
    std::vector<double> grad(p, 0.0);
    const std::uint64_t steps = session.local_steps_per_epoch() *
                                static_cast<std::uint64_t>(session.config().training.epochs);
    std::uint64_t first = 0;  // a resumed run: the steps the servers have applied already
    if (const auto it = message.fields.find("start_steps"); it != message.fields.end()) {
      first = it->at(session.rank()).get<std::uint64_t>();
    }
    client.pull(steps);
    for (std::uint64_t step = first; step < steps; ++step) {
      client.receive(params);  // held by the server while the staleness bound says wait
      session.begin_step(step);
      std::fill(grad.begin(), grad.end(), 0.0);
      const auto start = std::chrono::steady_clock::now();
      const auto batch = session.local_batch(step);
      models::BatchResult result;
      if (batch.y.size() > 0) result = model.loss_and_gradient(params, batch.x, batch.y, grad);
      session.add_compute_seconds(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      client.push(grad, step, static_cast<std::uint64_t>(batch.y.size()), result.loss_sum);
    }
    protocol::Envelope done{.type = protocol::Type::kDone, .step = steps};
    done.fields = {{"steps", steps}};
    session.send(std::move(done));
  }
};

}  // namespace

std::unique_ptr<Mode> make_async_mode() { return std::make_unique<AsyncMode>(); }

}  // namespace dt::modes
