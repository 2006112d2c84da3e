#include "core/roles/coordinator.hpp"
#include "core/roles/heartbeat.hpp"
#include "core/roles/worker_pool.hpp"
#include "core/roles/timing.hpp"
#include "core/util/error.hpp"
#include "core/util/log.hpp"
#include "core/util/signals.hpp"
#include "transports/transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <numeric>

namespace dt::roles {

using transport::deadline_in;

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
      start_ms_(steady_ms()),
      progress_bar_(::isatty(STDERR_FILENO) == 1 && log::level() >= log::Level::kWarn),
      window_worker_loss_(plan.shard_rows.size()),
      window_worker_rows_(plan.shard_rows.size()) {}

std::uint64_t CoordinatorSession::total_steps() const noexcept {
  if (schedule_total_ > 0) return schedule_total_;
  return static_cast<std::uint64_t>(config_.training.epochs) * plan_.steps_per_epoch;
}

void CoordinatorSession::start_clock() { start_ms_ = steady_ms(); }

double CoordinatorSession::elapsed_seconds() const {
  return static_cast<double>(steady_ms() - start_ms_) / 1000.0;
}

void CoordinatorSession::broadcast(protocol::Envelope envelope) {
  std::vector<int> all(static_cast<std::size_t>(ranks()));
  std::iota(all.begin(), all.end(), 0);
  broadcast(std::move(envelope), all);
}

void CoordinatorSession::broadcast(protocol::Envelope envelope, const std::vector<int>& ranks) {
  const auto message = protocol::encode(std::move(envelope), job_id_);
  for (const int r : ranks) {
    try {
      listener_.send(protocol::peer_name(static_cast<std::uint32_t>(r)), message,
                     deadline_in(kSendDeadline));
    } catch (const TransportError& e) {
      check_workers();  // a dead worker explains the failed send better than the send does
      fail_worker(r, fmt::format("cannot be reached: {}", e.what()));
    }
  }
}

void CoordinatorSession::send_to(int rank, protocol::Envelope envelope) {
  try {
    listener_.send(protocol::peer_name(static_cast<std::uint32_t>(rank)),
                   protocol::encode(std::move(envelope), job_id_), deadline_in(kSendDeadline));
  } catch (const TransportError& e) {
    check_workers();
    fail_worker(rank, fmt::format("cannot be reached: {}", e.what()));
  }
}

void CoordinatorSession::fail_worker(int rank, const std::string& what) {
  std::string message = fmt::format("worker {} (pid {}) {} at step {}", rank, pool_.pid_of(rank),
                                    what, result_.steps);
  const std::string last = pool_.last_words(rank);
  if (!last.empty()) message += fmt::format("; its log ends: {}", last);
  throw TrainingError(message);
}

void CoordinatorSession::raise_worker_error(int rank, const protocol::WorkerError& error) {
  // Bad data found by a worker is still bad input (exit 2), but the message says whose rows.
  if (error.exit_code == static_cast<int>(ExitCode::kBadInput)) {
    throw DataError(fmt::format("worker {} (pid {}): {}", rank, pool_.pid_of(rank), error.message));
  }
  fail_worker(rank, "failed: " + error.message);
}

void CoordinatorSession::note_late_exit(const ChildExit& exit) {
  if (exit.status.success()) return;
  // The model is complete, but a worker that ends badly after its work (a sanitizer report,
  // a crash in teardown) is a bug worth seeing.
  result_.warnings.push_back(fmt::format("worker {} (pid {}) {} after it finished", exit.rank,
                                         exit.pid, exit.status.describe()));
  log::warn("{}", result_.warnings.back());
}

void CoordinatorSession::check_workers() {
  stragglers_.check(heartbeat_, result_);  // the idle path of every wait
  for (const auto& exit : pool_.poll()) {
    if (exits_expected_) {
      note_late_exit(exit);
      continue;
    }
    // Give an error report the worker sent just before exiting a moment to arrive: it says more
    // than the exit code.
    const auto until = deadline_in(std::chrono::milliseconds(200));
    while (auto in = listener_.receive(until)) {
      try {
        const auto e = protocol::decode(in->message, job_id_);
        if (e.type == protocol::Type::kError && static_cast<int>(e.rank) == exit.rank) {
          raise_worker_error(exit.rank, protocol::read_error(e));
        }
      } catch (const ProtocolError&) {
      }
    }
    fail_worker(exit.rank, exit.status.describe());
  }
}

std::vector<protocol::Envelope> CoordinatorSession::gather(protocol::Type type) {
  return gather(type, {});
}

transport::Transport& CoordinatorSession::transport() const {
  if (transport_ == nullptr) fail<TrainingError>("internal error: the session has no transport");
  return *transport_;
}

void CoordinatorSession::supervise() {
  if (signals::interrupted()) fail<InterruptedError>("interrupted at step {}", result_.steps);
  check_workers();
  const std::int64_t timeout = config_.fault_tolerance.worker_timeout_ms;
  for (int r = 0; r < ranks(); ++r) {
    const std::int64_t silent = heartbeat_.silent_ms(r);
    if (silent > timeout) {
      fail_worker(r, fmt::format("sent no heartbeat for {} ms (fault_tolerance.worker_timeout_ms "
                                 "= {})", silent, timeout));
    }
  }
}

std::vector<protocol::Envelope> CoordinatorSession::gather(protocol::Type type,
                                                           const std::function<void()>& on_idle) {
  std::vector<int> all(static_cast<std::size_t>(ranks()));
  std::iota(all.begin(), all.end(), 0);
  return gather_impl(type, all, on_idle);
}

std::vector<protocol::Envelope> CoordinatorSession::gather_from(protocol::Type type,
                                                                const std::vector<int>& ranks) {
  return gather_impl(type, ranks, {});
}

std::vector<protocol::Envelope> CoordinatorSession::gather_impl(
    protocol::Type type, const std::vector<int>& wanted, const std::function<void()>& on_idle) {
  const int n = ranks();
  std::vector<std::optional<protocol::Envelope>> got(static_cast<std::size_t>(n));
  std::vector<bool> expected(static_cast<std::size_t>(n), false);
  for (const int r : wanted) expected[static_cast<std::size_t>(r)] = true;
  auto remaining = static_cast<int>(wanted.size());
  const std::int64_t timeout = config_.fault_tolerance.worker_timeout_ms;
  const std::int64_t wait_start = steady_ms();
  while (remaining > 0) {
    if (signals::interrupted()) fail<InterruptedError>("interrupted at step {}", result_.steps);
    if (auto in = listener_.receive(deadline_in(kPollSlice))) {
      protocol::Envelope e;
      try {
        e = protocol::decode(in->message, job_id_);
      } catch (const ProtocolError& err) {
        log::warn("dropped a message from '{}': {}", in->peer, err.what());
        continue;
      }
      if (e.rank >= static_cast<std::uint32_t>(n) || in->peer != protocol::peer_name(e.rank)) {
        log::warn("dropped a {} message from '{}' claiming rank {}", protocol::name_of(e.type),
                  in->peer, e.rank);
        continue;
      }
      const auto r = static_cast<int>(e.rank);
      if (e.type == protocol::Type::kError) raise_worker_error(r, protocol::read_error(e));
      if (e.type != type || got[static_cast<std::size_t>(r)] ||
          !expected[static_cast<std::size_t>(r)]) {
        fail<ProtocolError>("worker {} sent a {} message while the coordinator waited for {}", r,
                            protocol::name_of(e.type), protocol::name_of(type));
      }
      got[static_cast<std::size_t>(r)] = std::move(e);
      --remaining;
      continue;
    }
    check_workers();
    if (on_idle) on_idle();
    for (int r = 0; r < n; ++r) {
      if (got[static_cast<std::size_t>(r)]) continue;
      std::int64_t silent = heartbeat_.silent_ms(r);
      if (silent < 0) silent = steady_ms() - wait_start;  // has not pinged yet
      if (silent > timeout) {
        fail_worker(r, fmt::format("sent no heartbeat for {} ms (fault_tolerance.worker_timeout_ms "
                                   "= {})", silent, timeout));
      }
    }
  }
  std::vector<protocol::Envelope> out;
  out.reserve(wanted.size());
  for (const int r : wanted) out.push_back(std::move(*got[static_cast<std::size_t>(r)]));
  return out;
}

void CoordinatorSession::record_step(std::uint64_t step, double loss_sum, std::uint64_t rows,
                                     const std::vector<double>& worker_loss_sum,
                                     const std::vector<std::uint64_t>& worker_rows) {
  stragglers_.check(heartbeat_, result_);  // also when the waits are never idle
  const std::uint64_t previous = result_.steps;
  result_.steps = step;
  window_loss_ += loss_sum;
  window_rows_ += rows;
  for (std::size_t r = 0; r < worker_loss_sum.size(); ++r) {
    window_worker_loss_[r] += worker_loss_sum[r];
    window_worker_rows_[r] += worker_rows[r];
  }
  const auto every = static_cast<std::uint64_t>(config_.output.log_every_steps);
  // A row when the step crosses a multiple of log_every (modes that advance several steps per
  // call, as parameters mode does per round, still log at the cadence asked for), and at the end.
  if (step / every == previous / every && step != total_steps()) return;

  LogRow row;
  row.step = step;
  const auto per_epoch = schedule_per_epoch_ > 0 ? schedule_per_epoch_ : plan_.steps_per_epoch;
  row.epoch = static_cast<double>(step) / static_cast<double>(per_epoch);
  row.seconds = elapsed_seconds();
  row.train_loss = window_rows_ > 0 ? window_loss_ / static_cast<double>(window_rows_) : 0.0;
  for (std::size_t r = 0; r < window_worker_loss_.size(); ++r) {
    row.worker_loss.push_back(window_worker_rows_[r] > 0
                                  ? window_worker_loss_[r] / static_cast<double>(window_worker_rows_[r])
                                  : 0.0);
  }
  if (const auto v = evaluate_validation(params_)) {
    row.validation_loss = v->loss;
    row.validation_metric = v->accuracy ? v->accuracy : v->mse;
  }
  const std::string progress =
      fmt::format("step {}/{} epoch {:.2f} loss {:.6g}{}", step, total_steps(), row.epoch,
                  row.train_loss,
                  row.validation_loss ? fmt::format(" validation {:.6g}", *row.validation_loss) : "");
  if (log::level() >= log::Level::kInfo) {
    log::info("{}", progress);
  } else if (progress_bar_) {
    // One line rewritten in place, only on a terminal (never in a file or a pipe).
    log::progress(step == total_steps() ? "" : progress);
  }
  result_.log.push_back(std::move(row));
  window_loss_ = 0;
  window_rows_ = 0;
  std::fill(window_worker_loss_.begin(), window_worker_loss_.end(), 0.0);
  std::fill(window_worker_rows_.begin(), window_worker_rows_.end(), 0);
}

std::optional<Metrics> CoordinatorSession::evaluate_validation(const std::vector<double>& params) {
  if (!validation_ || validation_->y.size() == 0 || !model_) return std::nullopt;
  const auto total = evaluate_rows(*model_, params, *validation_);
  const auto rows = validation_->y.size();
  return to_metrics(model_->task(), total.loss_sum, total.correct, total.squared_error_sum, rows);
}

}  // namespace dt::roles
