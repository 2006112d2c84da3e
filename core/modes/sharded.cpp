// `gradients` mode with sharded parameter servers (aggregation.servers: K > 1). The same
// synchronous SGD as gradients.cpp, but the parameters live on K servers, each owning one
// contiguous key range with its own optimizer state (see core/servers/param_server.hpp):
//
//   coordinator -> worker   step s (no payload)
//   worker -> server k      keys of server k of my gradient sum, my rows (every k)
//   worker -> coordinator   my rows and loss sum (logging, divergence check)
//   server k -> worker      keys of server k of the new parameters (every worker)
//
// Server k adds the pushes in rank order, divides by the total rows of the round (the sum of
// the rows the pushes carry: every server computes the same integer the coordinator logs), adds
// the L2 term and steps its optimizer, so K = 1, 2, 3 give the same parameters up to the
// order-free elementwise arithmetic: the same bits. The coordinator drives the steps, logs,
// checks divergence, and assembles the parameters from the servers for validation and the end.
//
// Lost workers (fault_tolerance.on_worker_failure): the coordinator tells the servers (threads
// of its process) directly. continue: the round completes with the survivors' pushes, divided
// by the rows they carried, and the lost worker's rows are dealt to the survivors from the next
// epoch, as in gradients.cpp. restart: the replacement is sent the parameters at the start of
// the round in progress (from the servers' copies), redoes that round's gradient and pushes it
// to every server; a server that already has the lost worker's push of the round drops the
// duplicate, so the run is bit-identical to one without the failure.
//
// A planned leave (fault_tolerance.elastic) is a loss under continue after the leaver's last
// round: the servers stop waiting for it from the next round (docs/elastic.md).
// aggregation.compression {topk}: each worker chooses its top-k over the whole gradient plus
// residual and sends each server the chosen entries of its range (maybe none); the residual
// rides on the reply to the coordinator when a checkpoint is due (topk_state.hpp).
//
// Sparse rows: the keyed exchange instead of whole slices (sparse_sharded.hpp,
// core/servers/param_server_keyed.cpp); the coordinator's side is the same.

#include "core/modes/mode.hpp"
#include "core/modes/server_mode.hpp"
#include "core/modes/sparse_sharded.hpp"
#include "core/modes/step.hpp"
#include "core/coordinator/membership.hpp"
#include "core/modes/topk_state.hpp"
#include "core/coordinator/session.hpp"
#include "core/protocol/compression.hpp"
#include "core/servers/server_group.hpp"
#include "core/worker/server_client.hpp"
#include "core/worker/leave.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/text.hpp"
#include "base/timeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <utility>

namespace dt::modes {
namespace {

class ShardedGradientsMode final : public ServerGroupMode {
 public:
  // The servers' slices and optimizer state (and their copies for a replacement): at 2^24
  // keys, a dozen vectors of 64 MB to clear, before the training clock.
  void prepare(roles::CoordinatorSession& session) override {
    refuse_compressed_sparse_rows(session);
    servers_ = std::make_unique<roles::ServerGroup>(session, std::nullopt, from_);
  }

