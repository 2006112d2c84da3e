#include "core/worker/leave.hpp"

#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"
#include "transports/transport.hpp"

#include <atomic>

namespace dt::roles {
namespace {

// Process-wide, as the signal is: only a worker process (own_process) arms its leave.
std::atomic<bool> g_armed{false};
std::atomic<bool> g_training_done{false};

}  // namespace

bool arm_leave(const config::Config& config, const WorkerOptions& options) {
  if (!config.fault_tolerance.elastic || !options.own_process) return false;
  signals::install_leave_handler();
  g_armed = true;
  return true;
}

bool leave_due(const WorkerOptions& options) noexcept {
  return options.may_leave && !g_training_done && signals::leave_requested();
}

bool leave_asked() noexcept {
  return g_armed && !g_training_done && signals::leave_requested();
}

void leave_if_asked() {
  if (leave_asked()) throw LeaveRequest{};
}

void flag_if_leaving(protocol::Envelope& reply) {
  if (leave_asked()) reply.fields["leaving"] = true;
}

void training_done() noexcept { g_training_done = true; }

int leave_run(transport::Connection& connection, const WorkerOptions& options) {
  log::notice("leaving the run (SIGTERM, fault_tolerance.elastic): the coordinator deals this "
              "worker's rows to the others");
  protocol::Envelope leave{.type = protocol::Type::kLeave, .rank = options.rank};
  try {
    // Delivered before the process ends: sockets linger for it (transports/zmq).
    connection.send(protocol::encode(std::move(leave), options.job_id),
                    transport::deadline_in(kSendDeadline));
  } catch (const Error& e) {
    log::warn("could not tell the coordinator ({}); it sees this worker's exit instead",
              e.what());
  }
  return 0;
}

}  // namespace dt::roles
