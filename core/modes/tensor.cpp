// `gradients` mode with tensor parallelism (parallelism.tensor = T > 1, star topology): D data
// replicas (shards.count) of T tensor-parallel ranks each, D * T workers; rank r is replica
// d = r / T and slice t = r % T (core/coordinator/tensor_plan.hpp). The model's split is
// models::TensorSlice (core/models/tensor.hpp).
//
// Per step:
//   coordinator -> rank r   its parameter slice (gathered from the full vector);
//   ranks of a group        all-reduce partial outputs among themselves over direct worker
//                           links (one per split pair forward, and backward for the mlp);
//   rank r -> coordinator   the gradient of the values its slice owns (and, from slice 0 of each
//                           group, the group's rows and loss sum; the T ranks compute the same);
//   coordinator             sums each slice over the D replicas in replica order into the full
//                           gradient, divides by the rows, adds the L2 term and takes one
//                           optimizer step on the full vector, exactly as gradients mode does.
// The coordinator keeps the merged, unsplit model all along, so model.json, validation and
// predict never see the split. The final evaluation sends the full vector; each rank slices it.
//
// A lost rank (ring_reform.hpp): every group re-forms (a new generation of its ring) and the
// step is sent again. `restart`: the replacement is sent its slice setup; the workers hold no
// state between steps (the coordinator sends the parameters), so the model is bit-identical to
// a run without the failure. `continue`: a group cannot compute without one of its slices, so
// the lost rank's whole replica is dropped (its other ranks are stopped), the step is done by
// the other replicas, and from the next epoch each slice's rows of the lost replica are dealt
// to the same slice of the others. With one replica there is no other: continue is refused at
// parse time.

