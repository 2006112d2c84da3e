// ParameterServer's end of training (async mode, training.early_stopping): once the coordinator
// calls end_training(), the server answers every worker that waits for it with kEnd instead of
// a slice, and applies nothing more. A worker told so pushes no more and sends the coordinator
// kDone with the steps it pushed (async.cpp). Which messages await an answer is ServerClient's
// rule: a pull, unless the worker has nothing (left) to do; a push, unless it is the worker's
// last (as its plan stood: the push's "steps" when it says); a rejoin that says "awaiting".
//
// Why here and not from the coordinator: a worker between two steps waits on its servers, not
// on the coordinator, and with K servers the end must reach it whichever server answers first
// (it waits for the others' answers too, slice or end, before it stops).

#include "core/servers/param_server.hpp"

#include "core/protocol/step_messages.hpp"
#include "base/log.hpp"

namespace dt::roles {

void ParameterServer::take_end() {
  if (training_ended_ || !options_.asynchronous || !end_asked_.load()) return;
  training_ended_ = true;
  log::debug("training ended: {} held pull(s) answered with its end", waiting_.size());
  for (const int rank : waiting_) send_end(rank);
  waiting_.clear();
}

bool ParameterServer::screen_ended(const protocol::Envelope& e) {
  take_end();  // asked for since the top of the loop: this message already gets the end
  if (!training_ended_) return false;
  const auto rank = static_cast<int>(e.rank);
  const auto r = static_cast<std::size_t>(rank);
  bool awaits = false;
  if (e.type == protocol::Type::kPull) {
    awaits = e.fields.contains("rejoin") ? protocol::flag(e, "awaiting") : !clock_->finished(rank);
  } else if (e.type == protocol::Type::kPush) {
    const auto planned = protocol::count_or(e, "steps", options_.worker_steps[r]);
    awaits = e.step + 1 < planned;
  }
  log::debug("training ended: a {} of worker {} (step {}) {}", protocol::name_of(e.type), rank,
             e.step + 1, awaits ? "answered with the end" : "dropped");
  if (awaits) send_end(rank);
  return true;
}

void ParameterServer::send_end(int rank) {
  std::uint64_t version = 0;
  {
    std::lock_guard lock(mu_);
    version = stats_.version;
  }
  protocol::Envelope end{.type = protocol::Type::kEnd, .step = version};
  end.fields = {{"server", options_.index}, {"version", version}};
  // As a slice is sent: with a share of a lost worker's rows dealt to `rank` before the end
  // (async continue), which it takes in for the final evaluation, and no error for a worker
  // gone meanwhile (the coordinator's to notice).
  send_slice(rank, std::move(end));
}

}  // namespace dt::roles
