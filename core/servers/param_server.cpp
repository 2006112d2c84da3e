#include "core/servers/param_server.hpp"

#include "core/models/optim.hpp"
#include "core/protocol/compression.hpp"
#include "transports/topk_codec.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/protocol/drop_log.hpp"
#include "core/protocol/step_messages.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/resources.hpp"
#include "base/timeline.hpp"

#include <algorithm>

namespace dt::roles {

using transport::deadline_in;

ParameterServer::ParameterServer(transport::Transport& transport, ServerOptions options,
                                 std::vector<double> slice)
    : options_(std::move(options)),
      slice_(std::move(slice)),
      faults_(FaultInjector::for_server(options_.faults, options_.index)) {
  const auto n = options_.range.size();
  if (slice_.size() != n || (!options_.l2.empty() && options_.l2.back().end > n)) {
    fail<TrainingError>("internal error: server {} owns {} keys but got {} values and L2 "
                        "coefficients up to key {}", options_.index, n, slice_.size(),
                        options_.l2.empty() ? 0 : options_.l2.back().end);
  }
  // clip_norm over several servers: the factor comes from the norm exchange, not the slice.
  auto rule = options_.optimizer;
  if (options_.norms || options_.clip_from_push) rule.clip_norm = 0.0;
  optimizer_ = models::make_optimizer(rule, n, options_.schedule_steps);
  if (options_.optimizer_state) optimizer_->set_state(*options_.optimizer_state);
  stats_.version = options_.start_version;
  start_marks();
  const auto workers = static_cast<std::size_t>(options_.workers);
  // grad_ and pending_ get the range's size at the first dense round or push: keyed rounds
  // (sparse rows) use neither, and at 2^24 keys they are 64 MB each to clear.
  stats_.worker_steps.assign(workers, 0);
  stats_.staleness_of.resize(workers);
  gone_.assign(workers, false);
  replaced_.assign(workers, false);
  await_pull_.assign(workers, false);
  if (options_.asynchronous) {
    clock_.emplace(options_.worker_steps, options_.max_staleness);
    if (!options_.start_completed.empty()) {
      clock_->resume_at(options_.start_completed);
      for (std::size_t r = 0; r < workers; ++r) stats_.worker_steps[r] = clock_->completed(static_cast<int>(r));
      // Staleness is kept per (rank, step): a replacement's steps before its start have none.
      for (std::size_t r = 0; r < workers; ++r) stats_.staleness_of[r].resize(stats_.worker_steps[r], 0);
    }
    before_.assign(n, 0.0);
    for (const auto s : options_.worker_steps) total_steps_ += s;
  } else {
    pending_.assign(workers, {});
    pending_rows_.assign(workers, 0);
    have_.assign(workers, false);
  }
  auto listener = transport.listen(options_.incarnation == 0
                                       ? fmt::format("ps{}", options_.index)
                                       : fmt::format("ps{}r{}", options_.index, options_.incarnation));
  if (options_.copy) {
    // The copy a replacement would start from, from the start (before any update: the workers
    // wait for the servers' announcement). Made by capture() into fresh buffers, which it puts
    // on huge pages as this server's own are: leave_copy writes them at random keys. A plain
    // copy of a ServerState (the group's, until then) left them on 4 KiB pages, a TLB miss a
    // key: the keyed copy took 1.8 times the samples of FTRL's step, and 0.58 to 0.70 times
    // its time a step once on huge pages (async, 2 servers, 2^22 keys).
    ServerState first;
    capture(first);
    std::lock_guard lock(options_.copy->mu);
    options_.copy->state = std::move(first);
  }
  endpoint_ = listener->endpoint();
  beat_ms_.store(steady_ms());
  thread_ = std::thread([this, l = std::move(listener)]() mutable { loop(std::move(l)); });
}

ParameterServer::~ParameterServer() { stop(); }

void ParameterServer::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::string ParameterServer::name() const {
  return fmt::format("parameter server {} (keys [{}, {}))", options_.index, options_.range.begin,
                     options_.range.end);
}

bool ParameterServer::wait_version(std::uint64_t version, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  // A failed server is the coordinator's to find (failure()) and handle by its policy.
  cv_.wait_for(lock, wait, [&] { return stats_.version >= version || !error_.empty(); });
  return stats_.version >= version;
}

bool ParameterServer::copy_slice(std::span<double> params) const {
  std::lock_guard lock(mu_);
  if (dead_) return false;
  std::copy(slice_.begin(), slice_.end(),
            params.begin() + static_cast<std::ptrdiff_t>(options_.range.begin));
  return true;
}

void ParameterServer::check() const {
  std::lock_guard lock(mu_);
  if (!error_.empty()) throw TrainingError(error_);
}

bool ParameterServer::take_snapshot(std::uint64_t version, std::span<double> params) {
  std::lock_guard lock(mu_);
  const auto it = snapshots_.find(version);
  if (it == snapshots_.end()) return false;
  std::copy(it->second.begin(), it->second.end(),
            params.begin() + static_cast<std::ptrdiff_t>(options_.range.begin));
  snapshots_.erase(snapshots_.begin(), std::next(it));
  return true;
}

std::vector<AppliedUpdate> ParameterServer::take_log() {
  std::lock_guard lock(mu_);
  return std::exchange(log_, {});
}

ServerStats ParameterServer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void ParameterServer::loop(std::unique_ptr<transport::Listener> listener) {
  log::set_thread_prefix(fmt::format("server {}", options_.index));
  const timeline::Scope recording(options_.recorder.get());  // output.timeline
  listener_ = listener.get();
  DropLog drops;  // strangers' and malformed messages: the first few peers named, then counts
  try {
    while (!stop_.load()) {
      beat_ms_.store(steady_ms());
      take_news();  // lost workers the coordinator told of
      take_end();   // training.early_stopping: the coordinator ended training
      if (round_.waits) {  // clip_norm: the round waits for the other servers' partial norms
        exchange_norm(kPollSlice);
        continue;
      }
      auto in = listener->receive(deadline_in(kPollSlice));
      drops.tick();
      {
        std::lock_guard lock(mu_);
        stats_.traffic = listener->counters();
      }
      if (!in) continue;
      protocol::Envelope e;
      try {
        e = protocol::decode(std::move(in->message), options_.job_id);
      } catch (const ProtocolError& err) {
        drops.drop(in->peer, err.what());
        continue;
      }
      if (e.rank >= static_cast<std::uint32_t>(options_.workers) ||
          in->peer != protocol::peer_name(e.rank)) {
        drops.drop(in->peer, fmt::format("a {} message claiming rank {}",
                                         protocol::name_of(e.type), e.rank));
        continue;
      }
      if (injected_fault(e)) break;
      if (screen_lost(e)) continue;
      if (screen_ended(e)) continue;
      handle(e);
    }
  } catch (const Error& e) {
    std::lock_guard lock(mu_);
    error_ = fmt::format("{} failed: {}", name(), e.what());
    cv_.notify_all();
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    const std::string exhausted = resources::describe_exhaustion(e);
    error_ = exhausted.empty() ? fmt::format("{} failed: internal error: {}", name(), e.what())
                               : fmt::format("{} failed: {}", name(), exhausted);
    cv_.notify_all();
  }
  {
    std::lock_guard lock(mu_);
    stats_.traffic = listener->counters();
    listener_ = nullptr;
  }
  ended_.store(true);
}

void ParameterServer::handle(const protocol::Envelope& e) {
  switch (e.type) {
    case protocol::Type::kPull: on_pull(e); return;
    case protocol::Type::kPush:
      if (options_.asynchronous) on_async_push(e); else on_sync_push(e);
      return;
    default:
      fail<ProtocolError>("worker {} sent a {} message to a parameter server", e.rank,
                          protocol::name_of(e.type));
  }
}

void ParameterServer::on_pull(const protocol::Envelope& e) {
  const auto rank = static_cast<int>(e.rank);
  if (!options_.asynchronous && e.fields.contains("keyed")) {
    on_keyed_pull(e);
    return;
  }
  if (!options_.asynchronous) {
    reply(rank);  // the current slice: the start of training, or the latest round
    return;
  }
  take_pull_offsets(e);  // keyed: the offsets whose values the answer carries
  if (e.fields.contains("rejoin")) {
    on_rejoin(e);  // to a replacement of a failed server
    return;
  }
  const auto steps = protocol::count(e, "steps");
  if (steps != options_.worker_steps[e.rank]) {
    fail<ProtocolError>("worker {} plans {} steps, the coordinator planned {}", rank, steps,
                        options_.worker_steps[e.rank]);
  }
  const std::uint64_t start =
      options_.start_completed.empty() ? 0 : options_.start_completed.at(e.rank);
  if (clock_->completed(rank) != start ||
      std::find(waiting_.begin(), waiting_.end(), rank) != waiting_.end()) {
    fail<ProtocolError>("worker {} pulled twice (pulls only start training; pushes continue it)",
                        rank);
  }
  if (clock_->finished(rank)) return;  // nothing to do (an empty plan)
  waiting_.push_back(rank);
  release_held();
}

void ParameterServer::on_sync_push(const protocol::Envelope& e) {
  const auto r = static_cast<std::size_t>(e.rank);
  std::uint64_t version = 0;
  {
    std::lock_guard lock(mu_);
    version = stats_.version;
  }
  if (e.step != version) {
    fail<ProtocolError>("worker {} pushed its gradient of step {} while the server is at step {}",
                        e.rank, e.step + 1, version + 1);
  }
  if (have_[r]) fail<ProtocolError>("worker {} pushed step {} twice", e.rank, e.step + 1);
  const bool keyed = e.fields.contains("keyed");
  if (!keyed) pending_[r].resize(options_.range.size());  // a dense push: the whole range
  if (keyed) {
    take_keyed_push(e);  // param_server_keyed.cpp
  } else if (options_.topk) {  // top-k: the entries this worker chose in my range (maybe none)
    const auto frame = protocol::frame_of(e, 0);
    std::fill(pending_[r].begin(), pending_[r].end(), 0.0);
    wire::add_topk(frame, pending_[r]);
    const auto entries = wire::topk_entries(frame, pending_[r].size());
    std::lock_guard lock(mu_);
    stats_.half_values += pending_[r].size();
    stats_.half_bytes += frame.size();
    stats_.topk_entries += entries;
  } else if (options_.codec) {  // aggregation.compression: decoded into float64
    const auto frame = protocol::frame_of(e, 0);
    wire::decode_half(frame, *options_.codec, pending_[r]);
    std::lock_guard lock(mu_);
    stats_.half_values += pending_[r].size();
    stats_.half_bytes += frame.size();
  } else {
    const auto g = protocol::doubles(e, 0, options_.range.size());
    std::copy(g.begin(), g.end(), pending_[r].begin());
  }
  pending_rows_[r] = protocol::count(e, "rows");
  have_[r] = true;
  ++received_;
  note_missing();
  if (!round_complete()) return;
  apply_round();
}

// Exactly the arithmetic of the single-server path (gradients.cpp), restricted to the slice:
// rank-order sum, times 1/rows, plus l2 * w on regularized keys, one optimizer step; then the
// new slice to every worker. Under clip_norm (options_.norms) the step waits for the round's
// global norm: param_server_clip.cpp.
void ParameterServer::apply_round() {
  round_.start = timeline::start();
  if (keyed_) {
    sum_keyed_round();
  } else {
    grad_.assign(options_.range.size(), 0.0);
    std::uint64_t rows = 0;
    const auto n = grad_.size();
    for (std::size_t r = 0; r < pending_.size(); ++r) {
      if (!have_[r]) continue;  // a worker lost (continue) before its push of this round
      for (std::size_t i = 0; i < n; ++i) grad_[i] += pending_[r][i];
      rows += pending_rows_[r];
    }
    round_.rows = rows;
    if (rows > 0) {  // an empty round (tiny shards) changes nothing, as on the single server
      const double inv = 1.0 / static_cast<double>(rows);
      for (double& g : grad_) g *= inv;
      add_l2(options_.l2, slice_, grad_);  // slice_ changes on this thread only: no lock
    }
  }
  if (options_.norms) {
    exchange_norm(std::chrono::milliseconds(0));  // finish_round once every server has posted
    return;
  }
  finish_round(1.0);
}

void ParameterServer::finish_round(double factor) {
  {
    std::lock_guard lock(mu_);
    // An empty round (rows 0: tiny shards) changes nothing. factor 1 (no clip_norm): a step
    // scaled by 1.0 is step(), the same bits.
    if (keyed_) {
      stepped_.clear();  // what capture() brings up to date (param_server_keyed.cpp)
      if (round_.rows > 0) {
        // The next slices' values read in the step's own pass (reply_keyed sends them).
        next_values_.clear(static_cast<std::size_t>(options_.workers));
        for (std::size_t r = 0; r < has_next_.size(); ++r) {
          if (has_next_[r] && !(r < gone_.size() && gone_[r])) {
            (void)next_values_.add(r, next_offsets_[r], 0, stats_.version + 1);
          }
        }
        optimizer_->step_indices_with(touched_index_, sums_, factor, slice_,
                                      {.gathers = next_values_.gathers()});
        stepped_.assign(touched_index_.begin(), touched_index_.end());
      }
      stepped_from_ = stats_.version;
    } else if (round_.rows > 0) {
      optimizer_->step_scaled(slice_, grad_, factor, slice_);
    }
    ++stats_.version;
    timeline::span_at(timeline::Phase::kServerApply, stats_.version, round_.start);
    std::fill(have_.begin(), have_.end(), false);
    received_ = 0;
    stats_.missing.clear();
    cv_.notify_all();
  }
  for (int rank = 0; rank < options_.workers; ++rank) {
    if (!gone_[static_cast<std::size_t>(rank)]) reply(rank);
  }
  next_values_.clear(0);  // a slice made and not sent (its worker lost) is not sent later
}

void ParameterServer::on_async_push(const protocol::Envelope& e) {
  const auto span_start = timeline::start();  // output.timeline: an `apply push` span
  update_plan(e);  // before the clock judges this step: rows taken over lengthen the plan
  const auto rank = static_cast<int>(e.rank);
  const auto r = static_cast<std::size_t>(rank);
  if (clock_->finished(rank) || e.step != clock_->completed(rank) ||
      std::find(waiting_.begin(), waiting_.end(), rank) != waiting_.end()) {
    fail<ProtocolError>("worker {} pushed step {} out of turn (it has completed {} of {} steps{})",
                        rank, e.step + 1, clock_->completed(rank), options_.worker_steps[r],
                        clock_->finished(rank) ? "" : ", and its pull is unanswered");
  }
  const auto from = protocol::count(e, "version");
  const auto rows = protocol::count(e, "rows");
  const double loss_sum = protocol::number(e, "loss_sum");
  // clip_norm over several servers: the worker's factor for its whole gradient (1: none).
  const double clip = options_.clip_from_push && rows > 0 ? protocol::number(e, "clip") : 1.0;
  // Keyed (sparse rows): the gradient at the push's offsets only (param_server_keyed.cpp).
  const bool keyed = e.fields.contains("keyed");
  const auto g = keyed ? take_async_keyed_push(e) : protocol::doubles(e, 0, options_.range.size());
  {
  std::lock_guard lock(mu_);
  if (from > stats_.version) {
    fail<ProtocolError>("worker {} pushed a gradient of version {}, the server is at {}", rank,
                        from, stats_.version);
  }
  const std::uint64_t staleness = stats_.version - from;
  if (rows > 0 && keyed) {
    apply_keyed_push(g, rows, staleness, clip);
  } else if (rows > 0) {
    copy_in_part_ = false;  // a dense step: the next copy is whole
    marks_.version = UINT64_MAX;  // and so is every kept state from here on
    const double inv = 1.0 / static_cast<double>(rows);
    const auto n = options_.range.size();
    grad_.resize(n);
    for (std::size_t i = 0; i < n; ++i) grad_[i] = g[i] * inv;
    add_l2(options_.l2, slice_, grad_);
    if (options_.staleness_lr && staleness > 0) {
      // Divide the STEP (not the gradient: adam would undo that) by 1 + staleness; the
      // optimizer's state still sees the whole gradient.
      before_ = slice_;
      optimizer_->step_scaled(slice_, grad_, clip, slice_);
      const double scale = 1.0 / (1.0 + static_cast<double>(staleness));
      for (std::size_t i = 0; i < n; ++i) slice_[i] = before_[i] + (slice_[i] - before_[i]) * scale;
    } else {
      optimizer_->step_scaled(slice_, grad_, clip, slice_);  // clip 1: step(), the same bits
    }
  }
  ++stats_.version;
  stats_.staleness.add(staleness);
  stats_.staleness_of[r].push_back(staleness);
  clock_->complete(rank);
  stats_.worker_steps[r] = clock_->completed(rank);
  if (options_.keep_log) {
    log_.push_back({stats_.version, rank, e.step, loss_sum, rows,
                    protocol::count_or(e, "steps", 0)});
  }
  const auto every = options_.snapshot_every;
  if (every > 0 && (stats_.version % every == 0 || stats_.version == total_steps_)) {
    snapshots_.emplace(stats_.version, slice_);
  }
  leave_copy();
  if (options_.checkpoint_every > 0 && stats_.version % options_.checkpoint_every == 0) {
    keep_state();
  }
  timeline::span_at(timeline::Phase::kApplyPush, stats_.version, span_start,
                    static_cast<std::uint32_t>(std::min<std::uint64_t>(staleness, UINT32_MAX)),
                    static_cast<std::uint16_t>(rank));
  cv_.notify_all();
  }
  if (!clock_->finished(rank)) waiting_.push_back(rank);  // the push asks for the next step too
  release_held();
}

// Answers every held pull the stale-synchronous bound now allows, in arrival order. Called
// without mu_: the sends happen outside the lock.
void ParameterServer::release_held() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (!clock_->may_start(*it)) {
      ++it;
      continue;
    }
    {
      std::lock_guard lock(mu_);
      stats_.max_clock_gap = std::max(stats_.max_clock_gap, clock_->lead(*it));
    }
    reply(*it);
    it = waiting_.erase(it);
  }
}