#include "core/modes/mode.hpp"
#include "core/protocol/step_messages.hpp"
#include "core/modes/ring_reform.hpp"
#include "core/modes/step.hpp"
#include "core/models/optim.hpp"
#include "core/models/tensor.hpp"
#include "core/coordinator/session.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/text.hpp"
#include "base/timeline.hpp"
#include "transports/collectives/ring.hpp"
#include "transports/transport.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace dt::modes {
namespace {

struct Position {
  int tensor = 1;
  int slice = 0;
  int replica = 0;
};

Position position_of(int rank, int tensor) { return {tensor, rank % tensor, rank / tensor}; }

class TensorMode final : public CoordinatorOptimizerMode {
 public:
  void coordinate(roles::CoordinatorSession& session) override {
    const int tensor = session.plan().tensor;
    const int ranks = session.ranks();
    if (tensor < 2 || ranks % tensor != 0) {
      fail<TrainingError>("tensor mode: {} workers cannot form groups of parallelism.tensor = {}",
                          ranks, tensor);
    }
    const int replicas = ranks / tensor;
    auto& params = session.params();
    const std::size_t p = params.size();
    const models::ModelSpec& spec = session.model().spec();
    std::vector<std::unique_ptr<models::TensorSlice>> slices;
    for (int t = 0; t < tensor; ++t) slices.push_back(models::make_tensor_slice(spec, tensor, t));

    // Slice setups to the ranks that have none yet (all at first, then replacements).
    std::vector<bool> ready(static_cast<std::size_t>(ranks), false);
    const auto set_up = [&] {
      std::vector<int> todo;
      for (const int r : session.alive()) {
        if (!ready[static_cast<std::size_t>(r)]) todo.push_back(r);
      }
      for (const int r : todo) {
        const auto pos = position_of(r, tensor);
        protocol::Envelope setup{.type = protocol::Type::kTensorSetup};
        setup.fields = {{"tensor", tensor},
                        {"slice", pos.slice},
                        {"replica", pos.replica},
                        {"inputs", spec.inputs},
                        {"classes", spec.classes}};
        session.send_to(r, std::move(setup));
      }
      (void)session.gather_from(protocol::Type::kTensorReady, todo);
      for (const int r : todo) ready[static_cast<std::size_t>(r)] = true;
    };
    RingReformer reformer(
        session,
        [&](const std::vector<int>& fresh, std::uint64_t /*step*/) {
          for (const int r : fresh) ready[static_cast<std::size_t>(r)] = false;
          set_up();
        },
        [](int rank, config::FailurePolicy /*action*/) {
          fail<TrainingError>("worker {} was lost during the final evaluation, where the tensor-"
                              "parallel groups do not re-form; resume (--resume) to redo the "
                              "steps after the last checkpoint and evaluate again",
                              rank);
        });
    reformer.set_wording("the tensor-parallel groups re-form");
    reformer.set_on_loss([&session, tensor](int rank, config::FailurePolicy action) {
      if (action != config::FailurePolicy::kContinue) return;
      const int first = rank / tensor * tensor;
      for (int r = first; r < first + tensor; ++r) {
        session.drop_worker(r, fmt::format("was stopped: the other slices of its model replica "
                                           "cannot compute without worker {}",
                                           rank));
      }
    });
    std::uint64_t step = session.first_step();
    for (bool done = false; !done;) {
      try {
        if (reformer.pending()) reformer.reform(step);
        set_up();
        done = true;
      } catch (const RingReform&) {
        reformer.reform(step);
      }
    }

    auto* optimizer = &this->optimizer(session);
    std::vector<double> grad(p);
    std::vector<std::vector<double>> slice_params(static_cast<std::size_t>(tensor));
    for (int t = 0; t < tensor; ++t) slice_params[static_cast<std::size_t>(t)].resize(slices[static_cast<std::size_t>(t)]->size());
    std::vector<double> worker_loss(static_cast<std::size_t>(ranks));
    std::vector<std::uint64_t> worker_rows(static_cast<std::size_t>(ranks));
    const std::uint64_t steps = session.schedule().total_steps();
    std::vector<const protocol::Envelope*> by_rank(static_cast<std::size_t>(ranks));
    session.schedule().start_clock();
    // A step is sent again whole after a re-form: the parameters have not moved.
    const auto& early_stop = session.evaluation().early_stop();  // training.early_stopping
    while (step < steps && !early_stop.stopped()) {
      try {
        reformer.before_step(step, session.plan().steps_per_epoch);
        timeline::set_step(step + 1);
        timeline::Lap lap;  // output.timeline: the slices out (broadcast), the replies in
        for (int t = 0; t < tensor; ++t) {
          const auto ut = static_cast<std::size_t>(t);
          slices[ut]->gather(params, slice_params[ut]);
        }
        for (int r = 0; r < ranks; ++r) {
          protocol::Envelope request{.type = protocol::Type::kStep, .step = step};
          request.arrays.push_back(wire::to_bytes(
              std::span<const double>(slice_params[static_cast<std::size_t>(r % tensor)])));
          session.send_to(r, std::move(request));
        }
        lap.mark(timeline::Phase::kBroadcast);
        const auto replies = session.gather(protocol::Type::kGradient);
        lap.mark(timeline::Phase::kGather);
        std::fill(by_rank.begin(), by_rank.end(), nullptr);
        for (const auto& reply : replies) by_rank[reply.rank] = &reply;

        std::fill(grad.begin(), grad.end(), 0.0);
        double loss_sum = 0;
        std::uint64_t rows = 0;
        std::fill(worker_loss.begin(), worker_loss.end(), 0.0);
        std::fill(worker_rows.begin(), worker_rows.end(), 0);
        for (int d = 0; d < replicas; ++d) {
          // A replica dropped under `continue` is gone whole (drop_worker).
          if (by_rank[static_cast<std::size_t>(d * tensor)] == nullptr) continue;
          const auto& head = *by_rank[static_cast<std::size_t>(d * tensor)];
          const double group_loss = protocol::number(head, "loss_sum");
          const std::uint64_t group_rows = protocol::count(head, "rows");
          loss_sum += group_loss;
          rows += group_rows;
          for (int t = 0; t < tensor; ++t) {
            const auto r = static_cast<std::size_t>(d * tensor + t);
            const auto& slice = *slices[static_cast<std::size_t>(t)];
            slice.add_owned(protocol::doubles(*by_rank.at(r), 0, slice.owned()), grad);
            // Every rank of a group trained on the group's rows: loss.csv shows the group's loss.
            worker_loss[r] = group_loss;
            worker_rows[r] = group_rows;
          }
        }
        finish_step(session, *optimizer, grad, step + 1, loss_sum, rows, worker_loss, worker_rows,
                    lap);
        ++step;
      } catch (const RingReform&) {
        reformer.arm(true);
        reformer.reform(step);
      }
    }
  }

