#include "core/worker/worker_timeline.hpp"

namespace dt::roles {

void note_request(const protocol::Envelope& request, timeline::Clock::time_point start,
                  timeline::Clock::time_point end) noexcept {
  if (timeline::current() == nullptr) return;
  std::uint64_t step = request.step;
  if (request.type == protocol::Type::kRound) {
    const auto it = request.fields.find("timeline_step");
    if (it == request.fields.end() || !it->is_number_unsigned()) return;
    step = it->get<std::uint64_t>();
  } else if (request.type != protocol::Type::kStep) {
    return;
  }
  timeline::set_step(step + 1);
  timeline::span_between(timeline::Phase::kWait, start, end);
}

bool is_step_reply(protocol::Type type) noexcept {
  return type == protocol::Type::kGradient || type == protocol::Type::kRingLoss ||
         type == protocol::Type::kRoundResult;
}

}  // namespace dt::roles
