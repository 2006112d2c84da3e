#pragma once
// The start of a run: every starting rank's hello, before heartbeats exist (run_coordinator).

#include "core/protocol/protocol.hpp"
#include "transports/transport.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::roles {

class WorkerPool;

struct Joined {
  protocol::Hello hello;
  std::string peer;  // the identity its connection uses
};

// Waits for the hellos of ranks 0 to ranks - 1. Ranks below `first_remote` are this process's
// children; the others join by themselves (`disttrain worker --connect --rank R`). A hello
// that cannot be accepted is answered with an error naming the reason, and the wait goes on.
// Bounded by `timeout`: the error names the missing ranks, and the workers that joined are told.
// `departed` (a resume: resume_membership.hpp): ranks not started, whose hellos are refused.
[[nodiscard]] std::vector<Joined> wait_for_hellos(transport::Listener& listener, WorkerPool& pool,
                                                  int ranks, int first_remote, std::uint64_t job,
                                                  const std::string& config_hash,
                                                  std::chrono::milliseconds timeout,
                                                  const std::vector<bool>& departed);

}  // namespace dt::roles