  void coordinate(roles::CoordinatorSession& session) override {
    if (!servers_) prepare(session);
    auto& params = session.params();
    const auto& config = session.config();
    auto& servers = *servers_;
    servers.forget_departed();  // resumed without its leavers (elastic)
    // aggregation.compression: what the servers received (their replaced ones' too), in the
    // summary of a failed run as well.
    const protocol::SummaryTally tally(config, session.result().aggregation,
                                       [&](protocol::CompressionTally& t) {
      t = {};
      for (const auto& s : servers.stats()) t.add(s.half_values, s.half_bytes, s.topk_entries);
    });
    std::uint64_t round = session.first_step();  // the step in progress, or the next one
    bool in_step = false;  // from the step's broadcast until every server has applied it
    std::vector<int> leaving;  // elastic: left after pushing the round in progress
    const LossHandlerScope scope(session, [&](int rank, config::FailurePolicy action) {
      const bool restart = action == config::FailurePolicy::kRestart;
      // A planned leave: its pushes of the rounds it trained count, whichever wait read it.
      if (const auto left = roles::left_after(session.result().membership, rank);
          left && in_step && *left > round) {
        leaving.push_back(rank);  // the servers forget it once they applied the round
        return;
      }
      (void)servers.lose_worker(rank, restart);
      if (!restart) return;
      auto setup = servers.servers_message();
      setup.step = round;
      std::vector<double> start;
      servers.copy_params_of_round(round, start);
      setup.arrays.push_back(wire::to_bytes(std::span<const double>(start)));
      session.send_to(rank, std::move(setup));
      if (in_step) session.send_to(rank, {.type = protocol::Type::kStep, .step = round});
    });
    const std::uint64_t steps = session.schedule().total_steps();
    // Resumed from the checkpoint of the last step, nothing is left to train: the workers are
    // not sent to servers that stop at once (they would wait on them), the outputs come from the
    // servers' restored parameters.
    if (session.first_step() < steps) servers.announce();
    const int ranks = session.ranks();
    std::vector<double> worker_loss(static_cast<std::size_t>(ranks));
    std::vector<std::uint64_t> worker_rows(static_cast<std::size_t>(ranks));
    const auto every = static_cast<std::uint64_t>(config.output.log_every_steps);
    const bool scored = session.evaluation().validation() != nullptr;
    const auto timeout = 2 * config.fault_tolerance.worker_timeout_ms;
    const std::uint64_t per_epoch = std::max<std::uint64_t>(1, session.plan().steps_per_epoch);
    session.schedule().start_clock();
    const auto& early_stop = session.evaluation().early_stop();  // training.early_stopping
    for (std::uint64_t step = session.first_step(); step < steps && !early_stop.stopped(); ++step) {
      admit_joiners(session, servers, step);  // elastic: a joiner trains from this step on
      if (step % per_epoch == 0) session.reassign_lost_rows(step / per_epoch);
      round = step;
      in_step = true;
      timeline::set_step(step + 1);
      const auto span_start = timeline::start();
      session.broadcast({.type = protocol::Type::kStep, .step = step});
      const auto replies = session.gather(protocol::Type::kGradient, [&] { servers.check(); });
      timeline::span(timeline::Phase::kGather, span_start);
      // The survivors' only, after a continue.
      const auto [loss_sum, rows] = tally_replies(replies, worker_loss, worker_rows);
      check_batch_loss(config, step + 1, loss_sum, rows);
      if (session.checkpoint_due(step + 1)) topk_.keep_residuals(replies, step + 1, 0);
      // Every server has applied this step before it is logged (and before the next one).
      servers.wait_version(step + 1, timeout);
      for (const int rank : std::exchange(leaving, {})) (void)servers.lose_worker(rank, false);
      servers.keep(step + 1);  // what a failed server's replacement would start from
      in_step = false;
      round = step + 1;
      if (rows > 0) {  // else an empty step (only possible with tiny shards)
        // A log row scores the held-out rows with the servers' parameters, a whole copy of the
        // model: without a split there is nothing to score (the last copy follows the loop).
        if (scored && ((step + 1) % every == 0 || step + 1 == steps)) servers.copy_params(params);
        session.add_samples(rows);
        session.record_step(step + 1, loss_sum, rows, worker_loss, worker_rows);
      }
      session.step_boundary(step + 1);
    }
    session.close_admissions();
    servers.copy_params(params);
    servers.stop();
    session.result().aggregation["servers"] = servers.servers_json();
    session.result().aggregation["server_copy_seconds"] = servers.keep_seconds();
  }

  // Checkpoints (ServerGroupMode): the servers hold the parameters and optimizer state, each
  // of its slice; top-k adds the workers' residuals.
  bool save_state(roles::CoordinatorSession& session, std::uint64_t step,
                  checkpoint::Checkpoint& out) override {
    return topk_.save(session.config(), step, out) &&
           ServerGroupMode::save_state(session, step, out);
  }
  void restore_state(roles::CoordinatorSession& session,
                     const checkpoint::Checkpoint& from) override {
    ServerGroupMode::restore_state(session, from);
    TopkState::restore(session, from);
  }

