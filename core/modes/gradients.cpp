// `gradients` mode: synchronous data parallelism (DistributedGradients). Every step each worker
// computes the gradient SUM, row count and loss sum of its part of the global batch; the
// coordinator adds them in rank order (so a given config and worker count give the same bits on
// every run), divides by the total rows, adds the L2 term and takes one optimizer step. The new
// parameters go out with the next step.
//
// Wire per step: parameters down to every worker, one gradient up from each (float64, or fp16 /
// bf16 frames with aggregation.compression: the worker rounds its float64 sum, the coordinator
// decodes and adds in float64; core/protocol/compression.hpp). With {topk: {ratio}} the worker
// sends the largest entries of its gradient plus residual (core/protocol/topk_feedback.hpp) and
// the coordinator adds them in rank order; the residuals travel only for checkpoints
// (topk_state.hpp).

#include "core/modes/lent_params.hpp"
#include "core/modes/mode.hpp"
#include "core/modes/sparse_star.hpp"
#include "core/modes/step.hpp"
#include "core/protocol/compression.hpp"
#include "core/protocol/topk_feedback.hpp"
#include "core/modes/topk_state.hpp"
#include "core/models/optim.hpp"
#include "core/coordinator/session.hpp"
#include "core/worker/leave.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/text.hpp"
#include "base/timeline.hpp"
#include "transports/transport.hpp"

#include <chrono>
#include <cmath>

namespace dt::modes {
namespace {

// Frames this large or larger are worth reading in place; smaller ones are cheaper to copy than
// to lease.
constexpr std::uint64_t kInPlaceMin = 64 << 10;

// The session's listener reads replies in place (Listener::receive_in_place) for the scope.
class InPlaceReplies {
 public:
  InPlaceReplies(roles::CoordinatorSession& session, std::uint64_t min_frame)
      : session_(session) {
    session_.receive_in_place(min_frame);
  }
  ~InPlaceReplies() { session_.receive_in_place(0); }
  InPlaceReplies(const InPlaceReplies&) = delete;
  InPlaceReplies& operator=(const InPlaceReplies&) = delete;

 private:
  roles::CoordinatorSession& session_;
};

class GradientsMode final : public CoordinatorOptimizerMode {
 public:
  void prepare(roles::CoordinatorSession& session) override {
    CoordinatorOptimizerMode::prepare(session);
    if (session.plan().source.sparse) {
      sparse_.mark_start(session.params(), optimizer(session).state());
    }
  }
  [[nodiscard]] bool touched_keys(std::vector<std::uint32_t>& out) const override {
    return sparse_.touched_keys(out);
  }

  void coordinate(roles::CoordinatorSession& session) override {
    const auto codec = protocol::half_codec(session.config());
    const bool topk = session.config().aggregation.compression == config::WireCompression::kTopk;
    if (session.plan().source.sparse) {
      refuse_compressed_sparse_rows(session);
      sparse_.coordinate(session, optimizer(session));
      session.close_admissions();  // elastic: joiners still waiting are refused
      return;
    }
    auto& params = session.params();
    const std::size_t p = params.size();
    auto* optimizer = &this->optimizer(session);
    // Plain float64 gradients are read where they lie in the shared-memory rings (no copy out):
    // each step's replies, and with them the ring space, are let go at the end of the step,
    // before the next request lets a worker write its next gradient (InPlaceReplies).
    const InPlaceReplies in_place(session, topk || codec ? 0 : kInPlaceMin);
    // The requests lend the parameters' buffer instead of copying it into a frame; each step
    // goes out of place into the other buffer, so a request's bytes stay as sent while it may be
    // sent again (lent_params.hpp).
    LentParams lent(params);
    std::uint64_t in_place_replies = 0;  // of all_replies, for the log
    std::uint64_t all_replies = 0;
    const int ranks = session.ranks();
    std::vector<double> grad(p);
    std::vector<const double*> parts;  // the replies' gradient sums, in rank order
    std::vector<double> worker_loss(static_cast<std::size_t>(ranks));
    std::vector<std::uint64_t> worker_rows(static_cast<std::size_t>(ranks));
    const std::uint64_t steps = session.schedule().total_steps();
    session.schedule().start_clock();
    const std::uint64_t per_epoch = std::max<std::uint64_t>(1, session.plan().steps_per_epoch);
    const auto& early_stop = session.evaluation().early_stop();  // training.early_stopping
    // aggregation.compression: bytes sent and saved, in the summary of a failed run too.
    protocol::SummaryTally summary_tally(session.config(), session.result().aggregation);
    auto& tally = summary_tally.tally();
    for (std::uint64_t step = session.first_step(); step < steps && !early_stop.stopped(); ++step) {
      session.admit_joiners(step);  // elastic: a joiner trains from this step on
      if (step % per_epoch == 0) session.reassign_lost_rows(step / per_epoch);
      timeline::set_step(step + 1);
      timeline::Lap lap;  // output.timeline: the gather starts where the broadcast ends
      protocol::Envelope request{.type = protocol::Type::kStep, .step = step};
      lent.lend(request);
      session.broadcast(std::move(request));
      lap.mark(timeline::Phase::kBroadcast);
      const auto replies = session.gather(protocol::Type::kGradient);
      lap.mark(timeline::Phase::kGather);

      // Summed in rank order (the gather's order), so a run gives the same bits every time.
      if (topk) {
        topk_.sum_in_order(replies, grad, tally);
        if (session.checkpoint_due(step + 1)) topk_.keep_residuals(replies, step + 1, 1);
      } else if (codec) {
        sum_half_in_order(replies, *codec, grad, tally);
      } else {  // added inside the optimizer's pass where it can (Optimizer::step_scaled_parts)
        parts.clear();
        for (const auto& reply : replies) parts.push_back(protocol::doubles(reply, 0, p).data());
        for (const auto& reply : replies) in_place_replies += reply.lease != nullptr;
        all_replies += replies.size();
      }
      const auto [loss_sum, rows] = tally_replies(replies, worker_loss, worker_rows);
      finish_step(session, *optimizer, grad, step + 1, loss_sum, rows, worker_loss, worker_rows,
                  lap, parts, &lent);
    }
    lent.finish();  // the parameters may be written in place from here on (early stopping)
    if (all_replies > 0) {
      log::info("{} of {} gradients read in place (shared memory)", in_place_replies, all_replies);
    }
    session.close_admissions();
  }

