// `gradients` mode over a ring (aggregation.topology: ring): the same synchronous SGD as the
// star, without a central node on the data path. Every worker starts from the same parameters
// (model.init from the seed) and keeps its own copy and optimizer. Each step it computes the
// gradient SUM, row count and loss sum of its part of the global batch (WorkerSession::batch,
// as in the star), all-reduces [gradient, rows, loss] in one buffer over the ring of all
// workers (transports/collectives/ring.hpp), divides by the total rows, adds the L2 term and
// takes the optimizer step: the same arithmetic as the star's coordinator, so every worker
// holds the same parameters (bit for bit: the all-reduce gives every member the same sum).
//
// The coordinator only paces, supervises and logs: it sends "steps s to s+k-1" (no parameters)
// and gets each worker's loss and rows of every one of those steps (its share, for loss.csv and
// the divergence check, as in the star). On a log step with a validation split, rank 0 also
// sends its parameters so the validation loss is of the current model. At the end rank 0 sends
// the final parameters and every worker a digest of its own, which must all agree.
//
// The steps go out in batches (ring_batches.hpp), which takes the coordinator off the step
// path: the workers go from one all-reduce to the next without waiting for it. Under
// on_worker_failure restart or continue every step is its own batch: a re-form goes back to the
// step the coordinator was waiting on, which the replicas must be at most one step past.
//
// Wire per step: 2(N-1)/N of the P+2 values to the ring successor and as much from the
// predecessor, per worker; a few bytes to and from the coordinator.
//
// A lost member (restart, continue): the ring re-forms and the step is done again
// (ring_reform.hpp). "Rank 0" above is then the ring's leader: its lowest-ranked member.

#include "core/modes/mode.hpp"
#include "core/protocol/step_messages.hpp"
#include "core/modes/ring_batches.hpp"
#include "core/modes/ring_compress.hpp"
#include "core/modes/ring_reform.hpp"
#include "core/modes/ring_state.hpp"
#include "core/modes/step.hpp"
#include "core/models/optim.hpp"
#include "core/coordinator/session.hpp"
#include "core/coordinator/resume.hpp"
#include "core/worker/leave.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"
#include "base/text.hpp"
#include "base/timeline.hpp"
#include "transports/collectives/ring.hpp"
#include "transports/transport.hpp"

#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>