  void work(roles::WorkerSession& session, const protocol::Envelope& message) override {
    auto& model = session.model();
    const std::size_t p = model.parameter_count();
    const auto& config = session.config();
    const bool topk = config.aggregation.compression == config::WireCompression::kTopk;
    if (message.type == protocol::Type::kResumeState) {  // top-k: my residual (topk_state.hpp)
      feedback_.set_residual(protocol::doubles(message, 0, p), p);
      return;
    }
    if (message.type == protocol::Type::kServers) {
      client_ = std::make_unique<roles::ServerClient>(session, message);
      if (topk) client_->set_topk(&feedback_);
      if (session.shard().sparse) {  // keyed: values are pulled with the first step's keys
        if (!message.arrays.empty()) sparse_.set_start(protocol::doubles(message, 0, p), message.step);
        return;
      }
      params_.assign(p, 0.0);
      grad_.assign(p, 0.0);
      owed_.reset();
      if (!message.arrays.empty()) {
        // A replacement (restart): the parameters at the start of the round it redoes, which
        // the servers may have left behind already.
        const auto start = protocol::doubles(message, 0, p);
        std::copy(start.begin(), start.end(), params_.begin());
        return;
      }
      client_->pull(0);
      client_->receive(params_);
      return;
    }
    if (message.type != protocol::Type::kStep || !client_) {
      fail<ProtocolError>("sharded gradients mode: unexpected {} message from the coordinator{}",
                          protocol::name_of(message.type),
                          client_ ? "" : " before the servers were announced");
    }
    if (session.shard().sparse) {
      sparse_.step(session, *client_, message);
      return;
    }
    // The parameters of this step: the slices that answered the last push. They are awaited
    // here rather than right after the push, so that no worker waits on a slice after the last
    // step (the servers stop then, and a slice still on its way may never arrive), and the
    // wait is only ever for a round every server has applied (the coordinator broadcasts a
    // step after that).
    timeline::Lap lap;  // output.timeline: pull, compute and push end to end
    if (owed_) {
      client_->receive(params_, *owed_);
      owed_.reset();
    }
    lap.mark(timeline::Phase::kPull);
    std::fill(grad_.begin(), grad_.end(), 0.0);
    session.begin_step(message.step);
    const auto start = std::chrono::steady_clock::now();
    const auto batch = session.batch(message.step);
    models::BatchResult result;
    if (batch.rows() > 0) result = model.batch_loss_and_gradient(params_, batch, grad_);
    const auto end = std::chrono::steady_clock::now();
    session.add_compute_seconds(std::chrono::duration<double>(end - start).count());
    lap.mark(timeline::Phase::kCompute, end);

    const auto rows = static_cast<std::uint64_t>(batch.rows());
    if (topk) {  // a worker without rows sends nothing and keeps its residual
      if (rows > 0) feedback_.select(grad_, config.aggregation.topk_ratio);
      else feedback_.select_none(p);
    }
    client_->push(grad_, message.step, rows, result.loss_sum);
    lap.mark(timeline::Phase::kPush);
    protocol::Envelope reply{.type = protocol::Type::kGradient, .step = message.step};
    reply.fields = {{"rows", rows}, {"loss_sum", result.loss_sum}};
    roles::flag_if_leaving(reply);  // its last step (elastic)
    if (residual_due(config, message.step + 1)) {
      reply.arrays.push_back(wire::to_bytes(feedback_.residual()));
    }
    session.send(std::move(reply));
    owed_ = message.step + 1;  // the parameters of the next step, taken when it starts
  }

 private:
  // Coordinator, fault_tolerance.elastic: joiners admitted at this step boundary (every server
  // has applied the round before and idles). Each server waits for their pushes from this
  // round on, as for a restart's replacement; each joiner is sent the servers and pulls the
  // parameters from them (the optimizer state stays there). Rows: the session's re-plan.
  static void admit_joiners(roles::CoordinatorSession& session, roles::ServerGroup& servers,
                            std::uint64_t step) {
    if (!session.config().fault_tolerance.elastic) return;
    const std::vector<int> before = session.alive();
    session.admit_joiners(step);
    for (const int rank : session.alive()) {
      if (std::binary_search(before.begin(), before.end(), rank)) continue;
      servers.admit_worker(rank);
      session.send_to(rank, servers.servers_message());
    }
  }

  // Worker side.
  std::unique_ptr<roles::ServerClient> client_;
  SparseShardedWorker sparse_;  // sparse rows: the keyed exchange (sparse_sharded.hpp)
  std::vector<double> params_;
  std::vector<double> grad_;
  std::optional<std::uint64_t> owed_;  // the version of the slices the last push is owed
  protocol::TopkFeedback feedback_;     // top-k: the residual
  // Coordinator side.
  TopkState topk_;  // top-k: the residuals of a checkpoint's step
};

}  // namespace

std::unique_ptr<Mode> make_sharded_gradients_mode() {
  return std::make_unique<ShardedGradientsMode>();
}

}  // namespace dt::modes
