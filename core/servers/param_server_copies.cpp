// The copies of a ParameterServer's state (param_server.hpp): the one a replacement starts
// from (capture, and leave_copy's as an async server goes) and the states an async server
// keeps for checkpoints (keep_state, read_state_at). On keyed (sparse) runs each is written
// at the keys that changed, not the width.

#include "core/servers/param_server.hpp"

#include "base/memory.hpp"

#include <span>

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

// Marks the keys at which the slice or any of the optimizer's slots is nonzero: one read of the
// width (an interleaved slot, ftrl's (z, n), marks its key for either value: KeyMarks::reset_from).
void mark_nonzero(KeyMarks& marks, std::span<const double> slice,
                  const models::OptimizerState& state) {
  std::vector<std::span<const double>> vectors{slice};
  for (const auto& slot : state.slots) vectors.emplace_back(slot);
  marks.reset_from(vectors, slice.size());
}

bool same_shape(const ServerState& out, const std::vector<double>& slice,
                const models::OptimizerState& state) {
  if (out.slice.size() != slice.size() || out.optimizer.slots.size() != state.slots.size() ||
      out.optimizer.interleaved != state.interleaved) {
    return false;
  }
  for (std::size_t s = 0; s < state.slots.size(); ++s) {
    if (out.optimizer.slots[s].size() != state.slots[s].size()) return false;
  }
  return true;
}

}  // namespace

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
  if (stepped_from_ == out.version && stats_.version == out.version + 1 &&
      same_shape(out, slice_, state)) {
    const bool marked = out.marks.version == out.version;
    copy_at(std::span<const std::uint64_t>(stepped_), slice_, state, out,
            marked ? out.marks.words() : nullptr);
    if (!marked) out.marks.version = UINT64_MAX;
  } else {
    copy_state(slice_, state, out);
    out.marks.version = UINT64_MAX;
    if (options_.sparse_rows && !options_.asynchronous) {  // one read of the width
      mark_nonzero(out.marks, out.slice, out.optimizer);
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

void ParameterServer::start_marks() {
  if (!options_.asynchronous || !options_.sparse_rows || options_.checkpoint_every == 0) return;
  // One read of the width, before the first update: the keys nonzero at the start (a resumed
  // run's, a replacement's); every key a keyed push steps is marked by its step from here on.
  mark_nonzero(marks_, slice_, optimizer_->state());
  marks_.version = stats_.version;
  keys_.stepped.clear(slice_.size());
  // The buffers of the first state kept, made now (before the first update: the run's set-up,
  // as the copy of the start is) as a copy of the start, which keep_state then writes at the
  // keys stepped since. Made at the first checkpoint instead, it was a copy of the whole width
  // into fresh memory whose page faults held up the server's answers (about 0.5 s of each
  // server's thread at 2^22 keys, ftrl, on the loaded 2-core VM).
  copy_state(slice_, optimizer_->state(), spare_);
  spare_.version = keys_.since = stats_.version;
}

void ParameterServer::keep_state() {
  // Into the buffers of the state a checkpoint read last (spare_): a fresh copy faulted in its
  // pages every time (48 MB a server at 2^22 keys with ftrl). Keyed runs write only the keys
  // that may differ: spare_ is this server's state at an earlier update, at which every key
  // stepped since was marked by its step. Usually that update is the last state kept (the
  // checkpoint read it before this one was due): then only the keys stepped since it, about
  // those of checkpoint_every pushes, where all the marked keys (every key the run has touched,
  // more at each checkpoint: 0.37M a server after 1M rows at 2^22) were written before. Else
  // the marked keys: a key unmarked now was zero then as it is now (marks only grow).
  auto& kept = kept_[stats_.version] = std::move(spare_);
  const auto& state = optimizer_->state();
  const bool keyed = marks_.version != UINT64_MAX;
  const bool at_keys = keyed && same_shape(kept, slice_, state);
  if (at_keys && kept.version == keys_.since) keys_.stepped.list(keys_.listed);
  if (keyed) keys_.stepped.move_into(marks_);
  if (at_keys && kept.version != keys_.since) marks_.list(keys_.listed);
  if (at_keys) {
    copy_at(std::span<const std::uint32_t>(keys_.listed), slice_, state, kept, nullptr);
  } else {
    copy_state(slice_, state, kept);
  }
  keys_.since = stats_.version;
  kept.marks.version = UINT64_MAX;
  if (keyed) {
    kept.marks = marks_;  // into its words' buffer: a bit a key, not a value
    kept.marks.version = stats_.version;
  }
  kept.version = stats_.version;
  kept.worker_steps = stats_.worker_steps;
}

std::optional<ServerState> ParameterServer::state_at(std::uint64_t version) const {
  std::optional<ServerState> out;
  (void)read_state_at(version, [&](std::span<const double> slice,
                                   const models::OptimizerState& optimizer,
                                   const std::vector<std::uint64_t>& worker_steps,
                                   const KeyMarks* /*marks*/) {
    out = ServerState{version, {slice.begin(), slice.end()}, optimizer, worker_steps};
  });
  return out;
}

bool ParameterServer::read_state_at(std::uint64_t version, const StateReader& read) const {
  std::unique_lock lock(mu_);
  if (dead_) return false;
  if (version == stats_.version && !options_.asynchronous) {
    read(slice_, optimizer_->state(), stats_.worker_steps, nullptr);
    return true;
  }
  if (!options_.asynchronous) return false;
  const auto it = kept_.find(version);
  if (it == kept_.end()) return false;
  // Taken out of kept_ and read without the lock: no one else has it, and the checkpoint reads
  // every marked key (0.52M a server after 2.1M rows of issue 16's click log at 2^22), during
  // which the server, which applies each push under the lock, could answer no one. A state
  // kept meanwhile finds no spare_ and is a whole copy, as when a checkpoint falls behind.
  ServerState kept = std::move(it->second);
  kept_.erase(kept_.begin(), std::next(it));
  lock.unlock();
  read(kept.slice, kept.optimizer, kept.worker_steps,
       kept.marks.version == version ? &kept.marks : nullptr);
  lock.lock();
  spare_ = std::move(kept);
  return true;
}

}  // namespace dt::roles
