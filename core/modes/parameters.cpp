// `parameters` mode: model averaging (DistributedModelParameters, FedAvg, local SGD).
//
// Each worker keeps its own copy of the model and its own optimizer. Training runs in rounds:
// the coordinator picks the round's clients, sends them the merged parameters (kRound); each
// trains on its own shard for sync_every (K local steps, or E local epochs) with batches of
// training.batch_size rows (per worker in this mode) and sends back its parameters, the rows it
// trained and its loss sum (kRoundResult); the coordinator merges the returned models with
// aggregation.parameters.merge (merge.hpp) and starts the next round.
//
// Wire per round: the parameters down to each of the round's clients, the parameters plus three
// numbers up from each. Nothing moves between rounds, whatever K is. With aggregation.compression
// fp16 / bf16 the models travel as half-float deltas both ways (parameters_half.hpp).
//
// The schedule, with S_k = ceil(shard_k / batch_size) local steps per epoch for worker k (1 with
// batch_size full) and S = max_k S_k:
//   sync_every {steps: K}:  T = training.epochs * S local steps in all, in ceil(T / K) rounds of
//                           K steps (the last one the remainder). A worker with a smaller shard
//                           wraps into its next epoch sooner.
//   sync_every {epochs: E}: ceil(training.epochs / E) rounds of E local epochs (the last one the
//                           remainder), E * S_k local steps for worker k.
// The log's step axis is local steps of the largest shard (S per epoch): round r ends at step
// min((r + 1) K, T), or min((r + 1) E, epochs) * S. A loss.csv row (with a validation pass of the
// merged model) is written at the end of each round that crosses a multiple of
// output.log_every, and after the last round; the divergence check runs every round.
//
// A worker's position in its data (its local step counter, hence its epoch and its shuffle)
// continues across rounds, so every row of its shard is seen once per local epoch it trains.
// With clients_per_round < 1 the round's clients are drawn from the seed (stream
// kClientSampling, indexed by the round): max(1, floor(fraction * workers)) distinct ranks. A
// worker not drawn idles through that round: it receives nothing, trains nothing, and its
// position does not move (it resumes where it stopped the next time it is drawn), so over the
// run a worker trains about clients_per_round * training.epochs epochs, as in FedAvg where the
// round count is fixed.
//
// Optimizer state after a merge (aggregation.parameters.optimizer_state):
//   reset (default): each round starts a fresh optimizer at the merged parameters. Momentum and
//     Adam's moments describe the trajectory of this worker's own pre-merge model; after the
//     merge the model is somewhere else, so that velocity points the wrong way, and a sampled
//     client may have skipped many rounds, making its state older still. FedAvg's clients are
//     stateless for the same reason.
//   keep: the worker's optimizer carries its state (velocity, moments, Adam's step count) over
//     from its previous round, as local SGD with persistent momentum does.
// With plain SGD (no momentum) the two are the same.

