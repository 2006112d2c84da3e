#pragma once
// The bounds every role's socket waits share. A wait on the network is sliced into kPollSlice
// polls so that it can notice Ctrl-C, a dead process or a silent heartbeat between them; a send
// that cannot complete within kSendDeadline (the peer's queue stays full) is an error, not a hang.

#include <chrono>

namespace dt::roles {

inline constexpr std::chrono::milliseconds kPollSlice{50};
inline constexpr std::chrono::milliseconds kSendDeadline{10000};

}  // namespace dt::roles
