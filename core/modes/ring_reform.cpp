#include "core/modes/ring_reform.hpp"

#include "core/coordinator/membership.hpp"
#include "core/protocol/step_messages.hpp"

#include "base/error.hpp"
#include "base/log.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace dt::modes {

bool may_reform(const config::Config& config) {
  return config.fault_tolerance.on_worker_failure != config::FailurePolicy::kAbort ||
         config.fault_tolerance.elastic.has_value();
}

RingReformer::RingReformer(roles::CoordinatorSession& session, HandOver hand_over,
                           roles::CoordinatorSession::LossHandler after)
    : session_(session), hand_over_(std::move(hand_over)), after_(std::move(after)) {
  // Under abort a loss fails the run before the handler; a planned leave (elastic) still comes.
  if (!may_reform(session.config())) return;
  active_ = true;
  session.set_loss_handler([this](int rank, config::FailurePolicy action) {
    if (on_loss_) on_loss_(rank, action);
    if (action == config::FailurePolicy::kRestart) fresh_.insert(rank);
    pending_ = true;
    if (armed_ && !left_after_batch(rank)) throw RingReform{};
  });
}

RingReformer::~RingReformer() {
  // After training the session's own handling serves (a replacement is sent the evaluation
  // request again: it needs no replica state for that).
  if (active_) session_.set_loss_handler(std::move(after_));
}

void RingReformer::reform(std::uint64_t step) {
  for (;;) {
    pending_ = false;
    try {
      const std::vector<int> members = session_.alive();
      std::vector<int> fresh;
      for (const int r : members) {
        if (fresh_.contains(r)) fresh.push_back(r);
      }
      ++reforms_;
      if (std::exchange(joined_, false)) {
        log::notice("{} over workers {} before step {} to take in the joined worker {}",
                    wording_, fmt::join(members, ", "), step + 1, fmt::join(fresh, ", "));
      } else {
        log::warn("{} over workers {} (generation {}); step {} is done again", wording_,
                  fmt::join(members, ", "), session_.generation(), step + 1);
      }
      send_members(step, members, fresh);
      for (auto& f : session_.result().failures) {
        if (!f.contains("reformed")) f["reformed"] = {{"members", members}, {"redone_step", step + 1}};
      }
      if (fresh.empty()) return;
      if (hand_over_) {
        hand_over_(fresh, step);
      } else {
        relay_state(fresh, step);
      }
      // Handed over: should one of them be lost later, its own replacement is fresh again.
      for (const int r : fresh) fresh_.erase(r);
      return;
    } catch (const RingReform&) {
      log::warn("another worker was lost while the ring re-formed; it re-forms again");
    }
  }
}

void RingReformer::send_members(std::uint64_t step, const std::vector<int>& members,
                                const std::vector<int>& fresh) {
  protocol::Envelope reform{.type = protocol::Type::kRingReform, .step = step};
  reform.fields = {{"members", members},
                   {"fresh", fresh},
                   {"endpoints", session_.addresses().endpoints()}};
  session_.broadcast(std::move(reform));
}

void RingReformer::form_over_members(std::uint64_t step) {
  const std::vector<int> members = session_.alive();
  if (!active_ || static_cast<int>(members.size()) >= session_.plan().starting_ranks()) return;
  log::notice("--resume: the ring forms over workers {}, those training at the checkpoint's "
              "step {}", fmt::join(members, ", "), step);
  send_members(step, members, {});
}

void RingReformer::relay_state(const std::vector<int>& fresh, std::uint64_t step) {
  int source = -1;
  for (const int r : session_.alive()) {
    if (!fresh_.contains(r)) {
      source = r;
      break;
    }
  }
  if (source < 0) {
    fail<TrainingError>("every ring member was replaced before one could hand over the model: no "
                        "replica holds the state of step {}",
                        step);
  }
  session_.send_to(source, {.type = protocol::Type::kStateRequest, .step = step});
  auto got = session_.gather_from(protocol::Type::kResumeState, {source});
  if (got.empty() || !protocol::flag(got.front(), "available")) {
    fail<TrainingError>("ring worker {} cannot hand over its state after step {} to the "
                        "replacement of worker {}",
                        source, step, fmt::join(fresh, ", "));
  }
  protocol::Envelope state = std::move(got.front());
  state.rank = wire::kCoordinatorRank;
  session_.broadcast(std::move(state), fresh);
  log::info("worker {} handed its state after step {} to worker {}", source, step,
            fmt::join(fresh, ", "));
}

bool RingReformer::left_after_batch(int rank) const {
  const auto left = roles::left_after(session_.result().membership, rank);
  return left && in_flight_ != nullptr && in_flight_->has_value() && *left >= (*in_flight_)->end;
}

void RingReformer::admit_joiners(std::uint64_t step) {
  if (!active_ || !session_.config().fault_tolerance.elastic) return;
  const std::vector<int> before = session_.alive();
  arm(false);  // a loss while a joiner is set up re-forms with it, before the step
  session_.admit_joiners(step);
  arm(true);
  for (const int r : session_.alive()) {
    if (std::binary_search(before.begin(), before.end(), r)) continue;
    fresh_.insert(r);  // it holds no state: a member's is relayed to it (relay_state)
    pending_ = true;
    joined_ = true;
  }
}

void RingReformer::before_step(std::uint64_t step, std::uint64_t per_epoch) {
  admit_joiners(step);
  per_epoch = std::max<std::uint64_t>(1, per_epoch);
  if (step % per_epoch == 0 && dealt_epoch_ != step / per_epoch) {
    arm(false);  // all or nothing: a loss meanwhile re-forms before the step
    session_.reassign_lost_rows(step / per_epoch);
    arm(true);
    dealt_epoch_ = step / per_epoch;
  }
  if (pending()) reform(step);
}

}  // namespace dt::modes
