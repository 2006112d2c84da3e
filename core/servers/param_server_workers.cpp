// ParameterServer's lost workers (fault_tolerance.on_worker_failure continue and restart), and
// elastic joins in async mode (join_worker, deal_replan; docs/elastic.md): the
// coordinator posts the news, the server thread takes it in between two messages, and from then
// on screens the rank's messages so that every (rank, round) of a synchronous run and every
// (rank, step) of an asynchronous one is applied exactly once, and a dropped rank is waited for
// no more.

#include "core/servers/param_server.hpp"

#include "base/error.hpp"
#include "base/log.hpp"

#include <algorithm>

namespace dt::roles {

std::uint64_t ParameterServer::drop_worker(int rank, std::chrono::milliseconds wait) {
  return post_news({.rank = rank, .kind = WorkerNews::Kind::kDrop}, wait).applied;
}

std::uint64_t ParameterServer::replace_worker(int rank, std::chrono::milliseconds wait) {
  return post_news({.rank = rank, .kind = WorkerNews::Kind::kReplace}, wait).applied;
}

void ParameterServer::join_worker(int rank, std::uint64_t steps, std::chrono::milliseconds wait) {
  if (!options_.asynchronous) {
    fail<TrainingError>("internal error: {} admits joiners only in async mode", name());
  }
  (void)post_news({.rank = rank, .kind = WorkerNews::Kind::kJoin, .steps = steps}, wait);
}

std::vector<int> ParameterServer::deal_replan(protocol::Envelope deal,
                                              std::chrono::milliseconds wait) {
  const auto joiner = protocol::count(deal, "joiner");
  WorkerNews news{.rank = static_cast<int>(joiner), .kind = WorkerNews::Kind::kDeal};
  news.deal = std::move(deal);
  return post_news(std::move(news), wait).to;
}

ParameterServer::Dealt ParameterServer::drop_worker_dealing(int rank, protocol::Envelope deal,
                                                            std::chrono::milliseconds wait) {
  if (!options_.asynchronous) {
    fail<TrainingError>("internal error: {} deals rows only in async mode", name());
  }
  WorkerNews news{.rank = rank, .kind = WorkerNews::Kind::kDrop};
  news.deal = std::move(deal);
  return post_news(std::move(news), wait);
}

std::uint64_t ParameterServer::total_steps() const {
  std::lock_guard lock(mu_);
  return total_steps_;
}

ParameterServer::Dealt ParameterServer::post_news(WorkerNews news,
                                                  std::chrono::milliseconds wait) {
  const int rank = news.rank;
  if (rank < 0 || rank >= options_.workers) {
    fail<TrainingError>("internal error: {} told of worker {} of {}", name(), rank,
                        options_.workers);
  }
  std::unique_lock lock(mu_);
  const auto ticket = ++news_posted_;
  news.ticket = ticket;
  news_.push_back(std::move(news));
  const bool taken = cv_.wait_for(lock, wait, [&] {
    return news_taken_ >= ticket || !error_.empty();
  });
  if (!error_.empty()) throw TrainingError(error_);
  if (!taken) {
    fail<TimeoutError>("{} did not take in the loss of worker {} within {} ms", name(), rank,
                       wait.count());
  }
  const auto answer = answers_.at(ticket);
  answers_.erase(ticket);
  return answer;
}

void ParameterServer::take_news() {
  std::vector<WorkerNews> news;
  {
    std::lock_guard lock(mu_);
    news.swap(news_);
  }
  for (auto& n : news) {
    Dealt answer;
    switch (n.kind) {
      case WorkerNews::Kind::kDrop: answer.applied = forget_worker(n.rank); break;
      case WorkerNews::Kind::kReplace: answer.applied = readmit_worker(n.rank); break;
      case WorkerNews::Kind::kJoin: admit_worker(n.rank, n.steps); break;
      case WorkerNews::Kind::kDeal: break;
    }
    if (n.deal) answer.to = deal_rows(std::move(*n.deal));
    std::lock_guard lock(mu_);
    answers_[n.ticket] = answer;
    news_taken_ = n.ticket;
    cv_.notify_all();
  }
}

std::uint64_t ParameterServer::forget_worker(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  gone_[r] = true;
  if (!options_.asynchronous) {
    std::uint64_t round = 0;
    {
      std::lock_guard lock(mu_);
      round = stats_.version;
    }
    note_missing();
    // The round may be waiting for this worker only.
    if (round_complete()) apply_round();
    return round;
  }
  std::erase(waiting_, rank);
  const auto done = clock_->completed(rank);
  {
    std::lock_guard lock(mu_);
    total_steps_ -= options_.worker_steps[r] - std::min(done, options_.worker_steps[r]);
    cv_.notify_all();
  }
  clock_->retire(rank);
  release_held();  // the others no longer wait for its clock
  return done;
}

std::uint64_t ParameterServer::readmit_worker(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  replaced_[r] = true;
  if (!options_.asynchronous) {
    // A joiner (elastic) takes a slot no worker held or one a worker left: the rounds wait
    // for it from the one in progress (it is admitted between two: no push of it is here).
    gone_[r] = false;
    note_missing();
    std::lock_guard lock(mu_);
    return stats_.version;
  }
  std::erase(waiting_, rank);  // a pull of the lost worker, held by the staleness bound
  await_pull_[r] = true;
  return clock_->completed(rank);
}

void ParameterServer::admit_worker(int rank, std::uint64_t steps) {
  // A joiner into a slot (a fresh one, or one a worker left): its clock starts at 0 and its
  // first message is a pull, as a starting worker's; the pushes of the slot's earlier holder
  // stay in the version and in total_steps().
  const auto r = static_cast<std::size_t>(rank);
  std::erase(waiting_, rank);
  notices_.erase(rank);
  gone_[r] = false;
  replaced_[r] = false;
  await_pull_[r] = false;
  const auto left = options_.worker_steps[r] - std::min(clock_->completed(rank),
                                                        options_.worker_steps[r]);
  clock_->admit(rank, steps);
  if (!options_.start_completed.empty()) options_.start_completed[r] = 0;
  std::lock_guard lock(mu_);
  total_steps_ = total_steps_ - left + steps;
  options_.worker_steps[r] = steps;
  stats_.worker_steps[r] = 0;
  cv_.notify_all();
}

std::vector<int> ParameterServer::deal_rows(protocol::Envelope deal) {
  // Only to survivors sure to hear from this server again: a share promised to one that has
  // just pushed its last step would never reach it, and its rows would be in no one's hands.
  std::vector<int> to;
  if (end_asked_.load()) return to;  // training is over: no one will be sent a slice again
  for (int rank = 0; rank < options_.workers; ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    if (gone_[r] || clock_->finished(rank)) continue;
    const bool held = std::find(waiting_.begin(), waiting_.end(), rank) != waiting_.end();
    if (held || clock_->completed(rank) + 1 < options_.worker_steps[r]) to.push_back(rank);
  }
  // An elastic join's re-plan: the joiner takes a share too (sent by the coordinator).
  const int joiner =
      deal.fields.contains("joiner") ? static_cast<int>(protocol::count(deal, "joiner")) : -1;
  if (joiner >= 0) {
    std::erase(to, joiner);
    to.insert(std::upper_bound(to.begin(), to.end(), joiner), joiner);
    deal.fields.erase("joiner");
  }
  for (std::size_t k = 0; k < to.size(); ++k) {
    if (to[k] == joiner) continue;
    auto notice = deal;
    notice.fields["share"] = k;
    notice.fields["shares"] = to.size();
    notices_[to[k]] = std::move(notice);
  }
  return to;
}

void ParameterServer::update_plan(const protocol::Envelope& e) {
  const auto it = e.fields.find("steps");
  if (it == e.fields.end()) return;
  const auto rank = static_cast<int>(e.rank);
  const auto r = static_cast<std::size_t>(rank);
  const auto steps = it->get<std::uint64_t>();
  if (steps == options_.worker_steps[r]) return;
  clock_->set_steps(rank, steps);
  std::lock_guard lock(mu_);
  total_steps_ = total_steps_ - options_.worker_steps[r] + steps;
  options_.worker_steps[r] = steps;
}

bool ParameterServer::round_complete() const {
  if (round_.waits) return false;  // taken already: it waits for the global norm (clip_norm)
  bool anyone = false;
  for (std::size_t r = 0; r < have_.size(); ++r) {
    if (gone_[r]) continue;
    if (!have_[r]) return false;
    anyone = true;
  }
  return anyone;
}

void ParameterServer::note_missing() {
  std::lock_guard lock(mu_);
  stats_.missing.clear();
  for (int rank = 0; rank < options_.workers; ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    if (!have_[r] && !gone_[r]) stats_.missing.push_back(rank);
  }
}

bool ParameterServer::screen_lost(const protocol::Envelope& e) {
  const auto rank = static_cast<int>(e.rank);
  const auto r = static_cast<std::size_t>(rank);
  if (gone_[r]) {
    log::debug("dropped a {} message of lost worker {}", protocol::name_of(e.type), rank);
    return true;
  }
  if (!replaced_[r]) return false;
  if (!options_.asynchronous) {
    if (e.type != protocol::Type::kPush) return false;
    std::uint64_t version = 0;
    {
      std::lock_guard lock(mu_);
      version = stats_.version;
    }
    if (e.step < version) {
      // The lost worker's push of this round got here and the round is applied: the
      // replacement gets the slice the lost worker was sent.
      log::debug("worker {} pushed round {} again, applied already: sent the current slice",
                 rank, e.step + 1);
      if (e.fields.contains("keyed")) take_next_offsets(e);  // the values its next step needs
      reply(rank);
      return true;
    }
    if (e.step == version && have_[r]) {
      log::debug("worker {} pushed round {} again: kept the first push", rank, e.step + 1);
      return true;  // its slice goes out with everyone's when the round completes
    }
    return false;
  }
  if (await_pull_[r]) {
    if (e.type != protocol::Type::kPull) {
      log::debug("dropped a {} message of lost worker {}", protocol::name_of(e.type), rank);
      return true;
    }
    await_pull_[r] = false;
    take_pull_offsets(e);  // keyed: the values its first step needs
    if (!clock_->finished(rank)) waiting_.push_back(rank);
    release_held();
    return true;
  }
  if (e.type == protocol::Type::kPush && e.step < clock_->completed(rank)) {
    // The lost worker's push of this step got here before it died: applied once, not twice.
    // Like every push it also asks for the next step.
    log::debug("worker {} pushed step {} again, applied already: dropped", rank, e.step + 1);
    if (e.fields.contains("keyed")) take_next_offsets(e);  // the values its next step needs
    if (!clock_->finished(rank) &&
        std::find(waiting_.begin(), waiting_.end(), rank) == waiting_.end()) {
      waiting_.push_back(rank);
    }
    release_held();
    return true;
  }
  return false;
}

}  // namespace dt::roles