#include "core/modes/merge.hpp"
#include "core/modes/optimizer_wire.hpp"
#include "core/modes/parameters_half.hpp"
#include "core/modes/parameters_joins.hpp"
#include "core/modes/parameters_resize.hpp"
#include "core/modes/parameters_rounds.hpp"
#include "core/modes/server_mode.hpp"
#include "core/protocol/compression.hpp"
#include "core/protocol/step_messages.hpp"
#include "core/modes/mode.hpp"
#include "core/models/optim.hpp"
#include "core/models/optim_controls.hpp"
#include "core/coordinator/session.hpp"
#include "core/coordinator/evaluate.hpp"
#include "core/coordinator/resume.hpp"
#include "core/worker/leave.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/text.hpp"
#include "base/timeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace dt::modes {
namespace {

using config::MergeRule;
using rounds::apply_rule;
using rounds::make_schedule;
using rounds::needs_validation;
using rounds::sample_clients;

class ParametersMode final : public Mode {
 public:
  void coordinate(roles::CoordinatorSession& session) override {
    const auto& config = session.config();
    const auto& pc = config.aggregation.parameters;
    auto& params = session.params();
    const std::size_t p = params.size();
    const int ranks = session.ranks();
    // After a resize on --resume the log's axis of the checkpoint's run (parameters_resize.hpp).
    const auto schedule = make_schedule(config, session.plan(), resize_.steps_per_epoch());
    session.schedule().set(schedule.total_steps, schedule.steps_per_epoch);
    steps_per_epoch_ = schedule.steps_per_epoch;

    const auto* validation = session.validation();
    if (needs_validation(pc.merge) && (validation == nullptr || validation->y.size() == 0)) {
      // make_plan refuses such a config before anything starts; this guards the dereference.
      fail<ConfigError>("aggregation.parameters.merge {} needs validation rows and there are none",
                        config::name_of(pc.merge));
    }

    auto& summary = session.result().aggregation;
    const bool resumed = first_round_ > 0;  // the summary so far came with the checkpoint
    positions_.resize(static_cast<std::size_t>(ranks), 0);
    client_optimizers_.resize(static_cast<std::size_t>(ranks));
    if (!resumed) summary = {{"mode", "parameters"},
               {"merge", config::name_of(pc.merge)},
               {"rounds", schedule.rounds},
               {"optimizer_state", config::name_of(pc.optimizer_state)},
               {"clients_per_round", pc.clients_per_round},
               {"local_steps_per_epoch", nlohmann::json::array()},
               {"participation", std::vector<std::uint64_t>(static_cast<std::size_t>(ranks), 0)},
               {"fallback_rounds", 0}};
    const bool sampling = pc.clients_per_round < 1.0;
    if (!resumed) {
      if (schedule.sync_steps > 0) {
        summary["sync_every"] = {{"steps", schedule.sync_steps}};
      } else {
        summary["sync_every"] = {{"epochs", schedule.sync_epochs}};
      }
      if (pc.merge == MergeRule::kTrimmedMean) {
        summary["trim"] = pc.trim;
        summary["trimmed_per_end"] = merge::trimmed_count(
            sample_clients(config.seed, 0, ranks, pc.clients_per_round).size(), pc.trim);
      }
      for (const auto rows : session.plan().shard_rows) {
        summary["local_steps_per_epoch"].push_back(roles::local_steps_per_epoch(config.training, rows));
      }
      if (sampling) summary["selected"] = nlohmann::json::array();
      if (pc.merge == MergeRule::kBest) summary["chosen"] = nlohmann::json::array();
      if (pc.merge == MergeRule::kValidationWeighted) summary["weights"] = nlohmann::json::array();
    }
    summary["rounds"] = schedule.rounds;  // training.epochs may have been raised on resume
    // With optimizer_state keep the clients' optimizer states are part of a checkpoint: each
    // round's reply carries the client's (stateless plain SGD has none to carry).
    const bool keep_state = pc.optimizer_state == config::OptimizerState::kKeep &&
                            !models::make_optimizer(config.training.optimizer, 1)->state().slots.empty();

    // aggregation.compression fp16 / bf16: the models travel as deltas (parameters_half.hpp);
    // the tally goes into the summary at the end, and when the run fails.
    const auto codec = protocol::half_codec(config);
    protocol::SummaryTally summary_tally(config, summary);
    std::optional<HalfModelsOut> half;
    if (codec) half.emplace(*codec, ranks);

    std::vector<double> merged(p);
    std::vector<double> worker_loss(static_cast<std::size_t>(ranks));
    std::vector<std::uint64_t> worker_rows(static_cast<std::size_t>(ranks));
    std::vector<merge::Candidate> candidates;
    std::vector<double> errors;
    session.schedule().start_clock();
    resize_.note(session, first_round_, positions_);  // a resize on --resume: its event
    const auto& early_stop = session.evaluation().early_stop();  // training.early_stopping
    for (std::uint64_t r = first_round_; r < schedule.rounds && !early_stop.stopped(); ++r) {
      // Elastic: joiners admitted, leavers' rows dealt (parameters_joins.hpp).
      joins_.boundary(session, r, [&](std::uint64_t k) { return schedule.end_step(k); });
      // Drawn from every rank, so that losing a worker (continue) does not change whom the
      // other rounds draw; a lost worker drawn simply sits the round out.
      auto clients = sample_clients(config.seed, r, ranks, pc.clients_per_round);
      std::erase_if(clients, [&](int c) { return !session.is_alive(c); });
      if (clients.empty()) {
        session.record_step(schedule.end_step(r), 0, 0, worker_loss, worker_rows);
        rounds_done_ = r + 1;
        session.step_boundary(schedule.end_step(r));
        continue;
      }
      // output.timeline: the round's spans carry the step it ends at (its loss.csv row).
      timeline::set_step(schedule.end_step(r));
      timeline::Lap lap;
      // Each client is told where it is in its own data, so a replacement resumes its shard
      // where the lost worker left it.
      const auto send_round = [&](int c) {
        protocol::Envelope request{.type = protocol::Type::kRound, .step = r};
        request.fields = {{"round", r}, {"local_step", positions_[static_cast<std::size_t>(c)]}};
        if (keep_state) request.fields["send_optimizer"] = true;
        joins_.annotate(session, request, c);  // a joiner's local steps per epoch
        // A schedule counts each worker's local steps over the whole run (docs/optimizers.md).
        if (models::has_lr_schedule(config.training.optimizer)) {
          request.fields["schedule_steps"] = schedule.total_steps;
        }
        request.fields[schedule.sync_steps > 0 ? "steps" : "epochs"] = schedule.amount(r);
        // output.timeline: a worker's local steps go on the log's axis from the round's start.
        if (timeline::on()) request.fields["timeline_step"] = r == 0 ? 0 : schedule.end_step(r - 1);
        if (half) {
          half->put_model(request, c, params, summary_tally.tally());
        } else {
          request.arrays.push_back(wire::to_bytes(std::span<const double>(params)));
        }
        session.send_to(c, std::move(request));
      };
      if (half) {
        for (int k = 0; k < ranks; ++k) {
          if (!session.is_alive(k)) half->forget(k);  // a slot a joiner may take
        }
      }
      for (const int c : clients) send_round(c);
      lap.mark(timeline::Phase::kBroadcast);
      session.set_round_end(schedule.end_step(r));  // a leave with its reply (elastic)
      // Compressed, a replacement holds no model to add a delta to: it is sent the round's
      // model whole (instead of the session's re-send of the delta it was sent).
      std::optional<LossHandlerScope> loss_scope;
      if (half) {
        loss_scope.emplace(session, [&](int rank, config::FailurePolicy action) {
          half->forget(rank);
          const bool restart = action == config::FailurePolicy::kRestart;
          if (restart && std::ranges::binary_search(clients, rank)) send_round(rank);
        });
      }
      const auto replies = session.gather_from(protocol::Type::kRoundResult, clients);
      lap.mark(timeline::Phase::kGather);
      if (replies.empty()) {  // every client of the round was lost (continue)
        session.record_step(schedule.end_step(r), 0, 0, worker_loss, worker_rows);
        continue;
      }

      std::fill(worker_loss.begin(), worker_loss.end(), 0.0);
      std::fill(worker_rows.begin(), worker_rows.end(), 0);
      candidates.clear();
      double loss_sum = 0;
      std::uint64_t rows = 0;
      for (const auto& reply : replies) {
        const int rank = static_cast<int>(reply.rank);
        const auto ri = static_cast<std::size_t>(rank);
        worker_loss[ri] = protocol::number(reply, "loss_sum");
        worker_rows[ri] = protocol::count(reply, "rows");
        if (!std::isfinite(worker_loss[ri])) {
          fail<TrainingError>(
              "training diverged in round {} of {}: worker {}'s local loss is {}; lower "
              "training.optimizer.lr (now {}), sync more often (aggregation.parameters.sync_every) "
              "or normalize the data",
              r + 1, schedule.rounds, rank,
              text::format_double(worker_loss[ri] / static_cast<double>(std::max<std::uint64_t>(1, worker_rows[ri]))),
              text::format_double(config.training.optimizer.lr));
        }
        loss_sum += worker_loss[ri];
        rows += worker_rows[ri];
        const auto model = half ? half->model_of(reply, params, candidates.size(),
                                                 summary_tally.tally())
                                : protocol::doubles(reply, 0, p);
        candidates.push_back({.rank = rank, .params = model, .rows = worker_rows[ri]});
        summary["participation"][ri] = summary["participation"][ri].get<std::uint64_t>() + 1;
      }
      rounds::score(session, pc.merge, candidates, errors);

      merge::Outcome outcome;
      try {
        outcome = apply_rule(pc.merge, pc.trim, candidates, merged);
      } catch (Error& e) {
        e.add_context(fmt::format("training diverged in round {} of {}", r + 1, schedule.rounds));
        throw;
      }
      if (half) {
        half->advance(params, merged);  // rounded as the clients rebuild it
      } else {
        params = merged;
      }
      lap.mark(timeline::Phase::kMerge);  // the candidates scored (best, validation_weighted)
      // The clients' positions (and kept optimizer states) move with the merge, so that a
      // checkpoint never holds half a round.
      for (const auto& reply : replies) {
        const auto ri = static_cast<std::size_t>(reply.rank);
        positions_[ri] += protocol::count(reply, "steps");
        if (keep_state) client_optimizers_[ri] = read_optimizer_slots(reply, 1, p);
      }
      if (outcome.fallback) summary["fallback_rounds"] = summary["fallback_rounds"].get<int>() + 1;
      if (sampling) summary["selected"].push_back(clients);
      if (outcome.chosen) summary["chosen"].push_back(*outcome.chosen);
      if (pc.merge == MergeRule::kValidationWeighted) summary["weights"].push_back(outcome.weights);

      session.add_samples(rows);
      session.record_step(schedule.end_step(r), loss_sum, rows, worker_loss, worker_rows);
      rounds_done_ = r + 1;
      session.step_boundary(schedule.end_step(r));
    }
    session.close_admissions();  // elastic: joiners still waiting are refused
  }

