#include "core/coordinator/session.hpp"
#include "core/coordinator/membership.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/coordinator/tensor_plan.hpp"
#include "core/coordinator/worker_pool.hpp"
#include "core/protocol/timing.hpp"
#include "base/timeline.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"
#include "base/text.hpp"
#include "transports/transport.hpp"


#include <algorithm>
#include <numeric>

namespace dt::roles {

using transport::deadline_in;

namespace {

// How long a failed send waits for a local worker's process to end before it blames the send:
// a worker killed a moment ago has closed its sockets, and the kernel lets its parent reap it
// only once its exit is done (milliseconds; more on a loaded machine).
constexpr std::chrono::milliseconds kDeathGrace{500};

std::vector<int> all_ranks(std::size_t n) {
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  return all;
}

}  // namespace

std::optional<protocol::Envelope> CoordinatorSession::decode_or_drop(transport::Incoming& in,
                                                                     std::uint64_t job) {
  // A malformed message is dropped with a warning, never fatal: the sender is found out by its
  // silence if it is one of ours.
  try {
    return protocol::decode(std::move(in.message), job);  // the arrays move, the header stays
  } catch (const ProtocolError& err) {
    drops_.drop(in.peer, err.what());
    return std::nullopt;
  }
}

CoordinatorSession::CoordinatorSession(const config::Config& config, const Plan& plan,
                                       std::vector<double>& params,
                                       transport::Listener& listener, WorkerPool& pool,
                                       HeartbeatServer& heartbeat, std::uint64_t job_id,
                                       RunResult& result)
    : config_(config),
      plan_(plan),
      params_(params),
      listener_(listener),
      pool_(pool),
      heartbeat_(heartbeat),
      job_id_(job_id),
      result_(result),
      alive_(all_ranks(static_cast<std::size_t>(plan.starting_ranks()))),
      alive_flag_(plan.shard_rows.size(), false),
      joined_ms_(plan.shard_rows.size(), 0),
      last_request_(plan.shard_rows.size()),
      last_request_step_(plan.shard_rows.size(), 0),
      last_request_type_(plan.shard_rows.size(), protocol::Type::kSetup),
      last_request_generation_(plan.shard_rows.size(), 0),
      answered_(plan.shard_rows.size()) {
  evaluation_.early_stop() = EarlyStopper(config.training.early_stopping);
  for (const int r : alive_) alive_flag_[static_cast<std::size_t>(r)] = true;  // join slots: not
  if (config.fault_tolerance.elastic) {
    result_.membership = start_membership(config, plan.starting_ranks());
  }
}

void CoordinatorSession::share_peer_endpoints(const std::vector<protocol::Envelope>& ready) {
  const auto starting = static_cast<std::size_t>(plan_.starting_ranks());
  if (!addresses_.take_endpoints(ready, starting)) return;  // a star run: no peer links
  log::debug("peer endpoints: {}", fmt::join(addresses_.endpoints(), " "));
  broadcast(protocol::make_peers(addresses_.endpoints()));
}


void CoordinatorSession::set_startup(std::vector<protocol::Envelope> setups,
                                     std::vector<protocol::Envelope> finalizes) {
  setups_ = std::move(setups);
  finalizes_ = std::move(finalizes);
}

void CoordinatorSession::send_request(int rank, std::shared_ptr<const wire::Message> message,
                                      protocol::Type type, std::uint64_t step,
                                      std::uint32_t generation) {
  const auto r = static_cast<std::size_t>(rank);
  // Recorded first: if the send finds the worker gone and a replacement takes the rank, the
  // replacement is sent this request.
  last_request_[r] = message;
  last_request_step_[r] = step;
  last_request_type_[r] = type;
  last_request_generation_[r] = generation;
  try {
    listener_.send(addresses_.identity(rank), *message, deadline_in(kSendDeadline));
  } catch (const TransportError& e) {
    const auto before = generation_;
    const auto unexplained = [&] {
      return before == generation_ && is_alive(rank) && !left_unread(rank);
    };
    check_workers();  // a dead worker explains the failed send better than the send does
    // A process killed a moment ago has closed its sockets before it can be reaped: give it
    // that moment, then look again.
    if (unexplained() && pool_.await_end(rank, kDeathGrace)) check_workers();
    // Unless that found it (and replaced or dropped it), the worker is lost for this.
    if (unexplained()) lose_worker(rank, fmt::format("cannot be reached: {}", e.what()));
  }
}

void CoordinatorSession::broadcast(protocol::Envelope envelope) {
  broadcast(std::move(envelope), alive_);
}

void CoordinatorSession::broadcast(protocol::Envelope envelope, const std::vector<int>& ranks) {
  envelope.generation = generation_;
  const std::uint64_t step = envelope.step;
  const auto type = envelope.type;
  const auto generation = envelope.generation;
  const auto message =
      std::make_shared<const wire::Message>(protocol::encode(std::move(envelope), job_id_));
  for (const int r : std::vector<int>(ranks)) {  // a copy: losing a worker changes alive_
    if (is_alive(r)) send_request(r, message, type, step, generation);
  }
}

void CoordinatorSession::send_to(int rank, protocol::Envelope envelope) {
  if (!is_alive(rank)) return;
  envelope.generation = generation_;
  const std::uint64_t step = envelope.step;
  const auto type = envelope.type;
  const auto generation = envelope.generation;
  send_request(rank,
               std::make_shared<const wire::Message>(protocol::encode(std::move(envelope), job_id_)),
               type, step, generation);
}

void CoordinatorSession::notify(protocol::Envelope envelope) {
  envelope.generation = generation_;
  const auto message = protocol::encode(std::move(envelope), job_id_);
  for (const int r : alive_) {
    try {
      listener_.send(addresses_.identity(r), message, deadline_in(kSendDeadline));
    } catch (const TransportError& e) {
      log::debug("no notice for worker {}: {}", r, e.what());
    }
  }
}

std::optional<transport::Incoming> CoordinatorSession::next_message(
    transport::Clock::time_point until) {
  drops_.tick();
  if (!stash_.empty()) {
    auto in = std::move(stash_.front());
    stash_.pop_front();
    return in;
  }
  return listener_.receive(until);
}

transport::Transport& CoordinatorSession::transport() const {
  if (transport_ == nullptr) fail<TrainingError>("internal error: the session has no transport");
  return *transport_;
}

void CoordinatorSession::supervise() {
  if (signals::interrupted()) fail<InterruptedError>("interrupted at step {}", result_.steps);
  check_workers();
  const std::int64_t timeout = config_.fault_tolerance.worker_timeout_ms;
  for (const int r : std::vector<int>(alive_)) {
    std::int64_t silent = heartbeat_.silent_ms(r);
    if (silent < 0 && joined_ms_[static_cast<std::size_t>(r)] > 0) {
      silent = steady_ms() - joined_ms_[static_cast<std::size_t>(r)];
    }
    if (silent > timeout && is_alive(r)) {
      lose_worker(r, fmt::format("sent no heartbeat for {} ms (fault_tolerance.worker_timeout_ms "
                                 "= {})", silent, timeout));
    }
  }
}

std::vector<protocol::Envelope> CoordinatorSession::gather(protocol::Type type,
                                                           const std::function<void()>& on_idle,
                                                           std::chrono::milliseconds grace) {
  return gather_impl(type, alive_, on_idle, grace);
}

std::vector<protocol::Envelope> CoordinatorSession::gather_from(protocol::Type type,
                                                                const std::vector<int>& ranks) {
  return gather_impl(type, ranks, {}, std::chrono::milliseconds(0));
}

void CoordinatorSession::receive_in_place(std::uint64_t min_frame) noexcept {
  listener_.receive_in_place(min_frame);
}

std::int64_t CoordinatorSession::resend_after_ms() const {
  // Long enough that a reply still being computed is rarely asked for twice (a repeated
  // request costs a repeated reply, which is dropped), short enough that a lost one costs
  // little.
  const auto hb = static_cast<std::int64_t>(config_.fault_tolerance.heartbeat_ms);
  return std::max<std::int64_t>({200, 2 * hb, static_cast<std::int64_t>(4 * reply_ms_)});
}

std::vector<protocol::Envelope> CoordinatorSession::gather_impl(
    protocol::Type type, const std::vector<int>& wanted, const std::function<void()>& on_idle,
    std::chrono::milliseconds grace) {
  const int n = ranks();
  std::vector<std::optional<protocol::Envelope>> got(static_cast<std::size_t>(n));
  std::vector<bool> expected(static_cast<std::size_t>(n), false);
  for (const int r : wanted) expected[static_cast<std::size_t>(r)] = true;
  const std::int64_t timeout = config_.fault_tolerance.worker_timeout_ms;
  const std::int64_t wait_start = steady_ms();
  std::vector<std::int64_t> resend_at(static_cast<std::size_t>(n), wait_start + resend_after_ms());
  std::vector<std::int64_t> backoff(static_cast<std::size_t>(n), resend_after_ms());
  for (int r = 0; r < n; ++r) {
    // A large request (a whole model's parameters: the final evaluation's, a replacement's)
    // travels and is decoded before its worker can start: 10 ms a MiB more (100 MiB/s, well
    // below any link this runs on) before it is sent again, so it is rarely sent twice.
    const auto i = static_cast<std::size_t>(r);
    if (!last_request_[i]) continue;
    const auto travel = static_cast<std::int64_t>(last_request_[i]->header.payload_size >> 20) * 10;
    resend_at[i] += travel;
    backoff[i] += travel;
  }
  std::int64_t slowest = 0;
  const auto missing = [&] {
    for (int r = 0; r < n; ++r) {
      const auto i = static_cast<std::size_t>(r);
      if (expected[i] && alive_flag_[i] && !got[i]) return true;
    }
    return false;
  };
  std::int64_t interrupted_at = -1;
  while (missing()) {
    if (signals::interrupted()) {
      if (interrupted_at < 0) interrupted_at = steady_ms();
      if (steady_ms() - interrupted_at >= grace.count()) {
        fail<InterruptedError>("interrupted at step {}", result_.steps);
      }
    }
    if (auto in = next_message(deadline_in(kPollSlice))) {
      if (in->message.header.job_id == 0 &&
          in->message.header.type == static_cast<std::uint16_t>(protocol::Type::kHello)) {
        // A worker joining by itself says hello until it is set up: a joiner (elastic: queued
        // for the next step boundary), a replacement that came before its rank was found lost,
        // or a late repeat. Not a stranger.
        if (!take_join_hello(*in)) {
          log::debug("ignored a hello from '{}' (rank {})", in->peer, in->message.header.rank);
        }
        continue;
      }
      auto decoded = decode_or_drop(*in, job_id_);
      if (!decoded) continue;
      protocol::Envelope e = std::move(*decoded);
      if (e.rank >= static_cast<std::uint32_t>(n) || in->peer != addresses_.identity(static_cast<int>(e.rank))) {
        drops_.drop(in->peer, fmt::format("a {} message claiming rank {}",
                                          protocol::name_of(e.type), e.rank));
        continue;
      }
      const auto r = static_cast<int>(e.rank);
      const auto i = static_cast<std::size_t>(r);
      if (!alive_flag_[i]) continue;  // the last words of a worker already given up
      if (e.type == protocol::Type::kLeave) {  // a planned leave (elastic)
        worker_left(r, got[i].has_value() && (type == protocol::Type::kGradient ||
                                              type == protocol::Type::kRingLoss ||
                                              type == protocol::Type::kRoundResult));
        continue;
      }
      if (e.type == protocol::Type::kError) {
        raise_worker_error(r, protocol::read_error(e));
        continue;
      }
      const auto& done = answered_[i];
      // Workers copy the generation of the request they answer into the reply: one from before
      // the rank's last request was sent (a step abandoned when a worker was lost) is stale,
      // whatever its type (a ring step's reply read while the ring re-forms).
      const bool stale = (done.any && e.type == done.type && e.step <= done.step) ||
                         (e.type == type && e.step < last_request_step_[i]) ||
                         e.generation < last_request_generation_[i];
      if (stale || (e.type == type && got[i])) {
        // A reply sent twice (its request was re-sent) or to an abandoned request.
        log::debug("dropped a late {} message of worker {} (step {})", protocol::name_of(e.type),
                   r, e.step);
        continue;
      }
      if (e.type != type || !expected[i]) {
        fail<ProtocolError>("worker {} sent a {} message while the coordinator waited for {}", r,
                            protocol::name_of(e.type), protocol::name_of(type));
      }
      slowest = std::max(slowest, steady_ms() - wait_start);
      got[i] = std::move(e);
      // A reply that says its worker leaves after it (elastic): the leave belongs to this step,
      // whenever the worker's kLeave comes (then dropped as the last words of a worker gone).
      if (got[i]->fields.is_object() && got[i]->fields.value("leaving", false)) {
        worker_left(r, true);
      }
      continue;
    }
    check_workers();
    if (on_idle) on_idle();
    if (&wanted == &alive_) {  // a worker admitted by on_idle (async joins) answers it too
      for (const int r : alive_) expected[static_cast<std::size_t>(r)] = true;
    }
    const std::int64_t now = steady_ms();
    for (int r = 0; r < n; ++r) {
      const auto i = static_cast<std::size_t>(r);
      if (!expected[i] || !alive_flag_[i] || got[i]) continue;
      std::int64_t silent = heartbeat_.silent_ms(r);
      if (silent < 0) silent = now - std::max(wait_start, joined_ms_[i]);  // not pinged yet
      if (silent > timeout) {
        lose_worker(r, fmt::format("sent no heartbeat for {} ms (fault_tolerance.worker_timeout_ms "
                                   "= {})", silent, timeout));
        resend_at[i] = steady_ms() + resend_after_ms();
        continue;
      }
      if (now >= resend_at[i] && last_request_[i] && protocol::answers(type, last_request_type_[i]) &&
          silent <= 2 * config_.fault_tolerance.heartbeat_ms) {
        // Alive but silent on this request: the request or its reply was lost. Ask again (the
        // worker answers a repeated request from its cache, without redoing the work).
        log::debug("no {} from worker {} after {} ms; sending its request again",
                   protocol::name_of(type), r, now - wait_start);
        send_request(r, last_request_[i], last_request_type_[i], last_request_step_[i],
                     last_request_generation_[i]);
        backoff[i] = std::min<std::int64_t>(2 * backoff[i], timeout);
        resend_at[i] = now + backoff[i];
      }
    }
  }
  reply_ms_ = reply_ms_ == 0 ? static_cast<double>(slowest)
                             : 0.9 * reply_ms_ + 0.1 * static_cast<double>(slowest);
  std::vector<protocol::Envelope> out;
  out.reserve(wanted.size());
  const auto take = [&](int r) {
    const auto i = static_cast<std::size_t>(r);
    if (!got[i]) return;  // lost under `continue`, or left, before its reply
    answered_[i] = {got[i]->type, got[i]->step, true};
    out.push_back(std::move(*got[i]));
  };
  if (&wanted == &alive_) {
    // gather(): a leave (or a loss under `continue`) read during the wait took its rank off
    // alive_; a reply that came before it is still part of the step. alive_ is ascending.
    for (int r = 0; r < n; ++r) {
      if (expected[static_cast<std::size_t>(r)]) take(r);
    }
  } else {
    for (const int r : wanted) take(r);
  }
  return out;
}

namespace {

void check_explosion(const config::Config& config, const LossWindow& window, std::uint64_t step,
                     double loss) {
  // A learning rate far too high can make the loss explode without overflowing to inf or NaN
  // (softmax with lr 1e6: 80,000 times the first step's, and exit 0). A trained model's loss is
  // below its start; ten thousand times the start is no longer training.
  constexpr double kExplosion = 1e4;
  const auto first = window.first_loss();
  if (!first || !(*first > 0.0) || !(loss > kExplosion * *first)) return;
  fail<TrainingError>("training diverged by step {}: the loss is {}, {:.3g} times the first "
                      "step's {}; lower training.optimizer.lr (now {}) or normalize the data",
                      step, text::format_double(loss), loss / *first, text::format_double(*first),
                      text::format_double(config.training.optimizer.lr));
}

}  // namespace

void CoordinatorSession::record_step(std::uint64_t step, double loss_sum, std::uint64_t rows,
                                     const std::vector<double>& worker_loss_sum,
                                     const std::vector<std::uint64_t>& worker_rows) {
  stragglers_.check(heartbeat_, result_);  // also when the waits are never idle
  const std::uint64_t previous = result_.steps;
  result_.steps = step;
  // The yardstick of an exploding loss: the first step's mean (the loss at the initial
  // parameters), when it has rows enough to speak for the data (a batch of a row or two may
  // happen to have a tiny loss; with batches of fewer rows, only a NaN or inf stops a run).
  constexpr std::uint64_t kYardstickRows = 16;
  if (previous == 0 && rows >= kYardstickRows) {
    window_.set_first_loss(loss_sum / static_cast<double>(rows));
  }
  window_.add(loss_sum, rows, worker_loss_sum, worker_rows);
  if (!result_.membership.is_null() && step > 0) {  // elastic: the rows each epoch saw
    const auto per_epoch = std::max<std::uint64_t>(1, schedule_.steps_per_epoch());
    count_epoch_rows(result_.membership, (step - 1) / per_epoch, rows);
  }
  const auto every = static_cast<std::uint64_t>(config_.output.log_every_steps);
  // A row when the step crosses a multiple of log_every (modes that advance several steps per
  // call, as parameters mode does per round, still log at the cadence asked for), and at the end.
  const auto total = schedule_.total_steps();
  progress_.step(step, total, schedule_.elapsed_seconds());
  if (step / every == previous / every && step != total) return;

  LogRow row;
  row.step = step;
  row.epoch = schedule_.epoch_of(step);
  row.seconds = schedule_.elapsed_seconds();
  row.train_loss = window_.train_loss();
  check_explosion(config_, window_, step, row.train_loss);
  row.worker_loss = window_.worker_loss();
  const auto span_start = timeline::start();
  const auto v = evaluation_.validate(params_);
  timeline::span_at(timeline::Phase::kEvaluation, step, span_start);
  if (v) {
    row.validation_loss = v->loss;
    row.validation_metric = v->accuracy ? v->accuracy : v->mse;
    row.validation_log_loss = v->log_loss;
    row.validation_auc = v->auc;
  }
  evaluation_.early_stop().check(step, v, params_);
  if (log::level() >= log::Level::kInfo) {
    log::info("step {}/{} epoch {:.2f} loss {:.6g}{}", step, total, row.epoch, row.train_loss,
              row.validation_loss ? fmt::format(" validation {:.6g}", *row.validation_loss) : "");
  }
  progress_.row(row, total, row.seconds, step == total || evaluation_.early_stop().stopped());
  result_.log.push_back(std::move(row));
  window_.clear();
}

}  // namespace dt::roles
