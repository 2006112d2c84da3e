// ServerGroup's lost workers (fault_tolerance.on_worker_failure continue and restart), joiners
// (elastic, async) and the end of async training (training.early_stopping), apart from the
// group's start and stop.

#include "core/coordinator/session.hpp"
#include "core/servers/server_group.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"

namespace dt::roles {

using transport::Clock;

namespace {

// A server takes news in between two messages (a poll slice at most); it answers at once
// unless it is busy applying an update, so this is only the bound on a stuck server thread.
constexpr std::chrono::milliseconds kNewsWait{5000};

}  // namespace

std::vector<std::uint64_t> ServerGroup::lose_worker(int rank, bool replaced) {
  if (!replaced) dropped_.push_back(rank);
  std::vector<std::uint64_t> out;
  for (const auto& s : servers_) {
    out.push_back(replaced ? s->replace_worker(rank, kNewsWait) : s->drop_worker(rank, kNewsWait));
  }
  return out;
}

void ServerGroup::forget_departed() {
  for (int r = 0; r < session_.plan().starting_ranks(); ++r) {
    if (!session_.is_alive(r)) (void)lose_worker(r, false);
  }
}

void ServerGroup::admit_worker(int rank) {
  std::erase(dropped_, rank);
  for (const auto& s : servers_) (void)s->replace_worker(rank, kNewsWait);
}

std::vector<std::uint64_t> ServerGroup::drop_worker_dealing(int rank, protocol::Envelope deal,
                                                            std::vector<int>& dealt_to) {
  dropped_.push_back(rank);
  auto dealt = servers_.front()->drop_worker_dealing(rank, std::move(deal), kNewsWait);
  dealt_to = std::move(dealt.to);
  std::vector<std::uint64_t> out{dealt.applied};
  for (std::size_t k = 1; k < servers_.size(); ++k) {
    out.push_back(servers_[k]->drop_worker(rank, kNewsWait));
  }
  return out;
}

std::vector<int> ServerGroup::deal_replan(protocol::Envelope deal) {
  return servers_.front()->deal_replan(std::move(deal), kNewsWait);
}

void ServerGroup::join_worker(int rank, std::uint64_t steps) {
  std::erase(dropped_, rank);  // a replacement server need not drop the slot any more
  for (const auto& s : servers_) s->join_worker(rank, steps, kNewsWait);
}

void ServerGroup::copy_params_of_round(std::uint64_t round, std::vector<double>& params) const {
  params.resize(session_.params().size());
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    // The current slice at that round; or, when the server has just applied the round (the
    // lost worker's push reached every server before it died), the copy kept at the round's
    // start (keep).
    auto state = servers_[k]->state_at(round);
    if (!state && copies_[k].version == round) state = copies_[k];
    if (!state) {
      fail<TrainingError>("internal error: parameter server {} is at update {}, not at the start "
                          "of round {} or just past it", k, servers_[k]->stats().version,
                          round + 1);
    }
    std::copy(state->slice.begin(), state->slice.end(),
              params.begin() + static_cast<std::ptrdiff_t>(ranges_[k].begin));
  }
}

void ServerGroup::end_training() {
  if (ended_) return;
  ended_ = true;
  for (const auto& s : servers_) s->end_training();
}

bool ServerGroup::wait_update(std::uint64_t version, std::chrono::milliseconds wait) {
  return servers_.front()->wait_version(version, wait);
}

void ServerGroup::wait_all_applied(std::int64_t timeout_ms) {
  const auto start = Clock::now();
  for (const auto& s : servers_) {
    // The target is read again at every slice: a worker lost meanwhile lowers it.
    while (!s->wait_version(s->total_steps(), kPollSlice)) {
      check();
      session_.supervise();
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      if (waited > timeout_ms) {
        fail<TimeoutError>("parameter server {} (keys [{}, {})) did not apply its {} updates "
                           "within {} ms (it is at {})", s->options().index,
                           s->options().range.begin, s->options().range.end, s->total_steps(),
                           timeout_ms, s->stats().version);
      }
    }
  }
}

}  // namespace dt::roles