  // Checkpoints, at round boundaries: the merged parameters, the next round, each client's
  // position in its data and (optimizer_state keep) its optimizer state.
  bool save_state(roles::CoordinatorSession& session, std::uint64_t /*step*/,
                  checkpoint::Checkpoint& out) override {
    out.arrays["parameters"] = session.params();
    out.manifest["mode_state"] = {{"round", rounds_done_}, {"positions", positions_}};
    // The log's axis, which a resize keeps (parameters_resize.hpp).
    if (steps_per_epoch_ > 0) out.manifest["mode_state"]["steps_per_epoch"] = steps_per_epoch_;
    for (std::size_t k = 0; k < client_optimizers_.size(); ++k) {
      if (client_optimizers_[k]) {
        roles::put_optimizer(out, fmt::format("client.{}.optimizer", k), *client_optimizers_[k]);
      }
    }
    return true;
  }

  void restore_state(roles::CoordinatorSession& session,
                     const checkpoint::Checkpoint& from) override {
    auto state = roles::read_rounds_state(from);
    first_round_ = rounds_done_ = state.round;
    positions_ = std::move(state.positions);
    const auto ranks = static_cast<std::size_t>(session.ranks());
    positions_.resize(ranks, 0);
    client_optimizers_.assign(ranks, std::nullopt);
    const auto saved = from.manifest.value("optimizers", nlohmann::json::object());
    if (!saved.is_object()) {
      fail<DataError>("{}: the checkpoint's manifest is incomplete (optimizers is not an object)",
                      from.origin);
    }
    for (std::size_t k = 0; k < ranks; ++k) {
      const auto name = fmt::format("client.{}.optimizer", k);
      if (saved.contains(name)) client_optimizers_[k] = roles::get_optimizer(from, name);
    }
    // Another worker count: each slot carried over or started afresh (parameters_resize.hpp).
    resize_.restore(session, from, positions_, client_optimizers_);
    for (std::size_t k = 0; k < ranks; ++k) {
      protocol::Envelope resume{.type = protocol::Type::kResumeState, .step = from.step()};
      resume.fields = {{"position", positions_[k]}};
      if (client_optimizers_[k]) put_optimizer(resume, *client_optimizers_[k]);
      session.send_to(static_cast<int>(k), std::move(resume));
    }
  }