namespace dt::modes {
namespace {

using ring::put_state;
using ring::read_optimizer;

using Clock = std::chrono::steady_clock;

[[nodiscard]] double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class RingMode final : public Mode {
 public:
  void coordinate(roles::CoordinatorSession& session) override {
    const std::uint64_t steps = session.schedule().total_steps();
    const std::uint64_t per_epoch = std::max<std::uint64_t>(1, session.plan().steps_per_epoch);
    session.schedule().start_clock();
    // model.init: every replica starts from the coordinator's parameters (the initial model's)
    // with a fresh optimizer, as from a checkpoint at step 0; a resumed run's checkpoint wins.
    if (!session.config().model.init.empty() && session.first_step() == 0) {
      protocol::Envelope state{.type = protocol::Type::kResumeState};
      put_state(state, session.params(),
                models::make_optimizer(session.config().training.optimizer,
                                       session.params().size())->state());
      session.broadcast(std::move(state));
    }
    RingReformer reformer(session);
    reformer.follow_batches(in_flight_);  // a leave after the batch in flight (elastic)
    reformer.form_over_members(session.first_step());  // resumed without its leavers
    const bool grow = !may_reform(session.config());
    ring::BatchPlanner planner(session, grow);
    // Whatever ends the loop, no batch is left in flight: a stop checkpoint may ask the leader.
    struct Landed {
      std::optional<ring::Batch>& batch;
      ~Landed() { batch.reset(); }
    } landed{in_flight_};
    const std::size_t p = session.params().size();
    const auto keep = [&](const ring::Batch& batch) {
      return [this, &batch, p](const protocol::Envelope& leader) {
        if (batch.want_state) keep_state(leader, batch.end, p, ring::kLossArrays);
      };
    };
    const auto& early_stop = session.evaluation().early_stop();  // training.early_stopping
    // A run that fails reports the compressed frames of the batches recorded (ring_compress.hpp).
    std::optional<protocol::SummaryTally> sent_frames{std::in_place, session.config(),
                                                      session.result().aggregation};
    for (std::uint64_t step = session.first_step(); step < steps && !early_stop.stopped();) {
      try {
        if (!in_flight_) {
          reformer.before_step(step, per_epoch);
          in_flight_ = sent(session, planner.batch(step));
        }
        const auto replies = session.gather(protocol::Type::kRingLoss, {}, ring::kFinishGrace);
        ring::add_counts(sent_frames->tally(), replies);
        const ring::Batch done = *in_flight_;
        in_flight_.reset();
        planner.took(done.count(), seconds_since(done.sent));
        // Growing batches (abort): the next one goes out before this one is logged and
        // checkpointed, so the workers never wait on the coordinator's files. Not after
        // Ctrl-C: the stop checkpoint is then of this batch's last step, which the leader holds.
        // Nor with early stopping: a stop at this batch's log row must find no batch in flight.
        if (grow && done.end < steps && !signals::interrupted() &&
            !session.config().training.early_stopping) {
          reformer.before_step(done.end, per_epoch);
          in_flight_ = sent(session, planner.batch(done.end));
        }
        ring::record(session, done, replies, keep(done));
        step = done.end;
        if (!in_flight_ && signals::interrupted()) {
          fail<InterruptedError>("interrupted at step {}", session.result().steps);
        }
      } catch (const RingReform&) {
        in_flight_.reset();
        reformer.arm(true);
        reformer.reform(step);
      }
    }
    session.close_admissions();  // elastic: joiners still waiting are refused
    sent_frames.reset();  // finish() puts the workers' own counts
    for (;;) {
      try {
        if (reformer.pending()) reformer.reform(steps);
        finish(session);
        return;
      } catch (const RingReform&) {
        reformer.reform(steps);
      }
    }
  }

  // Checkpoints: the replicas hold the parameters and the optimizer state, so rank 0 sends them
  // along with the step a periodic checkpoint falls on; after a stop the coordinator asks rank 0
  // for the state of the last step it completed (rank 0 keeps the one before its latest step).
  // While a batch is in flight the leader is somewhere in it: only the state that came with
  // the last batch can be saved (a checkpoint that fell due elsewhere, after a failed write,
  // waits for the next cut).
  bool save_state(roles::CoordinatorSession& session, std::uint64_t step,
                  checkpoint::Checkpoint& out) override {
    if (state_step_ != step && (in_flight_ || !request_state(session, step))) return false;
    out.arrays["parameters"] = state_params_;
    roles::put_optimizer(out, "optimizer", state_optimizer_);
    return true;
  }

  // Every replica continues from the checkpoint's parameters and optimizer state.
  void restore_state(roles::CoordinatorSession& session,
                     const checkpoint::Checkpoint& from) override {
    protocol::Envelope state{.type = protocol::Type::kResumeState, .step = from.step()};
    put_state(state, from.array("parameters"), roles::get_optimizer(from, "optimizer"));
    session.broadcast(std::move(state));
  }

  void work(roles::WorkerSession& session, const protocol::Envelope& message) override {
    switch (message.type) {
      case protocol::Type::kRingReform: return reform(session, message);
      case protocol::Type::kStep: return step(session, message);
      case protocol::Type::kRingFinish: return report(session, message);
      case protocol::Type::kResumeState: return resume(session, message);
      case protocol::Type::kStateRequest: return send_state(session, message);
      default:
        fail<ProtocolError>("ring topology: unexpected {} message from the coordinator",
                            protocol::name_of(message.type));
    }
  }

 private:
  // Coordinator: the final parameters from the leader, checked against every worker's digest;
  // each worker's ring counters into summary.json's "aggregation".
  void finish(roles::CoordinatorSession& session) {
    auto& params = session.params();
    session.broadcast({.type = protocol::Type::kRingFinish, .step = session.result().steps});
    const auto results = session.gather(protocol::Type::kRingResult);
    const auto got = protocol::doubles(results.at(0), 0, params.size());
    std::copy(got.begin(), got.end(), params.begin());
    const std::uint64_t expected = ring::digest(params);
    nlohmann::json workers = nlohmann::json::array();
    for (const auto& r : results) {
      const std::uint64_t d = protocol::count(r, "digest");
      if (d != expected) {
        fail<TrainingError>("worker {} ends with other parameters than worker {} (digest "
                            "{:016x}, expected {:016x}): the ring replicas diverged",
                            r.rank, results.front().rank, d, expected);
      }
      workers.push_back({{"rank", r.rank},
                         {"allreduces", protocol::count(r, "allreduces")},
                         {"allreduce_seconds", protocol::number(r, "allreduce_seconds")},
                         {"values_sent", protocol::count(r, "values_sent")},
                         {"values_received", protocol::count(r, "values_received")},
                         {"peer_bytes_sent", protocol::count(r, "peer_bytes_sent")},
                         {"peer_bytes_received", protocol::count(r, "peer_bytes_received")},
                         {"peer_messages_dropped", protocol::count(r, "peer_messages_dropped")}});
    }
    const auto n = static_cast<double>(session.alive().size());
    session.result().aggregation = {
        {"topology", "ring"},
        {"vector_values", params.size() + 2},  // the gradient, rows and loss
        {"chunk_values", collectives::kDefaultChunkDoubles},
        {"share_sent_per_step", 2.0 * (n - 1.0) / n},
        {"step_requests", requests_},  // batches of steps the coordinator sent (resent ones once)
        {"replicas_agree", true},
        {"workers", std::move(workers)}};
    ring::put_compression_summary(session, results);  // aggregation.compression
  }

  [[nodiscard]] ring::Batch sent(roles::CoordinatorSession& session, const ring::Batch& batch) {
    ++requests_;
    return ring::send(session, batch);
  }

  // Coordinator: rank 0's state after `done` steps, sent with that step's reply.
  void keep_state(const protocol::Envelope& reply, std::uint64_t done, std::size_t p,
                  std::size_t first = 0) {
    const auto got = protocol::doubles(reply, first, p);
    state_params_.assign(got.begin(), got.end());
    state_optimizer_ = read_optimizer(reply, p, first);
    state_step_ = done;
  }

  // Coordinator, after a stop: asks the leader for its state after `step` steps. It answers once
  // its current step is done (it holds that step's state and the one before); a ring that
  // cannot finish its step (a member lost) does not answer in time, and the last periodic
  // checkpoint stands.
  bool request_state(roles::CoordinatorSession& session, std::uint64_t step) {
    const auto wait = std::chrono::milliseconds(
        std::min(1000, std::max(100, session.config().fault_tolerance.worker_timeout_ms / 2)));
    if (session.alive().empty()) return false;
    const int leader = session.alive().front();
    // Under abort the lost worker is still listed: when it is the leader, no one else holds
    // the state (the others may be stuck in the step's all-reduce), so the last periodic
    // checkpoint stands.
    for (const auto& f : session.result().failures) {
      if (f.value("rank", -1) == leader && f.value("action", "") == "abort") return false;
    }
    try {
      session.send_to(leader, {.type = protocol::Type::kStateRequest, .step = step});
      const auto reply = session.receive_from(leader, protocol::Type::kResumeState, wait);
      if (!reply || !protocol::flag(*reply, "available")) return false;
      keep_state(*reply, step, session.params().size());
      return true;
    } catch (const Error& e) {
      log::warn("ring worker {} could not send its state for the checkpoint: {}", leader,
                e.what());
      return false;
    }
  }

  // Worker: a resumed run's parameters and optimizer state, before its first step.
  void resume(roles::WorkerSession& session, const protocol::Envelope& message) {
    prepare(session);
    const auto got = protocol::doubles(message, 0, params_.size());
    params_.assign(got.begin(), got.end());
    optimizer_->set_state(read_optimizer(message, params_.size()));
    done_ = message.step;
  }

  // Worker (the leader; after a re-form, the member that hands its state to replacements): the
  // state after the requested step count, the current one or the one before the latest step.
  void send_state(roles::WorkerSession& session, const protocol::Envelope& message) {
    prepare(session);
    protocol::Envelope reply{.type = protocol::Type::kResumeState, .step = message.step};
    if (message.step == done_) {
      reply.fields["available"] = true;
      put_state(reply, params_, optimizer_->state());
    } else if (message.step + 1 == done_ && have_previous_) {
      reply.fields["available"] = true;
      put_state(reply, previous_params_, previous_optimizer_);
    } else {
      reply.fields["available"] = false;
    }
    session.send(std::move(reply));
  }

  // Worker: state made on the first step (every worker from the same seed).
  void prepare(roles::WorkerSession& session) {
    if (optimizer_) return;
    auto& model = session.model();
    const std::size_t p = model.parameter_count();
    params_.assign(p, 0.0);
    model.init(params_, session.config().seed);
    optimizer_ = models::make_optimizer(  // a schedule counts the ring's global steps
        session.config().training.optimizer, p,
        static_cast<std::uint64_t>(session.config().training.epochs) * session.steps_per_epoch());
    buffer_.assign(p + 2, 0.0);
    if (members_.empty()) {
      members_.resize(session.world_size());
      std::iota(members_.begin(), members_.end(), 0U);
    }
    ring_ = &session.peers().ring(members_, ring_generation_);
    keep_previous_ = may_reform(session.config());
    // A re-form message ends a collective that waits on a lost peer (ring_reform.hpp); under
    // abort none comes, but the coordinator's word that the run ended does (poll_coordinator).
    session.peers().set_interrupt([&session] {
      if (session.poll_coordinator(protocol::Type::kRingReform)) throw GroupAbandoned{};
    });
  }

  [[nodiscard]] bool leader(const roles::WorkerSession& session) const {
    return !members_.empty() && members_.front() == session.rank();
  }

  // Worker: the coordinator re-forms the ring after a lost member. Back to the state after
  // message.step steps (the state before the latest step, when this replica finished the
  // abandoned one), then the ring of the new generation over the members. A replacement
  // ("fresh") holds no state yet: the coordinator sends it a member's next (kResumeState).
  void reform(roles::WorkerSession& session, const protocol::Envelope& message) {
    auto reform = protocol::read_reform(message);
    const auto& fresh = reform.fresh;
    session.update_peer_endpoints(std::move(reform.endpoints), fresh);
    prepare(session);
    const auto step = message.step;
    const bool is_fresh = std::find(fresh.begin(), fresh.end(), session.rank()) != fresh.end();
    if (!is_fresh && done_ == step + 1 && have_previous_) {
      params_ = previous_params_;
      optimizer_->set_state(previous_optimizer_);
      have_previous_ = false;
      done_ = step;
    } else if (!is_fresh && done_ != step) {
      fail<ProtocolError>("the ring re-forms at step {}, but this replica has done {} steps and "
                          "cannot go back there", step, done_);
    }
    retired_ += ring_->stats();
    session.peers().retire(*ring_);
    members_ = std::move(reform.members);
    ring_generation_ = message.generation;
    ring_ = &session.peers().ring(members_, ring_generation_);
    log::info("the ring re-forms over workers {} at step {}{}", fmt::join(members_, ", "),
              step + 1, is_fresh ? "; waiting for a member's state" : "");
  }

  // Worker: the steps the message asks for, one all-reduce each; then one reply with the rows
  // and loss sum of every step, and (leader) what the coordinator asked for after the last.
  void step(roles::WorkerSession& session, const protocol::Envelope& message) {
    prepare(session);
    const std::uint64_t count = protocol::count(message, "steps");
    if (count == 0 || count > ring::kMaxBatch) {
      fail<ProtocolError>("ring step message: steps must be 1 to {}, got {}", ring::kMaxBatch,
                          count);
    }
    step_rows_.assign(count, 0.0);
    step_loss_.assign(count, 0.0);
    for (std::uint64_t j = 0; j < count; ++j) {
      if (!step_once(session, message.step + j, step_rows_[j], step_loss_[j])) return;
    }
    protocol::Envelope reply{.type = protocol::Type::kRingLoss, .step = message.step};
    reply.arrays.push_back(wire::to_bytes(std::span<const double>(step_rows_)));
    reply.arrays.push_back(wire::to_bytes(std::span<const double>(step_loss_)));
    roles::flag_if_leaving(reply);  // its last step (elastic)
    sent_.put(reply, ring_stats());
    const auto want = message.fields.find("send_parameters");
    const auto state = message.fields.find("send_state");
    if (leader(session) && state != message.fields.end() && state->is_boolean() &&
        state->get<bool>()) {
      put_state(reply, params_, optimizer_->state());
    } else if (leader(session) && want != message.fields.end() && want->is_boolean() &&
               want->get<bool>()) {
      reply.arrays.push_back(wire::to_bytes(std::span<const double>(params_)));
    }
    session.send(std::move(reply));
  }

  // One step: false when it was abandoned (a member lost; the re-form message is next).
  bool step_once(roles::WorkerSession& session, std::uint64_t index, double& rows_out,
                 double& loss_out) {
    auto& model = session.model();
    const std::size_t p = params_.size();
    const std::span<double> grad = std::span(buffer_).first(p);
    std::fill(buffer_.begin(), buffer_.end(), 0.0);

    session.begin_step(index);
    timeline::set_step(index + 1);
    auto start = Clock::now();
    const auto batch = session.batch(index);
    models::BatchResult result;
    if (batch.rows() > 0) result = model.batch_loss_and_gradient(params_, batch, grad);
    buffer_[p] = static_cast<double>(batch.rows());
    buffer_[p + 1] = result.loss_sum;
    double compute = timeline::seconds_since(timeline::Phase::kCompute, start);
    session.warm(index + 1);  // the next step's rows, while the all-reduce waits on a peer

    try {
      ring::allreduce_step(*ring_, buffer_, protocol::half_codec(session.config()));
    } catch (const GroupAbandoned&) {
      // A member was lost: the coordinator's re-form message waits to be read next.
      log::info("step {} abandoned: a ring member was lost", index + 1);
      return false;
    } catch (Error& e) {
      e.add_context(fmt::format("step {}: ring all-reduce of {} values", index + 1,
                                buffer_.size()));
      throw;
    }

    start = Clock::now();
    const double rows = buffer_[p];
    // The star skips an empty step, and a diverged one fails the run before its update: the
    // replicas do the same (the coordinator reports the divergence).
    const bool update = rows > 0 && std::isfinite(buffer_[p + 1]);
    if (keep_previous_ || leader(session)) {  // for a stop checkpoint and a re-form
      // The step writes the new parameters into the other buffer and the two swap: the state
      // before the step is kept without copying 8 bytes a parameter every step.
      previous_optimizer_ = optimizer_->state();
      have_previous_ = true;
      if (update) {
        previous_params_.resize(p);
        apply_gradient_sum(model, *optimizer_, params_, grad, rows, previous_params_);
        params_.swap(previous_params_);
      } else {
        previous_params_ = params_;
      }
    } else if (update) {
      apply_gradient_sum(model, *optimizer_, params_, grad, rows);
    }
    done_ = index + 1;
    compute += timeline::seconds_since(timeline::Phase::kApply, start);
    session.add_compute_seconds(compute);
    rows_out = static_cast<double>(batch.rows());
    loss_out = result.loss_sum;
    return true;
  }

  void report(roles::WorkerSession& session, const protocol::Envelope& message) {
    prepare(session);
    const auto peer = session.peers().stats();
    const auto ring = ring_stats();
    protocol::Envelope reply{.type = protocol::Type::kRingResult, .step = message.step};
    reply.fields = {{"digest", ring::digest(params_)},
                    {"allreduces", ring.allreduces},
                    {"allreduce_seconds", ring.seconds},
                    {"values_sent", ring.values_sent}, {"half_values", ring.half_values_sent},
                    {"values_received", ring.values_received},
                    {"peer_bytes_sent", peer.bytes_sent}, {"half_bytes", ring.half_bytes_sent},
                    {"peer_bytes_received", peer.bytes_received},
                    {"peer_messages_dropped", peer.messages_dropped}};
    if (leader(session)) reply.arrays.push_back(wire::to_bytes(std::span<const double>(params_)));
    session.send(std::move(reply));
    if (reported_) return;  // asked again after a re-form: counted once
    reported_ = true;
    // worker_stats count every socket: the ring's traffic and time join the coordinator link's
    // (the ring is done by now; summary.json's "aggregation" has them on their own).
    session.add_bytes(peer.bytes_sent, peer.bytes_received);
    session.add_comm_seconds(ring.seconds);
  }

  [[nodiscard]] collectives::RingStats ring_stats() const {
    auto stats = retired_;
    stats += ring_->stats();
    return stats;
  }

  // Coordinator side: the batch the workers are working on, if any, and how many were sent.
  std::optional<ring::Batch> in_flight_;
  std::uint64_t requests_ = 0;
  // Rank 0's state after state_step_ steps, for a checkpoint.
  std::uint64_t state_step_ = 0;
  std::vector<double> state_params_;
  models::OptimizerState state_optimizer_;

  // Worker side.
  std::uint64_t done_ = 0;  // steps this replica has completed
  std::vector<double> previous_params_;  // the state before its latest step (leader, or all
                                         // replicas when a lost member re-forms the ring)
  models::OptimizerState previous_optimizer_;
  bool have_previous_ = false;
  std::vector<double> params_;
  std::unique_ptr<models::Optimizer> optimizer_;
  std::vector<double> buffer_;  // [gradient sum, rows, loss sum], all-reduced in place
  std::vector<double> step_rows_;  // this worker's rows and loss sum of each step of a batch
  std::vector<double> step_loss_;
  collectives::Ring* ring_ = nullptr;
  std::vector<std::uint32_t> members_;  // the ring, in order; empty until the first message
  std::uint64_t ring_generation_ = 0;   // the coordinator's generation when it re-formed
  collectives::RingStats retired_;      // of rings retired by re-forms
  ring::SentSince sent_;                // compressed frames reported with the batches' replies
  bool keep_previous_ = false;
  bool reported_ = false;
};

}  // namespace

std::unique_ptr<Mode> make_ring_mode() { return std::make_unique<RingMode>(); }

}  // namespace dt::modes
