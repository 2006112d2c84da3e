// The sparse star exchange (sparse_star.hpp): both halves.

#include "core/modes/sparse_star.hpp"

#include "core/modes/step.hpp"
#include "core/models/optim.hpp"
#include "core/coordinator/plan.hpp"
#include "core/coordinator/session.hpp"
#include "core/protocol/key_frames.hpp"
#include "core/worker/leave.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/timeline.hpp"

#include <chrono>
#include <cstring>
#include <utility>

namespace dt::modes {

std::uint64_t key_list_hash(std::span<const std::uint32_t> keys) noexcept {
  // FNV-1a over whole keys, in four lanes (key i in lane i mod 4) folded at the end: a byte-wise
  // FNV is one chain of 4 multiplies a key (about 0.2 ms for a batch's 18,000 keys, paid by
  // both ends of every step); four independent chains run side by side.
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::uint64_t lane[4] = {14695981039346656037ULL, 14695981039346656037ULL ^ 1,
                           14695981039346656037ULL ^ 2, 14695981039346656037ULL ^ 3};
  std::size_t i = 0;
  for (; i + 4 <= keys.size(); i += 4) {
    for (int l = 0; l < 4; ++l) lane[l] = (lane[l] ^ keys[i + l]) * kPrime;
  }
  for (int l = 0; i < keys.size(); ++i, ++l) lane[l] = (lane[l] ^ keys[i]) * kPrime;
  std::uint64_t h = keys.size();
  for (const std::uint64_t v : lane) h = (h ^ v ^ (v >> 29)) * kPrime;
  return h;
}

// ---- Coordinator.

namespace {
constexpr std::size_t kKeysAhead = 16;  // keys whose parameters step_message fetches early
constexpr std::size_t kMaxMarked = std::size_t{1} << 32;  // a checkpoint's sparse arrays' most
}  // namespace

void SparseStar::coordinate(roles::CoordinatorSession& session, models::Optimizer& optimizer) {
  auto& params = session.params();
  const auto& model = session.model();
  width_ = static_cast<std::uint64_t>(model.spec().inputs);
  outputs_ = static_cast<std::size_t>(model.outputs());
  const auto ranks = static_cast<std::size_t>(session.ranks());
  keys_.assign(ranks, {});
  keys_step_.assign(ranks, UINT64_MAX);
  next_.clear(ranks);
  std::vector<double> worker_loss(ranks);
  std::vector<std::uint64_t> worker_rows(ranks);
  const double l2 = model.spec().config.l2;
  const std::uint64_t steps = session.schedule().total_steps();
  session.schedule().start_clock();
  const std::uint64_t per_epoch = std::max<std::uint64_t>(1, session.plan().steps_per_epoch);
  const auto& early_stop = session.evaluation().early_stop();  // training.early_stopping
  for (std::uint64_t step = session.first_step(); step < steps && !early_stop.stopped(); ++step) {
    session.admit_joiners(step);  // elastic: a joiner trains from this step on
    if (step % per_epoch == 0) session.reassign_lost_rows(step / per_epoch);
    timeline::set_step(step + 1);
    timeline::Lap lap;  // output.timeline: broadcast (with any keys asked), gather, apply
    ask_keys(session, step);
    for (const int r : std::vector<int>(session.alive())) {
      session.send_to(r, step_message(params, r, step));
    }
    lap.mark(timeline::Phase::kBroadcast);
    const auto replies = session.gather(protocol::Type::kGradient);
    lap.mark(timeline::Phase::kGather);
    const auto [loss_sum, rows] = tally_replies(replies, worker_loss, worker_rows);
    sum_replies(replies, step);
    if (rows > 0) {  // else an empty step (only possible with tiny shards)
      check_batch_loss(session.config(), step + 1, loss_sum, rows);
      const double inv = 1.0 / static_cast<double>(rows);
      // The step marks its keys and reads the next step's values in its own pass.
      const auto work = prepare_next(step + 1);
      if (l2 == 0.0) {
        optimizer.step_indices_with(indices_, sums_, inv, params, work);
      } else {
        // As apply_gradient_sum: the mean, then the L2 term, at the touched weights only.
        const std::size_t biases = width_ * outputs_;
        for (std::size_t i = 0; i < indices_.size(); ++i) {
          sums_[i] *= inv;
          if (indices_[i] < biases) sums_[i] += l2 * params[indices_[i]];
        }
        optimizer.step_indices_with(indices_, sums_, 1.0, params, work);
      }
      finish_next(params);
      lap.mark(timeline::Phase::kApply);  // the replies summed by key, the optimizer's step
      session.add_samples(rows);
      session.record_step(step + 1, loss_sum, rows, worker_loss, worker_rows);
    }
    session.step_boundary(step + 1);
  }
}

void SparseStar::mark_start(std::span<const double> params, const models::OptimizerState& state) {
  marks_.version = UINT64_MAX;
  if (params.size() > kMaxMarked) return;
  std::vector<std::span<const double>> vectors{params};
  for (const auto& slot : state.slots) vectors.emplace_back(slot);
  marks_.reset_from(vectors, params.size());
  marks_.version = 0;  // kept by every step from here on
}

bool SparseStar::touched_keys(std::vector<std::uint32_t>& out) const {
  if (marks_.version == UINT64_MAX) return false;
  marks_.list(out);
  return true;
}

void SparseStar::ask_keys(roles::CoordinatorSession& session, std::uint64_t step) {
  std::vector<int> missing;
  for (const int r : session.alive()) {
    if (keys_step_[static_cast<std::size_t>(r)] != step) missing.push_back(r);
  }
  if (missing.empty()) return;
  session.broadcast({.type = protocol::Type::kKeyRequest, .step = step}, missing);
  for (const auto& reply : session.gather_from(protocol::Type::kKeys, missing)) {
    const auto r = static_cast<std::size_t>(reply.rank);
    if (reply.arrays.empty()) {
      fail<ProtocolError>("worker {} sent no keys for step {}", reply.rank, step + 1);
    }
    protocol::decode_keys(reply.arrays[0], width_, fmt::format("worker {}'s keys", reply.rank),
                          keys_[r]);
    keys_step_[r] = step;
  }
}

models::Optimizer::LazyStepWork SparseStar::prepare_next(std::uint64_t next) {
  models::Optimizer::LazyStepWork work;
  if (marks_.version != UINT64_MAX) work.marks = marks_.words();
  next_.clear(keys_.size());
  if (outputs_ != 1) return work;  // a gather reads one value a key: step_message reads these
  for (std::size_t r = 0; r < keys_.size(); ++r) {
    // Its next keys came with its reply (not at an epoch's start): the bias after their values.
    if (keys_step_[r] == next) (void)next_.add(r, keys_[r], 1, next);
  }
  work.gathers = next_.gathers();
  return work;
}

void SparseStar::finish_next(const std::vector<double>& params) {
  for (const auto& g : next_.gathers()) g.out[g.keys.size()] = params[width_];
}

protocol::Envelope SparseStar::step_message(const std::vector<double>& params, int rank,
                                            std::uint64_t step) {
  const auto& keys = keys_[static_cast<std::size_t>(rank)];
  protocol::Envelope message{.type = protocol::Type::kStep, .step = step};
  message.fields = {{"keys", keys.size()}, {"key_hash", key_list_hash(keys)}};
  // Read within the last step's pass (prepare_next), for these keys: nothing has written the
  // parameters or the keys since.
  const auto r = static_cast<std::size_t>(rank);
  if (auto frame = keys_step_[r] == step ? next_.take(r, step) : std::nullopt) {
    message.arrays.push_back(std::move(*frame));
    return message;
  }
  wire::Bytes frame((keys.size() + 1) * outputs_ * sizeof(double));
  auto* out = reinterpret_cast<double*>(frame.data());
  const std::size_t count = keys.size();
  const double* from = params.data();
  // Far apart in a wide model: fetched a few keys ahead, each a cache miss otherwise.
  const auto prefetch = [&](std::size_t i) {
    if (i + kKeysAhead < count) {
      __builtin_prefetch(from + std::size_t{keys[i + kKeysAhead]} * outputs_, 0, 1);
    }
  };
  if (outputs_ == 1) {  // a plain load a key (memcpy of a run-time size is a call a key)
    for (std::size_t i = 0; i < count; ++i) {
      prefetch(i);
      out[i] = from[keys[i]];
    }
    out += count;
  } else {
    for (std::size_t i = 0; i < count; ++i) {
      prefetch(i);
      std::memcpy(out, from + std::size_t{keys[i]} * outputs_, outputs_ * sizeof(double));
      out += outputs_;
    }
  }
  std::memcpy(out, params.data() + width_ * outputs_, outputs_ * sizeof(double));
  message.arrays.push_back(std::move(frame));
  return message;
}

void SparseStar::sum_replies(const std::vector<protocol::Envelope>& replies, std::uint64_t step) {
  const std::size_t biases = width_ * outputs_;
  parts_.clear();
  for (const auto& reply : replies) {  // rank order: the same bits on every run
    const auto& keys = keys_[static_cast<std::size_t>(reply.rank)];
    parts_.push_back({keys, protocol::doubles(reply, 0, (keys.size() + 1) * outputs_).data()});
  }
  models::sum_parts(parts_, outputs_, union_, sums_);
  // Sized once and written through a pointer: push_back a coordinate reloads the vector's end
  // and outputs_ at each one (the stores might alias them), a few ns a key for 30,000 keys.
  const std::size_t outputs = outputs_;
  indices_.resize((union_.size() + 1) * outputs);
  std::uint64_t* index = indices_.data();
  if (outputs == 1) {
    for (const std::uint32_t k : union_) *index++ = k;
  } else {
    for (const std::uint32_t k : union_) {
      for (std::size_t o = 0; o < outputs; ++o) *index++ = std::size_t{k} * outputs + o;
    }
  }
  for (std::size_t o = 0; o < outputs; ++o) {  // the biases, after every key's weights
    double sum = 0.0;
    for (const auto& part : parts_) sum += part.values[part.keys.size() * outputs + o];
    *index++ = biases + o;
    sums_.push_back(sum);
  }
  // Only now: the keys of each worker's next step replace the ones just summed.
  for (const auto& reply : replies) {
    const auto r = static_cast<std::size_t>(reply.rank);
    if (reply.arrays.size() > 1) {
      protocol::decode_keys(reply.arrays[1], width_,
                            fmt::format("worker {}'s keys", reply.rank), keys_[r]);
      keys_step_[r] = step + 1;
    } else {
      keys_step_[r] = UINT64_MAX;
    }
  }
}

// ---- Worker.

void prepare_batch(roles::WorkerSession& session, std::uint64_t step, PreparedBatch& into) {
  models::compact_batch(session.batch(step), into.batch, into.y);
  into.step = step;
  into.framed = false;
}

PreparedBatch& BatchesAhead::at(roles::WorkerSession& session, std::uint64_t step) {
  // Steps only move on: the slot of the oldest step (or an empty one) is the one to reuse.
  PreparedBatch* oldest = &slots_[0];
  for (auto& slot : slots_) {
    if (slot.step == step) return slot;
    if (slot.step == UINT64_MAX || (oldest->step != UINT64_MAX && slot.step < oldest->step)) {
      oldest = &slot;
    }
  }
  prepare_batch(session, step, *oldest);
  return *oldest;
}

bool BatchesAhead::make_ahead(roles::WorkerSession& session, std::uint64_t step) {
  const std::uint64_t per_epoch = session.steps_per_epoch();
  if ((step + 1) % per_epoch == 0 || (step + 2) % per_epoch == 0) return false;
  for (const auto& slot : slots_) {
    if (slot.step == step + 2) return false;
  }
  (void)at(session, step + 2);
  return true;
}

void SparseStar::work(roles::WorkerSession& session, const protocol::Envelope& message) {
  if (!model_) model_ = models::make_sparse_model(session.model().spec());
  const std::uint64_t step = message.step;
  if (message.type == protocol::Type::kKeyRequest) {
    const PreparedBatch& batch = batches_.at(session, step);
    protocol::Envelope reply{.type = protocol::Type::kKeys, .step = step};
    reply.arrays.push_back(protocol::encode_keys(batch.batch.keys));
    session.send(std::move(reply));
    return;
  }
  session.begin_step(step);
  const auto start = std::chrono::steady_clock::now();
  const PreparedBatch& current = batches_.at(session, step);
  const auto& keys = current.batch.keys;
  if (protocol::count(message, "keys") != keys.size() ||
      protocol::count(message, "key_hash") != key_list_hash(keys)) {
    fail<ProtocolError>("step {}: the coordinator sent the values of {} keys, but this worker's "
                        "batch has {} other keys (the two ends disagree on the batch)",
                        step + 1, protocol::count(message, "keys"), keys.size());
  }
  const std::size_t local = model_->local_count(current.batch);
  const auto params = protocol::doubles(message, 0, local);
  // The gradient is summed straight into the reply's frame, as in the dense star.
  wire::Bytes frame(local * sizeof(double));
  const std::span<double> grad(reinterpret_cast<double*>(frame.data()), local);
  models::BatchResult result;
  if (current.batch.rows() > 0) {
    result = model_->loss_and_gradient(params, current.batch, current.y, grad);
  }
  protocol::Envelope reply{.type = protocol::Type::kGradient, .step = message.step};
  reply.fields = {{"rows", current.batch.rows()}, {"loss_sum", result.loss_sum}};
  roles::flag_if_leaving(reply);  // its last step (elastic)
  reply.arrays.push_back(std::move(frame));
  // The next step's keys (its batch made ahead, during the last step's wait), unless it starts
  // an epoch (its order is not drawn yet).
  if ((step + 1) % session.steps_per_epoch() != 0) {
    const PreparedBatch& next = batches_.at(session, step + 1);
    reply.arrays.push_back(next.framed ? next.key_frame : protocol::encode_keys(next.batch.keys));
  }
  // The compaction made ahead since the last step counts as this step's compute (one
  // add_compute_seconds a step: it also counts the steps).
  session.add_compute_seconds(timeline::seconds_since(timeline::Phase::kCompute, start) +
                              std::exchange(ahead_seconds_, 0.0));
  session.send(std::move(reply));
  // The batch after the next, with its key frame, while the coordinator sums and steps.
  const auto ahead = std::chrono::steady_clock::now();
  if (batches_.make_ahead(session, step)) {
    PreparedBatch& made = batches_.at(session, step + 2);
    protocol::encode_keys_into(made.batch.keys, made.key_frame);
    made.framed = true;
    ahead_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - ahead)
                          .count();
  }
}

}  // namespace dt::modes