  void work(roles::WorkerSession& session, const protocol::Envelope& message) override {
    if (message.type == protocol::Type::kResumeState) {
      local_step_ = protocol::count(message, "position");
      if (message.fields.contains("optimizer_steps")) {
        const std::size_t p = session.model().parameter_count();
        optimizer_ = models::make_optimizer(session.config().training.optimizer, p);
        optimizer_->set_state(read_optimizer_slots(message, 0, p));
      }
      return;
    }
    if (message.type != protocol::Type::kRound) {
      fail<ProtocolError>("parameters mode: unexpected {} message from the coordinator",
                          protocol::name_of(message.type));
    }
    const auto& config = session.config();
    auto& model = session.model();
    const std::size_t p = model.parameter_count();
    const auto codec = protocol::half_codec(config);
    const auto merged =
        codec ? half_in_.read_model(message, *codec, p) : protocol::doubles(message, 0, p);
    params_.assign(merged.begin(), merged.end());
    local_step_ = protocol::count(message, "local_step");
    grad_.resize(p);
    if (!optimizer_ ||
        config.aggregation.parameters.optimizer_state == config::OptimizerState::kReset) {
      optimizer_ = models::make_optimizer(config.training.optimizer, p);
    }
    // Its planned epoch, kept when a leaver's rows join its shard (elastic): batches grow.
    if (per_epoch_ == 0) per_epoch_ = RoundJoins::steps_per_epoch(session, message);
    const std::uint64_t steps = message.fields.contains("steps")
                                    ? protocol::count(message, "steps")
                                    : protocol::count(message, "epochs") * per_epoch_;
    const std::uint64_t schedule_steps = message.fields.contains("schedule_steps")
                                             ? protocol::count(message, "schedule_steps")
                                             : 0;

    const std::uint64_t first = protocol::count_or(message, "timeline_step", 0);
    double loss_sum = 0;
    std::uint64_t rows = 0;
    for (std::uint64_t s = 0; s < steps; ++s) {
      session.begin_step(local_step_);
      timeline::set_step(first + s + 1);  // output.timeline: this local step on the log's axis
      optimizer_->set_schedule_step(local_step_, schedule_steps);
      const auto start = std::chrono::steady_clock::now();
      const auto batch = session.local_batch(local_step_++, per_epoch_);
      const auto n = static_cast<std::uint64_t>(batch.rows());
      if (n > 0) {
        std::fill(grad_.begin(), grad_.end(), 0.0);
        const auto result = model.batch_loss_and_gradient(params_, batch, grad_);
        const double inv = 1.0 / static_cast<double>(n);
        for (double& g : grad_) g *= inv;
        model.add_regularization_gradient(params_, grad_);
        optimizer_->step(params_, grad_);
        loss_sum += result.loss_sum;
        rows += n;
      }
      session.add_compute_seconds(timeline::seconds_since(timeline::Phase::kLocalStep, start));
      // Diverged: the coordinator fails the run on this loss; the rest would only train NaNs.
      if (!std::isfinite(loss_sum)) break;
    }
    protocol::Envelope reply{.type = protocol::Type::kRoundResult, .step = message.step};
    reply.fields = {{"rows", rows}, {"loss_sum", loss_sum}, {"steps", steps}};
    roles::flag_if_leaving(reply);  // its last round (elastic)
    reply.arrays.push_back(codec ? half_in_.encode_trained(params_, *codec)
                                 : wire::to_bytes(std::span<const double>(params_)));
    if (protocol::flag(message, "send_optimizer")) put_optimizer(reply, optimizer_->state());
    session.send(std::move(reply));
  }

