#pragma once
// output.timeline on a worker's message path (WorkerSession::receive and send): which messages
// open and close a step on the worker's track. Reads no clock: the session's own reads for its
// communication seconds time the spans.

#include "core/protocol/protocol.hpp"
#include "base/timeline.hpp"

namespace dt::roles {

// A request that starts a step's work: the step it is (kStep; kRound: the round's first local
// step on the log's axis, which the coordinator adds when the timeline is on) becomes the
// thread's step, and the wait for it, from `start` to `end`, its `wait for parameters` span.
void note_request(const protocol::Envelope& request, timeline::Clock::time_point start,
                  timeline::Clock::time_point end) noexcept;

// The replies that end a step's work (their sending is its `send` span).
[[nodiscard]] bool is_step_reply(protocol::Type type) noexcept;

}  // namespace dt::roles