  void work(roles::WorkerSession& session, const protocol::Envelope& message) override {
    if (message.type == protocol::Type::kTensorSetup) {
      setup(session, message);
      return;
    }
    if (message.type == protocol::Type::kRingReform) {
      reform(session, message);
      return;
    }
    if (message.type != protocol::Type::kStep) {
      fail<ProtocolError>("tensor mode: unexpected {} message from the coordinator",
                          protocol::name_of(message.type));
    }
    auto& slice = ready_slice();
    const auto params = protocol::doubles(message, 0, slice.size());
    std::fill(grad_.begin(), grad_.end(), 0.0);

    session.begin_step(message.step);
    peer_seconds_ = 0;
    const auto start = std::chrono::steady_clock::now();
    piece_ = start;  // output.timeline: compute pieces between the group's all-reduces
    const auto batch = session.gathered(session.batch(message.step));
    // Every rank of the group computes, even on an empty batch: the all-reduces must match up.
    models::BatchResult result;
    try {
      result = slice.loss_and_gradient(params, batch.x, batch.y, grad_, all_reduce_);
    } catch (const GroupAbandoned&) {
      // A rank was lost: the coordinator's re-form message waits to be read next.
      log::info("step {} abandoned: a rank of this run was lost", message.step + 1);
      piece_.reset();
      return;
    }
    // An all-reduce waits for the slowest member of the group: that is communication, or one
    // slow rank would make its whole group look slow (the straggler check compares step times).
    const auto end = std::chrono::steady_clock::now();
    timeline::span_between(timeline::Phase::kCompute, *piece_, end);
    piece_.reset();
    const double seconds = std::chrono::duration<double>(end - start).count();
    session.add_comm_seconds(peer_seconds_);
    session.add_compute_seconds(std::max(0.0, seconds - peer_seconds_));

    protocol::Envelope reply{.type = protocol::Type::kGradient, .step = message.step};
    if (slice.rank() == 0) {
      reply.fields = {{"rows", batch.y.size()}, {"loss_sum", result.loss_sum}};
    }
    reply.arrays.push_back(
        wire::to_bytes(std::span<const double>(grad_).first(slice.owned())));
    session.send(std::move(reply));
  }

  bool evaluate(roles::WorkerSession& session, const protocol::Envelope& message) override {
    auto& slice = ready_slice();
    std::vector<double> params(slice.size());
    slice.gather(protocol::doubles(message, 0), params);
    // The same chunks on every rank of the group (they hold the same rows).
    constexpr std::int64_t kChunkRows = 8192;
    const auto& shard = session.shard();
    const auto rows = static_cast<std::int64_t>(shard.y.size());
    models::BatchResult total;
    for (std::int64_t begin = 0; begin < rows; begin += kChunkRows) {
      const auto n = std::min(kChunkRows, rows - begin);
      const auto r = slice.evaluate(params, shard.x.middleRows(begin, n),
                                    shard.y.segment(begin, n), all_reduce_);
      total.loss_sum += r.loss_sum;
      total.correct += r.correct;
      total.squared_error_sum += r.squared_error_sum;
    }
    // The group's sums, counted once (by slice 0): the coordinator adds every rank's reply.
    const bool counts = slice.rank() == 0;
    protocol::Envelope reply{.type = protocol::Type::kEvaluation, .step = message.step};
    reply.fields = {{"rows", counts ? session.rows() : 0},
                    {"loss_sum", counts ? total.loss_sum : 0.0},
                    {"correct", counts ? total.correct : 0.0},
                    {"squared_error_sum", counts ? total.squared_error_sum : 0.0}};
    session.send(std::move(reply));
    return true;
  }

 private:
  models::TensorSlice& ready_slice() {
    if (!slice_) {
      fail<ProtocolError>("tensor mode: a step before the coordinator's tensor setup");
    }
    return *slice_;
  }