 private:
  // Coordinator side: rounds merged, each client's position in its data (local steps it has
  // trained), each client's optimizer state (optimizer_state keep), the round to start from.
  std::uint64_t rounds_done_ = 0;
  std::uint64_t first_round_ = 0;
  std::vector<std::uint64_t> positions_;
  std::vector<std::optional<models::OptimizerState>> client_optimizers_;
  RoundJoins joins_{positions_, client_optimizers_};  // elastic: joins at round boundaries
  RoundsResize resize_;                  // elastic: another worker count on --resume
  std::uint64_t steps_per_epoch_ = 0;    // the log's axis (the schedule's S)

  // Worker side: this worker's model, optimizer and position in its data, across rounds.
  std::vector<double> params_;
  std::vector<double> grad_;
  std::unique_ptr<models::Optimizer> optimizer_;
  std::uint64_t local_step_ = 0;
  std::uint64_t per_epoch_ = 0;  // its local steps per epoch, as planned
  HalfModelsIn half_in_;         // aggregation.compression: the model it holds
};

}  // namespace

StepCount count_parameters_steps(const config::Config& config, const roles::Plan& plan) {
  const auto schedule = make_schedule(config, plan);
  return {.per_epoch = schedule.steps_per_epoch,
          .total = schedule.total_steps,
          .rounds = schedule.rounds};
}

std::unique_ptr<Mode> make_parameters_mode() { return std::make_unique<ParametersMode>(); }

}  // namespace dt::modes