void ParameterServer::reply(int rank) {
  // Keyed: the values of the offsets asked for (async: asked for by the push, pull or rejoin
  // this answers).
  if (keyed_ && (!options_.asynchronous || has_next_[static_cast<std::size_t>(rank)])) {
    reply_keyed(rank);
    return;
  }
  protocol::Envelope s{.type = protocol::Type::kSlice, .step = stats_.version};
  s.fields = {{"server", options_.index}, {"version", stats_.version}};
  s.arrays.push_back(wire::to_bytes(std::span<const double>(slice_)));
  send_slice(rank, std::move(s));
}

void ParameterServer::send_slice(int rank, protocol::Envelope s) {
  if (const auto notice = notices_.find(rank); notice != notices_.end()) {
    // A share of a lost worker's rows (async continue; deal_rows), on a whole or a keyed slice.
    s.fields["reassign"] = notice->second.fields;
    s.arrays.push_back(notice->second.arrays.at(0));
    notices_.erase(notice);
  }
  try {
    listener_->send(protocol::peer_name(static_cast<std::uint32_t>(rank)),
                    protocol::encode(std::move(s), options_.job_id), deadline_in(kSendDeadline));
  } catch (const TransportError& e) {
    // A worker that is gone (killed, or not yet replaced) is the coordinator's to find and
    // handle (exits, heartbeats); the server serves the others. A replacement gets the slice
    // it needs when it asks (replace_worker).
    log::debug("no slice for worker {}: {}", rank, e.what());
  }
}

}  // namespace dt::roles
