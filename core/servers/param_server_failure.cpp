// ParameterServer's failures: how the coordinator finds out that a server can serve no more
// (failure), the copy of its state a replacement starts from (capture), the faults a test
// injects into a server thread, and a worker reconnecting to a replacement (async rejoin).

#include "core/servers/param_server.hpp"

#include "core/protocol/heartbeat.hpp"
#include "core/protocol/step_messages.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/memory.hpp"

#include <algorithm>
#include <limits>
#include <span>
#include <thread>

namespace dt::roles {

namespace {

// Brings a copy of a server's state up to date at `at` only: keyed updates step only their
// coordinates (step_indices changes the parameters and the optimizer's slots there and nothing
// else, apart from its step count), so the rest of the copy already holds the server's values.
// The coordinates are far apart and cold, in the copy and in the server's state alike (the
// server stepped them on its own thread, maybe on the other core): both are fetched a few
// indices ahead. Fetching the copy's alone left each source read a miss: 50 ns a key with three
// vectors of 2^21 values where fetching both took 25 (the keyed rounds' keep: two servers'
// 18,000 keys each at 2^22, every step).
template <class Index>
void copy_at(std::span<const Index> at, const std::vector<double>& slice,
             const models::OptimizerState& optimizer, ServerState& to, std::uint64_t* marks) {
  // Each vector of the optimizer's state holds `stride` values a key: one a slot, or ftrl's
  // (z, n) record (one line to read and one to write instead of two and two). The copy's
  // marks (`marks`, unless null) are set in the same pass: at 2^24 keys their word is a miss
  // every second key, in a loop of its own.
  constexpr std::size_t kAhead = 16;
  const std::size_t n = at.size();
  const std::size_t stride = optimizer.stride();
  for (std::size_t j = 0; j < n; ++j) {
    if (j + kAhead < n) {
      const std::size_t next = at[j + kAhead];
      if (marks != nullptr) __builtin_prefetch(marks + next / 64, 1, 1);
      __builtin_prefetch(to.slice.data() + next, 1, 1);
      __builtin_prefetch(slice.data() + next, 0, 1);
      for (auto& slot : to.optimizer.slots) __builtin_prefetch(slot.data() + next * stride, 1, 1);
      for (const auto& slot : optimizer.slots) {
        __builtin_prefetch(slot.data() + next * stride, 0, 1);
      }
    }
    const std::size_t i = at[j];
    if (marks != nullptr) marks[i / 64] |= std::uint64_t{1} << (i % 64);
    to.slice[i] = slice[i];
    for (std::size_t s = 0; s < optimizer.slots.size(); ++s) {
      const double* from = optimizer.slots[s].data() + i * stride;
      double* into = to.optimizer.slots[s].data() + i * stride;
      for (std::size_t v = 0; v < stride; ++v) into[v] = from[v];
    }
  }
  to.optimizer.steps = optimizer.steps;
}

}  // namespace

std::optional<std::string> ParameterServer::failure(std::int64_t timeout_ms) const {
  {
    std::lock_guard lock(mu_);
    if (!error_.empty()) {
      const auto prefix = name() + " ";  // loop() words its errors "<name> failed: ..."
      return error_.starts_with(prefix) ? error_.substr(prefix.size()) : error_;
    }
  }
  if (stop_.load()) return std::nullopt;  // stopping on purpose
  if (ended_.load()) return std::string("stopped: its thread ended without a word");
  const auto silent = steady_ms() - beat_ms_.load();
  if (silent > timeout_ms) {
    return fmt::format("is hung: it has not served its socket for {} ms "
                       "(fault_tolerance.worker_timeout_ms = {})",
                       silent, timeout_ms);
  }
  return std::nullopt;
}

void copy_state(const std::vector<double>& slice, const models::OptimizerState& optimizer,
                ServerState& out) {
  memory::copy_huge(out.slice, slice);
  out.optimizer.steps = optimizer.steps;
  out.optimizer.interleaved = optimizer.interleaved;
  out.optimizer.slots.resize(optimizer.slots.size());
  for (std::size_t s = 0; s < optimizer.slots.size(); ++s) {
    memory::copy_huge(out.optimizer.slots[s], optimizer.slots[s]);
  }
}

void ParameterServer::capture(ServerState& out) const {
  std::lock_guard lock(mu_);
  const auto& state = optimizer_->state();
  // A copy of the version the last keyed round started from lacks only what that round
  // stepped (copy_at).
  const auto same_shape = [&] {
    if (out.slice.size() != slice_.size() || out.optimizer.slots.size() != state.slots.size() ||
        out.optimizer.interleaved != state.interleaved) {
      return false;
    }
    for (std::size_t s = 0; s < state.slots.size(); ++s) {
      if (out.optimizer.slots[s].size() != state.slots[s].size()) return false;
    }
    return true;
  };
  if (stepped_from_ == out.version && stats_.version == out.version + 1 && same_shape()) {
    const bool marked = out.marks.version == out.version;
    copy_at(std::span<const std::uint64_t>(stepped_), slice_, state, out,
            marked ? out.marks.words() : nullptr);
    if (!marked) out.marks.version = UINT64_MAX;
  } else {
    copy_state(slice_, state, out);
    out.marks.version = UINT64_MAX;
    if (options_.sparse_rows && !options_.asynchronous) {  // one read of the width
      std::vector<std::span<const double>> vectors{out.slice};
      for (const auto& slot : out.optimizer.slots) vectors.emplace_back(slot);
      out.marks.reset_from(vectors, out.slice.size());
      out.marks.version = stats_.version;
    }
  }
  if (out.marks.version != UINT64_MAX) out.marks.version = stats_.version;
  out.version = stats_.version;
  out.worker_steps = stats_.worker_steps;
}

void ParameterServer::leave_copy() {
  if (!options_.copy || options_.copy_every == 0 || stats_.version % options_.copy_every != 0) {
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  std::lock_guard lock(options_.copy->mu);
  auto& state = options_.copy->state;
  state.version = stats_.version;
  state.marks.version = UINT64_MAX;  // kept by capture() only
  const auto& optimizer = optimizer_->state();
  if (copy_in_part_) {
    // Keyed pushes step only their offsets: the rest of the copy is still this server's state.
    copy_at(std::span<const std::uint32_t>(changed_), slice_, optimizer, state, nullptr);
  } else {
    copy_state(slice_, optimizer, state);
    copy_in_part_ = keyed_;
  }
  changed_.clear();
  state.worker_steps = stats_.worker_steps;
  options_.copy->seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool ParameterServer::injected_fault(const protocol::Envelope& e) {
  if (faults_.empty() || (e.type != protocol::Type::kPush && e.type != protocol::Type::kPull)) {
    return false;
  }
  const std::uint64_t version = stats_.version;  // written by this thread only
  const auto fired = faults_.step_faults(version);
  if (fired.kill) {
    // As a crashed process would: no word to anyone, the socket closes as the thread ends, and
    // the state is gone (NaN, so that any use of it would show in the model).
    log::warn("injected fault: kill at update {} (the server thread ends; its socket and state "
              "go with it)", version);
    std::lock_guard lock(mu_);
    std::fill(slice_.begin(), slice_.end(), std::numeric_limits<double>::quiet_NaN());
    kept_.clear();
    snapshots_.clear();
    dead_ = true;
    return true;
  }
  if (fired.hang) {
    // Alive but silent: the socket stays open and unread until the coordinator gives up on it.
    log::warn("injected fault: hang at update {} (the server thread stops serving)", version);
    while (!stop_.load()) std::this_thread::sleep_for(kPollSlice);
    return true;
  }
  return false;
}

void ParameterServer::on_rejoin(const protocol::Envelope& e) {
  const auto rank = static_cast<int>(e.rank);
  const auto r = static_cast<std::size_t>(rank);
  const auto pushed = protocol::count(e, "rejoin");
  const bool awaiting = protocol::flag(e, "awaiting");
  if (pushed > options_.worker_steps[r]) {
    fail<ProtocolError>("worker {} says it has pushed {} steps of {}", rank, pushed,
                        options_.worker_steps[r]);
  }
  const auto before = clock_->completed(rank);
  if (pushed > before) {
    // The steps the worker pushed since this server's copy was taken: applied to the other
    // slices, lost for this one (their gradients went to the failed server). Counted as done,
    // so that the version still ends at every worker's steps.
    std::vector<std::uint64_t> completed;
    for (int w = 0; w < options_.workers; ++w) completed.push_back(clock_->completed(w));
    completed[r] = pushed;
    clock_->resume_at(completed);
    std::lock_guard lock(mu_);
    stats_.version += pushed - before;
    stats_.worker_steps[r] = pushed;
    stats_.staleness_of[r].resize(pushed, 0);
    cv_.notify_all();
  }
  std::erase(waiting_, rank);
  if (awaiting && !clock_->finished(rank)) waiting_.push_back(rank);
  release_held();
}

}  // namespace dt::roles