  // Top-k: the workers' residuals go into a checkpoint of a step they were sent with, and back
  // to the workers on resume (topk_state.hpp).
  bool save_state(roles::CoordinatorSession& session, std::uint64_t step,
                  checkpoint::Checkpoint& out) override {
    return topk_.save(session.config(), step, out) &&
           CoordinatorOptimizerMode::save_state(session, step, out);
  }
  void restore_state(roles::CoordinatorSession& session,
                     const checkpoint::Checkpoint& from) override {
    CoordinatorOptimizerMode::restore_state(session, from);
    topk_.restore(session, from);
  }

  void work(roles::WorkerSession& session, const protocol::Envelope& message) override {
    if (session.shard().sparse &&
        (message.type == protocol::Type::kStep || message.type == protocol::Type::kKeyRequest)) {
      sparse_.work(session, message);
      return;
    }
    if (message.type == protocol::Type::kResumeState) {  // top-k: my residual (topk_state.hpp)
      feedback_.set_residual(protocol::doubles(message, 0, session.model().parameter_count()),
                             session.model().parameter_count());
      return;
    }
    if (message.type != protocol::Type::kStep) {
      fail<ProtocolError>("gradients mode: unexpected {} message from the coordinator",
                          protocol::name_of(message.type));
    }
    auto& model = session.model();
    const std::size_t p = model.parameter_count();
    // The next requests' parameters are read where they lie in the shared-memory ring, and let
    // go once the gradient is computed (before the reply: the coordinator's next request needs
    // the ring's room).
    session.receive_in_place(kInPlaceMin);
    const auto params = protocol::doubles(message, 0, p);
    // The gradient is summed straight into the reply's frame (zeroed here), which then moves
    // into the message: no copy of it on the way out. The frame of the step before lives on in
    // the worker's cached reply until this one replaces it. Compressed: summed into a reused
    // float64 vector, then rounded into the frame.
    const auto& config = session.config();
    const auto codec = protocol::half_codec(config);
    const bool topk = config.aggregation.compression == config::WireCompression::kTopk;
    wire::Bytes frame(codec || topk ? 0 : p * sizeof(double));
    if (codec || topk) compress_from_.assign(p, 0.0);
    const std::span<double> grad =
        codec || topk ? std::span<double>(compress_from_)
              : std::span<double>(reinterpret_cast<double*>(frame.data()), p);

    session.begin_step(message.step);
    const auto start = std::chrono::steady_clock::now();
    const auto batch = session.batch(message.step);
    models::BatchResult result;
    if (batch.rows() > 0) result = model.batch_loss_and_gradient(params, batch, grad);
    if (message.lease) message.lease->release();  // `params` is not read after this
    session.add_compute_seconds(timeline::seconds_since(timeline::Phase::kCompute, start));
    if (codec) frame = wire::encode_half(grad, *codec);
    if (topk) {  // a worker without rows sends nothing and keeps its residual
      if (batch.rows() > 0) feedback_.select(grad, config.aggregation.topk_ratio);
      else feedback_.select_none(p);
      feedback_.encode(0, p, frame);
    }

    protocol::Envelope reply{.type = protocol::Type::kGradient, .step = message.step};
    reply.fields = {{"rows", batch.rows()}, {"loss_sum", result.loss_sum}};
    roles::flag_if_leaving(reply);  // its last step (elastic)
    reply.arrays.push_back(std::move(frame));
    if (topk && residual_due(config, message.step + 1)) {
      reply.arrays.push_back(wire::to_bytes(feedback_.residual()));
    }
    session.send(std::move(reply));
    session.warm(message.step + 1);  // its rows, while the coordinator sums and steps
  }

 private:
  SparseStar sparse_;  // sparse rows: the keyed exchange (sparse_star.hpp)
  std::vector<double> compress_from_;  // worker side, compressed: the step's float64 gradient
  protocol::TopkFeedback feedback_;     // worker side, top-k: the residual
  TopkState topk_;                      // coordinator side, top-k: the sum and the residuals

  // aggregation.compression: grad = the replies' decoded gradients added in their order from 0
  // (as models::sum_parts adds), and the frames counted in `tally`.
  static void sum_half_in_order(const std::vector<protocol::Envelope>& replies,
                                wire::HalfCodec codec, std::vector<double>& grad,
                                protocol::CompressionTally& tally) {
    std::fill(grad.begin(), grad.end(), 0.0);
    for (const auto& reply : replies) {
      const auto frame = protocol::frame_of(reply, 0);
      wire::add_half(frame, codec, grad);
      tally.add(grad.size(), frame.size());
    }
  }
};

}  // namespace

std::unique_ptr<Mode> make_gradients_mode() { return std::make_unique<GradientsMode>(); }

}  // namespace dt::modes