  void setup(roles::WorkerSession& session, const protocol::Envelope& message) {
    const auto get = [&](const char* name) {
      return static_cast<int>(protocol::count(message, name));
    };
    const int tensor = get("tensor");
    const auto pos = position_of(static_cast<int>(session.rank()), tensor);
    if (tensor != session.config().parallelism.tensor || get("slice") != pos.slice ||
        get("replica") != pos.replica) {
      fail<ProtocolError>("tensor setup for slice {} of replica {} (tensor {}) sent to rank {}",
                          get("slice"), get("replica"), tensor, session.rank());
    }
    models::ModelSpec spec{session.config().model, get("inputs"), get("classes")};
    slice_ = models::make_tensor_slice(spec, tensor, pos.slice);
    if (session.shard().x.cols() != slice_->features().size()) {
      fail<ProtocolError>("tensor slice {} reads {} feature columns but this worker loaded {}",
                          pos.slice, slice_->features().size(), session.shard().x.cols());
    }
    grad_.assign(slice_->size(), 0.0);
    members_.clear();
    for (int t = 0; t < tensor; ++t) {
      members_.push_back(static_cast<std::uint32_t>(pos.replica * tensor + t));
    }
    // The ring over the group's ranks (transports/collectives/ring.hpp): reproducible (a fixed
    // order per segment) and identical on every member, as TensorSlice requires. Connected now,
    // so that a missing peer shows before the first step.
    ring_ = &session.peers().ring(members_, generation_);
    all_reduce_ = [this](std::span<double> values) {
      const auto start = std::chrono::steady_clock::now();
      {
        const timeline::Scope quiet(nullptr);  // one span for the exchange, not the ring's two
        ring_->allreduce_sum(values);
      }
      const auto end = std::chrono::steady_clock::now();
      peer_seconds_ += std::chrono::duration<double>(end - start).count();
      if (piece_) {  // a training step's (not the final evaluation's)
        timeline::span_between(timeline::Phase::kCompute, *piece_, start);
        timeline::span_between(timeline::Phase::kTensorExchange, start, end,
                               static_cast<std::uint32_t>(values.size()));
        piece_ = end;
      }
    };
    // A re-form message ends a collective that waits on a lost rank (ring_reform.hpp); under
    // abort none comes, but the coordinator's word that the run ended does (poll_coordinator).
    session.peers().set_interrupt([&session] {
      if (session.poll_coordinator(protocol::Type::kRingReform)) throw GroupAbandoned{};
    });
    protocol::Envelope ready{.type = protocol::Type::kTensorReady};
    ready.fields = {{"parameters", slice_->size()}, {"owned", slice_->owned()}};
    session.send(std::move(ready));
  }

  // Worker: the coordinator re-forms the groups after a lost rank. Every group moves to the
  // ring of the new generation (a replacement's endpoint is new); a replacement gets its slice
  // setup next.
  void reform(roles::WorkerSession& session, const protocol::Envelope& message) {
    auto reform = protocol::read_reform(message);
    session.update_peer_endpoints(std::move(reform.endpoints), reform.fresh);
    generation_ = message.generation;
    if (ring_ != nullptr) {
      session.peers().retire(*ring_);
      ring_ = &session.peers().ring(members_, generation_);
    }
    log::info("the tensor-parallel group re-forms at step {}", message.step + 1);
  }

  // Worker side.
  std::unique_ptr<models::TensorSlice> slice_;
  std::vector<double> grad_;  // reused every step
  models::GroupAllReduce all_reduce_;
  double peer_seconds_ = 0;  // in all_reduce_ since the step began
  // output.timeline: where the step's compute piece in progress began (none outside a step).
  std::optional<std::chrono::steady_clock::time_point> piece_;
  std::vector<std::uint32_t> members_;  // this rank's group
  std::uint64_t generation_ = 0;        // of the group's ring (the coordinator's, at a re-form)
  collectives::Ring* ring_ = nullptr;
};

}  // namespace

std::unique_ptr<Mode> make_tensor_mode() { return std::make_unique<TensorMode>(); }

}  // namespace dt::modes
